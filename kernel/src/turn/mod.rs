//! The agent loop: a message goes in, the model is called with the tools of the agent's
//! mode, tool calls go through the pipeline, results go back, until the model answers or
//! the iteration cap ends the turn. Every message is stored in the session as it happens.
//!
//! # Design notes
//!
//! ## Layout
//!
//! The agent loop (`run`): resolve provider and model (errors before anything is stored), open or
//! continue a session, one turn at a time per session, the loop of model call (fitted to the
//! context window, streamed into turn events) → tool calls through the pipeline → results, the
//! iteration cap, cancellation. `context.rs`: context windows (`known_window` by family,
//! `LearnedWindows`) and compaction (`estimate`, `plan`, `build`, `transcript`: pure and fast).
//! `store.rs`: `turns` (open while running), `model_calls` (what each call sent and what the
//! provider counted), `model_windows`. `recovery.rs`: at start, turns left open are marked
//! interrupted in their sessions and stored `agent_send` deliveries resumed. `prompt.rs`: system
//! prompt (type's prompt + goal + stable mode's tools line) and repair of calls left without
//! results. `events.rs`: the broadcast of live turn events (text and tool-call deltas,
//! compactions) behind `GET /api/agents/{id}/events`. `depth.rs`: the one depth budget.
//! `images.rs`: the images of the last 3 image-bearing tool results, read from the workspace for
//! each model call (see `crate::browser`).
//!
//! ## The agent loop
//!
//! `POST /api/agents/{id}/messages` → `Kernel::send_message` → `turn::run`:
//!
//! 1. The agent must be running; its provider (the type's `provider`, or the only one configured)
//!    and model must exist — otherwise `Unavailable` with what to set, and nothing is stored.
//!    `send_message` runs the turn on a task of its own: a client that hangs up (a closed tab, a
//!    script's timeout) never cancels it; stopping the agent does.
//! 2. The session is the one named (it must be the agent's) or a new one. A per-session lock keeps
//!    two turns from interleaving in one history. The turn is recorded in `turns` from its start;
//!    one still open at the next start was cut off (`recovery`).
//! 3. The user message is stored, then each iteration: build the offer for the agent's tool mode
//!    (`tool/modes.rs`), the system prompt, fit the history to the model's window (`context`), call
//!    the provider (raced against the turn's cancel token; the reply's pieces become
//!    `text_delta`/`tool_call_delta` events as they arrive), store the assistant message; no tool
//!    calls → that is the reply. Otherwise run the calls through the pipeline (runs of
//!    non-`exclusive` calls concurrently, `exclusive` ones alone, results in the model's order),
//!    store the results exactly as the model sees them (errors as `Kind: message`, spills as
//!    placeholders), repeat. Each model call is a row of `model_calls`.
//! 4. `min([kernel] max_turn_iterations, limits.max_iterations)` model calls at most; then the
//!    turn ends with `ended: "iteration_cap"` and a reply that says so. The same tool call with
//!    the same arguments and the same result `[kernel] max_repeated_calls` times in a row (4;
//!    0 = off) ends it with `ended: "repeated_call"`: a `[Kennel] The turn was stopped…` user
//!    message tells the model (its next turn starts after it) and the session gets a
//!    `RepeatedCall` note. **Decision:** the result counts too, so polling a process whose output
//!    grows is progress, not a loop; counted across replies and within one.
//! 5. A failed turn's error names its session (`Error::session_id`, in the API's error body):
//!    its message is stored there, so a client retries in it instead of leaving it behind. The
//!    provider's API key is checked before anything is stored. A `model_call` event goes out
//!    only when a request is about to be sent. `read_artifact` is offered (modes `all`, `lazy`)
//!    only once the session holds a spilled result; stable mode keeps it, for its fixed bytes.
//!    `"session"` in a message may be a client's key: `Sessions::keyed` finds or opens the
//!    agent's session labelled `key …` (`Origin::Key`). **Decision:** two first messages with a
//!    new key at the same instant may open two sessions; every later one goes to the older.
//! 6. `Kernel::stop_agent` stops the agent and cancels its turns; a cancelled turn ends with
//!    `ended: "cancelled"`. Cancelling drops the provider call, which closes its stream at once.
//!
//! ## Decisions
//!
//! - **A message without `session` opens a new session**; the answer's `session_id` continues it.
//! - **Provider choice:** an agent type's `provider`; with none named and exactly one configured,
//!   that one. The API key is read from the environment at each call, so a missing key is a
//!   per-turn `Unavailable` ("set OPENAI_API_KEY"), never a start-up failure.
//! - **Iteration cap:** `[kernel] max_turn_iterations` (default 50) bounds every turn; an agent
//!   type's `limits.max_iterations` (default 25) can only lower it.
//! - **Stored history is what the model saw.** Tool results are stored as sent (error text,
//!   spill placeholder), so a replayed session shows the model the same thing. Calls left without
//!   results (a crash mid-turn) get a synthetic "stopped" result when the history is next sent.

pub mod context;
pub(crate) mod depth;
mod events;
mod images;
pub(crate) use images::png_size;
mod prompt;
pub(crate) mod recovery;
mod store;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::future::join_all;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;
use uuid::Uuid;

pub use events::{AgentEvent, EventKind};

use crate::Kernel;
use crate::agent::{Agent, AgentId};
use crate::error::{Error, Result};
use crate::llm::{ChatError, ChatRequest, Delta, LoadedImages, Message, Provider, ToolCall, ToolSpec, Usage};
use crate::tool::pipeline::result_text;
use crate::tool::{CallContext, Caller, ChannelContext, Offered, modes};
use context::{Entry, Plan, View};

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
}

impl TurnEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnEnd::Reply => "reply",
            TurnEnd::IterationCap => "iteration_cap",
            TurnEnd::Cancelled => "cancelled",
            TurnEnd::RepeatedCall => "repeated_call",
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

/// Turns in flight: their cancel tokens by agent, and one lock per session so two turns
/// never interleave in one history.
#[derive(Default)]
pub struct Turns {
    running: Mutex<HashMap<AgentId, Vec<(Uuid, CancellationToken)>>>,
    session_locks: Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<()>>>>,
    events: events::Bus,
    /// Context windows learned from refusals.
    windows: context::LearnedWindows,
    /// How each model counts tokens against our estimate, learned from its reports.
    calibration: context::Calibration,
}

const SUMMARY_CHARS: usize = 200;

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
    pub async fn deliver(&self, kernel: &Kernel, session: Uuid, text: &str) -> Result<()> {
        let _between_turns = self.hold_session(session).await;
        kernel.sessions().append(session, &[Message::User { content: text.to_string() }]).await
    }

    /// Waits until no other turn or delivery holds `session`, then holds it.
    async fn hold_session(&self, session: Uuid) -> SessionHold<'_> {
        let lock = self.session_locks.lock().expect("session locks").entry(session).or_default().clone();
        let guard = lock.clone().lock_owned().await;
        SessionHold { turns: self, session, lock, guard: Some(guard) }
    }

    fn register(&self, agent: AgentId, turn: Uuid, outer: Option<&CancellationToken>) -> CancellationToken {
        // A caller's own token (an A2A task being cancelled) stops the turn too.
        let token = outer.map_or_else(CancellationToken::new, CancellationToken::child_token);
        self.running.lock().expect("turns lock").entry(agent).or_default().push((turn, token.clone()));
        token
    }

    fn unregister(&self, agent: AgentId, turn: Uuid) {
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
struct SessionHold<'a> {
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

/// Turns started per UTC hour since `since` (`YYYY-MM-DDTHH`), oldest first.
pub(crate) async fn turns_per_hour(kernel: &Kernel, since: &str) -> Result<Vec<(String, u64)>> {
    store::turns_per_hour(kernel.db(), since).await
}

/// Runs one turn of `agent`: here, or on the daemon of the cluster that holds the agent
/// (`crate::cluster`), which answers as if the turn had run here.
pub async fn run(kernel: &Kernel, agent: Arc<Agent>, req: TurnRequest) -> Result<TurnResult> {
    agent.ensure_running()?;
    if kernel.cluster().owner_elsewhere(agent.id).await?.is_some() {
        return crate::cluster::run_elsewhere(kernel, &agent, req).await;
    }
    run_here(kernel, agent, req).await
}

/// Runs one turn of `agent` in this daemon.
pub(crate) async fn run_here(kernel: &Kernel, agent: Arc<Agent>, req: TurnRequest) -> Result<TurnResult> {
    agent.ensure_running()?;
    // Configuration problems are reported before anything is stored.
    let provider = kernel.provider_for(&agent)?;
    let model = agent.manifest.model.clone().ok_or_else(|| {
        Error::unavailable(format!("agent `{}` has no model: set `model` in its agent type", agent.name))
    })?;
    provider.ensure_key()?;
    let mut route = vec![(provider, model)];
    for f in &agent.manifest.fallbacks {
        match f.provider.as_deref().map_or(Some(provider), |name| kernel.provider_named(name)) {
            Some(p) => route.push((p, f.model.clone())),
            None => {
                tracing::warn!(agent = %agent.name, provider = ?f.provider, "a fallback names a provider config.toml no longer defines; skipped")
            }
        }
    }
    if crate::text::is_blank(&req.message) {
        return Err(Error::invalid("the message is empty"));
    }
    // Past a budget, nothing is stored: the agent is paused instead.
    crate::usage::budget::admit(kernel, &agent).await?;
    let (session, is_new) = match req.session {
        Some(id) => (kernel.sessions().of_agent(&agent, id).await?.id, false),
        None => (kernel.sessions().create(agent.id, req.new_session_label.clone()).await?.id, true),
    };

    let turns = kernel.turns();
    let _one_at_a_time = turns.hold_session(session).await;
    // Again once the session is ours: turns that queued behind one in this session were each
    // admitted before it spent, and a pause may have come meanwhile.
    let agent = kernel.agents().get_by_id(agent.id).unwrap_or(agent);
    crate::usage::budget::admit(kernel, &agent).await?;
    let turn_id = req.turn_id.unwrap_or_else(Uuid::now_v7);
    // Its row names this daemon: if the daemon dies, the one that takes its work over marks
    // the turn interrupted (`recovery.rs`).
    let cancel = turns.register(agent.id, turn_id, req.cancel.as_ref());
    if let Err(e) = store::start_turn(kernel.db(), turn_id, agent.id, session, kernel.cluster().id()).await {
        turns.unregister(agent.id, turn_id);
        return Err(e);
    }
    let emit =
        |kind: EventKind| turns.events.emit(AgentEvent { agent_id: agent.id, turn_id, session_id: session, kind });
    emit(EventKind::TurnStarted { message: req.message.clone() });

    let result = Loop {
        kernel,
        agent: &agent,
        route: &route,
        at: Default::default(),
        fell_back: Default::default(),
        session,
        is_new,
        req: &req,
        turn_id,
        moved: kernel.cluster().take_moved(agent.id),
        cancel: &cancel,
        emit: &emit,
    }
    .run()
    .await;
    turns.unregister(agent.id, turn_id);
    let ended = result.as_ref().map_or("failed", |r| r.ended.as_str());
    if let Err(e) = store::end_turn(kernel.db(), turn_id, ended).await {
        tracing::warn!(turn = %turn_id, error = %e, "recording the end of a turn failed");
    }
    match &result {
        Ok(r) => {
            emit(EventKind::TurnEnded { ended: r.ended, reply: r.reply.clone() });
            if r.ended == TurnEnd::Reply {
                let speaker = req.caller.audit_label();
                let served = (r.turn_id, r.session_id);
                crate::memory::semantic::memorize(
                    kernel,
                    agent.clone(),
                    served,
                    speaker,
                    req.message.clone(),
                    r.reply.clone(),
                );
            }
        }
        Err(e) => {
            emit(EventKind::TurnFailed { kind: e.kind.as_str().into(), message: e.message.clone() });
            if let Err(store) = kernel.sessions().record_failure(session, e).await {
                tracing::warn!(session = %session, error = %store, "recording a failed turn failed");
            }
        }
    }
    // A failed turn names its session (the message is stored there): the caller can retry
    // in it rather than leave it behind.
    result.map_err(|e| e.in_session(session))
}

/// A model's window as one call may use it: the reply's share of it and how the model
/// counts tokens against our estimate ([`context::Calibration`]).
struct Room {
    window: u64,
    reserve: u64,
    ratio: Option<f64>,
}

/// What every model call of one iteration shares.
struct Call<'a> {
    turn_id: Uuid,
    iteration: u32,
    system: &'a str,
    tools: &'a [ToolSpec],
    /// The place of this turn's first message: it and what follows are never compacted.
    turn_start: i64,
    cache_prefix: bool,
    /// Auto-recall's memories for this turn, sent just before its first message.
    recall: Option<&'a Message>,
}

fn add_usage(total: &mut Usage, more: &Usage) {
    total.input_tokens += more.input_tokens;
    total.output_tokens += more.output_tokens;
    total.cached_tokens += more.cached_tokens;
    total.estimated |= more.estimated;
}

/// Whether a tool result of the session points at the artifact store (a spill placeholder, or
/// a compaction stub of one): then `read_artifact` has something to read.
fn holds_spilled_result(history: &[Entry]) -> bool {
    history.iter().any(|e| matches!(&e.message, Message::Tool { content, .. } if content.contains("\"artifact_id\"")))
}

/// The note a reply cut at its token limit ends with, for the person and, in the history,
/// for the model.
fn truncation_note(max_tokens: u64) -> String {
    format!("\n\n[cut off: this reply reached its limit of {max_tokens} tokens]")
}

/// Counts the same tool call, with the same arguments and the same result, made again and
/// again ([`crate::config::KernelConfig::max_repeated_calls`]). A result that changes (a
/// process's output growing while it is polled) is progress, not a loop.
#[derive(Default)]
struct Repeats {
    /// The last call's name, arguments and a hash of its result.
    last: Option<(String, Value, u64)>,
    times: u64,
}

impl Repeats {
    /// Counts `calls` with their `results` (in the same order); the call made `limit` times
    /// in a row, if one was.
    fn count<'c>(&mut self, calls: &'c [ToolCall], results: &[Message], limit: u64) -> Option<&'c ToolCall> {
        let mut over = None;
        for (call, result) in calls.iter().zip(results) {
            let result = match result {
                Message::Tool { content, is_error, .. } => {
                    let mut hasher = std::collections::hash_map::DefaultHasher::new();
                    std::hash::Hash::hash(&(content, is_error), &mut hasher);
                    std::hash::Hasher::finish(&hasher)
                }
                _ => 0,
            };
            let same = self
                .last
                .as_ref()
                .is_some_and(|(name, args, r)| *name == call.name && *args == call.arguments && *r == result);
            self.times = if same { self.times + 1 } else { 1 };
            self.last = Some((call.name.clone(), call.arguments.clone(), result));
            if limit > 0 && self.times >= limit && over.is_none() {
                over = Some(call);
            }
        }
        over
    }
}

struct Loop<'a, E: Fn(EventKind)> {
    kernel: &'a Kernel,
    agent: &'a Arc<Agent>,
    /// The provider and model, then the agent type's fallbacks: the turn moves along when
    /// one keeps failing, and stays where it got to.
    route: &'a [(&'a Provider, String)],
    at: std::sync::atomic::AtomicUsize,
    /// Where the turn moved along, and why.
    fell_back: Mutex<Vec<FellBack>>,
    session: Uuid,
    /// Opened for this turn, so there is no history to read.
    is_new: bool,
    req: &'a TurnRequest,
    turn_id: Uuid,
    /// The agent came to this daemon from one that died (`crate::cluster::MOVED`).
    moved: bool,
    cancel: &'a CancellationToken,
    emit: &'a E,
}

impl<E: Fn(EventKind) + Sync> Loop<'_, E> {
    /// The provider the turn uses now.
    fn provider(&self) -> &Provider {
        self.route[self.at.load(std::sync::atomic::Ordering::Relaxed)].0
    }

    /// The model the turn uses now.
    fn model(&self) -> &str {
        &self.route[self.at.load(std::sync::atomic::Ordering::Relaxed)].1
    }

    /// Moves the turn to its next provider and model after `error`; false when none is left.
    async fn fall_back(&self, error: &Error) -> bool {
        let at = self.at.load(std::sync::atomic::Ordering::Relaxed);
        if at + 1 >= self.route.len() {
            return false;
        }
        let from = format!("{} / {}", self.provider().name(), self.model());
        self.at.store(at + 1, std::sync::atomic::Ordering::Relaxed);
        let to = format!("{} / {}", self.provider().name(), self.model());
        let note = format!("`{from}` kept failing ({}); the turn went on with `{to}`", error.message);
        tracing::warn!(agent = %self.agent.name, %from, %to, error = %error.message, "falling back");
        if let Err(e) = self.kernel.sessions().record_note(self.session, "Fallback", &note).await {
            tracing::warn!(error = %e, "noting a fallback in the session failed");
        }
        (self.emit)(EventKind::Fallback { from: from.clone(), to: to.clone(), reason: error.message.clone() });
        self.fell_back.lock().expect("fallbacks lock").push(FellBack { from, to, reason: error.message.clone() });
        true
    }

    /// Auto-recall: what the agent's long-term memory holds on this turn's message, as the
    /// message sent just before it in each model call of the turn. Not stored in the history:
    /// a memory forgotten later is not sent again, and the history before this turn is sent
    /// unchanged, so the provider's prompt cache keeps its prefix. What was recalled is noted
    /// in the session (`Recalled`), so the chat shows it and every call can be rebuilt.
    ///
    /// The first turn of an agent that came from a daemon that died is told so the
    /// same way (noted as `Moved`): its browser tabs and processes stayed behind.
    async fn recall(&self) -> Option<Message> {
        let moved = self.moved.then_some(crate::cluster::MOVED);
        if let Some(note) = moved
            && let Err(e) = self.kernel.sessions().record_note(self.session, "Moved", note).await
        {
            tracing::warn!(error = %e, "noting a move in the session failed");
        }
        let block = crate::memory::semantic::recall_block(self.kernel, self.agent, &self.req.message).await;
        if let Some(block) = &block
            && let Err(e) = self.kernel.sessions().record_note(self.session, "Recalled", block).await
        {
            tracing::warn!(error = %e, "noting a recall in the session failed");
        }
        let content = match (moved, block) {
            (Some(note), Some(block)) => format!("{note}\n\n{block}"),
            (Some(note), None) => note.to_string(),
            (None, block) => block?,
        };
        Some(Message::User { content })
    }

    async fn run(&self) -> Result<TurnResult> {
        let turn_id = self.turn_id;
        let sessions = self.kernel.sessions();
        let (mut history, mut view) = if self.is_new {
            (Vec::new(), View::default())
        } else {
            let stored = sessions.messages(self.session).await?;
            let history = stored.into_iter().map(|m| Entry { seq: m.seq, message: m.message }).collect();
            let view = sessions.latest_compaction(self.session).await?.map(|c| c.view()).unwrap_or_default();
            (history, view)
        };
        prompt::repair_dangling_calls(&mut history);
        // The session is held for this turn, so what it appends takes the next places in order.
        let mut next_seq = history.last().map_or(1, |e| e.seq + 1);
        let unanswered = matches!(history.last(), Some(Entry { message: Message::User { content }, .. }) if *content == self.req.message);
        if !(self.req.retry && unanswered) {
            let user = Message::User { content: self.req.message.clone() };
            sessions.append(self.session, std::slice::from_ref(&user)).await?;
            history.push(Entry { seq: next_seq, message: user });
            next_seq += 1;
        }
        let turn_start = history.last().map_or(1, |e| e.seq);
        let recall = self.recall().await;
        // Read once a turn: an evolve during the turn shows from the next one.
        let max_skill_bytes = usize::try_from(self.kernel.config().skills.prompt_max_bytes).unwrap_or(usize::MAX);
        let skills = self.kernel.skills().prompt_block(&self.agent.manifest.skills, max_skill_bytes).await;

        let cap =
            self.kernel.config().kernel.max_turn_iterations.min(u64::from(self.agent.manifest.limits.max_iterations))
                as u32;
        let mut trace = Vec::new();
        let mut usage = Usage::default();
        let finish = |reply: String, ended: TurnEnd, iterations: u32, trace: Vec<TraceEntry>, usage: Usage| {
            let fell_back = std::mem::take(&mut *self.fell_back.lock().expect("fallbacks lock"));
            TurnResult {
                turn_id,
                session_id: self.session,
                reply,
                ended,
                iterations,
                trace,
                usage,
                fell_back,
                truncated: false,
            }
        };
        let mut repeats = Repeats::default();
        let max_repeats = self.kernel.config().kernel.max_repeated_calls;

        for iteration in 1..=cap {
            // Only lazy and stable offers depend on what the session has loaded.
            let loaded = match self.agent.manifest.tool_mode {
                crate::agent::ToolMode::All => Vec::new(),
                _ => sessions.loaded_tools(self.session).await?,
            };
            let mut offer = modes::offer(&self.kernel.tools(), self.agent, &loaded, self.req.scope());
            if offer.mode != crate::agent::ToolMode::Stable && !holds_spilled_result(&history) {
                // Nothing to read yet: a type with no tools is offered none (a server whose
                // function-calling format forces a call would make one). Stable mode keeps
                // its bytes the same on every turn.
                offer.remove(crate::artifact::READ_TOOL);
            }
            // The goal may have changed mid-turn (goal_update): read the agent again.
            let current = self.kernel.agents().get_by_id(self.agent.id).unwrap_or_else(|| self.agent.clone());
            let system = prompt::system_prompt(&current, skills.as_deref(), offer.context_line.as_deref());
            let call = Call {
                turn_id,
                iteration,
                system: &system,
                tools: &offer.specs,
                turn_start,
                cache_prefix: offer.mode == crate::agent::ToolMode::Stable,
                recall: recall.as_ref(),
            };
            let reply = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return Ok(finish(String::new(), TurnEnd::Cancelled, iteration, trace, usage)),
                reply = self.call_model(&call, &history, &mut view, &mut usage) => reply?,
            };
            let (reply, max_tokens) = reply;
            let mut content = reply.content.clone();
            if reply.truncated && reply.tool_calls.is_empty() {
                // Kept, and said: the person sees a cut reply as cut, the model its own cut.
                content.get_or_insert_default().push_str(&truncation_note(max_tokens));
            }
            let assistant = Message::Assistant { content: content.clone(), tool_calls: reply.tool_calls.clone() };
            sessions.append(self.session, std::slice::from_ref(&assistant)).await?;
            history.push(Entry { seq: next_seq, message: assistant });
            next_seq += 1;

            if reply.tool_calls.is_empty() {
                let text = content.unwrap_or_default();
                (self.emit)(EventKind::Reply { text: text.clone() });
                let truncated = reply.truncated;
                return Ok(TurnResult { truncated, ..finish(text, TurnEnd::Reply, iteration, trace, usage) });
            }

            let offered = Arc::new(Offered { mode: offer.mode, names: offer.names });
            let (results, entries) = self.run_calls(&reply.tool_calls, offered).await;
            sessions.append(self.session, &results).await?;
            let repeated = repeats.count(&reply.tool_calls, &results, max_repeats).map(|c| c.name.clone());
            for message in results {
                history.push(Entry { seq: next_seq, message });
                next_seq += 1;
            }
            trace.extend(entries);
            if self.cancel.is_cancelled() {
                return Ok(finish(String::new(), TurnEnd::Cancelled, iteration, trace, usage));
            }
            if let Some(name) = repeated {
                let note = format!(
                    "The turn was stopped: `{name}` was called {max_repeats} times in a row with the same arguments and the same result ([kernel] max_repeated_calls). Try another way, or ask for help."
                );
                // Said to the model too: its next turn starts after this note.
                let told = Message::User { content: format!("[Kennel] {note}") };
                sessions.append(self.session, std::slice::from_ref(&told)).await?;
                if let Err(e) = sessions.record_note(self.session, "RepeatedCall", &note).await {
                    tracing::warn!(error = %e, "noting a repeated call in the session failed");
                }
                (self.emit)(EventKind::Reply { text: note.clone() });
                return Ok(finish(note, TurnEnd::RepeatedCall, iteration, trace, usage));
            }
        }
        let reply = format!(
            "The turn ended after {cap} model calls without a final answer (the iteration cap: [kernel] max_turn_iterations / limits.max_iterations)."
        );
        Ok(finish(reply, TurnEnd::IterationCap, cap, trace, usage))
    }

    /// The model's context window: configured, else learned from a refusal, else its family's.
    /// A refusal can teach a window smaller than the one configured: the smaller wins.
    fn window(&self) -> Option<u64> {
        let configured = self.provider().model_config(self.model()).and_then(|m| m.context_tokens);
        let learned = self.kernel.turns().windows.get(self.provider().name(), self.model());
        match (configured, learned) {
            (Some(c), Some(l)) => Some(c.min(l)),
            (c, l) => c.or(l).or_else(|| context::known_window(self.model())),
        }
    }

    /// Remembers a window a refusal named (or, when it named none, half of what was refused).
    /// A refusal at the window already used means the estimate fell short (text that is all
    /// ids or base64 has more tokens per byte): the window is taken a quarter lower each time.
    /// A refusal that also counted the prompt taught the estimate instead (the calibration):
    /// when it names the window in use, that window stands.
    async fn learn_window(&self, limit: Option<u64>, refused_estimate: u64, counted: bool) -> u64 {
        let mut learned = limit.unwrap_or(refused_estimate / 2);
        if let Some(used) = self.window()
            && learned >= used
        {
            if counted && limit.is_some() {
                return used;
            }
            learned = used * 3 / 4;
        }
        let learned = learned.max(512);
        self.kernel.turns().windows.set(self.provider().name(), self.model(), learned);
        if let Err(e) = store::learn_window(self.kernel.db(), self.provider().name(), self.model(), learned).await {
            tracing::warn!(error = %e, "storing a learned context window failed");
        }
        tracing::info!(provider = %self.provider().name(), model = %self.model(), tokens = learned, "learned a model's context window from its refusal");
        learned
    }

    /// One model call of the turn: the history fitted to the window (compacting the session
    /// when it would not fit), the reply streamed into the turn's events. A refusal for
    /// length teaches the window and the call is made again, compacted to it.
    async fn call_model(
        &self,
        call: &Call<'_>,
        history: &[Entry],
        view: &mut View,
        usage: &mut Usage,
    ) -> Result<(crate::llm::ChatReply, u64)> {
        const RETRIES_FOR_LENGTH: u32 = 3;
        let on_delta = |delta: Delta<'_>| {
            (self.emit)(match delta {
                Delta::Text(text) => EventKind::TextDelta { iteration: call.iteration, text: text.to_string() },
                Delta::Reset => EventKind::ReplyReset { iteration: call.iteration },
                Delta::Queued => {
                    EventKind::Queued { iteration: call.iteration, provider: self.provider().name().to_string() }
                }
                Delta::ToolCall { index, id, name, arguments } => EventKind::ToolCallDelta {
                    iteration: call.iteration,
                    index,
                    call_id: id.map(str::to_string),
                    name: name.map(str::to_string),
                    arguments: arguments.to_string(),
                },
            })
        };
        // The recall block is sent whole with this turn's messages, which are never compacted.
        let fixed = context::fixed_tokens(call.system, call.tools) + call.recall.map_or(0, context::estimate);
        let mut refusals = 0;
        let mut announced = false;
        loop {
            let window = self.window();
            let max_reply = self.kernel.config().kernel.max_reply_tokens;
            let reserve = window.map_or(max_reply, |w| max_reply.min(w / 4));
            let ratio = self.kernel.turns().calibration.ratio(self.provider().name(), self.model());
            // The provider may have changed (a fallback): it decides whether images go.
            let accepts_images = self.provider().accepts_images(self.model());
            if let Some(window) = window {
                // Fitted with room for as many images as may be sent.
                let images = if accepts_images { context::images_at_most(history, view) } else { 0 };
                let fixed = fixed + images as u64 * context::IMAGE_TOKENS;
                let room = Room { window, reserve, ratio };
                match self.fit(call, history, view, fixed, &room, usage).await {
                    // Our estimate is on the safe side: until the model's own count of a
                    // request has calibrated it, a turn it finds too large goes anyway, once,
                    // for the model to count (and serve, if it fits after all).
                    Err(e) if e.kind == crate::error::ErrorKind::TooLarge && ratio.is_none() && refusals == 0 => {}
                    other => other?,
                }
            }
            let mut messages = context::build(history, view);
            let images = if accepts_images {
                images::load(self.kernel.workspaces(), self.agent.id, &messages).await
            } else {
                LoadedImages::new()
            };
            let estimate = fixed
                + images.len() as u64 * context::IMAGE_TOKENS
                + messages.iter().map(context::estimate).sum::<u64>();
            if let Some(recall) = call.recall {
                // This turn's messages are the last ones built, one per entry.
                let this_turn = history.iter().filter(|e| e.seq >= call.turn_start).count();
                messages.insert(messages.len().saturating_sub(this_turn), recall.clone());
            }
            let chat = ChatRequest {
                model: self.model(),
                system: call.system,
                messages: &messages,
                tools: call.tools,
                max_tokens: reserve as u32,
                cache_prefix: call.cache_prefix,
                accepts_images,
                images: &images,
            };
            if !std::mem::replace(&mut announced, true) {
                (self.emit)(EventKind::ModelCall { iteration: call.iteration });
            }
            let mut outcome = self.provider().chat(&chat, &on_delta).await;
            if let Ok(reply) = &mut outcome {
                // Images are counted at a fixed guess: a call with any teaches nothing.
                self.settle_usage(reply, estimate, images.is_empty());
            }
            let first_seq = history.iter().map(|e| e.seq).find(|&s| s > view.summary_through);
            let (reply_usage, kind) = match &outcome {
                Ok(r) => (r.usage.clone(), "ok"),
                Err(ChatError::ContextExceeded { error, .. } | ChatError::GaveUp(error) | ChatError::Other(error)) => {
                    (Usage::default(), error.kind.as_str())
                }
            };
            self.record_call(call.turn_id, "reply", view, first_seq, messages.len(), estimate, &reply_usage, kind);
            match outcome {
                Ok(reply) => {
                    add_usage(usage, &reply.usage);
                    return Ok((reply, reserve));
                }
                Err(ChatError::GaveUp(error)) if self.fall_back(&error).await => {
                    // Whatever the failed provider streamed is void: the next one starts over.
                    (self.emit)(EventKind::ReplyReset { iteration: call.iteration });
                }
                Err(ChatError::ContextExceeded { limit, counted, error }) if refusals < RETRIES_FOR_LENGTH => {
                    tracing::info!(error = %error.message, "the model refused the request as too long; compacting");
                    refusals += 1;
                    let calibration = &self.kernel.turns().calibration;
                    let learned = counted
                        .is_some_and(|c| calibration.learn_refused(self.provider().name(), self.model(), estimate, c));
                    self.learn_window(limit, estimate, learned).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// A reply's usage as the provider reported it teaches how the model counts (when
    /// `calibrate`); a reply that reports none (llama.cpp's server streams none) gets an
    /// estimate, marked so, which budgets count like a report: from the request's `estimate`
    /// and the reply's size.
    fn settle_usage(&self, reply: &mut crate::llm::ChatReply, estimate: u64, calibrate: bool) {
        let (provider, model) = (self.provider().name(), self.model());
        let calibration = &self.kernel.turns().calibration;
        if reply.usage.input_tokens > 0 {
            if calibrate {
                calibration.learn(provider, model, estimate, reply.usage.input_tokens);
            }
            return;
        }
        if reply.usage.output_tokens > 0 {
            return;
        }
        let ratio = calibration.ratio(provider, model);
        let written = Message::Assistant { content: reply.content.clone(), tool_calls: reply.tool_calls.clone() };
        reply.usage = Usage {
            input_tokens: context::Calibration::to_model(ratio, estimate),
            output_tokens: context::Calibration::to_model(ratio, context::estimate(&written)),
            estimated: true,
            ..Usage::default()
        };
    }

    /// Compacts the session's view until the request fits `budget` tokens: stubs first, then
    /// summaries written by the model, each stored as the session's new view.
    async fn fit(
        &self,
        call: &Call<'_>,
        history: &[Entry],
        view: &mut View,
        fixed: u64,
        room: &Room,
        usage: &mut Usage,
    ) -> Result<()> {
        let budget = context::Calibration::to_estimate(room.ratio, room.window - room.reserve);
        // A summary's request is plain text, which our estimate never undercounts: a ratio
        // above 1 (learned on requests the server renders shorter, long call ids among them)
        // must not make its transcript longer than the window holds.
        let summary_budget =
            context::Calibration::to_estimate(room.ratio.map(|r| r.min(1.0)), room.window - room.reserve);
        // A summary that comes out longer than planned is planned again; a few rounds at most.
        for _ in 0..4 {
            let next = match context::plan(history, view, call.turn_start, fixed, budget) {
                Plan::Fits => return Ok(()),
                Plan::Stub { stubbed_through } => View { id: None, stubbed_through, ..view.clone() },
                Plan::Summarise { through, stubbed_through, messages } => {
                    let summary = self.summarise(call.turn_id, &messages, summary_budget, usage).await?;
                    View { id: None, summary: Some(summary), summary_through: through, stubbed_through }
                }
                Plan::TooLarge { needed, .. } => {
                    let needed = context::Calibration::to_model(room.ratio, needed);
                    let counted = if room.ratio.is_some() { "as the model counts" } else { "by Kennel's estimate" };
                    return Err(Error::new(
                        crate::error::ErrorKind::TooLarge,
                        format!(
                            "this turn's message is too long for model `{}`: with the system prompt and tools it is about {needed} tokens ({counted}), and the model's context window of {} tokens leaves {} once {} are kept for the reply; send a shorter message (or set a larger [providers.{}.models.{}] context_tokens if the model has one)",
                            self.model(),
                            room.window,
                            room.window - room.reserve,
                            room.reserve,
                            self.provider().name(),
                            self.model()
                        ),
                    ));
                }
            };
            let summarised = history.iter().filter(|e| e.seq <= next.summary_through).count() as i64;
            let stubbed = history
                .iter()
                .filter(|e| {
                    e.seq > next.summary_through
                        && e.seq <= next.stubbed_through
                        && matches!(e.message, Message::Tool { .. })
                })
                .count() as i64;
            let stored = self.kernel.sessions().record_compaction(self.session, &next, summarised, stubbed).await?;
            *view = stored.view();
            (self.emit)(EventKind::Compacted { summarised: summarised as u64, stubbed: stubbed as u64 });
        }
        match context::plan(history, view, call.turn_start, fixed, budget) {
            Plan::Fits => Ok(()),
            _ => Err(Error::new(
                crate::error::ErrorKind::TooLarge,
                format!(
                    "the conversation does not fit model `{}`'s context window even after compacting it four times; start a new session",
                    self.model()
                ),
            )),
        }
    }

    /// Has the model write one summary of `messages`, in pieces that each fit `budget` (each
    /// piece's summary carried into the next).
    async fn summarise(&self, turn_id: Uuid, messages: &[Message], budget: u64, usage: &mut Usage) -> Result<String> {
        let allowance = context::summary_allowance(budget);
        let room = budget.saturating_sub(allowance + context::fixed_tokens(context::SUMMARY_PROMPT, &[]) + 64).max(64);
        let lines = context::transcript(messages, (room as usize * 3) / 4);
        let mut summary = String::new();
        let mut piece = String::new();
        let mut pieces = Vec::new();
        for line in lines {
            if !piece.is_empty() && context::tokens_of(piece.len() + line.len() + 2 * allowance as usize * 3) > room {
                pieces.push(std::mem::take(&mut piece));
            }
            piece.push_str(&line);
            piece.push_str("\n\n");
        }
        pieces.push(piece);
        let ignore = |_: Delta<'_>| {};
        let no_images = LoadedImages::new();
        for piece in pieces {
            let asked = if summary.is_empty() {
                format!("The conversation so far:\n\n{piece}\nWrite the summary.")
            } else {
                format!(
                    "The summary of what came before:\n{summary}\n\nThe conversation after it:\n\n{piece}\nWrite one summary of both."
                )
            };
            let messages = [Message::User { content: asked }];
            let chat = ChatRequest {
                model: self.model(),
                system: context::SUMMARY_PROMPT,
                messages: &messages,
                tools: &[],
                max_tokens: allowance as u32,
                cache_prefix: false,
                accepts_images: false,
                images: &no_images,
            };
            let estimate = context::fixed_tokens(context::SUMMARY_PROMPT, &[]) + context::estimate(&messages[0]);
            let mut outcome = self.provider().chat(&chat, &ignore).await;
            // A provider that gives up on a summary gives way to the fallbacks, as for replies.
            while let Err(ChatError::GaveUp(error)) = &outcome {
                if !self.fall_back(error).await {
                    break;
                }
                let chat = ChatRequest { model: self.model(), ..chat };
                outcome = self.provider().chat(&chat, &ignore).await;
            }
            if let Ok(reply) = &mut outcome {
                self.settle_usage(reply, estimate, true);
            }
            let (reply_usage, kind) = match &outcome {
                Ok(r) => (r.usage.clone(), "ok"),
                Err(ChatError::ContextExceeded { error, .. } | ChatError::GaveUp(error) | ChatError::Other(error)) => {
                    (Usage::default(), error.kind.as_str())
                }
            };
            self.record_call(turn_id, "summary", &View::default(), None, 1, estimate, &reply_usage, kind);
            let reply = outcome.map_err(Error::from)?;
            add_usage(usage, &reply.usage);
            // A provider that writes past `max_tokens` must not undo the compaction.
            summary = context::clip(reply.content.unwrap_or_default().trim(), allowance as usize * 3);
        }
        Ok(summary)
    }

    #[allow(clippy::too_many_arguments)]
    fn record_call(
        &self,
        turn: Uuid,
        purpose: &'static str,
        view: &View,
        first_seq: Option<i64>,
        messages: usize,
        estimated_tokens: u64,
        tokens: &Usage,
        outcome: &str,
    ) {
        self.kernel.usage().record(crate::usage::ModelCall {
            turn,
            agent: self.agent.id,
            session: self.session,
            provider: self.provider().name().to_string(),
            model: self.model().to_string(),
            purpose,
            compaction: view.id,
            first_seq,
            messages,
            estimated_tokens,
            tokens: tokens.clone(),
            outcome: outcome.to_string(),
            at: crate::db::timestamp(self.kernel.clock().now()),
        });
    }

    /// Runs one response's tool calls through the pipeline: runs of non-exclusive calls
    /// concurrently, exclusive ones alone, results in the model's order.
    async fn run_calls(&self, calls: &[ToolCall], offered: Arc<Offered>) -> (Vec<Message>, Vec<TraceEntry>) {
        let mut ctx = CallContext::new(self.kernel.clone(), self.agent.clone(), self.req.caller.clone())
            .with_session(Some(self.session));
        ctx.turn = Some(self.turn_id);
        ctx.headless = self.req.headless;
        ctx.channel = self.req.channel.clone();
        ctx.cancel = self.cancel.clone();
        ctx.offered = Some(offered);
        ctx.depth = self.req.depth;
        let mut chain = self.req.chain.clone();
        chain.push(self.agent.id);
        ctx.chain = chain.into();

        let mut outcomes = Vec::with_capacity(calls.len());
        let mut batch: Vec<&ToolCall> = Vec::new();
        for call in calls {
            if self.is_exclusive(&call.name) {
                outcomes.extend(join_all(batch.drain(..).map(|c| self.run_call(ctx.clone(), c))).await);
                outcomes.push(self.run_call(ctx.clone(), call).await);
            } else {
                batch.push(call);
            }
        }
        outcomes.extend(join_all(batch.into_iter().map(|c| self.run_call(ctx.clone(), c))).await);
        outcomes.into_iter().unzip()
    }

    fn is_exclusive(&self, name: &str) -> bool {
        self.kernel.tools().get(name).is_some_and(|(def, _)| def.exclusive)
    }

    fn returns_image(&self, name: &str) -> bool {
        self.kernel.tools().get(name).is_some_and(|(def, _)| def.returns_image)
    }

    async fn run_call(&self, ctx: CallContext, call: &ToolCall) -> (Message, TraceEntry) {
        (self.emit)(EventKind::ToolCallStarted {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        });
        let started = Instant::now();
        let result = self.kernel.call_tool(ctx, &call.name, call.arguments.clone()).await;
        let duration_us = started.elapsed().as_micros() as u64;
        let (content, outcome, artifact_id, is_error, image) = match result {
            Ok(out) => {
                let image = if self.returns_image(&call.name) { images::named_by(&out.content) } else { None };
                (result_text(&out.content), "ok".to_string(), out.artifact_id, false, image)
            }
            Err(e) => (e.model_text(), e.kind.as_str().to_string(), None, true, None),
        };
        let summary: String = content.chars().take(SUMMARY_CHARS).collect();
        (self.emit)(EventKind::ToolCallFinished {
            call_id: call.id.clone(),
            name: call.name.clone(),
            outcome: outcome.clone(),
            summary: summary.clone(),
            duration_us,
        });
        let message = Message::Tool { call_id: call.id.clone(), name: call.name.clone(), content, is_error, image };
        let entry = TraceEntry {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            outcome,
            summary,
            duration_us,
            artifact_id,
        };
        (message, entry)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn held(turns: &Turns) -> usize {
        turns.session_locks.lock().unwrap().len()
    }

    #[test]
    fn turns_of_the_dashboard_and_the_terminal_have_a_person_and_api_turns_none() {
        let person = |caller: Caller| TurnRequest::new("hi", caller).scope().person;
        assert!(person(Caller::Operator("ada".into())));
        assert!(person(Caller::Cli));
        for headless in
            [Caller::Token("ci".into()), Caller::Agent, Caller::Schedule("s".into()), Caller::A2a("x".into())]
        {
            assert!(!person(headless.clone()), "{headless:?}");
        }
    }

    #[test]
    fn the_same_call_with_the_same_arguments_and_result_is_counted_across_replies() {
        let call = |args: Value| ToolCall { id: "c".into(), name: "t".into(), arguments: args };
        let result = |content: &str| Message::Tool {
            call_id: "c".into(),
            name: "t".into(),
            content: content.into(),
            is_error: false,
            image: None,
        };
        let same = [call(serde_json::json!({"a": 1}))];
        let (r, r2) = ([result("r")], [result("r2")]);
        let mut repeats = Repeats::default();
        assert!(repeats.count(&same, &r, 3).is_none());
        assert!(repeats.count(&same, &r, 3).is_none());
        assert_eq!(repeats.count(&same, &r, 3).map(|c| c.name.as_str()), Some("t"), "the third in a row");
        let mut repeats = Repeats::default();
        for _ in 0..5 {
            assert!(repeats.count(&same, &r, 0).is_none(), "0: never");
        }
        let mut repeats = Repeats::default();
        let other = [call(serde_json::json!({"a": 2}))];
        for reply in [&same, &other, &same, &other] {
            assert!(repeats.count(reply, &r, 2).is_none(), "other arguments break the run");
        }
        let mut repeats = Repeats::default();
        for results in [&r, &r2, &r, &r2] {
            assert!(repeats.count(&same, results, 2).is_none(), "a result that changes is progress");
        }
        let twice = [same[0].clone(), same[0].clone()];
        assert!(Repeats::default().count(&twice, &[result("r"), result("r")], 2).is_some(), "within one reply too");
    }

    #[tokio::test]
    async fn a_session_lock_is_forgotten_once_nobody_holds_or_waits_for_it() {
        let turns = Turns::default();
        let session = Uuid::now_v7();
        let first = turns.hold_session(session).await;
        assert_eq!(held(&turns), 1);
        let mut second = Box::pin(turns.hold_session(session));
        assert!(tokio::time::timeout(Duration::from_millis(20), &mut second).await.is_err(), "one at a time");
        drop(first);
        assert_eq!(held(&turns), 1, "kept while another turn waits");
        let second = second.await;
        drop(second);
        assert_eq!(held(&turns), 0);
    }
}
