//! A Discord for tests, on loopback: the REST API (`Authorization: Bot TOKEN`;
//! `GET /gateway/bot`, `POST /channels/{id}/messages` as JSON or multipart,
//! `POST /users/@me/channels`) and a real websocket gateway on a second port (Hello,
//! Identify checked against the token then READY, heartbeat ACKs, dispatches pushed with
//! [`FakeDiscord::dispatch_message`]). Errors are Discord's: `429 {"retry_after": s}`,
//! `403 {"code": 50007}` for a user whose DMs are closed, `401` for a wrong token (and close
//! code 4004 on the gateway).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_tungstenite::tungstenite::Message;
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
    /// Identified gateway connections, each with its outbox.
    clients: Vec<(u64, mpsc::UnboundedSender<Message>)>,
    identifies: Vec<Value>,
    heartbeats: usize,
    sequence: u64,
    next_id: u64,
    next_connection: u64,
}

impl Inner {
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

    /// A gateway client has identified and is still connected.
    pub fn connected(&self) -> bool {
        !self.lock().clients.is_empty()
    }

    /// Waits up to `within` for [`FakeDiscord::connected`] to be `want`.
    pub async fn wait_connected(&self, want: bool, within: Duration) -> bool {
        crate::eventually(within, || async { self.connected() == want }).await
    }

    /// Every Identify payload's `d` received, in order.
    pub fn identifies(&self) -> Vec<Value> {
        self.lock().identifies.clone()
    }

    /// Heartbeats (op 1) received.
    pub fn heartbeats(&self) -> usize {
        self.lock().heartbeats
    }

    /// Pushes a `MESSAGE_CREATE` to every identified client; returns the message's id. A DM
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

    /// Pushes any dispatch (op 0) event `t` with data `d` to every identified client.
    pub fn dispatch(&self, t: &str, d: Value) {
        let mut inner = self.lock();
        inner.sequence += 1;
        let frame = json!({ "op": 0, "t": t, "s": inner.sequence, "d": d }).to_string();
        for (_, outbox) in &inner.clients {
            let _ = outbox.send(Message::text(frame.clone()));
        }
    }

    /// Sends op 7 (Reconnect) to every identified client, as Discord does before it moves one.
    pub fn request_reconnect(&self) {
        let inner = self.lock();
        for (_, outbox) in &inner.clients {
            let _ = outbox.send(Message::text(json!({ "op": 7, "d": null }).to_string()));
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

async fn open_dm(State(shared): State<Shared>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    if let Some(refused) = refusal(&shared, &headers, "POST /users/@me/channels".into(), body.clone()) {
        return refused;
    }
    let Some(user) = body["recipient_id"].as_str() else {
        return error(StatusCode::BAD_REQUEST, 50035, "Invalid Form Body");
    };
    Json(json!({ "id": dm_channel_id(user), "type": 1, "recipients": [{ "id": user }] })).into_response()
}

/// One gateway connection: Hello, then Identify → READY, heartbeats → ACK, and whatever the
/// test dispatches.
async fn gateway_connection(shared: Shared, tcp: tokio::net::TcpStream) {
    let Ok(mut ws) = async_tungstenite::tokio::accept_async(tcp).await else { return };
    let (outbox, mut pending) = mpsc::unbounded_channel::<Message>();
    let connection = {
        let mut inner = shared.inner.lock().expect("fake Discord state");
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
                if ws.send(out).await.is_err() {
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
                match payload["op"].as_u64() {
                    Some(1) => {
                        shared.inner.lock().expect("fake Discord state").heartbeats += 1;
                        let _ = ws.send(Message::text(json!({ "op": 11 }).to_string())).await;
                    }
                    Some(2) => {
                        let ready = {
                            let mut inner = shared.inner.lock().expect("fake Discord state");
                            inner.identifies.push(payload["d"].clone());
                            if payload["d"]["token"].as_str() != Some(inner.token.as_str()) {
                                None
                            } else {
                                inner.clients.push((connection, outbox.clone()));
                                inner.sequence += 1;
                                Some(json!({
                                    "op": 0, "t": "READY", "s": inner.sequence,
                                    "d": {
                                        "v": 10,
                                        "user": { "id": BOT_USER_ID, "username": "kennel-bot", "bot": true },
                                        "session_id": format!("session-{connection}"),
                                        "resume_gateway_url": shared.gateway_url,
                                        "guilds": [],
                                    },
                                }))
                            }
                        };
                        match ready {
                            Some(ready) => {
                                let _ = ws.send(Message::text(ready.to_string())).await;
                            }
                            None => {
                                let close = CloseFrame { code: CloseCode::from(4004), reason: "Authentication failed.".into() };
                                let _ = ws.close(Some(close)).await;
                                break;
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    shared.inner.lock().expect("fake Discord state").clients.retain(|(id, _)| *id != connection);
}
