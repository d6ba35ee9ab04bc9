//! Async `agent_send`: the other agent's turn runs detached and its reply is delivered into
//! the sender's session. Each delivery is stored until its reply (or failure) is delivered,
//! and the reply is stored the moment the turn ends, so a restart finds exactly what was cut
//! off: a reply not yet delivered is delivered (once), a turn cut off is retried once, and
//! one cut off again is delivered as "interrupted" — the sender is never left in silence.
//!
//! # Design notes
//!
//! ## After a restart
//!
//! - **Async `agent_send`:** each delivery is a row of `agent_deliveries` from the moment it is
//!   sent until its reply (or failure) is in the sender's session; the reply is written to the row
//!   the moment the receiver's turn ends, before it waits for the sender's session. After a
//!   restart, per receiver session and in order: a reply already written is delivered (unless the
//!   sender's session holds it already: the last run delivered it and stopped before forgetting
//!   it); a turn cut off is retried once (`retry`: the receiver answers the message the cut-off
//!   turn left unanswered, not a copy); one cut off again, or whose receiver no longer runs, is
//!   delivered as `[agent_send task … was interrupted …]`. The sender is never left in silence.
//!   The reaper makes the dead daemon's deliveries its own (`daemon_id`) before resuming them.

use std::collections::BTreeMap;
use std::sync::Arc;

use uuid::Uuid;

use super::{Agents, store};
use crate::db::Db;
use crate::error::Result;
use crate::family::Services;
use crate::runtime::{Runtime, TurnRequest, TurnResult};
use crate::session::{Origin, Sessions};
use crate::tool::Caller;
use crate::turn::Turns;

/// An async `agent_send` in flight.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    /// The task id the sender was given.
    pub id: Uuid,
    pub from_agent: Uuid,
    /// The sender's session, where the reply goes.
    pub reply_to: Uuid,
    pub to_agent: Uuid,
    /// The receiver's session for this sender.
    pub session: Uuid,
    pub message: String,
    pub depth: u32,
    pub chain: Vec<Uuid>,
    /// Turns started for it (1 once sent; 2 after the retry a restart makes).
    pub attempts: u32,
    /// What the sender is told, once the receiver's turn has ended.
    pub reply: Option<String>,
    /// The untrusted sources the sender's session had read: the receiver's turn starts with them.
    pub taint: Vec<crate::approval::Label>,
}

/// The `agent_send` deliveries of this daemon: what sends one, runs the receiver's turn and
/// puts its reply into the sender's session. Cheap to clone (a detached delivery holds one).
#[derive(Clone)]
pub struct Deliveries {
    db: Db,
    /// This daemon's id in the cluster, written on each delivery it runs.
    daemon: String,
    agents: Arc<Agents>,
    sessions: Arc<Sessions>,
    turns: Arc<Turns>,
    runtime: Runtime,
}

impl Deliveries {
    pub(crate) fn open(services: &Services) -> Deliveries {
        Deliveries {
            db: services.get::<Db>().clone(),
            daemon: services.get::<crate::cluster::Cluster>().id().to_string(),
            agents: services.need(),
            sessions: services.need(),
            turns: services.need(),
            runtime: services.get::<Runtime>().clone(),
        }
    }

    /// Stores the delivery, then runs the receiver's turn and delivers its reply, detached.
    pub(crate) async fn send(&self, delivery: Delivery) -> Result<()> {
        store::insert_delivery(&self.db, &delivery, &self.daemon).await?;
        let this = self.clone();
        tokio::spawn(async move { this.run(delivery, false).await });
        Ok(())
    }

    /// After `dead` stopped or died (`crate::cluster`): finishes every delivery it left, here,
    /// in order within each receiver's session (two cut off in one session must not answer each
    /// other's message); how many.
    pub(crate) async fn take_over(&self, dead: &str) -> Result<u64> {
        let pending = store::take_deliveries(&self.db, dead, &self.daemon).await?;
        let count = pending.len() as u64;
        let mut by_session: BTreeMap<Uuid, Vec<Delivery>> = BTreeMap::new();
        for delivery in pending {
            by_session.entry(delivery.session).or_default().push(delivery);
        }
        for (_, deliveries) in by_session {
            let this = self.clone();
            tokio::spawn(async move {
                for delivery in deliveries {
                    this.resume_one(delivery).await;
                }
            });
        }
        Ok(count)
    }

    async fn resume_one(&self, mut delivery: Delivery) {
        if let Some(reply) = delivery.reply.clone() {
            self.finish(&delivery, &reply, true).await;
            return;
        }
        let receiver = self.agents.get(&delivery.to_agent.to_string()).ok().filter(|a| a.is_running());
        let name = receiver.as_ref().map_or_else(|| delivery.to_agent.to_string(), |a| a.name.clone());
        if receiver.is_none() || delivery.attempts >= 2 {
            let why = if receiver.is_none() {
                format!("agent `{name}` is no longer running")
            } else {
                "its retry after the restart was cut off too".to_string()
            };
            let text = format!(
                "[agent_send task {} to agent `{name}` was interrupted: the daemon stopped before the reply came, and {why}. Send it again if it still matters.]",
                delivery.id
            );
            self.finish(&delivery, &text, true).await;
            return;
        }
        delivery.attempts += 1;
        if let Err(e) = store::set_delivery_attempts(&self.db, delivery.id, delivery.attempts).await {
            tracing::warn!(error = %e.message, task = %delivery.id, "counting an agent_send retry failed; not retrying it now");
            return;
        }
        tracing::info!(task = %delivery.id, to = %name, "retrying an agent_send the restart interrupted");
        self.run(delivery, true).await;
    }

    async fn run(&self, delivery: Delivery, retry: bool) {
        let (to, outcome) = match self.agents.get(&delivery.to_agent.to_string()) {
            Ok(to) => {
                let req = TurnRequest {
                    session: Some(delivery.session),
                    depth: delivery.depth,
                    chain: delivery.chain.clone(),
                    // A retry answers the message the cut-off turn left unanswered, not a copy.
                    retry,
                    taint: delivery.taint.clone(),
                    ..TurnRequest::headless(delivery.message.clone(), Caller::Agent)
                };
                let outcome = self.runtime.run_turn(to.clone(), req).await;
                (to.name.clone(), outcome)
            }
            Err(e) => (delivery.to_agent.to_string(), Err(e)),
        };
        let text = delivery_text(&to, delivery.id, &outcome);
        // Kept before delivering: delivering waits for the sender's turn to end, and a restart
        // meanwhile must deliver this reply, not run the receiver's turn again.
        if let Err(e) = store::set_delivery_reply(&self.db, delivery.id, &text).await {
            tracing::warn!(error = %e.message, task = %delivery.id, "keeping an agent_send reply failed");
        }
        self.finish(&delivery, &text, false).await;
    }

    /// Puts `text` into the sender's session (unless a restart finds it there already: the last
    /// run delivered it and stopped before forgetting the delivery) and forgets the delivery.
    async fn finish(&self, delivery: &Delivery, text: &str, resumed: bool) {
        let already = resumed
            && self.sessions.messages(delivery.reply_to).await.is_ok_and(|messages| {
                messages.iter().any(|m| matches!(&m.message, crate::llm::Message::User { content } if content == text))
            });
        if !already && let Err(e) = self.turns.deliver(&self.sessions, delivery.reply_to, text).await {
            tracing::warn!(error = %e.message, task = %delivery.id, "an agent_send reply could not be delivered");
            return;
        }
        if let Err(e) = store::delete_delivery(&self.db, delivery.id).await {
            tracing::warn!(error = %e.message, task = %delivery.id, "a delivered agent_send stays stored");
        }
    }

    /// The receiving agent's session for messages from the agent `from` (one conversation per
    /// sender, by id).
    pub(crate) async fn session_for(&self, to: Uuid, from: Uuid) -> Result<Uuid> {
        Ok(self.sessions.labelled(to, &Origin::Agent(from.to_string())).await?.id)
    }
}

fn delivery_text(to: &str, task_id: Uuid, outcome: &Result<TurnResult>) -> String {
    match outcome {
        Ok(turn) => format!("[Reply from agent `{to}` to agent_send task {task_id}]\n{}", turn.reply),
        Err(e) => format!("[agent_send task {task_id} to agent `{to}` failed] {}", e.model_text()),
    }
}
