//! Channels (spec §6): chat platforms bound to agents. Each `[channels.NAME]` is one bot
//! account on Telegram, Slack or Discord, or a generic webhook, answered by one agent.
//!
//! The adapters (`telegram.rs`, `slack.rs`, `discord.rs`, `webhook.rs`) speak their
//! platform's wire protocol behind [`platform::Platform`]; everything else is decided here once.

pub mod discord;
pub mod platform;
pub mod slack;
pub mod telegram;
pub mod webhook;

use std::sync::Arc;

use crate::config::{ChannelConfig, ChannelKind, ChannelMode, ChannelsConfig};
use crate::error::{Error, Result};
use platform::{Endpoint, Platform};

/// Checks `[channels]` at load: names, the fields each kind needs. Returns the key to point at
/// and the message.
pub fn check_config(channels: &ChannelsConfig) -> std::result::Result<(), (String, String)> {
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
            ChannelKind::Telegram | ChannelKind::Discord => needs("token_env", &c.token_env)?,
            ChannelKind::Slack => {
                needs("token_env", &c.token_env)?;
                needs("signing_secret_env", &c.signing_secret_env)?;
            }
            ChannelKind::Webhook => needs("signing_secret_env", &c.signing_secret_env)?,
        }
        if c.deliver_only {
            if c.kind != ChannelKind::Webhook {
                return Err((key, format!("[channels.{name}] deliver_only is for kind = \"webhook\" channels")));
            }
            needs("default_target", &c.default_target)?;
        } else if c.agent.is_none() && c.kind != ChannelKind::Webhook {
            return Err((key, format!("[channels.{name}] needs agent: the agent that answers its messages")));
        }
        match (c.kind, c.mode) {
            (ChannelKind::Slack | ChannelKind::Webhook, Some(ChannelMode::Poll)) => {
                return Err((key, format!("[channels.{name}] a {} channel is posted to: mode = \"webhook\"", c.kind.as_str())));
            }
            (ChannelKind::Discord, Some(ChannelMode::Webhook)) => {
                // Interactions (Discord's webhooks) carry no group messages, so no roster.
                return Err((key, format!("[channels.{name}] Discord is read through its gateway: mode = \"poll\"")));
            }
            _ => {}
        }
        if let Some(url) = &c.base_url
            && reqwest::Url::parse(url).map(|u| !matches!(u.scheme(), "http" | "https")).unwrap_or(true)
        {
            return Err((key, format!("[channels.{name}] base_url `{url}` is not an http(s) URL")));
        }
    }
    Ok(())
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
    let endpoint = Endpoint {
        channel: name.to_string(),
        base_url: c
            .base_url
            .clone()
            .or_else(|| default_base_url(c.kind).map(str::to_string))
            .unwrap_or_default()
            .trim_end_matches('/')
            .to_string(),
        token: secret(name, "token_env", &c.token_env)?,
        signing_secret: secret(name, "signing_secret_env", &c.signing_secret_env)?,
        allowed_hosts: channels.allowed_hosts.clone(),
    };
    Ok(match c.kind {
        ChannelKind::Telegram => Arc::new(telegram::Telegram::new(endpoint, mode_of(c))),
        ChannelKind::Slack => Arc::new(slack::Slack::new(endpoint)),
        ChannelKind::Discord => Arc::new(discord::Discord::new(endpoint)),
        ChannelKind::Webhook => Arc::new(webhook::Webhook::new(endpoint)),
    })
}
