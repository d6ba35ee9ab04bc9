//! The turns running in this daemon: one at a time per session, cancelled with their agent,
//! their live events, and the context windows and token counts learned from providers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::context;
use super::{AgentEvent, events, store};
use crate::agent::AgentId;
use crate::error::Result;
use crate::llm::Message;
use crate::session::Sessions;

/// A turn running here: its id, its session, the token that cancels it, and who did.
pub(super) struct Running {
    turn: Uuid,
    session: Uuid,
    cancel: CancellationToken,
    /// Why it was cancelled, in words for the chat ("by operator:alice", "because the agent
    /// was stopped").
    cancelled: Option<String>,
}

#[derive(Default)]
pub struct Turns {
    pub(super) running: Mutex<HashMap<AgentId, Vec<Running>>>,
    pub(super) session_locks: Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<()>>>>,
    pub(super) events: events::Bus,
    /// Context windows learned from refusals.
    pub(super) windows: context::LearnedWindows,
    /// How each model counts tokens against our estimate, learned from its reports.
    pub(super) calibration: context::Calibration,
}

impl Turns {
    /// The turns' state, with the context windows earlier runs learned.
    pub(crate) async fn load(db: &crate::db::Db) -> Result<Turns> {
        Ok(Turns { windows: context::LearnedWindows::new(store::learned_windows(db).await?), ..Turns::default() })
    }

    /// Cancels every running turn of `agent`.
    pub fn cancel_agent(&self, agent: AgentId) {
        if let Some(turns) = self.running.lock().expect("turns lock").get_mut(&agent) {
            for running in turns {
                running.cancelled.get_or_insert_with(|| "because the agent was stopped".into());
                running.cancel.cancel();
            }
        }
    }

    /// Cancels the turns of `agent` running here in `session` (one, as turns of a session
    /// take turns; a delivery waiting behind it is not a turn), `by` someone (an audit label).
    /// How many it cancelled.
    pub(crate) fn cancel_in_session(&self, agent: AgentId, session: Uuid, by: &str) -> usize {
        let mut running = self.running.lock().expect("turns lock");
        let in_session = running.get_mut(&agent).into_iter().flatten().filter(|r| r.session == session);
        in_session.inspect(|r| r.cancel.cancel()).map(|r| r.cancelled.get_or_insert_with(|| format!("by {by}"))).count()
    }

    /// Whether a turn of `agent` runs here in `session` now.
    pub fn running_in_session(&self, agent: AgentId, session: Uuid) -> bool {
        let running = self.running.lock().expect("turns lock");
        running.get(&agent).is_some_and(|turns| turns.iter().any(|r| r.session == session))
    }

    /// Live events of every agent; filter by `agent_id`.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<AgentEvent> {
        self.events.subscribe()
    }

    /// Tells the followers of an agent's events something a tool did in a turn (a question).
    pub(crate) fn emit(&self, event: AgentEvent) {
        self.events.emit(event);
    }

    /// Tells the followers here of an event of a turn another daemon of the cluster runs.
    pub(crate) fn emit_relayed(&self, event: AgentEvent) {
        self.events.emit_relayed(event);
    }

    /// This daemon's own events from now on, for the cluster's relay (`None` after the first).
    pub(crate) fn relay(&self) -> Option<events::RelayQueue> {
        self.events.relay()
    }

    /// The agents with turns running here.
    pub(crate) fn agents_running(&self) -> Vec<AgentId> {
        self.running.lock().expect("turns lock").keys().copied().collect()
    }

    /// How many turns are running for `agent`.
    pub fn running(&self, agent: AgentId) -> usize {
        self.running.lock().expect("turns lock").get(&agent).map_or(0, Vec::len)
    }

    /// Puts a message into a session between turns (an `agent_send` reply): it waits for a
    /// turn running in that session to end, so it never lands between a tool call and its
    /// result. The session's next turn sees it.
    pub async fn deliver(&self, sessions: &Sessions, session: Uuid, text: &str) -> Result<()> {
        let _between_turns = self.hold_session(session).await;
        sessions.append(session, &[Message::User { content: text.to_string() }]).await
    }

    /// Waits until no other turn or delivery holds `session`, then holds it.
    pub(super) async fn hold_session(&self, session: Uuid) -> SessionHold<'_> {
        let lock = self.session_locks.lock().expect("session locks").entry(session).or_default().clone();
        let guard = lock.clone().lock_owned().await;
        SessionHold { turns: self, session, lock, guard: Some(guard) }
    }

    pub(super) fn register(
        &self,
        agent: AgentId,
        turn: Uuid,
        session: Uuid,
        outer: Option<&CancellationToken>,
    ) -> CancellationToken {
        // A caller's own token (an A2A task being cancelled) stops the turn too.
        let cancel = outer.map_or_else(CancellationToken::new, CancellationToken::child_token);
        let running = Running { turn, session, cancel: cancel.clone(), cancelled: None };
        self.running.lock().expect("turns lock").entry(agent).or_default().push(running);
        cancel
    }

    /// Forgets a turn that ended; who cancelled it, if someone here did.
    pub(super) fn unregister(&self, agent: AgentId, turn: Uuid) -> Option<String> {
        let mut running = self.running.lock().expect("turns lock");
        let turns = running.get_mut(&agent)?;
        let at = turns.iter().position(|r| r.turn == turn)?;
        let ended = turns.swap_remove(at);
        if turns.is_empty() {
            running.remove(&agent);
        }
        ended.cancelled
    }
}

/// A session held for one turn or delivery. Letting go forgets the session's lock when
/// nobody else waits for it, so the map holds only sessions in use, not every session ever
/// opened (a scheduled fire opens one each time).
pub(super) struct SessionHold<'a> {
    turns: &'a Turns,
    session: Uuid,
    lock: Arc<tokio::sync::Mutex<()>>,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl Drop for SessionHold<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        let mut locks = self.turns.session_locks.lock().expect("session locks");
        // One reference in the map, one here: nobody is waiting.
        if Arc::strong_count(&self.lock) == 2 {
            locks.remove(&self.session);
        }
    }
}
