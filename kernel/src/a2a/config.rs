//! `[a2a]` of `config.toml`: its type, defaults and lines in the default file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::in_range;
use crate::net::guard::AllowedHosts;

/// `[a2a]`: this daemon as an A2A server (which agents it exposes) and client (where it may
/// connect).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct A2aConfig {
    /// Agents (by name) other daemons and A2A clients may send tasks to.
    pub expose: Vec<String>,
    /// Exposed agents that need no API token (the rest need `Authorization: Bearer TOKEN`).
    pub public: Vec<String>,
    /// Where `a2a_discover`/`a2a_send` may connect: `host:port` or `host:*` entries, checked by
    /// `net::guard` (when the list is not empty, only listed hosts; private and loopback
    /// addresses only through an IP or CIDR entry).
    pub allowed_hosts: AllowedHosts,
    /// Environment variables holding bearer tokens for remote daemons, by `host:port`.
    pub tokens: BTreeMap<String, String>,
    /// How long `a2a_send` waits for a remote task to finish.
    #[serde(deserialize_with = "in_range::<_, 1, 86400>")]
    pub task_ttl_secs: u64,
}

impl Default for A2aConfig {
    fn default() -> Self {
        A2aConfig {
            expose: Vec::new(),
            public: Vec::new(),
            allowed_hosts: AllowedHosts::default(),
            tokens: BTreeMap::new(),
            task_ttl_secs: 300,
        }
    }
}

/// `[a2a]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [a2a]
# expose = ["helper"]          # agents other daemons and A2A clients may send tasks to
# public = []                  # exposed agents that need no API token
# Where a2a_discover/a2a_send may connect: "host:port" or "host:*" (a bare host is refused).
# Empty: any public address. Not empty: only the hosts listed. Loopback, private, link-local
# and other special-purpose addresses are refused unless an IP or CIDR entry opens them
# (a host name entry never does):
# allowed_hosts = ["agents.example.com:443", "127.0.0.1:8080", "10.0.0.0/8:*", "[fd00::/8]:*"]
# task_ttl_secs = 300
# [a2a.tokens]
# "agents.example.com:443" = "EXAMPLE_A2A_TOKEN"   # env var with the bearer token for that host
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_for_test as parse;

    #[test]
    fn a_bare_allowed_host_is_refused_at_load_with_the_fix() {
        let e = parse("[a2a]\nallowed_hosts = [\"127.0.0.1:8080\",\n  \"vm\"]\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 17), "the list's place, and the entry in the message: {e}");
        assert!(e.message.contains("`vm` has no port: write `vm:PORT`"), "{}", e.message);
        assert!(e.message.contains("`vm:*`"), "{}", e.message);
        let e = parse("[a2a]\nallowed_hosts = [\"vm:http\"]\n").unwrap_err();
        assert!(e.message.contains("from 1 to 65535"), "{}", e.message);
    }

    #[test]
    fn the_commented_allowed_hosts_example_parses() {
        let line = DEFAULT_TEXT.lines().find(|l| l.starts_with("# allowed_hosts")).unwrap();
        let c = parse(&format!("[a2a]\n{}\n", line.trim_start_matches("# "))).unwrap();
        let shown = toml::to_string(&c.a2a).unwrap();
        assert!(
            shown.contains(
                r#"allowed_hosts = ["agents.example.com:443", "127.0.0.1:8080", "10.0.0.0/8:*", "[fd00::/8]:*"]"#
            ),
            "{shown}"
        );
    }
}
