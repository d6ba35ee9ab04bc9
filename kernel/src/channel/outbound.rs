//! Messages that leave: an agent's sends (`channel_send`, `channel_dm`, schedule and notice
//! deliveries), split to the platform's limits and retried on its 429s, each recorded; and
//! who is in a conversation (`channel_members`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::platform::{FileSource, Outgoing, Platform, SendError};
use super::{Channel, Channels, MAX_RETRIES, MAX_RETRY_WAIT, RosterEntry, split, stays_in_conversation, store};
use crate::error::{Error, ErrorKind, Result};
use crate::tool::CallContext;

impl Channels {
    /// Sends `out` to `chat` on the channel `name`, split and retried as the platform needs,
    /// and records it as sent by `sent_by`.
    pub async fn deliver(&self, name: &str, chat: &str, out: Outgoing, sent_by: &str) -> Result<()> {
        let channel = self.get(name)?;
        let outcome = self.send_parts(&channel, chat, &out).await;
        if outcome.is_ok() {
            crate::metrics::metrics().channel_message(name, false);
        }
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
}

/// Where a send went.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SentTo {
    pub channel: String,
    pub target: String,
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
