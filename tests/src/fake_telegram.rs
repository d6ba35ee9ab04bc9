//! A local Telegram Bot API for tests that speaks the real wire protocol: `POST
//! /bot{token}/{method}` with a JSON or multipart body, answered `{"ok": true, "result"}` or
//! `{"ok": false, "error_code", "description", "parameters"}`.
//!
//! It knows `getUpdates` (a long poll honouring `offset` and `timeout`, woken by a push),
//! `sendMessage`, `sendPhoto`, `sendDocument` and `sendPoll`, and keeps Telegram's rules a
//! test can trip over: a wrong token is `401 Unauthorized`; a send to a user (a positive chat
//! id) who never messaged the bot privately is `403 Forbidden: bot can't initiate conversation
//! with a user`; [`FakeTelegram::throttle_next`] answers a method's next call with `429` and
//! `parameters.retry_after`. Tests push updates and read back every call made.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde_json::{Value, json};
use tokio::sync::Notify;

pub struct FakeTelegram {
    base: String,
    shared: Arc<Shared>,
}

struct Shared {
    token: String,
    state: Mutex<Fake>,
    /// Wakes long polls when an update is pushed.
    pushed: Notify,
}

#[derive(Default)]
struct Fake {
    /// Updates not yet confirmed by a `getUpdates` with a higher offset.
    updates: Vec<Value>,
    last_update_id: i64,
    last_message_id: i64,
    calls: Vec<(String, Value)>,
    throttled: HashMap<String, u64>,
    /// Users who have messaged the bot privately, whom it may message.
    reachable: HashSet<i64>,
}

impl FakeTelegram {
    /// Serves a bot whose token is `token` on a loopback port.
    pub async fn start(token: &str) -> FakeTelegram {
        let shared = Arc::new(Shared {
            token: token.to_string(),
            state: Mutex::new(Fake { last_update_id: 1000, ..Fake::default() }),
            pushed: Notify::new(),
        });
        let app = Router::new().route("/{bot}/{method}", axum::routing::any(call)).with_state(shared.clone());
        let port = crate::serve_on_loopback(app).await;
        FakeTelegram { base: format!("http://127.0.0.1:{port}"), shared }
    }

    /// The API's base URL, for `[channels.NAME] base_url`.
    pub fn base_url(&self) -> String {
        self.base.clone()
    }

    /// Queues an update for `getUpdates`, numbering it when it has no `update_id`; returns its id.
    pub fn push_update(&self, mut update: Value) -> i64 {
        let id = {
            let mut fake = self.shared.state.lock().expect("fake telegram");
            let id = match update.get("update_id").and_then(Value::as_i64) {
                Some(id) => id,
                None => fake.last_update_id + 1,
            };
            fake.last_update_id = fake.last_update_id.max(id);
            update["update_id"] = json!(id);
            fake.updates.push(update);
            id
        };
        self.shared.pushed.notify_waiters();
        id
    }

    /// Someone writes `text` in the group `chat_id` (negative, as Telegram's are), a
    /// supergroup titled `title`; returns the message's id.
    pub fn group_message(
        &self,
        chat_id: i64,
        title: &str,
        user_id: i64,
        first_name: &str,
        username: Option<&str>,
        text: &str,
    ) -> i64 {
        let mut from = json!({ "id": user_id, "is_bot": false, "first_name": first_name });
        if let Some(username) = username {
            from["username"] = json!(username);
        }
        let chat = json!({ "id": chat_id, "type": "supergroup", "title": title });
        self.message(chat, from, text)
    }

    /// `user_id` writes `text` to the bot privately (after which the bot may message them);
    /// returns the message's id.
    pub fn private_message(&self, user_id: i64, first_name: &str, text: &str) -> i64 {
        self.shared.state.lock().expect("fake telegram").reachable.insert(user_id);
        let from = json!({ "id": user_id, "is_bot": false, "first_name": first_name });
        let chat = json!({ "id": user_id, "type": "private", "first_name": first_name });
        self.message(chat, from, text)
    }

    fn message(&self, chat: Value, from: Value, text: &str) -> i64 {
        let message_id = {
            let mut fake = self.shared.state.lock().expect("fake telegram");
            fake.last_message_id += 1;
            fake.last_message_id
        };
        let message =
            json!({ "message_id": message_id, "date": 1_700_000_000, "chat": chat, "from": from, "text": text });
        self.push_update(json!({ "message": message }));
        message_id
    }

    /// Every call with the right token, in order: the method and its parameters (a JSON body
    /// as sent; a multipart body's text fields as strings and files as
    /// `{"file_name", "bytes_len", "content_type"}`).
    pub fn calls(&self) -> Vec<(String, Value)> {
        self.shared.state.lock().expect("fake telegram").calls.clone()
    }

    /// The parameters of every call of `method`, in order.
    pub fn calls_of(&self, method: &str) -> Vec<Value> {
        self.calls().into_iter().filter(|(m, _)| m == method).map(|(_, params)| params).collect()
    }

    /// The next call of `method` is answered `429` with `parameters.retry_after`.
    pub fn throttle_next(&self, method: &str, retry_after_secs: u64) {
        self.shared.state.lock().expect("fake telegram").throttled.insert(method.to_string(), retry_after_secs);
    }
}

async fn call(
    State(shared): State<Arc<Shared>>,
    Path((bot, method)): Path<(String, String)>,
    req: Request,
) -> Response {
    if bot.strip_prefix("bot") != Some(shared.token.as_str()) {
        return refusal(401, "Unauthorized", None);
    }
    let params = match read_params(req).await {
        Ok(params) => params,
        Err(message) => return refusal(400, &format!("Bad Request: {message}"), None),
    };
    let throttled = {
        let mut fake = shared.state.lock().expect("fake telegram");
        fake.calls.push((method.clone(), params.clone()));
        fake.throttled.remove(&method)
    };
    if let Some(seconds) = throttled {
        return refusal(429, &format!("Too Many Requests: retry after {seconds}"), Some(seconds));
    }
    match method.as_str() {
        "getUpdates" => get_updates(&shared, &params).await,
        // The Bot API's own answer for a bot: its id, its name, that it is one.
        "getMe" => {
            ok(json!({ "id": 123456, "is_bot": true, "first_name": "Kennel test bot", "username": "kennel_test_bot" }))
        }
        "sendMessage" | "sendPhoto" | "sendDocument" | "sendPoll" => send(&shared, &method, &params),
        _ => refusal(404, "Not Found", None),
    }
}

/// A JSON body as it is, a multipart body's fields as JSON, an empty body as `{}`.
async fn read_params(req: Request) -> Result<Value, String> {
    let content_type =
        req.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_ascii_lowercase();
    if content_type.starts_with("multipart/form-data") {
        let mut multipart = Multipart::from_request(req, &()).await.map_err(|e| e.body_text())?;
        let mut fields = serde_json::Map::new();
        while let Some(field) = multipart.next_field().await.map_err(|e| e.body_text())? {
            let name = field.name().unwrap_or_default().to_string();
            let file_name = field.file_name().map(str::to_string);
            let mime = field.content_type().map(str::to_string);
            let bytes = field.bytes().await.map_err(|e| e.body_text())?;
            let value = match file_name {
                Some(file_name) => json!({ "file_name": file_name, "bytes_len": bytes.len(), "content_type": mime }),
                None => json!(String::from_utf8_lossy(&bytes)),
            };
            fields.insert(name, value);
        }
        return Ok(Value::Object(fields));
    }
    let bytes = axum::body::to_bytes(req.into_body(), 64 << 20).await.map_err(|e| e.to_string())?;
    if bytes.is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("can't parse JSON: {e}"))
}

/// Updates from `offset` on (confirming those before it), at once when there are some, else
/// after waiting up to `timeout` seconds for a push.
async fn get_updates(shared: &Shared, params: &Value) -> Response {
    let offset = integer(&params["offset"]);
    let wait = integer(&params["timeout"]).unwrap_or(0).max(0) as u64;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(wait);
    loop {
        let pushed = shared.pushed.notified();
        let ready: Vec<Value> = {
            let mut fake = shared.state.lock().expect("fake telegram");
            if let Some(offset) = offset {
                fake.updates.retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
            }
            fake.updates.clone()
        };
        if !ready.is_empty() || tokio::time::Instant::now() >= deadline {
            return ok(json!(ready));
        }
        tokio::select! {
            _ = pushed => {}
            _ = tokio::time::sleep_until(deadline) => {}
        }
    }
}

fn send(shared: &Shared, method: &str, params: &Value) -> Response {
    let Some(chat_id) = integer(&params["chat_id"]) else {
        return refusal(400, "Bad Request: chat_id is empty", None);
    };
    let missing = match method {
        "sendMessage" => text(&params["text"]).is_none().then_some("message text is empty"),
        "sendPhoto" => params.get("photo").is_none().then_some("there is no photo in the request"),
        "sendDocument" => params.get("document").is_none().then_some("there is no document in the request"),
        _ => poll_problem(params),
    };
    if let Some(problem) = missing {
        return refusal(400, &format!("Bad Request: {problem}"), None);
    }
    if text(&params["text"]).is_some_and(|t| t.chars().count() > 4096) {
        return refusal(400, "Bad Request: message is too long", None);
    }
    let mut fake = shared.state.lock().expect("fake telegram");
    if chat_id > 0 && !fake.reachable.contains(&chat_id) {
        return refusal(403, "Forbidden: bot can't initiate conversation with a user", None);
    }
    fake.last_message_id += 1;
    ok(json!({ "message_id": fake.last_message_id, "date": 1_700_000_000, "chat": { "id": chat_id } }))
}

/// What is wrong with a `sendPoll`: a question, and 2-10 options as `InputPollOption`s.
fn poll_problem(params: &Value) -> Option<&'static str> {
    if text(&params["question"]).is_none() {
        return Some("poll question must be non-empty");
    }
    let Some(options) = params["options"].as_array() else {
        return Some("poll options must be an array of InputPollOption");
    };
    if !(2..=10).contains(&options.len()) {
        return Some("poll must have 2-10 options");
    }
    if options.iter().any(|o| text(&o["text"]).is_none()) {
        return Some("poll options must be InputPollOption objects with non-empty text");
    }
    None
}

/// A number, or a string of one (multipart fields are strings).
fn integer(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
}

fn text(value: &Value) -> Option<&str> {
    value.as_str().filter(|t| !t.is_empty())
}

fn ok(result: Value) -> Response {
    Json(json!({ "ok": true, "result": result })).into_response()
}

fn refusal(code: u16, description: &str, retry_after: Option<u64>) -> Response {
    let mut body = json!({ "ok": false, "error_code": code, "description": description });
    if let Some(seconds) = retry_after {
        body["parameters"] = json!({ "retry_after": seconds });
    }
    (StatusCode::from_u16(code).expect("a status"), Json(body)).into_response()
}
