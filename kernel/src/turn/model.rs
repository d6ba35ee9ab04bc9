//! The loop's model side: the route of providers and fallbacks, the window a call may fill,
//! fitting the history to it (summaries), one model call with its usage, and its record.

use uuid::Uuid;

use super::context::{self, Entry, Plan, View};
use super::images;
use super::{EventKind, FellBack, Loop, store};
use crate::error::{Error, Result};
use crate::llm::{ChatError, ChatRequest, Delta, LoadedImages, Message, Provider, ToolSpec, Usage};
use crate::workspace::Workspaces;
/// A model's window as one call may use it: the reply's share of it and how the model
/// counts tokens against our estimate ([`context::Calibration`]).
pub(super) struct Room {
    pub(super) window: u64,
    pub(super) reserve: u64,
    pub(super) ratio: Option<f64>,
}

/// What every model call of one iteration shares.
pub(super) struct Call<'a> {
    pub(super) turn_id: Uuid,
    pub(super) iteration: u32,
    pub(super) system: &'a str,
    pub(super) tools: &'a [ToolSpec],
    /// The place of this turn's first message: it and what follows are never compacted.
    pub(super) turn_start: i64,
    pub(super) cache_prefix: bool,
    /// Auto-recall's memories for this turn, sent just before its first message.
    pub(super) recall: Option<&'a Message>,
}

fn add_usage(total: &mut Usage, more: &Usage) {
    total.input_tokens += more.input_tokens;
    total.output_tokens += more.output_tokens;
    total.cached_tokens += more.cached_tokens;
    total.estimated |= more.estimated;
}

/// The note a reply cut at its token limit ends with, for the person and, in the history,
/// for the model.
pub(super) fn truncation_note(max_tokens: u64) -> String {
    format!("\n\n[cut off: this reply reached its limit of {max_tokens} tokens]")
}

impl<E: Fn(EventKind) + Sync> Loop<'_, E> {
    /// The provider the turn uses now.
    fn provider(&self) -> &Provider {
        &self.route[self.at.load(std::sync::atomic::Ordering::Relaxed)].0
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
    pub(super) async fn call_model(
        &self,
        call: &Call<'_>,
        history: &[Entry],
        view: &mut View,
        usage: &mut Usage,
    ) -> Result<(crate::llm::ChatReply, u64)> {
        const RETRIES_FOR_LENGTH: u32 = 3;
        // What the model has written of this reply so far, kept for a failure's record: a
        // person watched it stream, and it must not vanish when the provider then fails.
        let written = std::sync::Mutex::new(String::new());
        let on_delta = |delta: Delta<'_>| {
            match delta {
                Delta::Text(text) => written.lock().unwrap_or_else(|e| e.into_inner()).push_str(text),
                Delta::Reset => written.lock().unwrap_or_else(|e| e.into_inner()).clear(),
                _ => {}
            }
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
                images::load(self.kernel.service::<Workspaces>(), self.agent.id, &messages).await
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
            written.lock().unwrap_or_else(|e| e.into_inner()).clear();
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
                    written.lock().unwrap_or_else(|e| e.into_inner()).clear();
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
                Err(e) => {
                    let written = written.into_inner().unwrap_or_else(|e| e.into_inner());
                    return Err(with_written(e.into(), &written));
                }
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
}

/// The most of a failed reply's text its failure record keeps.
const WRITTEN_KEPT_CHARS: usize = 8000;

/// `error` with what the model had written of its reply before it (`written`), which the
/// failure's record keeps and the chat shows in its place.
fn with_written(mut error: Error, written: &str) -> Error {
    if written.trim().is_empty() {
        return error;
    }
    let kept: String = written.chars().take(WRITTEN_KEPT_CHARS).collect();
    let cut = if kept.len() < written.len() { " …" } else { "" };
    error.message = format!("{}\n\nWhat the model had written before that:\n{kept}{cut}", error.message);
    error
}
