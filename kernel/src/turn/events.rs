//! Live progress of turns, for `GET /api/agents/{id}/events` and the dashboard's chat.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use tokio::sync::{broadcast, mpsc};
use utoipa::ToSchema;
use uuid::Uuid;

use super::TurnEnd;

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AgentEvent {
    pub agent_id: Uuid,
    pub turn_id: Uuid,
    pub session_id: Uuid,
    #[serde(flatten)]
    pub kind: EventKind,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    TurnStarted {
        message: String,
    },
    ModelCall {
        iteration: u32,
    },
    /// A piece of the reply's text as the provider streams it.
    TextDelta {
        iteration: u32,
        text: String,
    },
    /// The turn moved to the next provider and model of its type's fallbacks.
    Fallback {
        from: String,
        to: String,
        reason: String,
    },
    /// The model call waits for a place among the provider's `max_in_flight` calls.
    Queued {
        iteration: u32,
        provider: String,
    },
    /// The provider's stream broke and the call is being made again: the pieces of this
    /// iteration so far are void (the new attempt streams anew).
    ReplyReset {
        iteration: u32,
    },
    /// A piece of the `index`th tool call the model is writing; its id and name come first.
    ToolCallDelta {
        iteration: u32,
        index: usize,
        #[serde(skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        arguments: String,
    },
    /// The session was compacted to fit the model's context window: how many stored
    /// messages a summary now stands for, how many tool results are sent as stubs.
    Compacted {
        summarised: u64,
        stubbed: u64,
    },
    ToolCallStarted {
        call_id: String,
        name: String,
        #[schema(value_type = Object)]
        arguments: Value,
    },
    ToolCallFinished {
        call_id: String,
        name: String,
        outcome: String,
        summary: String,
        duration_us: u64,
    },
    /// `ask_user` waits for the person in the chat: the question, with the choices to offer.
    /// Answer it with `POST /api/questions/{question_id}/answer`.
    Question {
        question_id: Uuid,
        question: String,
        choices: Vec<String>,
    },
    Reply {
        text: String,
    },
    TurnEnded {
        ended: TurnEnd,
        reply: String,
    },
    TurnFailed {
        kind: String,
        message: String,
    },
}

impl EventKind {
    /// The SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::TurnStarted { .. } => "turn_started",
            EventKind::ModelCall { .. } => "model_call",
            EventKind::TextDelta { .. } => "text_delta",
            EventKind::ToolCallDelta { .. } => "tool_call_delta",
            EventKind::ReplyReset { .. } => "reply_reset",
            EventKind::Queued { .. } => "queued",
            EventKind::Fallback { .. } => "fallback",
            EventKind::Compacted { .. } => "compacted",
            EventKind::ToolCallStarted { .. } => "tool_call_started",
            EventKind::ToolCallFinished { .. } => "tool_call_finished",
            EventKind::Question { .. } => "question",
            EventKind::Reply { .. } => "reply",
            EventKind::TurnEnded { .. } => "turn_ended",
            EventKind::TurnFailed { .. } => "turn_failed",
        }
    }
}

/// A broadcast of every agent's events. Slow subscribers miss events rather than slow turns.
/// In a cluster, this daemon's own events are also handed to the relay (`crate::cluster`),
/// which tells the other daemons; theirs come back in through [`Bus::emit_relayed`].
pub(super) struct Bus {
    local: broadcast::Sender<AgentEvent>,
    relay: OnceLock<mpsc::Sender<AgentEvent>>,
}

/// Events waiting for the relay at most; past that they are dropped, as for a slow subscriber.
const RELAY_BACKLOG: usize = 4096;

impl Default for Bus {
    fn default() -> Self {
        Bus { local: broadcast::channel(1024).0, relay: OnceLock::new() }
    }
}

impl Bus {
    pub fn emit(&self, event: AgentEvent) {
        if let Some(relay) = self.relay.get() {
            let _ = relay.try_send(event.clone());
        }
        // No subscriber is not an error.
        let _ = self.local.send(event);
    }

    /// An event of a turn that runs on another daemon of the cluster.
    pub fn emit_relayed(&self, event: AgentEvent) {
        let _ = self.local.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<AgentEvent> {
        self.local.subscribe()
    }

    /// This daemon's own events from now on, for the cluster's relay (once).
    pub fn relay(&self) -> Option<mpsc::Receiver<AgentEvent>> {
        let (tx, rx) = mpsc::channel(RELAY_BACKLOG);
        self.relay.set(tx).ok().map(|()| rx)
    }
}
