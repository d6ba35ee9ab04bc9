//! `[ask]` of `config.toml`: its type, defaults and lines in the default file.

use serde::{Deserialize, Serialize};

use crate::config::in_range;

/// `[ask]`: how long `ask_user` waits for the person.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AskConfig {
    /// Then the model is told nobody answered.
    #[serde(deserialize_with = "in_range::<_, 1, 86400>")]
    pub timeout_secs: u64,
}

impl Default for AskConfig {
    fn default() -> Self {
        AskConfig { timeout_secs: 600 }
    }
}

/// `[ask]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [ask]                     # ask_user: how long a turn waits for the person's answer
# timeout_secs = 600        # then the model is told nobody answered
"#;
