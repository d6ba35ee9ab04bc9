//! LLM providers: one provider-neutral conversation model and a driver per wire protocol
//! (OpenAI-compatible chat completions, Anthropic Messages), spoken over `reqwest`.
//!
//! The drivers translate; [`Provider::chat`] owns what is common: the API key, timeouts,
//! retries with backoff on 429 and 5xx, streaming (each piece of the reply handed to the
//! caller as it arrives), a refusal for length told apart from other failures, and errors a
//! person can act on.
//!
//! # Design notes
//!
//! ## Layout
//!
//! `message.rs`: `Message`, `ToolCall`, `ToolSpec`, `ChatRequest`/`ChatReply`, `Delta`: one
//! provider-neutral model. `failure.rs`: `ChatError` and one attempt's `Failure` (retryable,
//! a refusal for length and the sizes it names). `reply.rs`: a reply put together from its
//! streamed pieces. `mod.rs`: `Provider::chat(req, on_delta)`, which owns the API key (read from the named environment variable at
//! call time), timeouts, retries with backoff on 429/5xx/dropped connections (honouring
//! `Retry-After`; never once a piece of the reply was handed out), streaming (`sse.rs` decodes the
//! event stream; each piece goes to `on_delta` as it arrives, or the whole reply at the end when
//! `stream = false` or the server answers in one piece), `ChatError::ContextExceeded` for a
//! refusal for length (with the window it names: OpenAI/vLLM, Anthropic, llama.cpp wordings), and
//! errors a person can act on. `openai.rs` and `anthropic.rs` only translate to and from the wire
//! (requests, whole replies, stream events; an OpenAI assistant message of tool calls alone
//! carries `"content": ""`, never `null`, which strict servers such as llama.cpp's Python server
//! refuse — issue 44, and the fake provider refuses it too; an OpenAI stream is whole only with a
//! finish reason, since `[DONE]` also closes the streams such a server cuts under load); a tool
//! message's image (`ToolImage`, loaded into `ChatRequest::images`) becomes an image block inside
//! Anthropic's `tool_result` and, for OpenAI, one user message of `image_url` parts after the run
//! of tool messages; an image not sent becomes `image_note` text.
//!
//! ## Streaming
//!
//! Both drivers ask for a stream (`stream: true`; OpenAI with `stream_options.include_usage` for
//! the last chunk's usage) unless `[providers.NAME] stream = false`. OpenAI chunks carry text and
//! tool-call argument pieces by index; Anthropic's events carry text and `input_json_delta`
//! pieces by content block. A server that answers with JSON anyway is read whole. The turn's
//! events are the same either way: the pieces as they arrive, or one piece per text and call at
//! the end. A2A streaming carries text pieces as `artifactUpdate`s of the reply artifact
//! (`append: false` for the first, `true` after, `lastChunk: false`) before the whole reply
//! (`append: false`, `lastChunk: true`), which replaces them. The dashboard's chat (`live.js`)
//! shows the pieces in a bubble of their own, set as text; the finished message replaces it when
//! the page reloads; it follows only its own session's events (a new chat's session is the one
//! whose `turn_started` carries the typed message). A stream that breaks (the connection drops,
//! the body ends before `[DONE]`/`message_stop` and without a finish reason, an `error` event)
//! is retried like a failed call; if pieces had gone out, a `reply_reset` event first takes them
//! back (the chat empties its bubble, A2A starts the artifact over with `append: false`).
//! Over OpenAI's protocol only a finish reason completes a stream: `[DONE]` alone closes cut
//! streams too (llama-cpp-python's server cuts a running stream so when another request comes).
//! A stream that brought nothing at all (that server's answer to a prompt over its window) is
//! asked once more without streaming, which brings the real status. `finish_reason: "length"`
//! (Anthropic: `max_tokens`) marks the reply `truncated`: kept, with a note at its end for the
//! person and, stored, for the model. `timeout_secs` bounds the whole call, retries and backoff
//! included (no attempt starts past it, one waiting for its answer is cut at it), while a reply
//! that keeps streaming is never cut (each piece must come within `timeout_secs`). 429, 502,
//! 503, 504 and dropped connections are retried; a 500 only until it answers the same twice, and
//! not at all when it says the request breaks the server's schema (`validation error`). A
//! transport error names its root cause (`Connection refused`). Both the daemon and the fake provider set `TCP_NODELAY` on accepted
//! connections: without it each streamed event waited for the client's delayed ACK (36.6 ms p50
//! first token before, 125 µs after; `docs/BENCHMARKS.md`).
//!
//! ## Decisions
//!
//! - **Our own wire code over `reqwest`, not a client crate.** No well-kept crate covered both
//!   protocols with tool calls, custom base URLs and Anthropic `cache_control` without pulling in
//!   far more than the two small translators in `llm/` (about 250 lines with their tests).
//! - **Provider errors:** 401/403 → `Unavailable` (the key), 429 → `ResourceExhausted`, others →
//!   `Failed`, timeouts → `Timeout`, each naming the provider and quoting its message. 429, 5xx
//!   and connection failures are retried `max_retries` times (default 3) after `Retry-After` or
//!   0.5 s doubling (at most 30 s).

mod anthropic;
pub(crate) mod config;
mod embeddings;
mod failure;
mod message;
mod openai;
mod probe;
mod registry;
mod reply;
pub mod setup;
pub mod sse;

pub use config::{ModelConfig, ProviderConfig, ProviderKind};
pub use failure::ChatError;
pub use message::{
    ChatReply, ChatRequest, Delta, LoadedImage, LoadedImages, Message, OnDelta, ToolCall, ToolImage, ToolSpec, Usage,
    image_note,
};
pub use probe::ProviderTest;
pub use registry::{ProviderSet, Providers};
pub use setup::{ProviderInfo, ProviderSaved};

use failure::{Failure, StreamFault, context_refusal, is_schema_refusal, provider_message};
use reply::{ReplyBuilder, deliver_whole, parse_arguments};

use std::time::Duration;

use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};

/// A configured provider, ready to call.
pub struct Provider {
    name: String,
    config: ProviderConfig,
    http: reqwest::Client,
    /// The last model call's failure (when, what), cleared by the next success: what an
    /// operator sees of a provider that is down.
    last_error: std::sync::Mutex<Option<(String, String)>>,
    /// Places for calls in flight (`max_in_flight`), and how many calls wait for one.
    slots: Option<tokio::sync::Semaphore>,
    waiting: std::sync::atomic::AtomicUsize,
}

impl Provider {
    pub fn new(name: &str, config: ProviderConfig) -> Result<Provider> {
        let http = crate::net::http_client()
            .read_timeout(Duration::from_secs(config.timeout_secs))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| Error::failed(format!("cannot build an HTTP client for provider `{name}`: {e}")))?;
        let slots = config.max_in_flight.map(|n| tokio::sync::Semaphore::new(n as usize));
        Ok(Provider {
            name: name.to_string(),
            config,
            http,
            last_error: Default::default(),
            slots,
            waiting: Default::default(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn kind(&self) -> ProviderKind {
        self.config.kind
    }

    /// Its `[providers.NAME]` section as read.
    pub fn settings(&self) -> &ProviderConfig {
        &self.config
    }

    /// The provider's last failed call (RFC 3339 time, message), if the calls since all failed.
    pub fn last_error(&self) -> Option<(String, String)> {
        self.last_error.lock().expect("last error lock").clone()
    }

    /// Where its requests go.
    pub fn base_url(&self) -> &str {
        let default = match self.config.kind {
            ProviderKind::Openai => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com/v1",
        };
        self.config.base_url.as_deref().unwrap_or(default).trim_end_matches('/')
    }

    /// The variable the API key is read from; `None` for a provider that needs no key.
    pub fn api_key_env(&self) -> Option<&str> {
        let default = match self.config.kind {
            ProviderKind::Openai => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        };
        match self.config.api_key_env.as_deref() {
            Some("") => None,
            Some(var) => Some(var),
            None => Some(default),
        }
    }

    /// Whether the key this provider needs is set (for the dashboard's status view).
    pub fn has_key(&self) -> bool {
        self.api_key().is_ok()
    }

    /// Refuses, with what to set, when the key this provider needs is missing: checked before
    /// a turn stores anything.
    pub fn ensure_key(&self) -> Result<()> {
        self.api_key().map(|_| ())
    }

    fn api_key(&self) -> Result<Option<String>> {
        let Some(var) = self.api_key_env() else { return Ok(None) };
        match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => Ok(Some(key.trim().to_string())),
            _ => Err(Error::unavailable(format!(
                "provider `{}` has no API key: set {var} in the daemon's environment (or `api_key_env = \"\"` in [providers.{}] for a server that needs none)",
                self.name, self.name
            ))),
        }
    }

    /// How many model calls wait for a place (`max_in_flight`), and how many places there are.
    pub fn queue(&self) -> Option<(usize, u64)> {
        let places = self.config.max_in_flight?;
        Some((self.waiting.load(std::sync::atomic::Ordering::Relaxed), places))
    }

    /// A place among the provider's calls in flight, held until the attempt's answer is read;
    /// when all are taken the caller is told (`Delta::Queued`) and waits.
    async fn place(&self, on_delta: OnDelta<'_>) -> Option<tokio::sync::SemaphorePermit<'_>> {
        let slots = self.slots.as_ref()?;
        if let Ok(place) = slots.try_acquire() {
            return Some(place);
        }
        on_delta(Delta::Queued);
        // Counted while waiting, also when the wait is given up (a cancelled turn).
        struct Waiting<'a>(&'a std::sync::atomic::AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
        self.waiting.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let _waiting = Waiting(&self.waiting);
        // The semaphore is never closed.
        slots.acquire().await.ok()
    }

    /// Whether replies are asked for as a stream.
    pub fn streams(&self) -> bool {
        self.config.stream
    }

    /// Whether `model` is sent images ([`ProviderConfig::accepts_images`]).
    pub fn accepts_images(&self, model: &str) -> bool {
        self.config.accepts_images(model)
    }

    /// What config.toml says of `model`.
    /// The models `[providers.NAME.models.MODEL]` describes, by name: the editor's choices
    /// (any other name the provider serves works too).
    pub fn configured_models(&self) -> impl Iterator<Item = &str> {
        self.config.models.keys().map(String::as_str)
    }

    pub fn model_config(&self, model: &str) -> Option<&ModelConfig> {
        self.config.models.get(model)
    }

    /// One model call, retried with backoff on 429, 5xx and connection failures. Each piece
    /// of the reply goes to `on_delta` as it arrives (all of it at the end when the provider
    /// does not stream). A stream that breaks is retried like a failed call; when pieces had
    /// gone out, `Delta::Reset` first tells the caller to take them back.
    pub async fn chat(&self, req: &ChatRequest<'_>, on_delta: OnDelta<'_>) -> Result<ChatReply, ChatError> {
        let reply = self.chat_with_retries(req, on_delta).await;
        *self.last_error.lock().expect("last error lock") = reply.as_ref().err().map(|e| {
            let (ChatError::ContextExceeded { error, .. } | ChatError::GaveUp(error) | ChatError::Other(error)) = e;
            (crate::db::now(), error.message.clone())
        });
        reply
    }

    async fn chat_with_retries(&self, req: &ChatRequest<'_>, on_delta: OnDelta<'_>) -> Result<ChatReply, ChatError> {
        let key = self.api_key()?;
        let mut stream = self.config.stream;
        let url = match self.config.kind {
            ProviderKind::Openai => format!("{}/chat/completions", self.base_url()),
            ProviderKind::Anthropic => format!("{}/messages", self.base_url()),
        };
        let body_for = |stream: bool| match self.config.kind {
            ProviderKind::Openai => openai::request_body(req, stream),
            ProviderKind::Anthropic => anthropic::request_body(req, stream),
        };
        let mut body = body_for(stream);
        // `timeout_secs` bounds the whole call, retries and backoff included, from when it
        // first has a place (`max_in_flight`): an attempt waiting for its answer is cut at the
        // deadline and none starts after it. A reply that streams steadily runs on (each
        // piece must come within `timeout_secs`).
        let mut deadline = None;
        let mut attempt = 0;
        let mut shown = false;
        // The last refusal's status and body: the same server error twice is not a passing one.
        let mut last_refusal: Option<(u16, String)> = None;
        loop {
            let mut builder = self.http.post(&url).json(&body);
            builder = match (self.config.kind, &key) {
                (ProviderKind::Openai, Some(key)) => builder.bearer_auth(key),
                (ProviderKind::Anthropic, Some(key)) => builder.header("x-api-key", key),
                (_, None) => builder,
            };
            if self.config.kind == ProviderKind::Anthropic {
                builder = builder.header("anthropic-version", anthropic::API_VERSION);
            }
            let outcome = {
                let _place = self.place(on_delta).await;
                let deadline = *deadline
                    .get_or_insert_with(|| tokio::time::Instant::now() + Duration::from_secs(self.config.timeout_secs));
                match tokio::time::timeout_at(deadline, builder.send()).await {
                    // Out of time: the turn's fallbacks may take over (a frozen server).
                    Err(_) => return Err(ChatError::GaveUp(self.out_of_time(attempt + 1))),
                    Ok(Ok(res)) => match self.accepted(res).await {
                        Ok(res) => self.read_reply(res, on_delta, &mut shown).await,
                        Err(failure) => Err(failure),
                    },
                    Ok(Err(e)) => Err(Failure::retry(self.transport_error(e), None)),
                }
            };
            let failure = match outcome {
                Ok(reply) => return Ok(reply),
                Err(failure) => failure,
            };
            if let Some(limit) = failure.context {
                return Err(ChatError::ContextExceeded { limit, counted: failure.counted, error: failure.error });
            }
            if failure.empty && stream {
                // Some servers (llama.cpp's Python server) answer a stream they cannot serve,
                // a prompt over the window among them, with 200 and nothing: asked once
                // without streaming, they say why.
                tracing::info!(provider = %self.name, "an empty stream; asking again without streaming");
                stream = false;
                body = body_for(false);
                continue;
            }
            let Failure { error, retryable, retry_after, refusal, .. } = failure;
            if !retryable {
                return Err(ChatError::Other(error));
            }
            // A 500 only: 502, 503 and 429 say themselves that they pass.
            let refusal = refusal.filter(|(status, _)| *status == 500);
            if refusal.is_some() && refusal == last_refusal {
                let message = format!("{} (the same answer twice: not retried further)", error.message);
                return Err(ChatError::Other(Error::new(error.kind, message)));
            }
            last_refusal = refusal;
            if attempt >= self.config.max_retries {
                return Err(ChatError::GaveUp(error));
            }
            let backoff = crate::net::retry::backoff(attempt, retry_after);
            if deadline.is_some_and(|d| tokio::time::Instant::now() + backoff >= d) {
                let message = format!("{}; {}", error.message, self.out_of_time(attempt + 1).message);
                return Err(ChatError::GaveUp(Error::new(ErrorKind::Timeout, message)));
            }
            if shown {
                // What was shown is taken back; the next attempt streams it anew.
                on_delta(Delta::Reset);
                shown = false;
            }
            tracing::warn!(provider = %self.name, attempt, error = %error.message, ?backoff, "retrying model call");
            tokio::time::sleep(backoff).await;
            attempt += 1;
        }
    }

    fn out_of_time(&self, attempts: u64) -> Error {
        Error::timeout(format!(
            "provider `{}` did not answer within timeout_secs ({} s, {attempts} attempt{})",
            self.name,
            self.config.timeout_secs,
            if attempts == 1 { "" } else { "s" }
        ))
    }

    /// The response if its status is a success; otherwise the failure its status and body say.
    async fn accepted(&self, res: reqwest::Response) -> Result<reqwest::Response, Failure> {
        let status = res.status();
        if status.is_success() {
            return Ok(res);
        }
        let retry_after = crate::net::retry::retry_after(res.headers());
        let text = res.text().await.map_err(|e| Failure::retry(self.transport_error(e), None))?;
        let detail = provider_message(&text);
        if matches!(status.as_u16(), 400 | 413 | 422 | 500)
            && let Some(refusal) = context_refusal(&text)
        {
            let error = Error::new(
                ErrorKind::TooLarge,
                format!("provider `{}` refused the request as too long for the model ({status}): {detail}", self.name),
            );
            return Err(Failure { context: Some(refusal.window), counted: refusal.counted, ..Failure::fatal(error) });
        }
        let error = match status.as_u16() {
            401 | 403 => Error::new(
                ErrorKind::Unavailable,
                format!("provider `{}` refused the API key ({status}): {detail}", self.name),
            ),
            404 => Error::failed(format!(
                "provider `{}` answered 404 at {}: check base_url and the model name ({detail})",
                self.name,
                self.base_url()
            )),
            429 => Error::new(
                ErrorKind::ResourceExhausted,
                format!("provider `{}` is rate-limiting ({status}): {detail}", self.name),
            ),
            _ => Error::failed(format!("provider `{}` answered {status}: {detail}", self.name)),
        };
        if crate::net::retry::is_transient(status) && !is_schema_refusal(status.as_u16(), &text) {
            Err(Failure { refusal: Some((status.as_u16(), text)), ..Failure::retry(error, retry_after) })
        } else {
            Err(Failure::fatal(error))
        }
    }

    /// Reads an accepted response: an event stream piece by piece, or one JSON body (a
    /// provider asked not to stream, or one that does not).
    async fn read_reply(
        &self,
        mut res: reqwest::Response,
        on_delta: OnDelta<'_>,
        shown: &mut bool,
    ) -> Result<ChatReply, Failure> {
        let is_stream = res
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_stream {
            let text = res.text().await.map_err(|e| Failure::retry(self.transport_error(e), None))?;
            let value: Value = serde_json::from_str(&text).map_err(|e| {
                Failure::fatal(Error::failed(format!("provider `{}` sent a body that is not JSON: {e}", self.name)))
            })?;
            let reply = match self.config.kind {
                ProviderKind::Openai => openai::parse_reply(&value),
                ProviderKind::Anthropic => anthropic::parse_reply(&value),
            }
            .map_err(|e| self.unexpected(e))?;
            *shown = true;
            deliver_whole(&reply, on_delta);
            return Ok(reply);
        }
        let mut decoder = sse::SseDecoder::default();
        let mut reply = ReplyBuilder::default();
        let mut anthropic_blocks = anthropic::Blocks::default();
        let mut ended = false;
        while !reply.done && !ended {
            let events = match res.chunk().await {
                Ok(Some(chunk)) => decoder.feed(&chunk),
                // The body ended: a last event without its blank line still counts.
                Ok(None) => {
                    ended = true;
                    decoder.feed(b"\n\n")
                }
                Err(e) => return Err(Failure::retry(self.transport_error(e), None)),
            };
            for event in events {
                let step = match self.config.kind {
                    ProviderKind::Openai => openai::stream_event(&event, &mut reply, on_delta),
                    ProviderKind::Anthropic => {
                        anthropic::stream_event(&event, &mut anthropic_blocks, &mut reply, on_delta)
                    }
                };
                *shown |= reply.shown;
                match step {
                    Ok(()) => {}
                    Err(StreamFault::Provider(message)) => {
                        let error =
                            Error::failed(format!("provider `{}` failed while streaming: {message}", self.name));
                        return Err(Failure::retry(error, None));
                    }
                    Err(StreamFault::Shape(e)) => return Err(self.unexpected(e)),
                }
            }
        }
        // OpenAI's `[DONE]` closes a cut stream too (llama.cpp's server ends the streams it
        // cuts under load so): only a finish reason says the reply is whole there.
        let complete = match self.config.kind {
            ProviderKind::Openai => reply.finished,
            ProviderKind::Anthropic => reply.done || reply.finished,
        };
        if !complete {
            if reply.is_empty() {
                let message = format!("provider `{}` answered with an empty stream", self.name);
                return Err(Failure { empty: true, ..Failure::retry(Error::failed(message), None) });
            }
            let message = format!("provider `{}`'s stream ended before the reply was complete", self.name);
            return Err(Failure::retry(Error::failed(message), None));
        }
        Ok(reply.finish())
    }

    fn unexpected(&self, e: String) -> Failure {
        Failure::fatal(Error::failed(format!("provider `{}` answered in an unexpected shape: {e}", self.name)))
    }

    fn transport_error(&self, e: reqwest::Error) -> Error {
        if e.is_timeout() {
            Error::new(
                ErrorKind::Timeout,
                format!("provider `{}` sent nothing for {} s (timeout_secs)", self.name, self.config.timeout_secs),
            )
        } else {
            Error::failed(format!(
                "cannot reach provider `{}` at {}: {}",
                self.name,
                self.base_url(),
                crate::net::causes(&e)
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::failure::{LengthRefusal, context_refusal};
    use super::{Message, ToolImage};

    #[test]
    fn tool_messages_stored_before_images_load_and_those_without_one_are_stored_as_before() {
        let old = r#"{"role":"tool","call_id":"a","name":"t","content":"x","is_error":false}"#;
        let message: Message = serde_json::from_str(old).unwrap();
        assert!(matches!(&message, Message::Tool { image: None, .. }));
        assert_eq!(serde_json::to_string(&message).unwrap(), old);
        let image = Some(ToolImage { path: "s/a.png".into(), media_type: "image/png".into() });
        let with = Message::Tool { call_id: "a".into(), name: "t".into(), content: "x".into(), is_error: false, image };
        let stored = serde_json::to_string(&with).unwrap();
        assert!(stored.ends_with(r#""image":{"path":"s/a.png","media_type":"image/png"}}"#), "{stored}");
        assert_eq!(serde_json::from_str::<Message>(&stored).unwrap(), with);
    }

    #[test]
    fn a_500_that_says_the_request_breaks_the_schema_is_told_apart() {
        let pydantic = r#"{"error":{"message":"7 validation errors:\n {'msg': 'Input should be a valid string'}"}}"#;
        assert!(super::is_schema_refusal(500, pydantic));
        assert!(!super::is_schema_refusal(503, pydantic), "503 says itself it passes");
        assert!(!super::is_schema_refusal(500, r#"{"error":{"message":"out of memory"}}"#));
    }

    #[test]
    fn refusals_for_length_are_told_apart_with_the_window_they_name() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        let refusal = |window, counted| Some(LengthRefusal { window, counted });
        assert_eq!(context_refusal(openai), refusal(Some(4096), Some(5000)));
        let parted = r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 9100 tokens (8100 in the messages, 1000 in the completion)."}}"#;
        assert_eq!(context_refusal(parted), refusal(Some(8192), Some(8100)));
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210443 tokens > 200000 maximum"}}"#;
        assert_eq!(context_refusal(anthropic), refusal(Some(200000), Some(210443)));
        let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#;
        assert_eq!(context_refusal(llama), refusal(Some(8192), Some(9000)));
        let python = r#"{"error":{"message":"Requested tokens (4158) exceed context window of 2048","type":"internal_server_error"}}"#;
        assert_eq!(context_refusal(python), refusal(Some(2048), Some(4158)));
        assert_eq!(context_refusal(r#"{"error":{"message":"context window exceeded"}}"#), refusal(None, None));
        assert_eq!(context_refusal(r#"{"error":{"message":"invalid model"}}"#), None);
    }
}
