//! The loop's tool side: running a reply's tool calls through the pipeline in the model's
//! order (only read-only ones side by side), and the guard against the same call made again
//! and again.

use std::sync::Arc;
use std::time::Instant;

use futures_util::future::join_all;
use serde_json::Value;

use super::images;
use super::{EventKind, Loop, TraceEntry};
use crate::approval::{Approvals, Parked};
use crate::llm::{Message, ToolCall};
use crate::tool::pipeline::result_text;
use crate::tool::{CallContext, Offered};
/// How much of a result the turn's trace keeps.
const SUMMARY_CHARS: usize = 200;

/// Counts the same tool call, with the same arguments and the same result, made again and
/// again ([`crate::config::KernelConfig::max_repeated_calls`]). A result that changes (a
/// process's output growing while it is polled) is progress, not a loop.
#[derive(Default)]
pub(super) struct Repeats {
    /// The last call's name, arguments and a hash of its result.
    last: Option<(String, Value, u64)>,
    times: u64,
}

impl Repeats {
    /// Counts `calls` with their `results` (in the same order); the call made `limit` times
    /// in a row, if one was.
    pub(super) fn count<'c>(&mut self, calls: &'c [ToolCall], results: &[Message], limit: u64) -> Option<&'c ToolCall> {
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

impl<E: Fn(EventKind) + Sync> Loop<'_, E> {
    /// Runs one response's tool calls through the pipeline in the order the model gave them:
    /// a call that may change something runs alone, after every call before it has finished,
    /// since a model writes a batch as steps (an entity added, then a relation to it). Only a
    /// run of read-only calls goes concurrently (reads see the same state in any order), and
    /// an exclusive tool always runs alone. Results come back in the model's order.
    pub(super) async fn run_calls(&self, calls: &[ToolCall], offered: Arc<Offered>) -> (Vec<Message>, Vec<TraceEntry>) {
        let mut ctx = CallContext::new(self.agent.clone(), self.req.caller.clone()).with_session(Some(self.session));
        ctx.turn = Some(self.turn_id);
        ctx.headless = self.req.headless;
        ctx.channel = self.req.channel.clone();
        ctx.cancel = self.cancel.clone();
        ctx.offered = Some(offered);
        ctx.provenance = Some(self.provenance.clone());
        ctx.parking = self.parking.clone();
        ctx.depth = self.req.depth;
        let mut chain = self.req.chain.clone();
        chain.push(self.agent.id);
        ctx.chain = chain.into();

        let mut outcomes = Vec::with_capacity(calls.len());
        let mut batch: Vec<&ToolCall> = Vec::new();
        for call in calls {
            if self.runs_beside_others(&ctx, call) {
                batch.push(call);
            } else {
                outcomes.extend(self.run_batch(&ctx, batch.drain(..)).await);
                outcomes.extend(self.run_batch(&ctx, [call]).await);
            }
        }
        outcomes.extend(self.run_batch(&ctx, batch).await);
        self.note_provenance().await;
        outcomes.into_iter().unzip()
    }

    /// Runs `calls` side by side, unless a call before them parked the turn: then none runs,
    /// since the model wrote them as steps after it.
    async fn run_batch<'c>(
        &self,
        ctx: &CallContext,
        calls: impl IntoIterator<Item = &'c ToolCall>,
    ) -> Vec<(Message, TraceEntry)> {
        match self.parking.as_ref().and_then(|p| p.parked()) {
            Some(parked) => calls.into_iter().map(|call| not_run(call, &parked)).collect(),
            None => join_all(calls.into_iter().map(|c| self.run_call(ctx.clone(), c))).await,
        }
    }

    /// Stores the session's provenance when the turn added to it, and tells the chat.
    pub(super) async fn note_provenance(&self) {
        let Some(labels) = self.provenance.take_unsaved() else { return };
        if let Err(e) = self.kernel.service::<Approvals>().save_session_labels(self.session, &labels).await {
            // Tried again after the next calls: the next turn must not start untainted.
            self.provenance.mark_unsaved();
            tracing::warn!(session = %self.session, error = %e, "storing a session's provenance failed");
        }
        (self.emit)(EventKind::Tainted { labels });
    }

    /// Whether `call` may run at the same time as its read-only neighbours: it reads only, is
    /// not exclusive, and no approval rule may hold it (a held call parks a headless turn, and
    /// the calls after it must not have run). `run_tool` is judged by the tool it runs. An
    /// unknown name runs alone (the pipeline refuses it).
    fn runs_beside_others(&self, ctx: &CallContext, call: &ToolCall) -> bool {
        let name = match call.name.as_str() {
            crate::tool::meta::RUN_TOOL => call.arguments.get("name").and_then(Value::as_str).unwrap_or_default(),
            name => name,
        };
        let reads_only =
            |name: &str| self.kernel.tools().get(name).is_some_and(|(def, _)| def.read_only && !def.exclusive);
        let approvals = self.kernel.service::<Approvals>();
        reads_only(&call.name)
            && reads_only(name)
            && !approvals.may_park(ctx, &call.name)
            && !approvals.may_park(ctx, name)
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

/// The result of a call left unrun because one before it parked the turn.
fn not_run(call: &ToolCall, parked: &Parked) -> (Message, TraceEntry) {
    let content = format!(
        "not run: `{}` before it waits for a person's approval (approval {}), and the turn is parked there",
        parked.tool, parked.approval
    );
    let message = Message::Tool {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: content.clone(),
        is_error: true,
        image: None,
    };
    let entry = TraceEntry {
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
        outcome: "not_run".into(),
        summary: content,
        duration_us: 0,
        artifact_id: None,
    };
    (message, entry)
}
