//! `[browser]` of `config.toml`: its type, defaults and lines in the default file.

use serde::{Deserialize, Serialize};

use crate::config::in_range;
use crate::net::guard::AllowedHosts;

/// `[browser]`: headless Chromium for the browser family (spec §9). Its presence turns the
/// family on; Chromium starts on the first browser call, never at daemon start.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BrowserConfig {
    /// The Chromium (or Chrome) binary; unset: `chromium`, `chromium-browser`,
    /// `google-chrome` on `PATH`, first found.
    pub executable: Option<std::path::PathBuf>,
    /// `false` shows windows (needs a display); tests and servers keep it headless.
    pub headless: bool,
    /// Tabs one agent may have open at once; `browser_navigate` of one more is refused.
    #[serde(deserialize_with = "in_range::<_, 1, 64>")]
    pub tabs_per_agent: u64,
    /// How long `browser_navigate` and `browser_back` wait for the page to load.
    #[serde(deserialize_with = "in_range::<_, 1, 600>")]
    pub navigation_timeout_secs: u64,
    /// A tab unused this long is closed, an agent's context when its last tab is, and
    /// Chromium itself when no agent has a tab open.
    #[serde(deserialize_with = "in_range::<_, 1, 86400>")]
    pub idle_close_secs: u64,
    /// Where pages may connect, checked by `net::guard` for every request a page makes (its
    /// own URL, redirects, images, fetches, websockets): empty, any public address;
    /// private, loopback and link-local addresses only through an IP or CIDR entry.
    pub allowed_hosts: AllowedHosts,
    /// Hosts refused even when `allowed_hosts` lets them through (same syntax).
    pub blocked_hosts: AllowedHosts,
    /// Chromium's own sandbox around its renderers. Always off for a daemon run as root
    /// (Chromium refuses it there; the daemon logs it); turn it off only where the machine
    /// cannot give Chromium the user namespaces it needs.
    pub sandbox: bool,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        BrowserConfig {
            executable: None,
            headless: true,
            tabs_per_agent: 4,
            navigation_timeout_secs: 30,
            idle_close_secs: 300,
            allowed_hosts: AllowedHosts::default(),
            blocked_hosts: AllowedHosts::default(),
            sandbox: true,
        }
    }
}

/// `[browser]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [browser]                 # headless Chromium for the browser tools (absent: excluded)
# executable = "/usr/bin/chromium"   # found on PATH when not set
# tabs_per_agent = 4
# navigation_timeout_secs = 30
# idle_close_secs = 300     # idle tabs close; Chromium stops when no agent has a tab
# sandbox = true            # Chromium's own sandbox (always off when the daemon runs as root)
# [browser] allowed_hosts = []   # every request a page makes is checked (like [a2a] allowed_hosts)
# [browser] blocked_hosts = ["ads.example.com:*"]   # refused even when allowed
"#;
