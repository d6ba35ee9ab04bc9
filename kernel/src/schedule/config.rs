//! `[schedules]` of `config.toml`: its type, defaults and lines in the default file.

use serde::{Deserialize, Serialize};

use crate::config::in_range;

/// `[schedules]`: how schedule and cron fires run (spec §11).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SchedulesConfig {
    /// Fired turns that may run at once; more wait their turn (a burst of due jobs must not
    /// open thousands of provider requests together).
    #[serde(deserialize_with = "in_range::<_, 1, 1024>")]
    pub max_concurrent_fires: u64,
    /// Fires remembered per schedule (outcome, duration); older ones are dropped.
    #[serde(deserialize_with = "in_range::<_, 1, 10000>")]
    pub fire_history: u64,
}

impl Default for SchedulesConfig {
    fn default() -> Self {
        SchedulesConfig { max_concurrent_fires: 32, fire_history: 100 }
    }
}

/// `[schedules]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [schedules]
# max_concurrent_fires = 32   # scheduled turns running at once; more wait
# fire_history = 100          # fires remembered per schedule
"#;
