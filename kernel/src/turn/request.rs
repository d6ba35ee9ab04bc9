//! What a turn is asked and what it answers: the types the families that start turns (tasks,
//! schedules, channels, A2A, workflows) and the fronts use, apart from the loop that runs
//! them, so starting a turn does not mean importing the kernel.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::llm::Usage;
use crate::tool::{Caller, ChannelContext};

/// What to send an agent.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    pub message: String,
    /// Continue this session; `None` opens a new one.
    pub session: Option<Uuid>,
    /// The label of the session this turn opens, if it opens one (`schedule 1a2b3c4d`).
    pub new_session_label: Option<String>,
    pub caller: Caller,
    /// No person is there to answer (API, schedule, trigger): tools that need one are left out.
    pub headless: bool,
    pub channel: Option<ChannelContext>,
    /// How deep in a chain of blocking agent calls this turn runs (0: started by a person,
    /// a schedule or the API). Tool calls of the turn carry it; see `[kernel] max_agent_call_depth`.
    pub depth: u32,
    /// The agents along that chain, outermost first (this turn's agent is added to it).
    pub chain: Vec<Uuid>,
    /// Cancels this turn when cancelled (besides stopping the agent).
    pub cancel: Option<CancellationToken>,
    /// Answer the session's last message again instead of adding `message` anew, when that
    /// last message is `message` and unanswered (a retry after a failed turn).
    pub retry: bool,
    /// The turn's id, when the caller follows its events by it (an A2A task); else a new one.
    pub turn_id: Option<Uuid>,
    /// Untrusted sources the message itself comes from (a stranger on a channel, a remote
    /// agent): the turn starts tainted with them.
    pub taint: Vec<crate::approval::Label>,
}

impl TurnRequest {
    /// What this turn offers tools beyond grants: a person, a channel conversation.
    pub fn scope(&self) -> crate::tool::TurnScope {
        crate::tool::TurnScope { person: !self.headless, conversation: self.channel.is_some() }
    }

    /// A turn with a person present when `caller` is one ([`Caller::is_person`]), headless
    /// otherwise.
    pub fn new(message: impl Into<String>, caller: Caller) -> TurnRequest {
        let headless = !caller.is_person();
        TurnRequest { headless, ..TurnRequest::headless(message, caller) }
    }

    pub fn headless(message: impl Into<String>, caller: Caller) -> TurnRequest {
        TurnRequest {
            message: message.into(),
            session: None,
            new_session_label: None,
            caller,
            headless: true,
            channel: None,
            depth: 0,
            chain: Vec::new(),
            cancel: None,
            retry: false,
            turn_id: None,
            taint: Vec::new(),
        }
    }
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnEnd {
    /// The model answered.
    Reply,
    /// The model was still calling tools when the iteration cap was reached.
    IterationCap,
    /// The agent was stopped during the turn.
    Cancelled,
    /// The model made the same tool call with the same arguments `[kernel]
    /// max_repeated_calls` times in a row: the turn was stopped before running it again.
    RepeatedCall,
    /// A call waits for a person's approval and no person is in the turn (a schedule, the API,
    /// a trigger, another agent): the turn ended there, and goes on in its session when the
    /// call is decided (`crate::approval`).
    Parked,
}

impl TurnEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnEnd::Reply => "reply",
            TurnEnd::IterationCap => "iteration_cap",
            TurnEnd::Cancelled => "cancelled",
            TurnEnd::RepeatedCall => "repeated_call",
            TurnEnd::Parked => "parked",
        }
    }
}

/// One tool call of a turn, for the caller and the dashboard.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TraceEntry {
    pub call_id: String,
    pub name: String,
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// `ok` or an error kind.
    pub outcome: String,
    /// The start of what the model was shown.
    pub summary: String,
    pub duration_us: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TurnResult {
    pub turn_id: Uuid,
    pub session_id: Uuid,
    pub reply: String,
    pub ended: TurnEnd,
    /// Model calls made.
    pub iterations: u32,
    pub trace: Vec<TraceEntry>,
    pub usage: Usage,
    /// Where the turn moved to a fallback provider or model, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fell_back: Vec<FellBack>,
    /// The reply stopped at its token limit (`[kernel] max_reply_tokens`, or a quarter of
    /// the model's window): it ends with a note saying so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// A move to the next provider and model of the agent type's fallbacks.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct FellBack {
    /// `provider / model` that kept failing.
    pub from: String,
    /// `provider / model` the turn went on with.
    pub to: String,
    /// The last failure.
    pub reason: String,
}
