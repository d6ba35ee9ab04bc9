//! A local LLM provider for tests that speaks the real wire protocols over HTTP: OpenAI
//! chat completions (`POST /v1/chat/completions`), Anthropic Messages (`POST /v1/messages`),
//! and OpenAI's transcription upload (`POST /v1/audio/transcriptions`, multipart). It cannot
//! hear: a transcription's text says what arrived (`"[12.50 s of audio/wav]"`, the length
//! read from a WAV's sample data), so tests can follow windows through a recording. Speech
//! (`/v1/audio/speech`) and images (`/v1/images/generations`) are real files ffmpeg makes: a
//! tone 50 ms per character of the input as MP3, a flat-colour PNG of the size asked. A
//! Replicate-style predictions API (`POST /v1/models/{owner}/{name}/predictions`, `GET
//! /v1/predictions/{id}`) succeeds on the second read with a file it serves (`/files/…`: an
//! MP3 for a model named `…music…`, an MP4 otherwise); a prompt containing `fail` fails.
//!
//! Each test scripts the replies in order (text, tool calls, an HTTP error) and reads back
//! every request the daemon sent, to assert what the model was shown. A request with
//! `"stream": true` is answered as each vendor streams: OpenAI's `chat.completion.chunk`s
//! (text and tool-call argument pieces, the usage chunk when `stream_options.include_usage`,
//! `[DONE]`) and Anthropic's `message_start` … `message_stop` events. With a context limit
//! set, a request longer than it (a token per four bytes of its messages, system prompt and
//! tools, plus its `max_tokens`) is refused as each vendor refuses it. The same server runs as
//! the `fake-llm` binary for the dashboard's end-to-end tests, scripted over HTTP:
//! `POST /_script` (a JSON array of [`Scripted`]), `GET /_requests`, `GET /_requests/count`.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Multipart, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One scripted answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Scripted {
    /// A final text answer.
    Text { text: String },
    /// Tool calls (name, arguments), with optional text before them.
    ToolCalls {
        calls: Vec<(String, Value)>,
        #[serde(default)]
        text: Option<String>,
    },
    /// An HTTP error with this status and body, and a `Retry-After` header if set.
    Error {
        status: u16,
        body: String,
        #[serde(default)]
        retry_after: Option<u32>,
    },
    /// Wait this long before answering with the next scripted reply.
    Delay { millis: u64 },
    /// A text answer streamed a word at a time, `piece_millis` apart (in one piece, after
    /// all that time, to a request that does not stream).
    SlowText { text: String, piece_millis: u64 },
    /// A stream that breaks off: the first half of the text's words, then the body ends
    /// without the reply's end (no finish reason, no `[DONE]` / `message_stop`).
    CutText { text: String },
    /// Over OpenAI's protocol, a stream cut as llama.cpp's server cuts one under load: the
    /// first half of the text's words, then `data: [DONE]` with no finish reason.
    CutTextDone { text: String },
}

impl Scripted {
    pub fn text(text: &str) -> Scripted {
        Scripted::Text { text: text.into() }
    }
    pub fn call(name: &str, args: Value) -> Scripted {
        Scripted::ToolCalls { calls: vec![(name.into(), args)], text: None }
    }
    pub fn calls(calls: &[(&str, Value)]) -> Scripted {
        Scripted::ToolCalls { calls: calls.iter().map(|(n, a)| (n.to_string(), a.clone())).collect(), text: None }
    }
    pub fn error(status: u16, body: &str) -> Scripted {
        Scripted::Error { status, body: body.into(), retry_after: None }
    }
}

/// A request the daemon sent.
#[derive(Debug, Clone, Serialize)]
pub struct Recorded {
    /// `openai`, `anthropic` or `transcription`.
    pub protocol: &'static str,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// Refused as longer than the context limit.
    pub refused: bool,
    /// Its tokens as the context limit counts them.
    pub tokens: u64,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The names of the tools offered, in order.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .map(|t| t["function"]["name"].as_str().or(t["name"].as_str()).unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The exact bytes of the `tools` array as sent.
    pub fn tools_bytes(&self) -> String {
        self.body.get("tools").map(|t| t.to_string()).unwrap_or_default()
    }

    /// The system prompt, in either protocol.
    pub fn system(&self) -> String {
        match self.protocol {
            "anthropic" => self.body["system"][0]["text"].as_str().unwrap_or_default().to_string(),
            _ => self.body["messages"][0]["content"].as_str().unwrap_or_default().to_string(),
        }
    }
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Scripted>>,
    requests: Mutex<Vec<Recorded>>,
    /// Answered when the script is empty (for load tests); otherwise an empty script is a 500.
    fallback: Mutex<Option<Scripted>>,
    /// Refusals the next media requests (transcription, speech, image) get before any is
    /// answered: a status and its `Retry-After` seconds.
    media_refusals: Mutex<VecDeque<(u16, Option<u32>)>>,
    /// Replicate-style predictions by id.
    predictions: Mutex<std::collections::HashMap<String, FakePrediction>>,
    /// Requests longer than this many tokens are refused.
    context_limit: Mutex<Option<u64>>,
    /// Streams the daemon closed before their end.
    cut_streams: std::sync::atomic::AtomicU64,
    /// When each stream handed its first piece after the opening event to the connection.
    first_pieces: Mutex<Vec<std::time::Instant>>,
    /// The usage each reply reports: input tokens (cached ones among them), cached, output.
    usage: Mutex<(u64, u64, u64)>,
    /// Report as input tokens what the context limit counts of the request (its reply's room
    /// left out), as a real provider reports what its tokenizer counted.
    counted_usage: std::sync::atomic::AtomicBool,
    /// Of the input tokens, how many an Anthropic reply says it wrote into the prompt cache.
    cache_writes: Mutex<u64>,
    /// Chat requests being answered now, and the most there ever were at once.
    in_flight: std::sync::atomic::AtomicU64,
    most_in_flight: std::sync::atomic::AtomicU64,
}

impl Shared {
    /// The usage a reply to `body` reports.
    fn usage(&self, body: &Value) -> (u64, u64, u64) {
        let (input, cached, output) = *self.usage.lock().expect("usage");
        if self.counted_usage.load(std::sync::atomic::Ordering::SeqCst) {
            let counted = chat_tokens(body) - body["max_tokens"].as_u64().unwrap_or(0);
            return (counted, cached.min(counted), output);
        }
        (input, cached, output)
    }

    fn cache_writes(&self) -> u64 {
        *self.cache_writes.lock().expect("cache writes")
    }
}

/// A chat request being answered, until its answer (a stream: its last byte) is sent.
struct InFlight(Arc<Shared>);

impl InFlight {
    fn enter(shared: &Arc<Shared>) -> InFlight {
        use std::sync::atomic::Ordering::SeqCst;
        let now = shared.in_flight.fetch_add(1, SeqCst) + 1;
        shared.most_in_flight.fetch_max(now, SeqCst);
        InFlight(shared.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A prediction's output file extension, how often it was read, and why it fails, if it does.
type FakePrediction = (&'static str, u32, Option<String>);

/// A running fake provider.
#[derive(Clone)]
pub struct FakeLlm {
    shared: Arc<Shared>,
    pub addr: SocketAddr,
}

/// `[kernel] default_provider = "name"`: what a config naming several providers needs.
pub fn default_provider(name: &str) -> String {
    format!("[kernel]\ndefault_provider = \"{name}\"\n")
}

impl FakeLlm {
    /// Starts on a free loopback port.
    pub async fn start() -> FakeLlm {
        FakeLlm::start_on("127.0.0.1:0".parse().expect("addr")).await
    }

    pub async fn start_on(addr: SocketAddr) -> FakeLlm {
        let shared = Arc::new(Shared { usage: Mutex::new((10, 0, 5)), ..Shared::default() });
        let app = Router::new()
            .route("/v1/chat/completions", post(openai))
            .route("/v1/messages", post(anthropic))
            .route("/v1/embeddings", post(embeddings))
            .route("/v1/audio/transcriptions", post(transcription))
            .route("/v1/audio/speech", post(speech))
            .route("/v1/images/generations", post(image))
            .route("/v1/models/{owner}/{name}/predictions", post(create_prediction))
            .route("/v1/predictions/{id}", get(read_prediction))
            .route("/files/{file}", get(prediction_file))
            .route("/_script", post(push_script))
            .route("/_context_limit", post(set_context_limit_route))
            .route("/_requests", get(list_requests))
            .route("/_requests/count", get(count_requests))
            // Transcription uploads are up to 20 MB of audio.
            .layer(axum::extract::DefaultBodyLimit::max(64 * 1024 * 1024))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind(addr).await.expect("bind fake llm");
        let addr = listener.local_addr().expect("addr");
        // Each streamed piece goes out when written, as a provider's does (no Nagle delay).
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        tokio::spawn(async move { axum::serve(listener, app).await.expect("fake llm serves") });
        FakeLlm { shared, addr }
    }

    /// The `base_url` for a provider config.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// A `[providers.NAME]` section pointing here.
    pub fn provider_config(&self, name: &str, kind: &str) -> String {
        format!("[providers.{name}]\nkind = \"{kind}\"\nbase_url = \"{}\"\napi_key_env = \"\"\n", self.base_url())
    }

    pub fn push(&self, reply: Scripted) -> &Self {
        self.shared.script.lock().expect("script").push_back(reply);
        self
    }

    pub fn push_all(&self, replies: impl IntoIterator<Item = Scripted>) {
        self.shared.script.lock().expect("script").extend(replies);
    }

    /// Answer `reply` whenever the script is empty.
    pub fn set_fallback(&self, reply: Scripted) {
        *self.shared.fallback.lock().expect("fallback") = Some(reply);
    }

    /// Refuse requests longer than `tokens` (`None`: any length).
    pub fn set_context_limit(&self, tokens: Option<u64>) {
        *self.shared.context_limit.lock().expect("limit") = tokens;
    }

    /// When each streamed reply's first piece went out (for the first-token bench).
    pub fn first_pieces(&self) -> Vec<std::time::Instant> {
        self.shared.first_pieces.lock().expect("first pieces").clone()
    }

    /// Report this usage in every reply: `input` tokens of which `cached` came from the cache,
    /// and `output` tokens, each in its vendor's fields (OpenAI counts cached tokens inside
    /// `prompt_tokens`, Anthropic apart from `input_tokens`).
    pub fn set_usage(&self, input: u64, cached: u64, output: u64) {
        *self.shared.usage.lock().expect("usage") = (input, cached, output);
    }

    /// Report the request's own size as its input tokens, as the context limit counts it (a
    /// token per four bytes of what the model reads), instead of [`FakeLlm::set_usage`]'s.
    pub fn report_counted_usage(&self) {
        self.shared.counted_usage.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Of [`FakeLlm::set_usage`]'s input tokens, `written` went into the prompt cache: an
    /// Anthropic reply says so in `cache_creation_input_tokens` (apart from `input_tokens`).
    pub fn set_cache_writes(&self, written: u64) {
        *self.shared.cache_writes.lock().expect("cache writes") = written;
    }

    /// The most chat requests it was answering at once.
    pub fn most_in_flight(&self) -> u64 {
        self.shared.most_in_flight.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many streamed replies the daemon closed before their end.
    pub fn cut_streams(&self) -> u64 {
        self.shared.cut_streams.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The next media request (transcription, speech, image) is refused with `status` (and
    /// `Retry-After: retry_after` seconds if given), after those refusals already queued.
    pub fn refuse_media_next(&self, status: u16, retry_after: Option<u32>) {
        self.shared.media_refusals.lock().expect("media refusals").push_back((status, retry_after));
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().expect("requests").clone()
    }

    pub fn remaining(&self) -> usize {
        self.shared.script.lock().expect("script").len()
    }
}

async fn push_script(State(shared): State<Arc<Shared>>, Json(replies): Json<Vec<Scripted>>) -> StatusCode {
    shared.script.lock().expect("script").extend(replies);
    StatusCode::NO_CONTENT
}

async fn count_requests(State(shared): State<Arc<Shared>>) -> Json<Value> {
    Json(json!({ "count": shared.requests.lock().expect("requests").len() }))
}

async fn list_requests(State(shared): State<Arc<Shared>>) -> Json<Value> {
    Json(serde_json::to_value(&*shared.requests.lock().expect("requests")).expect("json"))
}

async fn set_context_limit_route(State(shared): State<Arc<Shared>>, Json(limit): Json<Option<u64>>) -> StatusCode {
    *shared.context_limit.lock().expect("limit") = limit;
    StatusCode::NO_CONTENT
}

fn record(shared: &Shared, protocol: &'static str, headers: &HeaderMap, body: &Value) {
    record_chat(shared, protocol, headers, body, false, 0);
}

fn record_chat(shared: &Shared, protocol: &'static str, headers: &HeaderMap, body: &Value, refused: bool, tokens: u64) {
    let headers = headers.iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string())).collect();
    shared.requests.lock().expect("requests").push(Recorded { protocol, headers, body: body.clone(), refused, tokens });
}

/// A chat request's tokens as the fake counts them: a token per four bytes of what the
/// model reads (messages, system prompt, tools), plus the reply it may write (`max_tokens`).
fn chat_tokens(body: &Value) -> u64 {
    let read: usize =
        ["messages", "system", "tools"].iter().map(|k| body.get(*k).map_or(0, |v| v.to_string().len())).sum();
    (read as u64).div_ceil(4) + body["max_tokens"].as_u64().unwrap_or(0)
}

/// Records a chat request; the vendor's refusal when it is over the context limit.
fn admit(shared: &Shared, protocol: &'static str, headers: &HeaderMap, body: &Value) -> Option<Response> {
    let tokens = chat_tokens(body);
    let limit = *shared.context_limit.lock().expect("limit");
    let over = limit.filter(|&l| tokens > l);
    record_chat(shared, protocol, headers, body, over.is_some(), tokens);
    let limit = over?;
    let body = match protocol {
        "anthropic" => json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": format!("prompt is too long: {tokens} tokens > {limit} maximum")}}),
        _ => json!({"error": {"message": format!(
            "This model's maximum context length is {limit} tokens. However, you requested {tokens} tokens. Please reduce the length of the messages or completion."),
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
    };
    Some(error_response(400, body.to_string(), None))
}

/// A streamed answer: `events` (SSE text each) sent `gap` apart; counts a stream the
/// daemon closes before its end.
fn event_stream(shared: &Arc<Shared>, events: Vec<String>, gap: Duration, flight: InFlight) -> Response {
    struct Watch {
        shared: Arc<Shared>,
        done: std::cell::Cell<bool>,
        _flight: InFlight,
    }
    impl Drop for Watch {
        fn drop(&mut self) {
            if !self.done.get() {
                self.shared.cut_streams.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
    }
    let watch = Watch { shared: shared.clone(), done: std::cell::Cell::new(false), _flight: flight };
    let stream =
        futures_util::stream::unfold((events.into_iter(), watch, 0), move |(mut events, watch, sent)| async move {
            let Some(event) = events.next() else {
                watch.done.set(true);
                return None;
            };
            if sent > 0 && !gap.is_zero() {
                tokio::time::sleep(gap).await;
            }
            if sent == 1 {
                watch.shared.first_pieces.lock().expect("first pieces").push(std::time::Instant::now());
            }
            Some((Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(event)), (events, watch, sent + 1)))
        });
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(axum::body::Body::from_stream(stream))
        .expect("a streamed response")
}

/// The first half of `text`'s words as `protocol` streams text, then the end of the body.
fn cut_stream(shared: &Arc<Shared>, protocol: &str, text: &str, flight: InFlight) -> Response {
    event_stream(shared, cut_events(protocol, text), Duration::ZERO, flight)
}

/// The events of a stream that breaks off: the first half of the text's words.
fn cut_events(protocol: &str, text: &str) -> Vec<String> {
    let words = pieces(text);
    let half = &words[..words.len() / 2];
    match protocol {
        "anthropic" => std::iter::once(format!(
            "event: message_start\ndata: {}\n\n",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "output_tokens": 1}}})
        ))
        .chain(std::iter::once(format!(
            "event: content_block_start\ndata: {}\n\n",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        )))
        .chain(half.iter().map(|w| {
            let delta = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}});
            format!("event: content_block_delta\ndata: {delta}\n\n")
        }))
        .collect(),
        _ => {
            std::iter::once(format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})))
                .chain(
                    half.iter()
                        .map(|w| format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {"content": w}}]}))),
                )
                .collect()
        }
    }
}

/// Words with their following space, so the pieces join back into the text.
fn pieces(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut piece = String::new();
    for c in text.chars() {
        piece.push(c);
        if c == ' ' {
            out.push(std::mem::take(&mut piece));
        }
    }
    if !piece.is_empty() {
        out.push(piece);
    }
    out
}

/// The next reply, after any scripted delays.
async fn next(shared: &Shared) -> Option<Scripted> {
    loop {
        let reply = shared.script.lock().expect("script").pop_front();
        let reply = reply.or_else(|| shared.fallback.lock().expect("fallback").clone());
        match reply {
            Some(Scripted::Delay { millis }) => tokio::time::sleep(Duration::from_millis(millis)).await,
            other => return other,
        }
    }
}

fn error_response(status: u16, body: String, retry_after: Option<u32>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut res = (status, [("content-type", "application/json")], body).into_response();
    if let Some(secs) = retry_after {
        res.headers_mut().insert("retry-after", secs.into());
    }
    res
}

/// A queued refusal for this media request, if one waits.
fn media_refusal(shared: &Shared) -> Option<Response> {
    let (status, retry_after) = shared.media_refusals.lock().expect("media refusals").pop_front()?;
    let body = json!({"error": {"message": format!("fake provider: refused with {status}")}}).to_string();
    Some(error_response(status, body, retry_after))
}

fn script_exhausted() -> Response {
    error_response(500, json!({"error": {"message": "fake provider: no scripted reply left"}}).to_string(), None)
}

/// A scripted reply to write in either protocol's form.
struct Reply {
    text: Option<String>,
    /// Tool calls: name and arguments.
    calls: Vec<(String, Value)>,
    /// Milliseconds between pieces of the text (a slow model).
    gap: u64,
}

/// The next scripted reply, with the request counted in flight; or the response that answers
/// the request instead (a scripted error, an exhausted script, a stream cut short).
async fn next_reply(shared: &Arc<Shared>, protocol: &'static str) -> Result<(Reply, InFlight), Response> {
    let flight = InFlight::enter(shared);
    let reply = match next(shared).await {
        None => return Err(script_exhausted()),
        Some(Scripted::Error { status, body, retry_after }) => return Err(error_response(status, body, retry_after)),
        Some(Scripted::Text { text }) => Reply { text: Some(text), calls: Vec::new(), gap: 0 },
        Some(Scripted::SlowText { text, piece_millis }) => {
            Reply { text: Some(text), calls: Vec::new(), gap: piece_millis }
        }
        Some(Scripted::ToolCalls { calls, text }) => Reply { text, calls, gap: 0 },
        Some(Scripted::CutText { text }) => return Err(cut_stream(shared, protocol, &text, flight)),
        // A cut reply whose stream still ends as complete: OpenAI's `[DONE]` (Anthropic's
        // stream has no such marker, so there it is a cut stream).
        Some(Scripted::CutTextDone { text }) => {
            let mut events = cut_events(protocol, &text);
            if protocol == "openai" {
                events.push("data: [DONE]\n\n".to_string());
            }
            return Err(event_stream(shared, events, Duration::ZERO, flight));
        }
        Some(Scripted::Delay { .. }) => unreachable!("delays are consumed by next()"),
    };
    Ok((reply, flight))
}

/// A slow model's whole reply takes the time its pieces would have streamed in.
async fn pace(text: Option<&str>, gap: u64) {
    if gap > 0 {
        let words = text.map_or(0, |t| pieces(t).len()) as u64;
        tokio::time::sleep(Duration::from_millis(gap * words)).await;
    }
}

async fn openai(State(shared): State<Arc<Shared>>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    if let Some(refusal) = admit(&shared, "openai", &headers, &body) {
        return refusal;
    }
    // As strict as llama.cpp's Python server, which validates each message: an assistant
    // message's `content` must be a string (OpenAI itself also takes null).
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if let Some(at) = messages.iter().position(|m| m["role"] == "assistant" && !m["content"].is_string()) {
        let message = format!(
            "1 validation error for ChatCompletionRequestAssistantMessage\nmessages.{at}.content: Input should be a valid string"
        );
        return error_response(
            500,
            json!({"error": {"message": message, "type": "internal_server_error"}}).to_string(),
            None,
        );
    }
    let (Reply { text, calls, gap }, flight) = match next_reply(&shared, "openai").await {
        Ok(reply) => reply,
        Err(answered) => return answered,
    };
    let calls: Vec<(String, String, String)> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| (format!("call_{i}_{}", uuid_like()), name.clone(), args.to_string()))
        .collect();
    let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
    let (input, cached, output) = shared.usage(&body);
    let usage = json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output,
                       "prompt_tokens_details": {"cached_tokens": cached}});
    if body["stream"] == json!(true) {
        let chunk = |delta: Value, finish: Option<&str>| {
            let c = json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": body["model"],
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
            format!("data: {c}\n\n")
        };
        let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
        for piece in text.as_deref().map(pieces).unwrap_or_default() {
            events.push(chunk(json!({"content": piece}), None));
        }
        for (i, (id, name, args)) in calls.iter().enumerate() {
            events.push(chunk(json!({"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}), None));
            // The arguments in two pieces, as providers split them anywhere.
            let half = args.char_indices().nth(args.chars().count() / 2).map_or(args.len(), |(at, _)| at);
            for part in [&args[..half], &args[half..]] {
                events.push(chunk(json!({"tool_calls": [{"index": i, "function": {"arguments": part}}]}), None));
            }
        }
        events.push(chunk(json!({}), Some(finish)));
        if body["stream_options"]["include_usage"] == json!(true) {
            let c = json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [], "usage": usage});
            events.push(format!("data: {c}\n\n"));
        }
        events.push("data: [DONE]\n\n".into());
        return event_stream(&shared, events, Duration::from_millis(gap), flight);
    }
    pace(text.as_deref(), gap).await;
    let mut message = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .iter()
            .map(
                |(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}),
            )
            .collect();
    }
    Json(json!({
        "id": "chatcmpl-fake", "object": "chat.completion", "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }))
    .into_response()
}

async fn anthropic(State(shared): State<Arc<Shared>>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    if let Some(refusal) = admit(&shared, "anthropic", &headers, &body) {
        return refusal;
    }
    let (Reply { text, calls, gap }, flight) = match next_reply(&shared, "anthropic").await {
        Ok(reply) => reply,
        Err(answered) => return answered,
    };
    let calls: Vec<(String, String, Value)> = calls
        .into_iter()
        .enumerate()
        .map(|(i, (name, args))| (format!("toolu_{i}_{}", uuid_like()), name, args))
        .collect();
    let stop = if calls.is_empty() { "end_turn" } else { "tool_use" };
    let (input, cached, output) = shared.usage(&body);
    let written = shared.cache_writes();
    if body["stream"] == json!(true) {
        let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
        let mut events = vec![event(
            "message_start",
            json!({"type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": body["model"], "content": [],
            "stop_reason": null, "usage": {"input_tokens": input - cached - written, "output_tokens": 1, "cache_read_input_tokens": cached, "cache_creation_input_tokens": written}}}),
        )];
        let mut index = 0;
        if let Some(text) = &text {
            events.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
            ));
            events.push(event("ping", json!({"type": "ping"})));
            for piece in pieces(text) {
                events.push(event("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}})));
            }
            events.push(event("content_block_stop", json!({"type": "content_block_stop", "index": index})));
            index += 1;
        }
        for (id, name, args) in &calls {
            events.push(event("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})));
            events.push(event("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": args.to_string()}})));
            events.push(event("content_block_stop", json!({"type": "content_block_stop", "index": index})));
            index += 1;
        }
        events.push(event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": output}}),
        ));
        events.push(event("message_stop", json!({"type": "message_stop"})));
        return event_stream(&shared, events, Duration::from_millis(gap), flight);
    }
    pace(text.as_deref(), gap).await;
    let mut content: Vec<Value> = text.into_iter().map(|t| json!({"type": "text", "text": t})).collect();
    content.extend(
        calls.iter().map(|(id, name, args)| json!({"type": "tool_use", "id": id, "name": name, "input": args})),
    );
    Json(json!({
        "id": "msg_fake", "type": "message", "role": "assistant", "model": body["model"],
        "content": content, "stop_reason": stop,
        "usage": {"input_tokens": input - cached - written, "output_tokens": output, "cache_read_input_tokens": cached, "cache_creation_input_tokens": written},
    }))
    .into_response()
}

/// A short unique-enough suffix for call ids.
fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{:06}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// `POST /v1/embeddings` as OpenAI answers it: `input` a string or a list of strings, one
/// vector per input in `data`, in order. The vectors are bags of words hashed into 64
/// dimensions (not a model: texts that share words are alike), enough to drive the daemon's
/// provider path; a missing or empty `input` is a 400 like the real one.
async fn embeddings(State(shared): State<Arc<Shared>>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    record(&shared, "embeddings", &headers, &body);
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) if !items.is_empty() => {
            items.iter().map(|i| i.as_str().unwrap_or_default().to_string()).collect()
        }
        _ => return error_response(400, "'input' must be a string or a non-empty list of strings".into(), None),
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let mut v = vec![0.0f64; 64];
            for word in text.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 2) {
                let h = word.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3));
                v[(h % 64) as usize] += 1.0;
            }
            json!({ "object": "embedding", "index": index, "embedding": v })
        })
        .collect();
    let tokens: usize = inputs.iter().map(|i| i.split_whitespace().count()).sum();
    Json(json!({ "object": "list", "data": data, "model": body["model"], "usage": { "prompt_tokens": tokens, "total_tokens": tokens } }))
        .into_response()
}

/// `POST /v1/audio/transcriptions`: reads the multipart form as OpenAI's endpoint does
/// (`file`, `model`, optional `language`, `prompt`, `response_format`) and answers
/// `{"text": "[SECS s of MIME]"}`; a form without `file` or `model` is a 400 like the real one.
async fn transcription(State(shared): State<Arc<Shared>>, headers: HeaderMap, mut form: Multipart) -> Response {
    let mut fields = serde_json::Map::new();
    let mut heard = None;
    while let Ok(Some(field)) = form.next_field().await {
        let name = field.name().unwrap_or_default().to_string();
        let mime = field.content_type().unwrap_or("application/octet-stream").to_string();
        let file_name = field.file_name().map(str::to_string);
        let Ok(bytes) = field.bytes().await else {
            return error_response(400, "unreadable multipart body".into(), None);
        };
        if name == "file" {
            let secs = wav_secs(&bytes);
            heard = Some(match secs {
                Some(secs) => format!("[{secs:.2} s of {mime}]"),
                None => format!("[{} bytes of {mime}]", bytes.len()),
            });
            fields.insert(
                "file".into(),
                json!({ "file_name": file_name, "content_type": mime, "bytes": bytes.len(), "wav_secs": secs }),
            );
        } else {
            fields.insert(name, Value::from(String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    let body = Value::Object(fields);
    record(&shared, "transcription", &headers, &body);
    if let Some(refused) = media_refusal(&shared) {
        return refused;
    }
    match (heard, body.get("model")) {
        (Some(text), Some(_)) => Json(json!({ "text": text })).into_response(),
        _ => error_response(400, json!({"error": {"message": "file and model are required"}}).to_string(), None),
    }
}

/// The length of a 16 kHz mono 16-bit WAV's samples, in seconds.
fn wav_secs(wav: &[u8]) -> Option<f64> {
    if wav.len() < 12 || &wav[..4] != b"RIFF" || &wav[8..12] != b"WAVE" {
        return None;
    }
    let mut at = 12;
    while at + 8 <= wav.len() {
        let size = u32::from_le_bytes(wav[at + 4..at + 8].try_into().ok()?) as usize;
        if &wav[at..at + 4] == b"data" {
            return Some((wav.len() - at - 8) as f64 / 32_000.0);
        }
        at = at.checked_add(8 + size + (size & 1))?;
    }
    None
}

/// Runs ffmpeg on a lavfi source; what it writes to standard output.
async fn ffmpeg_output(args: Vec<String>) -> Option<Vec<u8>> {
    tokio::task::spawn_blocking(move || {
        let out = std::process::Command::new("ffmpeg").args(&args).output().ok()?;
        out.status.success().then_some(out.stdout)
    })
    .await
    .ok()
    .flatten()
}

/// `POST /v1/audio/speech` (`model`, `input`, `voice`, `response_format`): MP3 bytes.
async fn speech(State(shared): State<Arc<Shared>>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    record(&shared, "speech", &headers, &body);
    if let Some(refused) = media_refusal(&shared) {
        return refused;
    }
    let (Some(input), Some(_)) = (body["input"].as_str(), body["model"].as_str()) else {
        return error_response(400, json!({"error": {"message": "input and model are required"}}).to_string(), None);
    };
    let secs = (input.chars().count() as f64 * 0.05).max(0.2);
    let source = format!("sine=frequency=440:duration={secs:.2}");
    let args = ["-v", "error", "-f", "lavfi", "-i", &source, "-ac", "1", "-f", "mp3", "pipe:1"];
    match ffmpeg_output(args.iter().map(|a| a.to_string()).collect()).await {
        Some(mp3) => ([("content-type", "audio/mpeg")], mp3).into_response(),
        None => error_response(500, json!({"error": {"message": "fake provider: ffmpeg failed"}}).to_string(), None),
    }
}

/// `POST /v1/images/generations` (`model`, `prompt`, `size`, `response_format: b64_json`).
async fn image(State(shared): State<Arc<Shared>>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    use base64::Engine;
    record(&shared, "image", &headers, &body);
    if let Some(refused) = media_refusal(&shared) {
        return refused;
    }
    let (Some(prompt), Some(size)) = (body["prompt"].as_str(), body["size"].as_str()) else {
        return error_response(400, json!({"error": {"message": "prompt and size are required"}}).to_string(), None);
    };
    let source = format!("color=c=0x3366cc:s={size}");
    let args =
        ["-v", "error", "-f", "lavfi", "-i", &source, "-frames:v", "1", "-f", "image2pipe", "-c:v", "png", "pipe:1"];
    match ffmpeg_output(args.iter().map(|a| a.to_string()).collect()).await {
        Some(png) => Json(json!({ "data": [{
            "b64_json": base64::engine::general_purpose::STANDARD.encode(png),
            "revised_prompt": format!("{prompt}, in flat blue"),
        }] }))
        .into_response(),
        None => error_response(
            400,
            json!({"error": {"message": format!("fake provider: cannot make a {size} image")}}).to_string(),
            None,
        ),
    }
}

/// `POST /v1/models/{owner}/{name}/predictions` with `{"input": …}`.
async fn create_prediction(
    State(shared): State<Arc<Shared>>,
    axum::extract::Path((owner, name)): axum::extract::Path<(String, String)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    record(&shared, "prediction", &headers, &json!({ "model": format!("{owner}/{name}"), "body": body }));
    let Some(prompt) = body["input"]["prompt"].as_str() else {
        return error_response(422, json!({"detail": "input.prompt is required"}).to_string(), None);
    };
    let mut predictions = shared.predictions.lock().expect("predictions");
    let id = format!("pred{}", predictions.len() + 1);
    let ext = if name.contains("music") { "mp3" } else { "mp4" };
    let failure = prompt.contains("fail").then(|| format!("the fake provider fails `{prompt}`"));
    predictions.insert(id.clone(), (ext, 0, failure));
    (StatusCode::CREATED, Json(json!({ "id": id, "status": "starting", "output": null }))).into_response()
}

/// `GET /v1/predictions/{id}`: processing on the first read, then done.
async fn read_prediction(
    State(shared): State<Arc<Shared>>,
    axum::extract::Path(id): axum::extract::Path<String>,
    headers: HeaderMap,
) -> Response {
    let mut predictions = shared.predictions.lock().expect("predictions");
    let Some((ext, reads, failure)) = predictions.get_mut(&id) else {
        return error_response(404, json!({"detail": "Not found."}).to_string(), None);
    };
    *reads += 1;
    let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or("127.0.0.1");
    let answer = match (*reads, failure) {
        (1, _) => json!({ "id": id, "status": "processing", "output": null }),
        (_, Some(why)) => json!({ "id": id, "status": "failed", "output": null, "error": why }),
        _ => json!({ "id": id, "status": "succeeded", "output": [format!("http://{host}/files/{id}.{ext}")] }),
    };
    Json(answer).into_response()
}

/// `GET /files/{id}.{ext}`: a two-second MP3 tone or MP4 test pattern.
async fn prediction_file(axum::extract::Path(file): axum::extract::Path<String>) -> Response {
    let (source, format, mime) = if file.ends_with(".mp3") {
        (vec!["-f", "lavfi", "-i", "sine=frequency=523:duration=2"], vec!["-f", "mp3"], "audio/mpeg")
    } else {
        (
            vec!["-f", "lavfi", "-i", "testsrc=duration=2:size=160x120:rate=10"],
            vec!["-c:v", "mpeg4", "-movflags", "frag_keyframe+empty_moov", "-f", "mp4"],
            "video/mp4",
        )
    };
    let mut args: Vec<String> = vec!["-v".into(), "error".into()];
    args.extend(source.iter().map(|a| a.to_string()));
    args.extend(format.iter().map(|a| a.to_string()));
    args.push("pipe:1".into());
    match ffmpeg_output(args).await {
        Some(bytes) => ([("content-type", mime)], bytes).into_response(),
        None => error_response(500, "ffmpeg failed".into(), None),
    }
}
