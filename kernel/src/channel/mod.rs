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
//! Channels (spec §6, family `channel`, issue 23): `Channels`, the bridge (below);
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
pub mod platform;
pub mod slack;
mod split;
mod store;
pub mod telegram;
mod tools;
pub mod webhook;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use crate::Kernel;
use crate::clock::Clock;
use crate::db::Db;
use crate::error::{Error, ErrorKind, Result};
use crate::family::Family;
use crate::session::Origin;
use crate::tool::{CallContext, Caller, ChannelContext};
use crate::turn::{TurnEnd, TurnRequest};
use platform::{
    Connection, Endpoint, FileSource, Inbound, Outgoing, Platform, SendError, WebhookReply, WebhookRequest,
};

pub use config::{ChannelConfig, ChannelKind, ChannelMode, ChannelsConfig};
pub use store::{Conversation, InboundRow, OutboundRow, RosterEntry};
pub(crate) use tools::register;

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "channel",
    open: |s| {
        s.provide(Channels::new(&s.config().channels, s.get::<Db>().clone(), s.get::<Clock>().clone()));
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
}

impl Channel {
    fn platform(&self) -> Result<&Arc<dyn Platform>> {
        self.platform.as_ref().map_err(Clone::clone)
    }
}

/// A channel as the API and the dashboard show it.
#[derive(Debug, Clone, Serialize, ToSchema)]
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
}

/// A conversation: the channel's name and the platform's chat id.
type ConversationKey = (String, String);

/// Every channel of this daemon, and the bridge between them and the agents.
pub struct Channels {
    channels: BTreeMap<String, Arc<Channel>>,
    db: Db,
    clock: Clock,
    /// One lock per conversation: its turns run one at a time, in arrival order (tokio's
    /// mutex is fair).
    conversations: StdMutex<HashMap<ConversationKey, Arc<tokio::sync::Mutex<()>>>>,
    stop: CancellationToken,
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
    pub fn new(config: &ChannelsConfig, db: Db, clock: Clock) -> Channels {
        let channels = config
            .channels
            .iter()
            .map(|(name, c)| {
                let channel = Channel {
                    name: name.clone(),
                    config: c.clone(),
                    platform: adapter(name, c, config),
                    connection: StdMutex::new(Connection::Idle),
                };
                (name.clone(), Arc::new(channel))
            })
            .collect();
        Channels { channels, db, clock, conversations: StdMutex::default(), stop: CancellationToken::new() }
    }

    /// Starts the poll-mode listeners and answers the messages a previous run stored but did
    /// not answer. Only the daemon calls this.
    pub(crate) fn start(kernel: &Kernel) {
        let channels = kernel.service::<Channels>();
        for channel in channels.channels.values() {
            let Ok(platform) = channel.platform() else {
                tracing::warn!(channel = %channel.name, error = %channel.platform.as_ref().err().map(|e| e.message.clone()).unwrap_or_default(), "channel unavailable");
                continue;
            };
            if mode_of(&channel.config) != ChannelMode::Poll {
                continue;
            }
            let sink_kernel = kernel.clone();
            let sink_channel = channel.name.clone();
            let sink: platform::Sink = Arc::new(move |m: Inbound| {
                let (kernel, name) = (sink_kernel.clone(), sink_channel.clone());
                Box::pin(async move {
                    if let Err(e) = kernel.service::<Channels>().accept(&kernel, &name, m).await {
                        tracing::error!(channel = %name, error = %e.message, "an inbound message could not be stored");
                    }
                })
            });
            let state_channel = channel.clone();
            let state = Arc::new(move |c: Connection| {
                *state_channel.connection.lock().unwrap_or_else(|e| e.into_inner()) = c;
            });
            tokio::spawn(poll_under_lease(kernel.clone(), channel.name.clone(), platform.clone(), sink, state));
        }
        let kernel = kernel.clone();
        tokio::spawn(async move {
            match store::pending(&kernel.service::<Channels>().db).await {
                Ok(rows) => {
                    for row in rows {
                        kernel.service::<Channels>().spawn_answer(&kernel, inbound_of(&row), row.channel);
                    }
                }
                Err(e) => tracing::warn!(error = %e.message, "could not read unanswered channel messages"),
            }
        });
    }

    /// Stops the listeners.
    pub fn close(&self) {
        self.stop.cancel();
    }

    /// Every channel, by name.
    pub fn list(&self) -> Vec<ChannelInfo> {
        self.channels.values().map(|c| info(c)).collect()
    }

    fn get(&self, name: &str) -> Result<&Arc<Channel>> {
        self.channels.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.channels.keys().map(String::as_str).collect();
            Error::not_found(format!(
                "no channel `{name}` (configured: {})",
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            ))
            .with_field("channel")
        })
    }

    /// An inbound request to `/channels/NAME/inbound`: verified by the channel's adapter, each
    /// message in it stored (once) and its turn started. Returns what to answer.
    /// Anyone may post there: an unknown channel and one that polls get the same answer, which
    /// names no configured channel.
    pub async fn receive_webhook(&self, kernel: &Kernel, name: &str, req: WebhookRequest<'_>) -> Result<WebhookReply> {
        let channel = self
            .channels
            .get(name)
            .filter(|c| mode_of(&c.config) == ChannelMode::Webhook)
            .ok_or_else(|| Error::not_found("no channel takes webhooks at this address"))?;
        let reply = channel.platform()?.webhook(req).await?;
        if let WebhookReply::Messages(messages) = &reply {
            for m in messages {
                self.accept(kernel, name, m.clone()).await?;
            }
        }
        Ok(reply)
    }

    /// Stores one inbound message and starts answering it; a message stored before (a
    /// redelivery) changes nothing. Returns once the message is stored.
    /// A message from the person an `ask_user` question in its conversation waits on is the
    /// answer, handed to that turn: it starts no turn of its own.
    async fn accept(&self, kernel: &Kernel, name: &str, m: Inbound) -> Result<()> {
        let at = crate::db::timestamp(self.clock.now());
        if !store::receive(&self.db, name, &m, &at).await? {
            return Ok(());
        }
        let by = format!("channel:{name}:{}", m.from.user_id);
        if crate::ask::answer_in_conversation(kernel, name, &m.chat_id, &m.from.user_id, &m.text, &by).await? {
            store::finish(&self.db, name, &m.message_id, "answer", None).await?;
        } else {
            self.spawn_answer(kernel, m, name.to_string());
        }
        Ok(())
    }

    fn spawn_answer(&self, kernel: &Kernel, m: Inbound, name: String) {
        let kernel = kernel.clone();
        tokio::spawn(async move {
            let channels = kernel.service::<Channels>();
            let (state, detail) = match channels.answer(&kernel, &name, &m).await {
                Ok(state) => (state, None),
                Err(e) => {
                    tracing::warn!(channel = %name, chat = %m.chat_id, error = %e.message, "a channel message was not answered");
                    ("failed", Some(e.message))
                }
            };
            if let Err(e) = store::finish(&channels.db, &name, &m.message_id, state, detail.as_deref()).await {
                tracing::warn!(channel = %name, error = %e.message, "could not record a channel message's outcome");
            }
        });
    }

    /// Runs the turn a message asks for and sends its reply back; a deliver-only webhook's
    /// message is sent on instead. Returns the inbound row's new state.
    async fn answer(&self, kernel: &Kernel, name: &str, m: &Inbound) -> Result<&'static str> {
        let channel = self.get(name)?;
        if channel.config.deliver_only {
            let target = channel.config.default_target.as_deref().unwrap_or_default();
            let (to, chat) = self.address(target)?;
            self.deliver(&to, &chat, Outgoing::Text(m.text.clone()), "deliver_only").await?;
            return Ok("delivered");
        }
        let agent_name = channel.config.agent.as_deref().ok_or_else(|| {
            Error::unavailable(format!("channel `{name}` has no agent to answer it: set [channels.{name}] agent"))
        })?;
        // The agent bound to this channel, by id: never a later agent that took its name.
        let agent = kernel.agents().bound(&crate::agent::binding::Binding::Channel(name.to_string()), agent_name)?;
        agent.ensure_running()?;
        let lock = {
            let mut locks = self.conversations.lock().unwrap_or_else(|e| e.into_inner());
            locks.entry((name.to_string(), m.chat_id.clone())).or_default().clone()
        };
        let _in_turn = lock.lock().await;
        let origin = Origin::Channel { channel: name.to_string(), chat: m.chat_id.clone() };
        let session = kernel.sessions().labelled(agent.id, &origin).await?;
        let req = TurnRequest {
            session: Some(session.id),
            channel: Some(ChannelContext {
                channel: name.to_string(),
                chat_id: m.chat_id.clone(),
                user_id: Some(m.from.user_id.clone()),
                is_group: m.is_group,
            }),
            // A message the daemon stopped before answering is in the session already: answered,
            // not added twice.
            retry: true,
            // The person who wrote is there to answer an `ask_user` question.
            headless: false,
            ..TurnRequest::headless(turn_message(channel, m), Caller::Channel(name.to_string()))
        };
        let result = crate::turn::run(kernel, agent, req).await?;
        if result.ended != TurnEnd::Reply || result.reply.trim().is_empty() {
            return Err(Error::failed(format!("the turn ended without a reply ({})", result.ended.as_str())));
        }
        self.deliver(name, &m.chat_id, Outgoing::Text(result.reply), "reply").await?;
        Ok("answered")
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

    /// Sends `out` to `chat` on the channel `name`, split and retried as the platform needs,
    /// and records it as sent by `sent_by`.
    pub async fn deliver(&self, name: &str, chat: &str, out: Outgoing, sent_by: &str) -> Result<()> {
        let channel = self.get(name)?;
        let outcome = self.send_parts(channel, chat, &out).await;
        let (kind, summary) = summary_of(&out);
        let at = crate::db::timestamp(self.clock.now());
        let result = match &outcome {
            Ok(()) => "ok".to_string(),
            Err(e) => e.message.clone(),
        };
        let row = store::NewOutbound {
            channel: name,
            chat_id: chat,
            kind,
            summary: &summary,
            sent_by,
            at: &at,
            outcome: &result,
        };
        if let Err(e) = store::sent(&self.db, row).await {
            tracing::warn!(channel = %name, error = %e.message, "could not record a channel send");
        }
        outcome
    }

    async fn send_parts(&self, channel: &Channel, chat: &str, out: &Outgoing) -> Result<()> {
        let platform = channel.platform()?;
        match out {
            Outgoing::Text(text) => {
                for part in split::split(text, platform.text_limit()) {
                    send_retrying(&channel.name, platform.as_ref(), chat, &Outgoing::Text(part)).await?;
                }
                Ok(())
            }
            other => send_retrying(&channel.name, platform.as_ref(), chat, other).await,
        }
    }

    /// `channel_send`: in a conversation turn only that conversation is reachable (the
    /// cross-conversation guard, [`stays_in_conversation`]); out-of-band turns name any address.
    pub async fn send_from(
        &self,
        ctx: &CallContext,
        channel: &str,
        target: Option<&str>,
        out: Outgoing,
    ) -> Result<SentTo> {
        let (name, chat) = match (&ctx.channel, target) {
            (Some(turn), None) if turn.channel == channel => (turn.channel.clone(), turn.chat_id.clone()),
            (_, Some(target)) => self.address(&format!("{channel}:{target}"))?,
            (_, None) => self.address(channel)?,
        };
        stays_in_conversation(ctx.channel.as_ref(), &name, &chat, "channel_send")?;
        self.deliver(&name, &chat, out, &ctx.actor()).await?;
        Ok(SentTo { channel: name, target: chat })
    }

    /// `channel_dm`: to one member of the turn's group conversation, privately.
    pub async fn dm(&self, ctx: &CallContext, user_id: &str, message: &str) -> Result<SentTo> {
        let turn = ctx
            .channel
            .as_ref()
            .ok_or_else(|| Error::unavailable("channel_dm answers in a channel conversation and this turn has none"))?;
        if !turn.is_group {
            return Err(Error::invalid(
                "this turn is already a direct conversation: reply in it; channel_dm reaches a member of a group",
            ));
        }
        if store::member(&self.db, &turn.channel, &turn.chat_id, user_id).await?.is_none() {
            return Err(Error::forbidden(format!(
                "`{user_id}` is not on the roster of this conversation (people who spoke in it): channel_dm reaches only them"
            ))
            .with_field("user_id"));
        }
        let channel = self.get(&turn.channel)?;
        let chat = match channel.platform()?.direct_chat(user_id).await {
            Ok(chat) => chat,
            Err(SendError::Failed(e)) => return Err(e),
            Err(SendError::RetryAfter(wait)) => {
                return Err(Error::exhausted(format!(
                    "the platform asks to wait {}s before opening a DM",
                    wait.as_secs()
                )));
            }
        };
        self.deliver(&turn.channel, &chat, Outgoing::Text(message.to_string()), &ctx.actor()).await?;
        Ok(SentTo { channel: turn.channel.clone(), target: chat })
    }

    /// `channel_members`: the roster of the turn's conversation by default; a conversation
    /// turn may not name another one.
    pub async fn members(
        &self,
        ctx: &CallContext,
        channel: Option<&str>,
        chat_id: Option<&str>,
    ) -> Result<Vec<RosterEntry>> {
        let (name, chat) = match (&ctx.channel, channel, chat_id) {
            (Some(turn), c, id) => {
                let name = c.unwrap_or(&turn.channel);
                let chat = id.unwrap_or(&turn.chat_id);
                if name != turn.channel || chat != turn.chat_id {
                    return Err(Error::forbidden(format!(
                        "this turn answers `{}` on `{}`: one conversation cannot list another's members",
                        turn.chat_id, turn.channel
                    )));
                }
                (name.to_string(), chat.to_string())
            }
            (None, Some(c), Some(id)) => (c.to_string(), id.to_string()),
            (None, _, _) => {
                return Err(Error::invalid("this turn has no conversation: name both `channel` and `chat_id`"));
            }
        };
        self.get(&name)?;
        match store::conversation(&self.db, &name, &chat).await? {
            Some(c) if !c.is_group => {
                Err(Error::invalid(format!("`{chat}` on `{name}` is a direct conversation: only groups have a roster")))
            }
            Some(_) => store::roster(&self.db, &name, &chat).await,
            None => Err(Error::not_found(format!("no conversation `{chat}` on `{name}` has been seen"))),
        }
    }

    /// One channel whole: its state, conversations (newest first, at most 200) with the
    /// groups' rosters, and the latest `traffic` messages each way.
    pub async fn detail(&self, name: &str, traffic: i64) -> Result<ChannelDetail> {
        let channel = info(self.get(name)?);
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

/// Where a send went.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SentTo {
    pub channel: String,
    pub target: String,
}

fn info(c: &Channel) -> ChannelInfo {
    let state = match (&c.platform, &*c.connection.lock().unwrap_or_else(|e| e.into_inner())) {
        (Err(e), _) => format!("unavailable: {}", e.message),
        (Ok(_), Connection::Idle) => "idle".into(),
        (Ok(_), Connection::Connected) => "connected".into(),
        (Ok(_), Connection::Failing(why)) => format!("failing: {why}"),
    };
    let mode = match mode_of(&c.config) {
        ChannelMode::Poll => "poll",
        ChannelMode::Webhook => "webhook",
    };
    ChannelInfo {
        name: c.name.clone(),
        kind: c.config.kind.as_str().into(),
        mode: mode.into(),
        agent: c.config.agent.clone(),
        default_target: c.config.default_target.clone(),
        deliver_only: c.config.deliver_only,
        state,
    }
}

/// Sends once, again after each platform 429 (within the limits).
async fn send_retrying(name: &str, platform: &dyn Platform, chat: &str, out: &Outgoing) -> Result<()> {
    let mut tries = 0;
    loop {
        match platform.send(chat, out).await {
            Ok(()) => return Ok(()),
            Err(SendError::Failed(e)) => return Err(e),
            Err(SendError::RetryAfter(wait)) if tries < MAX_RETRIES && wait <= MAX_RETRY_WAIT => {
                tries += 1;
                tracing::info!(channel = %name, wait_ms = wait.as_millis() as u64, "the platform said 429; retrying after its retry_after");
                tokio::time::sleep(wait).await;
            }
            Err(SendError::RetryAfter(wait)) => {
                return Err(Error::new(
                    ErrorKind::ResourceExhausted,
                    format!(
                        "channel `{name}`: the platform is rate limiting (asked to wait {}s after {tries} retries)",
                        wait.as_secs()
                    ),
                ));
            }
        }
    }
}

/// What the agent reads for an inbound message: who wrote it, where, then the text.
fn turn_message(channel: &Channel, m: &Inbound) -> String {
    let who = match &m.from.username {
        Some(u) => format!("{} (@{u}, user_id {})", m.from.display_name, m.from.user_id),
        None => format!("{} (user_id {})", m.from.display_name, m.from.user_id),
    };
    let place = if m.is_group {
        format!(
            "the group {}",
            m.chat_title.as_deref().map(|t| format!("\"{t}\" ({})", m.chat_id)).unwrap_or(m.chat_id.clone())
        )
    } else {
        "a direct conversation".into()
    };
    format!(
        "[{} message on channel `{}` in {place} from {who}]\n{}",
        kind_title(channel.config.kind),
        channel.name,
        m.text
    )
}

fn kind_title(kind: ChannelKind) -> &'static str {
    match kind {
        ChannelKind::Telegram => "Telegram",
        ChannelKind::Slack => "Slack",
        ChannelKind::Discord => "Discord",
        ChannelKind::Webhook => "Webhook",
    }
}

fn summary_of(out: &Outgoing) -> (&'static str, String) {
    let media_name = |m: &FileSource| match m {
        FileSource::Url(url) => url.clone(),
        FileSource::Bytes { file_name, .. } => file_name.clone(),
    };
    match out {
        Outgoing::Text(text) => ("text", crate::text::shorten(text, 500)),
        Outgoing::Image { media, caption } => ("image", caption.clone().unwrap_or_else(|| media_name(media))),
        Outgoing::File { media, caption } => ("file", caption.clone().unwrap_or_else(|| media_name(media))),
        Outgoing::Poll { question, .. } => ("poll", question.clone()),
    }
}

fn inbound_of(row: &InboundRow) -> Inbound {
    Inbound {
        message_id: row.message_id.clone(),
        chat_id: row.chat_id.clone(),
        chat_title: row.chat_title.clone(),
        is_group: row.is_group,
        from: platform::Member {
            user_id: row.user_id.clone(),
            display_name: row.display_name.clone(),
            username: row.username.clone(),
        },
        text: row.text.clone(),
    }
}

/// Listens on a polling channel (Telegram's `getUpdates`, Discord's gateway) while this
/// daemon holds the lease `channel:<name>`: a platform refuses a second poller, so a cluster
/// runs one, and another daemon takes over when its holder dies or stops.
async fn poll_under_lease(
    kernel: Kernel,
    name: String,
    platform: Arc<dyn platform::Platform>,
    sink: platform::Sink,
    state: Arc<dyn Fn(Connection) + Send + Sync>,
) {
    let lease = format!("channel:{name}");
    let cluster = kernel.cluster();
    while cluster.hold(&lease).await {
        let stop = kernel.service::<Channels>().stop.child_token();
        let Some(listening) = platform.clone().listen(sink.clone(), state.clone(), stop.clone()) else { return };
        tokio::select! {
            () = listening => return,
            () = cluster.lost(&lease) => {
                tracing::warn!(channel = %name, "this daemon lost the channel's lease: it stops polling");
                stop.cancel();
            }
        }
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
