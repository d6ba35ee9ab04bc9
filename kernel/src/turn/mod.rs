//! The agent loop: a message goes in, the model is called with the tools of the agent's
//! mode, tool calls go through the pipeline, results go back, until the model answers or
//! the iteration cap ends the turn. Every message is stored in the session as it happens.

pub(crate) mod depth;
mod events;
mod prompt;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::future::join_all;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;
use uuid::Uuid;

pub use events::{AgentEvent, EventKind};

use crate::Kernel;
use crate::agent::{Agent, AgentId};
use crate::error::{Error, Result};
use crate::llm::{ChatRequest, Message, Provider, ToolCall, Usage};
use crate::tool::pipeline::result_text;
use crate::tool::{CallContext, Caller, ChannelContext, Offered, modes};

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
}

impl TurnRequest {
    /// What this turn offers tools beyond grants: a person, a channel conversation.
    pub fn scope(&self) -> crate::tool::TurnScope {
        crate::tool::TurnScope { person: !self.headless, conversation: self.channel.is_some() }
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
        }
    }
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnEnd {
    /// The model answered.
    Reply,
    /// The model was still calling tools when the iteration cap was reached.
    IterationCap,
    /// The agent was stopped during the turn.
    Cancelled,
}

/// One tool call of a turn, for the caller and the dashboard.
#[derive(Debug, Clone, Serialize, ToSchema)]
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TurnResult {
    pub turn_id: Uuid,
    pub session_id: Uuid,
    pub reply: String,
    pub ended: TurnEnd,
    /// Model calls made.
    pub iterations: u32,
    pub trace: Vec<TraceEntry>,
    pub usage: Usage,
}

/// Turns in flight: their cancel tokens by agent, and one lock per session so two turns
/// never interleave in one history.
#[derive(Default)]
pub struct Turns {
    running: Mutex<HashMap<AgentId, Vec<(Uuid, CancellationToken)>>>,
    session_locks: Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<()>>>>,
    events: events::Bus,
}

const SUMMARY_CHARS: usize = 200;

impl Turns {
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

/// Runs one turn of `agent`.
pub async fn run(kernel: &Kernel, agent: Arc<Agent>, req: TurnRequest) -> Result<TurnResult> {
    agent.ensure_running()?;
    // Configuration problems are reported before anything is stored.
    let provider = kernel.provider_for(&agent)?;
    let model = agent.manifest.model.clone().ok_or_else(|| {
        Error::unavailable(format!("agent `{}` has no model: set `model` in its agent type", agent.name))
    })?;
    if crate::text::is_blank(&req.message) {
        return Err(Error::invalid("the message is empty"));
    }
    let (session, is_new) = match req.session {
        Some(id) => (kernel.sessions().of_agent(&agent, id).await?.id, false),
        None => (kernel.sessions().create(agent.id, req.new_session_label.clone()).await?.id, true),
    };

    let turns = kernel.turns();
    let _one_at_a_time = turns.hold_session(session).await;
    let turn_id = Uuid::now_v7();
    let cancel = turns.register(agent.id, turn_id, req.cancel.as_ref());
    let emit =
        |kind: EventKind| turns.events.emit(AgentEvent { agent_id: agent.id, turn_id, session_id: session, kind });
    emit(EventKind::TurnStarted { message: req.message.clone() });

    let result = Loop {
        kernel,
        agent: &agent,
        provider,
        model: &model,
        session,
        is_new,
        req: &req,
        cancel: &cancel,
        emit: &emit,
    }
    .run(turn_id)
    .await;
    turns.unregister(agent.id, turn_id);
    match &result {
        Ok(r) => emit(EventKind::TurnEnded { ended: r.ended, reply: r.reply.clone() }),
        Err(e) => {
            emit(EventKind::TurnFailed { kind: e.kind.as_str().into(), message: e.message.clone() });
            if let Err(store) = kernel.sessions().record_failure(session, e).await {
                tracing::warn!(session = %session, error = %store, "recording a failed turn failed");
            }
        }
    }
    result
}

struct Loop<'a, E: Fn(EventKind)> {
    kernel: &'a Kernel,
    agent: &'a Arc<Agent>,
    provider: &'a Provider,
    model: &'a str,
    session: Uuid,
    /// Opened for this turn, so there is no history to read.
    is_new: bool,
    req: &'a TurnRequest,
    cancel: &'a CancellationToken,
    emit: &'a E,
}

impl<E: Fn(EventKind)> Loop<'_, E> {
    async fn run(&self, turn_id: Uuid) -> Result<TurnResult> {
        let sessions = self.kernel.sessions();
        let mut history: Vec<Message> = if self.is_new {
            Vec::new()
        } else {
            sessions.messages(self.session).await?.into_iter().map(|m| m.message).collect()
        };
        prompt::repair_dangling_calls(&mut history);
        let unanswered = matches!(history.last(), Some(Message::User { content }) if *content == self.req.message);
        if !(self.req.retry && unanswered) {
            let user = Message::User { content: self.req.message.clone() };
            sessions.append(self.session, std::slice::from_ref(&user)).await?;
            history.push(user);
        }

        let cap =
            self.kernel.config().kernel.max_turn_iterations.min(u64::from(self.agent.manifest.limits.max_iterations))
                as u32;
        let mut trace = Vec::new();
        let mut usage = Usage::default();
        let finish = |reply: String, ended: TurnEnd, iterations: u32, trace: Vec<TraceEntry>, usage: Usage| {
            TurnResult { turn_id, session_id: self.session, reply, ended, iterations, trace, usage }
        };

        for iteration in 1..=cap {
            // Only lazy and stable offers depend on what the session has loaded.
            let loaded = match self.agent.manifest.tool_mode {
                crate::agent::ToolMode::All => Vec::new(),
                _ => sessions.loaded_tools(self.session).await?,
            };
            let offer = modes::offer(&self.kernel.tools(), self.agent, &loaded, self.req.scope());
            // The goal may have changed mid-turn (goal_update): read the agent again.
            let current = self.kernel.agents().get_by_id(self.agent.id).unwrap_or_else(|| self.agent.clone());
            let system = prompt::system_prompt(&current, offer.context_line.as_deref());
            let chat = ChatRequest {
                model: self.model,
                system: &system,
                messages: &history,
                tools: &offer.specs,
                max_tokens: self.kernel.config().kernel.max_reply_tokens as u32,
                cache_prefix: offer.mode == crate::agent::ToolMode::Stable,
            };
            (self.emit)(EventKind::ModelCall { iteration });
            let reply = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return Ok(finish(String::new(), TurnEnd::Cancelled, iteration, trace, usage)),
                reply = self.provider.chat(&chat) => reply?,
            };
            usage.input_tokens += reply.usage.input_tokens;
            usage.output_tokens += reply.usage.output_tokens;
            usage.cached_tokens += reply.usage.cached_tokens;
            let assistant = Message::Assistant { content: reply.content.clone(), tool_calls: reply.tool_calls.clone() };
            sessions.append(self.session, std::slice::from_ref(&assistant)).await?;
            history.push(assistant);

            if reply.tool_calls.is_empty() {
                let text = reply.content.unwrap_or_default();
                (self.emit)(EventKind::Reply { text: text.clone() });
                return Ok(finish(text, TurnEnd::Reply, iteration, trace, usage));
            }

            let offered = Arc::new(Offered { mode: offer.mode, names: offer.names });
            let (results, entries) = self.run_calls(&reply.tool_calls, offered).await;
            sessions.append(self.session, &results).await?;
            history.extend(results);
            trace.extend(entries);
            if self.cancel.is_cancelled() {
                return Ok(finish(String::new(), TurnEnd::Cancelled, iteration, trace, usage));
            }
        }
        let reply = format!(
            "The turn ended after {cap} model calls without a final answer (the iteration cap: [kernel] max_turn_iterations / limits.max_iterations)."
        );
        Ok(finish(reply, TurnEnd::IterationCap, cap, trace, usage))
    }

    /// Runs one response's tool calls through the pipeline: runs of non-exclusive calls
    /// concurrently, exclusive ones alone, results in the model's order.
    async fn run_calls(&self, calls: &[ToolCall], offered: Arc<Offered>) -> (Vec<Message>, Vec<TraceEntry>) {
        let mut ctx = CallContext::new(self.kernel.clone(), self.agent.clone(), self.req.caller.clone())
            .with_session(Some(self.session));
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

    async fn run_call(&self, ctx: CallContext, call: &ToolCall) -> (Message, TraceEntry) {
        (self.emit)(EventKind::ToolCallStarted {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        });
        let started = Instant::now();
        let result = self.kernel.call_tool(ctx, &call.name, call.arguments.clone()).await;
        let duration_us = started.elapsed().as_micros() as u64;
        let (content, outcome, artifact_id, is_error) = match result {
            Ok(out) => (result_text(&out.content), "ok".to_string(), out.artifact_id, false),
            Err(e) => (e.model_text(), e.kind.as_str().to_string(), None, true),
        };
        let summary: String = content.chars().take(SUMMARY_CHARS).collect();
        (self.emit)(EventKind::ToolCallFinished {
            call_id: call.id.clone(),
            name: call.name.clone(),
            outcome: outcome.clone(),
            summary: summary.clone(),
            duration_us,
        });
        let message = Message::Tool { call_id: call.id.clone(), name: call.name.clone(), content, is_error };
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
