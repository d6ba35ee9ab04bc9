//! Schedules (spec §11): one-shot turns (`schedule_create`) and cron jobs (`cron_create`,
//! manifest `[[cron]]`) in one store. Agents create, list, pause and resume their own;
//! operators pause and resume any; only an operator in a dashboard session deletes one for
//! good ([`Schedules::delete_permanently`] takes a [`HumanApproval`], which no tool or API token has).
//! [`runner`] fires what is due.
//!
//! # Design notes
//!
//! ## Layout
//!
//! Schedules: `Schedules` (create with `cron.rs` / `timing.rs` validation — `cron.rs` holds every
//! cron rule and runs cron work off the async workers, `timing.rs` reads `when` and time zones —
//! list with last fire, pause, resume, fire history, manifest seeding), `Schedules::delete_permanently`
//! (human-only: takes an `auth::HumanApproval`), `runner.rs` (the scheduler task), `store.rs`
//! (every query of both), `tools.rs` (the `schedule` family).
//!
//! ## Schedules
//!
//! - **One store.** `schedules` holds one-shot schedules (`kind = once`, `run_at`) and cron jobs
//!   (`kind = cron`, 5-field `expression`, optional IANA `timezone`), from manifests
//!   (`origin = manifest`) and from tools (`origin = runtime`), each with `state` (active,
//!   paused, done) and `next_fire`. `schedule_fires` records every fire: due, fired, finished,
//!   outcome (`running`, `ok`, `failed`, `skipped` for a stopped agent, `interrupted` when the
//!   daemon stopped mid-turn), the reply or error, the session, the turn's duration and
//!   `missed_slots`; the last `[schedules] fire_history` (100) per schedule are kept.
//! - **Lineage (issue 42).** A schedule made by a tool stores its turn's `Lineage` (depth,
//!   chain, the conversation it answered; column `lineage`, JSON). A fire runs at depth + 1 with
//!   that chain and conversation: past `max_agent_call_depth` it is refused (`failed`, and a
//!   `schedule` note in the inbox) before any turn; its `channel_send` and its reply's delivery
//!   pass `channel::stays_in_conversation`, the guard `channel_send` uses, as does the
//!   schedule's `channel` when it is made. An operator's or a manifest's schedule has none
//!   (depth 0). **Decision:** an unreadable stored lineage refuses the fire rather than run it
//!   at depth 0.
//! - **Parsing** (`cron.rs`): Kennel reads the text first — field count (a 6-field expression is
//!   told "no seconds field"), nicknames (`@yearly` … `@hourly`, `@midnight`; `@reboot` and
//!   `@every` refused with the list), then each field item by item: empty list items, non-ASCII
//!   characters (a non-breaking space is not a separator), three-letter names only in their own
//!   field (croner replaced `mon` anywhere, so `0 9 * mon *` was January), ranges low-high,
//!   steps after `*` or a range, croner's `L`/`W`/`#` where they belong. Every message names the
//!   field. The numeric result goes to croner, which builds the matcher and finds occurrences.
//!   A time zone must be an IANA name. The manifest validator uses the same function, so a bad
//!   `[[cron]]` is a 422 naming `cron[i].schedule`. A job stored before these checks whose
//!   text they now refuse (`1,,2`, a non-breaking space) fires once more at its next slot and is
//!   then paused; resuming it reports why. **Decision:** croner for parsing and "next
//!   occurrence" instead of tokio-cron-scheduler: its job store is in memory and its tick loop
//!   scans jobs, while we need the schedule store (SQLite) to be the truth and a scheduler that
//!   scales with 10,000 jobs.
//! - **Bounded validation.** croner proves "never fires" by searching towards the year 5000
//!   (`, * * * *` took ~4 s in release, two minutes in debug, on an async worker). Kennel decides
//!   it without a search: whether a day matches depends only on its day of month, its month's
//!   length and the weekday the month starts on, and all those combinations occur within one
//!   400-year cycle, so at most 12 × 2 × 7 × 31 `day_match` calls settle it (30 February, `30W`
//!   in February are refused; 29 February and a fifth Monday in February are accepted). A valid
//!   expression's next fire is then at most a few decades of month steps away. All cron work in
//!   async paths (create, resume, manifest seeding, agent-type create/replace, the runner's
//!   planning with up to 1,000 missed slots per row) runs through `cron::off_runtime`
//!   (`spawn_blocking`). `kernel/benches/cron.rs` times validation over a slow-expression
//!   corpus; a system test sends such expressions in parallel while polling `/healthz`.
//! - **Day of month / day of week:** OR when both are restricted (Vixie cron, POSIX; croner's
//!   default, its `dom_and_dow` option left off): `0 9 1 * mon` fires on the 1st and on Mondays.
//! - **Daylight saving** (Vixie cron, cronie): a job whose minute and hour fields have no `*` and
//!   no step (single values, lists, ranges) is "fixed-time": its wall-clock slots are found by
//!   croner on local time read as UTC (where no clock changes) and mapped to instants by
//!   `CronSpec::runs_at`: a slot in a spring-forward gap runs at the first valid time after it
//!   (slots sharing a gap run once), a slot in a repeated hour at its first occurrence. croner
//!   itself does this only for single values (`0,30 2 * * *` lost the whole day, `30 2-3` the
//!   02:30 slot). Other jobs keep croner's behaviour (gap slots do not exist, a repeated hour
//!   fires twice).
//! - **The runner** (`runner.rs`) is one task, started only by the daemon
//!   (`runner::start`, from the kernel's `start_background` with the task sweeper; a CLI command opening the same home
//!   runs neither). It reads the earliest `next_fire` of an active schedule (a partial index
//!   makes it one lookup), sleeps until then (at most 30 s; woken early when the store changes
//!   or a manual clock moves), and takes everything due in batches of 500: what each fire means
//!   (next time, missed slots; each distinct expression parsed once) is worked out first, then
//!   one transaction writes each schedule's next fire (or `done`) and a `running` fire row
//!   (`fired_at` = that write), and the batch's turns are queued as it commits. Writing before
//!   running means a crash can never fire a slot twice; fires left `running` are marked
//!   `interrupted` at the next start. Turns run headless
//!   (caller `schedule:ID`) at most `[schedules] max_concurrent_fires` (32) at once, each in a
//!   new session labelled `schedule SHORTID`. **Stopping an agent pauses its schedules**
//!   (configuration kept; an operator can resume them); should a fire still find its agent
//!   stopped, it is recorded `skipped` and the job paused, never skipped at every slot. A
//!   stopped agent's manifest jobs are stored paused; workflow step agents (they live for one
//!   step) get none.
//! - **Missed fires.** A schedule due before the runner started (the daemon was down) fires once,
//!   with `missed_slots` = the slots that passed (1 for a one-shot schedule); a cron job then
//!   goes on from its next match after now. A fire that comes late while the daemon runs (the
//!   host slept) also folds the slots it passed over into one fire and counts them. Counting
//!   stops at 1,000 slots per fire. **Decision:** time spent paused is not caught up:
//!   resuming a cron job starts from its next match; resuming a one-shot schedule whose time
//!   passed fires it at once.
//! - **Who may do what.** Agents (tools) create, list, pause and resume **their own** schedules;
//!   another agent's id, or a cron id given to a `schedule_*` tool, reads as `NotFound`.
//!   `schedule_delete` and `cron_cancel` only pause. **Decision:** manifest cron jobs are the
//!   operator's configuration: agents see them in `cron_list` but `cron_cancel`/`cron_enable`
//!   on them are `Forbidden`; operators pause and resume any schedule (`POST
//!   /api/schedules/{id}/pause|resume`, the dashboard). Manifest blocks are copied into the store
//!   once per agent (`schedule_seeds`), at spawn (`Kernel::spawn_agent`) or at start for older
//!   agents, so a manifest job an operator deleted does not come back.
//! - **Permanent deletion is human-only, by construction.** `Schedules::delete_permanently` takes
//!   an `auth::HumanApproval`, which only `Auth::human_approval(session cookie, CSRF token)` makes;
//!   no tool context and no API token carries those. The dashboard's confirmation page names the
//!   schedule and asks the operator to type its short id (the last 8 hex digits of its id);
//!   `DELETE /api/schedules/{id}` answers 403 whatever the id. A deletion is in the
//!   operator-action log (`schedule.delete` by `operator:NAME`, with its schedule and outcome),
//!   not among tool calls: no tool made it.
//! - **Dashboard:** `/schedules` (filter `?agent=`), `/schedules/{id}` (facts and the last 50
//!   fires), `/schedules/{id}/delete` (the confirmation step); an agent's page lists its first
//!   20 schedules.
//! - **Channels:** a schedule's `channel` is `NAME` (the channel's `default_target`) or
//!   `NAME:TARGET`, checked by `schedule_create`/`cron_create` (`Channels::address`): an unknown
//!   channel, or a bare name without a default target, is refused naming the field. Each fire's
//!   reply is delivered there (`runner::deliver`, sent by `schedule:ID`); a reply that could not
//!   be delivered makes the fire `failed` with why. Schedules from a manifest's `[[cron]]` blocks
//!   are not checked at load (a typo shows as a failed fire).
//! - **`when`** is RFC 3339 (any offset) or `+` durations with units s, m, h, d (`+1h30m`); past
//!   times and times more than ten years ahead are refused. An agent holds at most 1,000 runtime
//!   schedules that are not done (`ResourceExhausted` beyond).
//!
//! ## Tests
//!
//! - Schedules are tested twice over: in-process on a `ManualClock` (`schedule_clock.rs`: a
//!   minute boundary is crossed by moving the clock; a restart after three hours down), and on
//!   the real daemon with wall-clock one-shot fires a second ahead (`schedules.rs`).

pub(crate) mod config;
pub mod cron;
pub mod runner;
mod store;
pub mod timing;
mod tools;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

pub use config::SchedulesConfig;
pub(crate) use tools::register;

use crate::agent::{Agent, Agents};
use crate::auth::HumanApproval;
use crate::clock::Clock;
use crate::cluster::Cluster;
use crate::db::{self, Db, stored_enum};
use crate::error::{Error, FieldError, Result};
use crate::family::Family;
use crate::page::{Key, Page, PageRequest};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Fires once, at `run_at`.
    Once,
    /// Fires on every match of `expression`.
    Cron,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// A `[[cron]]` block of the agent's manifest.
    Manifest,
    /// Made by a tool call at run time.
    Runtime,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Active,
    Paused,
    /// A one-shot schedule that has fired.
    Done,
}

/// What an operator or the schedule's own agent can do to a schedule besides deleting it
/// (the dashboard's buttons, `/api/schedules/{id}/…`, `schedule_pause`/`schedule_resume`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScheduleAction {
    /// Stop it firing, keeping its configuration.
    Pause,
    /// Let it fire again.
    Resume,
}

impl State {
    /// The actions a schedule in this state offers: the one rule the store, the API and the
    /// dashboard's buttons follow. Pausing a paused schedule (or resuming an active one) is
    /// accepted as a no-op, but not offered.
    pub fn actions(self) -> &'static [ScheduleAction] {
        match self {
            State::Active => &[ScheduleAction::Pause],
            State::Paused => &[ScheduleAction::Resume],
            State::Done => &[],
        }
    }
}

impl ScheduleAction {
    /// The action's path segment (`/schedules/{id}/pause`).
    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleAction::Pause => "pause",
            ScheduleAction::Resume => "resume",
        }
    }

    /// The state the action leads to: applying it there again changes nothing.
    fn target(self) -> State {
        match self {
            ScheduleAction::Pause => State::Paused,
            ScheduleAction::Resume => State::Active,
        }
    }

    /// Why `schedule` (in `state`) refuses this action, or `None` when it may run.
    fn refusal(self, id: &str, state: State) -> Option<Error> {
        if state.actions().contains(&self) || state == self.target() {
            return None;
        }
        Some(Error::conflict(match self {
            ScheduleAction::Pause => format!("schedule {id} has already fired; there is nothing to pause"),
            ScheduleAction::Resume => format!("schedule {id} has already fired; create a new one to run it again"),
        }))
    }
}

/// How a fire went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum FireOutcome {
    /// Its turn is running (or waiting for one of `[schedules] max_concurrent_fires`).
    Running,
    /// The agent answered.
    Ok,
    /// The turn failed or ended without an answer.
    Failed,
    /// The agent was stopped (or is gone); the schedule was paused.
    Skipped,
    /// The daemon stopped during the turn.
    Interrupted,
    /// A call of its turn waits for a person's approval: the turn parked, and goes on in its
    /// session once someone decides (`crate::approval`).
    Parked,
}

stored_enum!(Kind { Once = "once", Cron = "cron" });
stored_enum!(Origin { Manifest = "manifest", Runtime = "runtime" });
stored_enum!(State { Active = "active", Paused = "paused", Done = "done" });
stored_enum!(FireOutcome {
    Running = "running",
    Ok = "ok",
    Failed = "failed",
    Skipped = "skipped",
    Interrupted = "interrupted",
    Parked = "parked",
});

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Schedule {
    pub id: Uuid,
    /// The agent whose turn it starts.
    pub agent_id: String,
    pub kind: Kind,
    pub origin: Origin,
    /// Cron jobs: the 5-field expression.
    pub expression: Option<String>,
    /// Cron jobs: the IANA time zone the expression is read in (UTC when absent).
    pub timezone: Option<String>,
    /// One-shot schedules: when it fires.
    pub run_at: Option<String>,
    pub prompt: String,
    /// Where the reply goes once channels exist.
    pub channel: Option<String>,
    pub state: State,
    /// When it fires next (RFC 3339 UTC); only while active.
    pub next_fire: Option<String>,
    pub created_by: String,
    pub created_at: String,
    pub updated_at: String,
    /// The latest fire, if any.
    pub last_fire: Option<Fire>,
}

impl Schedule {
    /// The short name an operator types to confirm a permanent deletion: the id's last 8
    /// characters (its random part).
    pub fn short_id(&self) -> String {
        short_id(&self.id.to_string())
    }

    /// A cron job's expression in words: "At 09:00, on Monday, Tuesday, …" (the time in the
    /// job's own zone). Parsing is microseconds: fine for a page of schedules.
    pub fn in_words(&self) -> Option<String> {
        match self.kind {
            Kind::Cron => cron::in_words(self.expression.as_deref()?, self.timezone.as_deref()),
            Kind::Once => None,
        }
    }

    /// When it fires next on the clocks of the job's own time zone, `2026-12-02 09:00 CET`;
    /// `None` when it does not fire again or its zone is UTC.
    pub fn next_fire_in_zone(&self) -> Option<String> {
        let tz = timing::parse_timezone(self.timezone.as_deref()).ok().filter(|tz| *tz != chrono_tz::Tz::UTC)?;
        let next = chrono::DateTime::parse_from_rfc3339(self.next_fire.as_deref()?).ok()?;
        Some(next.with_timezone(&tz).format("%Y-%m-%d %H:%M %Z").to_string())
    }

    /// `every 0 9 * * * (Europe/Berlin)` or `once at 2026-12-01T09:00:00.000Z`.
    pub fn timing(&self) -> String {
        match self.kind {
            Kind::Cron => format!(
                "every {}{}",
                self.expression.as_deref().unwrap_or_default(),
                self.timezone.as_ref().map(|tz| format!(" ({tz})")).unwrap_or_default()
            ),
            Kind::Once => format!("once at {}", self.run_at.as_deref().unwrap_or_default()),
        }
    }
}

/// One fire of a schedule.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Fire {
    pub id: i64,
    /// When it was meant to fire.
    pub due_at: String,
    /// When the scheduler fired it.
    pub fired_at: String,
    /// When its turn ended (turns beyond `[schedules] max_concurrent_fires` wait first).
    pub finished_at: Option<String>,
    pub outcome: FireOutcome,
    /// The reply (shortened) or what went wrong.
    pub detail: Option<String>,
    /// The session the turn ran in.
    pub session_id: Option<String>,
    /// How long the turn took.
    pub duration_ms: Option<i64>,
    /// Fire times that passed while the daemon was down and were folded into this one fire
    /// (0: it fired on time).
    pub missed_slots: i64,
}

/// A schedule to create.
#[derive(Debug, Clone)]
pub struct NewSchedule {
    pub agent_id: Uuid,
    pub timing: NewTiming,
    pub prompt: String,
    pub channel: Option<String>,
    pub origin: Origin,
    pub created_by: String,
    /// Made in a turn: that turn's (see [`Lineage`]); `None` for an operator's.
    pub lineage: Option<Lineage>,
}

/// Where a schedule made in a turn comes from: that turn's depth and chain, so its fires run
/// one agent call deeper and a schedule that keeps making itself again stops at `[kernel]
/// max_agent_call_depth`; and the conversation the turn answered, so its fires stay in it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lineage {
    pub depth: u32,
    pub chain: Vec<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation: Option<crate::tool::ChannelContext>,
}

impl Lineage {
    /// The lineage of a schedule made by the call `ctx`.
    pub fn of(ctx: &crate::tool::CallContext) -> Lineage {
        Lineage { depth: ctx.depth, chain: ctx.chain.to_vec(), conversation: ctx.channel.clone() }
    }
}

#[derive(Debug, Clone)]
pub enum NewTiming {
    /// An RFC 3339 time or `+15m`.
    Once {
        when: String,
    },
    Cron {
        expression: String,
        timezone: Option<String>,
    },
}

#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ScheduleFilter {
    /// An agent's name or id.
    pub agent: Option<String>,
    pub kind: Option<Kind>,
    pub state: Option<State>,
}

/// Runtime schedules one agent may hold (active or paused).
pub const MAX_PER_AGENT: i64 = 1000;
/// A prompt's length, in characters.
const MAX_PROMPT: usize = 20_000;
/// A fire's stored reply is cut to this many characters.
const DETAIL_CHARS: usize = 500;

pub struct Schedules {
    db: Db,
    agents: Arc<Agents>,
    clock: Clock,
    /// Tells the runner the store changed, so it looks again for the earliest fire.
    changed: tokio::sync::Notify,
    /// Ends the runner when the kernel closes.
    stopped: tokio_util::sync::CancellationToken,
    fire_history: u64,
    /// This daemon's id in the cluster: the fires it takes are written down as its.
    daemon: String,
}

fn field_error(field: &str, message: impl Into<String>) -> Error {
    Error::invalid_fields(vec![FieldError { field: field.into(), message: message.into() }])
}

impl Schedules {
    pub(crate) fn new(db: Db, clock: Clock, fire_history: u64, agents: Arc<Agents>, daemon: String) -> Schedules {
        Schedules {
            db,
            agents,
            clock,
            changed: tokio::sync::Notify::new(),
            stopped: Default::default(),
            fire_history,
            daemon,
        }
    }

    /// Stops the runner (no new fires start; running turns finish on their own).
    pub(crate) fn stop(&self) {
        self.stopped.cancel();
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Validates and stores a schedule; it is active at once.
    pub async fn create(&self, new: NewSchedule) -> Result<Schedule> {
        let now = self.clock.now();
        let (kind, expression, timezone, run_at, next_fire) = match &new.timing {
            NewTiming::Once { when } => {
                let at = timing::parse_when(when, now).map_err(|m| field_error("when", m))?;
                (Kind::Once, None, None, Some(db::timestamp(at)), at)
            }
            NewTiming::Cron { expression, timezone } => {
                let (text, zone) = (expression.clone(), timezone.clone());
                let next = cron::off_runtime(move || {
                    cron::parse_cron(&text, zone.as_deref()).map(|spec| spec.next_after(now))
                })
                .await?
                .map_err(|m| {
                    let field = if m.contains("time zone") { "timezone" } else { "expression" };
                    field_error(field, m)
                })?
                .ok_or_else(|| field_error("expression", "never fires"))?;
                let tz = timezone.as_ref().map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
                (Kind::Cron, Some(expression.trim().to_string()), tz, None, next)
            }
        };
        check_prompt(&new.prompt)?;
        if let Some(channel) = &new.channel
            && (channel.is_empty() || channel.len() > 64 || channel.chars().any(char::is_whitespace))
        {
            return Err(field_error("channel", "a channel name of 1-64 characters without spaces"));
        }
        let agent_id = new.agent_id.to_string();
        let id = Uuid::now_v7();
        let row = store::NewRow {
            id,
            agent_id: &agent_id,
            kind,
            origin: new.origin,
            expression: expression.as_deref(),
            timezone: timezone.as_deref(),
            run_at: run_at.as_deref(),
            prompt: &new.prompt,
            channel: new.channel.as_deref(),
            next_fire: Some(next_fire),
            created_by: &new.created_by,
            lineage: new.lineage.as_ref(),
            at: now,
        };
        if !store::insert_runtime_within(&self.db, row, MAX_PER_AGENT).await? {
            return Err(Error::new(
                crate::ErrorKind::ResourceExhausted,
                format!(
                    "this agent already has {MAX_PER_AGENT} schedules: pause is not enough, an operator must delete some"
                ),
            ));
        }
        self.changed.notify_one();
        self.get(&id.to_string()).await
    }

    /// A schedule by its whole id or its short form (the last 8 hex digits operators see).
    pub async fn get(&self, id: &str) -> Result<Schedule> {
        let no_schedule = || Error::not_found(format!("no schedule `{id}`"));
        let full = db::full_id(&self.db, db::ShortIds::Schedules, id).await?.ok_or_else(no_schedule)?;
        store::get(&self.db, &full).await?.ok_or_else(no_schedule)
    }

    /// A schedule of `agent` of the given kind. Another agent's schedule reads as not found:
    /// an agent cannot even learn that it exists.
    pub async fn get_own(&self, id: &str, agent: &Agent, kind: Kind) -> Result<Schedule> {
        let not_found = || {
            let (what, list) = match kind {
                Kind::Once => ("scheduled turn", "schedule_list"),
                Kind::Cron => ("cron job", "cron_list"),
            };
            Error::not_found(format!("you have no {what} `{id}`: {list} shows yours"))
        };
        match self.get(id).await {
            Ok(s) if s.agent_id == agent.id.to_string() && s.kind == kind => Ok(s),
            // A short id several schedules end in (`Conflict`) would tell an agent that
            // another agent's exists: it reads as not found, like any schedule not its own.
            Ok(_) | Err(Error { kind: crate::ErrorKind::NotFound | crate::ErrorKind::Conflict, .. }) => {
                Err(not_found())
            }
            Err(e) => Err(e),
        }
    }

    /// A page of the schedules matching the filter (`agent` a name or id), oldest first.
    /// How many fires failed since `since` (the overview's "failed today").
    pub async fn failed_fires_since(&self, since: chrono::DateTime<chrono::Utc>) -> Result<u64> {
        store::failed_fires_since(&self.db, &db::timestamp(since)).await
    }

    pub async fn list(&self, filter: &ScheduleFilter, page: &PageRequest) -> Result<Page<Schedule>> {
        let agent_id = self.agents.id_of(filter.agent.as_deref())?;
        let query = store::Query { agent_id: agent_id.as_deref(), kind: filter.kind, state: filter.state };
        let rows = store::list(&self.db, &query, page.after(Key::Id)?, page.fetch_limit()).await?;
        let total = store::count(&self.db, &query).await?;
        Ok(Page::from_rows(rows, page, total, |s| s.id.to_string()))
    }

    /// The latest fires of a schedule, newest first.
    pub async fn fires(&self, id: &str, limit: u32) -> Result<Vec<Fire>> {
        let full = db::full_id(&self.db, db::ShortIds::Schedules, id).await?.unwrap_or_default();
        store::fires(&self.db, &full, limit).await
    }

    /// Stops a schedule firing; its configuration is kept. Pausing a paused one is a no-op.
    pub async fn pause(&self, id: &str) -> Result<Schedule> {
        let current = self.get(id).await?;
        if let Some(refused) = ScheduleAction::Pause.refusal(id, current.state) {
            return Err(refused);
        }
        if current.state == State::Paused {
            return Ok(current);
        }
        let full = current.id.to_string();
        self.pause_matching(Some(&full), None).await?;
        self.get(&full).await
    }

    /// Pauses every active schedule of an agent (it was stopped).
    pub(crate) async fn pause_agent(&self, agent_id: Uuid) -> Result<()> {
        self.pause_matching(None, Some(&agent_id.to_string())).await
    }

    /// Pauses the active schedules with this id, or of this agent.
    async fn pause_matching(&self, id: Option<&str>, agent_id: Option<&str>) -> Result<()> {
        store::pause(&self.db, id, agent_id).await?;
        self.changed.notify_one();
        Ok(())
    }

    /// Lets a paused schedule fire again: a cron job from its next match after now; a one-shot
    /// schedule at its time, or at once if that passed while it was paused.
    pub async fn resume(&self, id: &str) -> Result<Schedule> {
        let current = self.get(id).await?;
        if let Some(refused) = ScheduleAction::Resume.refusal(id, current.state) {
            return Err(refused);
        }
        if current.state == State::Active {
            return Ok(current);
        }
        let now = self.clock.now();
        let next = match current.kind {
            Kind::Once => {
                let at = current.run_at.as_deref().and_then(parse_time).unwrap_or(now);
                at.max(now)
            }
            Kind::Cron => {
                let (expression, timezone) = (current.expression.clone(), current.timezone.clone());
                cron::off_runtime(move || {
                    cron::parse_cron(expression.as_deref().unwrap_or_default(), timezone.as_deref())
                        .map(|spec| spec.next_after(now))
                })
                .await?
                .map_err(|e| Error::conflict(format!("schedule {id} has an expression this daemon no longer accepts: {e}; create it again with a valid one")))?
                .ok_or_else(|| Error::conflict(format!("schedule {id} never fires again")))?
            }
        };
        let full = current.id.to_string();
        store::resume(&self.db, &full, next).await?;
        // Read back before the scheduler hears of it: a one-shot schedule whose time passed
        // fires at once, and the answer is what resuming did, not what came after.
        let resumed = self.get(&full).await?;
        self.changed.notify_one();
        Ok(resumed)
    }

    /// Copies an agent's manifest `[[cron]]` blocks into the store, once per agent: a
    /// manifest job an operator deleted stays deleted. A stopped agent's jobs are stored
    /// paused.
    pub(crate) async fn seed_manifest(&self, agent: &Agent) -> Result<()> {
        let now = self.clock.now();
        let blocks: Vec<(String, Option<String>)> =
            agent.manifest.cron.iter().map(|b| (b.schedule.clone(), b.timezone.clone())).collect();
        let nexts = cron::off_runtime(move || {
            blocks
                .iter()
                .map(|(expression, timezone)| {
                    cron::parse_cron(expression, timezone.as_deref()).map(|s| s.next_after(now))
                })
                .collect::<Vec<_>>()
        })
        .await?;
        let (agent_id, created_by) = (agent.id.to_string(), format!("type:{}", agent.agent_type));
        let mut rows = Vec::with_capacity(agent.manifest.cron.len());
        for (block, next) in agent.manifest.cron.iter().zip(nexts) {
            let next = match next {
                Ok(next) => next,
                Err(e) => {
                    tracing::warn!(agent = %agent.name, error = %e, "a [[cron]] block cannot be scheduled; it is stored paused");
                    None
                }
            };
            rows.push(store::NewRow {
                id: Uuid::now_v7(),
                agent_id: &agent_id,
                kind: Kind::Cron,
                origin: Origin::Manifest,
                expression: Some(&block.schedule),
                timezone: block.timezone.as_deref(),
                run_at: None,
                prompt: &block.prompt,
                channel: block.channel.as_deref(),
                next_fire: next.filter(|_| agent.is_running()),
                created_by: &created_by,
                lineage: None,
                at: now,
            });
        }
        if store::seed(&self.db, &agent_id, rows).await? {
            self.changed.notify_one();
        }
        Ok(())
    }
}

impl Schedules {
    /// Deletes a schedule and its fire history for good. Human-only: it takes a
    /// [`HumanApproval`] (an operator's dashboard session and its CSRF token) and `confirm`,
    /// which must be the schedule's [`Schedule::short_id`] as the operator typed it on the
    /// confirmation page. No tool and no API token can make the approval, so neither can reach
    /// this. The approval is the proof and is not read; who approved is in the operator-action
    /// log the dashboard's route writes.
    pub async fn delete_permanently(&self, id: &str, confirm: &str, _approval: &HumanApproval) -> Result<Schedule> {
        let schedule = self.get(id).await?;
        if confirm.trim() != schedule.short_id() {
            return Err(field_error(
                "confirm",
                format!("type {} (the schedule's short id) to confirm the permanent deletion", schedule.short_id()),
            ));
        }
        store::delete(&self.db, &schedule.id.to_string()).await?;
        self.changed.notify_one();
        Ok(schedule)
    }
}

pub(crate) use crate::text::short_id;

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "schedule",
    open: |s| {
        let schedules = Schedules::new(
            s.get::<Db>().clone(),
            s.get::<Clock>().clone(),
            s.config().schedules.fire_history,
            s.need::<Agents>(),
            s.get::<Cluster>().id().to_string(),
        );
        s.provide(schedules);
        Ok(())
    },
    register,
};

fn check_prompt(prompt: &str) -> Result<()> {
    if crate::text::is_blank(prompt) || crate::text::longer_than(prompt, MAX_PROMPT) {
        return Err(field_error("prompt", format!("a prompt of 1 to {MAX_PROMPT} characters")));
    }
    Ok(())
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text).ok().map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_offers_the_action_that_changes_it_and_a_done_schedule_none() {
        assert_eq!(State::Active.actions(), &[ScheduleAction::Pause]);
        assert_eq!(State::Paused.actions(), &[ScheduleAction::Resume]);
        assert!(State::Done.actions().is_empty());
        // Repeating the state's own action is a no-op, not a conflict.
        assert!(ScheduleAction::Pause.refusal("s", State::Paused).is_none());
        assert!(ScheduleAction::Resume.refusal("s", State::Active).is_none());
        for action in [ScheduleAction::Pause, ScheduleAction::Resume] {
            let refused = action.refusal("s1", State::Done).expect("a fired one-shot schedule refuses");
            assert_eq!(refused.kind, crate::ErrorKind::Conflict);
            assert!(refused.message.contains("schedule s1 has already fired"), "{}", refused.message);
        }
    }
}
