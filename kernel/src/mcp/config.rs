//! `[mcp]`: the MCP servers whose tools agents may be granted, checked when the config loads
//! (and again on `kennel reload`, which re-reads only this section).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::net::guard::AllowedHosts;

/// `[mcp]`: every server by name, and where HTTP servers may be.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// Where streamable-HTTP servers may be, checked by `net::guard` like `[a2a]
    /// allowed_hosts`: empty, any public host (a server on loopback must be listed).
    pub allowed_hosts: AllowedHosts,
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// `[mcp.servers.NAME]`: a server started as a child process (`command`) or reached over
/// streamable HTTP (`url`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// A stdio server: the program, found on `PATH` unless it is a path.
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set for a stdio server. It gets these, `PATH`, `HOME`, `LANG` and what
    /// `pass_env` names, nothing else: the daemon's secrets never reach it by omission.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Names of the daemon's environment variables passed on to a stdio server.
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// The folder a stdio server runs in; `$KENNEL_HOME` when absent.
    pub cwd: Option<std::path::PathBuf>,
    /// A streamable-HTTP server's endpoint (`https://mcp.example.com/mcp`).
    pub url: Option<String>,
    /// Headers sent to an HTTP server with every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Headers whose values are secrets, by the environment variable holding each
    /// (`Authorization = "GITHUB_MCP_AUTH"`); read at connect, never stored or shown.
    #[serde(default)]
    pub header_env: BTreeMap<String, String>,
    /// How long one tool call may take.
    #[serde(default = "default_call_timeout_secs", deserialize_with = "crate::config::in_range::<_, 1, 3600>")]
    pub timeout_secs: u64,
}

fn default_call_timeout_secs() -> u64 {
    60
}

/// The longest server name: `mcp__NAME__` leaves the tool at least 36 of the 64 characters a
/// model API allows in a tool name.
pub const MAX_SERVER_NAME: usize = 21;

/// What kind of server `[mcp.servers.NAME]` is.
pub enum Transport<'a> {
    Stdio { command: &'a str },
    Http { url: &'a str },
}

impl McpServerConfig {
    pub fn transport(&self) -> Transport<'_> {
        match (&self.command, &self.url) {
            (Some(command), _) => Transport::Stdio { command },
            (None, Some(url)) => Transport::Http { url },
            // `check` refuses a server with neither.
            (None, None) => Transport::Stdio { command: "" },
        }
    }
}

/// Why `[mcp]` is wrong, as (the config key to point at, the message).
pub(crate) fn check(config: &Config) -> Result<(), (String, String)> {
    for (name, server) in &config.mcp.servers {
        let key = format!("mcp.servers.{name}");
        let refuse = |message: String| Err((key.clone(), format!("[mcp.servers.{name}] {message}")));
        if !is_valid_server_name(name) {
            return refuse(format!(
                "the name must be 1-{MAX_SERVER_NAME} lowercase letters, digits, `-` or single `_` (its tools are named `mcp__NAME__TOOL`)"
            ));
        }
        match (&server.command, &server.url) {
            (Some(_), Some(_)) => return refuse("has both `command` (stdio) and `url` (HTTP); give one".into()),
            (None, None) => {
                return refuse("needs `command` (a stdio server) or `url` (a streamable-HTTP server)".into());
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return refuse("`command` is empty".into());
                }
                if !server.headers.is_empty() || !server.header_env.is_empty() {
                    return refuse("`headers` and `header_env` are for HTTP servers (`url`)".into());
                }
            }
            (None, Some(url)) => {
                match reqwest::Url::parse(url) {
                    Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
                    _ => return refuse(format!("`url` must be an http:// or https:// address; got `{url}`")),
                }
                if !server.args.is_empty()
                    || !server.env.is_empty()
                    || !server.pass_env.is_empty()
                    || server.cwd.is_some()
                {
                    return refuse("`args`, `env`, `pass_env` and `cwd` are for stdio servers (`command`)".into());
                }
            }
        }
        for header in server.headers.keys().chain(server.header_env.keys()) {
            if reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_err() {
                return refuse(format!("`{header}` is not a valid HTTP header name"));
            }
        }
        for (header, value) in &server.headers {
            if reqwest::header::HeaderValue::from_str(value).is_err() {
                return refuse(format!("the value of header `{header}` has characters a header cannot carry"));
            }
        }
        for variable in server.header_env.values().chain(&server.pass_env).chain(server.env.keys()) {
            if !is_env_name(variable) {
                return refuse(format!("`{variable}` is not an environment variable name"));
            }
        }
    }
    Ok(())
}

/// A server name that cannot make a tool name ambiguous: no `__`, which separates the server
/// from the tool.
pub fn is_valid_server_name(name: &str) -> bool {
    (1..=MAX_SERVER_NAME).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && !name.contains("__")
        && !name.starts_with('_')
        && !name.ends_with('_')
}

fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<(), String> {
        let mcp: McpConfig = toml::from_str(text).map_err(|e| e.message().to_string())?;
        check(&Config { mcp, ..Config::default() }).map_err(|(_, message)| message)
    }

    #[test]
    fn a_server_is_stdio_or_http_with_the_fields_of_its_kind() {
        assert_eq!(parsed("[servers.fs]\ncommand = \"node\"\nargs = [\"server.js\"]\n"), Ok(()));
        assert_eq!(
            parsed(
                "[servers.gh]\nurl = \"https://mcp.example.com/mcp\"\nheader_env = { Authorization = \"GH_AUTH\" }\n"
            ),
            Ok(())
        );
        for (text, expected) in [
            ("[servers.x]\n", "needs `command`"),
            ("[servers.x]\ncommand = \"a\"\nurl = \"http://h/\"\n", "has both"),
            ("[servers.x]\nurl = \"ftp://h/\"\n", "must be an http:// or https://"),
            ("[servers.x]\ncommand = \"a\"\nheaders = { A = \"b\" }\n", "are for HTTP servers"),
            ("[servers.x]\nurl = \"http://h/\"\nargs = [\"a\"]\n", "are for stdio servers"),
            (
                "[servers.x]\nurl = \"http://h/\"\nheader_env = { \"Bad Header\" = \"A\" }\n",
                "not a valid HTTP header name",
            ),
            ("[servers.x]\nurl = \"http://h/\"\nheader_env = { A = \"1NOPE\" }\n", "not an environment variable name"),
            ("[servers.my__srv]\ncommand = \"a\"\n", "the name must be"),
            ("[servers.Upper]\ncommand = \"a\"\n", "the name must be"),
            ("[servers.a-server-name-too-long-for-it]\ncommand = \"a\"\n", "the name must be"),
        ] {
            let message = parsed(text).unwrap_err();
            assert!(message.contains(expected), "{text:?}: {message}");
        }
    }
}
