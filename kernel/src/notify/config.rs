//! `[notify]` of `config.toml`: its type, defaults, check at load and lines in the default file.

use serde::{Deserialize, Serialize};

use crate::config::Config;

/// `[notify]`: where the owner inbox's notes go besides the dashboard.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct NotifyConfig {
    /// A configured channel (`[channels.NAME]`) notes are also sent to.
    pub telegram_channel: Option<String>,
    /// The chat on it; unset: the channel's `default_target`.
    pub telegram_chat: Option<String>,
    /// The least urgency sent there.
    pub min_urgency_telegram: crate::notify::Urgency,
    /// Addresses notes are emailed to; empty: no email.
    pub email_to: Vec<String>,
    /// The sender; unset: the first of `email_to`.
    pub email_from: Option<String>,
    /// The SMTP server, without a password: `smtps://USER@HOST:465`,
    /// `smtp://USER@HOST:587?tls=required` (STARTTLS), or plain `smtp://HOST:25` for a relay on
    /// this machine.
    pub smtp_url: Option<String>,
    /// The environment variable holding the SMTP password; unset: no sign-in.
    pub smtp_password_env: Option<String>,
    /// The least urgency emailed.
    pub min_urgency_email: crate::notify::Urgency,
    /// How many notes one agent may leave (`notify_owner`) in any hour.
    pub max_per_agent_per_hour: u64,
    /// How many notes the daemon sends on to Telegram, and how many by email, in a clock
    /// hour; past it a note stays in the inbox only, marked as not sent.
    pub max_fanout_per_hour: u64,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            telegram_channel: None,
            telegram_chat: None,
            min_urgency_telegram: crate::notify::Urgency::High,
            email_to: Vec::new(),
            email_from: None,
            smtp_url: None,
            smtp_password_env: None,
            min_urgency_email: crate::notify::Urgency::High,
            max_per_agent_per_hour: 30,
            max_fanout_per_hour: 30,
        }
    }
}

/// `[notify] telegram_channel` must be a configured channel, and email needs its addresses and
/// server together. Returns the key to point at and the message.
pub(crate) fn check(config: &Config) -> Result<(), (String, String)> {
    super::email::check_config(&config.notify)?;
    if let Some(channel) = &config.notify.telegram_channel
        && !config.channels.channels.contains_key(channel)
    {
        return Err((
            "telegram_channel".into(),
            format!("[notify] telegram_channel names `{channel}`, which no [channels.{channel}] defines"),
        ));
    }
    Ok(())
}

/// `[notify]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [notify]                  # the owner inbox's notes (notify_owner, budget pauses) besides the dashboard
# telegram_channel = "team" # a [channels.NAME] to send them to
# telegram_chat = "123456"  # its chat; unset: the channel's default_target
# min_urgency_telegram = "high"   # low, normal, high, critical
# email_to = ["owner@example.com"]  # notes by email too (needs smtp_url)
# email_from = "kennel@example.com" # unset: the first of email_to
# smtp_url = "smtps://kennel@smtp.example.com:465"   # or smtp://USER@HOST:587?tls=required; no password here
# smtp_password_env = "KENNEL_SMTP_PASSWORD"
# min_urgency_email = "high"
# max_per_agent_per_hour = 30   # notify_owner notes one agent may leave in any hour
# max_fanout_per_hour = 30      # notes sent to Telegram (and, apart, by email) per hour; the rest stay in the inbox
"#;
