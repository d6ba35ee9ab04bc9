//! `$KENNEL_HOME/config.toml` → a typed [`Config`]. Every section is optional and takes the
//! spec's defaults; an unknown key, a wrong type or an out-of-range value is an error that
//! names the file, the line and what was expected.

mod channels;
pub mod edit;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::LazyLock;

use serde::{Deserialize, Deserializer, Serialize};

use crate::text::line_and_column;
use crate::{
    a2a, approval, ask, browser, canvas, channel, chat_api, cluster, llm, location, mcp, media, memory, metrics,
    notify, process, retention, schedule, skills, tasks, tool, usage, workspace,
};

/// Declares [`Config`], one line per section: its field (doc comments pass through), its
/// commented lines in the default file (`text:`) and its check at load (`check:`, the key to
/// point at and the message), each optional. The lines' order is the default file's order and
/// the order the checks run in.
macro_rules! sections {
    ($($(#[$attr:meta])* $field:ident: $ty:ty $(, text: $text:expr)? $(, check: $check:path)?;)*) => {
        #[derive(Debug, Clone, Default, Deserialize, Serialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct Config {
            $($(#[$attr])* pub $field: $ty,)*
        }

        /// Every section's commented lines, in the default file's order.
        const SECTION_TEXTS: &[&str] = &[$($($text,)?)*];

        /// Every section's check in turn; the first problem found.
        fn check_sections(config: &Config) -> Result<(), (String, String)> {
            $($($check(config)?;)?)*
            Ok(())
        }
    };
}

sections! {
    server: ServerConfig, text: SERVER_TEXT;
    kernel: KernelConfig, text: KERNEL_TEXT, check: check_default_provider;
    budgets: usage::BudgetsConfig, text: usage::config::DEFAULT_TEXT;
    proactive_memory: memory::ProactiveMemoryConfig, text: memory::config::DEFAULT_TEXT, check: memory::config::check;
    task_board: tasks::TaskBoardConfig, text: tasks::config::DEFAULT_TEXT;
    media: media::MediaConfig, text: media::config::DEFAULT_TEXT, check: media::config::check;
    /// `None` without a `[browser]` section: the browser tools are excluded.
    browser: Option<browser::BrowserConfig>, text: browser::config::DEFAULT_TEXT;
    /// `[channels.NAME]`: chat platforms bound to agents (spec §6), and `[channels]
    /// allowed_hosts` for every outbound channel request.
    channels: channel::ChannelsConfig, text: channel::config::DEFAULT_TEXT, check: channel::config::check;
    location: location::LocationConfig, text: location::config::DEFAULT_TEXT;
    /// `[database]`: SQLite in the home unless a PostgreSQL server is named.
    database: DatabaseConfig, text: DATABASE_TEXT, check: check_database;
    /// `[cluster]`: how daemons sharing one PostgreSQL database share the work.
    cluster: cluster::ClusterConfig, text: cluster::config::DEFAULT_TEXT;
    /// `[retention]`: how long finished records are kept before the nightly sweep removes them.
    retention: retention::RetentionConfig, text: retention::config::DEFAULT_TEXT;
    ask: ask::AskConfig, text: ask::config::DEFAULT_TEXT;
    /// `[approvals]`: calls that wait for a person's decision.
    approvals: approval::ApprovalsConfig, text: approval::config::DEFAULT_TEXT, check: approval::config::check;
    /// `[mcp.servers.NAME]`: MCP servers whose tools agents may be granted.
    mcp: mcp::config::McpConfig, check: mcp::config::check;
    notify: notify::NotifyConfig, text: notify::config::DEFAULT_TEXT, check: notify::config::check;
    exec_policy: process::ExecPolicyConfig, text: process::config::DEFAULT_TEXT, check: process::config::check;
    schedules: schedule::SchedulesConfig, text: schedule::config::DEFAULT_TEXT;
    tool_results: tool::ToolResultsConfig, text: tool::config::DEFAULT_TEXT;
    a2a: a2a::A2aConfig, text: a2a::config::DEFAULT_TEXT;
    /// `[openai]`: agents served as models of the OpenAI-compatible endpoint.
    openai: chat_api::OpenAiConfig, text: chat_api::DEFAULT_TEXT;
    /// `[metrics]`: where `GET /metrics` answers without a token, if anywhere.
    metrics: metrics::MetricsConfig, text: metrics::DEFAULT_TEXT;
    workspace: workspace::WorkspaceConfig, text: workspace::config::DEFAULT_TEXT;
    canvas: canvas::CanvasConfig, text: canvas::config::DEFAULT_TEXT;
    skills: skills::SkillsConfig, text: skills::config::DEFAULT_TEXT;
    /// LLM providers by the name agent types use (`provider = "local"`).
    providers: BTreeMap<String, llm::ProviderConfig>, text: llm::config::DEFAULT_TEXT, check: llm::config::check;
}

/// `[database]`: where the daemon keeps its state.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseConfig {
    /// `postgres://user@host:port/db`: a PostgreSQL database instead of SQLite in the home
    /// (`KENNEL_DATABASE_URL` wins over it). Never serialised: it may hold a password.
    #[serde(skip_serializing)]
    pub url: Option<String>,
}

/// The variable naming the database, over `[database] url`.
pub const DATABASE_URL_ENV: &str = "KENNEL_DATABASE_URL";

impl DatabaseConfig {
    /// The PostgreSQL URL to use, if any: the environment's, else the file's.
    pub fn postgres_url(&self) -> Option<String> {
        std::env::var(DATABASE_URL_ENV).ok().filter(|u| !u.trim().is_empty()).or_else(|| self.url.clone())
    }
}

/// A database URL as an operator may see it: the password left out.
pub fn redacted_url(url: &str) -> String {
    match url.split_once("://").and_then(|(scheme, rest)| Some((scheme, rest.split_once('@')?))) {
        Some((scheme, (credentials, host))) => {
            let user = credentials.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}@{host}")
        }
        None => url.to_string(),
    }
}

/// A PostgreSQL URL the daemon can use, or why not (checked at load, so a typo stops start-up
/// with the line, not a connection error later).
pub fn check_database_url(url: &str) -> Result<(), String> {
    use std::str::FromStr;
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(format!(
            "database url `{}` is not a postgres:// URL (SQLite needs no url: leave it out)",
            redacted_url(url)
        ));
    }
    sqlx::postgres::PgConnectOptions::from_str(url)
        .map(|_| ())
        .map_err(|e| format!("database url `{}` cannot be read: {e}", redacted_url(url)))
}

impl Config {
    /// The provider an agent whose type names none uses: `[kernel] default_provider`, or the
    /// only one configured. `None` with no provider at all (the load refuses several without
    /// a default: [`check_default_provider`]).
    pub fn default_provider(&self) -> Option<&str> {
        match (&self.kernel.default_provider, self.providers.len()) {
            (Some(name), _) => Some(name),
            (None, 1) => self.providers.keys().next().map(String::as_str),
            (None, _) => None,
        }
    }
}

/// `[kernel] default_provider` names a configured provider, and is set when several are.
fn check_default_provider(config: &Config) -> Result<(), (String, String)> {
    let configured = || config.providers.keys().cloned().collect::<Vec<_>>().join(", ");
    match &config.kernel.default_provider {
        Some(name) if !config.providers.contains_key(name) => Err((
            "default_provider".into(),
            format!(
                "default_provider `{name}` is not a configured provider (configured: {})",
                if config.providers.is_empty() { "none".into() } else { configured() }
            ),
        )),
        // Pointed at the second provider's section, the one whose adding made the choice.
        None if config.providers.len() > 1 => Err((
            format!("[providers.{}]", config.providers.keys().nth(1).map(String::as_str).unwrap_or_default()),
            format!(
                "several providers are configured ({}): set default_provider = \"NAME\" under [kernel], the one agents whose type names no provider use",
                configured()
            ),
        )),
        _ => Ok(()),
    }
}

/// `[database] url`, when set, is one the daemon can use.
fn check_database(config: &Config) -> Result<(), (String, String)> {
    match config.database.url.as_deref().map(check_database_url) {
        Some(Err(message)) => Err(("[database]".into(), message)),
        _ => Ok(()),
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct KernelConfig {
    /// How deep blocking `agent_send` chains and nested `workflow_run` may go (spec §0.7).
    #[serde(deserialize_with = "in_range::<_, 1, 64>")]
    pub max_agent_call_depth: u64,
    /// The most model calls any turn may make; an agent type's `limits.max_iterations` can
    /// only lower it.
    #[serde(deserialize_with = "in_range::<_, 1, 500>")]
    pub max_turn_iterations: u64,
    /// `max_tokens` asked of the model for each reply.
    #[serde(deserialize_with = "in_range::<_, 16, 1000000>")]
    pub max_reply_tokens: u64,
    /// A turn whose model makes the same tool call with the same arguments, and gets the same
    /// result, this many times in a row is stopped (a model stuck in a loop); 0: never.
    #[serde(deserialize_with = "in_range::<_, 0, 1000>")]
    pub max_repeated_calls: u64,
    /// Agents spawned for one workflow step are removed this long after they stop (their
    /// sessions and audit rows stay).
    #[serde(deserialize_with = "in_range::<_, 0, 87600>")]
    pub ephemeral_retention_hours: u64,
    /// The provider of every agent whose type names none ([`Config::default_provider`]).
    /// Needed once two or more providers are configured: a config with several and no
    /// default does not load, so adding a provider never leaves such agents without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_provider: Option<String>,
}

impl Default for KernelConfig {
    fn default() -> Self {
        KernelConfig {
            max_agent_call_depth: 5,
            max_turn_iterations: 50,
            max_reply_tokens: 4096,
            max_repeated_calls: 4,
            ephemeral_retention_hours: 24,
            default_provider: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    pub bind: SocketAddr,
    /// Names browsers may reach the dashboard by besides this daemon's own address and
    /// `localhost` (say, a reverse proxy's), written as browsers send them in `Host`:
    /// `kennel.example.com` for the scheme's default port, `kennel.example.com:8443` for
    /// another. `/setup` and `/login` refuse every other name (DNS rebinding).
    #[serde(deserialize_with = "host_names")]
    pub public_names: Vec<String>,
    /// How long a client has to send a request's head, from its connection opening or its
    /// previous response (an idle keep-alive connection closes after it too).
    #[serde(deserialize_with = "in_range::<_, 1, 30>")]
    pub header_read_timeout_secs: u64,
    /// The longest pause between two parts of a request's body.
    #[serde(deserialize_with = "in_range::<_, 1, 600>")]
    pub body_timeout_secs: u64,
    /// The longest a request's whole body may take to arrive, however steadily it comes (a
    /// client that drips a byte at a time holds a connection no longer than this).
    #[serde(deserialize_with = "in_range::<_, 1, 86400>")]
    pub body_deadline_secs: u64,
    /// The longest a response may wait to be written: a client that stops reading (a live
    /// stream's, a download's) is cut off after it, and its connection freed.
    #[serde(deserialize_with = "in_range::<_, 1, 3600>")]
    pub write_timeout_secs: u64,
    /// The most connections open at once (lowered to what the open-file limit leaves). At the
    /// cap a new connection takes the place of the oldest one serving nothing; when all are
    /// serving it is answered 503.
    #[serde(deserialize_with = "in_range::<_, 16, 1000000>")]
    pub max_connections: u64,
    /// The longest a live stream opened with an API token or a dashboard session lasts; the
    /// client opens a new one (browsers do so by themselves), checked again. Revoking the
    /// token or signing out ends its streams at once.
    #[serde(deserialize_with = "in_range::<_, 1, 86400>")]
    pub stream_max_secs: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 4545)),
            public_names: Vec::new(),
            header_read_timeout_secs: 30,
            body_timeout_secs: 30,
            body_deadline_secs: 300,
            write_timeout_secs: 60,
            max_connections: 4096,
            stream_max_secs: 3600,
        }
    }
}

/// `text` as `(name, port)` if it is a `Host` value: a DNS name, an IPv4 address or a
/// bracketed IPv6 address, then optionally `:` and a port from 1 to 65535. Names are
/// compared lowercased; this does not lowercase them.
pub fn split_host(text: &str) -> Option<(&str, Option<u16>)> {
    let (name, port) = if text.starts_with('[') {
        let end = text.find(']')?;
        text[1..end].parse::<std::net::Ipv6Addr>().ok()?;
        (&text[..=end], &text[end + 1..])
    } else {
        let (name, port) = text.find(':').map_or((text, ""), |at| text.split_at(at));
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        (name.len() <= 253 && name.split('.').all(label_ok)).then_some(())?;
        (name, port)
    };
    let port = match port.strip_prefix(':') {
        None if port.is_empty() => None,
        None => return None,
        Some(p) if p.bytes().all(|b| b.is_ascii_digit()) => Some(p.parse::<u16>().ok().filter(|p| *p != 0)?),
        Some(_) => return None,
    };
    Some((name, port))
}

fn host_names<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let names = Vec::<String>::deserialize(d)?;
    names
        .into_iter()
        .map(|name| match split_host(&name) {
            Some(_) => Ok(name.to_ascii_lowercase()),
            None => Err(serde::de::Error::custom(format!(
                "`{name}` is not a host name; write it as browsers send it in Host, like \
                 `kennel.example.com` or `kennel.example.com:8443` (no scheme, no path)"
            ))),
        })
        .collect()
}

/// Where `key` (a setting's name, a section's header) is set in a config file's text: its
/// first line that is not a comment. The file written at first start holds every setting
/// commented out, so the first match anywhere would point at the example, not the setting.
fn setting_offset(text: &str, key: &str) -> Option<usize> {
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        if !line.trim_start().starts_with('#')
            && let Some(at) = line.find(key)
        {
            return Some(start + at);
        }
        start += line.len();
    }
    None
}

/// A config problem a person can fix: where it is and what was expected.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct ConfigError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl Config {
    /// Parses a config file's text. `file` is only used to name the file in errors.
    pub fn parse(file: &Path, text: &str) -> Result<Config, ConfigError> {
        let error_at = |offset: usize, message: String| {
            let (line, column) = line_and_column(text, offset);
            ConfigError { file: file.display().to_string(), line, column, message }
        };
        let config: Config = toml::from_str(text).map_err(|e| {
            let offset = e.span().map(|s| s.start).unwrap_or(0);
            error_at(offset, e.message().trim().to_string())
        })?;
        if let Err((key, message)) = check_sections(&config) {
            return Err(error_at(setting_offset(text, &key).unwrap_or(0), message));
        }
        Ok(config)
    }
    /// Reads `path`; a missing file means all defaults.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Config::parse(path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(e) => Err(ConfigError {
                file: path.display().to_string(),
                line: 0,
                column: 0,
                message: format!("cannot read: {e}"),
            }),
        }
    }
}

pub(crate) fn optional_in_range<'de, D: Deserializer<'de>, const MIN: u64, const MAX: u64>(
    d: D,
) -> Result<Option<u64>, D::Error> {
    in_range::<D, MIN, MAX>(d).map(Some)
}

pub(crate) fn in_range<'de, D: Deserializer<'de>, const MIN: u64, const MAX: u64>(d: D) -> Result<u64, D::Error> {
    let value = u64::deserialize(d)?;
    if (MIN..=MAX).contains(&value) {
        Ok(value)
    } else {
        Err(serde::de::Error::custom(format!("expected a whole number from {MIN} to {MAX}, found {value}")))
    }
}

pub(crate) fn optional_price<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    crate::usage::check_price(f64::deserialize(d)?).map(Some).map_err(serde::de::Error::custom)
}

pub(crate) fn default_max_retries() -> u64 {
    3
}

impl Config {
    /// The environment variable names no child process gets: `[exec_policy] secret_env`
    /// (globs) and every provider's `api_key_env`.
    pub fn secret_env_names(&self) -> Vec<String> {
        // The database URL may hold its password.
        let database = std::iter::once(DATABASE_URL_ENV.to_string());
        let providers = self.providers.values().filter_map(|p| p.api_key_env.clone());
        let media = self.media.providers.values().filter_map(|p| p.api_key_env.clone());
        let a2a = self.a2a.tokens.values().cloned();
        self.exec_policy
            .secret_env
            .iter()
            .cloned()
            .chain(providers)
            .chain(media)
            .chain(a2a)
            .chain(database)
            .filter(|n| !n.is_empty())
            .collect()
    }
}

/// The `config.toml` written on first start: every section, commented out at its default.
pub fn default_text() -> &'static str {
    static TEXT: LazyLock<String> =
        LazyLock::new(|| SECTION_TEXTS.iter().fold(HEADER.to_string(), |text, section| text + "\n" + section));
    &TEXT
}

const HEADER: &str = r#"# Kennel configuration. Every section is optional; the values shown are the defaults.
# An unknown key or a wrong value stops start-up with the line that is wrong.
"#;

const SERVER_TEXT: &str = r#"# [server]
# bind = "127.0.0.1:4545"
# Names the dashboard is reached by besides this address and localhost (a reverse proxy's),
# as browsers send them in Host: "kennel.example.com", or "kennel.example.com:8443" for a
# port other than the scheme's default. /setup and /login refuse any other Host.
# public_names = []
# header_read_timeout_secs = 30  # a request's head must arrive within this (idle connections close after it)
# body_timeout_secs = 30         # the longest pause inside a request's body
# body_deadline_secs = 300       # the longest a whole request body may take
# write_timeout_secs = 60        # a client that stops reading a response is cut off after this
# max_connections = 4096         # at the cap, the oldest idle connection gives way; else 503
# stream_max_secs = 3600         # a live stream's longest life (revocation or sign-out ends it at once)
"#;

const KERNEL_TEXT: &str = r#"# [kernel]
# How deep blocking agent_send chains and nested workflow_run steps may recurse.
# max_agent_call_depth = 5
# The most model calls one turn may make (an agent type's limits.max_iterations can lower it).
# max_turn_iterations = 50
# max_reply_tokens = 4096
# max_repeated_calls = 4
# ephemeral_retention_hours = 24   # workflow step agents are removed this long after they stop
# The provider of agents whose type names none; needed once two or more are configured.
# default_provider = "local"
"#;

const DATABASE_TEXT: &str = r#"# [database]                # SQLite in this home unless a PostgreSQL server is named
# url = "postgres://kennel@db.example.com:5432/kennel"   # KENNEL_DATABASE_URL wins over it
"#;

/// `text` parsed as `config.toml`, for tests of the sections.
#[cfg(test)]
pub(crate) fn parse_for_test(text: &str) -> Result<Config, ConfigError> {
    Config::parse(Path::new("config.toml"), text)
}

#[cfg(test)]
mod tests {
    use super::parse_for_test as parse;
    use super::*;

    #[test]
    fn empty_file_gives_the_spec_defaults() {
        let c = parse("").unwrap();
        assert_eq!(c.kernel.max_agent_call_depth, 5);
        assert_eq!(c.task_board.claim_ttl_secs, 600);
        assert_eq!(c.tool_results.spill_threshold_bytes, 16384);
        assert_eq!(c.server.bind.to_string(), "127.0.0.1:4545");
    }

    #[test]
    fn the_commented_default_file_parses_to_the_defaults() {
        let c = parse(default_text()).unwrap();
        assert_eq!(c.kernel.max_agent_call_depth, 5);
        assert!(c.providers.is_empty());
    }

    /// A check's problem points at the setting, not at its commented example in the file the
    /// first start writes (which names `default_provider` and `[database]` too).
    #[test]
    fn a_checked_setting_is_found_past_its_commented_example() {
        let provider = "[providers.local]\nkind = \"openai\"\n";
        let text = format!("{}{provider}[kernel]\ndefault_provider = \"locl\"\n", default_text());
        let e = parse(&text).unwrap_err();
        let wanted = text.lines().position(|l| l == "default_provider = \"locl\"").unwrap() + 1;
        assert_eq!(e.line, wanted, "{e}");
        assert!(e.message.contains("`locl` is not a configured provider"), "{}", e.message);
    }

    #[test]
    fn unknown_key_names_line_and_key() {
        let e = parse("[kernel]\nmax_agent_call_depth = 3\nmax_depht = 4\n").unwrap_err();
        assert_eq!((e.line, e.column), (3, 1));
        assert!(e.message.contains("unknown field `max_depht`"), "{}", e.message);
        assert_eq!(e.to_string().split(':').next(), Some("config.toml"));
    }

    #[test]
    fn out_of_range_value_says_what_was_expected() {
        let e = parse("\n[kernel]\nmax_agent_call_depth = 0\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("from 1 to 64"), "{}", e.message);
    }

    #[test]
    fn wrong_type_and_bad_address_are_errors() {
        let e = parse("[task_board]\nclaim_ttl_secs = \"ten\"\n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse("[server]\nbind = \"localhost\"\n").unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn public_names_are_host_names_as_browsers_send_them() {
        let c = parse("[server]\npublic_names = [\"Kennel.Example.com\", \"kennel.example.com:8443\", \"[::1]:9\"]\n")
            .unwrap();
        assert_eq!(c.server.public_names, ["kennel.example.com", "kennel.example.com:8443", "[::1]:9"]);
        assert!(parse("").unwrap().server.public_names.is_empty());
        for bad in ["https://kennel.example.com", "kennel.example.com/", "kennel.example.com:0", "a..b", "", "x:99999"]
        {
            let e = parse(&format!("[server]\n\npublic_names = [\"{bad}\"]\n")).unwrap_err();
            assert_eq!(e.line, 3, "{bad}: {e}");
            assert!(e.message.contains("is not a host name"), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn hosts_split_into_name_and_port() {
        assert_eq!(split_host("localhost:4545"), Some(("localhost", Some(4545))));
        assert_eq!(split_host("127.0.0.1"), Some(("127.0.0.1", None)));
        assert_eq!(split_host("[::1]:80"), Some(("[::1]", Some(80))));
        for bad in ["[::1", "[nope]:1", "a b", "a:", "a:1:2", "-a.b", "a:+1", "[::1]x", "evil.example\\x", "a@b"] {
            assert_eq!(split_host(bad), None, "{bad}");
        }
    }
}
