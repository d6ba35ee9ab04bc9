//! `$KENNEL_HOME/config.toml` → a typed [`Config`]. Every section is optional and takes the
//! spec's defaults; an unknown key, a wrong type or an out-of-range value is an error that
//! names the file, the line and what was expected.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};

use crate::net::guard::AllowedHosts;
use crate::text::line_and_column;

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub kernel: KernelConfig,
    pub task_board: TaskBoardConfig,
    pub schedules: SchedulesConfig,
    pub tool_results: ToolResultsConfig,
    pub server: ServerConfig,
    /// LLM providers by the name agent types use (`provider = "local"`).
    pub providers: BTreeMap<String, ProviderConfig>,
    pub a2a: A2aConfig,
    pub workspace: WorkspaceConfig,
    pub canvas: CanvasConfig,
    pub skills: SkillsConfig,
    pub media: MediaConfig,
    pub budgets: BudgetsConfig,
    pub proactive_memory: ProactiveMemoryConfig,
    /// `None` without a `[browser]` section: the browser tools are excluded.
    pub browser: Option<BrowserConfig>,
    pub exec_policy: ExecPolicyConfig,
    /// `[channels.NAME]`: chat platforms bound to agents (spec §6), and `[channels]
    /// allowed_hosts` for every outbound channel request.
    pub channels: ChannelsConfig,
    pub notify: NotifyConfig,
    pub location: LocationConfig,
    pub ask: AskConfig,
    /// `[mcp.servers.NAME]`: MCP servers whose tools agents may be granted.
    pub mcp: crate::mcp::config::McpConfig,
    /// `[database]`: SQLite in the home unless a PostgreSQL server is named.
    pub database: DatabaseConfig,
    /// `[cluster]`: how daemons sharing one PostgreSQL database share the work.
    pub cluster: ClusterConfig,
    /// `[retention]`: how long finished records are kept before the nightly sweep removes them.
    pub retention: RetentionConfig,
}

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

/// `[ask]`: how long `ask_user` waits for the person.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AskConfig {
    /// Then the model is told nobody answered.
    #[serde(deserialize_with = "in_range::<_, 1, 86400>")]
    pub timeout_secs: u64,
}

impl Default for AskConfig {
    fn default() -> Self {
        AskConfig { timeout_secs: 600 }
    }
}

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

/// `[notify]`: where the owner inbox's notes go besides the dashboard.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct NotifyConfig {
    /// A configured channel (`[channels.NAME]`) notes are also sent to.
    pub telegram_channel: Option<String>,
    /// The chat on it; unset: the channel's `default_target`.
    pub telegram_chat: Option<String>,
    /// The least urgency sent there.
    pub min_urgency_telegram: crate::notify::Urgency,
    /// Addresses notes are emailed to; empty: no email.
    pub email_to: Vec<String>,
    /// The sender; unset: the first of `email_to`.
    pub email_from: Option<String>,
    /// The SMTP server, without a password: `smtps://USER@HOST:465`,
    /// `smtp://USER@HOST:587?tls=required` (STARTTLS), or plain `smtp://HOST:25` for a relay on
    /// this machine.
    pub smtp_url: Option<String>,
    /// The environment variable holding the SMTP password; unset: no sign-in.
    pub smtp_password_env: Option<String>,
    /// The least urgency emailed.
    pub min_urgency_email: crate::notify::Urgency,
    /// How many notes one agent may leave (`notify_owner`) in any hour.
    pub max_per_agent_per_hour: u64,
    /// How many notes the daemon sends on to Telegram, and how many by email, in a clock
    /// hour; past it a note stays in the inbox only, marked as not sent.
    pub max_fanout_per_hour: u64,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            telegram_channel: None,
            telegram_chat: None,
            min_urgency_telegram: crate::notify::Urgency::High,
            email_to: Vec::new(),
            email_from: None,
            smtp_url: None,
            smtp_password_env: None,
            min_urgency_email: crate::notify::Urgency::High,
            max_per_agent_per_hour: 30,
            max_fanout_per_hour: 30,
        }
    }
}

/// `[channels]`: the address guard's list for channel traffic, and each channel by name.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct ChannelsConfig {
    /// Where channel requests may go (the platforms' APIs, a webhook channel's URL), checked
    /// by `net::guard` like `[a2a] allowed_hosts`: empty, any public host.
    #[serde(default)]
    pub allowed_hosts: AllowedHosts,
    #[serde(flatten)]
    pub channels: BTreeMap<String, ChannelConfig>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelKind {
    Telegram,
    Slack,
    Discord,
    Webhook,
}

impl ChannelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Telegram => "telegram",
            ChannelKind::Slack => "slack",
            ChannelKind::Discord => "discord",
            ChannelKind::Webhook => "webhook",
        }
    }
}

/// How a channel hears of new messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelMode {
    /// Kennel asks: Telegram's `getUpdates`, Discord's gateway.
    Poll,
    /// The platform posts to `/channels/NAME/inbound` (Telegram's `setWebhook`, Slack's Events
    /// API, a webhook channel).
    Webhook,
}

/// `[channels.NAME]`: one chat platform account bound to one agent.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelConfig {
    pub kind: ChannelKind,
    /// The agent (by name) whose turns answer this channel's messages.
    pub agent: Option<String>,
    /// The platform's API (tests point it at a local server); unset: the platform's own. For a
    /// webhook channel: the URL outbound messages are posted to.
    pub base_url: Option<String>,
    /// The environment variable holding the bot token (Telegram, Slack, Discord).
    pub token_env: Option<String>,
    /// The environment variable holding the secret inbound requests are signed with (Slack's
    /// signing secret, a webhook channel's HMAC key, Telegram's webhook secret token).
    pub signing_secret_env: Option<String>,
    /// Unset: the kind's own ([`crate::channel::mode_of`]).
    pub mode: Option<ChannelMode>,
    /// Where a schedule naming only this channel, or a deliver-only webhook, sends.
    pub default_target: Option<String>,
    /// A webhook channel that runs no turn: each inbound message is sent on to
    /// `default_target` (`CHANNEL:TARGET`) as it is.
    #[serde(default)]
    pub deliver_only: bool,
}

/// `[exec_policy]`: what agents' subprocesses (family `process`) and `docker_exec` may do.
/// The grant is the first gate; this section bounds what a granted agent runs.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExecPolicyConfig {
    /// A child still running this long after it started is stopped (SIGTERM, then SIGKILL).
    #[serde(deserialize_with = "in_range::<_, 1, 604800>")]
    pub wall_clock_secs: u64,
    /// Children one agent may have running at once.
    #[serde(deserialize_with = "in_range::<_, 1, 256>")]
    pub max_children: u64,
    /// Output kept per child and stream until polled; older output is dropped (the poll
    /// says how much).
    #[serde(deserialize_with = "in_range::<_, 1024, 67108864>")]
    pub output_buffer_bytes: u64,
    /// How long a child has after SIGTERM (or SIGINT, SIGQUIT) before SIGKILL.
    #[serde(deserialize_with = "in_range::<_, 0, 300>")]
    pub kill_grace_secs: u64,
    /// The commands a child may start (the command line's first word, compared exactly);
    /// absent: any. When set, the line must be one simple command (no `;`, `|`, `&`,
    /// redirections or substitutions), since each of those would start a second one.
    pub allowed_commands: Option<Vec<String>>,
    /// The daemon's environment variables handed on to children (names, exactly), on top
    /// of the minimal base (`PATH`, `HOME` = the workspace, `LANG`, `TZ`, `TERM`, `TMPDIR`).
    pub pass_env: Vec<String>,
    /// Variable names (globs: `*_TOKEN`) a child never gets, from `pass_env` or from a call's
    /// `env`. Every provider's `api_key_env` is secret without being listed.
    pub secret_env: Vec<String>,
    /// Run each child in bubblewrap (the workspace, the system read-only, a private `/tmp`
    /// and `HOME`, its own PID namespace, nothing of `$KENNEL_HOME`). `false` runs children as
    /// the daemon's user with everything it can reach — its CLI token included: only for a
    /// machine where bubblewrap cannot run, and logged at every start.
    pub sandbox: bool,
    /// Keep the host's network inside the sandbox (default: none, not even loopback's
    /// services outside it).
    pub network: bool,
    /// Host folders a sandboxed child sees read-only besides the system's (a toolchain in
    /// `/opt` or a user's `~/.cargo`).
    pub read_only: Vec<std::path::PathBuf>,
    /// With `network` (and for script tools whose manifest asks for one): where a sandbox's
    /// requests may go, checked by the address guard's proxy like `[browser] allowed_hosts`
    /// (empty: public addresses only; the daemon's own port never).
    pub allowed_hosts: AllowedHosts,
    /// Hosts refused even when `allowed_hosts` lets them through.
    pub blocked_hosts: AllowedHosts,
    /// Processes and threads one child's whole tree may have at once (its cgroup's `pids.max`).
    #[serde(deserialize_with = "in_range::<_, 8, 1048576>")]
    pub max_processes: u64,
    /// Memory one child's whole tree may use, in MiB (its cgroup's memory limit; where no
    /// cgroup can be made, each process's address space instead).
    #[serde(deserialize_with = "in_range::<_, 16, 1048576>")]
    pub max_memory_mib: u64,
    /// The Docker engine's Unix socket, for `docker_exec`.
    pub docker_socket: std::path::PathBuf,
    /// The containers `docker_exec` may run commands in, by name; empty: none.
    pub docker_allowlist: Vec<String>,
}

impl Default for ExecPolicyConfig {
    fn default() -> Self {
        ExecPolicyConfig {
            wall_clock_secs: 3600,
            max_children: 8,
            output_buffer_bytes: 1 << 20,
            kill_grace_secs: 5,
            allowed_commands: None,
            pass_env: Vec::new(),
            secret_env: ["*_API_KEY", "*_TOKEN", "*_SECRET", "*PASSWORD*"].map(String::from).to_vec(),
            sandbox: true,
            network: false,
            read_only: Vec::new(),
            allowed_hosts: AllowedHosts::default(),
            blocked_hosts: AllowedHosts::default(),
            max_processes: 512,
            max_memory_mib: 4096,
            docker_socket: "/var/run/docker.sock".into(),
            docker_allowlist: Vec::new(),
        }
    }
}

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

/// `[proactive_memory]`: the semantic store (spec §4) and what it does around turns.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProactiveMemoryConfig {
    /// `false` withdraws the semantic tools and does not build the store.
    pub enabled: bool,
    /// How fast an unused memory's confidence decays (per day, before the hits' slowing).
    #[serde(deserialize_with = "decay_rate")]
    pub decay_rate: f64,
    /// Before each turn, the most relevant memories go into the prompt.
    pub auto_recall: bool,
    /// After each turn, the extractor proposes lasting facts from it.
    pub auto_memorize: bool,
    /// The most text auto-recall adds to one turn: 0 (none) or 256 to 65,536.
    #[serde(deserialize_with = "recall_bytes")]
    pub recall_max_bytes: u64,
    /// Memories whose confidence has decayed below this are not recalled.
    #[serde(deserialize_with = "fraction")]
    pub recall_min_confidence: f64,
    /// A `[providers.NAME]` (OpenAI-compatible) whose `/embeddings` embeds memories;
    /// absent: the built-in local embedder, which needs no network.
    pub embeddings_provider: Option<String>,
    /// The embedding model asked of `embeddings_provider`.
    pub embeddings_model: Option<String>,
    /// A `[providers.NAME]` whose chat model extracts facts; absent: the rule-based extractor.
    pub extraction_provider: Option<String>,
    /// The model asked of `extraction_provider`.
    pub extraction_model: Option<String>,
}

impl Default for ProactiveMemoryConfig {
    fn default() -> Self {
        ProactiveMemoryConfig {
            enabled: true,
            decay_rate: 0.01,
            auto_recall: true,
            auto_memorize: false,
            recall_max_bytes: 2048,
            recall_min_confidence: 0.3,
            embeddings_provider: None,
            embeddings_model: None,
            extraction_provider: None,
            extraction_model: None,
        }
    }
}

/// Below 256 bytes not even the recall block's header and one memory fit.
fn recall_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let bytes = u64::deserialize(d)?;
    if bytes == 0 || (256..=65536).contains(&bytes) {
        Ok(bytes)
    } else {
        Err(serde::de::Error::custom(format!("expected 0 (no auto-recall text) or 256 to 65536 bytes, found {bytes}")))
    }
}

fn decay_rate<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let rate = f64::deserialize(d)?;
    if rate.is_finite() && (0.0..=10.0).contains(&rate) {
        Ok(rate)
    } else {
        Err(serde::de::Error::custom(format!("expected a rate per day from 0 to 10, found {rate}")))
    }
}

fn fraction<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let value = f64::deserialize(d)?;
    if value.is_finite() && (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(serde::de::Error::custom(format!("expected a number from 0 to 1, found {value}")))
    }
}

/// `[budgets]`: what the whole daemon may spend a day (issue 17). An agent type's `[limits]`
/// sets the same per agent; the day of both starts at `reset_hour` in `timezone`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetsConfig {
    /// Input and output tokens of every model call of the day, all agents together.
    #[serde(deserialize_with = "optional_in_range::<_, 1, 1000000000000>")]
    pub max_tokens_per_day: Option<u64>,
    /// US dollars of the day, all agents together, from the models' prices.
    #[serde(deserialize_with = "optional_budget_usd")]
    pub max_usd_per_day: Option<f64>,
    /// The hour (0–23) a budget's day starts.
    #[serde(deserialize_with = "in_range::<_, 0, 23>")]
    pub reset_hour: u64,
    /// The time zone of `reset_hour` (IANA, e.g. `Europe/Berlin`).
    #[serde(deserialize_with = "time_zone", serialize_with = "time_zone_name")]
    pub timezone: chrono_tz::Tz,
}

impl Default for BudgetsConfig {
    fn default() -> Self {
        BudgetsConfig { max_tokens_per_day: None, max_usd_per_day: None, reset_hour: 0, timezone: chrono_tz::UTC }
    }
}

fn time_zone_name<S: serde::Serializer>(tz: &chrono_tz::Tz, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(tz.name())
}

fn time_zone<'de, D: Deserializer<'de>>(d: D) -> Result<chrono_tz::Tz, D::Error> {
    let name = String::deserialize(d)?;
    name.parse::<chrono_tz::Tz>().map_err(|_| {
        serde::de::Error::custom(format!("`{name}` is not an IANA time zone (e.g. `Europe/Berlin`, `UTC`)"))
    })
}

/// `[media]`: who serves each media tool (spec §13). A tool no provider serves is excluded,
/// with that reason, and so are those that need `ffmpeg` when it is missing.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct MediaConfig {
    /// Media APIs by name: `[media.providers.NAME]`.
    pub providers: BTreeMap<String, MediaProviderConfig>,
    /// Which provider serves each tool: `media_transcribe = "openai"`.
    pub tools: BTreeMap<String, String>,
    /// The model each tool asks its provider for, where the provider's default will not do:
    /// `media_transcribe = "gpt-4o-transcribe"`.
    pub models: BTreeMap<String, String>,
    /// `ffmpeg` to run (its `ffprobe` beside it); found on `PATH` when not set.
    pub ffmpeg: Option<std::path::PathBuf>,
    /// Where finished music and videos may be downloaded from (the URLs a provider answers
    /// with), checked by `net::guard` like `[a2a] allowed_hosts`: empty, any public host;
    /// private and loopback addresses only through an IP or CIDR entry.
    pub allowed_hosts: AllowedHosts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaProviderKind {
    /// OpenAI-compatible media endpoints (`/audio/transcriptions`, `/audio/speech`,
    /// `/images/generations`, chat with image input).
    Openai,
    /// A Replicate-style predictions API (create, then poll): music and video.
    Replicate,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MediaProviderConfig {
    pub kind: MediaProviderKind,
    /// The API's base URL, such as `https://api.openai.com/v1`.
    pub base_url: String,
    /// The environment variable holding the API key; `""` for a local server that needs none.
    pub api_key_env: Option<String>,
    #[serde(default = "default_media_timeout_secs", deserialize_with = "in_range::<_, 1, 3600>")]
    pub timeout_secs: u64,
    /// Times a call is tried again after a 429, a 5xx or a dropped connection (waiting as
    /// `Retry-After` says, else backing off).
    #[serde(default = "default_max_retries", deserialize_with = "in_range::<_, 0, 10>")]
    pub max_retries: u64,
}

fn default_media_timeout_secs() -> u64 {
    300
}

/// `[workspace]`: each agent's folder under `$KENNEL_HOME/workspaces/`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkspaceConfig {
    /// The largest file a workspace takes (an upload, a tool's output) or hands out whole.
    #[serde(deserialize_with = "in_range::<_, 1024, 4294967296>")]
    pub max_file_bytes: u64,
    /// MiB of files the daemon reads whole into memory at once (file tools, vision, patches);
    /// a read of a large file waits for its share.
    #[serde(deserialize_with = "in_range::<_, 1, 1048576>")]
    pub max_reading_mib: u64,
    /// The bytes one agent's workspace (and its trash) may hold; a tool's write past it is
    /// refused. A process writing into the workspace itself is bounded by the disk only.
    #[serde(deserialize_with = "in_range::<_, 1024, 1099511627776>")]
    pub max_agent_bytes: u64,
}

impl Default for WorkspaceConfig {
    fn default() -> Self {
        WorkspaceConfig { max_file_bytes: 64 * 1024 * 1024, max_reading_mib: 256, max_agent_bytes: 1024 * 1024 * 1024 }
    }
}

/// `[canvas]`: what `canvas_present` keeps.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CanvasConfig {
    /// The largest canvas (its HTML, in bytes) an agent may present.
    #[serde(deserialize_with = "in_range::<_, 1024, 16777216>")]
    pub max_bytes: u64,
    /// The versions kept of an agent's canvas; presenting one more drops the oldest.
    #[serde(deserialize_with = "in_range::<_, 1, 100000>")]
    pub max_versions: u64,
    /// The bytes of all of an agent's kept versions together; presenting past it drops the
    /// oldest versions until the rest fit (the newest is always kept: at most `max_bytes`).
    #[serde(deserialize_with = "in_range::<_, 1024, 17179869184>")]
    pub max_agent_bytes: u64,
}

impl Default for CanvasConfig {
    fn default() -> Self {
        CanvasConfig { max_bytes: 1024 * 1024, max_versions: 50, max_agent_bytes: 16 * 1024 * 1024 }
    }
}

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
}

impl Default for KernelConfig {
    fn default() -> Self {
        KernelConfig {
            max_agent_call_depth: 5,
            max_turn_iterations: 50,
            max_reply_tokens: 4096,
            max_repeated_calls: 4,
            ephemeral_retention_hours: 24,
        }
    }
}

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

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolResultsConfig {
    /// Results larger than this go to the artifact store (spec §0.5).
    #[serde(deserialize_with = "in_range::<_, 64, 67108864>")]
    pub spill_threshold_bytes: u64,
}

impl Default for ToolResultsConfig {
    fn default() -> Self {
        ToolResultsConfig { spill_threshold_bytes: 16384 }
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter, …).
    Openai,
    /// Anthropic Messages API.
    Anthropic,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// Defaults to the vendor's public endpoint for `kind`.
    pub base_url: Option<String>,
    /// The environment variable holding the API key; defaults by `kind`. Local servers
    /// that need no key can set `api_key_env = ""`.
    pub api_key_env: Option<String>,
    #[serde(default = "default_timeout_secs", deserialize_with = "in_range::<_, 1, 3600>")]
    pub timeout_secs: u64,
    /// Retries after a 429, a 5xx or a dropped connection, with backoff.
    #[serde(default = "default_max_retries", deserialize_with = "in_range::<_, 0, 10>")]
    pub max_retries: u64,
    /// Ask for the reply as a stream of tokens (SSE). `false`, or a server that answers in
    /// one piece anyway, gives the same turn events when the reply is complete.
    #[serde(default = "default_stream")]
    pub stream: bool,
    /// What is known of each model: `[providers.NAME.models.MODEL]`.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
    /// At most this many model calls at once to this provider; more wait their turn (shown as
    /// queued) instead of meeting its rate limit. Unset: no bound.
    #[serde(default, deserialize_with = "optional_in_range::<_, 1, 10000>")]
    pub max_in_flight: Option<u64>,
}

impl ProviderConfig {
    /// Whether `model` is sent the images tool results carry (a screenshot), or only their
    /// paths: `[providers.NAME.models.MODEL] images`, else by kind. Anthropic's models all
    /// take images; an OpenAI-compatible server is often a local one serving a text-only
    /// model that refuses image parts, so those are sent none unless `images = true` (as for
    /// `gpt-4o`).
    pub fn accepts_images(&self, model: &str) -> bool {
        self.models.get(model).and_then(|m| m.images).unwrap_or(match self.kind {
            ProviderKind::Anthropic => true,
            ProviderKind::Openai => false,
        })
    }
}

/// `[providers.NAME.models.MODEL]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The model's context window in tokens (prompt and reply together). Unset: the known
    /// default of its family, else what the provider's first refusal says.
    #[serde(default, deserialize_with = "optional_in_range::<_, 256, 100000000>")]
    pub context_tokens: Option<u64>,
    /// Prices in US dollars per million tokens, for the usage reports and dollar budgets.
    #[serde(default, deserialize_with = "optional_price")]
    pub input_usd_per_mtok: Option<f64>,
    /// Input tokens read from the provider's prompt cache; unset: a tenth of the input price
    /// for kind "anthropic" (its published price), else the input price.
    #[serde(default, deserialize_with = "optional_price")]
    pub cached_input_usd_per_mtok: Option<f64>,
    /// Input tokens written into the provider's prompt cache; unset: 1.25 × the input price for
    /// kind "anthropic" (its five-minute cache), else the input price.
    #[serde(default, deserialize_with = "optional_price")]
    pub cache_write_usd_per_mtok: Option<f64>,
    #[serde(default, deserialize_with = "optional_price")]
    pub output_usd_per_mtok: Option<f64>,
    /// Whether the model is sent the images tool results carry (`images = true|false`).
    /// Unset: by the provider's kind ([`ProviderConfig::accepts_images`]).
    #[serde(default)]
    pub images: Option<bool>,
}

fn optional_budget_usd<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    match optional_price(d)? {
        Some(0.0) => {
            Err(serde::de::Error::custom("a budget of $0 stops every agent: leave max_usd_per_day out for no budget"))
        }
        usd => Ok(usd),
    }
}

fn optional_price<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    crate::usage::check_price(f64::deserialize(d)?).map(Some).map_err(serde::de::Error::custom)
}

fn default_stream() -> bool {
    true
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

fn default_max_retries() -> u64 {
    3
}

fn default_timeout_secs() -> u64 {
    120
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
        for name in config.providers.keys() {
            if !crate::agent::is_valid_name(name) {
                let offset = text.find(&format!("providers.{name}")).unwrap_or(0);
                return Err(error_at(
                    offset,
                    format!("provider name `{name}` must be 1-64 lowercase letters, digits, `-` or `_`"),
                ));
            }
        }
        if let Err((key, message)) = check_memory_providers(&config) {
            let offset = text.find(key).unwrap_or(0);
            return Err(error_at(offset, message));
        }
        if let Err((key, message)) = check_exec_policy(&config) {
            let offset = text.find(key).unwrap_or(0);
            return Err(error_at(offset, message));
        }
        if let Err((key, message)) = crate::notify::check_config(&config) {
            let offset = text.find(&key).unwrap_or(0);
            return Err(error_at(offset, message));
        }
        if let Err((key, message)) = crate::channel::check_config(&config.channels) {
            let offset = text.find(&key).unwrap_or(0);
            return Err(error_at(offset, message));
        }
        if let Err((key, message)) = crate::mcp::config::check_config(&config.mcp) {
            let offset = text.find(&key).unwrap_or(0);
            return Err(error_at(offset, message));
        }
        if let Err((key, message)) = crate::media::check_config(&config.media) {
            let offset = text.find(&key).unwrap_or(0);
            return Err(error_at(offset, message));
        }
        if let Some(Err(message)) = config.database.url.as_deref().map(check_database_url) {
            let offset = text.find("[database]").unwrap_or(0);
            return Err(error_at(offset, message));
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

fn optional_in_range<'de, D: Deserializer<'de>, const MIN: u64, const MAX: u64>(d: D) -> Result<Option<u64>, D::Error> {
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

/// The providers `[proactive_memory]` names must exist, and embeddings need the
/// OpenAI-compatible wire protocol (`/embeddings`), which Anthropic does not offer.
fn check_memory_providers(config: &Config) -> Result<(), (&'static str, String)> {
    let memory = &config.proactive_memory;
    for (key, name) in
        [("embeddings_provider", &memory.embeddings_provider), ("extraction_provider", &memory.extraction_provider)]
    {
        let Some(name) = name else { continue };
        let Some(provider) = config.providers.get(name) else {
            return Err((key, format!("[proactive_memory] {key} names `{name}`, which no [providers.{name}] defines")));
        };
        if key == "extraction_provider" && memory.extraction_model.is_none() {
            return Err((
                key,
                format!(
                    "[proactive_memory] extraction_provider `{name}` needs extraction_model: the chat model to ask"
                ),
            ));
        }
        if key == "embeddings_provider" && provider.kind != ProviderKind::Openai {
            return Err((
                key,
                format!(
                    "[proactive_memory] embeddings_provider `{name}` must be kind = \"openai\": embeddings use its /embeddings endpoint"
                ),
            ));
        }
    }
    Ok(())
}

/// Every variable `[exec_policy] pass_env` hands on must be one a child may see.
fn check_exec_policy(config: &Config) -> Result<(), (&'static str, String)> {
    let secrets = config.secret_env_names();
    if let Some(name) = config
        .exec_policy
        .pass_env
        .iter()
        .find(|n| secrets.iter().any(|s| crate::capability::glob_match(s.as_bytes(), n.as_bytes())))
    {
        return Err((
            "pass_env",
            format!(
                "[exec_policy] pass_env names `{name}`, a secret (secret_env or a provider's api_key_env): children never get it"
            ),
        ));
    }
    if let Some(commands) = &config.exec_policy.allowed_commands
        && let Some(bad) = commands.iter().find(|c| c.is_empty() || c.chars().any(char::is_whitespace))
    {
        return Err((
            "allowed_commands",
            format!("[exec_policy] allowed_commands: `{bad}` is not one word (a command's name, like \"cargo\")"),
        ));
    }
    Ok(())
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
pub const DEFAULT_CONFIG_TOML: &str = r#"# Kennel configuration. Every section is optional; the values shown are the defaults.
# An unknown key or a wrong value stops start-up with the line that is wrong.

# [server]
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

# [kernel]
# How deep blocking agent_send chains and nested workflow_run steps may recurse.
# max_agent_call_depth = 5
# The most model calls one turn may make (an agent type's limits.max_iterations can lower it).
# max_turn_iterations = 50
# max_reply_tokens = 4096
# max_repeated_calls = 4
# ephemeral_retention_hours = 24   # workflow step agents are removed this long after they stop

# [budgets]
# max_tokens_per_day = 2000000   # all agents together; an agent type's [limits] sets its own
# max_usd_per_day = 20.0         # from the models' prices ([providers.NAME.models.MODEL])
# reset_hour = 0                 # when a budget's day starts...
# timezone = "UTC"               # ...in this time zone

# [proactive_memory]        # the semantic store behind memory_semantic_* and auto-recall
# enabled = true            # false: the semantic tools are withdrawn, the store not built
# decay_rate = 0.01         # how fast unused memories lose confidence (per day)
# auto_recall = true        # relevant memories go into each turn's prompt...
# recall_max_bytes = 2048   # ...at most this much text...
# recall_min_confidence = 0.3   # ...of memories at least this confident
# auto_memorize = false     # after each turn, store the lasting facts the extractor finds
# embeddings_provider = "openai"          # a [providers.NAME]; absent: the local embedder
# embeddings_model = "text-embedding-3-small"
# extraction_provider = "openai"          # a [providers.NAME]; absent: rule-based extraction
# extraction_model = "gpt-4o-mini"

# [task_board]
# claim_ttl_secs = 600
# max_retries = 0          # 0 = unlimited
# wake_assignee = true     # a task posted for an agent starts a turn telling it so

# [media]                   # who serves each media tool (none by default: they are excluded)
# [media.providers.openai]
# kind = "openai"           # or "replicate" (music_generate, video_generate)
# base_url = "https://api.openai.com/v1"
# api_key_env = "OPENAI_API_KEY"
# timeout_secs = 300
# max_retries = 3           # after 429 / 5xx / a dropped connection, waiting as Retry-After says
# [media.tools]
# media_transcribe = "openai"
# speech_to_text = "openai"
# [media.models]            # where a provider's default model will not do
# media_transcribe = "whisper-1"
# video_generate = "minimax/video-01"   # Replicate models are owner/name
# [media] allowed_hosts = []  # where finished music and videos may be downloaded from
#                             # (empty: any public host; loopback only through an IP entry)
# [media] ffmpeg = "/usr/bin/ffmpeg"    # found on PATH when not set

# [browser]                 # headless Chromium for the browser tools (absent: excluded)
# executable = "/usr/bin/chromium"   # found on PATH when not set
# tabs_per_agent = 4
# navigation_timeout_secs = 30
# idle_close_secs = 300     # idle tabs close; Chromium stops when no agent has a tab
# sandbox = true            # Chromium's own sandbox (always off when the daemon runs as root)
# [browser] allowed_hosts = []   # every request a page makes is checked (like [a2a] allowed_hosts)
# [browser] blocked_hosts = ["ads.example.com:*"]   # refused even when allowed

# [channels.team]           # a chat platform bound to an agent (family channel)
# kind = "telegram"         # or "slack", "discord", "webhook"
# agent = "assistant"       # the agent whose turns answer its messages
# token_env = "TELEGRAM_BOT_TOKEN"   # Slack: the bot token; Discord: the bot token
# signing_secret_env = "TEAM_WEBHOOK_SECRET"   # Slack's signing secret; a webhook's HMAC key
# mode = "poll"             # Telegram: poll (getUpdates) or webhook (POST /channels/team/inbound)
# default_target = "-1001234567890"   # where schedules naming just "team" deliver
# [channels] allowed_hosts = []   # where channel requests may go (like [a2a] allowed_hosts)

# [location]                # location_get's fallback when an agent type sets no `location`
# provider_url = "http://ip-api.com/json"   # ip-api.com's JSON
# cache_secs = 3600

# [database]                # SQLite in this home unless a PostgreSQL server is named
# url = "postgres://kennel@db.example.com:5432/kennel"   # KENNEL_DATABASE_URL wins over it

# [cluster]                 # several daemons on one PostgreSQL database share agents, fires, claims
# lease_ms = 3000           # a killed daemon's agents move to the others within about this long

# [retention]               # days finished records are kept (0: for ever); swept nightly
# processes_days = 30       # ended processes
# canvas_versions_days = 90 # older canvas versions (an agent's latest is always kept)
# channel_traffic_days = 90 # channel messages answered or failed, and messages sent
# media_jobs_days = 30      # finished media jobs
# trash_days = 30           # the agents' trash (remove_file); then restore_file cannot
# deleted_skills_days = 90  # deleted skills' folders; then they cannot be restored
# a2a_tasks_days = 30       # finished A2A tasks
# model_calls_days = 90     # model calls one row each; then kept as daily totals
# audit_days = 0            # the tool-call audit log: kept for ever unless set

# [ask]                     # ask_user: how long a turn waits for the person's answer
# timeout_secs = 600        # then the model is told nobody answered

# [notify]                  # the owner inbox's notes (notify_owner, budget pauses) besides the dashboard
# telegram_channel = "team" # a [channels.NAME] to send them to
# telegram_chat = "123456"  # its chat; unset: the channel's default_target
# min_urgency_telegram = "high"   # low, normal, high, critical
# email_to = ["owner@example.com"]  # notes by email too (needs smtp_url)
# email_from = "kennel@example.com" # unset: the first of email_to
# smtp_url = "smtps://kennel@smtp.example.com:465"   # or smtp://USER@HOST:587?tls=required; no password here
# smtp_password_env = "KENNEL_SMTP_PASSWORD"
# min_urgency_email = "high"
# max_per_agent_per_hour = 30   # notify_owner notes one agent may leave in any hour
# max_fanout_per_hour = 30      # notes sent to Telegram (and, apart, by email) per hour; the rest stay in the inbox

# [exec_policy]             # agents' subprocesses (process_*) and docker_exec
# wall_clock_secs = 3600    # a child running longer is stopped
# max_children = 8          # running at once, per agent
# output_buffer_bytes = 1048576   # per child and stream, until polled (oldest dropped)
# kill_grace_secs = 5       # SIGTERM, then SIGKILL this much later
# allowed_commands = ["cargo", "python3"]   # absent: any (the grant is the gate)
# pass_env = ["CARGO_HOME"]  # daemon variables children get, besides PATH, LANG, TZ...
# secret_env = ["*_API_KEY", "*_TOKEN", "*_SECRET", "*PASSWORD*"]   # never given to a child
# sandbox = true            # children run in bubblewrap; false: as the daemon, its files and token included
# network = false           # true: requests through the address guard's proxy (HTTP_PROXY)
# [exec_policy] allowed_hosts = []   # where they may go (like [browser] allowed_hosts); script tools too
# read_only = ["/opt"]      # host folders a child sees read-only, besides the system's
# max_processes = 512       # processes and threads of one child's tree (its cgroup)
# max_memory_mib = 4096     # memory of one child's tree (its cgroup; else each process's address space)
# docker_socket = "/var/run/docker.sock"
# docker_allowlist = []     # containers docker_exec may run commands in, by name

# [schedules]
# max_concurrent_fires = 32   # scheduled turns running at once; more wait
# fire_history = 100          # fires remembered per schedule

# [tool_results]
# Tool results larger than this are stored as artifacts; the model gets a preview.
# spill_threshold_bytes = 16384

# [a2a]
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

# [workspace]
# Each agent's files live in workspaces/AGENT_ID/ under this home.
# max_file_bytes = 67108864    # the largest file a workspace takes or hands out whole
# max_reading_mib = 256        # MiB of files read whole into memory at once, daemon-wide; larger reads wait
# max_agent_bytes = 1073741824 # one agent's workspace and trash together, as the file tools write

# [canvas]
# max_bytes = 1048576          # the largest canvas_present HTML
# max_versions = 50            # versions kept per agent; a new one drops the oldest
# max_agent_bytes = 16777216   # all of an agent's kept versions together; the oldest go first

# [skills]
# Skills live in skills/NAME/ under this home; an agent's system prompt carries the bodies of
# the skills its type lists.
# prompt_max_bytes = 32768     # the most skill text a system prompt carries (cut with a note)
# max_pending_proposals_per_agent = 20  # an agent's changes waiting for an operator on the Skills page

# LLM providers, named as agent types refer to them (provider = "openai").
# [providers.openai]
# kind = "openai"                        # OpenAI-compatible chat completions
# base_url = "https://api.openai.com/v1"
# api_key_env = "OPENAI_API_KEY"
# timeout_secs = 120
# max_retries = 3                        # after 429 / 5xx, with backoff
# stream = true                          # tokens as they come (false: the reply in one piece)
# max_in_flight = 4                      # unset: no bound; calls beyond it wait (queued)
# [providers.openai.models.gpt-4o]
# context_tokens = 128000                # unset: the family's known window, else learned
# input_usd_per_mtok = 2.5               # prices for the usage reports and dollar budgets
# cached_input_usd_per_mtok = 1.25       # prompt-cache reads; unset: the input price
#                                        # (kind "anthropic": a tenth of it)
# cache_write_usd_per_mtok = 2.5         # prompt-cache writes; unset: the input price
#                                        # (kind "anthropic": 1.25 × it)
# output_usd_per_mtok = 10.0
# images = true                          # send it the images tool results carry (screenshots);
#                                        # unset: true for kind "anthropic", false for "openai"
#                                        # (local servers often serve text-only models)
#
# [providers.anthropic]
# kind = "anthropic"
# api_key_env = "ANTHROPIC_API_KEY"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("config.toml"), text)
    }

    #[test]
    fn channels_are_checked_for_what_their_kind_needs() {
        let ok = parse(
            "[channels]\nallowed_hosts = [\"127.0.0.1:*\"]\n[channels.team]\nkind = \"telegram\"\nagent = \"a\"\ntoken_env = \"T\"\n",
        )
        .unwrap();
        assert_eq!(ok.channels.channels["team"].kind, ChannelKind::Telegram);
        assert_eq!(crate::channel::mode_of(&ok.channels.channels["team"]), ChannelMode::Poll);
        for (text, expected) in [
            ("[channels.t]\nkind = \"telegram\"\nagent = \"a\"\n", "needs token_env"),
            ("[channels.t]\nkind = \"telegram\"\ntoken_env = \"T\"\n", "needs agent"),
            (
                "[channels.t]\nkind = \"telegram\"\nagent = \"a\"\ntoken_env = \"T\"\nmode = \"webhook\"\n",
                "needs signing_secret_env",
            ),
            ("[channels.s]\nkind = \"slack\"\nagent = \"a\"\ntoken_env = \"T\"\n", "needs signing_secret_env"),
            (
                "[channels.s]\nkind = \"slack\"\nagent = \"a\"\ntoken_env = \"T\"\nsigning_secret_env = \"S\"\nmode = \"poll\"\n",
                "mode = \"webhook\"",
            ),
            ("[channels.d]\nkind = \"discord\"\nagent = \"a\"\ntoken_env = \"T\"\nmode = \"webhook\"\n", "gateway"),
            (
                "[channels.d]\nkind = \"discord\"\nagent = \"a\"\ntoken_env = \"T\"\ndeliver_only = true\n",
                "deliver_only is for",
            ),
            (
                "[channels.w]\nkind = \"webhook\"\nsigning_secret_env = \"S\"\ndeliver_only = true\n",
                "needs default_target",
            ),
            ("[channels.Team]\nkind = \"webhook\"\nsigning_secret_env = \"S\"\n", "lowercase"),
            (
                "[channels.w]\nkind = \"webhook\"\nsigning_secret_env = \"S\"\nbase_url = \"ftp://x\"\n",
                "not an http(s) URL",
            ),
            ("[channels.w]\nkind = \"irc\"\n", "unknown variant"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.message.contains(expected), "{text}: {}", e.message);
        }
    }

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
        let c = parse(DEFAULT_CONFIG_TOML).unwrap();
        assert_eq!(c.kernel.max_agent_call_depth, 5);
        assert!(c.providers.is_empty());
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
        let line = DEFAULT_CONFIG_TOML.lines().find(|l| l.starts_with("# allowed_hosts")).unwrap();
        let c = parse(&format!("[a2a]\n{}\n", line.trim_start_matches("# "))).unwrap();
        let shown = toml::to_string(&c.a2a).unwrap();
        assert!(
            shown.contains(
                r#"allowed_hosts = ["agents.example.com:443", "127.0.0.1:8080", "10.0.0.0/8:*", "[fd00::/8]:*"]"#
            ),
            "{shown}"
        );
    }

    #[test]
    fn images_are_sent_to_anthropic_and_to_openai_kind_models_only_when_configured() {
        let c = parse(
            "[providers.a]\nkind = \"anthropic\"\n[providers.a.models.text-only]\nimages = false\n\
             [providers.o]\nkind = \"openai\"\n[providers.o.models.gpt-4o]\nimages = true\n\
             [providers.o.models.priced]\ninput_usd_per_mtok = 1.0\n",
        )
        .unwrap();
        let (a, o) = (&c.providers["a"], &c.providers["o"]);
        assert!(a.accepts_images("claude-sonnet-4-5"), "anthropic's default");
        assert!(!a.accepts_images("text-only"), "turned off");
        assert!(!o.accepts_images("llama3"), "openai-kind default");
        assert!(!o.accepts_images("priced"), "a model section without `images` keeps the default");
        assert!(o.accepts_images("gpt-4o"), "turned on");
        let e = parse("[providers.o]\nkind = \"openai\"\n[providers.o.models.m]\nimages = \"yes\"\n").unwrap_err();
        assert!(e.message.contains("bool"), "{}", e.message);
    }

    #[test]
    fn providers_parse_with_defaults_and_reject_unknown_kinds() {
        let c = parse("[providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n").unwrap();
        assert_eq!(c.providers["local"].kind, ProviderKind::Openai);
        assert_eq!(c.providers["local"].timeout_secs, 120);
        let e = parse("[providers.x]\nkind = \"gemini\"\n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse("[providers.Bad]\nkind = \"openai\"\n").unwrap_err();
        assert!(e.message.contains("provider name"), "{}", e.message);
    }

    #[test]
    fn media_tools_name_configured_providers_of_the_kind_that_serves_them() {
        let provider = "[media.providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";
        let ok = parse(&format!("{provider}[media.tools]\nmedia_transcribe = \"local\"\n")).unwrap();
        assert_eq!(ok.media.tools["media_transcribe"], "local");
        let e = parse(&format!("{provider}[media.tools]\nmedia_transcribe = \"cloud\"\n")).unwrap_err();
        assert!(e.message.contains("`cloud`") && e.message.contains("no [media.providers.cloud]"), "{}", e.message);
        assert_eq!(e.line, 5, "points at the line: {e}");
        let e = parse(&format!("{provider}[media.tools]\nimage_paint = \"local\"\n")).unwrap_err();
        assert!(e.message.contains("not a media tool") && e.message.contains("speech_to_text"), "{}", e.message);
        let replicate = "[media.providers.rep]\nkind = \"replicate\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[media.tools]\nspeech_to_text = \"rep\"\n";
        let e = parse(replicate).unwrap_err();
        assert!(e.message.contains("kind `openai`"), "{}", e.message);
        let e = parse("[media.providers.local]\nkind = \"openai\"\n").unwrap_err();
        assert!(e.message.contains("base_url"), "a provider needs its URL: {}", e.message);
    }
}
