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
//! iteration cap, cancellation; this file holds the turn's types, `run` and the loop's
//! iterations. `model.rs`: the loop's model side (the route of providers and fallbacks, the
//! room a call may fill, fitting and summarising, one model call with its usage and record).
//! `tool_calls.rs`: the loop's tool side (a reply's calls through the pipeline, exclusive ones
//! alone, and the repeated-call guard). `turns.rs`: `Turns`, the turns running in this daemon
//! (session locks, cancellation, the event bus, learned windows and calibration).
//! `context.rs`: context windows (`known_window` by family,
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
//! 1. The agent must be running; its provider (the type's `provider`, or the daemon's default:
//!    `Config::default_provider`) and model must exist — otherwise `Unavailable` with what to set, and nothing is stored.
//!    `send_message` runs the turn on a task of its own: a client that hangs up (a closed tab, a
//!    script's timeout) never cancels it; stopping the agent does.
//! 2. The session is the one named (it must be the agent's) or a new one. A per-session lock keeps
//!    two turns from interleaving in one history. The turn is recorded in `turns` from its start;
//!    one still open at the next start was cut off (`recovery`).
//! 3. The user message is stored, then each iteration: build the offer for the agent's tool mode
//!    (`tool/modes.rs`), the system prompt, fit the history to the model's window (`context`), call
//!    the provider (raced against the turn's cancel token; the reply's pieces become
//!    `text_delta`/`tool_call_delta` events as they arrive), store the assistant message; no tool
//!    calls → that is the reply. Otherwise run the calls through the pipeline in the model's
//!    order (a call that may change state alone, after the ones before it; only runs of
//!    `read_only`, non-`exclusive` calls concurrently; results in the model's order),
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
//! 6. `Kernel::stop_agent` stops the agent and cancels its turns; `Kernel::cancel_turn`
//!    cancels one session's turn (a chat's Stop), on whichever daemon of the cluster runs it.
//!    A cancelled turn ends with `ended: "cancelled"` and a `Cancelled` note in its session
//!    naming who cancelled it. Cancelling drops the provider call, which closes its stream at
//!    once.
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
mod model;
mod prompt;
pub(crate) mod recovery;
pub(crate) mod request;
mod store;
mod tool_calls;
mod turns;

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

pub use events::{AgentEvent, EventKind, RelayQueue};
use model::{Call, truncation_note};
pub use request::{FellBack, TraceEntry, TurnEnd, TurnRequest, TurnResult};
use tool_calls::Repeats;
pub use turns::Turns;

use crate::Kernel;
use crate::agent::Agent;
use crate::approval::{Approvals, Parking, Provenance};
use crate::error::{Error, Result};
use crate::llm::{Message, Provider, Usage};
use crate::memory::semantic::{self, SemanticMemory};
use crate::skills::Skills;
use crate::tool::{Offered, modes};
use context::{Entry, View};

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

/// Runs one turn of `agent` in this daemon, counted in the metrics by how it ended.
pub(crate) async fn run_here(kernel: &Kernel, agent: Arc<Agent>, req: TurnRequest) -> Result<TurnResult> {
    // Agents other agents spawned (and workflow steps) are counted together: agents can make
    // any number of them, and a series each would grow without end.
    let name = if agent.parent_id.is_some() || agent.ephemeral { "spawned".to_string() } else { agent.name.clone() };
    let result = run_turn_here(kernel, agent, req).await;
    let outcome = result.as_ref().map_or("failed", |r| r.ended.as_str());
    crate::metrics::metrics().turn_ended(&name, outcome);
    result
}

async fn run_turn_here(kernel: &Kernel, agent: Arc<Agent>, req: TurnRequest) -> Result<TurnResult> {
    agent.ensure_running()?;
    // Configuration problems are reported before anything is stored.
    let provider = kernel.provider_for(&agent)?;
    let model = agent.manifest.model.clone().ok_or_else(|| {
        Error::unavailable(format!("agent `{}` has no model: set `model` in its agent type", agent.name))
    })?;
    provider.ensure_key()?;
    let mut route = vec![(provider.clone(), model)];
    for f in &agent.manifest.fallbacks {
        match f.provider.as_deref().map_or(Some(provider.clone()), |name| kernel.provider_named(name)) {
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
    let cancel = turns.register(agent.id, turn_id, session, req.cancel.as_ref());
    if let Err(e) = store::start_turn(kernel.db(), turn_id, agent.id, session, kernel.cluster().id()).await {
        turns.unregister(agent.id, turn_id);
        return Err(e);
    }
    let emit =
        |kind: EventKind| turns.events.emit(AgentEvent { agent_id: agent.id, turn_id, session_id: session, kind });
    emit(EventKind::TurnStarted { message: req.message.clone() });
    let stored = match is_new {
        true => Vec::new(),
        // Unreadable labels count as read: the turn is tainted rather than trusted.
        false => kernel.service::<Approvals>().session_labels(session).await.unwrap_or_else(|e| {
            tracing::warn!(session = %session, error = %e, "reading a session's provenance failed");
            vec![crate::approval::Label::new("unknown", "the session's stored provenance is unreadable")]
        }),
    };
    let provenance = Provenance::of(stored);
    for label in &req.taint {
        provenance.add(label.clone());
    }

    let turn = Loop {
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
        provenance,
        // No person to wait with: a call a rule holds parks, and the turn ends there.
        parking: req.headless.then(Default::default),
    };
    let result = turn.run().await;
    // Labels a failed write left unstored get one more try before the turn lets go.
    turn.note_provenance().await;
    let cancelled_by = turns.unregister(agent.id, turn_id);
    let ended = result.as_ref().map_or("failed", |r| r.ended.as_str());
    if let Err(e) = store::end_turn(kernel.db(), turn_id, ended).await {
        tracing::warn!(turn = %turn_id, error = %e, "recording the end of a turn failed");
    }
    match &result {
        Ok(r) => {
            emit(EventKind::TurnEnded { ended: r.ended, reply: r.reply.clone() });
            if r.ended == TurnEnd::Cancelled {
                // The chat says why the message has no answer; the next message is answered.
                let why = cancelled_by.unwrap_or_else(|| "by its caller".into());
                let note = format!("The turn was cancelled {why}; it wrote no reply.");
                if let Err(e) = kernel.sessions().record_note(session, "Cancelled", &note).await {
                    tracing::warn!(session = %session, error = %e, "recording a cancelled turn failed");
                }
            }
            if r.ended == TurnEnd::Reply
                && let Some(memory) = kernel.services().shared::<SemanticMemory>()
            {
                let (meter, clock) = (kernel.services().need(), kernel.clock().clone());
                let metered = semantic::metered_for(meter, clock, agent.id, Some(r.turn_id), Some(r.session_id));
                let said = (req.caller.audit_label(), req.message.clone(), r.reply.clone());
                semantic::memorize(memory, &kernel.tools(), agent.clone(), metered, said);
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

/// Whether a tool result of the session points at the artifact store (a spill placeholder, or
/// a compaction stub of one): then `read_artifact` has something to read.
fn holds_spilled_result(history: &[Entry]) -> bool {
    history.iter().any(|e| matches!(&e.message, Message::Tool { content, .. } if content.contains("\"artifact_id\"")))
}

struct Loop<'a, E: Fn(EventKind)> {
    kernel: &'a Kernel,
    agent: &'a Arc<Agent>,
    /// The provider and model, then the agent type's fallbacks: the turn moves along when
    /// one keeps failing, and stays where it got to.
    route: &'a [(Arc<Provider>, String)],
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
    /// The untrusted sources the session's model has read ([`crate::approval`]).
    provenance: Provenance,
    /// In a headless turn: the call parked for a person's approval, once one is.
    parking: Option<Arc<Parking>>,
}

impl<E: Fn(EventKind) + Sync> Loop<'_, E> {
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
        let block = match self.kernel.optional::<SemanticMemory>() {
            Some(memory) => semantic::recall_block(memory, &self.kernel.tools(), self.agent, &self.req.message).await,
            None => None,
        };
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
        // A message from a stranger or a remote agent taints the turn from its start.
        self.note_provenance().await;
        let recall = self.recall().await;
        // Read once a turn: an evolve during the turn shows from the next one.
        let max_skill_bytes = usize::try_from(self.kernel.config().skills.prompt_max_bytes).unwrap_or(usize::MAX);
        let skills = self.kernel.service::<Skills>().prompt_block(&self.agent.manifest.skills, max_skill_bytes).await;

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
            if let Some(parked) = self.parking.as_ref().and_then(|p| p.parked()) {
                let note = format!(
                    "The turn is parked: its call of `{}` waits for a person's approval (approval {}). It goes on here once someone decides.",
                    parked.tool, parked.approval
                );
                if let Err(e) = sessions.record_note(self.session, "Parked", &note).await {
                    tracing::warn!(error = %e, "noting a parked turn in the session failed");
                }
                return Ok(finish(note, TurnEnd::Parked, iteration, trace, usage));
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
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::llm::ToolCall;
    use crate::tool::Caller;
    use serde_json::Value;

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
