//! `[cluster]` of `config.toml`: its type, defaults and lines in the default file.

use serde::{Deserialize, Serialize};

use crate::config::in_range;

/// `[cluster]`: several daemons on one PostgreSQL database (`cluster` module docs).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterConfig {
    /// How long a daemon's leases (its agents, a channel's poller) outlive its last
    /// heartbeat; it beats every third of this. A daemon killed outright loses its agents to
    /// the others within about this long. Every daemon of a cluster should use the same
    /// value, and their clocks must agree to well within it (NTP).
    #[serde(deserialize_with = "in_range::<_, 600, 600000>")]
    pub lease_ms: u64,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig { lease_ms: 3000 }
    }
}

/// `[cluster]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [cluster]                 # several daemons on one PostgreSQL database share agents, fires, claims
# lease_ms = 3000           # a killed daemon's agents move to the others within about this long
"#;
