//! Human approval for risky calls, decided by what the turn has read (issue 48).
//!
//! - **Provenance** ([`provenance`]): each session carries labels for the untrusted sources its
//!   model has read: results (and errors) of the browser, MCP and A2A families' tools, a channel
//!   message (from anyone but the channel's `trusted_users`), a task sent by a remote agent. A label is added
//!   in the pipeline the moment a result is read (so the next call of the same batch sees it),
//!   stored on the session when the calls end, and shown in the chat (`tainted` event).
//! - **Rules** ([`config`]): `[approvals]` in `config.toml`, the shipped defaults first. The
//!   first rule covering a call (tool glob, argument globs) whose `when` holds (`always`, or
//!   `tainted`: the session has a label) sends the call to a person.
//! - **The decision is a person's**: the call becomes a row of `approvals` with its exact
//!   arguments, the agent, the provenance and the rule; a turn with a person in it waits (its
//!   chat shows an `approval` event) until a person decides (an operator on the Approvals page,
//!   or `kennel approvals` on the daemon's machine, or the owner with a one-time code from their
//!   chat: [`owner`]), or the rule's timeout denies it. A turn
//!   with nobody in it parks the call and ends; its session goes on once the call is decided
//!   ([`resume`]). API tokens
//!   read approvals and never decide them; no tool reaches them. "For N minutes" lets the same
//!   agent's calls of the same tool under the same rule through until then.
//! - **Secret egress** ([`egress`]): before a call whose arguments leave the daemon, they are
//!   searched for the daemon's secrets and credential shapes; a match is refused, naming the
//!   rule and never the secret.
//!
//! Calls made outside a turn (an operator's "try it", a token's direct call) are the caller's
//! own acts: rules and the egress check apply to the calls a model chose.

pub mod config;
pub mod egress;
pub mod owner;
pub mod provenance;
mod resume;
mod store;
pub mod target;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::clock::Clock;
use crate::cluster::Cluster;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::family::{Family, Services};
use crate::tool::{CallContext, Caller, ChannelContext};
use crate::turn::{AgentEvent, EventKind, Turns};
pub use config::{ApprovalsConfig, Rule, When};
use egress::SecretScan;
pub use owner::OwnerMessage;
pub use provenance::{Label, Provenance};
pub(crate) use resume::start as start_resuming;

/// The family's part in the kernel: a service, no tools.
pub const FAMILY: Family = Family {
    name: "approval",
    open: |s| {
        let approvals = s.provide(Approvals::open(s));
        s.get::<crate::channel::Channels>().decisions_go_to(&approvals);
        Ok(())
    },
    register: |_, _| {},
};

/// How often a daemon sharing its database looks for a decision a notification did not bring.
const LOOK_AGAIN: Duration = Duration::from_secs(1);
/// The longest "calls like this for N minutes" may run: a day.
pub const MAX_FOR_MINUTES: u32 = 1440;
/// At most this many approvals in one list.
pub const MAX_LISTED: u32 = 500;
/// At most this many characters in a decision's note.
pub const MAX_NOTE: usize = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    Approved,
    Denied,
    /// Nobody decided in time (or the turn stopped waiting): the call was not made.
    Expired,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Approved => "approved",
            Status::Denied => "denied",
            Status::Expired => "expired",
        }
    }

    pub fn parse(text: &str) -> Option<Status> {
        [Status::Pending, Status::Approved, Status::Denied, Status::Expired].into_iter().find(|s| s.as_str() == text)
    }
}

/// A call that waits, or waited, for a person's decision.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Approval {
    pub id: Uuid,
    pub agent_id: Uuid,
    pub agent: String,
    pub session_id: Option<Uuid>,
    pub turn_id: Option<Uuid>,
    pub tool: String,
    /// The call's exact arguments: what is approved.
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// The untrusted sources the turn had read when it made the call.
    pub provenance: Vec<Label>,
    /// The rule that sent it here.
    pub rule: String,
    /// Why the rule applied, in words.
    pub reason: String,
    pub requested_at: String,
    /// When an undecided approval is denied (RFC 3339).
    pub expires_at: String,
    pub status: Status,
    /// `operator:NAME` or `cli`; `timeout` when nobody decided.
    pub decided_by: Option<String>,
    pub decided_at: Option<String>,
    pub note: Option<String>,
    /// An approval "for N minutes": the same agent's calls of the same tool under the same
    /// rule go through until then.
    pub allow_until: Option<String>,
    /// Asked by a turn with no person in it: that turn ended, and its session goes on when the
    /// call is decided (or expires).
    pub parked: bool,
    /// When a parked call's session went on: the call ran (if approved) and the agent was told.
    pub resumed_at: Option<String>,
}

/// Where a headless turn parks the call a rule holds: the pipeline sets it, and the turn then
/// runs no more of the reply's calls and ends (`TurnEnd::Parked`).
#[derive(Debug, Default)]
pub struct Parking(Mutex<Option<Parked>>);

/// The call a turn parked.
#[derive(Debug, Clone)]
pub struct Parked {
    pub approval: Uuid,
    pub tool: String,
}

impl Parking {
    pub fn parked(&self) -> Option<Parked> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Parks `parked`, unless a call of the turn is parked already: then that one.
    fn park(&self, parked: Parked) -> std::result::Result<(), Parked> {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match &*slot {
            Some(first) => Err(first.clone()),
            None => {
                *slot = Some(parked);
                Ok(())
            }
        }
    }

    fn clear(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// What a parked call's session goes on with: the turn that parked it, as it was asked.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Resume {
    caller: Caller,
    channel: Option<ChannelContext>,
    depth: u32,
    /// The agents of the blocking chain before this one, outermost first.
    chain: Vec<Uuid>,
}

impl Resume {
    fn of(ctx: &CallContext) -> Resume {
        let before = ctx.chain.len().saturating_sub(1);
        Resume {
            caller: ctx.caller.clone(),
            channel: ctx.channel.clone(),
            depth: ctx.depth,
            chain: ctx.chain[..before].to_vec(),
        }
    }
}

/// A person's decision.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    pub approve: bool,
    /// Approve calls like this one (same agent, tool and rule) for this many minutes.
    pub for_minutes: Option<u32>,
    pub note: Option<String>,
}

pub struct Approvals {
    db: Db,
    cluster: Arc<Cluster>,
    clock: Clock,
    turns: Arc<Turns>,
    agents: Arc<crate::agent::Agents>,
    sessions: Arc<crate::session::Sessions>,
    runtime: crate::runtime::Runtime,
    /// Where the owner's chat is (`[notify] telegram_channel`), for decisions by code.
    channels: Arc<crate::channel::Channels>,
    notify: crate::notify::config::NotifyConfig,
    rules: Vec<Rule>,
    scan: SecretScan,
    /// Wakes the loop that resumes parked calls: one was parked or decided here.
    resumer: tokio::sync::Notify,
    /// Wrong codes from the owner's chat lately ([`owner`]): past a few, codes are not read.
    wrong_codes: Mutex<owner::WrongCodes>,
}

impl Approvals {
    fn open(services: &Services) -> Approvals {
        let mut rules = services.config().approvals.in_force();
        let shipped = if services.config().approvals.defaults { config::default_rules().len() } else { 0 };
        for (i, rule) in rules.iter_mut().enumerate() {
            if rule.name.trim().is_empty() {
                rule.name = format!("approvals.rule[{}]", i - shipped);
            }
        }
        Approvals {
            db: services.get::<Db>().clone(),
            cluster: services.need(),
            clock: services.get::<Clock>().clone(),
            turns: services.need(),
            agents: services.need(),
            sessions: services.need(),
            runtime: services.get::<crate::runtime::Runtime>().clone(),
            channels: services.need(),
            notify: services.config().notify.clone(),
            rules,
            scan: SecretScan::from_env(services.config()),
            resumer: tokio::sync::Notify::new(),
            wrong_codes: Mutex::default(),
        }
    }

    /// Whether a call of `tool` in `ctx` may be held or refused by [`Approvals::clear`]: it
    /// is made in a turn, and sends its arguments out or is covered by a rule. The cheap test
    /// every call pays.
    pub(crate) fn may_hold(&self, ctx: &CallContext, tool: &str) -> bool {
        ctx.turn.is_some() && (SecretScan::is_sink(tool) || self.covered(ctx, tool))
    }

    /// Whether a rule (the daemon's or the agent type's) covers `tool` in `ctx`'s turn: such a
    /// call may wait for a person, or park the turn.
    pub(crate) fn may_park(&self, ctx: &CallContext, tool: &str) -> bool {
        ctx.turn.is_some() && self.covered(ctx, tool)
    }

    fn covered(&self, ctx: &CallContext, tool: &str) -> bool {
        self.rules.iter().chain(&ctx.agent.manifest.approvals).any(|r| r.covers_tool(tool))
    }

    /// The pipeline's step between validation and running: whether a call a model chose may
    /// run. Refuses a call that would send a secret out; waits for a person when a rule says
    /// so. Calls outside a turn pass.
    pub(crate) async fn clear(&self, ctx: &CallContext, tool: &str, args: &Value) -> Result<()> {
        if ctx.turn.is_none() {
            return Ok(());
        }
        if SecretScan::is_sink(tool)
            && let Some(found) = self.scan.find(args)
        {
            return Err(Error::forbidden(format!(
                "refused by the secret egress check: the arguments of `{tool}` hold {}; nothing was sent. \
                 Secrets never leave the daemon through an agent: leave it out",
                found.0
            )));
        }
        if let Some(approval) = ctx.approved {
            return self.resumed_call(approval, ctx, tool, args).await;
        }
        let tainted = ctx.provenance.as_ref().is_some_and(Provenance::is_tainted);
        let target = target::of(tool, args, ctx.channel.as_ref());
        let mut held = None;
        // The daemon's rules, then the agent type's: a type adds holds, never lifts one.
        for rule in self.rules.iter().chain(&ctx.agent.manifest.approvals).filter(|r| r.covers(tool, args)) {
            let holds = match (rule.when, &target) {
                (When::Always, _) => true,
                (When::Tainted, _) => tainted,
                (When::NewTarget, Some(target)) => {
                    tainted && !store::knows_target(&self.db, ctx.agent.id, target).await?
                }
                (When::NewTarget, None) => false,
            };
            if holds {
                held = Some(rule);
                break;
            }
        }
        let Some(rule) = held else {
            return self.remember_target(ctx, tool, target).await;
        };
        let now = crate::db::timestamp(self.clock.now());
        // Let through for a while: not a person's look at this target, so it stays new.
        if store::standing(&self.db, ctx.agent.id, tool, &rule.name, &now).await?.is_some() {
            return Ok(());
        }
        match &ctx.parking {
            Some(parking) => self.park(ctx, tool, args, rule, parking).await,
            None => {
                self.wait_for_person(ctx, tool, args, rule).await?;
                self.remember_target(ctx, tool, target).await
            }
        }
    }

    /// Notes where a call let through goes, when a `new_target` rule covers its tool: a target
    /// the agent has sent to is not new again.
    async fn remember_target(&self, ctx: &CallContext, tool: &str, target: Option<String>) -> Result<()> {
        let Some(target) = target else { return Ok(()) };
        if !self
            .rules
            .iter()
            .chain(&ctx.agent.manifest.approvals)
            .any(|r| r.when == When::NewTarget && r.covers_tool(tool))
        {
            return Ok(());
        }
        store::know_target(&self.db, ctx.agent.id, &target, &crate::db::timestamp(self.clock.now())).await
    }

    /// Lets a resumed call through: the one its approval names, exactly as approved.
    async fn resumed_call(&self, approval: Uuid, ctx: &CallContext, tool: &str, args: &Value) -> Result<()> {
        let approved = store::get(&self.db, &approval.to_string()).await?;
        match approved {
            Some(a)
                if a.status == Status::Approved
                    && a.agent_id == ctx.agent.id
                    && a.tool == tool
                    && a.arguments == *args =>
            {
                self.remember_target(ctx, tool, target::of(tool, args, ctx.channel.as_ref())).await
            }
            _ => Err(Error::forbidden(format!("approval {approval} does not approve this call of `{tool}`"))),
        }
    }

    /// A new pending approval of this call under `rule`.
    fn request(&self, ctx: &CallContext, tool: &str, args: &Value, rule: &Rule) -> Approval {
        let labels = ctx.provenance.as_ref().map(Provenance::labels).unwrap_or_default();
        let reason = match rule.when {
            When::Always => format!("`{tool}` always needs approval under this rule"),
            When::Tainted => format!("the turn has read {}", read(&labels)),
            When::NewTarget => format!(
                "the turn has read {}, and `{tool}` goes to {}, where agent `{}` has not sent before",
                read(&labels),
                target::of(tool, args, ctx.channel.as_ref()).unwrap_or_default(),
                ctx.agent.name
            ),
        };
        let now = self.clock.now();
        Approval {
            id: Uuid::now_v7(),
            agent_id: ctx.agent.id,
            agent: ctx.agent.name.clone(),
            session_id: ctx.session,
            turn_id: ctx.turn,
            tool: tool.to_string(),
            arguments: args.clone(),
            provenance: labels,
            rule: rule.name.clone(),
            reason,
            requested_at: crate::db::timestamp(now),
            expires_at: crate::db::timestamp(now + chrono::Duration::seconds(rule.timeout_secs as i64)),
            status: Status::Pending,
            decided_by: None,
            decided_at: None,
            note: None,
            allow_until: None,
            parked: ctx.parking.is_some(),
            resumed_at: None,
        }
    }

    /// Tells the turn's chat that its call waits for a person.
    fn announce(&self, ctx: &CallContext, approval: &Approval) {
        if let (Some(turn_id), Some(session_id)) = (ctx.turn, ctx.session) {
            self.turns.emit(AgentEvent {
                agent_id: ctx.agent.id,
                turn_id,
                session_id,
                kind: EventKind::Approval {
                    approval_id: approval.id,
                    tool: approval.tool.clone(),
                    rule: approval.rule.clone(),
                    reason: approval.reason.clone(),
                },
            });
        }
    }

    /// Parks a headless turn's call: the approval is stored with how to resume the session,
    /// and the model is told its turn ends here.
    async fn park(&self, ctx: &CallContext, tool: &str, args: &Value, rule: &Rule, parking: &Parking) -> Result<()> {
        let approval = self.request(ctx, tool, args, rule);
        let resume = serde_json::to_string(&Resume::of(ctx)).map_err(|e| Error::internal(e.to_string()))?;
        // One parked call per turn, taken before anything is stored: a second, run beside the
        // first, is not run.
        if let Err(first) = parking.park(Parked { approval: approval.id, tool: tool.to_string() }) {
            return Err(Error::unavailable(format!(
                "not run: `{}` before it waits for a person's approval (approval {}), and the turn is parked there",
                first.tool, first.approval
            )));
        }
        if let Err(e) = store::insert(&self.db, &approval, self.cluster.id(), Some(&resume)).await {
            parking.clear();
            return Err(e);
        }
        self.announce(ctx, &approval);
        self.ask_owner(&approval).await;
        // Its expiry is the resuming loop's to keep.
        self.resumer.notify_one();
        Err(Error::unavailable(format!(
            "`{tool}` needs a person's approval (approval {}, rule {}) and nobody is in this turn to give it, \
             so the turn is parked and ends here. When someone decides, or nobody has in {} s, a message tells \
             you how it went, with the call's result if it ran. Do not make the call again meanwhile",
            approval.id, rule.name, rule.timeout_secs
        )))
    }

    async fn wait_for_person(&self, ctx: &CallContext, tool: &str, args: &Value, rule: &Rule) -> Result<()> {
        let timeout = Duration::from_secs(rule.timeout_secs);
        let approval = self.request(ctx, tool, args, rule);
        let id = approval.id.to_string();
        // Waiting starts before the row exists, so no decision's wake-up is missed.
        let waiting = self.cluster.wait_for(&id);
        store::insert(&self.db, &approval, self.cluster.id(), None).await?;
        self.announce(ctx, &approval);
        self.ask_owner(&approval).await;
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let shared = self.db.is_shared();
        let ended_by = loop {
            tokio::select! {
                () = waiting.woken.notified() => {}
                () = tokio::time::sleep(LOOK_AGAIN), if shared => {}
                () = &mut deadline => break "timeout",
                () = ctx.cancel.cancelled() => break "turn stopped",
            }
            if let Some(decided) = store::get(&self.db, &id).await?.filter(|a| a.status != Status::Pending) {
                return verdict(&decided);
            }
        };
        // Nobody decided: the call is denied, unless a decision landed as the wait ended.
        let at = crate::db::timestamp(self.clock.now());
        if !store::decide(&self.db, &id, Status::Expired, ended_by, &at, None, None).await?
            && let Some(decided) = store::get(&self.db, &id).await?
            && ended_by == "timeout"
        {
            return verdict(&decided);
        }
        Err(match ended_by {
            "timeout" => Error::forbidden(format!(
                "nobody approved `{tool}` within {} s (rule: {}); the call was not made. Ask the operator, or do without it",
                rule.timeout_secs, rule.name
            )),
            _ => Error::failed("the turn was stopped while the call waited for approval"),
        })
    }

    /// Approvals newest first: those in `status` when given, `agent`'s when given, at most
    /// `limit` (1 to [`MAX_LISTED`]).
    pub async fn list(&self, status: Option<Status>, agent: Option<Uuid>, limit: u32) -> Result<Vec<Approval>> {
        if !(1..=MAX_LISTED).contains(&limit) {
            return Err(Error::invalid(format!("limit is 1 to {MAX_LISTED}")).with_field("limit"));
        }
        store::list(&self.db, status, agent.map(|a| a.to_string()).as_deref(), i64::from(limit)).await
    }

    /// How many calls wait for a decision now.
    pub async fn waiting(&self) -> Result<u64> {
        store::pending_count(&self.db).await
    }

    pub async fn get(&self, id: &str) -> Result<Approval> {
        store::get(&self.db, id).await?.ok_or_else(|| Error::not_found(format!("no approval {id}")))
    }

    /// Decides a pending approval as `by`: an operator or the CLI, never a token, a tool or an
    /// agent (like permanent deletion), and only a decider the rule names.
    pub async fn decide(&self, id: &str, decision: &Decision, by: &Caller) -> Result<Approval> {
        let decider = match by {
            Caller::Operator(_) | Caller::Cli => by.audit_label(),
            _ => {
                return Err(Error::forbidden(
                    "approvals are decided by a person, never a token or an agent: `kennel approvals` on the daemon's machine",
                ));
            }
        };
        self.decide_as(id, decision, &decider).await
    }

    /// Decides a pending approval as `decider` (`operator:NAME`, `cli`, `owner:channel:NAME`:
    /// who the front made sure it is), if its rule lets them.
    async fn decide_as(&self, id: &str, decision: &Decision, decider: &str) -> Result<Approval> {
        let note = decision.note.as_deref().map(str::trim).filter(|n| !n.is_empty());
        if note.is_some_and(|n| crate::text::longer_than(n, MAX_NOTE)) {
            return Err(Error::invalid(format!("a note is at most {MAX_NOTE} characters")).with_field("note"));
        }
        if let Some(minutes) = decision.for_minutes
            && !(1..=MAX_FOR_MINUTES).contains(&minutes)
        {
            return Err(Error::invalid(format!("for_minutes is 1 to {MAX_FOR_MINUTES}")).with_field("for_minutes"));
        }
        let approval = self.get(id).await?;
        let now = self.clock.now();
        // Its call was denied at its time, or its turn is gone: a late "yes" would run nothing
        // (and, for N minutes, would let calls through that nobody looked at).
        if approval.status == Status::Pending && approval.expires_at <= crate::db::timestamp(now) {
            return Err(Error::conflict(format!(
                "approval {id} expired at {}: its call was not made",
                approval.expires_at
            )));
        }
        if approval.status != Status::Pending {
            return Err(Error::conflict(format!(
                "approval {id} is {} already{}",
                approval.status.as_str(),
                approval.decided_by.as_deref().map(|b| format!(" (by {b})")).unwrap_or_default()
            )));
        }
        if let Some(rule) = self.rule_of(&approval)
            && !rule.may_decide(decider)
        {
            return Err(Error::forbidden(format!(
                "rule `{}` is decided by {}, not {decider}",
                rule.name,
                rule.deciders.join(", ")
            )));
        }
        let (status, allow_until) = match (decision.approve, decision.for_minutes) {
            (false, _) => (Status::Denied, None),
            (true, None) => (Status::Approved, None),
            (true, Some(minutes)) => {
                (Status::Approved, Some(crate::db::timestamp(now + chrono::Duration::minutes(i64::from(minutes)))))
            }
        };
        let at = crate::db::timestamp(now);
        if !store::decide(&self.db, id, status, decider, &at, note, allow_until.as_deref()).await? {
            return Err(Error::conflict(format!("approval {id} was decided or expired just now")));
        }
        self.cluster.wake(id).await?;
        let decided = self.get(id).await?;
        if decided.parked {
            self.resumer.notify_one();
        }
        Ok(decided)
    }

    /// The rule an approval was asked under: the daemon's, or its agent type's.
    fn rule_of(&self, approval: &Approval) -> Option<Rule> {
        let of_type =
            self.agents.get_by_id(approval.agent_id).map(|a| a.manifest.approvals.clone()).unwrap_or_default();
        self.rules.iter().chain(&of_type).find(|r| r.name == approval.rule).cloned()
    }

    /// The labels stored for `session`.
    pub async fn session_labels(&self, session: Uuid) -> Result<Vec<Label>> {
        store::session_labels(&self.db, session).await
    }

    /// Stores `session`'s labels (all of them).
    pub async fn save_session_labels(&self, session: Uuid, labels: &[Label]) -> Result<()> {
        store::save_session_labels(&self.db, session, labels).await
    }
}

/// The labels a turn has read, in words.
fn read(labels: &[Label]) -> String {
    labels.iter().map(Label::to_string).collect::<Vec<_>>().join(", ")
}

/// What a decided approval means for its call.
fn verdict(decided: &Approval) -> Result<()> {
    let by = decided.decided_by.as_deref().unwrap_or("a person");
    let note = decided.note.as_deref().map(|n| format!(": {n}")).unwrap_or_default();
    match decided.status {
        Status::Approved => Ok(()),
        Status::Denied => Err(Error::forbidden(format!(
            "{by} denied this call of `{}`{note}; it was not made. Do not try it again another way",
            decided.tool
        ))),
        Status::Expired | Status::Pending => {
            Err(Error::forbidden(format!("nobody approved this call of `{}`; it was not made", decided.tool)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_parks_one_call_and_a_failed_store_frees_the_place() {
        let parking = Parking::default();
        let first = Parked { approval: Uuid::now_v7(), tool: "process_start".into() };
        assert!(parking.park(first.clone()).is_ok());
        let second = Parked { approval: Uuid::now_v7(), tool: "docker_exec".into() };
        assert_eq!(parking.park(second.clone()).map_err(|p| p.approval), Err(first.approval), "the first stays");
        parking.clear();
        assert!(parking.parked().is_none());
        assert!(parking.park(second).is_ok());
    }
}
