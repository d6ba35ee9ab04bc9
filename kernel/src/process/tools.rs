//! The five `process_*` tools (spec §10). Every one works on the calling agent's own
//! children: another agent's process id is not found.

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Signal, StartRequest};
use crate::error::{Error, Result};
use crate::family::Services;
use crate::process::Processes;
use crate::tool::{CallContext, NoArgs, Registry, Tool, ToolDef};
use crate::workspace::Workspaces;

const FAMILY: &str = "process";
const DEFAULT_POLL_BYTES: usize = 8192;
const MAX_POLL_BYTES: usize = 1 << 20;
const MAX_WRITE_BYTES: usize = 1 << 20;

/// What the process tools reach, taken from the kernel's services when they are registered.
#[derive(Clone)]
pub(super) struct Uses {
    processes: Arc<Processes>,
    workspaces: Arc<Workspaces>,
}

pub(super) fn register(r: &mut Registry, services: &Services) {
    let uses = Uses { processes: services.need(), workspaces: services.need() };
    r.add(Start(uses.clone()));
    r.add(Write(uses.clone()));
    r.add(List(uses.clone()));
    r.add(Poll(uses.clone()));
    r.add(Kill(uses));
}

fn def(name: &str, description: &str, tags: &[&str]) -> ToolDef {
    ToolDef::new(name, FAMILY, description).tags(tags)
}

fn to_value(value: impl serde::Serialize) -> Result<Value> {
    serde_json::to_value(value).map_err(Error::internal)
}
pub(super) struct Start(pub(super) Uses);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct StartArgs {
    /// One shell line, run by `sh -c` (pipes and `&&` work unless `[exec_policy]
    /// allowed_commands` is set).
    command: String,
    /// A folder of your workspace to start in (default: its top).
    cwd: Option<String>,
    /// Variables to set, on top of a minimal base (`PATH`, `HOME`, `LANG`…). Variables that
    /// load code or configure programs from elsewhere (`LD_*`, `GIT_CONFIG_*`, `PYTHON*`…) are
    /// refused.
    #[serde(default)]
    env: BTreeMap<String, String>,
}

impl Tool for Start {
    type Args = StartArgs;

    fn def(&self) -> ToolDef {
        def(
            "process_start",
            "Start a long-running command (a build watcher, a test loop, a server) in your workspace, \
             in a sandbox: your workspace is /workspace (the command starts there), the system is read-only, \
             /tmp and HOME are private and empty, and there is no network unless the operator allows it. \
             Returns its process_id at once; read its output with process_poll, feed it with process_write, \
             stop it with process_kill.",
            &["process", "shell", "command", "run", "exec", "spawn", "background", "subprocess"],
        )
    }

    async fn run(&self, ctx: CallContext, args: StartArgs) -> Result<Value> {
        let workspace = self.0.workspaces.dir(ctx.agent.id)?;
        let request = StartRequest { command: args.command, cwd: args.cwd, env: args.env };
        let p = self.0.processes.start(ctx.agent.id, workspace, request).await?;
        Ok(json!({ "process_id": p.process_id, "pgid": p.pgid, "cwd": p.cwd, "started_at": p.started_at }))
    }
}

pub(super) struct Write(pub(super) Uses);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WriteArgs {
    process_id: i64,
    /// Text for its standard input (add `\n` where it waits for a line).
    data: String,
    /// Close its input after this write (it then reads end of file).
    #[serde(default)]
    close: bool,
}

impl Tool for Write {
    type Args = WriteArgs;

    fn def(&self) -> ToolDef {
        def(
            "process_write",
            "Write text to the standard input of one of your processes; `close: true` ends its input.",
            &["process", "stdin", "input", "write", "send"],
        )
    }

    async fn run(&self, ctx: CallContext, args: WriteArgs) -> Result<Value> {
        if args.data.len() > MAX_WRITE_BYTES {
            return Err(Error::invalid(format!("at most {MAX_WRITE_BYTES} bytes per write")).with_field("data"));
        }
        let written = self.0.processes.write(ctx.agent.id, args.process_id, args.data.as_bytes(), args.close).await?;
        Ok(json!({ "process_id": args.process_id, "written_bytes": written, "input_closed": args.close }))
    }
}

pub(super) struct List(pub(super) Uses);

impl Tool for List {
    type Args = NoArgs;

    fn def(&self) -> ToolDef {
        def(
            "process_list",
            "Your processes: running ones, and those that ended in the last 15 minutes with how they ended.",
            &["process", "list", "running", "jobs", "ps"],
        )
        .read_only()
    }

    async fn run(&self, ctx: CallContext, _: NoArgs) -> Result<Value> {
        let processes: Vec<Value> = self
            .0
            .processes
            .list(ctx.agent.id)
            .into_iter()
            .map(|p| {
                json!({
                    "process_id": p.process_id, "command": p.command, "cwd": p.cwd, "pid": p.pid,
                    "age_secs": p.age_secs, "running": p.running, "exit": p.exit,
                })
            })
            .collect();
        Ok(json!({ "processes": processes }))
    }
}

pub(super) struct Poll(pub(super) Uses);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct PollArgs {
    process_id: i64,
    /// The most output to return, both streams together (default 8192, at most 1048576).
    #[schemars(range(min = 1, max = 1048576))]
    max_bytes: Option<usize>,
}

impl Tool for Poll {
    type Args = PollArgs;

    fn def(&self) -> ToolDef {
        def(
            "process_poll",
            "Output one of your processes wrote since your last poll (stdout and stderr apart), and its exit \
             once it ended. Never waits: call again for more (`more: true` says output is waiting).",
            &["process", "output", "stdout", "stderr", "read", "logs", "tail"],
        )
        .read_only()
    }

    async fn run(&self, ctx: CallContext, args: PollArgs) -> Result<Value> {
        let max = args.max_bytes.unwrap_or(DEFAULT_POLL_BYTES);
        if !(1..=MAX_POLL_BYTES).contains(&max) {
            return Err(Error::invalid(format!("max_bytes is 1 to {MAX_POLL_BYTES}")).with_field("max_bytes"));
        }
        to_value(self.0.processes.poll(ctx.agent.id, args.process_id, max)?)
    }
}

pub(super) struct Kill(pub(super) Uses);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct KillArgs {
    process_id: i64,
    /// The signal for its whole process group (default TERM). TERM, INT and QUIT are followed
    /// by KILL if it has not ended after the grace period; HUP, USR1 and USR2 are only sent.
    signal: Option<Signal>,
}

impl Tool for Kill {
    type Args = KillArgs;

    fn def(&self) -> ToolDef {
        def(
            "process_kill",
            "Stop one of your processes and everything it started (SIGTERM, then SIGKILL after a grace period), \
             or send it another signal. Returns how it ended.",
            &["process", "kill", "stop", "signal", "terminate"],
        )
    }

    async fn run(&self, ctx: CallContext, args: KillArgs) -> Result<Value> {
        let signal = args.signal.unwrap_or(Signal::Term);
        let view = self.0.processes.kill(ctx.agent.id, args.process_id, signal).await?;
        Ok(json!({ "process_id": view.process_id, "running": view.running, "exit": view.exit }))
    }
}
