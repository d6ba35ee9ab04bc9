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
#[derive(Default)]
pub struct Turns {
    pub(super) running: Mutex<HashMap<AgentId, Vec<(Uuid, CancellationToken)>>>,
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
        if let Some(turns) = self.running.lock().expect("turns lock").get(&agent) {
            for (_, token) in turns {
                token.cancel();
            }
        }
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
    pub(crate) fn relay(&self) -> Option<tokio::sync::mpsc::Receiver<AgentEvent>> {
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

    pub(super) fn register(&self, agent: AgentId, turn: Uuid, outer: Option<&CancellationToken>) -> CancellationToken {
        // A caller's own token (an A2A task being cancelled) stops the turn too.
        let token = outer.map_or_else(CancellationToken::new, CancellationToken::child_token);
        self.running.lock().expect("turns lock").entry(agent).or_default().push((turn, token.clone()));
        token
    }

    pub(super) fn unregister(&self, agent: AgentId, turn: Uuid) {
        let mut running = self.running.lock().expect("turns lock");
        if let Some(turns) = running.get_mut(&agent) {
            turns.retain(|(id, _)| *id != turn);
            if turns.is_empty() {
                running.remove(&agent);
            }
        }
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
