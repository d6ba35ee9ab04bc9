//! `[retention]` of `config.toml`: its type, defaults and lines in the default file.

use serde::{Deserialize, Serialize};

use crate::config::in_range;

/// `[retention]`: days each kind of finished record is kept (the nightly sweep,
/// `retention.rs`); `0` keeps it for ever. What is still in use is never swept: a running
/// process, a message not yet answered, an unfinished job or task, an agent's latest canvas.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionConfig {
    /// Ended processes (the Processes list and their records).
    #[serde(deserialize_with = "in_range::<_, 0, 36500>")]
    pub processes_days: u64,
    /// A canvas's older versions (an agent's latest is always kept).
    #[serde(deserialize_with = "in_range::<_, 0, 36500>")]
    pub canvas_versions_days: u64,
    /// Channel messages answered (or failed) and messages sent.
    #[serde(deserialize_with = "in_range::<_, 0, 36500>")]
    pub channel_traffic_days: u64,
    /// Finished media jobs (video and music generation).
    #[serde(deserialize_with = "in_range::<_, 0, 36500>")]
    pub media_jobs_days: u64,
    /// Files in the agents' trash (`remove_file`), after which `restore_file` cannot bring them back.
    #[serde(deserialize_with = "in_range::<_, 0, 36500>")]
    pub trash_days: u64,
    /// Deleted skills' folders (`skills/.deleted`), after which they cannot be restored; their
    /// history stays.
    #[serde(deserialize_with = "in_range::<_, 0, 36500>")]
    pub deleted_skills_days: u64,
    /// Finished A2A tasks (completed, failed, canceled, rejected).
    #[serde(deserialize_with = "in_range::<_, 0, 36500>")]
    pub a2a_tasks_days: u64,
    /// Model calls one row each; after this they are kept as daily totals (per agent,
    /// session, provider and model), which the Usage page and budgets read as well.
    #[serde(deserialize_with = "in_range::<_, 0, 36500>")]
    pub model_calls_days: u64,
    /// The tool-call audit log: kept for ever unless set (an operator's explicit choice).
    #[serde(deserialize_with = "in_range::<_, 0, 36500>")]
    pub audit_days: u64,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            processes_days: 30,
            canvas_versions_days: 90,
            channel_traffic_days: 90,
            media_jobs_days: 30,
            trash_days: 30,
            deleted_skills_days: 90,
            a2a_tasks_days: 30,
            model_calls_days: 90,
            audit_days: 0,
        }
    }
}

/// `[retention]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [retention]               # days finished records are kept (0: for ever); swept nightly
# processes_days = 30       # ended processes
# canvas_versions_days = 90 # older canvas versions (an agent's latest is always kept)
# channel_traffic_days = 90 # channel messages answered or failed, and messages sent
# media_jobs_days = 30      # finished media jobs
# trash_days = 30           # the agents' trash (remove_file); then restore_file cannot
# deleted_skills_days = 90  # deleted skills' folders; then they cannot be restored
# a2a_tasks_days = 30       # finished A2A tasks
# model_calls_days = 90     # model calls one row each; then kept as daily totals
# audit_days = 0            # the tool-call audit log: kept for ever unless set
"#;
