//! `[skills]` of `config.toml`: its type, defaults and lines in the default file.

use serde::{Deserialize, Serialize};

use crate::config::in_range;

/// `[skills]`: how much of its skills an agent's system prompt carries.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillsConfig {
    /// The most bytes of skill bodies a system prompt carries; what is over is cut with a note
    /// (the full text stays readable: the note says how).
    #[serde(deserialize_with = "in_range::<_, 0, 1048576>")]
    pub prompt_max_bytes: u64,
    /// The most proposals one agent may have waiting for an operator (an agent's change to a
    /// skill it may not change itself becomes one); a further one is refused until some are
    /// accepted or rejected.
    #[serde(deserialize_with = "in_range::<_, 1, 1000>")]
    pub max_pending_proposals_per_agent: u64,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        SkillsConfig { prompt_max_bytes: 32 * 1024, max_pending_proposals_per_agent: 20 }
    }
}

/// `[skills]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [skills]
# Skills live in skills/NAME/ under this home; an agent's system prompt carries the bodies of
# the skills its type lists.
# prompt_max_bytes = 32768     # the most skill text a system prompt carries (cut with a note)
# max_pending_proposals_per_agent = 20  # an agent's changes waiting for an operator on the Skills page
"#;
