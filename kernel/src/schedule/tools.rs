//! Family `schedule`: an agent's own scheduled turns and cron jobs, thin over
//! [`super::Schedules`]. The "delete" tools only pause (spec §11): permanent deletion is an
//! operator's, in the dashboard, and no tool can reach it.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Kind, Lineage, NewSchedule, NewTiming, Origin, Schedule, ScheduleFilter};
use crate::channel::Channels;
use crate::error::{Error, Result};
use crate::family::Services;
use crate::page::{MAX_LIMIT, Page, PageRequest};
use crate::schedule::Schedules;
use crate::tool::{CallContext, Registry, Tool, ToolDef};

const FAMILY: &str = "schedule";
const PAUSED_NOTE: &str = "paused, not deleted: its configuration is kept and it can be resumed; only an operator can delete a schedule for good";

/// What the schedule tools reach, taken from the kernel's services when they are registered.
#[derive(Clone)]
pub struct Uses {
    schedules: Arc<Schedules>,
    /// To check a reply's channel when the schedule is made.
    channels: Arc<Channels>,
}

pub(crate) fn register(r: &mut Registry, services: &Services) {
    let uses = Uses { schedules: services.need(), channels: services.need() };
    r.add(ScheduleCreate(uses.clone()));
    r.add(ScheduleList(uses.clone()));
    r.add(ScheduleDelete(uses.clone()));
    r.add(ScheduleResume(uses.clone()));
    r.add(CronCreate(uses.clone()));
    r.add(CronList(uses.clone()));
    r.add(CronCancel(uses.clone()));
    r.add(CronEnable(uses.clone()));
}

/// The caller's own schedules of `kind`, oldest first (an agent holds at most
/// [`super::MAX_PER_AGENT`] runtime ones, and its manifest's few).
async fn own_list(uses: &Uses, ctx: &CallContext, kind: Kind) -> Result<Page<Schedule>> {
    let filter = ScheduleFilter { agent: Some(ctx.agent.id.to_string()), kind: Some(kind), ..Default::default() };
    uses.schedules.list(&filter, &PageRequest::first(MAX_LIMIT)).await
}

/// Pauses or resumes one of the caller's own schedules of `kind`. Manifest cron jobs belong
/// to the operator who wrote the agent type: an agent may read them, not switch them.
async fn set_own(uses: &Uses, ctx: &CallContext, id: &str, kind: Kind, pause: bool) -> Result<Schedule> {
    let schedules = &uses.schedules;
    let schedule = schedules.get_own(id, &ctx.agent, kind).await?;
    if schedule.origin == Origin::Manifest {
        return Err(Error::forbidden(format!(
            "cron job {id} comes from the [[cron]] blocks of agent type `{}`; an operator can pause or resume it in the dashboard",
            ctx.agent.agent_type
        )));
    }
    if pause { schedules.pause(id).await } else { schedules.resume(id).await }
}

pub struct ScheduleCreate(Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleCreateArgs {
    /// When to run: an RFC 3339 time (`2026-12-01T09:00:00Z`) or a duration from now (`+15m`, `+2h`, `+1h30m`, `+1d`). Must be in the future.
    pub when: String,
    /// What you will be told when it fires.
    pub prompt: String,
    /// Where to deliver the reply: a channel's name (its default target) or `NAME:TARGET`.
    pub channel: Option<String>,
}

impl Tool for ScheduleCreate {
    type Args = ScheduleCreateArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "schedule_create",
            FAMILY,
            "Schedule a one-shot turn for yourself at a future time, with a prompt.",
        )
        .tags(&["schedule", "reminder", "later", "timer", "once"])
    }

    async fn run(&self, ctx: CallContext, args: ScheduleCreateArgs) -> Result<Value> {
        check_channel(&self.0, &ctx, args.channel.as_deref())?;
        let new = NewSchedule {
            agent_id: ctx.agent.id,
            timing: NewTiming::Once { when: args.when },
            prompt: args.prompt,
            channel: args.channel,
            origin: Origin::Runtime,
            created_by: ctx.actor(),
            lineage: Some(Lineage::of(&ctx)),
        };
        Ok(json!(self.0.schedules.create(new).await?))
    }
}

pub struct ScheduleList(Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

impl Tool for ScheduleList {
    type Args = NoArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("schedule_list", FAMILY, "Your one-shot scheduled turns: when, state, and how the last fire went.")
            .tags(&["schedule", "list", "reminder"])
            .read_only()
    }

    async fn run(&self, ctx: CallContext, _: NoArgs) -> Result<Value> {
        let page = own_list(&self.0, &ctx, Kind::Once).await?;
        Ok(json!({ "schedules": page.items, "total": page.total }))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleIdArgs {
    /// From schedule_list.
    pub schedule_id: String,
}

pub struct ScheduleDelete(Uses);

impl Tool for ScheduleDelete {
    type Args = ScheduleIdArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "schedule_delete",
            FAMILY,
            "Pause one of your scheduled turns so it does not fire. Its configuration is kept; schedule_resume brings it back.",
        )
        .tags(&["schedule", "pause", "cancel", "disable"])
    }

    async fn run(&self, ctx: CallContext, args: ScheduleIdArgs) -> Result<Value> {
        let paused = set_own(&self.0, &ctx, &args.schedule_id, Kind::Once, true).await?;
        Ok(json!({ "paused": paused, "note": PAUSED_NOTE }))
    }
}

pub struct ScheduleResume(Uses);

impl Tool for ScheduleResume {
    type Args = ScheduleIdArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "schedule_resume",
            FAMILY,
            "Resume a paused scheduled turn; if its time passed while paused, it fires at once.",
        )
        .tags(&["schedule", "resume", "enable"])
    }

    async fn run(&self, ctx: CallContext, args: ScheduleIdArgs) -> Result<Value> {
        Ok(json!(set_own(&self.0, &ctx, &args.schedule_id, Kind::Once, false).await?))
    }
}

pub struct CronCreate(Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CronCreateArgs {
    /// Five fields: minute hour day-of-month month day-of-week, e.g. `0 9 * * mon-fri` or `*/15 * * * *`;
    /// or `@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly`.
    pub expression: String,
    /// What you will be told each time it fires.
    pub prompt: String,
    /// Where to deliver the replies: a channel's name (its default target) or `NAME:TARGET`.
    pub channel: Option<String>,
    /// IANA time zone the expression is read in, e.g. `Europe/Berlin`; UTC when absent.
    pub timezone: Option<String>,
}

impl Tool for CronCreate {
    type Args = CronCreateArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("cron_create", FAMILY, "Create a recurring turn for yourself on a 5-field cron expression.")
            .tags(&["schedule", "cron", "recurring", "repeat", "every"])
    }

    async fn run(&self, ctx: CallContext, args: CronCreateArgs) -> Result<Value> {
        check_channel(&self.0, &ctx, args.channel.as_deref())?;
        let new = NewSchedule {
            agent_id: ctx.agent.id,
            timing: NewTiming::Cron { expression: args.expression, timezone: args.timezone },
            prompt: args.prompt,
            channel: args.channel,
            origin: Origin::Runtime,
            created_by: ctx.actor(),
            lineage: Some(Lineage::of(&ctx)),
        };
        Ok(json!(self.0.schedules.create(new).await?))
    }
}

pub struct CronList(Uses);

impl Tool for CronList {
    type Args = NoArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "cron_list",
            FAMILY,
            "Your cron jobs (from your agent type's [[cron]] blocks and your own): expression, state, next fire, last result.",
        )
        .tags(&["schedule", "cron", "list", "recurring"])
            .read_only()
    }

    async fn run(&self, ctx: CallContext, _: NoArgs) -> Result<Value> {
        let page = own_list(&self.0, &ctx, Kind::Cron).await?;
        Ok(json!({ "cron_jobs": page.items, "total": page.total }))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CronIdArgs {
    /// From cron_list.
    pub cron_id: String,
}

pub struct CronCancel(Uses);

impl Tool for CronCancel {
    type Args = CronIdArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "cron_cancel",
            FAMILY,
            "Pause one of your cron jobs. Its configuration is kept; cron_enable turns it back on.",
        )
        .tags(&["schedule", "cron", "pause", "cancel", "stop"])
    }

    async fn run(&self, ctx: CallContext, args: CronIdArgs) -> Result<Value> {
        let paused = set_own(&self.0, &ctx, &args.cron_id, Kind::Cron, true).await?;
        Ok(json!({ "paused": paused, "note": PAUSED_NOTE }))
    }
}

pub struct CronEnable(Uses);

impl Tool for CronEnable {
    type Args = CronIdArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("cron_enable", FAMILY, "Turn a paused cron job back on; it fires from its next match after now.")
            .tags(&["schedule", "cron", "resume", "enable"])
    }

    async fn run(&self, ctx: CallContext, args: CronIdArgs) -> Result<Value> {
        Ok(json!(set_own(&self.0, &ctx, &args.cron_id, Kind::Cron, false).await?))
    }
}

/// A schedule's channel must be a configured channel with somewhere to deliver, checked when
/// the schedule is made rather than at its first fire; made in a conversation's turn, it must
/// be that conversation (the guard `channel_send` passes).
fn check_channel(uses: &Uses, ctx: &CallContext, channel: Option<&str>) -> Result<()> {
    if let Some(address) = channel {
        let (name, chat) = uses.channels.address(address).map_err(|e| e.on_field("channel").with_field("channel"))?;
        crate::channel::stays_in_conversation(ctx.channel.as_ref(), &name, &chat, "a schedule's reply")
            .map_err(|e| e.with_field("channel"))?;
    }
    Ok(())
}
