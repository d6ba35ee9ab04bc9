//! `[channels]` and `[channels.NAME]` of `config.toml`: its types, check at load and lines in the default file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::net::guard::AllowedHosts;

/// `[channels]`: the address guard's list for channel traffic, and each channel by name.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct ChannelsConfig {
    /// Where channel requests may go (the platforms' APIs, a webhook channel's URL), checked
    /// by `net::guard` like `[a2a] allowed_hosts`: empty, any public host.
    #[serde(default)]
    pub allowed_hosts: AllowedHosts,
    #[serde(flatten)]
    pub channels: BTreeMap<String, ChannelConfig>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChannelKind {
    Telegram,
    Slack,
    Discord,
    Webhook,
}

impl ChannelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Telegram => "telegram",
            ChannelKind::Slack => "slack",
            ChannelKind::Discord => "discord",
            ChannelKind::Webhook => "webhook",
        }
    }
}

/// How a channel hears of new messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChannelMode {
    /// Kennel asks: Telegram's `getUpdates`, Discord's gateway.
    Poll,
    /// The platform posts to `/channels/NAME/inbound` (Telegram's `setWebhook`, Slack's Events
    /// API, a webhook channel).
    Webhook,
}

impl ChannelMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ChannelMode::Poll => "poll",
            ChannelMode::Webhook => "webhook",
        }
    }
}

/// `[channels.NAME]`: one chat platform account bound to one agent.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelConfig {
    pub kind: ChannelKind,
    /// The agent (by name) whose turns answer this channel's messages.
    pub agent: Option<String>,
    /// The platform's API (tests point it at a local server); unset: the platform's own. For a
    /// webhook channel: the URL outbound messages are posted to.
    pub base_url: Option<String>,
    /// The environment variable holding the bot token (Telegram, Slack, Discord).
    pub token_env: Option<String>,
    /// The environment variable holding the secret inbound requests are signed with (Slack's
    /// signing secret, a webhook channel's HMAC key, Telegram's webhook secret token).
    pub signing_secret_env: Option<String>,
    /// Unset: the kind's own ([`crate::channel::mode_of`]).
    pub mode: Option<ChannelMode>,
    /// Where a schedule naming only this channel, or a deliver-only webhook, sends.
    pub default_target: Option<String>,
    /// A webhook channel that runs no turn: each inbound message is sent on to
    /// `default_target` (`CHANNEL:TARGET`) as it is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deliver_only: bool,
    /// The platform user ids of the agent's owner and operators: their messages steer the
    /// agent as an operator's would, so they do not taint its turn (`crate::approval`). Anyone
    /// else on the channel is a stranger.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trusted_users: Vec<String>,
}

/// At most this many trusted users per channel.
pub const MAX_TRUSTED_USERS: usize = 100;

/// Checks `[channels]` at load: names, the fields each kind needs. Returns the key to point at
/// and the message.
pub(crate) fn check(config: &Config) -> Result<(), (String, String)> {
    let channels = &config.channels;
    for (name, c) in &channels.channels {
        let key = format!("channels.{name}");
        if !crate::agent::is_valid_name(name) {
            return Err((key, format!("channel name `{name}` must be 1-64 lowercase letters, digits, `-` or `_`")));
        }
        let needs = |field: &str, value: &Option<String>| match value {
            Some(v) if !v.trim().is_empty() => Ok(()),
            _ => Err((key.clone(), format!("[channels.{name}] (kind = \"{}\") needs {field}", c.kind.as_str()))),
        };
        match c.kind {
            ChannelKind::Telegram => {
                needs("token_env", &c.token_env)?;
                if c.mode == Some(ChannelMode::Webhook) {
                    // The secret token Telegram's webhook requests carry, given to setWebhook.
                    needs("signing_secret_env", &c.signing_secret_env)?;
                }
            }
            ChannelKind::Discord => needs("token_env", &c.token_env)?,
            ChannelKind::Slack => {
                needs("token_env", &c.token_env)?;
                needs("signing_secret_env", &c.signing_secret_env)?;
            }
            ChannelKind::Webhook => needs("signing_secret_env", &c.signing_secret_env)?,
        }
        if c.trusted_users.len() > MAX_TRUSTED_USERS {
            return Err((key, format!("[channels.{name}] trusted_users: at most {MAX_TRUSTED_USERS}")));
        }
        if let Some(bad) =
            c.trusted_users.iter().find(|u| u.trim().is_empty() || u.len() > 200 || u.trim() != u.as_str())
        {
            return Err((
                key,
                format!(
                    "[channels.{name}] trusted_users: `{bad}` is not a user id (1-200 characters, no spaces around)"
                ),
            ));
        }
        if c.deliver_only {
            if c.kind != ChannelKind::Webhook {
                return Err((key, format!("[channels.{name}] deliver_only is for kind = \"webhook\" channels")));
            }
            needs("default_target", &c.default_target)?;
            let target = c.default_target.as_deref().unwrap_or_default();
            let onward = target.split_once(':').map(|(to, _)| to);
            if !onward.is_some_and(|to| to != name && channels.channels.contains_key(to)) {
                return Err((
                    key,
                    format!(
                        "[channels.{name}] default_target `{target}` must be `CHANNEL:TARGET`, another configured channel and a chat on it"
                    ),
                ));
            }
        } else if c.agent.is_none() && c.kind != ChannelKind::Webhook {
            return Err((key, format!("[channels.{name}] needs agent: the agent that answers its messages")));
        }
        match (c.kind, c.mode) {
            (ChannelKind::Slack | ChannelKind::Webhook, Some(ChannelMode::Poll)) => {
                return Err((
                    key,
                    format!("[channels.{name}] a {} channel is posted to: mode = \"webhook\"", c.kind.as_str()),
                ));
            }
            (ChannelKind::Discord, Some(ChannelMode::Webhook)) => {
                // Interactions (Discord's webhooks) carry no group messages, so no roster.
                return Err((key, format!("[channels.{name}] Discord is read through its gateway: mode = \"poll\"")));
            }
            _ => {}
        }
        // A webhook channel answers by posting: without an address its agent's every reply
        // would fail, found only at the first message.
        if c.kind == ChannelKind::Webhook && !c.deliver_only && c.base_url.is_none() {
            return Err((
                key,
                format!(
                    "[channels.{name}] a webhook channel posts its agent's replies to base_url: set base_url to the URL that takes them"
                ),
            ));
        }
        if let Some(url) = &c.base_url
            && reqwest::Url::parse(url).map(|u| !matches!(u.scheme(), "http" | "https")).unwrap_or(true)
        {
            return Err((key, format!("[channels.{name}] base_url `{url}` is not an http(s) URL")));
        }
    }
    Ok(())
}

/// `[channels]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [channels.team]           # a chat platform bound to an agent (family channel)
# kind = "telegram"         # or "slack", "discord", "webhook"
# agent = "assistant"       # the agent whose turns answer its messages
# token_env = "TELEGRAM_BOT_TOKEN"   # Slack: the bot token; Discord: the bot token
# signing_secret_env = "TEAM_WEBHOOK_SECRET"   # Slack's signing secret; a webhook's HMAC key
# mode = "poll"             # Telegram: poll (getUpdates) or webhook (POST /channels/team/inbound)
# default_target = "-1001234567890"   # where schedules naming just "team" deliver
# trusted_users = ["123456789"]   # the owner's platform user ids: their messages do not taint
# [channels] allowed_hosts = []   # where channel requests may go (like [a2a] allowed_hosts)
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_for_test as parse;

    #[test]
    fn channels_are_checked_for_what_their_kind_needs() {
        let ok = parse(
            "[channels]\nallowed_hosts = [\"127.0.0.1:*\"]\n[channels.team]\nkind = \"telegram\"\nagent = \"a\"\ntoken_env = \"T\"\n",
        )
        .unwrap();
        assert_eq!(ok.channels.channels["team"].kind, ChannelKind::Telegram);
        assert_eq!(crate::channel::mode_of(&ok.channels.channels["team"]), ChannelMode::Poll);
        for (text, expected) in [
            ("[channels.t]\nkind = \"telegram\"\nagent = \"a\"\n", "needs token_env"),
            ("[channels.t]\nkind = \"telegram\"\ntoken_env = \"T\"\n", "needs agent"),
            (
                "[channels.t]\nkind = \"telegram\"\nagent = \"a\"\ntoken_env = \"T\"\nmode = \"webhook\"\n",
                "needs signing_secret_env",
            ),
            ("[channels.s]\nkind = \"slack\"\nagent = \"a\"\ntoken_env = \"T\"\n", "needs signing_secret_env"),
            (
                "[channels.s]\nkind = \"slack\"\nagent = \"a\"\ntoken_env = \"T\"\nsigning_secret_env = \"S\"\nmode = \"poll\"\n",
                "mode = \"webhook\"",
            ),
            ("[channels.d]\nkind = \"discord\"\nagent = \"a\"\ntoken_env = \"T\"\nmode = \"webhook\"\n", "gateway"),
            (
                "[channels.d]\nkind = \"discord\"\nagent = \"a\"\ntoken_env = \"T\"\ndeliver_only = true\n",
                "deliver_only is for",
            ),
            (
                "[channels.w]\nkind = \"webhook\"\nsigning_secret_env = \"S\"\ndeliver_only = true\n",
                "needs default_target",
            ),
            ("[channels.Team]\nkind = \"webhook\"\nsigning_secret_env = \"S\"\n", "lowercase"),
            ("[channels.w]\nkind = \"webhook\"\nagent = \"a\"\nsigning_secret_env = \"S\"\n", "set base_url"),
            (
                "[channels.w]\nkind = \"webhook\"\nsigning_secret_env = \"S\"\nbase_url = \"ftp://x\"\n",
                "not an http(s) URL",
            ),
            ("[channels.w]\nkind = \"irc\"\n", "unknown variant"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.message.contains(expected), "{text}: {}", e.message);
        }
    }
}
