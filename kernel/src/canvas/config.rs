//! `[canvas]` of `config.toml`: its type, defaults and lines in the default file.

use serde::{Deserialize, Serialize};

use crate::config::in_range;

/// `[canvas]`: what `canvas_present` keeps.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CanvasConfig {
    /// The largest canvas (its HTML, in bytes) an agent may present.
    #[serde(deserialize_with = "in_range::<_, 1024, 16777216>")]
    pub max_bytes: u64,
    /// The versions kept of an agent's canvas; presenting one more drops the oldest.
    #[serde(deserialize_with = "in_range::<_, 1, 100000>")]
    pub max_versions: u64,
    /// The bytes of all of an agent's kept versions together; presenting past it drops the
    /// oldest versions until the rest fit (the newest is always kept: at most `max_bytes`).
    #[serde(deserialize_with = "in_range::<_, 1024, 17179869184>")]
    pub max_agent_bytes: u64,
}

impl Default for CanvasConfig {
    fn default() -> Self {
        CanvasConfig { max_bytes: 1024 * 1024, max_versions: 50, max_agent_bytes: 16 * 1024 * 1024 }
    }
}

/// `[canvas]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [canvas]
# max_bytes = 1048576          # the largest canvas_present HTML
# max_versions = 50            # versions kept per agent; a new one drops the oldest
# max_agent_bytes = 16777216   # all of an agent's kept versions together; the oldest go first
"#;
