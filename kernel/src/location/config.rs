//! `[location]` of `config.toml`: its type, defaults and lines in the default file.

use serde::{Deserialize, Serialize};

use crate::config::in_range;
use crate::net::guard::AllowedHosts;

/// `[location]`: the IP geolocation `location_get` falls back to.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LocationConfig {
    /// A service answering in ip-api.com's JSON (`http://ip-api.com/json`); unset: none.
    pub provider_url: Option<String>,
    /// Where it may be reached (like `[a2a] allowed_hosts`).
    pub allowed_hosts: AllowedHosts,
    /// How long an answer is kept.
    #[serde(deserialize_with = "in_range::<_, 0, 604800>")]
    pub cache_secs: u64,
}

impl Default for LocationConfig {
    fn default() -> Self {
        LocationConfig { provider_url: None, allowed_hosts: AllowedHosts::default(), cache_secs: 3600 }
    }
}

/// `[location]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [location]                # location_get's fallback when an agent type sets no `location`
# provider_url = "http://ip-api.com/json"   # ip-api.com's JSON
# cache_secs = 3600
"#;
