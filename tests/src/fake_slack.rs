//! A Slack Web API for tests, on loopback: `POST /{method}` with the bot token as
//! `Authorization: Bearer`, arguments as JSON or as query/form arguments, answered as Slack
//! answers (`{"ok": true, …}`, or `200 {"ok": false, "error": …}`, or `429` with
//! `Retry-After`). It knows `chat.postMessage`, `conversations.open`, `users.info` and the
//! external upload (`files.getUploadURLExternal`, the bytes to its `upload_url`,
//! `files.completeUploadExternal`). Every call is recorded with its arguments.
//!
//! For the other direction (Slack posting events to the daemon), [`message_event`] builds an
//! Events API envelope and [`signed_headers`] signs a body as Slack does.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// Bytes that arrived at an upload URL.
#[derive(Debug, Clone, PartialEq)]
pub struct SlackUpload {
    pub file_id: String,
    pub file_name: String,
    pub bytes: Vec<u8>,
}

#[derive(Default)]
struct Inner {
    token: String,
    users: HashMap<String, Value>,
    missing_channels: HashSet<String>,
    calls: Vec<(String, Value)>,
    throttled: HashMap<String, u64>,
    /// Upload tickets handed out: file id → file name.
    tickets: HashMap<String, String>,
    uploads: Vec<SlackUpload>,
}

#[derive(Clone)]
struct Shared {
    inner: Arc<Mutex<Inner>>,
    base_url: String,
}

pub struct FakeSlack {
    shared: Shared,
    signing_secret: String,
}

impl FakeSlack {
    /// Starts the fake on a loopback port; it accepts only `token`.
    pub async fn start(token: &str, signing_secret: &str) -> FakeSlack {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
        let base_url = format!("http://{}", listener.local_addr().expect("its address"));
        let inner = Inner { token: token.to_string(), ..Inner::default() };
        let shared = Shared { inner: Arc::new(Mutex::new(inner)), base_url };
        let app = Router::new()
            .route("/_upload/{file_id}", post(upload))
            .route("/{method}", post(method))
            .with_state(shared.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.expect("serving the fake Slack") });
        FakeSlack { shared, signing_secret: signing_secret.to_string() }
    }

    /// The Web API's base (a channel's `base_url`).
    pub fn base_url(&self) -> String {
        self.shared.base_url.clone()
    }

    pub fn signing_secret(&self) -> &str {
        &self.signing_secret
    }

    /// A workspace member `users.info` and `conversations.open` know.
    pub fn add_user(&self, id: &str, name: &str, real_name: &str, display_name: &str) {
        let user = json!({
            "id": id,
            "name": name,
            "real_name": real_name,
            "profile": { "display_name": display_name, "real_name": real_name },
        });
        self.lock().users.insert(id.to_string(), user);
    }

    /// Makes `chat.postMessage` to `channel` answer `channel_not_found`.
    pub fn forget_channel(&self, channel: &str) {
        self.lock().missing_channels.insert(channel.to_string());
    }

    /// Every call so far: the method and its arguments (JSON body and query merged).
    pub fn calls(&self) -> Vec<(String, Value)> {
        self.lock().calls.clone()
    }

    /// The arguments of every call to `method`.
    pub fn calls_to(&self, method: &str) -> Vec<Value> {
        self.lock().calls.iter().filter(|(m, _)| m == method).map(|(_, v)| v.clone()).collect()
    }

    /// The next call to `method` answers `429` with `Retry-After: retry_after_secs`.
    pub fn throttle_next(&self, method: &str, retry_after_secs: u64) {
        self.lock().throttled.insert(method.to_string(), retry_after_secs);
    }

    /// Every upload's bytes, in order.
    pub fn uploads(&self) -> Vec<SlackUpload> {
        self.lock().uploads.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.shared.inner.lock().expect("fake Slack state")
    }
}

/// The headers Slack signs an event with now: `X-Slack-Request-Timestamp` and
/// `X-Slack-Signature` (`v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{body}`).
pub fn signed_headers(secret: &str, body: &str) -> Vec<(String, String)> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_secs();
    signed_headers_at(secret, body, now)
}

/// Like [`signed_headers`], signed at `timestamp` (seconds since 1970), for stale requests.
pub fn signed_headers_at(secret: &str, body: &str, timestamp: u64) -> Vec<(String, String)> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(format!("v0:{timestamp}:{body}").as_bytes());
    let signature = format!("v0={}", hex::encode(mac.finalize().into_bytes()));
    vec![
        ("X-Slack-Request-Timestamp".to_string(), timestamp.to_string()),
        ("X-Slack-Signature".to_string(), signature),
        ("Content-Type".to_string(), "application/json".to_string()),
    ]
}

/// An Events API envelope carrying one message (`channel_type` `im` for a DM, `channel` or
/// `group` otherwise).
pub fn message_event(event_id: &str, channel: &str, channel_type: &str, user: &str, text: &str) -> Value {
    json!({
        "token": "verification-token-unused",
        "team_id": "T0001",
        "api_app_id": "A0001",
        "type": "event_callback",
        "event_id": event_id,
        "event_time": 1_700_000_000,
        "event": {
            "type": "message",
            "channel": channel,
            "channel_type": channel_type,
            "user": user,
            "text": text,
            "ts": "1700000000.000100",
        },
    })
}

fn refuse(error: &str) -> Response {
    Json(json!({ "ok": false, "error": error })).into_response()
}

async fn method(
    State(shared): State<Shared>,
    Path(method): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut args = serde_json::Map::new();
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let form: Vec<(String, String)> = if content_type.starts_with("application/x-www-form-urlencoded") {
        serde_urlencoded::from_bytes(&body).unwrap_or_default()
    } else {
        Vec::new()
    };
    let query: Vec<(String, String)> =
        serde_urlencoded::from_str(query.as_deref().unwrap_or_default()).unwrap_or_default();
    for (k, v) in query.into_iter().chain(form) {
        args.insert(k, Value::String(v));
    }
    if content_type.starts_with("application/json")
        && let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(&body)
    {
        args.extend(fields);
    }
    let args = Value::Object(args);
    let mut inner = shared.inner.lock().expect("fake Slack state");
    let bearer = headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    if bearer != Some(inner.token.as_str()) {
        return refuse("invalid_auth");
    }
    if let Some(secs) = inner.throttled.remove(&method) {
        return (StatusCode::TOO_MANY_REQUESTS, [("Retry-After", secs.to_string())], "").into_response();
    }
    inner.calls.push((method.clone(), args.clone()));
    let text = |key: &str| args[key].as_str().unwrap_or_default().to_string();
    match method.as_str() {
        "chat.postMessage" => {
            let channel = text("channel");
            if channel.is_empty() || inner.missing_channels.contains(&channel) {
                return refuse("channel_not_found");
            }
            if text("text").is_empty() && args["blocks"].is_null() {
                return refuse("no_text");
            }
            Json(json!({ "ok": true, "channel": channel, "ts": format!("1700000000.{:06}", inner.calls.len()) }))
                .into_response()
        }
        "auth.test" => Json(json!({
            "ok": true, "url": "https://kennel-test.slack.com/", "team": "Kennel Test", "user": "kennelbot",
            "team_id": "T0001", "user_id": "U0BOT", "bot_id": "B0001",
        }))
        .into_response(),
        "conversations.open" => {
            let user = text("users");
            if !inner.users.contains_key(&user) {
                return refuse("user_not_found");
            }
            Json(json!({ "ok": true, "channel": { "id": format!("D{user}") } })).into_response()
        }
        "users.info" => match inner.users.get(&text("user")) {
            Some(user) => Json(json!({ "ok": true, "user": user })).into_response(),
            None => refuse("user_not_found"),
        },
        "files.getUploadURLExternal" => {
            let (file_name, length) = (text("filename"), text("length"));
            if file_name.is_empty() || length.parse::<u64>().is_err() {
                return refuse("invalid_arguments");
            }
            let file_id = format!("F{:04}", inner.tickets.len() + 1);
            inner.tickets.insert(file_id.clone(), file_name);
            let upload_url = format!("{}/_upload/{file_id}", shared.base_url);
            Json(json!({ "ok": true, "upload_url": upload_url, "file_id": file_id })).into_response()
        }
        "files.completeUploadExternal" => {
            let files = args["files"].as_array().cloned().unwrap_or_default();
            let uploaded = |id: &str| inner.uploads.iter().any(|u| u.file_id == id);
            if files.is_empty() || !files.iter().all(|f| uploaded(f["id"].as_str().unwrap_or_default())) {
                return refuse("file_not_found");
            }
            Json(json!({ "ok": true, "files": files })).into_response()
        }
        _ => refuse("unknown_method"),
    }
}

async fn upload(State(shared): State<Shared>, Path(file_id): Path<String>, body: Bytes) -> Response {
    let mut inner = shared.inner.lock().expect("fake Slack state");
    let Some(file_name) = inner.tickets.get(&file_id).cloned() else {
        return (StatusCode::NOT_FOUND, "no such upload").into_response();
    };
    inner.uploads.push(SlackUpload { file_id, file_name, bytes: body.to_vec() });
    (StatusCode::OK, format!("OK - {}", body.len())).into_response()
}
