//! The scheduler: one task that sleeps until the earliest `next_fire` in the store (or until
//! the store changes, or a manual clock moves), then fires everything due. Each fire is
//! written down — the schedule's next time and a `running` fire row, one transaction per
//! batch — before its turn starts, so a crash never fires the same slot twice; the turn
//! then runs headless, at most `[schedules] max_concurrent_fires` at once.
//!
//! A schedule whose time passed while the daemon was down fires once when it starts, with
//! the slots it missed counted in the fire's `missed_slots`; a cron job then continues from
//! its next match after now.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::Semaphore;
use uuid::Uuid;

use super::store::{self, DueRow};
use super::{FireOutcome, Kind, Schedules, State, cron, parse_time};
use crate::channel::Channels;
use crate::config::Config;
use crate::db;
use crate::error::Result;
use crate::family::Services;
use crate::notify::Inbox;
use crate::runtime::{Runtime, TurnEnd, TurnRequest};
use crate::session::Origin;
use crate::tool::Caller;

/// Due schedules taken per pass (one transaction).
const BATCH: i64 = 500;
/// Fires of a burst held back from starting while the rest of it is written down, at most
/// (past this, a stream of due schedules that never ends still starts its turns).
const MAX_HELD_BACK: usize = 20_000;
/// The longest the scheduler sleeps without looking again (the wall clock can be set back
/// or forward under it).
const MAX_SLEEP: Duration = Duration::from_secs(30);
/// Missed slots counted at most per fire (counting walks the calendar slot by slot; a
/// minutely job down for a day stops counting here).
const MISSED_CAP: u64 = 1_000;

/// A fire written down and ready to run.
struct Dispatch {
    fire_id: i64,
    schedule_id: String,
    agent_id: String,
    prompt: String,
    channel: Option<String>,
    lineage: super::Lineage,
    /// An operator's "run now": it never pauses the schedule.
    manual: bool,
}

/// What the runner's fires reach, taken from the kernel's services when it starts (the
/// channels and the inbox open after the schedules, so not at `open`).
#[derive(Clone)]
struct Uses {
    schedules: Arc<Schedules>,
    config: Arc<Config>,
    runtime: Runtime,
    /// Where a fire's reply is delivered.
    channels: Arc<Channels>,
    /// Where a chain of schedules stopped at the depth limit is noted.
    inbox: Arc<Inbox>,
}

impl Uses {
    fn of(services: &Services) -> Uses {
        Uses {
            schedules: services.need(),
            config: services.need(),
            runtime: services.get::<Runtime>().clone(),
            channels: services.need(),
            inbox: services.need(),
        }
    }
}

/// Starts the scheduler. It stops when the kernel closes.
pub(crate) fn start(services: &Services) {
    let uses = Uses::of(services);
    let (queue, pending) = tokio::sync::mpsc::unbounded_channel();
    let schedules = uses.schedules.clone();
    tokio::spawn(run_fires(uses, pending));
    tokio::spawn(async move {
        let started_at = schedules.clock.now();
        let mut held_back = Vec::new();
        loop {
            let now = schedules.clock.now();
            let wait = match schedules.begin_due(now, started_at).await {
                Ok(due) => {
                    let full = due.len() as i64 == BATCH;
                    held_back.extend(due);
                    // A burst is written down whole before its turns start, so the turns of
                    // its first batches do not hold up the writing of the rest (every fire of
                    // the burst is as late as the last batch written).
                    if full && held_back.len() < MAX_HELD_BACK {
                        continue; // more may be due
                    }
                    for d in held_back.drain(..) {
                        let _ = queue.send(d);
                    }
                    if full {
                        continue;
                    }
                    match schedules.earliest().await {
                        Ok(Some(next)) => {
                            (next - schedules.clock.now()).to_std().unwrap_or(Duration::ZERO).min(MAX_SLEEP)
                        }
                        Ok(None) => MAX_SLEEP,
                        Err(e) => {
                            tracing::warn!(error = %e.message, "the scheduler cannot read the store");
                            Duration::from_secs(1)
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e.message, "the scheduler could not fire due schedules");
                    for d in held_back.drain(..) {
                        let _ = queue.send(d);
                    }
                    Duration::from_secs(1)
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = schedules.changed.notified() => {}
                _ = schedules.clock.jumped() => {}
                _ = schedules.stopped.cancelled() => return,
            }
        }
    });
}

/// Starts each written-down fire's turn as soon as one of `[schedules] max_concurrent_fires`
/// slots is free; the queue holds plain records, not parked tasks.
async fn run_fires(uses: Uses, mut pending: tokio::sync::mpsc::UnboundedReceiver<Dispatch>) {
    let permits = Arc::new(Semaphore::new(uses.config.schedules.max_concurrent_fires as usize));
    while let Some(d) = pending.recv().await {
        let Ok(permit) = permits.clone().acquire_owned().await else { return };
        tokio::spawn(fire(uses.clone(), d, Some(permit)));
    }
}

/// What firing one due schedule means, worked out before anything is written.
struct Planned {
    dispatch: Dispatch,
    /// The `next_fire` it was due at, as stored (the write is guarded on it).
    due: String,
    next: Option<DateTime<Utc>>,
    state: State,
    missed: i64,
}

/// For each due row: its next fire (cron) or `done` (one-shot), and the slots it missed —
/// those that passed while the daemon was down (the due one included), and any later ones
/// passed over because the fire came late. Expressions shared by many jobs are parsed once.
/// Runs on the blocking pool (see `begin_due`).
fn plan(rows: Vec<DueRow>, now: DateTime<Utc>, started_at: DateTime<Utc>) -> Vec<Planned> {
    let mut parsed: HashMap<(String, Option<String>), Option<cron::CronSpec>> = HashMap::new();
    rows.into_iter()
        .map(|row| {
            let due = row.next_fire;
            let due_at = parse_time(&due).unwrap_or(now);
            let is_cron = row.kind == Kind::Cron;
            let key = (row.expression.unwrap_or_default(), row.timezone);
            let spec = is_cron
                .then(|| {
                    parsed.entry(key).or_insert_with_key(|(e, tz)| cron::parse_cron(e, tz.as_deref()).ok()).clone()
                })
                .flatten();
            let next = spec.as_ref().and_then(|s| s.next_after(now.max(due_at)));
            let passed_over = spec.as_ref().map_or(0, |s| s.slots_between(due_at, now, MISSED_CAP)) as i64;
            let missed = passed_over + i64::from(due_at < started_at);
            let state = match (is_cron, next) {
                (true, Some(_)) => State::Active,
                (true, None) => State::Paused,
                (false, _) => State::Done,
            };
            let dispatch = Dispatch {
                fire_id: 0,
                schedule_id: row.id,
                agent_id: row.agent_id,
                prompt: row.prompt,
                channel: row.channel,
                lineage: row.lineage,
                manual: false,
            };
            Planned { dispatch, due, next, state, missed }
        })
        .collect()
}

/// Sends a fire's reply to the schedule's channel, if it names one.
async fn deliver(channels: &Channels, d: &Dispatch, reply: &str) -> Result<()> {
    let Some(address) = &d.channel else { return Ok(()) };
    let (channel, chat) = channels.address(address)?;
    crate::channel::stays_in_conversation(d.lineage.conversation.as_ref(), &channel, &chat, "a schedule's reply")?;
    let sent_by = format!("schedule:{}", super::short_id(&d.schedule_id));
    channels.deliver(&channel, &chat, crate::channel::platform::Outgoing::Text(reply.to_string()), &sent_by).await
}

/// Refuses a fire one agent call deeper than the turn that made its schedule, past `[kernel]
/// max_agent_call_depth` (a schedule that keeps scheduling itself again).
fn too_deep(uses: &Uses, d: &Dispatch) -> Result<()> {
    let what = || format!("schedule {}", super::short_id(&d.schedule_id));
    let depth = d.lineage.depth.saturating_add(1);
    crate::turn::depth::check_with(&uses.config, &uses.schedules.agents, depth, &d.lineage.chain, what)
}

/// Tells the operators a chain of schedules was stopped at the depth limit.
async fn stopped_chain(inbox: &Inbox, agent: &crate::agent::Agent, d: &Dispatch, why: &str) {
    let note = crate::notify::NewNote {
        source: "schedule",
        agent: Some((agent.id, agent.name.clone())),
        reason: format!("A chain of schedules of agent {} was stopped", agent.name),
        summary: format!(
            "Schedule {} was not run: {why}. Each schedule made in a turn runs one level deeper than that turn.",
            super::short_id(&d.schedule_id)
        ),
        urgency: crate::notify::Urgency::High,
    };
    if let Err(e) = inbox.notify(note).await {
        tracing::warn!(schedule = %d.schedule_id, error = %e.message, "a stopped chain of schedules could not be noted in the inbox");
    }
}

/// Runs one fire's turn and records how it ended.
/// A fire of the scheduler holds one of `[schedules] max_concurrent_fires` places; an
/// operator's "run now" holds none.
async fn fire(uses: Uses, d: Dispatch, _permit: Option<tokio::sync::OwnedSemaphorePermit>) {
    let started = Instant::now();
    let schedules = &uses.schedules;
    let agent = Uuid::parse_str(&d.agent_id).ok().and_then(|id| schedules.agents.get_by_id(id));
    // The agent whose chain of schedules is stopped here; its note follows the fire's record.
    let mut stopped = None;
    let (outcome, detail, session) = match agent {
        Some(agent)
            if agent.is_running()
                && let Err(e) = too_deep(&uses, &d) =>
        {
            stopped = Some(agent);
            (FireOutcome::Failed, e.message, None)
        }
        Some(agent) if agent.is_running() => {
            let req = TurnRequest {
                new_session_label: Origin::Schedule(super::short_id(&d.schedule_id)).label(),
                depth: d.lineage.depth + 1,
                chain: d.lineage.chain.clone(),
                channel: d.lineage.conversation.clone(),
                ..TurnRequest::headless(d.prompt.clone(), Caller::Schedule(d.schedule_id.clone()))
            };
            match uses.runtime.run_turn(agent, req).await {
                Ok(r) if r.ended == TurnEnd::Reply => match deliver(&uses.channels, &d, &r.reply).await {
                    Ok(()) => {
                        (FireOutcome::Ok, crate::text::shorten(&r.reply, super::DETAIL_CHARS), Some(r.session_id))
                    }
                    Err(e) => {
                        (FireOutcome::Failed, format!("the reply was not delivered: {}", e.message), Some(r.session_id))
                    }
                },
                Ok(r) if r.ended == TurnEnd::Parked => (FireOutcome::Parked, r.reply, Some(r.session_id)),
                Ok(r) => {
                    (FireOutcome::Failed, format!("the turn ended without a reply: {:?}", r.ended), Some(r.session_id))
                }
                Err(e) => (FireOutcome::Failed, e.model_text(), None),
            }
        }
        Some(agent) => (FireOutcome::Skipped, format!("agent `{}` is stopped", agent.name), None),
        None => (FireOutcome::Skipped, "the agent no longer exists".to_string(), None),
    };
    if outcome == FireOutcome::Skipped && !d.manual {
        // A stopped agent's cron job would otherwise record a skipped fire at every slot; it
        // keeps its configuration and an operator can resume it.
        // (A one-shot schedule is done already: nothing to pause.)
        if let Err(e) = schedules.pause(&d.schedule_id).await
            && e.kind != crate::ErrorKind::Conflict
        {
            tracing::warn!(schedule = %d.schedule_id, error = %e.message, "could not pause the schedule of a stopped agent");
        }
    }
    crate::metrics::metrics().schedule_fired(outcome.as_str());
    let duration_ms = started.elapsed().as_millis() as i64;
    let finished = store::Finished {
        fire_id: d.fire_id,
        schedule_id: &d.schedule_id,
        outcome,
        detail: &detail,
        session,
        duration_ms,
        at: schedules.clock.now(),
    };
    if let Err(e) = store::finish_fire(&schedules.db, finished, schedules.fire_history).await {
        tracing::warn!(schedule = %d.schedule_id, error = %e.message, "could not record a fire's outcome");
    }
    // Noted after the record, so an operator who opens the note finds the failed fire there.
    if let Some(agent) = stopped {
        stopped_chain(&uses.inbox, &agent, &d, &detail).await;
    }
}

/// Fires schedule `id` once, now, outside its times (an operator's "run now"): its state and
/// next fire stay as they are, so a paused schedule stays paused. The fire is recorded like
/// any other, its turn runs in the background; its fire row's id is returned. Refused for a
/// stopped agent (a scheduled fire would be skipped and pause the schedule), and while a fire
/// of the schedule runs: one at a time, so a loop of requests cannot start turns without end.
/// Every front calls it with the kernel's services (`kernel.services()`).
pub async fn run_now(services: &Services, id: &str) -> Result<i64> {
    let uses = Uses::of(services);
    let schedules = &uses.schedules;
    let schedule = schedules.get(id).await?;
    let agent = Uuid::parse_str(&schedule.agent_id).ok().and_then(|a| schedules.agents.get_by_id(a));
    match agent {
        Some(agent) if agent.is_running() => {}
        Some(agent) => {
            return Err(crate::Error::conflict(format!(
                "agent `{0}` is stopped: start it first (`kennel agent start {0}`)",
                agent.name
            )));
        }
        None => return Err(crate::Error::conflict("the schedule's agent no longer exists")),
    }
    let at = db::timestamp(schedules.clock.now());
    let id = schedule.id.to_string();
    let (row, fire_id) = match store::take_manual_fire(&schedules.db, &id, &schedules.daemon, &at).await? {
        store::ManualFire::Taken(row, fire_id) => (*row, fire_id),
        store::ManualFire::Running => {
            return Err(crate::Error::conflict(format!(
                "schedule {} is running now: run it again when this fire ends",
                schedule.short_id()
            )));
        }
        store::ManualFire::Gone => {
            return Err(crate::Error::not_found(format!("no schedule {}", schedule.short_id())));
        }
    };
    let d = Dispatch {
        fire_id,
        schedule_id: row.id,
        agent_id: row.agent_id,
        prompt: row.prompt,
        channel: row.channel,
        lineage: row.lineage,
        manual: true,
    };
    tokio::spawn(fire(uses.clone(), d, None));
    Ok(fire_id)
}

impl Schedules {
    /// Writes down every schedule due at `now` (up to a batch): its next fire time (or done)
    /// and a `running` fire row, in one transaction; the fires' turns are queued as soon as it
    /// commits. What each fire means (next time, missed slots) is worked out before the
    /// writes, so SQLite's write lock is held only for them. On PostgreSQL, where several
    /// daemons may take due schedules at once, the rows are read and locked in the same
    /// transaction (`store::due`), so each fire is taken by one daemon: exactly once.
    async fn begin_due(&self, now: DateTime<Utc>, started_at: DateTime<Utc>) -> Result<Vec<Dispatch>> {
        let mut taking = if self.db.is_shared() { Some(self.db.begin().await?) } else { None };
        let rows = store::due(&self.db, taking.as_mut(), now, BATCH).await?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        // Counting missed slots walks up to 1,000 slots per row: CPU work, off the runtime.
        let planned = cron::off_runtime(move || plan(rows, now, started_at)).await?;
        let fired_at = db::timestamp(self.clock.now());
        let fires: Vec<store::Taking<'_>> = planned
            .iter()
            .map(|p| store::Taking {
                schedule_id: &p.dispatch.schedule_id,
                due: &p.due,
                next: p.next,
                state: p.state,
                missed: p.missed,
            })
            .collect();
        let mut tx = match taking {
            Some(tx) => tx,
            None => self.db.begin().await?,
        };
        let fire_ids = if self.db.is_shared() {
            store::take_fires_postgres(&mut tx, &self.daemon, &fired_at, &fires).await?
        } else {
            store::take_fires(&mut tx, &self.daemon, &fired_at, &fires).await?
        };
        tx.commit().await?;
        let late = |due: &str| parse_time(due).map_or(0.0, |at| (now - at).as_seconds_f64());
        Ok(planned
            .into_iter()
            .zip(fire_ids)
            // Not taken: paused or changed since the read.
            .filter_map(|(p, id)| id.map(|fire_id| (late(&p.due), Dispatch { fire_id, ..p.dispatch })))
            .map(|(late, dispatch)| {
                crate::metrics::metrics().schedule_late(late);
                dispatch
            })
            .collect())
    }

    /// The earliest fire time of any active schedule.
    async fn earliest(&self) -> Result<Option<DateTime<Utc>>> {
        Ok(store::earliest(&self.db).await?.as_deref().and_then(parse_time))
    }

    /// Marks the fires `daemon` left `running` (it stopped or died mid-turn) interrupted; how
    /// many there were.
    pub(crate) async fn mark_interrupted(&self, daemon: &str) -> Result<u64> {
        store::mark_interrupted(&self.db, daemon, self.clock.now()).await
    }
}
