//! Live progress of turns, for `GET /api/agents/{id}/events` and the dashboard's chat.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

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
    /// A call waits for a person's approval (`GET /api/approvals/{approval_id}`).
    Approval {
        approval_id: Uuid,
        tool: String,
        rule: String,
        reason: String,
    },
    /// The session's model has read something from these untrusted sources (all of them so
    /// far): calls that rules hold for tainted turns now wait for approval.
    Tainted {
        labels: Vec<crate::approval::Label>,
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
            EventKind::Approval { .. } => "approval",
            EventKind::Tainted { .. } => "tainted",
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
    relay: OnceLock<(mpsc::UnboundedSender<AgentEvent>, Arc<AtomicUsize>)>,
}

/// Pieces of a reply (text and tool-call deltas) waiting for the relay at most; past that new
/// pieces are dropped, as for a slow subscriber. Every other event waits its turn, in order:
/// a follower elsewhere may miss some of a streamed reply, never the reply itself, a question
/// or the turn's end (a long reply streamed faster than the database takes notifications
/// once crowded those out).
const RELAY_BACKLOG: usize = 4096;

impl Default for Bus {
    fn default() -> Self {
        Bus { local: broadcast::channel(1024).0, relay: OnceLock::new() }
    }
}

impl EventKind {
    /// A piece of a reply being written: droppable, since the whole reply follows.
    fn is_piece(&self) -> bool {
        matches!(self, EventKind::TextDelta { .. } | EventKind::ToolCallDelta { .. })
    }
}

impl Bus {
    pub fn emit(&self, event: AgentEvent) {
        if let Some((relay, pieces)) = self.relay.get() {
            let piece = event.kind.is_piece();
            if !piece || pieces.fetch_add(1, Ordering::Relaxed) < RELAY_BACKLOG {
                let _ = relay.send(event.clone());
            } else {
                pieces.fetch_sub(1, Ordering::Relaxed);
            }
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
    pub fn relay(&self) -> Option<RelayQueue> {
        let (tx, rx) = mpsc::unbounded_channel();
        let pieces = Arc::new(AtomicUsize::new(0));
        self.relay.set((tx, pieces.clone())).ok().map(|()| RelayQueue { rx, pieces })
    }
}

/// This daemon's events on their way to the relay, in the order they happened.
pub struct RelayQueue {
    rx: mpsc::UnboundedReceiver<AgentEvent>,
    /// Reply pieces in the queue, counted against [`RELAY_BACKLOG`].
    pieces: Arc<AtomicUsize>,
}

impl RelayQueue {
    pub async fn recv(&mut self) -> Option<AgentEvent> {
        let event = self.rx.recv().await?;
        if event.kind.is_piece() {
            self.pieces.fetch_sub(1, Ordering::Relaxed);
        }
        Some(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind) -> AgentEvent {
        AgentEvent { agent_id: Uuid::nil(), turn_id: Uuid::nil(), session_id: Uuid::nil(), kind }
    }

    #[tokio::test]
    async fn a_crowded_relay_drops_reply_pieces_never_the_reply_or_the_turns_end() {
        let bus = Bus::default();
        let mut queue = bus.relay().expect("the first relay");
        for i in 0..RELAY_BACKLOG + 900 {
            bus.emit(event(EventKind::TextDelta { iteration: 1, text: format!("{i} ") }));
        }
        bus.emit(event(EventKind::Reply { text: "whole".into() }));
        bus.emit(event(EventKind::TurnEnded { ended: TurnEnd::Reply, reply: "whole".into() }));
        let mut names = Vec::new();
        while let Ok(Some(e)) = tokio::time::timeout(std::time::Duration::from_millis(50), queue.recv()).await {
            names.push(e.kind.name());
        }
        assert_eq!(names.iter().filter(|n| **n == "text_delta").count(), RELAY_BACKLOG);
        assert_eq!(names[RELAY_BACKLOG..], ["reply", "turn_ended"], "in order, after the pieces kept");
        // Taken pieces make room again.
        bus.emit(event(EventKind::TextDelta { iteration: 2, text: "more".into() }));
        assert_eq!(queue.recv().await.map(|e| e.kind.name()), Some("text_delta"));
    }
}
