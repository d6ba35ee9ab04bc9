//! A Discord for tests, on loopback: the REST API (`Authorization: Bot TOKEN`;
//! `GET /gateway/bot`, `POST /channels/{id}/messages` as JSON or multipart,
//! `POST /users/@me/channels`) and a real websocket gateway on a second port (Hello,
//! Identify checked against the token then READY, heartbeat ACKs, dispatches pushed with
//! [`FakeDiscord::dispatch_message`]). Sessions outlive their connection as Discord's do:
//! dispatches while a session has no connection wait in its log, and Resume (op 6) to READY's
//! `resume_gateway_url` replays those after the sequence it names, then sends RESUMED; a
//! session the test invalidated answers Resume with Invalid Session (`false`). Errors are Discord's: `429 {"retry_after": s}`,
//! `403 {"code": 50007}` for a user whose DMs are closed, `401` for a wrong token (and close
//! code 4004 on the gateway).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_tungstenite::tungstenite::Message;
use async_tungstenite::tungstenite::handshake::server::{Request, Response as Handshake};
use async_tungstenite::tungstenite::protocol::CloseFrame;
use async_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use axum::extract::{Multipart, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// The bot's own user id, as READY reports it.
pub const BOT_USER_ID: &str = "900000000000000001";
/// How often the fake asks for heartbeats (Discord asks every ~41 s).
pub const HEARTBEAT_MS: u64 = 300;

#[derive(Default)]
struct Inner {
    token: String,
    calls: Vec<(String, Value)>,
    closed_dms: HashSet<String>,
    throttled: Vec<(String, f64)>,
    sessions: Vec<Session>,
    identifies: Vec<Value>,
    resumes: Vec<Value>,
    /// The request path of each gateway connection, in order.
    connection_paths: Vec<String>,
    heartbeats: usize,
    /// Connections to the resume URL are dropped before Hello (an unreachable host).
    refuse_resumes: bool,
    next_id: u64,
    next_connection: u64,
}

/// One gateway session: its own sequence and every dispatch it was sent, and its connection
/// while it has one.
struct Session {
    id: String,
    log: Vec<(u64, String)>,
    client: Option<(u64, mpsc::UnboundedSender<Message>)>,
    resumable: bool,
}

impl Session {
    /// Logs a dispatch and sends it if the session is connected.
    fn dispatch(&mut self, t: &str, d: Value) {
        let sequence = self.log.len() as u64 + 1;
        let frame = json!({ "op": 0, "t": t, "s": sequence, "d": d }).to_string();
        self.log.push((sequence, frame.clone()));
        if let Some((_, outbox)) = &self.client {
            let _ = outbox.send(Message::text(frame));
        }
    }
}

impl Inner {
    fn session(&mut self, id: &str) -> Option<&mut Session> {
        self.sessions.iter_mut().find(|s| s.id == id)
    }

    fn snowflake(&mut self) -> String {
        self.next_id += 1;
        format!("{}", 1_100_000_000_000_000_000u64 + self.next_id)
    }
}

#[derive(Clone)]
struct Shared {
    inner: Arc<Mutex<Inner>>,
    gateway_url: String,
}

pub struct FakeDiscord {
    shared: Shared,
    base_url: String,
}

impl FakeDiscord {
    /// Starts the REST API and the gateway on two loopback ports; both accept only `token`.
    pub async fn start(token: &str) -> FakeDiscord {
        let gateway = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
        let gateway_url = format!("ws://{}", gateway.local_addr().expect("its address"));
        let inner = Inner { token: token.to_string(), ..Inner::default() };
        let shared = Shared { inner: Arc::new(Mutex::new(inner)), gateway_url };
        let accepting = shared.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = gateway.accept().await {
                tokio::spawn(gateway_connection(accepting.clone(), tcp));
            }
        });
        let app = Router::new()
            .route("/gateway/bot", get(gateway_bot))
            .route("/channels/{channel_id}/messages", post(create_message))
            .route("/users/@me/channels", post(open_dm))
            .route("/users/@me", get(current_user))
            .with_state(shared.clone());
        let port = crate::serve_on_loopback(app).await;
        FakeDiscord { shared, base_url: format!("http://127.0.0.1:{port}") }
    }

    /// The REST API's base (a channel's `base_url`).
    pub fn base_url(&self) -> String {
        self.base_url.clone()
    }

    /// Every REST call so far: `"METHOD /path"` and its body (JSON; a multipart body as its
    /// `payload_json` with `files`: each part's `field`, `filename`, `content_type` and
    /// `base64`).
    pub fn calls(&self) -> Vec<(String, Value)> {
        self.lock().calls.clone()
    }

    /// A gateway client has identified (or resumed) and is still connected.
    pub fn connected(&self) -> bool {
        self.lock().sessions.iter().any(|s| s.client.is_some())
    }

    /// Waits up to `within` for [`FakeDiscord::connected`] to be `want`.
    pub async fn wait_connected(&self, want: bool, within: Duration) -> bool {
        crate::eventually(within, || async { self.connected() == want }).await
    }

    /// Every Identify payload's `d` received, in order.
    pub fn identifies(&self) -> Vec<Value> {
        self.lock().identifies.clone()
    }

    /// Every Resume payload's `d` received, in order.
    pub fn resumes(&self) -> Vec<Value> {
        self.lock().resumes.clone()
    }

    /// The request path of every gateway connection so far, in order.
    pub fn connection_paths(&self) -> Vec<String> {
        self.lock().connection_paths.clone()
    }

    /// Heartbeats (op 1) received.
    pub fn heartbeats(&self) -> usize {
        self.lock().heartbeats
    }

    /// Dispatches a `MESSAGE_CREATE` to every session, connected or not; returns the message's
    /// id. A DM
    /// has no `guild_id`.
    pub fn dispatch_message(
        &self,
        channel_id: &str,
        guild_id: Option<&str>,
        author_id: &str,
        username: &str,
        text: &str,
    ) -> String {
        let id = self.lock().snowflake();
        let mut d = json!({
            "id": id,
            "channel_id": channel_id,
            "author": { "id": author_id, "username": username, "global_name": null, "discriminator": "0" },
            "content": text,
            "timestamp": "2024-01-01T00:00:00.000000+00:00",
            "type": 0,
        });
        if let Some(guild) = guild_id {
            d["guild_id"] = json!(guild);
        }
        self.dispatch("MESSAGE_CREATE", d);
        id
    }

    /// Dispatches any event (op 0) `t` with data `d` to every resumable session: sent now to
    /// those connected, kept in the log of the others.
    pub fn dispatch(&self, t: &str, d: Value) {
        for session in self.lock().sessions.iter_mut().filter(|s| s.resumable) {
            session.dispatch(t, d.clone());
        }
    }

    /// Sends op 7 (Reconnect) to every connected client, as Discord does before it moves one.
    pub fn request_reconnect(&self) {
        self.send_to_clients(Message::text(json!({ "op": 7, "d": null }).to_string()));
    }

    /// Drops every gateway connection without a close frame, as a network failure does; the
    /// sessions stay resumable.
    pub fn drop_connections(&self) {
        self.send_to_clients(Message::Close(None));
        for session in &mut self.lock().sessions {
            session.client = None;
        }
    }

    /// Every session becomes one Discord will not resume: a Resume is answered with Invalid
    /// Session (`false`) and dispatches go only to sessions identified after this.
    pub fn invalidate_sessions(&self) {
        for session in &mut self.lock().sessions {
            session.resumable = false;
        }
    }

    /// From now on the resume URL drops every connection before Hello, as a host the client
    /// cannot reach would.
    pub fn refuse_resumes(&self) {
        self.lock().refuse_resumes = true;
    }

    fn send_to_clients(&self, message: Message) {
        for session in &self.lock().sessions {
            if let Some((_, outbox)) = &session.client {
                let _ = outbox.send(message.clone());
            }
        }
    }

    /// Sends to the DM channel with `user_id` fail with `403` code 50007 from now on.
    pub fn close_dms(&self, user_id: &str) {
        self.lock().closed_dms.insert(user_id.to_string());
    }

    /// The next REST call whose path contains `route_hint` answers `429` with
    /// `retry_after: retry_after_secs`.
    pub fn throttle_next(&self, route_hint: &str, retry_after_secs: f64) {
        self.lock().throttled.push((route_hint.to_string(), retry_after_secs));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.shared.inner.lock().expect("fake Discord state")
    }
}

/// The DM channel id the fake gives `user_id`.
pub fn dm_channel_id(user_id: &str) -> String {
    format!("dm{user_id}")
}

fn error(status: StatusCode, code: u64, message: &str) -> Response {
    (status, Json(json!({ "code": code, "message": message }))).into_response()
}

/// Checks the token and a pending throttle: the refusal, or `None` and the call recorded.
fn refusal(shared: &Shared, headers: &HeaderMap, route: String, body: Value) -> Option<Response> {
    let mut inner = shared.inner.lock().expect("fake Discord state");
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
    if auth != format!("Bot {}", inner.token) {
        return Some(error(StatusCode::UNAUTHORIZED, 0, "401: Unauthorized"));
    }
    if let Some(at) = inner.throttled.iter().position(|(hint, _)| route.contains(hint.as_str())) {
        let (_, secs) = inner.throttled.remove(at);
        let body = json!({ "message": "You are being rate limited.", "retry_after": secs, "global": false });
        return Some(
            (StatusCode::TOO_MANY_REQUESTS, [("Retry-After", format!("{}", secs.ceil()))], Json(body)).into_response(),
        );
    }
    inner.calls.push((route, body));
    None
}

async fn gateway_bot(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    if let Some(refused) = refusal(&shared, &headers, "GET /gateway/bot".into(), Value::Null) {
        return refused;
    }
    Json(json!({
        "url": shared.gateway_url,
        "shards": 1,
        "session_start_limit": { "total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1 },
    }))
    .into_response()
}

async fn create_message(
    State(shared): State<Shared>,
    Path(channel_id): Path<String>,
    headers: HeaderMap,
    request: axum::extract::Request,
) -> Response {
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let body = if content_type.starts_with("multipart/form-data") {
        use axum::extract::FromRequest;
        let Ok(mut multipart) = Multipart::from_request(request, &()).await else {
            return error(StatusCode::BAD_REQUEST, 50035, "Invalid Form Body");
        };
        let mut payload = json!({});
        let mut files = Vec::new();
        while let Ok(Some(field)) = multipart.next_field().await {
            let name = field.name().unwrap_or_default().to_string();
            let filename = field.file_name().map(str::to_string);
            let part_type = field.content_type().map(str::to_string);
            let bytes = field.bytes().await.unwrap_or_default();
            if name == "payload_json" {
                payload = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            } else {
                files.push(json!({
                    "field": name,
                    "filename": filename,
                    "content_type": part_type,
                    "base64": base64::engine::general_purpose::STANDARD.encode(&bytes),
                }));
            }
        }
        payload["files"] = Value::Array(files);
        payload
    } else {
        let bytes = axum::body::to_bytes(request.into_body(), 10 << 20).await.unwrap_or_default();
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) => v,
            Err(_) => return error(StatusCode::BAD_REQUEST, 50109, "The request body contains invalid JSON."),
        }
    };
    if let Some(refused) = refusal(&shared, &headers, format!("POST /channels/{channel_id}/messages"), body.clone()) {
        return refused;
    }
    let mut inner = shared.inner.lock().expect("fake Discord state");
    if let Some(user) = channel_id.strip_prefix("dm")
        && inner.closed_dms.contains(user)
    {
        return error(StatusCode::FORBIDDEN, 50007, "Cannot send messages to this user");
    }
    let empty = body["content"].as_str().unwrap_or_default().is_empty()
        && body["embeds"].is_null()
        && body["poll"].is_null()
        && body["files"].as_array().is_none_or(Vec::is_empty);
    if empty {
        return error(StatusCode::BAD_REQUEST, 50006, "Cannot send an empty message");
    }
    let id = inner.snowflake();
    Json(json!({ "id": id, "channel_id": channel_id, "content": body["content"] })).into_response()
}

/// `GET /users/@me`: the bot's own user.
async fn current_user(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    if let Some(refused) = refusal(&shared, &headers, "GET /users/@me".into(), Value::Null) {
        return refused;
    }
    Json(json!({ "id": "900000000000000001", "username": "kennel-test-bot", "bot": true })).into_response()
}

async fn open_dm(State(shared): State<Shared>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    if let Some(refused) = refusal(&shared, &headers, "POST /users/@me/channels".into(), body.clone()) {
        return refused;
    }
    let Some(user) = body["recipient_id"].as_str() else {
        return error(StatusCode::BAD_REQUEST, 50035, "Invalid Form Body");
    };
    Json(json!({ "id": dm_channel_id(user), "type": 1, "recipients": [{ "id": user }] })).into_response()
}

/// One gateway connection: Hello, then Identify → READY or Resume → the missed dispatches and
/// RESUMED, heartbeats → ACK, and whatever the test dispatches.
async fn gateway_connection(shared: Shared, tcp: tokio::net::TcpStream) {
    let mut path = String::new();
    // The handshake callback's signature is tungstenite's, error type included.
    #[allow(clippy::result_large_err)]
    let record_path = |request: &Request, response: Handshake| {
        path = request.uri().path().to_string();
        Ok(response)
    };
    let Ok(mut ws) = async_tungstenite::tokio::accept_hdr_async(tcp, record_path).await else { return };
    let (outbox, mut pending) = mpsc::unbounded_channel::<Message>();
    let connection = {
        let mut inner = shared.inner.lock().expect("fake Discord state");
        let refused = inner.refuse_resumes && path.starts_with("/resume");
        inner.connection_paths.push(path);
        if refused {
            return;
        }
        inner.next_connection += 1;
        inner.next_connection
    };
    let hello = json!({ "op": 10, "d": { "heartbeat_interval": HEARTBEAT_MS } });
    if ws.send(Message::text(hello.to_string())).await.is_err() {
        return;
    }
    loop {
        tokio::select! {
            out = pending.recv() => {
                let Some(out) = out else { break };
                let closing = matches!(out, Message::Close(None));
                if closing || ws.send(out).await.is_err() {
                    break;
                }
            }
            frame = ws.next() => {
                let text = match frame {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => continue,
                };
                let Ok(payload) = serde_json::from_str::<Value>(text.as_str()) else { break };
                let answer = match payload["op"].as_u64() {
                    Some(1) => {
                        shared.inner.lock().expect("fake Discord state").heartbeats += 1;
                        Answer::Send(vec![json!({ "op": 11 }).to_string()])
                    }
                    Some(2) => identify(&shared, &payload["d"], connection, &outbox),
                    Some(6) => resume(&shared, &payload["d"], connection, &outbox),
                    _ => Answer::Send(Vec::new()),
                };
                match answer {
                    Answer::Send(frames) => {
                        for frame in frames {
                            let _ = ws.send(Message::text(frame)).await;
                        }
                    }
                    Answer::Close(code, reason) => {
                        let close = CloseFrame { code: CloseCode::from(code), reason: reason.into() };
                        let _ = ws.close(Some(close)).await;
                        break;
                    }
                }
            }
        }
    }
    // A dropped connection ends here too: its socket goes without a close frame.
    drop(ws);
    for session in &mut shared.inner.lock().expect("fake Discord state").sessions {
        if session.client.as_ref().is_some_and(|(id, _)| *id == connection) {
            session.client = None;
        }
    }
}

/// What the fake answers a client's frame with.
enum Answer {
    Send(Vec<String>),
    Close(u16, &'static str),
}

/// Identify: a new session, READY as its first dispatch.
fn identify(shared: &Shared, d: &Value, connection: u64, outbox: &mpsc::UnboundedSender<Message>) -> Answer {
    let mut inner = shared.inner.lock().expect("fake Discord state");
    inner.identifies.push(d.clone());
    if d["token"].as_str() != Some(inner.token.as_str()) {
        return Answer::Close(4004, "Authentication failed.");
    }
    let id = format!("session-{connection}");
    let mut session = Session { id: id.clone(), log: Vec::new(), client: None, resumable: true };
    session.dispatch(
        "READY",
        json!({
            "v": 10,
            "user": { "id": BOT_USER_ID, "username": "kennel-bot", "bot": true },
            "session_id": id,
            "resume_gateway_url": format!("{}/resume", shared.gateway_url),
            "guilds": [],
        }),
    );
    let ready = session.log[0].1.clone();
    session.client = Some((connection, outbox.clone()));
    inner.sessions.push(session);
    Answer::Send(vec![ready])
}

/// Resume: the session's dispatches after `seq`, then RESUMED; or Invalid Session (`false`)
/// for a session that is unknown or no longer resumable.
fn resume(shared: &Shared, d: &Value, connection: u64, outbox: &mpsc::UnboundedSender<Message>) -> Answer {
    let mut inner = shared.inner.lock().expect("fake Discord state");
    inner.resumes.push(d.clone());
    if d["token"].as_str() != Some(inner.token.as_str()) {
        return Answer::Close(4004, "Authentication failed.");
    }
    let after = d["seq"].as_u64().unwrap_or(0);
    let Some(session) = inner.session(d["session_id"].as_str().unwrap_or_default()).filter(|s| s.resumable) else {
        return Answer::Send(vec![json!({ "op": 9, "d": false }).to_string()]);
    };
    let mut frames: Vec<String> =
        session.log.iter().filter(|(sequence, _)| *sequence > after).map(|(_, frame)| frame.clone()).collect();
    session.client = Some((connection, outbox.clone()));
    let sequence = session.log.len() as u64 + 1;
    let resumed = json!({ "op": 0, "t": "RESUMED", "s": sequence, "d": {} }).to_string();
    session.log.push((sequence, resumed.clone()));
    frames.push(resumed);
    Answer::Send(frames)
}
