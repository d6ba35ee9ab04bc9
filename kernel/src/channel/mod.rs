//! Channels (spec §6): chat platforms bound to agents. Each `[channels.NAME]` is one bot
//! account on Telegram, Slack or Discord, or a generic webhook, answered by one agent.
//!
//! The adapters (`telegram.rs`, `slack.rs`, `discord.rs`, `webhook.rs`) speak their
//! platform's wire protocol behind [`platform::Platform`]; the bridge here decides the rest
//! once for all of them:
//! - **Stored before answered.** An inbound message is written (`channel_inbound`, keyed by
//!   the platform's message id) before the platform gets its `200` or the poller advances,
//!   so a redelivered webhook finds its row and runs no second turn, and a message the daemon
//!   stopped before answering is answered when it starts again.
//! - **One session per conversation** (`channel NAME:CHAT`), one turn at a time in it, in the
//!   order messages arrived; the reply goes back to that conversation.
//! - **Rosters** record who spoke in each group conversation; direct chats have none.
//! - **Sending** splits text at the platform's limit (at a line, else a space, else a
//!   character) and retries a platform 429 after its `retry_after` (at most [`MAX_RETRIES`]
//!   times, each wait at most [`MAX_RETRY_WAIT`]). Every send is recorded.
//! - **The guards** of `channel_send`, `channel_dm` and `channel_members` are in
//!   [`Channels::send_from`], [`Channels::dm`] and [`Channels::members`].
//!
//! # Design notes
//!
//! ## Layout
//!
//! Channels (spec §6, family `channel`, issue 23): `Channels`, the bridge (below): `mod.rs`
//! its state and adapters, `inbound.rs` messages that arrive and the turns that answer them,
//! `outbound.rs` sends, their retries and records;
//! `platform.rs` the adapter contract (`Platform`: send, direct chat, verify a webhook, listen);
//! `telegram.rs`, `slack.rs`, `discord.rs`, `webhook.rs` the adapters; `split.rs` long text into
//! messages; `store.rs` (`channel_inbound`, `channel_conversations`, `channel_members`,
//! `channel_outbound`); `tools.rs` the three tools.
//!
//! ## Channels
//!
//! - **Config**: `[channels.NAME]` with `kind` (telegram, slack, discord, webhook), `agent` (by
//!   name, resolved at each message, so it may be spawned after the daemon starts), `base_url`
//!   (the platform's own by default; tests point it at local servers), `token_env` and
//!   `signing_secret_env` (secrets are read from those variables at start; a missing one makes
//!   the channel `unavailable: …` on `/api/channels`, not a failed start), `mode`,
//!   `default_target`, `deliver_only`; `[channels] allowed_hosts` is the address guard's list for
//!   every outbound channel request (`Endpoint::client` and Discord's gateway socket resolve
//!   through `net::guard`). Checked at load (`channel::config::check`): what each kind needs, and
//!   modes it has — Telegram polls (`getUpdates`) by default or takes webhooks; Slack and webhook
//!   channels are posted to; Discord reads its gateway (interactions carry no group messages).
//! - **Inbound**: poll listeners (Telegram long polling, Discord's gateway: Hello, Identify,
//!   heartbeats, READY, `MESSAGE_CREATE`, reconnect with backoff; no resume) and
//!   `POST /channels/{name}/inbound` (open, verified by the adapter: Telegram's secret token
//!   header, Slack's `v0` signature within 5 minutes, a webhook channel's
//!   `X-Kennel-Signature-256` HMAC of `X-Kennel-Timestamp` + `.` + body, also within 5 minutes
//!   (`channel::platform::check_fresh`); a forged or replayed request is 403). Each message is stored in
//!   `channel_inbound` under the platform's id **before** the platform is answered (or the poll
//!   offset moves): a redelivery changes nothing, so it never runs a second turn. Rows still
//!   `pending` at start are answered then (the turn retries the session's unanswered message, so
//!   it is not added twice).
//! - **Answering**: one session per conversation (`channel NAME:CHAT`), turns in it one at a
//!   time in arrival order (a fair lock per conversation), headless, with the conversation as the
//!   call context's `ChannelContext`. The agent reads who wrote and where
//!   (`[Telegram message on channel `team` in the group "Ops" (-100…) from Ann (@ann, user_id
//!   42)]`). The reply goes back to the conversation; a turn that ends without one marks the row
//!   `failed` with why.
//! - **Sending** (`Channels::deliver`, for replies, tools, schedules and deliver-only webhooks):
//!   text split at the platform's limit (Telegram 4096, Discord 2000, Slack 4000, webhook 65536
//!   characters; at a line, else a space, else a character), each part retried after a 429 for
//!   its `retry_after` (at most 5 times, each wait at most 60 s; beyond, `ResourceExhausted`).
//!   Every send is recorded in `channel_outbound` with who sent it and how it ended.
//! - **Rosters**: each inbound group message upserts (channel, chat, user) with display name,
//!   username and last seen. Direct chats have none.
//! - **The tools' guards** (decided in `Channels`, spec §6):
//!   - `channel_send(channel, target?, content)`: content is text, image, file (a public `url`,
//!     or a workspace `path` uploaded, at most 20 MiB) or a poll (2–10 options; a numbered list
//!     where the platform has no polls: Slack, and the webhook's JSON carries it as is). In a
//!     conversation turn it may only send to that conversation — a group's or a direct one's
//!     (**decision**: the spec names groups; a stranger in a direct chat can talk an agent into
//!     the wrong recipient just as well). Out-of-band turns name any target, or the channel's
//!     `default_target`.
//!   - `channel_dm(user_id, message)`: only in a group turn (`needs_conversation`; in a direct
//!     conversation it says to reply there); the recipient must be on that conversation's
//!     roster; the platform's private chat (`direct_chat`: Slack `conversations.open`, Discord
//!     `POST /users/@me/channels`, Telegram the user's id). A Telegram user who never wrote to
//!     the bot, or a Discord user who does not accept its DMs, is a `Failed` naming that — never a
//!     fallback to the group.
//!   - `channel_members(channel?, chat_id?)`: the turn's conversation by default; naming another
//!     is `Forbidden`; out-of-band turns must name both; a direct conversation has no roster
//!     (`InvalidArguments` saying so). Read-only.
//!   - The grant `channel.*` is the gate; an agent may use any configured channel, not only the
//!     one it answers (**decision**: an alerts agent posting to the team's chat is the common case).
//! - **Deliver-only webhooks**: `deliver_only = true` on a webhook channel runs no turn; each
//!   inbound message's text is sent to `default_target` (`CHANNEL:TARGET`, checked at load to be
//!   present: another configured channel) by `deliver_only`.
//! - **Fronts**: `GET /api/channels` (each channel's kind, mode, agent, state: idle, connected,
//!   failing: …, unavailable: …), `GET /api/channels/{name}` (conversations with rosters, the
//!   latest 50 messages each way); the dashboard's **Channels** pages (`/channels`,
//!   `/channels/{name}`), in the hostile-text corpus (names, titles, chat ids and messages are
//!   strangers' text). Tests: `tests/tests/system/channels.rs` (through the daemon) and
//!   `channel_adapters.rs` (each adapter against `tests/src/fake_{telegram,slack,discord,webhook}.rs`,
//!   local servers speaking each platform's API).
//! - **Discord's gateway resumes** (issue 43): a broken connection reconnects to READY's
//!   `resume_gateway_url` and sends Resume with the last sequence, so Discord replays what was
//!   sent meanwhile; only a refused resume (Invalid Session `false`, close 4007/4009) identifies
//!   afresh. Channel traffic is pruned by `[retention] channel_traffic_days`.
//! - **Not built**: operator sends from the dashboard.

pub(crate) mod config;
pub mod discord;
mod inbound;
mod outbound;
pub mod platform;
pub mod slack;
mod split;
mod store;
pub mod telegram;
mod tools;
pub mod webhook;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex, OnceLock, RwLock, Weak};
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use crate::agent::Agents;
use crate::ask::Questions;
use crate::clock::Clock;
use crate::cluster::Cluster;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::family::{Family, Services};
use crate::runtime::Runtime;
use crate::session::Sessions;
use crate::tool::ChannelContext;
use platform::{Connection, Endpoint, Platform};

pub use config::{ChannelConfig, ChannelKind, ChannelMode, ChannelsConfig};
pub use outbound::SentTo;
pub use store::{Conversation, InboundRow, OutboundRow, RosterEntry};
pub(crate) use tools::register;

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "channel",
    open: |s| {
        s.provide(Channels::new(s));
        Ok(())
    },
    register,
};

/// Times one send is retried after a platform 429.
pub const MAX_RETRIES: u32 = 5;
/// The longest wait a 429 is honoured for; a platform asking for more fails the send.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// One configured channel.
struct Channel {
    name: String,
    config: ChannelConfig,
    /// The adapter, or why there is none (a secret's variable not set).
    platform: std::result::Result<Arc<dyn Platform>, Error>,
    connection: StdMutex<Connection>,
    /// Ends its listener: the daemon stops, or the channel is edited or removed.
    stop: CancellationToken,
    /// `[channels] allowed_hosts` as its adapter was made with it.
    hosts: crate::net::guard::AllowedHosts,
}

impl Channel {
    fn platform(&self) -> Result<&Arc<dyn Platform>> {
        self.platform.as_ref().map_err(Clone::clone)
    }
}

/// A channel as the API and the dashboard show it.
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema)]
pub struct ChannelInfo {
    pub name: String,
    /// telegram, slack, discord or webhook.
    pub kind: String,
    /// poll or webhook.
    pub mode: String,
    /// The agent that answers its messages.
    pub agent: Option<String>,
    pub default_target: Option<String>,
    pub deliver_only: bool,
    /// idle, connected, failing: …, or unavailable: … (a secret missing).
    pub state: String,
    /// Its settings as config.toml holds them (secrets by their variables' names).
    pub settings: ChannelConfig,
}

/// What testing a channel found ([`Channels::test`]).
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema)]
pub struct ChannelTest {
    pub channel: String,
    /// Whether the platform answered as it should.
    pub ok: bool,
    /// The account the platform named, or what it (or the daemon) said was wrong.
    pub answer: String,
    /// How long the call took.
    pub millis: u64,
}

/// A conversation: the channel's name and the platform's chat id.
type ConversationKey = (String, String);

/// Every channel of this daemon, and the bridge between them and the agents.
pub struct Channels {
    /// Replaced whole by [`Channels::apply`] when config.toml's channels change.
    channels: RwLock<BTreeMap<String, Arc<Channel>>>,
    /// Whether the listeners run (the daemon started them): a channel added later starts its own.
    started: AtomicBool,
    db: Db,
    clock: Clock,
    /// One lock per conversation: its turns run one at a time, in arrival order (tokio's
    /// mutex is fair).
    conversations: StdMutex<HashMap<ConversationKey, Arc<tokio::sync::Mutex<()>>>>,
    stop: CancellationToken,
    /// What answering a message takes: the agent bound to the channel, the conversation's
    /// session, the turn; and the cluster, whose lease lets one daemon poll a channel.
    agents: Arc<Agents>,
    sessions: Arc<Sessions>,
    runtime: Runtime,
    cluster: Arc<Cluster>,
    /// The `ask_user` questions waiting on people, which a message may answer. The ask family
    /// opens after this one and holds it (to send questions), so it links itself here, weakly.
    questions: OnceLock<Weak<Questions>>,
    /// The approvals the owner decides from their chat with a one-time code (`[notify]
    /// telegram_channel`); the approval family links itself here, weakly, as the ask family does.
    owner_decisions: OnceLock<Weak<crate::approval::Approvals>>,
}

/// How a channel hears of messages: `mode` when set, else the one its kind has (Telegram
/// polls by default; Slack and webhook channels are posted to; Discord reads its gateway).
pub fn mode_of(c: &ChannelConfig) -> ChannelMode {
    c.mode.unwrap_or(match c.kind {
        ChannelKind::Telegram | ChannelKind::Discord => ChannelMode::Poll,
        ChannelKind::Slack | ChannelKind::Webhook => ChannelMode::Webhook,
    })
}

/// The platform's own API, when `base_url` is not set.
fn default_base_url(kind: ChannelKind) -> Option<&'static str> {
    match kind {
        ChannelKind::Telegram => Some("https://api.telegram.org"),
        ChannelKind::Slack => Some("https://slack.com/api"),
        ChannelKind::Discord => Some("https://discord.com/api/v10"),
        ChannelKind::Webhook => None,
    }
}

/// Reads a secret from the environment variable `var` names.
fn secret(name: &str, field: &str, var: &Option<String>) -> Result<Option<String>> {
    let Some(var) = var else { return Ok(None) };
    match std::env::var(var) {
        Ok(value) if !value.is_empty() => Ok(Some(value)),
        _ => Err(Error::unavailable(format!(
            "channel `{name}`: {field} names the environment variable `{var}`, which is not set"
        ))),
    }
}

/// One configured channel, its listener not started; its stop token a child of `stop`.
fn channel(name: &str, c: &ChannelConfig, all: &ChannelsConfig, stop: &CancellationToken) -> Arc<Channel> {
    Arc::new(Channel {
        name: name.to_string(),
        config: c.clone(),
        platform: adapter(name, c, all),
        connection: StdMutex::new(Connection::Idle),
        stop: stop.child_token(),
        hosts: all.allowed_hosts.clone(),
    })
}

/// The adapter for one configured channel.
pub fn adapter(name: &str, c: &ChannelConfig, channels: &ChannelsConfig) -> Result<Arc<dyn Platform>> {
    let base_url = c.base_url.clone().or_else(|| default_base_url(c.kind).map(str::to_string)).unwrap_or_default();
    let endpoint = Endpoint::new(
        name,
        &base_url,
        secret(name, "token_env", &c.token_env)?,
        secret(name, "signing_secret_env", &c.signing_secret_env)?,
        channels.allowed_hosts.clone(),
    );
    Ok(match c.kind {
        ChannelKind::Telegram => Arc::new(telegram::Telegram::new(endpoint, mode_of(c))),
        ChannelKind::Slack => Arc::new(slack::Slack::new(endpoint)),
        ChannelKind::Discord => Arc::new(discord::Discord::new(endpoint)),
        ChannelKind::Webhook => Arc::new(webhook::Webhook::new(endpoint)),
    })
}

impl Channels {
    pub(crate) fn new(services: &Services) -> Channels {
        let config = &services.config().channels;
        let stop = CancellationToken::new();
        let channels =
            config.channels.iter().map(|(name, c)| (name.clone(), channel(name, c, config, &stop))).collect();
        Channels {
            channels: RwLock::new(channels),
            started: AtomicBool::new(false),
            db: services.get::<Db>().clone(),
            clock: services.get::<Clock>().clone(),
            conversations: StdMutex::default(),
            stop,
            agents: services.need(),
            sessions: services.need(),
            runtime: services.get::<Runtime>().clone(),
            cluster: services.need(),
            questions: OnceLock::new(),
            owner_decisions: OnceLock::new(),
        }
    }

    /// Puts `config`'s channels in place while the daemon runs (config.toml edited from a
    /// front, or read again): an unchanged channel keeps its listener and connection; a changed
    /// one is made again and its listener started again; a removed one stops listening. Its
    /// stored conversations and traffic stay, for a channel of that name added later.
    pub(crate) fn apply(self: &Arc<Self>, config: &ChannelsConfig) {
        let mut made = Vec::new();
        // Read under the lock `start` sets it under: a channel made here is listened to by
        // exactly one of the two.
        let listening = {
            let mut channels = self.channels.write().unwrap_or_else(|e| e.into_inner());
            let mut next = BTreeMap::new();
            for (name, c) in &config.channels {
                let channel = match channels.remove(name) {
                    Some(old) if old.config == *c && old.hosts == config.allowed_hosts => old,
                    old => {
                        // Edited: the old listener stops before the new one starts.
                        if let Some(old) = old {
                            old.stop.cancel();
                        }
                        let new = channel(name, c, config, &self.stop);
                        made.push(new.clone());
                        new
                    }
                };
                next.insert(name.clone(), channel);
            }
            for gone in channels.values() {
                gone.stop.cancel();
            }
            *channels = next;
            self.started.load(Ordering::SeqCst)
        };
        if listening {
            for channel in made {
                self.listen(&channel);
            }
        }
    }

    /// Links the questions a message may answer (the ask family calls this when it opens).
    pub(crate) fn answers_go_to(&self, questions: &Arc<Questions>) {
        assert!(self.questions.set(Arc::downgrade(questions)).is_ok(), "the questions are linked once");
    }

    /// Links the approvals an owner's message may decide (the approval family calls this).
    pub(crate) fn decisions_go_to(&self, approvals: &Arc<crate::approval::Approvals>) {
        assert!(self.owner_decisions.set(Arc::downgrade(approvals)).is_ok(), "the approvals are linked once");
    }

    /// Stops the listeners.
    pub fn close(&self) {
        self.stop.cancel();
    }

    /// Every channel, by name.
    pub fn list(&self) -> Vec<ChannelInfo> {
        self.now().values().map(|c| info(c)).collect()
    }

    /// The channel `name` as the list shows it.
    pub fn one(&self, name: &str) -> Result<ChannelInfo> {
        Ok(info(&*self.get(name)?))
    }

    /// Tests the channel `name` with one call that needs its token (who the platform says its
    /// account is): the dashboard's "Test connection", `POST /api/channels/{name}/test`,
    /// `kennel channel test`. A failure is an answer, not an error: what the platform said.
    pub async fn test(&self, name: &str) -> Result<ChannelTest> {
        let channel = self.get(name)?;
        let started = std::time::Instant::now();
        let outcome = match channel.platform() {
            Ok(platform) => platform.account().await,
            Err(e) => Err(platform::SendError::Failed(e)),
        };
        let (ok, answer) = match outcome {
            Ok(Some(account)) => (true, format!("the platform knows this channel's account: {account}")),
            Ok(None) => (
                true,
                format!(
                    "a webhook channel has no account to ask: its messages are posted to /channels/{name}/inbound, signed; its agent's replies go to {}",
                    channel.config.base_url.as_deref().unwrap_or("nowhere (deliver only)")
                ),
            ),
            Err(platform::SendError::Failed(e)) => (false, e.message),
            Err(platform::SendError::RetryAfter(wait)) => {
                (false, format!("the platform asks to wait {} s before the next call", wait.as_secs()))
            }
        };
        Ok(ChannelTest { channel: name.to_string(), ok, answer, millis: started.elapsed().as_millis() as u64 })
    }

    /// The channel `name`'s settings, as config.toml holds them now.
    pub fn settings(&self, name: &str) -> Option<ChannelConfig> {
        self.named(name).map(|c| c.config.clone())
    }

    /// Whether no channel is configured now (asked for the channel tools in every turn's
    /// offer: a look under the lock, no copy).
    pub fn is_empty(&self) -> bool {
        self.channels.read().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// The channels as they are now (a clone of the map: edits replace it).
    fn now(&self) -> BTreeMap<String, Arc<Channel>> {
        self.channels.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The channel `name`, as it is now.
    fn named(&self, name: &str) -> Option<Arc<Channel>> {
        self.channels.read().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }

    fn get(&self, name: &str) -> Result<Arc<Channel>> {
        self.named(name).ok_or_else(|| {
            let channels = self.now();
            let known: Vec<&str> = channels.keys().map(String::as_str).collect();
            Error::not_found(format!(
                "no channel `{name}` (configured: {})",
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            ))
            .with_field("channel")
        })
    }

    /// `NAME` (the channel's `default_target`) or `NAME:TARGET` → the channel and the chat.
    pub fn address(&self, address: &str) -> Result<(String, String)> {
        let (name, target) = match address.split_once(':') {
            Some((name, target)) => (name, Some(target)),
            None => (address, None),
        };
        let channel = self.get(name)?;
        let target = target.filter(|t| !t.trim().is_empty()).map(str::to_string);
        let target = target.or_else(|| channel.config.default_target.clone()).ok_or_else(|| {
            Error::invalid(format!(
                "channel `{name}` has no default_target: write `{name}:TARGET` with the chat to deliver to"
            ))
        })?;
        Ok((name.to_string(), target))
    }

    /// One channel whole: its state, conversations (newest first, at most 200) with the
    /// groups' rosters, and the latest `traffic` messages each way.
    pub async fn detail(&self, name: &str, traffic: i64) -> Result<ChannelDetail> {
        let channel = info(&*self.get(name)?);
        let mut conversations = Vec::new();
        for conversation in store::conversations(&self.db, name).await? {
            let roster = if conversation.is_group {
                store::roster(&self.db, name, &conversation.chat_id).await?
            } else {
                Vec::new()
            };
            conversations.push(ConversationWithRoster { conversation, roster });
        }
        let inbound = store::recent_inbound(&self.db, name, traffic).await?;
        let outbound = store::recent_outbound(&self.db, name, traffic).await?;
        Ok(ChannelDetail { channel, conversations, inbound, outbound })
    }
}

/// A conversation and, for a group, its roster.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConversationWithRoster {
    #[serde(flatten)]
    pub conversation: Conversation,
    pub roster: Vec<RosterEntry>,
}

/// A channel as its page shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChannelDetail {
    #[serde(flatten)]
    pub channel: ChannelInfo,
    pub conversations: Vec<ConversationWithRoster>,
    /// The latest inbound messages and sends, newest first.
    pub inbound: Vec<InboundRow>,
    pub outbound: Vec<OutboundRow>,
}

fn info(c: &Channel) -> ChannelInfo {
    let state = match (&c.platform, &*c.connection.lock().unwrap_or_else(|e| e.into_inner())) {
        (Err(e), _) => format!("unavailable: {}", e.message),
        (Ok(_), Connection::Idle) => "idle".into(),
        (Ok(_), Connection::Connected) => "connected".into(),
        (Ok(_), Connection::Failing(why)) => format!("failing: {why}"),
    };
    let mode = mode_of(&c.config).as_str();
    ChannelInfo {
        name: c.name.clone(),
        kind: c.config.kind.as_str().into(),
        mode: mode.into(),
        agent: c.config.agent.clone(),
        default_target: c.config.default_target.clone(),
        deliver_only: c.config.deliver_only,
        state,
        settings: c.config.clone(),
    }
}

fn kind_title(kind: ChannelKind) -> &'static str {
    match kind {
        ChannelKind::Telegram => "Telegram",
        ChannelKind::Slack => "Slack",
        ChannelKind::Discord => "Discord",
        ChannelKind::Webhook => "Webhook",
    }
}

/// The cross-conversation guard: a turn answering a conversation (`turn`) reaches only that
/// conversation, by `what` (`channel_send`, a schedule's delivery) as by its reply. A turn that
/// answers none passes.
pub fn stays_in_conversation(turn: Option<&ChannelContext>, channel: &str, chat: &str, what: &str) -> Result<()> {
    match turn {
        Some(turn) if turn.channel != channel || turn.chat_id != chat => Err(Error::forbidden(format!(
            "this turn answers {} `{}` on `{}`: {what} may only send there (to reach one member privately, use channel_dm)",
            if turn.is_group { "the group" } else { "the conversation" },
            turn.chat_id,
            turn.channel
        ))),
        _ => Ok(()),
    }
}

/// The start of a platform's unexpected answer or refusal, for an error message.
pub(crate) fn excerpt(text: &str) -> String {
    crate::text::shorten(text.trim(), 200)
}
