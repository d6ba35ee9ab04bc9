//! Family `docker`: `docker_exec`.

use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Engine;
use crate::error::{Error, Result};
use crate::family::Services;
use crate::process::ExecPolicyConfig;
use crate::tool::{CallContext, Registry, Tool, ToolDef};

const DEFAULT_TIMEOUT_SECS: u64 = 60;
const MAX_TIMEOUT_SECS: u64 = 3600;

/// Always registered: the grant and the allowlist are the gates, and whether an engine runs
/// is known only by asking it.
pub(crate) fn register(r: &mut Registry, services: &Services) {
    let config = services.config();
    r.add(DockerExec::new(&config.exec_policy));
}

/// `docker_exec(container, command, timeout_secs?)`.
pub struct DockerExec {
    engine: Engine,
    allowlist: Vec<String>,
    /// `[exec_policy] output_buffer_bytes`, per stream.
    bound: usize,
    wall_clock_secs: u64,
}

impl DockerExec {
    pub fn new(policy: &ExecPolicyConfig) -> DockerExec {
        DockerExec {
            engine: Engine::new(policy.docker_socket.clone()),
            allowlist: policy.docker_allowlist.clone(),
            bound: usize::try_from(policy.output_buffer_bytes).unwrap_or(usize::MAX),
            wall_clock_secs: policy.wall_clock_secs,
        }
    }

    fn allowed(&self, container: &str) -> Result<()> {
        if self.allowlist.iter().any(|name| name == container) {
            return Ok(());
        }
        let listed = if self.allowlist.is_empty() {
            "it lists none, so docker_exec may use no container".to_string()
        } else {
            format!("it lists {}", self.allowlist.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "))
        };
        Err(Error::forbidden(format!(
            "container `{container}` is not in [exec_policy] docker_allowlist ({listed}); an operator adds it there"
        )))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DockerExecArgs {
    /// The container's name, exactly as `[exec_policy] docker_allowlist` lists it.
    pub container: String,
    /// What to run: a string is a shell command line, run as `sh -c COMMAND`; an array is a
    /// program and its arguments, run as they are, without a shell.
    pub command: Command,
    /// How long to wait for the command to finish, in seconds (1 to 3600, default 60, never
    /// beyond `[exec_policy] wall_clock_secs`).
    #[schemars(range(min = 1, max = 3600))]
    pub timeout_secs: Option<u64>,
}

/// A command line for `sh`, or a program with its arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Command {
    /// A shell command line.
    Line(String),
    /// The program, then its arguments.
    Argv(Vec<String>),
}

impl Command {
    /// The program and arguments the engine runs. A NUL is refused here: no argument can
    /// carry one, and the engine's own refusal says less.
    fn argv(self) -> Result<Vec<String>> {
        const NUL: &str = "a NUL character, which no argument can carry";
        match self {
            Command::Line(line) if crate::text::is_blank(&line) => {
                Err(Error::invalid("an empty command line").with_field("command"))
            }
            Command::Line(line) if line.contains('\0') => Err(Error::invalid(NUL).with_field("command")),
            Command::Line(line) => Ok(vec!["sh".into(), "-c".into(), line]),
            Command::Argv(argv) if argv.first().is_none_or(|program| program.is_empty()) => {
                Err(Error::invalid("an array starting with the program's name").with_field("command"))
            }
            Command::Argv(argv) => match argv.iter().position(|a| a.contains('\0')) {
                Some(at) => Err(Error::invalid(NUL).with_field(&format!("command[{at}]"))),
                None => Ok(argv),
            },
        }
    }
}

impl Tool for DockerExec {
    type Args = DockerExecArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "docker_exec",
            "docker",
            "Run a command in a running Docker container the operator allowed; returns its exit code, stdout and stderr.",
        )
        .tags(&["docker", "container", "exec", "shell", "command", "run"])
    }

    async fn run(&self, _ctx: CallContext, args: DockerExecArgs) -> Result<Value> {
        let argv = args.command.argv()?;
        let asked = args.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
        if !(1..=MAX_TIMEOUT_SECS).contains(&asked) {
            return Err(Error::invalid("from 1 to 3600 seconds").with_field("timeout_secs"));
        }
        let timeout_secs = asked.min(self.wall_clock_secs);
        // Before the engine hears anything of this call.
        self.allowed(&args.container)?;

        let started = Instant::now();
        // One deadline for the whole call, looking up the container included.
        let deadline = tokio::time::Instant::from_std(started) + Duration::from_secs(timeout_secs);
        let capped = if timeout_secs < asked { " ([exec_policy] wall_clock_secs)" } else { "" };
        let id = tokio::time::timeout_at(deadline, self.engine.running_container(&args.container))
            .await
            .map_err(|_| {
                Error::timeout(format!(
                    "the Docker engine did not describe container `{}` within {timeout_secs} s{capped}; nothing was run",
                    args.container
                ))
            })??;
        let finished = tokio::time::timeout_at(deadline, self.engine.exec(&id, argv, self.bound)).await.map_err(|_| {
            Error::timeout(format!(
                "the command in container `{}` did not finish within {timeout_secs} s{capped}; it may still be running there: the Docker API cannot stop a command it started",
                args.container
            ))
        })??;
        let (stdout, stdout_dropped_bytes) = finished.stdout.into_text();
        let (stderr, stderr_dropped_bytes) = finished.stderr.into_text();
        Ok(json!({
            "container": args.container,
            "exit_code": finished.exit_code,
            "stdout": stdout,
            "stderr": stderr,
            "stdout_dropped_bytes": stdout_dropped_bytes,
            "stderr_dropped_bytes": stderr_dropped_bytes,
            "duration_ms": started.elapsed().as_millis() as u64,
        }))
    }
}
