//! `[providers.NAME]` of `config.toml`: its types, defaults, check at load and lines in the default file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::config::{Config, default_max_retries, in_range, optional_in_range, optional_price};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter, …).
    Openai,
    /// Anthropic Messages API.
    Anthropic,
}

/// `[providers.NAME]`, also the body of `PUT /api/providers/{name}`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// Defaults to the vendor's public endpoint for `kind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = r"^https?://[^/\s]+", max_length = 2000)]
    pub base_url: Option<String>,
    /// The environment variable holding the API key; defaults by `kind`. Local servers
    /// that need no key can set `api_key_env = ""`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = r"^([A-Za-z_][A-Za-z0-9_]{0,127})?$")]
    pub api_key_env: Option<String>,
    #[serde(default = "default_timeout_secs", deserialize_with = "in_range::<_, 1, 3600>")]
    #[schema(minimum = 1, maximum = 3600, default = 120)]
    pub timeout_secs: u64,
    /// Retries after a 429, a 5xx or a dropped connection, with backoff.
    #[serde(default = "default_max_retries", deserialize_with = "in_range::<_, 0, 10>")]
    #[schema(minimum = 0, maximum = 10, default = 3)]
    pub max_retries: u64,
    /// Ask for the reply as a stream of tokens (SSE). `false`, or a server that answers in
    /// one piece anyway, gives the same turn events when the reply is complete.
    #[serde(default = "default_stream")]
    #[schema(default = true)]
    pub stream: bool,
    /// What is known of each model: `[providers.NAME.models.MODEL]`.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
    /// At most this many model calls at once to this provider; more wait their turn (shown as
    /// queued) instead of meeting its rate limit. Unset: no bound.
    #[serde(default, deserialize_with = "optional_in_range::<_, 1, 10000>", skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 10000)]
    pub max_in_flight: Option<u64>,
}

impl ProviderKind {
    /// Its name in config.toml (`kind = "openai"`).
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }
}

impl ProviderConfig {
    /// Whether `model` is sent the images tool results carry (a screenshot), or only their
    /// paths: `[providers.NAME.models.MODEL] images`, else by kind. Anthropic's models all
    /// take images; an OpenAI-compatible server is often a local one serving a text-only
    /// model that refuses image parts, so those are sent none unless `images = true` (as for
    /// `gpt-4o`).
    pub fn accepts_images(&self, model: &str) -> bool {
        self.models.get(model).and_then(|m| m.images).unwrap_or(match self.kind {
            ProviderKind::Anthropic => true,
            ProviderKind::Openai => false,
        })
    }
}

/// `[providers.NAME.models.MODEL]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The model's context window in tokens (prompt and reply together). Unset: the known
    /// default of its family, else what the provider's first refusal says.
    #[serde(
        default,
        deserialize_with = "optional_in_range::<_, 256, 100000000>",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(minimum = 256, maximum = 100000000)]
    pub context_tokens: Option<u64>,
    /// Prices in US dollars per million tokens, for the usage reports and dollar budgets.
    #[serde(default, deserialize_with = "optional_price", skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 1000000)]
    pub input_usd_per_mtok: Option<f64>,
    /// Input tokens read from the provider's prompt cache; unset: a tenth of the input price
    /// for kind "anthropic" (its published price), else the input price.
    #[serde(default, deserialize_with = "optional_price", skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 1000000)]
    pub cached_input_usd_per_mtok: Option<f64>,
    /// Input tokens written into the provider's prompt cache; unset: 1.25 × the input price for
    /// kind "anthropic" (its five-minute cache), else the input price.
    #[serde(default, deserialize_with = "optional_price", skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 1000000)]
    pub cache_write_usd_per_mtok: Option<f64>,
    #[serde(default, deserialize_with = "optional_price", skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 1000000)]
    pub output_usd_per_mtok: Option<f64>,
    /// Whether the model is sent the images tool results carry (`images = true|false`).
    /// Unset: by the provider's kind ([`ProviderConfig::accepts_images`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<bool>,
}

fn default_stream() -> bool {
    true
}

fn default_timeout_secs() -> u64 {
    120
}

/// Every `[providers.NAME]` is named as agent types can name it, and its `base_url` is an
/// address a request can go to.
pub(crate) fn check(config: &Config) -> Result<(), (String, String)> {
    for (name, provider) in &config.providers {
        if !crate::agent::is_valid_name(name) {
            return Err((
                format!("providers.{name}"),
                format!("provider name `{name}` must be 1-64 lowercase letters, digits, `-` or `_`"),
            ));
        }
        let problem = match (&provider.base_url, &provider.api_key_env) {
            (Some(url), _) if let Err(problem) = check_base_url(url) => Some(format!("base_url: {problem}")),
            (_, Some(var)) if !is_env_name(var) => Some(format!(
                "api_key_env: `{var}` is not the name of an environment variable (no `=`, space or control character; \"\" for none)"
            )),
            _ => provider.models.keys().find(|m| !crate::text::is_title(m, 200)).map(|m| {
                format!("models: `{}` is not a model name (one line of at most 200 characters)", m.escape_debug())
            }),
        };
        if let Some(problem) = problem {
            return Err((format!("[providers.{name}]"), format!("[providers.{name}] {problem}")));
        }
    }
    Ok(())
}

/// Empty (no key) or something the environment can hold as a name: no `=`, no space or
/// control character (looser than a shell's names, so a config that loaded before still does).
fn is_env_name(var: &str) -> bool {
    var.len() <= 128 && !var.chars().any(|c| c == '=' || c.is_whitespace() || c.is_control())
}

/// An `http://` or `https://` address with a host.
fn check_base_url(url: &str) -> Result<(), String> {
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        Ok(_) => Err(format!("`{url}` is not an http:// or https:// address")),
        Err(e) => Err(format!("`{url}` is not an address: {e}")),
    }
}

/// `[providers]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# LLM providers, named as agent types refer to them (provider = "openai").
# [providers.openai]
# kind = "openai"                        # OpenAI-compatible chat completions
# base_url = "https://api.openai.com/v1"
# api_key_env = "OPENAI_API_KEY"
# timeout_secs = 120
# max_retries = 3                        # after 429 / 5xx, with backoff
# stream = true                          # tokens as they come (false: the reply in one piece)
# max_in_flight = 4                      # unset: no bound; calls beyond it wait (queued)
# [providers.openai.models.gpt-4o]
# context_tokens = 128000                # unset: the family's known window, else learned
# input_usd_per_mtok = 2.5               # prices for the usage reports and dollar budgets
# cached_input_usd_per_mtok = 1.25       # prompt-cache reads; unset: the input price
#                                        # (kind "anthropic": a tenth of it)
# cache_write_usd_per_mtok = 2.5         # prompt-cache writes; unset: the input price
#                                        # (kind "anthropic": 1.25 × it)
# output_usd_per_mtok = 10.0
# images = true                          # send it the images tool results carry (screenshots);
#                                        # unset: true for kind "anthropic", false for "openai"
#                                        # (local servers often serve text-only models)
#
# [providers.anthropic]
# kind = "anthropic"
# api_key_env = "ANTHROPIC_API_KEY"
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_for_test as parse;

    #[test]
    fn images_are_sent_to_anthropic_and_to_openai_kind_models_only_when_configured() {
        let c = parse(
            "[kernel]\ndefault_provider = \"a\"\n[providers.a]\nkind = \"anthropic\"\n[providers.a.models.text-only]\nimages = false\n\
             [providers.o]\nkind = \"openai\"\n[providers.o.models.gpt-4o]\nimages = true\n\
             [providers.o.models.priced]\ninput_usd_per_mtok = 1.0\n",
        )
        .unwrap();
        let (a, o) = (&c.providers["a"], &c.providers["o"]);
        assert!(a.accepts_images("claude-sonnet-4-5"), "anthropic's default");
        assert!(!a.accepts_images("text-only"), "turned off");
        assert!(!o.accepts_images("llama3"), "openai-kind default");
        assert!(!o.accepts_images("priced"), "a model section without `images` keeps the default");
        assert!(o.accepts_images("gpt-4o"), "turned on");
        let e = parse("[providers.o]\nkind = \"openai\"\n[providers.o.models.m]\nimages = \"yes\"\n").unwrap_err();
        assert!(e.message.contains("bool"), "{}", e.message);
    }

    #[test]
    fn providers_parse_with_defaults_and_reject_unknown_kinds() {
        let c = parse("[providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n").unwrap();
        assert_eq!(c.providers["local"].kind, ProviderKind::Openai);
        assert_eq!(c.providers["local"].timeout_secs, 120);
        let e = parse("[providers.x]\nkind = \"gemini\"\n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse("[providers.Bad]\nkind = \"openai\"\n").unwrap_err();
        assert!(e.message.contains("provider name"), "{}", e.message);
    }
}
