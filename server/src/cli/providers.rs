//! `kennel provider list|set|remove|default|test`: the providers of `config.toml`, changed
//! through the running daemon (which uses the change at once) or, with none running, in the
//! file through the same kernel code. Keys are never arguments: `--api-key-env` names the
//! variable that holds one.

use std::path::Path;

use anyhow::Context;
use kennel_kernel::llm::{ModelConfig, ProviderConfig, ProviderInfo, ProviderSaved};
use reqwest::Method;

use super::daemon::Daemon;

/// What `kennel provider set` changes; unset flags keep the provider's settings.
#[derive(clap::Args)]
pub struct SetArgs {
    /// `openai` (OpenAI-compatible) or `anthropic`; needed for a new provider.
    #[arg(long)]
    kind: Option<String>,
    /// Where its requests go (default: the vendor's public address).
    #[arg(long)]
    base_url: Option<String>,
    /// The environment variable of the daemon holding its key (never the key).
    #[arg(long, conflicts_with = "no_key")]
    api_key_env: Option<String>,
    /// It needs no key (a local server).
    #[arg(long)]
    no_key: bool,
    #[arg(long)]
    timeout_secs: Option<u64>,
    #[arg(long)]
    max_retries: Option<u64>,
    /// At most this many calls at once; more wait their turn (0: no bound).
    #[arg(long)]
    max_in_flight: Option<u64>,
    /// Ask for replies whole rather than streamed.
    #[arg(long, conflicts_with = "stream")]
    no_stream: bool,
    /// Ask for replies streamed as they are written (the default).
    #[arg(long)]
    stream: bool,
    /// A model it serves (repeatable).
    #[arg(long = "model", value_name = "MODEL")]
    models: Vec<String>,
    /// A model's context window: MODEL=TOKENS (repeatable).
    #[arg(long = "context", value_name = "MODEL=TOKENS")]
    contexts: Vec<String>,
    /// A model's prices in US dollars per million tokens: MODEL=INPUT,OUTPUT (repeatable).
    #[arg(long = "price", value_name = "MODEL=INPUT,OUTPUT")]
    prices: Vec<String>,
    /// A model to forget (repeatable).
    #[arg(long = "remove-model", value_name = "MODEL")]
    remove_models: Vec<String>,
    /// Make it the default: agents whose type names no provider use it.
    #[arg(long)]
    default: bool,
}

pub async fn list(home: &Path, json_out: bool) -> anyhow::Result<()> {
    let providers: Vec<ProviderInfo> = match Daemon::running(home).await? {
        Some(daemon) => daemon.get("/api/providers").await?,
        None => super::with_store(home, async |k| Ok(k.provider_infos())).await?,
    };
    if json_out {
        return super::print_json(&providers);
    }
    let mut rows = vec![["NAME", "PROTOCOL", "URL", "KEY", "MODELS"].map(String::from).to_vec()];
    for p in providers {
        let key = match (&p.key_env, p.key_set) {
            (None, _) => "none needed".to_string(),
            (Some(var), true) => format!("{var} (set)"),
            (Some(var), false) => format!("{var} (missing)"),
        };
        let name = if p.default { format!("{} (default)", p.name) } else { p.name };
        rows.push(vec![
            name,
            p.settings.kind.as_str().to_string(),
            p.url,
            key,
            p.settings.models.keys().cloned().collect::<Vec<_>>().join(", "),
        ]);
    }
    super::print_table(&rows);
    Ok(())
}

pub async fn set(home: &Path, name: &str, args: SetArgs, json_out: bool) -> anyhow::Result<()> {
    check_name(name)?;
    let daemon = Daemon::running(home).await?;
    let current = match &daemon {
        Some(d) => d.get::<Vec<ProviderInfo>>("/api/providers").await?,
        None => super::with_store(home, async |k| Ok(k.provider_infos())).await?,
    }
    .into_iter()
    .find(|p| p.name == name)
    .map(|p| p.settings);
    let settings = args.applied_to(current)?;
    let saved = match &daemon {
        Some(d) => {
            let saved: ProviderSaved =
                d.put(&format!("/api/providers/{name}"), &serde_json::to_value(&settings)?).await?;
            if args.default {
                d.act(Method::POST, &format!("/api/providers/{name}/default")).await?;
            }
            saved
        }
        None => super::with_store(home, async |k| Ok(k.save_provider(name, settings, args.default).await?)).await?,
    };
    if json_out {
        return super::print_json(&saved);
    }
    let verb = if saved.created { "added" } else { "saved" };
    let when = if daemon.is_some() {
        "the daemon uses it from its next model call"
    } else {
        "the daemon uses it when it starts"
    };
    println!("provider `{name}` {verb} in config.toml: {when}");
    if let Some(default) = saved.default_set.filter(|d| d != name) {
        println!("`{default}` is now the default provider, as it was for agents naming none");
    }
    Ok(())
}

pub async fn remove(home: &Path, name: &str) -> anyhow::Result<()> {
    check_name(name)?;
    match Daemon::running(home).await? {
        Some(d) => d.act(Method::DELETE, &format!("/api/providers/{name}")).await?,
        None => super::with_store(home, async |k| Ok(k.remove_provider(name).await?)).await?,
    }
    println!("provider `{name}` removed from config.toml");
    Ok(())
}

pub async fn make_default(home: &Path, name: &str) -> anyhow::Result<()> {
    check_name(name)?;
    match Daemon::running(home).await? {
        Some(d) => d.act(Method::POST, &format!("/api/providers/{name}/default")).await?,
        None => super::with_store(home, async |k| Ok(k.make_default_provider(name).await?)).await?,
    }
    println!("`{name}` is the default provider: agents whose type names none use it");
    Ok(())
}

/// A provider's name, checked before it goes into a request's path.
pub(super) fn check_name(name: &str) -> anyhow::Result<()> {
    if kennel_kernel::agent::is_valid_name(name) {
        Ok(())
    } else {
        anyhow::bail!("`{}` is not a provider's name", super::terminal_safe(name))
    }
}

impl SetArgs {
    /// The provider's settings with these flags applied (a new one from `--kind`).
    fn applied_to(&self, current: Option<ProviderConfig>) -> anyhow::Result<ProviderConfig> {
        let mut settings = match (current, &self.kind) {
            (Some(s), None) => s,
            (current, Some(kind)) => {
                let kind = serde_json::from_value(serde_json::json!(kind))
                    .map_err(|_| anyhow::anyhow!("--kind must be `openai` or `anthropic`"))?;
                let fresh =
                    || serde_json::from_value(serde_json::json!({ "kind": kind })).expect("a kind alone is a provider");
                ProviderConfig { kind, ..current.unwrap_or_else(fresh) }
            }
            (None, None) => anyhow::bail!("a new provider needs --kind openai or --kind anthropic"),
        };
        if let Some(url) = &self.base_url {
            settings.base_url = Some(url.clone()).filter(|u| !u.is_empty());
        }
        if self.no_key {
            settings.api_key_env = Some(String::new());
        } else if let Some(var) = &self.api_key_env {
            settings.api_key_env = Some(var.clone());
        }
        settings.timeout_secs = self.timeout_secs.unwrap_or(settings.timeout_secs);
        settings.max_retries = self.max_retries.unwrap_or(settings.max_retries);
        settings.max_in_flight = match self.max_in_flight {
            Some(0) => None,
            Some(n) => Some(n),
            None => settings.max_in_flight,
        };
        if self.no_stream || self.stream {
            settings.stream = self.stream;
        }
        for model in &self.models {
            settings.models.entry(model.clone()).or_default();
        }
        for given in &self.contexts {
            let (model, tokens) = split(given, "--context", "MODEL=TOKENS")?;
            let tokens =
                tokens.parse().with_context(|| format!("--context {given}: `{tokens}` is not a whole number"))?;
            model_of(&mut settings, model).context_tokens = Some(tokens);
        }
        for given in &self.prices {
            let (model, prices) = split(given, "--price", "MODEL=INPUT,OUTPUT")?;
            let (input, output) = prices
                .split_once(',')
                .with_context(|| format!("--price {given}: give MODEL=INPUT,OUTPUT (dollars per million tokens)"))?;
            let price =
                |p: &str| p.trim().parse::<f64>().with_context(|| format!("--price {given}: `{p}` is not a number"));
            let entry = model_of(&mut settings, model);
            entry.input_usd_per_mtok = Some(price(input)?);
            entry.output_usd_per_mtok = Some(price(output)?);
        }
        for model in &self.remove_models {
            settings.models.remove(model);
        }
        Ok(settings)
    }
}

fn model_of<'a>(settings: &'a mut ProviderConfig, model: &str) -> &'a mut ModelConfig {
    settings.models.entry(model.to_string()).or_default()
}

fn split<'a>(given: &'a str, flag: &str, shape: &str) -> anyhow::Result<(&'a str, &'a str)> {
    given.split_once('=').filter(|(m, _)| !m.is_empty()).with_context(|| format!("{flag} {given}: give {shape}"))
}
