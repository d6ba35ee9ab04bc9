//! Discord: the REST API (`{base_url}/…`, `Authorization: Bot TOKEN`) to send, and the
//! gateway (a websocket) to hear. Discord's webhooks (interactions) carry no group messages,
//! so a Discord channel always reads the gateway.
//!
//! The gateway session: Hello, Identify, heartbeats, dispatches. When the connection breaks
//! (Reconnect, a closed socket, a missed heartbeat acknowledgement, a resumable Invalid
//! Session), the listener reconnects after a backoff to READY's `resume_gateway_url` and sends
//! Resume with the last sequence it saw, so Discord replays what was dispatched while it was
//! away. When Discord refuses the resume (Invalid Session `false`, close codes 4007, 4009 and
//! the fatal ones), or the resume URL cannot be reached (say `[channels] allowed_hosts` names
//! only the main gateway) or lets go before RESUMED, the next try identifies afresh through
//! `GET /gateway/bot`; messages sent in between are then lost, as for every Discord client.

use std::sync::Arc;
use std::time::Duration;

use async_tungstenite::tungstenite::Message;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::platform::{
    BoxFuture, Connection, Endpoint, FileSource, Inbound, Member, Outgoing, Platform, SendError, Sink, WebhookReply,
    WebhookRequest,
};
use crate::error::Error;

/// How long one REST call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an upload may take.
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(300);
/// How long connecting to the gateway (TCP, TLS, the websocket handshake) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// The first wait before reconnecting; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT.
const INTENTS: u64 = (1 << 9) | (1 << 12) | (1 << 15);
/// Discord's "Cannot send messages to this user".
const CANNOT_MESSAGE_USER: i64 = 50007;
/// Gateway close codes after which a session cannot be resumed: authentication failed, an
/// invalid sequence, a session that timed out, and the shard and intent refusals.
const UNRESUMABLE_CLOSE_CODES: [u16; 8] = [4004, 4007, 4009, 4010, 4011, 4012, 4013, 4014];

/// What one gateway session leaves to the next: enough to resume it.
#[derive(Default)]
struct Gateway {
    /// READY's `session_id` and `resume_gateway_url`, while Discord may still resume them.
    resumable: Option<(String, String)>,
    /// The last dispatch's sequence number: what heartbeats and Resume carry.
    sequence: Option<u64>,
    /// The bot's own user id, from READY: its own messages are not heard.
    own_id: String,
    /// Sessions started or resumed so far (READY, RESUMED): a resume that did not get there
    /// is not tried again.
    established: u64,
}

impl Gateway {
    /// The session cannot be resumed: the next connection identifies afresh.
    fn forget(&mut self) {
        self.resumable = None;
        self.sequence = None;
    }
}

pub struct Discord {
    endpoint: Endpoint,
}

/// A REST call's body.
enum Body {
    None,
    Json(Value),
    Multipart(reqwest::multipart::Form),
}

impl Discord {
    pub fn new(endpoint: Endpoint) -> Discord {
        Discord { endpoint }
    }

    fn failed(&self, what: impl std::fmt::Display) -> SendError {
        SendError::Failed(Error::failed(format!("channel `{}`: {what}", self.endpoint.channel)))
    }

    /// One REST call. Discord throttles with `429 {"retry_after": seconds}` and refuses with
    /// `{"code": N, "message": …}`.
    async fn call(&self, method: reqwest::Method, path: &str, body: Body) -> Result<Value, SendError> {
        let timeout = if matches!(body, Body::Multipart(_)) { UPLOAD_TIMEOUT } else { CALL_TIMEOUT };
        let (url, client) = self.endpoint.client(&format!("{}{path}", self.endpoint.base_url), timeout).await?;
        let token = self.endpoint.token.as_deref().unwrap_or_default();
        let req = client.request(method.clone(), url).header(reqwest::header::AUTHORIZATION, format!("Bot {token}"));
        let req = match body {
            Body::None => req,
            Body::Json(v) => req.json(&v),
            Body::Multipart(form) => req.multipart(form),
        };
        let res = req.send().await.map_err(|e| self.failed(format!("Discord did not answer {method} {path}: {e}")))?;
        let status = res.status();
        let header_wait = crate::net::retry::retry_after_up_to(res.headers(), super::platform::LONGEST_THROTTLE);
        let text = res.text().await.unwrap_or_default();
        let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            let longest = super::platform::LONGEST_THROTTLE;
            let said = answer["retry_after"].as_f64().filter(|s| s.is_finite());
            let wait = said.map(|s| Duration::from_secs_f64(s.clamp(0.0, longest.as_secs_f64())));
            return Err(SendError::RetryAfter(wait.or(header_wait).unwrap_or(Duration::from_secs(1))));
        }
        if !status.is_success() {
            let message = answer["message"].as_str().unwrap_or(text.trim());
            return Err(match answer["code"].as_i64() {
                Some(CANNOT_MESSAGE_USER) => self.failed(format!(
                    "Discord will not deliver this direct message ({message}, code 50007): a bot may message only \
                     someone who shares a server with it and allows direct messages from that server's members"
                )),
                Some(code) => {
                    self.failed(format!("Discord refused {method} {path}: {message} (code {code}, HTTP {status})"))
                }
                None => self.failed(format!("Discord refused {method} {path}: HTTP {status} {message}")),
            });
        }
        Ok(answer)
    }

    async fn post_message(&self, chat_id: &str, body: Body) -> Result<(), SendError> {
        self.call(reqwest::Method::POST, &format!("/channels/{chat_id}/messages"), body).await.map(drop)
    }

    /// One gateway connection, until `cancel` (`Ok`) or until it breaks (`Err`, what broke).
    /// It resumes `gateway`'s session when there is one to resume, else identifies.
    /// `backoff` goes back to its first value once Discord says READY or RESUMED.
    async fn session(
        &self,
        gateway: &mut Gateway,
        sink: &Sink,
        state: &(dyn Fn(Connection) + Send + Sync),
        cancel: &CancellationToken,
        backoff: &mut Duration,
    ) -> Result<(), String> {
        let resume_url = gateway.resumable.as_ref().map(|(_, url)| url.clone());
        let connecting = async {
            let base = match resume_url {
                Some(url) => url,
                None => self.gateway_url().await?,
            };
            let ws_url = format!("{}/?v=10&encoding=json", base.trim_end_matches('/'));
            tokio::time::timeout(CONNECT_TIMEOUT, self.connect(&ws_url)).await.map_err(|_| {
                format!("connecting to Discord's gateway took more than {} s", CONNECT_TIMEOUT.as_secs())
            })?
        };
        let mut ws = tokio::select! {
            _ = cancel.cancelled() => return Ok(()),
            ws = connecting => ws?,
        };

        let mut heartbeat: Option<tokio::time::Interval> = None;
        let mut acknowledged = true;
        loop {
            let tick = async {
                match heartbeat.as_mut() {
                    Some(interval) => interval.tick().await,
                    None => std::future::pending().await,
                }
            };
            let frame = tokio::select! {
                _ = cancel.cancelled() => {
                    let _ = ws.close(None).await;
                    return Ok(());
                }
                _ = tick => {
                    if !acknowledged {
                        return Err("Discord's gateway did not acknowledge a heartbeat".into());
                    }
                    acknowledged = false;
                    send(&mut ws, json!({ "op": 1, "d": gateway.sequence })).await?;
                    continue;
                }
                frame = ws.next() => frame,
            };
            let text = match frame {
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(Message::Close(close))) => {
                    let Some(close) = close else { return Err("Discord's gateway closed the connection".into()) };
                    let code = u16::from(close.code);
                    if UNRESUMABLE_CLOSE_CODES.contains(&code) {
                        gateway.forget();
                    }
                    return Err(format!("Discord's gateway closed the connection ({code} {})", close.reason));
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(format!("Discord's gateway connection failed: {e}")),
                None => return Err("Discord's gateway connection ended".into()),
            };
            let Ok(payload) = serde_json::from_str::<Value>(text.as_str()) else { continue };
            if let Some(sequence) = payload["s"].as_u64() {
                gateway.sequence = Some(sequence);
            }
            match payload["op"].as_u64() {
                Some(10) => {
                    let every = payload["d"]["heartbeat_interval"].as_u64().unwrap_or(41_250).max(100);
                    let every = Duration::from_millis(every);
                    heartbeat = Some(tokio::time::interval_at(tokio::time::Instant::now() + every, every));
                    let hello_answer = match &gateway.resumable {
                        Some((session_id, _)) => self.resume(session_id, gateway.sequence),
                        None => self.identify(),
                    };
                    send(&mut ws, hello_answer).await?;
                }
                Some(1) => send(&mut ws, json!({ "op": 1, "d": gateway.sequence })).await?,
                Some(11) => acknowledged = true,
                Some(7) => return Err("Discord's gateway asked to reconnect".into()),
                Some(9) => {
                    if payload["d"] != Value::Bool(true) {
                        gateway.forget();
                    }
                    return Err("Discord's gateway invalidated the session".into());
                }
                Some(0) => match payload["t"].as_str() {
                    Some("READY") => {
                        let d = &payload["d"];
                        gateway.own_id = d["user"]["id"].as_str().unwrap_or_default().to_string();
                        gateway.resumable = d["session_id"]
                            .as_str()
                            .zip(d["resume_gateway_url"].as_str())
                            .map(|(session_id, url)| (session_id.to_string(), url.to_string()));
                        gateway.established += 1;
                        *backoff = FIRST_BACKOFF;
                        state(Connection::Connected);
                    }
                    Some("RESUMED") => {
                        gateway.established += 1;
                        *backoff = FIRST_BACKOFF;
                        state(Connection::Connected);
                    }
                    Some("MESSAGE_CREATE") => {
                        if let Some(inbound) = inbound(&payload["d"], &gateway.own_id) {
                            sink(inbound).await;
                        }
                    }
                    _ => {}
                },
                _ => {}
            }
        }
    }

    /// `GET /gateway/bot`: where a new session connects.
    async fn gateway_url(&self) -> Result<String, String> {
        let gateway = self.call(reqwest::Method::GET, "/gateway/bot", Body::None).await.map_err(|e| match e {
            SendError::RetryAfter(wait) => format!("Discord throttled GET /gateway/bot for {} s", wait.as_secs_f64()),
            SendError::Failed(e) => e.message,
        })?;
        gateway["url"].as_str().map(str::to_string).ok_or_else(|| "Discord's GET /gateway/bot gave no url".into())
    }

    fn resume(&self, session_id: &str, sequence: Option<u64>) -> Value {
        json!({
            "op": 6,
            "d": {
                "token": self.endpoint.token.as_deref().unwrap_or_default(),
                "session_id": session_id,
                "seq": sequence,
            },
        })
    }

    fn identify(&self) -> Value {
        json!({
            "op": 2,
            "d": {
                "token": self.endpoint.token.as_deref().unwrap_or_default(),
                "intents": INTENTS,
                "properties": { "os": std::env::consts::OS, "browser": "kennel", "device": "kennel" },
            },
        })
    }

    /// Opens the websocket to `ws_url` on the address the guard checked.
    async fn connect(&self, ws_url: &str) -> Result<Socket, String> {
        let mut checked =
            reqwest::Url::parse(ws_url).map_err(|e| format!("Discord's gateway `{ws_url}` is not a URL: {e}"))?;
        let scheme = match checked.scheme() {
            "wss" => "https",
            "ws" => "http",
            other => return Err(format!("Discord's gateway `{ws_url}` is not a websocket URL (`{other}`)")),
        };
        checked.set_scheme(scheme).map_err(|_| format!("Discord's gateway `{ws_url}` cannot be checked"))?;
        let addr = crate::net::guard::resolve(&checked, &self.endpoint.allowed_hosts, "[channels] allowed_hosts")
            .await
            .map_err(|e| e.message)?;
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("cannot connect to Discord's gateway at {addr}: {e}"))?;
        let (ws, _) = async_tungstenite::tokio::client_async_tls(ws_url, tcp)
            .await
            .map_err(|e| format!("Discord's gateway refused the websocket: {e}"))?;
        Ok(ws)
    }
}

type Socket = async_tungstenite::WebSocketStream<async_tungstenite::tokio::ClientStream<tokio::net::TcpStream>>;

async fn send(ws: &mut Socket, payload: Value) -> Result<(), String> {
    ws.send(Message::text(payload.to_string())).await.map_err(|e| format!("cannot write to Discord's gateway: {e}"))
}

/// A `MESSAGE_CREATE`'s message, unless a bot (this one included) wrote it.
fn inbound(d: &Value, own_id: &str) -> Option<Inbound> {
    let author = &d["author"];
    let user_id = author["id"].as_str()?;
    if author["bot"] == Value::Bool(true) || user_id == own_id {
        return None;
    }
    let username = author["username"].as_str().map(str::to_string);
    let display_name = author["global_name"]
        .as_str()
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string)
        .or_else(|| username.clone())
        .unwrap_or_else(|| user_id.to_string());
    Some(Inbound {
        message_id: d["id"].as_str()?.to_string(),
        chat_id: d["channel_id"].as_str()?.to_string(),
        chat_title: None,
        is_group: d["guild_id"].is_string(),
        from: Member { user_id: user_id.to_string(), display_name, username },
        text: d["content"].as_str().unwrap_or_default().to_string(),
    })
}

impl Platform for Discord {
    fn text_limit(&self) -> usize {
        2000
    }

    fn account(&self) -> BoxFuture<'_, Result<Option<String>, SendError>> {
        Box::pin(async move {
            let me = self.call(reqwest::Method::GET, "/users/@me", Body::None).await?;
            Ok(Some(format!("{} (bot {})", me["username"].as_str().unwrap_or("?"), me["id"].as_str().unwrap_or("?"))))
        })
    }

    fn send<'a>(&'a self, chat_id: &'a str, out: &'a Outgoing) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let body = match out {
                Outgoing::Text(text) => Body::Json(json!({ "content": text })),
                Outgoing::Image { media: FileSource::Url(url), caption } => Body::Json(json!({
                    "content": caption.as_deref().unwrap_or_default(),
                    "embeds": [{ "image": { "url": url } }],
                })),
                Outgoing::File { media: FileSource::Url(url), caption } => Body::Json(json!({
                    "content": match caption {
                        Some(caption) => format!("{caption}\n{url}"),
                        None => url.clone(),
                    },
                })),
                Outgoing::Image { media: FileSource::Bytes { file_name, mime, bytes }, caption }
                | Outgoing::File { media: FileSource::Bytes { file_name, mime, bytes }, caption } => {
                    let payload = json!({
                        "content": caption.as_deref().unwrap_or_default(),
                        "attachments": [{ "id": 0, "filename": file_name }],
                    });
                    let part = reqwest::multipart::Part::bytes(bytes.clone())
                        .file_name(file_name.clone())
                        .mime_str(mime)
                        .or_else(|_| {
                            reqwest::multipart::Part::bytes(bytes.clone())
                                .file_name(file_name.clone())
                                .mime_str("application/octet-stream")
                        })
                        .map_err(|e| self.failed(format!("cannot attach `{file_name}`: {e}")))?;
                    Body::Multipart(
                        reqwest::multipart::Form::new()
                            .text("payload_json", payload.to_string())
                            .part("files[0]", part),
                    )
                }
                Outgoing::Poll { question, options } => Body::Json(json!({
                    "poll": {
                        "question": { "text": question },
                        "answers": options.iter().map(|o| json!({ "poll_media": { "text": o } })).collect::<Vec<_>>(),
                        "duration": 24,
                    },
                })),
            };
            self.post_message(chat_id, body).await
        })
    }

    /// `POST /users/@me/channels`: the DM channel with `user_id`. Opening it succeeds even
    /// when sending will not (code 50007 on send).
    fn direct_chat<'a>(&'a self, user_id: &'a str) -> BoxFuture<'a, Result<String, SendError>> {
        Box::pin(async move {
            let dm = self
                .call(reqwest::Method::POST, "/users/@me/channels", Body::Json(json!({ "recipient_id": user_id })))
                .await?;
            dm["id"].as_str().map(str::to_string).ok_or_else(|| self.failed("Discord's DM channel has no id"))
        })
    }

    fn webhook<'a>(&'a self, _req: WebhookRequest<'a>) -> BoxFuture<'a, Result<WebhookReply, Error>> {
        Box::pin(async move { Err(Error::invalid("Discord channels read the gateway; they take no webhooks")) })
    }

    fn listen(
        self: Arc<Self>,
        sink: Sink,
        state: Arc<dyn Fn(Connection) + Send + Sync>,
        cancel: CancellationToken,
    ) -> Option<BoxFuture<'static, ()>> {
        Some(Box::pin(async move {
            let mut backoff = FIRST_BACKOFF;
            let mut gateway = Gateway::default();
            loop {
                let (resuming, established) = (gateway.resumable.is_some(), gateway.established);
                let broke = match self.session(&mut gateway, &sink, state.as_ref(), &cancel, &mut backoff).await {
                    Ok(()) => return,
                    Err(broke) => broke,
                };
                if resuming && gateway.established == established {
                    // The resume URL could not be reached (or let go before RESUMED): the
                    // next try identifies afresh through GET /gateway/bot.
                    gateway.forget();
                }
                if cancel.is_cancelled() {
                    return;
                }
                tracing::warn!(channel = %self.endpoint.channel, "{broke}; reconnecting in {} s", backoff.as_secs());
                state(Connection::Failing(broke));
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }))
    }
}
