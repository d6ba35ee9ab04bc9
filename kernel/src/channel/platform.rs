//! What every chat platform adapter provides, and what it hands the channel bridge
//! ([`super::Channels`]). An adapter speaks one platform's wire protocol and nothing else: no
//! sessions, rosters, deduplication, retries or splitting — the bridge does those once for
//! all of them.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::HeaderMap;
use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::net::guard::AllowedHosts;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One message a platform delivered to the bot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inbound {
    /// The platform's id for this message (Telegram `chat_id:message_id`, Slack `event_id`,
    /// Discord message id, a webhook's `id`): redelivery carries the same one.
    pub message_id: String,
    /// The conversation: a group, a channel, or a direct chat with one person.
    pub chat_id: String,
    /// The conversation's name when the platform gives one (a group's title).
    pub chat_title: Option<String>,
    /// A group conversation (several people): only those have a roster.
    pub is_group: bool,
    pub from: Member,
    pub text: String,
}

/// A person on a platform, as the roster records them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub user_id: String,
    pub display_name: String,
    pub username: Option<String>,
}

/// What to send.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
    /// Text within the platform's [`Platform::text_limit`] (the bridge splits longer text).
    Text(String),
    Image {
        media: FileSource,
        caption: Option<String>,
    },
    File {
        media: FileSource,
        caption: Option<String>,
    },
    Poll {
        question: String,
        options: Vec<String>,
    },
}

/// The file an image or file message carries: a URL the platform fetches itself, or bytes to
/// upload. (Not the `media` family, which makes and reads media.)
#[derive(Debug, Clone, PartialEq)]
pub enum FileSource {
    Url(String),
    Bytes { file_name: String, mime: String, bytes: Vec<u8> },
}

/// The longest throttle a platform's 429 is taken at its word for (an hour).
pub const LONGEST_THROTTLE: Duration = Duration::from_secs(3600);

/// Why a send did not happen.
#[derive(Debug)]
pub enum SendError {
    /// The platform said 429: try again after this long (its `retry_after`).
    RetryAfter(Duration),
    /// Anything else, as an error a person can act on (a bot that may not start a DM is
    /// [`crate::ErrorKind::Failed`] naming that).
    Failed(Error),
}

impl From<Error> for SendError {
    fn from(e: Error) -> Self {
        SendError::Failed(e)
    }
}

/// An inbound request to `/channels/NAME/inbound`, as the web server received it.
pub struct WebhookRequest<'a> {
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
}

/// What the adapter makes of an inbound request.
#[derive(Debug, PartialEq, Eq)]
pub enum WebhookReply {
    /// Verified: these messages (none for an event that is not a message), answered `200`.
    Messages(Vec<Inbound>),
    /// A handshake the platform expects echoed (Slack's `url_verification` challenge).
    Challenge(String),
}

/// Where inbound messages from polling or a socket go. The bridge stores each durably before
/// this returns, so a listener may advance its offset once it has.
pub type Sink = Arc<dyn Fn(Inbound) -> BoxFuture<'static, ()> + Send + Sync>;

/// How a listener is doing, for the dashboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    /// Webhook mode, or not started yet.
    Idle,
    Connected,
    /// The last attempt failed with this; it is retried with backoff.
    Failing(String),
}

/// Shared by an adapter's calls: the channel's name (for messages), its base URL, secrets, and
/// the address guard.
#[derive(Clone)]
pub struct Endpoint {
    pub channel: String,
    pub base_url: String,
    pub token: Option<String>,
    pub signing_secret: Option<String>,
    pub allowed_hosts: AllowedHosts,
    /// The clients made so far, by the address the guard resolved and the timeout: one per
    /// platform address, so its connections are kept alive between sends.
    pub clients: Arc<Mutex<HashMap<(SocketAddr, Duration), reqwest::Client>>>,
}

impl Endpoint {
    pub fn new(
        channel: &str,
        base_url: &str,
        token: Option<String>,
        signing_secret: Option<String>,
        allowed_hosts: AllowedHosts,
    ) -> Endpoint {
        Endpoint {
            channel: channel.to_string(),
            base_url: base_url.trim_end_matches('/').to_string(),
            token,
            signing_secret,
            allowed_hosts,
            clients: Arc::default(),
        }
    }

    /// A client for `url` pinned to the address the guard checked (`[channels] allowed_hosts`),
    /// checked on every call and reused while the address stays the same.
    pub async fn client(&self, url: &str, timeout: Duration) -> Result<(reqwest::Url, reqwest::Client), Error> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| Error::invalid(format!("channel `{}`: `{url}` is not a URL: {e}", self.channel)))?;
        let addr = crate::net::guard::resolve(&parsed, &self.allowed_hosts, "[channels] allowed_hosts").await?;
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        let client = match clients.get(&(addr, timeout)) {
            Some(client) => client.clone(),
            None => {
                let client = crate::net::pinned_client(&parsed, addr, timeout)?;
                clients.insert((addr, timeout), client.clone());
                client
            }
        };
        Ok((parsed, client))
    }
}

/// One platform's adapter.
pub trait Platform: Send + Sync + 'static {
    /// The longest text one message may carry, in characters.
    fn text_limit(&self) -> usize;

    /// Sends `out` to the conversation `chat_id`.
    fn send<'a>(&'a self, chat_id: &'a str, out: &'a Outgoing) -> BoxFuture<'a, Result<(), SendError>>;

    /// The conversation that reaches `user_id` privately, opening it if the platform does
    /// that (Slack `conversations.open`, Discord `POST /users/@me/channels`); Telegram's is
    /// the user's own id, which fails on send if they never messaged the bot.
    fn direct_chat<'a>(&'a self, user_id: &'a str) -> BoxFuture<'a, Result<String, SendError>>;

    /// Verifies and reads one inbound request (webhook mode). A forged or stale request is
    /// [`crate::ErrorKind::Forbidden`], naming what did not verify; a body that verifies but
    /// does not parse is [`crate::ErrorKind::InvalidArguments`].
    fn webhook<'a>(&'a self, req: WebhookRequest<'a>) -> BoxFuture<'a, Result<WebhookReply, Error>>;

    /// Who the platform says this channel's account is (Telegram `getMe`, Slack `auth.test`,
    /// Discord `GET /users/@me`): one call that needs the token and reaches the platform, the
    /// channel's "test connection". A webhook channel has no account to ask: `Ok(None)`.
    fn account(&self) -> BoxFuture<'_, Result<Option<String>, SendError>>;

    /// Poll mode: listens until `cancel`, handing every message to `sink` and reporting its
    /// state to `state`. `None` when this platform has no such mode (a webhook channel,
    /// Slack).
    fn listen(
        self: Arc<Self>,
        sink: Sink,
        state: Arc<dyn Fn(Connection) + Send + Sync>,
        cancel: CancellationToken,
    ) -> Option<BoxFuture<'static, ()>>;
}

/// How far a signed request's timestamp may be from now before it is taken for a replay
/// (Slack's own advice, and the webhook channel's rule).
pub const REPLAY_WINDOW_SECS: i64 = 5 * 60;

/// Refuses a signed request whose `timestamp` (Unix seconds, from the `header` named) is not a
/// number or is more than [`REPLAY_WINDOW_SECS`] from now: a signature alone can be replayed
/// forever, a signed timestamp only for those minutes (the dedupe rows cover them).
pub fn check_fresh(channel: &str, header: &str, timestamp: &str) -> Result<(), Error> {
    let sent_at: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| Error::forbidden(format!("channel `{channel}`: {header} `{timestamp}` is not Unix seconds")))?;
    let now = unix_now();
    if (now - sent_at).abs() > REPLAY_WINDOW_SECS {
        return Err(Error::forbidden(format!(
            "channel `{channel}`: {header} is {} s from now (more than 5 minutes): a replayed request, or a clock that is wrong",
            now - sent_at
        )));
    }
    Ok(())
}

/// Now, in Unix seconds: what signed requests' timestamps count in.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or_default()
}
