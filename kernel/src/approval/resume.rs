//! Parked calls' sessions going on. A turn with no person in it (a schedule, the API, a
//! trigger, another agent) does not wait in memory for a decision: its call is parked (a row
//! of `approvals` with how to resume) and the turn ends. This loop, in every daemon, expires
//! parked calls nobody decided in time, and resumes the decided ones of the agents this daemon
//! holds: the approved call runs once, then a turn in the same session, as the same caller,
//! tells the model how it went.
//!
//! Durable at each step, and never running a call twice:
//! - a decision is a row: a restart, a crash or a failover between parking and deciding
//!   loses nothing;
//! - a daemon claims a resume (`resumed_by`) before it starts; a dead daemon's claims are let
//!   go by whoever takes its work over, and the resume starts again there;
//! - before the approved call runs, what the turn is to be told becomes "the daemon stopped
//!   while it ran; check before making it again", and the real result replaces it after. A
//!   resume started again finds it and does not run the call again;
//! - the resumed turn answers its message as a retry, so one cut off is answered once.

use std::sync::{Arc, Weak};
use std::time::Duration;

use uuid::Uuid;

use super::store::{self, ToResume};
use super::{Approval, Approvals, Provenance, Resume, Status};
use crate::family::Services;
use crate::runtime::TurnRequest;
use crate::tool::CallContext;

/// How long the loop sleeps at most on a database shared with other daemons: a decision taken
/// on another one is seen within this.
const LOOK_AGAIN: Duration = Duration::from_secs(2);
/// How long it sleeps at most on a database of its own, where every decision wakes it.
const IDLE: Duration = Duration::from_secs(60);
/// Sessions resumed per pass.
const BATCH: i64 = 20;

/// Starts the loop that expires and resumes parked calls. It ends with the kernel.
pub(crate) fn start(services: &Services) {
    let weak = Arc::downgrade(&services.need::<Approvals>());
    tokio::spawn(resume_parked(weak));
}

async fn resume_parked(weak: Weak<Approvals>) {
    loop {
        let Some(approvals) = weak.upgrade() else { return };
        if approvals.db.is_closed() {
            return;
        }
        let wait = match approvals.pass().await {
            Ok(wait) => wait,
            Err(e) => {
                tracing::warn!(error = %e.message, "resuming parked approvals failed");
                LOOK_AGAIN
            }
        };
        let woken = approvals.clone();
        drop(approvals);
        tokio::select! {
            () = woken.resumer.notified() => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}

impl Approvals {
    /// Expires what is due, starts the resumes this daemon can run; how long until the next
    /// expiry (at most [`LOOK_AGAIN`] on a shared database, [`IDLE`] on its own).
    async fn pass(self: &Arc<Self>) -> crate::error::Result<Duration> {
        let now = self.clock.now();
        store::expire_parked(&self.db, &crate::db::timestamp(now)).await?;
        for parked in store::unresumed(&self.db, BATCH).await? {
            // The daemon holding the agent runs its call: its processes and tabs are there.
            if self.cluster.owner_elsewhere(parked.approval.agent_id).await?.is_some() {
                continue;
            }
            if let Some(outcome) = store::claim(&self.db, parked.approval.id, self.cluster.id()).await? {
                tokio::spawn(self.clone().resume(parked, outcome));
            }
        }
        let next = store::next_parked_expiry(&self.db).await?;
        let until = next
            .and_then(|at| chrono::DateTime::parse_from_rfc3339(&at).ok())
            .map(|at| (at.with_timezone(&chrono::Utc) - now).to_std().unwrap_or(Duration::ZERO));
        let most = if self.db.is_shared() { LOOK_AGAIN } else { IDLE };
        Ok(until.map_or(most, |u| u.min(most)))
    }

    /// Runs the approved call (unless a resume before this one did), then the turn that tells
    /// the model how it went.
    async fn resume(self: Arc<Self>, parked: ToResume, outcome: Option<String>) {
        let ToResume { approval, resume } = parked;
        let id = approval.id;
        let resume = match serde_json::from_str::<Resume>(&resume) {
            Ok(resume) => resume,
            Err(e) => {
                tracing::warn!(approval = %id, error = %e, "a parked approval's resume is unreadable; its session does not go on");
                self.resumed(id).await;
                return;
            }
        };
        let agent = self.agents.get_by_id(approval.agent_id).filter(|a| a.is_running());
        let told = match outcome {
            Some(told) => told,
            None => match self.outcome(&approval, &resume, agent.clone()).await {
                Ok(told) => told,
                Err(e) => {
                    tracing::warn!(approval = %id, error = %e.message, "a parked call could not be resumed; trying again");
                    self.unclaim(id).await;
                    return;
                }
            },
        };
        let Some(session) = approval.session_id else {
            self.resumed(id).await;
            return;
        };
        // What happened goes into the session first, once, and the session counts as resumed
        // from then: a turn cut off after it is an interrupted turn like any other, never one
        // started again from its first message.
        if let Err(e) = self.tell(session, &told).await {
            tracing::warn!(approval = %id, error = %e.message, "a parked call's outcome was not put in its session; trying again");
            self.unclaim(id).await;
            return;
        }
        self.resumed(id).await;
        // Nobody to go on (the agent was stopped): the session keeps it for its next turn.
        let Some(agent) = agent else { return };
        let req = TurnRequest {
            session: Some(session),
            channel: resume.channel,
            depth: resume.depth,
            chain: resume.chain,
            // The message is the session's last, unanswered: answered, not added again.
            retry: true,
            ..TurnRequest::headless(told, resume.caller)
        };
        if let Err(e) = self.runtime.run_turn(agent, req).await {
            tracing::warn!(approval = %id, error = %e.message, "the turn resuming a parked call failed; its outcome is in the session");
        }
    }

    /// Puts `told` in `session`, unless it is its last message already (a resume started again).
    async fn tell(&self, session: Uuid, told: &str) -> crate::error::Result<()> {
        let messages = self.sessions.messages(session).await?;
        let there = matches!(messages.last().map(|m| &m.message), Some(crate::llm::Message::User { content }) if content == told);
        if there { Ok(()) } else { self.turns.deliver(&self.sessions, session, told).await }
    }

    async fn unclaim(&self, id: Uuid) {
        if let Err(e) = store::unclaim(&self.db, id, self.cluster.id()).await {
            tracing::warn!(approval = %id, error = %e.message, "a resume this daemon could not start stays claimed");
        }
    }

    async fn resumed(&self, id: Uuid) {
        if let Err(e) = store::set_resumed(&self.db, id, &crate::db::timestamp(self.clock.now())).await {
            tracing::warn!(approval = %id, error = %e.message, "a resumed approval was not marked resumed");
        }
    }

    /// What the resumed turn is told; an approved call runs here first, once.
    async fn outcome(
        &self,
        approval: &Approval,
        resume: &Resume,
        agent: Option<Arc<crate::agent::Agent>>,
    ) -> crate::error::Result<String> {
        let (id, tool) = (approval.id, &approval.tool);
        let by = approval.decided_by.as_deref().unwrap_or("a person");
        let note = approval.note.as_deref().map(|n| format!(" (\"{n}\")")).unwrap_or_default();
        let told = match (approval.status, agent) {
            (Status::Approved, Some(agent)) => {
                // Written first: a daemon that dies during the call leaves this, and the call
                // is not made again by whoever resumes after it.
                let unknown = format!(
                    "[Kennel] {by} approved your parked call of `{tool}` (approval {id}){note}, and the daemon stopped \
                     while it ran: whether it finished is not known. Check before making it again."
                );
                store::set_outcome(&self.db, id, &unknown).await?;
                let result = self.run_approved(approval, resume, agent).await;
                format!(
                    "[Kennel] {by} approved your parked call of `{tool}` (approval {id}){note}. It ran; {result}\n\
                     Go on with the task from here."
                )
            }
            (Status::Approved, None) => format!(
                "[Kennel] {by} approved your parked call of `{tool}` (approval {id}), but the agent was stopped \
                 before it ran, so it was not made."
            ),
            (Status::Denied, _) => format!(
                "[Kennel] {by} denied your parked call of `{tool}` (approval {id}){note}; it was not made. \
                 Do not try it again another way: go on without it, or say what you need."
            ),
            (Status::Expired | Status::Pending, _) => format!(
                "[Kennel] Nobody approved your parked call of `{tool}` (approval {id}) by {}; it was not made. \
                 Go on without it, or ask the operator.",
                approval.expires_at
            ),
        };
        if let Err(e) = store::set_outcome(&self.db, id, &told).await {
            if approval.status != Status::Approved {
                return Err(e);
            }
            // The call may have run: go on with what it returned, which a resume started again
            // would not know.
            tracing::warn!(approval = %id, error = %e.message, "an approved call's outcome was not stored; going on with it");
        }
        Ok(told)
    }

    /// Runs the approved call through the pipeline, as the turn that parked it would have; its
    /// result in words.
    async fn run_approved(&self, approval: &Approval, resume: &Resume, agent: Arc<crate::agent::Agent>) -> String {
        let mut ctx = CallContext::new(agent.clone(), resume.caller.clone()).with_session(approval.session_id);
        ctx.turn = approval.turn_id;
        ctx.channel = resume.channel.clone();
        ctx.depth = resume.depth;
        ctx.chain = resume.chain.iter().copied().chain([agent.id]).collect::<Vec<_>>().into();
        ctx.approved = Some(approval.id);
        let labels = match approval.session_id {
            Some(session) => self.session_labels(session).await.unwrap_or_default(),
            None => Vec::new(),
        };
        let provenance = Provenance::of(labels);
        ctx.provenance = Some(provenance.clone());
        let result = self.runtime.call_tool(ctx, &approval.tool, approval.arguments.clone()).await;
        if let (Some(session), Some(labels)) = (approval.session_id, provenance.take_unsaved())
            && let Err(e) = self.save_session_labels(session, &labels).await
        {
            tracing::warn!(session = %session, error = %e.message, "storing a session's provenance failed");
        }
        match result {
            Ok(out) => format!("its result:\n{}", crate::tool::pipeline::result_text(&out.content)),
            Err(e) => format!("it failed: {}", e.model_text()),
        }
    }
}
