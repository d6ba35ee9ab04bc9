//! `kennel channel list|set|remove`: the channels of `config.toml`, changed through the running
//! daemon (which listens with the change at once) or, with none running, in the file through
//! the same kernel code. Secrets are never arguments: `--token-env` and
//! `--signing-secret-env` name the variables that hold them.

use std::path::Path;

use kennel_kernel::channel::{ChannelConfig, ChannelInfo, ChannelKind, ChannelMode, ChannelTest, Channels};
use reqwest::Method;

use super::daemon::Daemon;

/// What `kennel channel set` changes; unset flags keep the channel's settings.
#[derive(clap::Args)]
pub struct SetArgs {
    /// `telegram`, `slack`, `discord` or `webhook`; needed for a new channel.
    #[arg(long)]
    kind: Option<String>,
    /// The agent (by name) whose turns answer its messages ("" to unset).
    #[arg(long)]
    agent: Option<String>,
    /// The platform's API (default: the platform's own); a webhook channel's replies go here ("" to unset).
    #[arg(long)]
    base_url: Option<String>,
    /// The environment variable of the daemon holding the bot token (never the token).
    #[arg(long)]
    token_env: Option<String>,
    /// The environment variable holding the secret inbound requests are signed with.
    #[arg(long)]
    signing_secret_env: Option<String>,
    /// `poll` or `webhook` ("" for the kind's own).
    #[arg(long)]
    mode: Option<String>,
    /// Where a schedule naming only this channel sends ("" to unset).
    #[arg(long)]
    default_target: Option<String>,
    /// A webhook channel that runs no turn: each message is sent on to --default-target.
    #[arg(long, conflicts_with = "answers")]
    deliver_only: bool,
    /// Its agent answers its messages again (undoes --deliver-only).
    #[arg(long)]
    answers: bool,
}

pub async fn list(home: &Path, json_out: bool) -> anyhow::Result<()> {
    let channels: Vec<ChannelInfo> = match Daemon::running(home).await? {
        Some(daemon) => daemon.get("/api/channels").await?,
        None => super::with_store(home, async |k| Ok(k.service::<Channels>().list())).await?,
    };
    if json_out {
        return super::print_json(&channels);
    }
    let mut rows = vec![["NAME", "KIND", "MODE", "AGENT", "STATE"].map(String::from).to_vec()];
    for c in channels {
        let agent = match (c.deliver_only, c.agent) {
            (true, _) => format!("none (delivers to {})", c.default_target.unwrap_or_default()),
            (false, agent) => agent.unwrap_or_default(),
        };
        rows.push(vec![c.name, c.kind, c.mode, agent, c.state]);
    }
    super::print_table(&rows);
    Ok(())
}

pub async fn set(home: &Path, name: &str, args: SetArgs, json_out: bool) -> anyhow::Result<()> {
    check_name(name)?;
    let daemon = Daemon::running(home).await?;
    let stored = match &daemon {
        Some(d) => d.get::<Vec<ChannelInfo>>("/api/channels").await?,
        None => super::with_store(home, async |k| Ok(k.service::<Channels>().list())).await?,
    }
    .into_iter()
    .find(|c| c.name == name)
    .map(|c| c.settings);
    let created = stored.is_none();
    let settings = args.applied_to(stored)?;
    let info: ChannelInfo = match &daemon {
        Some(d) => d.put(&format!("/api/channels/{name}"), &serde_json::to_value(&settings)?).await?,
        None => {
            super::with_store(home, async |k| {
                k.save_channel(name, settings, false).await?;
                Ok(k.service::<Channels>().one(name)?)
            })
            .await?
        }
    };
    if json_out {
        return super::print_json(&info);
    }
    let verb = if created { "added" } else { "saved" };
    let when = if daemon.is_some() { "the daemon listens with it now" } else { "the daemon listens when it starts" };
    println!("channel `{name}` {verb} in config.toml ({}): {when}", info.state);
    Ok(())
}

pub async fn remove(home: &Path, name: &str) -> anyhow::Result<()> {
    check_name(name)?;
    match Daemon::running(home).await? {
        Some(d) => d.act(Method::DELETE, &format!("/api/channels/{name}")).await?,
        None => super::with_store(home, async |k| Ok(k.remove_channel(name).await?)).await?,
    }
    println!("channel `{name}` removed from config.toml (its conversations stay in the store)");
    Ok(())
}

/// Tests the channel from the running daemon (with its environment's secrets); exits 1 when
/// the platform did not answer as it should.
pub async fn test(home: &Path, name: &str, json_out: bool) -> anyhow::Result<()> {
    check_name(name)?;
    let daemon = Daemon::of(home)?;
    let tested: ChannelTest = daemon.post(&format!("/api/channels/{name}/test"), &serde_json::json!({})).await?;
    let answer = super::terminal_safe(&tested.answer);
    if json_out {
        super::print_json(&tested)?;
    } else if tested.ok {
        println!("channel `{name}` answered in {} ms: {answer}", tested.millis);
    }
    if !tested.ok {
        anyhow::bail!("channel `{name}` failed its test after {} ms: {answer}", tested.millis);
    }
    Ok(())
}

/// A channel's name, checked before it goes into a request's path.
fn check_name(name: &str) -> anyhow::Result<()> {
    if kennel_kernel::agent::is_valid_name(name) {
        Ok(())
    } else {
        anyhow::bail!("`{}` is not a channel's name", super::terminal_safe(name))
    }
}

impl SetArgs {
    /// The channel's settings with these flags applied (a new one from `--kind`).
    fn applied_to(&self, current: Option<ChannelConfig>) -> anyhow::Result<ChannelConfig> {
        let kind = match &self.kind {
            Some(kind) => Some(
                serde_json::from_value::<ChannelKind>(serde_json::json!(kind))
                    .map_err(|_| anyhow::anyhow!("--kind must be `telegram`, `slack`, `discord` or `webhook`"))?,
            ),
            None => None,
        };
        let mut settings = match (current, kind) {
            (Some(s), None) => s,
            (Some(s), Some(kind)) => ChannelConfig { kind, ..s },
            (None, Some(kind)) => serde_json::from_value(serde_json::json!({ "kind": kind }))?,
            (None, None) => anyhow::bail!("a new channel needs --kind telegram, slack, discord or webhook"),
        };
        let text = |given: &Option<String>, now: &mut Option<String>| {
            if let Some(value) = given {
                *now = Some(value.clone()).filter(|v| !v.is_empty());
            }
        };
        text(&self.agent, &mut settings.agent);
        text(&self.base_url, &mut settings.base_url);
        text(&self.token_env, &mut settings.token_env);
        text(&self.signing_secret_env, &mut settings.signing_secret_env);
        text(&self.default_target, &mut settings.default_target);
        if let Some(mode) = &self.mode {
            settings.mode = match mode.as_str() {
                "" => None,
                m => Some(
                    serde_json::from_value::<ChannelMode>(serde_json::json!(m))
                        .map_err(|_| anyhow::anyhow!("--mode must be `poll` or `webhook`"))?,
                ),
            };
        }
        if self.deliver_only || self.answers {
            settings.deliver_only = self.deliver_only;
        }
        Ok(settings)
    }
}
