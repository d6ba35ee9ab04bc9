//! Telegram's Bot API: every call is `POST {base_url}/bot{token}/{method}`, answered
//! `{"ok": true, "result": …}` or `{"ok": false, "error_code", "description", "parameters"}`.
//! Sends with `sendMessage`, `sendPhoto`, `sendDocument` (a URL Telegram fetches, or a
//! multipart upload) and `sendPoll`. Hears by long polling `getUpdates` (mode poll), or from
//! the updates Telegram posts (mode webhook), which carry the secret token given to
//! `setWebhook` in `X-Telegram-Bot-Api-Secret-Token`.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;

use super::ChannelMode;
use super::platform::{
    BoxFuture, Connection, Endpoint, FileSource, Inbound, Member, Outgoing, Platform, SendError, Sink, WebhookReply,
    WebhookRequest,
};
use crate::error::Error;

/// How long a send may take, uploads included.
const SEND_TIMEOUT: Duration = Duration::from_secs(60);
/// How long Telegram holds a `getUpdates` open when there is nothing new.
const POLL_SECONDS: u64 = 25;
/// The client's limit on a long poll: the poll's own wait and room for a slow answer.
const POLL_TIMEOUT: Duration = Duration::from_secs(POLL_SECONDS + 15);
const BACKOFF_FIRST: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

pub struct Telegram {
    endpoint: Endpoint,
    mode: ChannelMode,
}

impl Telegram {
    pub fn new(endpoint: Endpoint, mode: ChannelMode) -> Telegram {
        Telegram { endpoint, mode }
    }

    /// Calls `method` and returns its `result`; a refusal as [`SendError`], naming the
    /// channel and the method.
    async fn call(&self, method: &str, body: Body, timeout: Duration) -> Result<Value, SendError> {
        let channel = &self.endpoint.channel;
        let token = self.endpoint.token.as_deref().filter(|t| !t.is_empty()).ok_or_else(|| {
            Error::unavailable(format!(
                "channel `{channel}` has no bot token: set token_env to the variable holding it"
            ))
        })?;
        let url = format!("{}/bot{token}/{method}", self.endpoint.base_url);
        // The URL holds the token: keep it out of every message.
        let (url, client) = self.endpoint.client(&url, timeout).await.map_err(|e| redact(e, token))?;
        let request = match body {
            Body::Json(params) => client.post(url).json(&params),
            Body::Form(form) => client.post(url).multipart(form),
        };
        let response = request.send().await.map_err(|e| {
            Error::failed(format!("channel `{channel}`: cannot reach Telegram for {method}: {}", e.without_url()))
        })?;
        let status = response.status();
        let text = response.text().await.map_err(|e| {
            Error::failed(format!("channel `{channel}`: Telegram's answer to {method} broke off: {}", e.without_url()))
        })?;
        let reply: Reply = serde_json::from_str(&text).map_err(|_| {
            Error::failed(format!(
                "channel `{channel}`: Telegram answered {method} with {status} and not the Bot API's JSON: {}",
                crate::channel::excerpt(&text)
            ))
        })?;
        if reply.ok {
            return Ok(reply.result);
        }
        let code = reply.error_code.unwrap_or(status.as_u16());
        if code == 429 {
            let seconds = reply.parameters.and_then(|p| p.retry_after).unwrap_or(1);
            return Err(SendError::RetryAfter(Duration::from_secs(seconds).min(super::platform::LONGEST_THROTTLE)));
        }
        let description = reply.description.unwrap_or_else(|| status.to_string());
        Err(SendError::Failed(Error::failed(format!(
            "channel `{channel}`: Telegram refused {method}: {description}{}",
            hint(code, &description)
        ))))
    }

    /// One `getUpdates`: the updates after `offset`, each with its id and its message when it
    /// is one the bot should hear.
    async fn updates(&self, offset: Option<i64>, wait_seconds: u64) -> Result<Vec<(i64, Option<Inbound>)>, SendError> {
        let mut params = json!({ "timeout": wait_seconds, "allowed_updates": ["message"] });
        if let Some(offset) = offset {
            params["offset"] = json!(offset);
        }
        let result = self.call("getUpdates", Body::Json(params), POLL_TIMEOUT).await?;
        let updates: Vec<Value> = serde_json::from_value(result).map_err(|e| {
            Error::failed(format!("channel `{}`: getUpdates answered no list of updates: {e}", self.endpoint.channel))
        })?;
        // An update that does not read is skipped, not retried forever.
        Ok(updates
            .into_iter()
            .filter_map(|u| {
                let id = u.get("update_id")?.as_i64()?;
                Some((id, serde_json::from_value::<Update>(u).ok().and_then(Update::into_inbound)))
            })
            .collect())
    }

    /// Long polls until `cancel`, handing each message to `sink` before confirming it.
    async fn poll(&self, sink: Sink, state: Arc<dyn Fn(Connection) + Send + Sync>, cancel: CancellationToken) {
        let mut offset = None;
        let mut backoff = BACKOFF_FIRST;
        let mut connected = false;
        loop {
            // Until a poll has succeeded, ask without waiting, so the state shows at once.
            let wait = if connected { POLL_SECONDS } else { 0 };
            let result = tokio::select! {
                _ = cancel.cancelled() => return,
                result = self.updates(offset, wait) => result,
            };
            match result {
                Ok(updates) => {
                    if !connected {
                        state(Connection::Connected);
                        connected = true;
                    }
                    backoff = BACKOFF_FIRST;
                    for (id, message) in updates {
                        if let Some(message) = message {
                            sink(message).await;
                        }
                        offset = Some(id + 1);
                    }
                }
                Err(e) => {
                    connected = false;
                    let (pause, message) = match e {
                        SendError::RetryAfter(after) => {
                            (after, format!("Telegram asked to wait {} s before polling again", after.as_secs()))
                        }
                        SendError::Failed(e) => (backoff, e.message),
                    };
                    tracing::warn!(channel = %self.endpoint.channel, error = %message, "telegram getUpdates failed");
                    state(Connection::Failing(message));
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        _ = tokio::time::sleep(pause) => {}
                    }
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                }
            }
        }
    }

    /// `sendPhoto` / `sendDocument`: a URL as a JSON field, bytes as a multipart upload.
    async fn send_media(
        &self,
        method: &str,
        field: &str,
        chat_id: &str,
        media: &FileSource,
        caption: &Option<String>,
    ) -> Result<Value, SendError> {
        let body = match media {
            FileSource::Url(url) => {
                let mut params = json!({ "chat_id": chat_value(chat_id), field: url });
                if let Some(caption) = caption {
                    params["caption"] = json!(caption);
                }
                Body::Json(params)
            }
            FileSource::Bytes { file_name, mime, bytes } => {
                let channel = &self.endpoint.channel;
                let part = reqwest::multipart::Part::bytes(bytes.clone())
                    .file_name(file_name.clone())
                    .mime_str(mime)
                    .map_err(|e| {
                    Error::invalid(format!("channel `{channel}`: `{mime}` is not a MIME type: {e}"))
                })?;
                let mut form = reqwest::multipart::Form::new().text("chat_id", chat_id.to_string());
                if let Some(caption) = caption {
                    form = form.text("caption", caption.clone());
                }
                Body::Form(form.part(field.to_string(), part))
            }
        };
        self.call(method, body, SEND_TIMEOUT).await
    }
}

enum Body {
    Json(Value),
    Form(reqwest::multipart::Form),
}

impl Platform for Telegram {
    fn text_limit(&self) -> usize {
        4096
    }

    fn account(&self) -> BoxFuture<'_, Result<Option<String>, SendError>> {
        Box::pin(async move {
            let me = self.call("getMe", Body::Json(serde_json::json!({})), SEND_TIMEOUT).await?;
            let name = me["username"].as_str().map(|u| format!("@{u}")).unwrap_or_else(|| me["first_name"].to_string());
            Ok(Some(format!("{name} (bot {})", me["id"])))
        })
    }

    fn send<'a>(&'a self, chat_id: &'a str, out: &'a Outgoing) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            match out {
                Outgoing::Text(text) => {
                    let params = json!({ "chat_id": chat_value(chat_id), "text": text });
                    self.call("sendMessage", Body::Json(params), SEND_TIMEOUT).await?;
                }
                Outgoing::Image { media, caption } => {
                    self.send_media("sendPhoto", "photo", chat_id, media, caption).await?;
                }
                Outgoing::File { media, caption } => {
                    self.send_media("sendDocument", "document", chat_id, media, caption).await?;
                }
                Outgoing::Poll { question, options } => {
                    let options: Vec<Value> = options.iter().map(|o| json!({ "text": o })).collect();
                    let params = json!({ "chat_id": chat_value(chat_id), "question": question, "options": options });
                    self.call("sendPoll", Body::Json(params), SEND_TIMEOUT).await?;
                }
            }
            Ok(())
        })
    }

    fn direct_chat<'a>(&'a self, user_id: &'a str) -> BoxFuture<'a, Result<String, SendError>> {
        // A private chat's id is the user's id.
        Box::pin(async move { Ok(user_id.to_string()) })
    }

    fn webhook<'a>(&'a self, req: WebhookRequest<'a>) -> BoxFuture<'a, Result<WebhookReply, Error>> {
        Box::pin(async move {
            let channel = &self.endpoint.channel;
            let Some(secret) = self.endpoint.signing_secret.as_deref().filter(|s| !s.is_empty()) else {
                return Err(Error::forbidden(format!(
                    "channel `{channel}`: a Telegram webhook is only accepted with a secret token: set \
                     signing_secret_env and give the same value as secret_token to setWebhook"
                )));
            };
            let Some(presented) = req.headers.get(SECRET_HEADER) else {
                return Err(Error::forbidden(format!(
                    "channel `{channel}`: the request has no X-Telegram-Bot-Api-Secret-Token header"
                )));
            };
            if !bool::from(presented.as_bytes().ct_eq(secret.as_bytes())) {
                return Err(Error::forbidden(format!(
                    "channel `{channel}`: the X-Telegram-Bot-Api-Secret-Token header does not match the secret in \
                     signing_secret_env"
                )));
            }
            let update: Update = serde_json::from_slice(req.body)
                .map_err(|e| Error::invalid(format!("channel `{channel}`: not a Telegram update: {e}")))?;
            Ok(WebhookReply::Messages(update.into_inbound().into_iter().collect()))
        })
    }

    fn listen(
        self: Arc<Self>,
        sink: Sink,
        state: Arc<dyn Fn(Connection) + Send + Sync>,
        cancel: CancellationToken,
    ) -> Option<BoxFuture<'static, ()>> {
        if self.mode == ChannelMode::Webhook {
            return None;
        }
        Some(Box::pin(async move { self.poll(sink, state, cancel).await }))
    }
}

/// A chat id as the Bot API takes it: a number, or a `@channelname` string.
fn chat_value(chat_id: &str) -> Value {
    chat_id.parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::from(chat_id))
}

/// What a person can do about a refusal Telegram describes tersely.
fn hint(code: u16, description: &str) -> &'static str {
    if description.contains("bot can't initiate conversation") {
        " (a bot can only message someone who has messaged it first)"
    } else if description.contains("bot was blocked by the user") {
        " (they blocked the bot; they can unblock it in Telegram)"
    } else if description.contains("chat not found") {
        " (the id is wrong, or the bot is not a member of that chat)"
    } else if code == 401 {
        " (the bot token in token_env is wrong or was revoked)"
    } else {
        ""
    }
}

/// `e` with the bot token replaced, for URLs a message quotes.
fn redact(mut e: Error, token: &str) -> Error {
    e.message = e.message.replace(token, "<token>");
    e
}

#[derive(Deserialize)]
struct Reply {
    ok: bool,
    #[serde(default)]
    result: Value,
    error_code: Option<u16>,
    description: Option<String>,
    parameters: Option<ReplyParameters>,
}

#[derive(Deserialize)]
struct ReplyParameters {
    retry_after: Option<u64>,
}

/// The parts of an `Update` the bot reads; everything else is ignored.
#[derive(Deserialize)]
struct Update {
    message: Option<Message>,
}

#[derive(Deserialize)]
struct Message {
    message_id: i64,
    chat: Chat,
    from: Option<User>,
    text: Option<String>,
    caption: Option<String>,
}

#[derive(Deserialize)]
struct Chat {
    id: i64,
    #[serde(rename = "type")]
    kind: String,
    title: Option<String>,
}

#[derive(Deserialize)]
struct User {
    id: i64,
    #[serde(default)]
    is_bot: bool,
    first_name: String,
    last_name: Option<String>,
    username: Option<String>,
}

impl Update {
    /// The message a person wrote, if this update is one: not a bot's, not a channel post,
    /// and with text (or a caption).
    fn into_inbound(self) -> Option<Inbound> {
        let message = self.message?;
        let from = message.from?;
        if from.is_bot || message.chat.kind == "channel" {
            return None;
        }
        let text = message.text.or(message.caption)?;
        let display_name = match from.last_name {
            Some(last) if !last.is_empty() => format!("{} {last}", from.first_name),
            _ => from.first_name,
        };
        Some(Inbound {
            message_id: format!("{}:{}", message.chat.id, message.message_id),
            chat_id: message.chat.id.to_string(),
            chat_title: message.chat.title,
            is_group: matches!(message.chat.kind.as_str(), "group" | "supergroup"),
            from: Member { user_id: from.id.to_string(), display_name, username: from.username },
            text,
        })
    }
}
