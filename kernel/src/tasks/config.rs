//! `[task_board]` of `config.toml`: its type, defaults and lines in the default file.

use serde::{Deserialize, Serialize};

use crate::config::in_range;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TaskBoardConfig {
    /// A claim not completed within this many seconds goes back to pending (spec §5).
    #[serde(deserialize_with = "in_range::<_, 1, 604800>")]
    pub claim_ttl_secs: u64,
    /// Resets before a task is marked failed; 0 = unlimited.
    pub max_retries: u64,
    /// Posting a task for a running agent starts a turn telling it a task waits.
    pub wake_assignee: bool,
}

impl Default for TaskBoardConfig {
    fn default() -> Self {
        TaskBoardConfig { claim_ttl_secs: 600, max_retries: 0, wake_assignee: true }
    }
}

/// `[task_board]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [task_board]
# claim_ttl_secs = 600
# max_retries = 0          # 0 = unlimited
# wake_assignee = true     # a task posted for an agent starts a turn telling it so
"#;
