//! `[tool_results]` of `config.toml`: its type, defaults and lines in the default file.

use serde::{Deserialize, Serialize};

use crate::config::in_range;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolResultsConfig {
    /// Results larger than this go to the artifact store (spec §0.5).
    #[serde(deserialize_with = "in_range::<_, 64, 67108864>")]
    pub spill_threshold_bytes: u64,
}

impl Default for ToolResultsConfig {
    fn default() -> Self {
        ToolResultsConfig { spill_threshold_bytes: 16384 }
    }
}

/// `[tool_results]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [tool_results]
# Tool results larger than this are stored as artifacts; the model gets a preview.
# spill_threshold_bytes = 16384
"#;
