//! The command line. `kennel start` runs the daemon. Commands that only change the store
//! (operators, tokens, grants, agent types without a daemon) open the home directly and work
//! whether or not the daemon runs (a running daemon picks their changes up within a fraction
//! of a second); commands that need the running daemon (chat, spawn, stop, status) talk to it
//! over HTTP, as `daemon.rs` describes.
//!
//! # Design notes
//!
//! ## The terminal as a front
//!
//! - **Two ways to the kernel.** Commands that only change the store (`operator add`, `token …`,
//!   `agent grant|revoke|list`, `type list|export`, `type apply` without a daemon) open the home
//!   with `Kernel::open` and work whether or not a daemon runs (how a daemon sees their writes: `kennel_kernel::db`). Commands that need
//!   the agents running (`chat`, `agent spawn|stop`, `status`) talk to the daemon over its REST
//!   API, like any client, so they use the same handlers and services and nothing is duplicated.
//! - **Finding the daemon.** After binding, `kennel start` writes `$KENNEL_HOME/daemon.json`
//!   (`url` — loopback when bound to every address —, `pid`, `started_at`, `version`) and
//!   `$KENNEL_HOME/cli.token` (mode 0600 from creation: temp file + rename), then prints its
//!   "listening" line; a clean stop removes both if they are still its own. The token is
//!   `kncli_` + 64 hex digits, made by `Auth::issue_cli_token` at each start and kept only in
//!   memory (a hash), so a copy from an earlier run is refused. A request with it is
//!   `Caller::Cli`: audited as `cli` in the tool-call log and the operator-action log, like the
//!   store-editing commands.
//! - **One daemon per home, and only it gets the token** (issue 43). `kennel start` first takes
//!   an exclusive lock on `$KENNEL_HOME/daemon.lock` (released by the kernel when the process
//!   ends, however it ends; a starting daemon waits 2 s for a predecessor that is going), so a
//!   second daemon on the home is refused, naming the first. Before its first request with the
//!   token, the CLI sends `GET /healthz` with `X-Kennel-Challenge: RANDOM`; the daemon answers
//!   `X-Kennel-Proof: HMAC-SHA256(SHA-256(token), "kennel-cli-proof:" + RANDOM)`
//!   (`auth::cli_proof_of`). A process that took the port after a crash cannot answer it, and the
//!   CLI sends it no token ("the token was not sent").
//! - **No daemon** is a sentence and exit status 3 (`daemon::NoDaemon`; as `systemctl status`
//!   does for a stopped unit): no `daemon.json` ("start one with `kennel start`"), or one whose
//!   daemon does not answer ("it has stopped", the pid and start time it names), or a daemon that
//!   refuses the token (another home's). The daemon's own refusals print its message and each
//!   field's problem.
//! - **`type apply`** reads the file with `agent::source::read` (the one validator; each problem
//!   as `FILE:LINE:COLUMN: field: message`, nothing changed). With a daemon running, the file's
//!   text goes to `PUT /api/templates/{name}` as written (JSON or TOML), and to `POST
//!   /api/templates` when the daemon answers 404, so the daemon's copy changes at once and
//!   `kennel agent spawn` right after sees it; without one, `Agents::save_type` creates or
//!   replaces it in the store under the service's write lock. Refusals only the service can make
//!   (a provider this daemon lacks) come back with their fields and are shown at their lines
//!   too (`source::locate`). **Decisions:** through the daemon when there is one, since the store
//!   path would leave the daemon up to 0.2 s behind and a script's next `spawn` would miss the
//!   type. `PUT` keeps meaning "replace" (404 for an unknown type) rather than becoming an
//!   upsert: a `PUT` that re-creates a deleted type is what the contract run's
//!   `use_after_free` check calls a bug, and a type created between the CLI's `PUT` and `POST`
//!   is a 409 the person sees.
//! - **`chat`** subscribes to `GET /api/agents/{id}/events` before the first message, opens a
//!   session labelled `kennel chat` with the first message (`Origin::Terminal`: the dashboard
//!   lists it as "Terminal", its messages as the person's own; a chat that says nothing leaves
//!   none), then sends each line to `POST …/messages` and prints the events of *its* turn — the
//!   one whose `turn_started` in this session carries the line sent; another person's turn in the
//!   same session and late events of an earlier one are not shown — while it runs: `text_delta`
//!   pieces as they come, `→ tool {args}` / `← tool outcome (ms) summary`, queued, fallback,
//!   compaction and reset notes. If the reply on screen is not the answer's (a lagged stream, a
//!   provider that does not stream, a turn not followed), the answer is printed whole.
//!   **Decision:** turns sent with the CLI token have a person present (`Caller::is_person`, read
//!   by `TurnRequest::new` for the API and the dashboard alike): the token is readable only by the
//!   home's owner and `kennel chat` is what uses it; API tokens stay headless. Off a terminal
//!   there is no prompt, and the exit status is 1 if any turn failed. Ctrl-C leaves the chat; the
//!   turn finishes on the daemon (its answer is in the session).
//! - **Names typed as agents** go into URL paths only when they are a valid name or an id
//!   (`cli::agent_ref`): `..` would otherwise be normalised into another route.
//! - **Stopping with streams open.** Live streams never end on their own, and the server's
//!   graceful shutdown (`edge::serve`) waits for every open response, so one open chat (a terminal or a browser tab) used
//!   to keep the daemon from stopping. On SIGINT/SIGTERM `live::stop_streams` ends them all;
//!   other requests in flight (a turn's model call) get `SHUTDOWN_GRACE` (10 s, `app.rs`), then
//!   the daemon stops anyway and those turns are marked interrupted at the next start.
//! - **Agents are untrusted on the terminal too.** Everything the CLI prints from the daemon
//!   goes through `cli::terminal_safe`: control characters other than line break and tab
//!   (escape sequences that could retitle the window, write the clipboard through OSC 52 or
//!   redraw the screen, a carriage return that overwrites the prompt) are printed as `\u{1b}`,
//!   the problems `type apply` finds (they repeat the file's values) and every error line
//!   included. `--json` output writes the C1 controls (U+0080–U+009F, which serde_json leaves
//!   raw) as `\u` escapes, the same JSON; `type export` to a terminal is made safe the same way,
//!   to a file it is written as stored.
//!
//! ## Layout
//!
//! `mod.rs` the commands and their `--help` examples; `daemon.rs` how commands reach the
//! running daemon (`daemon.json`, `cli.token`, its HTTP client and error messages);
//! `types.rs`, `agents.rs`, `status.rs` the commands of each kind; `chat.rs` the streaming
//! terminal chat; `mcp.rs` the stdio bridge of `kennel mcp`.

mod agents;
mod approvals;
mod backup;
mod channels;
mod chat;
pub mod daemon;
mod keyboard;
mod mcp;
mod providers;
mod status;
mod types;

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use kennel_kernel::Kernel;

#[derive(Parser)]
#[command(
    name = "kennel",
    version,
    about = "Kennel: an agent operating system — one daemon that runs AI agents, their tools and their dashboard.",
    after_help = "Examples:
  kennel start                          run the daemon (API and dashboard on 127.0.0.1:4545)
  kennel type apply helper.toml         create or update an agent type from a file
  kennel agent spawn helper             make an agent of that type
  kennel chat helper                    talk to it; replies stream as they are written
  kennel status                         the daemon, its agents and today's model use

Commands that need the daemon find it through $KENNEL_HOME/daemon.json and exit with 3 when
none is running."
)]
pub struct Cli {
    /// Kennel's home: config.toml, the database, artifacts. Created on first use.
    #[arg(long, global = true, env = "KENNEL_HOME", value_name = "DIR")]
    home: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon: REST API, dashboard and agents, until SIGINT/SIGTERM.
    #[command(after_help = "Examples:
  kennel start                          listen on [server] bind (default 127.0.0.1:4545)
  kennel start --bind 127.0.0.1:0       any free port; the address is printed on stdout
  KENNEL_HOME=/srv/kennel kennel start  another home")]
    Start {
        /// Address to listen on; overrides `[server] bind` (default 127.0.0.1:4545). Port 0 picks a free port.
        #[arg(long, value_name = "ADDR")]
        bind: Option<SocketAddr>,
    },
    /// Show the running daemon: address, uptime, agents by state, model use today.
    #[command(after_help = "Examples:
  kennel status
  kennel status --json | jq .usage_today.cost_usd

Exits with 3 when no daemon is running for the home.")]
    Status {
        /// Print JSON: daemon.json's fields and GET /api/status.
        #[arg(long)]
        json: bool,
    },
    /// Serve an agent's tools to an MCP client over standard input and output (bridged to the
    /// running daemon, where the agent's tools run under its grants).
    #[command(after_help = "Examples:
  kennel mcp --agent helper             what an MCP client's config runs as a stdio server
  claude mcp add kennel -- kennel mcp --agent helper

The agent's usable tools are listed; each call runs as the agent and is audited as
`mcp:CLIENT (cli)`. Exits with 3 when no daemon is running for the home.")]
    Mcp {
        /// The agent whose tools are served: its name (while it runs) or id.
        #[arg(long)]
        agent: String,
    },
    /// Re-read `[mcp]` from config.toml in the running daemon (as SIGHUP does): removed MCP
    /// servers stop, added and changed ones connect. Other sections are read at start only.
    #[command(after_help = "Examples:
  $EDITOR ~/.kennel/config.toml && kennel reload
  kennel reload --json

Exits with 3 when no daemon is running for the home.")]
    Reload {
        /// Print what changed as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Talk to an agent: each line is a message; the reply streams as it is written, and
    /// tool calls show as they happen. Needs the running daemon.
    #[command(after_help = "Examples:
  kennel chat helper                    a new session with the agent named helper
  kennel chat helper --session 0193…    go on with an earlier session
  echo 'What time is it?' | kennel chat helper --quiet     the reply only, for a script
  kennel chat helper --json < questions.txt     one JSON object per turn

A person is present in these turns, so tools that need one are offered. Lines starting
with / are commands for the chat itself (/help lists them; // sends a message starting
with /). Ctrl-C stops the turn that is running (the agent goes on); at the prompt, it
leaves, as /exit and Ctrl-D do.")]
    Chat {
        /// The agent's name (while it runs) or id.
        agent: String,
        /// Continue this session (its id) instead of opening a new one.
        #[arg(long, value_name = "ID")]
        session: Option<uuid::Uuid>,
        /// Print only each reply (no banners, tool calls or progress); failures go to stderr.
        #[arg(long, conflicts_with = "json")]
        quiet: bool,
        /// Print one JSON object per turn: the API's turn result (reply, session, trace), or
        /// `{"error": …}` for a turn that failed.
        #[arg(long)]
        json: bool,
    },
    /// Agent types: the stored manifests agents are made from.
    #[command(subcommand, name = "type")]
    Type(TypeCommand),
    /// Agents: list them, spawn and stop them, change their grants.
    #[command(subcommand)]
    Agent(AgentCommand),
    /// Manage operators: the people who sign in to the dashboard.
    #[command(subcommand)]
    Operator(OperatorCommand),
    /// Manage API tokens for scripts and automation.
    #[command(subcommand)]
    Token(TokenCommand),
    /// LLM providers (`[providers.NAME]` in config.toml).
    #[command(subcommand)]
    Provider(ProviderCommand),
    /// Chat platform channels (`[channels.NAME]` in config.toml).
    #[command(subcommand)]
    Channel(ChannelCommand),
    /// Calls waiting for a person's approval (`[approvals]` rules), decided from this machine.
    #[command(subcommand)]
    Approvals(ApprovalsCommand),
    /// Copy this home's SQLite database into an empty PostgreSQL database, every table, with
    /// the row counts checked; then point `[database] url` (or KENNEL_DATABASE_URL) at it.
    #[command(
        name = "migrate-to-postgres",
        after_help = "Examples:
  kennel migrate-to-postgres postgres://kennel@db.example.com/kennel
  KENNEL_HOME=/srv/kennel kennel migrate-to-postgres postgres://kennel:$PW@localhost/kennel

Stop the daemon first. The copy is one transaction: on any error no row is written (the
empty tables may stay; a second run uses them). The SQLite file is left as it was (keep it
as a backup). The database must be empty; its user must be able to create tables."
    )]
    MigrateToPostgres {
        /// The empty PostgreSQL database: postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE.
        url: String,
    },
    /// Back up the home into one archive (gzipped tar): a consistent copy of the SQLite
    /// database and the home's files. The daemon may go on running meanwhile.
    #[command(after_help = "Examples:
  kennel backup kennel-$(date +%F).tar.gz
  KENNEL_HOME=/srv/kennel kennel backup /backups/kennel.tar.gz

The database is copied with SQLite's VACUUM INTO: the data as of one moment, while the
daemon writes on. Workspaces, skills, artifacts, canvases and config.toml follow as they are
when read. One run's files (daemon.json, cli.token, run/) and Chromium's profile are left out.
The archive is written beside FILE and then renamed onto it, mode 0600: it holds the database.
On PostgreSQL the archive holds the files only: back the database up with pg_dump.")]
    Backup {
        /// Where to write the archive (replaced if it exists).
        file: PathBuf,
    },
    /// Restore a backup made by `kennel backup` into an empty (or new) home.
    #[command(after_help = "Examples:
  kennel --home /srv/kennel-restored restore kennel-2026-12-06.tar.gz
  kennel --home /srv/kennel-restored start

A home that is not empty is refused: a restore never merges into or overwrites a home. The
database is checked after unpacking; on any failure what was unpacked is removed.")]
    Restore {
        /// The archive.
        file: PathBuf,
    },
}

#[derive(Subcommand)]
enum TypeCommand {
    /// Create an agent type from a TOML or JSON manifest, or replace the one of that name.
    #[command(after_help = "Examples:
  kennel type apply helper.toml
  kennel type export helper > helper.toml && $EDITOR helper.toml && kennel type apply helper.toml
  kennel type apply - < helper.json     read standard input (TOML, or JSON starting with `{`)

The manifest is checked with the same validator as the API and the dashboard; every problem
is printed as FILE:LINE:COLUMN and nothing is changed. Agents already made from a type keep
their own copy of it. Works with or without a running daemon.")]
    Apply {
        /// The manifest: `.toml` or `.json` (by extension, else by content); `-` reads standard input.
        file: PathBuf,
        /// Print the stored agent type as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print an agent type's manifest as TOML (what `apply` reads back).
    #[command(after_help = "Examples:
  kennel type export helper
  kennel type export helper --json")]
    Export {
        name: String,
        /// JSON instead of TOML.
        #[arg(long)]
        json: bool,
    },
    /// List agent types: name, provider, model, grants, description.
    #[command(after_help = "Examples:
  kennel type list
  kennel type list --json | jq -r '.[].name'")]
    List {
        /// Print the manifests as a JSON array.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum AgentCommand {
    /// List agents: id, name, type, status, grants.
    #[command(after_help = "Examples:
  kennel agent list
  kennel agent list --json | jq -r '.[] | select(.status == \"running\") | .name'")]
    List {
        /// Print the agents as a JSON array (workflow step agents included).
        #[arg(long)]
        json: bool,
    },
    /// Make an agent from an agent type. Needs the running daemon.
    #[command(after_help = "Examples:
  kennel agent spawn helper                       named after its type (helper, helper-2, …)
  kennel agent spawn helper --name scout --goal 'Watch the release notes'
  id=$(kennel agent spawn helper --json | jq -r .id)")]
    Spawn {
        /// The agent type.
        #[arg(value_name = "TYPE")]
        agent_type: String,
        /// The agent's name; defaults to the type's name (or `NAME-2`, … when taken).
        #[arg(long)]
        name: Option<String>,
        /// What the agent is for; its prompts show it.
        #[arg(long)]
        goal: Option<String>,
        /// Print the new agent as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop an agent: its turns are cancelled, its schedules paused; it stays listed. Needs
    /// the running daemon.
    #[command(after_help = "Examples:
  kennel agent stop helper
  kennel agent stop 0193d2c4-…")]
    Stop {
        /// The agent's name (while it runs) or id.
        agent: String,
        /// Print the stopped agent as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Start a stopped agent again, with its sessions and history; its schedules stay paused
    /// until resumed. Needs the running daemon.
    #[command(after_help = "Examples:
  kennel agent start helper             the stopped agent named helper
  kennel agent start 0193d2c4-…         by id, when several stopped agents share the name")]
    Start {
        /// The agent's name or id.
        agent: String,
        /// Print the started agent as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove an agent (stopping it first if it runs): no longer listed, its sessions, audit
    /// rows and paused schedules kept. Needs the running daemon.
    #[command(after_help = "Examples:
  kennel agent remove helper")]
    Remove {
        /// The agent's name or id.
        agent: String,
    },
    /// Let an agent call the tools matching PATTERN (`system_time`, `memory_*`, `browser.*`).
    #[command(after_help = "Examples:
  kennel agent grant helper system_time
  kennel agent grant helper 'tasks.*'        a whole family")]
    Grant { agent: String, pattern: String },
    /// Take back a grant pattern from an agent.
    #[command(after_help = "Examples:
  kennel agent revoke helper system_time")]
    Revoke { agent: String, pattern: String },
}

#[derive(Subcommand)]
enum OperatorCommand {
    /// Add an operator; the password is read from the first line of standard input.
    #[command(after_help = "Examples:
  printf '%s\\n' \"$PASSWORD\" | kennel operator add ada --password-stdin")]
    Add {
        name: String,
        /// Read the password from standard input (required: passwords never go on the command line).
        #[arg(long)]
        password_stdin: bool,
    },
    /// List operators: name, when added, dashboard sessions open now.
    #[command(after_help = "Examples:
  kennel operator list
  kennel operator list --json | jq -r '.[].name'")]
    List {
        /// Print the operators as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Remove an operator and end its dashboard sessions. The last operator cannot be removed.
    #[command(after_help = "Examples:
  kennel operator remove bob")]
    Remove { name: String },
    /// Set an operator's password (the way back from a forgotten one, on the daemon's
    /// machine); its dashboard sessions end. The password is read from standard input.
    #[command(after_help = "Examples:
  printf '%s\\n' \"$NEW_PASSWORD\" | kennel operator passwd ada --password-stdin")]
    Passwd {
        name: String,
        /// Read the new password from standard input (required: passwords never go on the command line).
        #[arg(long)]
        password_stdin: bool,
    },
}

#[derive(Subcommand)]
enum ApprovalsCommand {
    /// The calls waiting for a decision (with --all, decided ones too), newest first.
    #[command(after_help = "Examples:
  kennel approvals list
  kennel approvals list --all --json")]
    List {
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// Lets a waiting call run: its turn goes on.
    #[command(after_help = "Examples:
  kennel approvals approve 0193…
  kennel approvals approve 0193… --for-minutes 30 --note \"deploys are fine today\"")]
    Approve {
        id: String,
        /// Also let this agent's calls of the same tool under the same rule through for this many minutes.
        #[arg(long)]
        for_minutes: Option<u32>,
        /// Why: the agent is told.
        #[arg(long)]
        note: Option<String>,
    },
    /// Refuses a waiting call: the agent is told who denied it, and why.
    #[command(after_help = "Examples:
  kennel approvals deny 0193… --note \"not from a page you just read\"")]
    Deny {
        id: String,
        #[arg(long)]
        note: Option<String>,
    },
}

#[derive(Subcommand)]
enum ChannelCommand {
    /// List the channels: kind, mode, the agent that answers, state.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add a channel or change its settings in config.toml (comments kept). The running
    /// daemon listens with the change at once; flags not given keep their values.
    #[command(after_help = "Examples:
  kennel channel set team --kind telegram --agent assistant --token-env TEAM_BOT_TOKEN
  kennel channel set hooks --kind webhook --agent helper --signing-secret-env HOOKS_SECRET --base-url https://example.com/replies
  kennel channel set team --agent researcher

Secrets are never arguments: the daemon reads them from the variables --token-env and
--signing-secret-env name (set them where the daemon starts).")]
    Set {
        /// The channel's name (its webhook address is /channels/NAME/inbound).
        name: String,
        #[command(flatten)]
        args: channels::SetArgs,
        #[arg(long)]
        json: bool,
    },
    /// Remove a channel from config.toml: it stops listening; its conversations stay.
    Remove { name: String },
    /// Test a channel from the running daemon: one call that needs its token, answered with
    /// who the platform says its account is, or what it said was wrong.
    #[command(after_help = "Examples:
  kennel channel test team
  kennel channel test team --json

Exits with 1 when the platform did not answer as it should, 3 when no daemon is running.")]
    Test {
        name: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum ProviderCommand {
    /// List the providers: protocol, address, key variable (set or missing), models.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add a provider or change its settings in config.toml (comments kept). The running
    /// daemon uses the change from its next model call; flags not given keep their values.
    #[command(after_help = "Examples:
  kennel provider set local --kind openai --base-url http://127.0.0.1:8080/v1 --no-key --model qwen3
  kennel provider set anthropic --kind anthropic --api-key-env ANTHROPIC_API_KEY --model claude-sonnet-4-5 --price claude-sonnet-4-5=3,15
  kennel provider set local --max-in-flight 2 --default

The key itself is never an argument: the daemon reads it from the variable --api-key-env names.")]
    Set {
        /// The provider's name, as agent types name it.
        name: String,
        #[command(flatten)]
        args: providers::SetArgs,
        #[arg(long)]
        json: bool,
    },
    /// Remove a provider from config.toml; refused while an agent or agent type would call it.
    Remove { name: String },
    /// Make a provider the default: the one agents whose type names no provider use.
    Default { name: String },
    /// Test a provider with one tiny call from the running daemon (with its environment's
    /// keys): the model's answer and the time it took, or the provider's own error.
    #[command(after_help = "Examples:
  kennel provider test local
  kennel provider test anthropic --model claude-haiku-4-5
  kennel provider test local --json

Exits with 1 when the provider did not answer, 3 when no daemon is running for the home.")]
    Test {
        /// The provider's name in config.toml.
        name: String,
        /// The model to call (by default the first `[providers.NAME.models.MODEL]`).
        #[arg(long)]
        model: Option<String>,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Create a token and print it. It is shown only this once; only its hash is stored.
    #[command(after_help = "Examples:
  TOKEN=$(kennel token create ci)
  curl -H \"Authorization: Bearer $TOKEN\" localhost:4545/api/agents")]
    Create { name: String },
    /// Revoke a token; requests using it are refused from then on.
    #[command(after_help = "Examples:
  kennel token revoke ci")]
    Revoke { name: String },
    /// List token names and when they were made.
    #[command(after_help = "Examples:
  kennel token list
  kennel token list --json | jq -r '.[].name'")]
    List {
        /// Print the tokens (names and dates, never secrets) as a JSON array.
        #[arg(long)]
        json: bool,
    },
}

/// Agents' child processes run as the daemon's user, and a process may read the environment
/// and memory of any other process of its user (`/proc/PID/environ`) — including the
/// provider keys the daemon was started with. A non-dumpable process's `/proc` files belong to
/// root, so the daemon marks itself so (children are dumpable again after their `exec`). A
/// daemon run as root gains nothing from this: run it as an unprivileged user.
fn refuse_inspection() {
    // SAFETY: prctl(PR_SET_DUMPABLE) only changes this process's own flag.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0) } != 0 {
        tracing::warn!(error = %std::io::Error::last_os_error(), "could not protect the daemon's environment from its children");
    }
}

fn default_home() -> anyhow::Result<PathBuf> {
    let home = std::env::var_os("HOME").context("neither --home, KENNEL_HOME nor HOME is set")?;
    Ok(PathBuf::from(home).join(".kennel"))
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let home = match cli.home {
        Some(h) => h,
        None => default_home()?,
    };
    match cli.command {
        Command::Start { bind } => start(home, bind).await,
        Command::Status { json } => status::status(&home, json).await,
        Command::Reload { json } => status::reload(&home, json).await,
        Command::Mcp { agent } => mcp::serve(&home, &agent).await,
        Command::Chat { agent, session, quiet, json } => {
            let output = if json {
                chat::Output::Json
            } else if quiet {
                chat::Output::Quiet
            } else {
                chat::Output::Live
            };
            chat::chat(&home, &agent, session, output).await
        }
        Command::Type(TypeCommand::Apply { file, json }) => types::apply(&home, &file, json).await,
        Command::Type(TypeCommand::Export { name, json }) => {
            with_store(&home, async |k| types::export(k, &name, json).await).await
        }
        Command::Type(TypeCommand::List { json }) => with_store(&home, async |k| types::list(k, json)).await,
        Command::Agent(AgentCommand::Spawn { agent_type, name, goal, json }) => {
            agents::spawn(&home, &agent_type, name, goal, json).await
        }
        Command::Agent(AgentCommand::Stop { agent, json }) => agents::stop(&home, &agent, json).await,
        Command::Agent(AgentCommand::Start { agent, json }) => agents::start(&home, &agent, json).await,
        Command::Agent(AgentCommand::Remove { agent }) => agents::remove(&home, &agent).await,
        Command::Agent(AgentCommand::List { json }) => with_store(&home, async |k| agents::list(k, json)).await,
        Command::Agent(AgentCommand::Grant { agent, pattern }) => {
            with_store(&home, async |k| agents::grant(k, &agent, &pattern).await).await
        }
        Command::Agent(AgentCommand::Revoke { agent, pattern }) => {
            with_store(&home, async |k| agents::revoke(k, &agent, &pattern).await).await
        }
        Command::Operator(cmd) => operators(&home, cmd).await,
        Command::Provider(ProviderCommand::Test { name, model, json }) => {
            status::test_provider(&home, &name, model.as_deref(), json).await
        }
        Command::Provider(ProviderCommand::List { json }) => providers::list(&home, json).await,
        Command::Provider(ProviderCommand::Set { name, args, json }) => providers::set(&home, &name, args, json).await,
        Command::Provider(ProviderCommand::Remove { name }) => providers::remove(&home, &name).await,
        Command::Provider(ProviderCommand::Default { name }) => providers::make_default(&home, &name).await,
        Command::Approvals(ApprovalsCommand::List { all, json }) => approvals::list(&home, all, json).await,
        Command::Approvals(ApprovalsCommand::Approve { id, for_minutes, note }) => {
            approvals::decide(&home, &id, true, for_minutes, note).await
        }
        Command::Approvals(ApprovalsCommand::Deny { id, note }) => {
            approvals::decide(&home, &id, false, None, note).await
        }
        Command::Channel(ChannelCommand::List { json }) => channels::list(&home, json).await,
        Command::Channel(ChannelCommand::Set { name, args, json }) => channels::set(&home, &name, args, json).await,
        Command::Channel(ChannelCommand::Remove { name }) => channels::remove(&home, &name).await,
        Command::Channel(ChannelCommand::Test { name, json }) => channels::test(&home, &name, json).await,
        Command::Token(cmd) => with_store(&home, async |kernel| tokens(kernel, cmd).await).await,
        Command::MigrateToPostgres { url } => migrate_to_postgres(&home, &url).await,
        Command::Backup { file } => backup::backup(&home, &file).await,
        Command::Restore { file } => backup::restore(&home, &file).await,
    }
}

/// `kennel migrate-to-postgres`: refused while the home's daemon runs (it would go on
/// writing to SQLite after the copy).
async fn migrate_to_postgres(home: &Path, url: &str) -> anyhow::Result<()> {
    kennel_kernel::config::check_database_url(url).map_err(|message| anyhow::anyhow!(message))?;
    if daemon::Daemon::running(home).await?.is_some() {
        bail!("the daemon for {} is running: stop it first, so nothing is written after the copy", home.display());
    }
    let sqlite = home.join("kennel.db");
    let copied = kennel_kernel::db::sqlite_to_postgres(&sqlite, url).await.map_err(|e| anyhow::anyhow!(e.message))?;
    let mut rows = vec![vec!["table".to_string(), "rows".to_string()]];
    rows.extend(copied.iter().map(|t| vec![t.table.clone(), t.rows.to_string()]));
    print_table(&rows);
    let total: i64 = copied.iter().map(|t| t.rows).sum();
    println!(
        "\ncopied {total} rows in {} tables to {}; the counts match.\nNext: set [database] url in config.toml (or KENNEL_DATABASE_URL) and start the daemon. {} is unchanged.",
        copied.len(),
        kennel_kernel::config::redacted_url(url),
        sqlite.display()
    );
    Ok(())
}

async fn operators(home: &Path, cmd: OperatorCommand) -> anyhow::Result<()> {
    match cmd {
        OperatorCommand::Add { name, password_stdin } => {
            let password = password_from_stdin(password_stdin)?;
            with_store(home, async |kernel| {
                kernel.auth().add_operator(&name, &password).await?;
                record(kernel, "operator.add", &name, format!("operator `{name}` added")).await?;
                println!("operator `{name}` added");
                Ok(())
            })
            .await
        }
        OperatorCommand::List { json } => {
            with_store(home, async |kernel| {
                let operators = kernel.auth().list_operators().await?;
                if json {
                    return print_json(&operators);
                }
                let mut rows = vec![["NAME", "ADDED", "SIGNED IN"].map(String::from).to_vec()];
                rows.extend(
                    operators.iter().map(|o| vec![o.name.clone(), o.created_at.clone(), o.sessions.to_string()]),
                );
                print_table(&rows);
                Ok(())
            })
            .await
        }
        OperatorCommand::Remove { name } => {
            with_store(home, async |kernel| {
                kernel.auth().remove_operator(&name).await?;
                let done = format!("operator `{name}` removed and signed out");
                record(kernel, "operator.remove", &name, done.clone()).await?;
                println!("{done}");
                Ok(())
            })
            .await
        }
        OperatorCommand::Passwd { name, password_stdin } => {
            let password = password_from_stdin(password_stdin)?;
            with_store(home, async |kernel| {
                kernel.auth().set_password(&name, &password).await?;
                let done = format!("operator `{name}` has a new password and is signed out everywhere");
                record(kernel, "operator.passwd", &name, done.clone()).await?;
                println!("{done}");
                Ok(())
            })
            .await
        }
    }
}

/// A password from the first line of standard input: never from the command line, where
/// every user of the machine can read it (`ps`, shell history).
fn password_from_stdin(asked: bool) -> anyhow::Result<String> {
    if !asked {
        bail!("pass --password-stdin and send the password on standard input");
    }
    let mut password = String::new();
    std::io::stdin().lock().read_line(&mut password).context("cannot read the password from standard input")?;
    Ok(password.trim_end_matches(['\r', '\n']).to_string())
}

async fn tokens(kernel: &Kernel, cmd: TokenCommand) -> anyhow::Result<()> {
    match cmd {
        TokenCommand::Create { name } => {
            let secret = kernel.auth().create_token(&name).await?;
            record(kernel, "token.create", &name, format!("Token `{name}` created.")).await?;
            println!("{secret}");
        }
        TokenCommand::Revoke { name } => {
            kernel.auth().revoke_token(&name).await?;
            record(kernel, "token.revoke", &name, format!("token `{name}` revoked")).await?;
            println!("token `{name}` revoked");
        }
        TokenCommand::List { json } => {
            let tokens = kernel.auth().list_tokens().await?;
            if json {
                return print_json(&tokens);
            }
            for t in tokens {
                println!("{}\t{}", t.name, t.created_at);
            }
        }
    }
    Ok(())
}

/// Opens the home's store, runs `command` on it and closes it (whatever the outcome).
async fn with_store<T>(home: &Path, command: impl AsyncFnOnce(&Kernel) -> anyhow::Result<T>) -> anyhow::Result<T> {
    let kernel = open(home).await?;
    let outcome = command(&kernel).await;
    kernel.close().await;
    outcome
}

/// Prints `value` as pretty JSON (what `--json` gives). JSON writes the controls U+0080 to
/// U+009F as they are (a terminal reads U+009B as an escape sequence's start); they are
/// written as `\u` escapes instead, which is the same JSON.
fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut json = serde_json::to_string_pretty(value)?;
    if json.chars().any(|c| ('\u{80}'..='\u{9f}').contains(&c)) {
        json = json
            .chars()
            .map(|c| if ('\u{80}'..='\u{9f}').contains(&c) { format!("\\u{:04x}", c as u32) } else { c.to_string() })
            .collect();
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{json}")?;
    Ok(())
}

/// Prints rows as columns padded to their widest cell (the first row is the heading).
fn print_table(rows: &[Vec<String>]) {
    let rows: Vec<Vec<String>> =
        rows.iter().map(|r| r.iter().map(|cell| terminal_safe(cell).into_owned()).collect()).collect();
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = std::io::stdout().lock();
    for row in &rows {
        let last = row.len().saturating_sub(1);
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, cell)| if i == last { cell.clone() } else { format!("{cell:<w$}", w = widths[i]) })
            .collect();
        let _ = writeln!(out, "{}", line.join("  "));
    }
}

/// `text` safe to write to a terminal: what agents write (replies, tool results, type
/// descriptions) is untrusted, and an escape sequence in it could retitle the window, write
/// the clipboard or redraw what the person sees. Every control character but line break and
/// tab is shown as its `\u{…}` escape instead.
pub(crate) fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return text.into();
    }
    text.chars()
        .map(|c| if unsafe_char(c) { format!("\\u{{{:x}}}", c as u32) } else { c.to_string() })
        .collect::<String>()
        .into()
}

/// An agent as a person named it on the command line, checked to be a name or an id before
/// it goes into a URL path (so `..` or `a/b` can never reach another route).
fn agent_ref(text: &str) -> anyhow::Result<&str> {
    if kennel_kernel::agent::is_valid_name(text) || uuid::Uuid::parse_str(text).is_ok() {
        Ok(text)
    } else {
        bail!("`{}` is neither an agent's name nor its id: {}", terminal_safe(text), kennel_kernel::agent::NAME_RULE)
    }
}

/// A change made from the command line, in the operator-action log (as `cli`: whoever can run
/// it can read the home's database, so there is no one more exact to name).
async fn record(kernel: &Kernel, action: &str, subject: &str, detail: String) -> anyhow::Result<()> {
    let new = kennel_kernel::actions::NewAction {
        actor: kennel_kernel::tool::Caller::Cli.audit_label(),
        action: action.into(),
        subject: Some(subject.into()),
        outcome: "ok".into(),
        detail: Some(detail),
    };
    Ok(kernel.actions().record(new).await?)
}

async fn open(home: &Path) -> anyhow::Result<Kernel> {
    Ok(Kernel::open(home).await?)
}

async fn start(home: PathBuf, bind: Option<SocketAddr>) -> anyhow::Result<()> {
    init_logging();
    refuse_inspection();
    // Held until the process ends: a second daemon on this home stops here, before it opens
    // anything of the first's.
    let _one_daemon = daemon::lock_home(&home)?;
    let mut phases = kennel_kernel::startup::Phases::begin_at(*crate::STARTED.get_or_init(std::time::Instant::now));
    phases.mark("command line, runtime, lock");
    let kernel = Kernel::open_timing(&home, phases).await?;
    let mut phases = kernel.opening();
    let addr = bind.unwrap_or(kernel.config().server.bind);
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    let metrics_listener = match kernel.config().metrics.listen {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr} ([metrics] listen in config.toml)"))?,
        ),
        None => None,
    };
    phases.mark("socket");
    // Written before `/healthz` answers, so a script or CLI command that waits for the daemon
    // finds its address and token.
    let announced = daemon::announce(&home, local, kernel.started_at(), &kernel.auth().issue_cli_token())?;
    phases.mark("announce");
    let first_run = kernel.auth().operator_count().await? == 0;
    let served = crate::app::serve(kernel, listener, metrics_listener, phases, move || {
        // One line on stdout that scripts (and our tests) can wait for: every route answers
        // from here. Logs go to stderr. A closed stdout (nobody waits) is no reason to stop.
        let mut stdout = std::io::stdout();
        let _ = writeln!(stdout, "kennel listening on http://{local}").and_then(|()| stdout.flush());
        if first_run {
            let setup = format!("http://{}/setup", daemon::reachable(local));
            let _ = writeln!(stdout, "no operator yet: open {setup} on this machine to create the first one")
                .and_then(|()| stdout.flush());
        }
    })
    .await;
    drop(announced);
    served
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let mut filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    // chromiumoxide warns of every DevTools event it has no type for (`…ExtraInfo`, several a
    // page): noise, unless asked for by name. Kennel logs the browser's own troubles itself.
    if !std::env::var("RUST_LOG").is_ok_and(|v| v.contains("chromiumoxide")) {
        filter = filter.add_directive("chromiumoxide=error".parse().expect("a fixed, valid directive"));
    }
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(|| LossyStderr).init();
}

/// Standard error for the daemon's log, where a line nobody can read any more (the pipe's
/// reader is gone: the terminal or supervisor that started the daemon) is dropped. A failed
/// write would be reported by tracing-subscriber with `eprintln!`, which panics on the same
/// closed pipe, and the release build stops on a panic: the log must not end the daemon.
struct LossyStderr;

impl Write for LossyStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = std::io::stderr().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_never_reach_the_terminal() {
        assert_eq!(terminal_safe("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(terminal_safe("\x1b]0;owned\x07red\r"), "\\u{1b}]0;owned\\u{7}red\\u{d}");
        assert_eq!(terminal_safe("c1 \u{9b}31m"), "c1 \\u{9b}31m");
    }

    #[test]
    fn only_names_and_ids_go_into_a_path() {
        assert!(agent_ref("helper-2").is_ok());
        assert!(agent_ref("01900000-0000-7000-8000-000000000000").is_ok());
        for bad in ["..", ".", "a/b", "../tokens?x=1#y", "Helper", "é", ""] {
            assert!(agent_ref(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn json_output_escapes_the_c1_controls_and_means_the_same() {
        let value = serde_json::json!({"description": "a\u{9b}31mb"});
        let mut written = serde_json::to_string_pretty(&value).unwrap();
        assert!(written.contains('\u{9b}'), "serde_json writes it raw");
        written = written.replace('\u{9b}', "\\u009b");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&written).unwrap(), value);
    }
}
