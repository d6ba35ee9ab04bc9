//! Slack: the Web API (`{base_url}/{method}`, the bot token as `Authorization: Bearer`) to
//! send, and the Events API to hear: Slack posts each event to `/channels/NAME/inbound`,
//! signed with the app's signing secret. There is no poll mode.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use tokio_util::sync::CancellationToken;

use super::platform::{
    BoxFuture, Connection, Endpoint, FileSource, Inbound, Member, Outgoing, Platform, SendError, Sink, WebhookReply,
    WebhookRequest,
};
use crate::error::Error;

/// How long one Web API call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an upload's bytes may take.
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(300);

pub struct Slack {
    endpoint: Endpoint,
    /// Who each user id is, as `users.info` said: asked once per user.
    members: Mutex<HashMap<String, Member>>,
}

/// A call's arguments: a JSON body (write methods), or query arguments (methods Slack reads
/// only as form arguments, like `users.info` and `files.getUploadURLExternal`).
enum Args<'a> {
    Json(Value),
    Query(&'a [(&'a str, &'a str)]),
}

impl Slack {
    pub fn new(endpoint: Endpoint) -> Slack {
        Slack { endpoint, members: Mutex::new(HashMap::new()) }
    }

    fn refused(&self, what: impl std::fmt::Display) -> SendError {
        SendError::Failed(Error::failed(format!("channel `{}`: {what}", self.endpoint.channel)))
    }

    /// One Web API call. Slack answers `200 {"ok": false, "error": …}` when it refuses, and
    /// `429` with `Retry-After` when it throttles.
    async fn call(&self, method: &str, args: Args<'_>) -> Result<Value, SendError> {
        let url = format!("{}/{method}", self.endpoint.base_url);
        let (mut url, client) = self.endpoint.client(&url, CALL_TIMEOUT).await?;
        let token = self.endpoint.token.as_deref().unwrap_or_default();
        let req = match args {
            Args::Json(body) => client.post(url).json(&body),
            Args::Query(pairs) => {
                url.query_pairs_mut().extend_pairs(pairs);
                client.post(url)
            }
        };
        let res = req
            .bearer_auth(token)
            .send()
            .await
            .map_err(|e| self.refused(format!("Slack did not answer {method}: {e}")))?;
        if res.status() == reqwest::StatusCode::TOO_MANY_REQUESTS {
            return Err(SendError::RetryAfter(retry_after(res.headers())));
        }
        let status = res.status();
        if !status.is_success() {
            return Err(self.refused(format!("Slack answered {method} with HTTP {status}")));
        }
        let body: Value =
            res.json().await.map_err(|e| self.refused(format!("Slack's answer to {method} is not JSON: {e}")))?;
        if body["ok"] != Value::Bool(true) {
            let error = body["error"].as_str().unwrap_or("no reason given");
            return Err(self.refused(format!("Slack refused {method}: {error}")));
        }
        Ok(body)
    }

    async fn post_message(&self, body: Value) -> Result<(), SendError> {
        self.call("chat.postMessage", Args::Json(body)).await.map(drop)
    }

    /// Slack's external upload: ask for an upload URL, send the bytes there, then share the
    /// file into the conversation.
    async fn upload(
        &self,
        chat_id: &str,
        file_name: &str,
        bytes: &[u8],
        caption: Option<&str>,
    ) -> Result<(), SendError> {
        let length = bytes.len().to_string();
        let ticket = self
            .call("files.getUploadURLExternal", Args::Query(&[("filename", file_name), ("length", &length)]))
            .await?;
        let (Some(upload_url), Some(file_id)) = (ticket["upload_url"].as_str(), ticket["file_id"].as_str()) else {
            return Err(self.refused("Slack's files.getUploadURLExternal gave no upload_url and file_id"));
        };
        let (url, client) = self.endpoint.client(upload_url, UPLOAD_TIMEOUT).await?;
        let res = client
            .post(url)
            .body(bytes.to_vec())
            .send()
            .await
            .map_err(|e| self.refused(format!("Slack's upload URL did not take `{file_name}`: {e}")))?;
        if res.status() == reqwest::StatusCode::TOO_MANY_REQUESTS {
            return Err(SendError::RetryAfter(retry_after(res.headers())));
        }
        if !res.status().is_success() {
            return Err(self.refused(format!("Slack's upload URL answered HTTP {} for `{file_name}`", res.status())));
        }
        let mut complete = json!({ "files": [{ "id": file_id, "title": file_name }], "channel_id": chat_id });
        if let Some(caption) = caption {
            complete["initial_comment"] = json!(caption);
        }
        self.call("files.completeUploadExternal", Args::Json(complete)).await.map(drop)
    }

    /// Who `user_id` is: `users.info` once, then from memory; the bare id when Slack will
    /// not say (a message is not lost for want of a name).
    async fn member(&self, user_id: &str) -> Member {
        if let Some(known) = self.members.lock().expect("members lock").get(user_id) {
            return known.clone();
        }
        let Ok(info) = self.call("users.info", Args::Query(&[("user", user_id)])).await else {
            return Member { user_id: user_id.to_string(), display_name: user_id.to_string(), username: None };
        };
        let user = &info["user"];
        let first = |candidates: &[&Value]| {
            candidates.iter().filter_map(|v| v.as_str()).find(|s| !s.trim().is_empty()).map(str::to_string)
        };
        let username = user["name"].as_str().map(str::to_string);
        let member = Member {
            user_id: user_id.to_string(),
            display_name: first(&[
                &user["profile"]["display_name"],
                &user["profile"]["real_name"],
                &user["real_name"],
                &user["name"],
            ])
            .unwrap_or_else(|| user_id.to_string()),
            username,
        };
        self.members.lock().expect("members lock").insert(user_id.to_string(), member.clone());
        member
    }

    /// Checks `X-Slack-Signature` (`v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{body}`) and
    /// that the timestamp is recent.
    fn verify(&self, req: &WebhookRequest<'_>) -> Result<(), Error> {
        let channel = &self.endpoint.channel;
        let secret = self.endpoint.signing_secret.as_deref().ok_or_else(|| {
            Error::unavailable(format!("channel `{channel}` has no signing secret to check Slack's requests with"))
        })?;
        let header = |name: &str| req.headers.get(name).and_then(|v| v.to_str().ok());
        let timestamp = header("x-slack-request-timestamp").ok_or_else(|| {
            Error::forbidden(format!("channel `{channel}`: the request has no X-Slack-Request-Timestamp"))
        })?;
        let signature = header("x-slack-signature")
            .ok_or_else(|| Error::forbidden(format!("channel `{channel}`: the request has no X-Slack-Signature")))?;
        super::platform::check_fresh(channel, "X-Slack-Request-Timestamp", timestamp)?;
        let given = signature
            .strip_prefix("v0=")
            .and_then(|h| hex::decode(h).ok())
            .ok_or_else(|| Error::forbidden(format!("channel `{channel}`: X-Slack-Signature is not `v0=` and hex")))?;
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
        mac.update(format!("v0:{timestamp}:").as_bytes());
        mac.update(req.body);
        // `verify_slice` compares in constant time.
        mac.verify_slice(&given).map_err(|_| {
            Error::forbidden(format!("channel `{channel}`: X-Slack-Signature does not match the signing secret"))
        })
    }
}

/// `Retry-After`, or a second when Slack did not say.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Duration {
    crate::net::retry::retry_after_up_to(headers, super::platform::LONGEST_THROTTLE).unwrap_or(Duration::from_secs(1))
}

impl Platform for Slack {
    /// Slack's recommended length (it truncates at 40,000).
    fn text_limit(&self) -> usize {
        4000
    }

    fn account(&self) -> BoxFuture<'_, Result<Option<String>, SendError>> {
        Box::pin(async move {
            let me = self.call("auth.test", Args::Json(serde_json::json!({}))).await?;
            let text = |key: &str| me[key].as_str().unwrap_or("?").to_string();
            Ok(Some(format!("{} ({}) in {}", text("user"), text("user_id"), text("team"))))
        })
    }

    fn send<'a>(&'a self, chat_id: &'a str, out: &'a Outgoing) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            match out {
                Outgoing::Text(text) => self.post_message(json!({ "channel": chat_id, "text": text })).await,
                Outgoing::Image { media: FileSource::Url(url), caption } => {
                    let alt = caption.as_deref().unwrap_or("image");
                    self.post_message(json!({
                        "channel": chat_id,
                        "text": caption.as_deref().unwrap_or(url),
                        "blocks": [{ "type": "image", "image_url": url, "alt_text": alt }],
                    }))
                    .await
                }
                Outgoing::File { media: FileSource::Url(url), caption } => {
                    let text = match caption {
                        Some(caption) => format!("{caption}\n{url}"),
                        None => url.clone(),
                    };
                    self.post_message(json!({ "channel": chat_id, "text": text })).await
                }
                Outgoing::Image { media: FileSource::Bytes { file_name, bytes, .. }, caption }
                | Outgoing::File { media: FileSource::Bytes { file_name, bytes, .. }, caption } => {
                    self.upload(chat_id, file_name, bytes, caption.as_deref()).await
                }
                Outgoing::Poll { question, options } => {
                    // Slack has no native poll: the question and numbered options as text.
                    let mut text = format!("📊 {question}");
                    for (i, option) in options.iter().enumerate() {
                        text.push_str(&format!("\n{}. {option}", i + 1));
                    }
                    self.post_message(json!({ "channel": chat_id, "text": text })).await
                }
            }
        })
    }

    /// `conversations.open`: Slack lets a bot open a DM with any member of its workspace.
    fn direct_chat<'a>(&'a self, user_id: &'a str) -> BoxFuture<'a, Result<String, SendError>> {
        Box::pin(async move {
            let opened = self.call("conversations.open", Args::Json(json!({ "users": user_id }))).await?;
            opened["channel"]["id"]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| self.refused("Slack's conversations.open gave no channel id"))
        })
    }

    fn webhook<'a>(&'a self, req: WebhookRequest<'a>) -> BoxFuture<'a, Result<WebhookReply, Error>> {
        Box::pin(async move {
            self.verify(&req)?;
            let channel = &self.endpoint.channel;
            let envelope: Value = serde_json::from_slice(req.body)
                .map_err(|e| Error::invalid(format!("channel `{channel}`: Slack's event is not JSON: {e}")))?;
            match envelope["type"].as_str() {
                Some("url_verification") => {
                    let challenge = envelope["challenge"].as_str().ok_or_else(|| {
                        Error::invalid(format!("channel `{channel}`: Slack's url_verification has no challenge"))
                    })?;
                    Ok(WebhookReply::Challenge(challenge.to_string()))
                }
                Some("event_callback") => {
                    let event = &envelope["event"];
                    // Edits, joins and the like carry a subtype; the bot's own posts a bot_id.
                    let is_message = event["type"] == "message"
                        && event.get("subtype").is_none_or(Value::is_null)
                        && event.get("bot_id").is_none_or(Value::is_null);
                    let (true, Some(event_id), Some(chat_id), Some(user)) =
                        (is_message, envelope["event_id"].as_str(), event["channel"].as_str(), event["user"].as_str())
                    else {
                        return Ok(WebhookReply::Messages(vec![]));
                    };
                    Ok(WebhookReply::Messages(vec![Inbound {
                        message_id: event_id.to_string(),
                        chat_id: chat_id.to_string(),
                        chat_title: None,
                        is_group: event["channel_type"] != "im",
                        from: self.member(user).await,
                        text: event["text"].as_str().unwrap_or_default().to_string(),
                    }]))
                }
                _ => Ok(WebhookReply::Messages(vec![])),
            }
        })
    }

    /// Slack posts its events to us: nothing to listen to.
    fn listen(
        self: Arc<Self>,
        _sink: Sink,
        _state: Arc<dyn Fn(Connection) + Send + Sync>,
        _cancel: CancellationToken,
    ) -> Option<BoxFuture<'static, ()>> {
        None
    }
}
