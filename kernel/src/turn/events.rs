//! Live progress of turns, for `GET /api/agents/{id}/events` and the dashboard's chat.

use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast;
use utoipa::ToSchema;
use uuid::Uuid;

use super::TurnEnd;

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AgentEvent {
    pub agent_id: Uuid,
    pub turn_id: Uuid,
    pub session_id: Uuid,
    #[serde(flatten)]
    pub kind: EventKind,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    TurnStarted {
        message: String,
    },
    ModelCall {
        iteration: u32,
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
            EventKind::ToolCallStarted { .. } => "tool_call_started",
            EventKind::ToolCallFinished { .. } => "tool_call_finished",
            EventKind::Reply { .. } => "reply",
            EventKind::TurnEnded { .. } => "turn_ended",
            EventKind::TurnFailed { .. } => "turn_failed",
        }
    }
}

/// A broadcast of every agent's events. Slow subscribers miss events rather than slow turns.
pub(super) struct Bus(broadcast::Sender<AgentEvent>);

impl Default for Bus {
    fn default() -> Self {
        Bus(broadcast::channel(1024).0)
    }
}

impl Bus {
    pub fn emit(&self, event: AgentEvent) {
        // No subscriber is not an error.
        let _ = self.0.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<AgentEvent> {
        self.0.subscribe()
    }
}
