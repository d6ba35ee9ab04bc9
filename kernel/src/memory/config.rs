//! `[proactive_memory]` of `config.toml`: its type, defaults, check at load and lines in the default file.

use serde::{Deserialize, Deserializer, Serialize};

use crate::config::Config;
use crate::llm::ProviderKind;

/// `[proactive_memory]`: the semantic store (spec §4) and what it does around turns.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProactiveMemoryConfig {
    /// `false` withdraws the semantic tools and does not build the store.
    pub enabled: bool,
    /// How fast an unused memory's confidence decays (per day, before the hits' slowing).
    #[serde(deserialize_with = "decay_rate")]
    pub decay_rate: f64,
    /// Before each turn, the most relevant memories go into the prompt.
    pub auto_recall: bool,
    /// After each turn, the extractor proposes lasting facts from it.
    pub auto_memorize: bool,
    /// The most text auto-recall adds to one turn: 0 (none) or 256 to 65,536.
    #[serde(deserialize_with = "recall_bytes")]
    pub recall_max_bytes: u64,
    /// Memories whose confidence has decayed below this are not recalled.
    #[serde(deserialize_with = "fraction")]
    pub recall_min_confidence: f64,
    /// A `[providers.NAME]` (OpenAI-compatible) whose `/embeddings` embeds memories;
    /// absent: the built-in local embedder, which needs no network.
    pub embeddings_provider: Option<String>,
    /// The embedding model asked of `embeddings_provider`.
    pub embeddings_model: Option<String>,
    /// A `[providers.NAME]` whose chat model extracts facts; absent: the rule-based extractor.
    pub extraction_provider: Option<String>,
    /// The model asked of `extraction_provider`.
    pub extraction_model: Option<String>,
}

impl Default for ProactiveMemoryConfig {
    fn default() -> Self {
        ProactiveMemoryConfig {
            enabled: true,
            decay_rate: 0.01,
            auto_recall: true,
            auto_memorize: false,
            recall_max_bytes: 2048,
            recall_min_confidence: 0.3,
            embeddings_provider: None,
            embeddings_model: None,
            extraction_provider: None,
            extraction_model: None,
        }
    }
}

/// Below 256 bytes not even the recall block's header and one memory fit.
fn recall_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let bytes = u64::deserialize(d)?;
    if bytes == 0 || (256..=65536).contains(&bytes) {
        Ok(bytes)
    } else {
        Err(serde::de::Error::custom(format!("expected 0 (no auto-recall text) or 256 to 65536 bytes, found {bytes}")))
    }
}

fn decay_rate<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let rate = f64::deserialize(d)?;
    if rate.is_finite() && (0.0..=10.0).contains(&rate) {
        Ok(rate)
    } else {
        Err(serde::de::Error::custom(format!("expected a rate per day from 0 to 10, found {rate}")))
    }
}

fn fraction<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let value = f64::deserialize(d)?;
    if value.is_finite() && (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(serde::de::Error::custom(format!("expected a number from 0 to 1, found {value}")))
    }
}

/// The providers `[proactive_memory]` names must exist, and embeddings need the
/// OpenAI-compatible wire protocol (`/embeddings`), which Anthropic does not offer.
pub(crate) fn check(config: &Config) -> Result<(), (String, String)> {
    let memory = &config.proactive_memory;
    for (key, name) in
        [("embeddings_provider", &memory.embeddings_provider), ("extraction_provider", &memory.extraction_provider)]
    {
        let Some(name) = name else { continue };
        let Some(provider) = config.providers.get(name) else {
            return Err((
                key.into(),
                format!("[proactive_memory] {key} names `{name}`, which no [providers.{name}] defines"),
            ));
        };
        if key == "extraction_provider" && memory.extraction_model.is_none() {
            return Err((
                key.into(),
                format!(
                    "[proactive_memory] extraction_provider `{name}` needs extraction_model: the chat model to ask"
                ),
            ));
        }
        if key == "embeddings_provider" && provider.kind != ProviderKind::Openai {
            return Err((
                key.into(),
                format!(
                    "[proactive_memory] embeddings_provider `{name}` must be kind = \"openai\": embeddings use its /embeddings endpoint"
                ),
            ));
        }
    }
    Ok(())
}

/// `[proactive_memory]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [proactive_memory]        # the semantic store behind memory_semantic_* and auto-recall
# enabled = true            # false: the semantic tools are withdrawn, the store not built
# decay_rate = 0.01         # how fast unused memories lose confidence (per day)
# auto_recall = true        # relevant memories go into each turn's prompt...
# recall_max_bytes = 2048   # ...at most this much text...
# recall_min_confidence = 0.3   # ...of memories at least this confident
# auto_memorize = false     # after each turn, store the lasting facts the extractor finds
# embeddings_provider = "openai"          # a [providers.NAME]; absent: the local embedder
# embeddings_model = "text-embedding-3-small"
# extraction_provider = "openai"          # a [providers.NAME]; absent: rule-based extraction
# extraction_model = "gpt-4o-mini"
"#;
