//! The OpenAI-compatible endpoint: `POST /v1/chat/completions`, `GET /v1/models` and
//! `GET /v1/models/{model}`, so OpenAI client libraries and chat front ends talk to the agents
//! `[openai] expose` names. Which agents are models and which session a conversation
//! continues is the kernel's (`kennel_kernel::chat_api`); this module is the wire format.
//!
//! - **The key** is an API token (or the CLI's), as `Authorization: Bearer`; errors are
//!   OpenAI's error object (`{"error": {"message", "type", "param", "code"}}`) with the status
//!   the OpenAI API gives the same failure, so clients raise their usual exceptions.
//! - **A turn per request.** The conversation's last message is a headless turn of the agent
//!   (nobody there to answer `ask_user`; held calls park). The agent's own tools run inside
//!   the turn and are not returned as `tool_calls`; a request's `tools` are not offered to it.
//!   Sampling parameters (`temperature`, `max_tokens`, …) are the agent type's, not the
//!   request's. The answer carries `X-Kennel-Session`, the session's id.
//! - **Streaming** answers `chat.completion.chunk` events: the role first, then the reply's
//!   text as the provider streams it (text the model writes before calling tools too, set
//!   apart by a blank line), `finish_reason`, `usage` when `stream_options.include_usage`,
//!   then `[DONE]`. The response starts with the turn's first text (or its end), so a turn
//!   that fails before writing (no provider, a budget spent) is an ordinary HTTP error; a
//!   failure after that is an `error` event. A client that goes away cancels its turn.

use std::convert::Infallible;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use futures_util::Stream;
use kennel_kernel::chat_api::{self, Role, Said};
use kennel_kernel::tool::Caller;
use kennel_kernel::turn::{AgentEvent, EventKind, TurnRequest, TurnResult};
use kennel_kernel::{Error, ErrorKind, Kernel};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::auth::identify;

/// The header naming the session of a conversation (a session id or key); the answer carries
/// the session's id in it.
const SESSION_HEADER: &str = "x-kennel-session";

/// Largest request body: a whole conversation, resent each time.
const BODY_LIMIT: usize = 4 * 1024 * 1024;

pub fn router() -> Router<Kernel> {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/models", get(list_models))
        .route("/v1/models/{model}", get(get_model))
        .route("/v1/{*rest}", any(not_served))
}

/// Any other OpenAI API path (`/v1/embeddings`, `/v1/responses`, …), answered in OpenAI's
/// shape so a client says what is missing rather than choking on an HTML page.
async fn not_served(uri: axum::http::Uri) -> OpenAiError {
    let message = format!(
        "{} is not served here: Kennel serves /v1/chat/completions and /v1/models of its exposed agents",
        uri.path()
    );
    OpenAiError { status: StatusCode::NOT_FOUND, body: error_body(&message, "invalid_request_error", None, None) }
}

/// An error in OpenAI's shape.
pub struct OpenAiError {
    status: StatusCode,
    body: Value,
}

impl OpenAiError {
    fn unauthorized(message: &str) -> OpenAiError {
        OpenAiError {
            status: StatusCode::UNAUTHORIZED,
            body: error_body(message, "invalid_request_error", None, Some("invalid_api_key")),
        }
    }
}

fn error_body(message: &str, kind: &str, param: Option<&str>, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
}

impl From<Error> for OpenAiError {
    /// The status and `type` the OpenAI API answers the same failure with.
    fn from(e: Error) -> OpenAiError {
        let param = e.fields.first().map(|f| f.field.as_str());
        let message = match e.fields.first() {
            Some(field) => format!("{}: {}", field.field, field.message),
            None => e.message.clone(),
        };
        let (status, kind, code) = match e.kind {
            ErrorKind::InvalidArguments => (StatusCode::BAD_REQUEST, "invalid_request_error", None),
            ErrorKind::NotFound => (StatusCode::NOT_FOUND, "invalid_request_error", None),
            ErrorKind::TooLarge => (StatusCode::BAD_REQUEST, "invalid_request_error", Some("context_length_exceeded")),
            ErrorKind::Forbidden => (StatusCode::FORBIDDEN, "permission_error", None),
            ErrorKind::Conflict => (StatusCode::CONFLICT, "invalid_request_error", None),
            ErrorKind::ResourceExhausted => {
                (StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", Some("rate_limit_exceeded"))
            }
            ErrorKind::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "server_error", None),
            ErrorKind::Failed => (StatusCode::BAD_GATEWAY, "server_error", None),
            ErrorKind::Timeout => (StatusCode::GATEWAY_TIMEOUT, "server_error", Some("timeout")),
            ErrorKind::Internal => (StatusCode::INTERNAL_SERVER_ERROR, "server_error", None),
        };
        OpenAiError { status, body: error_body(&message, kind, param, code) }
    }
}

impl OpenAiError {
    /// The request names no model served here.
    fn model_not_found(e: Error) -> OpenAiError {
        OpenAiError {
            status: StatusCode::NOT_FOUND,
            body: error_body(&e.message, "invalid_request_error", Some("model"), Some("model_not_found")),
        }
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert("www-authenticate", HeaderValue::from_static("Bearer"));
        }
        response
    }
}

type OpenAiResult<T> = Result<T, OpenAiError>;

/// The answer to a turn that failed once begun: its message is in the session and its tools
/// may have run, so it says `x-should-retry: false`, which the OpenAI SDKs read before their
/// own retries (of a 429 or a 5xx) would send the message again.
fn turn_failed(e: Error) -> Response {
    let mut response = OpenAiError::from(e).into_response();
    response.headers_mut().insert("x-should-retry", HeaderValue::from_static("false"));
    response
}

fn caller_of(kernel: &Kernel, headers: &HeaderMap) -> OpenAiResult<Caller> {
    identify(kernel, headers).map(|(caller, _)| caller).map_err(OpenAiError::unauthorized)
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn model_object(name: &str, created_at: &str) -> Value {
    let created = chrono::DateTime::parse_from_rfc3339(created_at).map_or(0, |t| t.timestamp());
    json!({"id": name, "object": "model", "created": created, "owned_by": "kennel"})
}

async fn list_models(State(kernel): State<Kernel>, headers: HeaderMap) -> OpenAiResult<Json<Value>> {
    caller_of(&kernel, &headers)?;
    let exposed = chat_api::exposed(&kernel.config().openai, kernel.agents());
    let data: Vec<Value> = exposed.iter().map(|a| model_object(&a.name, &a.created_at)).collect();
    Ok(Json(json!({"object": "list", "data": data})))
}

async fn get_model(
    State(kernel): State<Kernel>,
    headers: HeaderMap,
    Path(model): Path<String>,
) -> OpenAiResult<Json<Value>> {
    caller_of(&kernel, &headers)?;
    let agent =
        chat_api::model(&kernel.config().openai, kernel.agents(), &model).map_err(OpenAiError::model_not_found)?;
    Ok(Json(model_object(&agent.name, &agent.created_at)))
}

/// The request, as far as Kennel reads it; other fields are accepted and not used.
#[derive(Deserialize)]
struct ChatRequest {
    model: String,
    messages: Vec<ChatMessage>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    n: Option<u32>,
}

#[derive(Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: Option<bool>,
}

#[derive(Deserialize)]
struct ChatMessage {
    role: String,
    #[serde(default)]
    content: Option<Content>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Deserialize)]
struct Part {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

impl ChatMessage {
    fn said(self, index: usize) -> Result<Said, Error> {
        let field = format!("messages[{index}]");
        let role = match self.role.as_str() {
            "system" | "developer" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" | "function" => Role::Tool,
            other => {
                return Err(Error::invalid(format!(
                    "`{other}` is not a role: system, developer, user, assistant or tool"
                ))
                .with_field(&format!("{field}.role")));
            }
        };
        let text = match self.content {
            None => String::new(),
            Some(Content::Text(text)) => text,
            Some(Content::Parts(parts)) => {
                let mut text = String::new();
                for (i, part) in parts.into_iter().enumerate() {
                    match (part.kind.as_str(), part.text) {
                        ("text", Some(piece)) => text.push_str(&piece),
                        (kind, _) => {
                            return Err(Error::invalid(format!(
                                "a `{kind}` part: this endpoint reads text parts only (send files to the agent's workspace)"
                            ))
                            .with_field(&format!("{field}.content[{i}]")));
                        }
                    }
                }
                text
            }
        };
        Ok(Said { role, text })
    }
}

/// Reads the body as OpenAI's API does: JSON, any other field ignored.
fn parse_request(body: &[u8]) -> Result<ChatRequest, Error> {
    if body.len() > BODY_LIMIT {
        return Err(Error::invalid(format!("the body is over {BODY_LIMIT} bytes")));
    }
    let request: ChatRequest =
        serde_json::from_slice(body).map_err(|e| Error::invalid(format!("the body is not a chat request: {e}")))?;
    if request.n.is_some_and(|n| n != 1) {
        return Err(Error::invalid("an agent gives one answer: `n` must be 1").with_field("n"));
    }
    Ok(request)
}

/// What a request becomes: its agent's turn, and how to answer.
struct Prepared {
    /// Whose token it is: revoking it ends a stream, as every live stream.
    holder: crate::live::Holder,
    model: String,
    agent: Uuid,
    turn: TurnRequest,
    stream: bool,
    include_usage: bool,
    /// A conversation sent without `X-Kennel-Session`: its session is keyed by its answer.
    continuation: Option<chat_api::Continuation>,
}

async fn prepare(
    kernel: &Kernel,
    headers: &HeaderMap,
    (caller, holder): (Caller, crate::live::Holder),
    body: &[u8],
) -> OpenAiResult<Prepared> {
    let request = parse_request(body)?;
    let agent = chat_api::model(&kernel.config().openai, kernel.agents(), &request.model)
        .map_err(OpenAiError::model_not_found)?;
    let conversation =
        request.messages.into_iter().enumerate().map(|(i, m)| m.said(i)).collect::<Result<Vec<_>, Error>>()?;
    // Refused before a session is opened for it.
    chat_api::turn_message(&conversation, false)?;
    let named = headers
        .get(SESSION_HEADER)
        .map(|v| v.to_str().map_err(|_| Error::invalid("X-Kennel-Session is not text").with_field(SESSION_HEADER)));
    let (session, continuation) = match named.transpose()? {
        Some(named) => (kernel.sessions().named(&agent, named).await?, None),
        None => {
            let user = request.user.as_deref();
            let (session, continuation) =
                chat_api::conversation_session(kernel.sessions(), agent.id, &caller, user, &conversation).await?;
            (session, Some(continuation))
        }
    };
    let message = chat_api::turn_message(&conversation, session.preview.is_none())?;
    let mut turn = TurnRequest::headless(message, caller);
    turn.session = Some(session.id);
    Ok(Prepared {
        holder,
        model: agent.name.clone(),
        agent: agent.id,
        turn,
        stream: request.stream.unwrap_or(false),
        include_usage: request.stream_options.and_then(|o| o.include_usage).unwrap_or(false),
        continuation,
    })
}

async fn chat_completions(State(kernel): State<Kernel>, request: axum::extract::Request) -> Response {
    let (parts, body) = request.into_parts();
    // The key is checked before the body is read: a client without one never has the daemon
    // hold its megabytes.
    let identified = match identify(&kernel, &parts.headers) {
        Ok(identified) => identified,
        Err(why) => return OpenAiError::unauthorized(why).into_response(),
    };
    let body = match axum::body::to_bytes(body, BODY_LIMIT).await {
        Ok(body) => body,
        Err(e) => {
            let message = format!("cannot read the body (at most {BODY_LIMIT} bytes): {e}");
            return OpenAiError::from(Error::invalid(message)).into_response();
        }
    };
    let prepared = match prepare(&kernel, &parts.headers, identified, &body).await {
        Ok(prepared) => prepared,
        Err(e) => return e.into_response(),
    };
    let session = prepared.turn.session.expect("prepare names the session");
    let mut response = if prepared.stream { stream(kernel, prepared).await } else { complete(kernel, prepared).await };
    if let Ok(value) = HeaderValue::from_str(&session.to_string()) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

fn finish_reason(result: &TurnResult) -> &'static str {
    if result.truncated { "length" } else { "stop" }
}

fn usage(result: &TurnResult) -> Value {
    let (prompt, completion) = (result.usage.input_tokens, result.usage.output_tokens);
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

fn completion_id(turn: Uuid) -> String {
    format!("chatcmpl-{}", turn.simple())
}

async fn complete(kernel: Kernel, mut prepared: Prepared) -> Response {
    let cancel = CancellationToken::new();
    prepared.turn.cancel = Some(cancel.clone());
    // The turn runs in a task of its own: a client that goes away cancels it.
    let _cancel = CancelOnDrop(cancel);
    let result = match kernel.send_message(&prepared.agent.to_string(), prepared.turn).await {
        Ok(result) => result,
        Err(e) => return turn_failed(e),
    };
    if let Some(continuation) = &prepared.continuation {
        continuation.answered(kernel.sessions(), &result.reply).await;
    }
    Json(json!({
        "id": completion_id(result.turn_id),
        "object": "chat.completion",
        "created": now(),
        "model": prepared.model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": result.reply, "refusal": null},
            "logprobs": null,
            "finish_reason": finish_reason(&result),
        }],
        "usage": usage(&result),
        "system_fingerprint": null,
    }))
    .into_response()
}

/// What the turn's follower hands the response stream.
enum Piece {
    Text(String),
    Done(Box<TurnResult>),
    Failed(Error),
}

async fn stream(kernel: Kernel, mut prepared: Prepared) -> Response {
    let turn_id = Uuid::new_v4();
    let cancel = CancellationToken::new();
    prepared.turn.turn_id = Some(turn_id);
    prepared.turn.cancel = Some(cancel.clone());
    // Subscribed before the turn starts, so no event of it is missed.
    let events = kernel.turns().subscribe();
    let (agent, turn) = (prepared.agent.to_string(), prepared.turn);
    let ends = crate::live::stream_ends(&kernel, prepared.holder);
    let kernel_for_chunks = kernel.clone();
    let running = tokio::spawn(async move { kernel.send_message(&agent, turn).await });
    // Unbounded: the follower never waits on a slow client, so it never falls behind the
    // event bus (what it holds is one reply's text).
    let (pieces, mut received) = mpsc::unbounded_channel();
    tokio::spawn(follow(turn_id, events, running, pieces));
    // From here a client that goes away cancels the turn, before its first text too.
    let cancel = CancelOnDrop(cancel);
    let first = match received.recv().await {
        Some(Piece::Failed(e)) => return turn_failed(e),
        Some(first) => first,
        None => return OpenAiError::from(Error::internal("the turn ended without an answer")).into_response(),
    };
    let chunks = Chunks {
        kernel: kernel_for_chunks,
        continuation: prepared.continuation,
        content: String::new(),
        id: completion_id(turn_id),
        created: now(),
        model: prepared.model,
        include_usage: prepared.include_usage,
        started: false,
        first: Some(first),
        received,
        finished: Vec::new(),
        _cancel: cancel,
        _counted: kennel_kernel::metrics::metrics().live_stream(),
    };
    // Revoking the token, the streams' lifetime cap and the daemon's shutdown end it, as they
    // end every live stream.
    let chunks = futures_util::StreamExt::take_until(chunks.into_stream(), ends);
    Sse::new(chunks).keep_alive(KeepAlive::default()).into_response()
}

/// Cancels the turn when dropped with the response or the request's handler: the client went
/// away. (A finished turn ignores it.)
struct CancelOnDrop(CancellationToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// The response stream's state: the pieces still to come, turned into chunks.
struct Chunks {
    kernel: Kernel,
    /// Keys the conversation's session by its answer, once the answer is whole.
    continuation: Option<chat_api::Continuation>,
    /// The answer's text as the client puts it together from the chunks.
    content: String,
    id: String,
    created: u64,
    model: String,
    include_usage: bool,
    started: bool,
    first: Option<Piece>,
    received: mpsc::UnboundedReceiver<Piece>,
    /// Events still to send after the last piece.
    finished: Vec<Event>,
    _cancel: CancelOnDrop,
    /// Counted among the live streams while it is open.
    _counted: kennel_kernel::metrics::LiveStream,
}

impl Chunks {
    /// A `chat.completion.chunk` with these `choices` (and `usage`, when asked for).
    fn event(&self, choices: Value, usage: Value) -> Event {
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": null,
            "choices": choices,
        });
        if self.include_usage {
            chunk["usage"] = usage;
        }
        Event::default().data(chunk.to_string())
    }

    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Event {
        let choice = json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}]);
        self.event(choice, Value::Null)
    }

    /// The events that end the stream after the turn's result.
    fn ending(&self, result: &TurnResult) -> Vec<Event> {
        let mut events = vec![self.chunk(json!({}), Some(finish_reason(result)))];
        if self.include_usage {
            events.push(self.event(json!([]), usage(result)));
        }
        events.push(Event::default().data("[DONE]"));
        events
    }

    /// The next events to send, or `None` at the end.
    async fn next_events(&mut self) -> Option<Vec<Event>> {
        if !self.started {
            self.started = true;
            return Some(vec![self.chunk(json!({"role": "assistant", "content": ""}), None)]);
        }
        if !self.finished.is_empty() {
            return Some(std::mem::take(&mut self.finished));
        }
        let piece = match self.first.take() {
            Some(piece) => piece,
            None => self.received.recv().await?,
        };
        Some(match piece {
            Piece::Text(text) => {
                self.content.push_str(&text);
                vec![self.chunk(json!({"content": text}), None)]
            }
            Piece::Done(result) => {
                self.received.close();
                // Before `[DONE]`: the client's next request may follow at once.
                if let Some(continuation) = self.continuation.take() {
                    continuation.answered(self.kernel.sessions(), &self.content).await;
                }
                self.ending(&result)
            }
            Piece::Failed(e) => {
                self.received.close();
                let body = OpenAiError::from(e).body;
                vec![Event::default().data(body.to_string())]
            }
        })
    }

    fn into_stream(self) -> impl Stream<Item = Result<Event, Infallible>> {
        use futures_util::StreamExt;
        futures_util::stream::unfold(self, |mut chunks| async move {
            let events = chunks.next_events().await?;
            Some((futures_util::stream::iter(events.into_iter().map(Ok)), chunks))
        })
        .flatten()
    }
}

/// Follows one turn's events and hands its text on as it is written, then its end.
async fn follow(
    turn_id: Uuid,
    mut events: broadcast::Receiver<AgentEvent>,
    mut running: tokio::task::JoinHandle<Result<TurnResult, Error>>,
    pieces: mpsc::UnboundedSender<Piece>,
) {
    let mut text = StreamedText::default();
    let ended = loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(event) if event.turn_id == turn_id => {
                    for piece in text.take(&event.kind) {
                        if pieces.send(Piece::Text(piece)).is_err() {
                            return;
                        }
                    }
                }
                Ok(_) => {}
                // Pieces were missed: what was sent is not the reply any more, so nothing
                // more is streamed, and the whole reply follows at the end.
                Err(broadcast::error::RecvError::Lagged(_)) => text.lost(),
                Err(broadcast::error::RecvError::Closed) => break running.await,
            },
            ended = &mut running => break ended,
        }
    };
    // Every event of the turn was sent before its end: the ones still queued come first.
    while let Ok(event) = events.try_recv() {
        if event.turn_id == turn_id {
            for piece in text.take(&event.kind) {
                let _ = pieces.send(Piece::Text(piece));
            }
        }
    }
    let result = ended.unwrap_or_else(|e| Err(Error::internal(format!("a turn's task ended abnormally: {e}"))));
    let last = match result {
        Ok(result) => {
            if let Some(rest) = text.rest_of(&result.reply) {
                let _ = pieces.send(Piece::Text(rest));
            }
            Piece::Done(Box::new(result))
        }
        Err(e) => Piece::Failed(e),
    };
    let _ = pieces.send(last);
}

/// The reply's text as streamed so far, iteration by iteration.
#[derive(Default)]
struct StreamedText {
    /// The model call being streamed.
    iteration: u32,
    /// What was sent of this iteration's text.
    sent: String,
    /// Whether any text was sent (the next iteration's starts after a blank line).
    any: bool,
    /// After a broken stream is made again: the new attempt's text so far, sent only past
    /// what the broken one sent while the two agree.
    retry: Option<String>,
    /// Pieces were missed (the client fell behind the event bus): nothing more is streamed.
    lost: bool,
}

impl StreamedText {
    /// What to send for this event of the turn.
    fn take(&mut self, kind: &EventKind) -> Vec<String> {
        match kind {
            _ if self.lost => Vec::new(),
            EventKind::TextDelta { iteration, text } => self.delta(*iteration, text).into_iter().collect(),
            EventKind::ReplyReset { iteration } if *iteration == self.iteration => {
                self.retry = Some(String::new());
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn lost(&mut self) {
        self.lost = true;
    }

    fn delta(&mut self, iteration: u32, text: &str) -> Option<String> {
        if iteration != self.iteration {
            self.iteration = iteration;
            self.sent.clear();
            self.retry = None;
        }
        let Some(attempt) = &mut self.retry else { return Some(self.send(text)) };
        attempt.push_str(text);
        if self.sent.starts_with(attempt.as_str()) {
            return None; // the new attempt has not got past what was sent
        }
        let attempt = self.retry.take().unwrap_or_default();
        match attempt.strip_prefix(self.sent.as_str()) {
            Some(new) => Some(self.send(new)),
            // Written differently this time: the new attempt follows, set apart.
            None => {
                self.sent.clear();
                Some(self.send(&attempt))
            }
        }
    }

    fn send(&mut self, new: &str) -> String {
        let piece = if self.sent.is_empty() && self.any { format!("\n\n{new}") } else { new.to_string() };
        self.sent.push_str(new);
        self.any = true;
        piece
    }

    /// What the turn's reply adds to what was streamed: the rest of its last iteration (a
    /// note the turn appended, or all of it when the provider streamed none), or the whole
    /// reply, set apart, when it does not go on from what was sent (a parked or capped
    /// turn's note, pieces that were missed).
    fn rest_of(&mut self, reply: &str) -> Option<String> {
        let rest = match reply.strip_prefix(self.sent.as_str()) {
            Some(rest) if !self.lost => rest,
            _ => {
                self.sent.clear();
                reply
            }
        };
        (!rest.is_empty()).then(|| self.send(rest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(iteration: u32, text: &str) -> EventKind {
        EventKind::TextDelta { iteration, text: text.to_string() }
    }

    #[test]
    fn text_before_tool_calls_is_set_apart_and_the_reply_completed() {
        let mut text = StreamedText::default();
        assert_eq!(text.take(&delta(1, "Let me look.")), ["Let me look."]);
        assert_eq!(text.take(&delta(2, "It is ")), ["\n\nIt is "]);
        assert_eq!(text.take(&delta(2, "noon")), ["noon"]);
        assert_eq!(text.rest_of("It is noon\n\n[the reply was cut]"), Some("\n\n[the reply was cut]".into()));
        assert_eq!(text.rest_of("It is noon\n\n[the reply was cut]"), None);
    }

    #[test]
    fn a_stream_made_again_sends_only_what_the_broken_one_did_not() {
        let mut text = StreamedText::default();
        assert_eq!(text.take(&delta(1, "Hel")), ["Hel"]);
        assert!(text.take(&EventKind::ReplyReset { iteration: 1 }).is_empty());
        assert!(text.take(&delta(1, "He")).is_empty());
        assert_eq!(text.take(&delta(1, "llo")), ["lo"]);
        assert_eq!(text.take(&delta(1, "!")), ["!"]);
        assert_eq!(text.rest_of("Hello!"), None);
    }

    #[test]
    fn a_stream_written_differently_the_second_time_follows_set_apart() {
        let mut text = StreamedText::default();
        assert_eq!(text.take(&delta(1, "Hello th")), ["Hello th"]);
        assert!(text.take(&EventKind::ReplyReset { iteration: 1 }).is_empty());
        assert!(text.take(&delta(1, "Hel")).is_empty());
        assert_eq!(text.take(&delta(1, "p is here")), ["\n\nHelp is here"]);
        assert_eq!(text.take(&delta(1, ".")), ["."]);
        assert_eq!(text.rest_of("Help is here."), None);
    }

    #[test]
    fn a_reply_that_does_not_go_on_from_the_stream_is_sent_whole() {
        let mut text = StreamedText::default();
        assert_eq!(text.take(&delta(1, "Let me check.")), ["Let me check."]);
        let parked = "process_start waits for approval 1a2b";
        assert_eq!(text.rest_of(parked), Some(format!("\n\n{parked}")));
        let mut missed = StreamedText::default();
        assert_eq!(missed.take(&delta(1, "It is")), ["It is"]);
        missed.lost();
        assert!(missed.take(&delta(1, " noon")).is_empty(), "nothing more is streamed once pieces were missed");
        assert_eq!(missed.rest_of("It is noon"), Some("\n\nIt is noon".into()));
    }

    #[test]
    fn a_reply_nothing_streamed_is_sent_whole() {
        let mut text = StreamedText::default();
        assert_eq!(text.rest_of("Done."), Some("Done.".into()));
    }

    #[test]
    fn errors_have_the_status_and_type_openai_gives_them() {
        let e = OpenAiError::model_not_found(Error::not_found("no model"));
        assert_eq!(e.status, StatusCode::NOT_FOUND);
        assert_eq!(e.body["error"]["code"], "model_not_found");
        let e = OpenAiError::from(Error::invalid("bad").with_field("messages"));
        assert_eq!((e.status, e.body["error"]["param"].as_str()), (StatusCode::BAD_REQUEST, Some("messages")));
        let e = OpenAiError::from(Error::exhausted("budget"));
        assert_eq!(
            (e.status, e.body["error"]["type"].as_str()),
            (StatusCode::TOO_MANY_REQUESTS, Some("rate_limit_error"))
        );
    }
}
