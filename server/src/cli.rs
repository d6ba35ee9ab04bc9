//! The command line: `kennel start` runs the daemon; the other commands change the same
//! home directly (they work whether or not the daemon is running; a running daemon picks
//! their changes up within a fraction of a second).

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use kennel_kernel::Kernel;

#[derive(Parser)]
#[command(
    name = "kennel",
    version,
    about = "Kennel: an agent operating system — one daemon that runs AI agents, their tools and their dashboard."
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
    Start {
        /// Address to listen on; overrides `[server] bind` (default 127.0.0.1:4545). Port 0 picks a free port.
        #[arg(long, value_name = "ADDR")]
        bind: Option<SocketAddr>,
    },
    /// Manage operators: the people who sign in to the dashboard.
    #[command(subcommand)]
    Operator(OperatorCommand),
    /// Manage API tokens for scripts and automation.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Inspect agents and change their grants.
    #[command(subcommand)]
    Agent(AgentCommand),
}

#[derive(Subcommand)]
enum OperatorCommand {
    /// Add an operator; the password is read from the first line of standard input.
    Add {
        name: String,
        /// Read the password from standard input (required: passwords never go on the command line).
        #[arg(long)]
        password_stdin: bool,
    },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Create a token and print it. It is shown only this once; only its hash is stored.
    Create { name: String },
    /// Revoke a token; requests using it are refused from then on.
    Revoke { name: String },
    /// List token names and when they were made.
    List,
}

#[derive(Subcommand)]
enum AgentCommand {
    /// List agents: id, name, type, status, grants.
    List,
    /// Let an agent call the tools matching PATTERN (`system_time`, `memory_*`, `browser.*`).
    Grant { agent: String, pattern: String },
    /// Take back a grant pattern from an agent.
    Revoke { agent: String, pattern: String },
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
        Command::Operator(OperatorCommand::Add { name, password_stdin }) => {
            if !password_stdin {
                bail!("pass --password-stdin and send the password on standard input");
            }
            let mut password = String::new();
            std::io::stdin().lock().read_line(&mut password).context("cannot read the password from standard input")?;
            let password = password.trim_end_matches(['\r', '\n']);
            let kernel = open(&home).await?;
            kernel.auth().add_operator(&name, password).await?;
            record(&kernel, "operator.add", &name, format!("operator `{name}` added")).await?;
            println!("operator `{name}` added");
            kernel.close().await;
            Ok(())
        }
        Command::Token(cmd) => {
            let kernel = open(&home).await?;
            match cmd {
                TokenCommand::Create { name } => {
                    let secret = kernel.auth().create_token(&name).await?;
                    record(&kernel, "token.create", &name, format!("Token `{name}` created.")).await?;
                    println!("{secret}");
                }
                TokenCommand::Revoke { name } => {
                    kernel.auth().revoke_token(&name).await?;
                    record(&kernel, "token.revoke", &name, format!("token `{name}` revoked")).await?;
                    println!("token `{name}` revoked");
                }
                TokenCommand::List => {
                    for t in kernel.auth().list_tokens().await? {
                        println!("{}\t{}", t.name, t.created_at);
                    }
                }
            }
            kernel.close().await;
            Ok(())
        }
        Command::Agent(cmd) => {
            let kernel = open(&home).await?;
            match cmd {
                AgentCommand::List => {
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "ID\tNAME\tTYPE\tSTATUS\tGRANTS")?;
                    for a in kernel.agents().list() {
                        let grants: Vec<_> = a.manifest.capabilities.tools.iter().map(|g| g.as_str()).collect();
                        writeln!(out, "{}\t{}\t{}\t{:?}\t{}", a.id, a.name, a.agent_type, a.status, grants.join(","))?;
                    }
                }
                AgentCommand::Grant { agent, pattern } => {
                    let a = kernel.agents().grant(&agent, &pattern).await?;
                    let done = format!("agent `{}` may now call `{pattern}`", a.name);
                    record(&kernel, "agent.grant", &a.id.to_string(), done.clone()).await?;
                    println!("{done}");
                }
                AgentCommand::Revoke { agent, pattern } => {
                    let a = kernel.agents().revoke(&agent, &pattern).await?;
                    let done = format!("agent `{}` no longer has `{pattern}`", a.name);
                    record(&kernel, "agent.revoke", &a.id.to_string(), done.clone()).await?;
                    println!("{done}");
                }
            }
            kernel.close().await;
            Ok(())
        }
    }
}

/// A change made from the command line, in the operator-action log (as `cli`: whoever can run
/// it can read the home's database, so there is no one more exact to name).
async fn record(kernel: &Kernel, action: &str, subject: &str, detail: String) -> anyhow::Result<()> {
    let new = kennel_kernel::actions::NewAction {
        actor: "cli".into(),
        action: action.into(),
        subject: Some(subject.into()),
        outcome: "ok".into(),
        detail: Some(detail),
    };
    Ok(kernel.actions().record(new).await?)
}

async fn open(home: &std::path::Path) -> anyhow::Result<Kernel> {
    Ok(Kernel::open(home).await?)
}

async fn start(home: PathBuf, bind: Option<SocketAddr>) -> anyhow::Result<()> {
    init_logging();
    let kernel = open(&home).await?;
    kernel.start_background();
    let addr = bind.unwrap_or(kernel.config().server.bind);
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
    // One line on stdout that scripts (and our tests) can wait for; logs go to stderr.
    println!("kennel listening on http://{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    crate::app::serve(kernel, listener).await?;
    Ok(())
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(std::io::stderr).init();
}
