//! Agents' subprocesses (spec §10, family `process`): long-running children an agent starts,
//! feeds, polls and stops.
//!
//! - Each child is `sh -c LINE` under a supervisor (`supervisor.rs`: `kennel __supervise`)
//!   that leads its process group and kills the whole group when the daemon goes away, however
//!   it goes (it waits on a pidfd of the daemon). Signals go to the group. A reaper at start (`reaper.rs`) kills groups an earlier
//!   run recorded that are still alive.
//! - The command runs in a sandbox (`sandbox.rs`: bubblewrap with the workspace, the system
//!   read-only, its own PID namespace, nothing of `$KENNEL_HOME`) unless `[exec_policy]
//!   sandbox = false`, in a control group of its own where one can be made (`cgroup.rs`:
//!   `max_processes`, `max_memory_mib`).
//! - A child starts in the agent's workspace (or a folder in it) with an environment built by
//!   `policy.rs`, never the daemon's own; `[exec_policy]` bounds its time, how many run at
//!   once and how much output is kept (`output.rs`).
//! - Output stays in memory; polls read what is new. Children end with their agent and with
//!   the daemon; an ended child stays listed (and pollable) for a while, then is forgotten.
//!
//! # Design notes
//!
//! ## Layout
//!
//! Agents' subprocesses (spec §10, family `process`): `Processes` (start under a supervisor, poll,
//! write, kill, `close_agent`, `shut_down`, `reap_left_running`), `supervisor.rs` (`kennel
//! __supervise`: the session leader between the daemon and the sandbox), `sandbox.rs`
//! (bubblewrap's arguments), `exec.rs` (`kennel __exec`: the sandbox made ahead waiting for its
//! command), `cgroup.rs` (a control group per child), `network.rs` + `relay.rs` (a sandbox's only
//! way out: the address guard's proxy), `reaper.rs` (`/proc` reading and the start-up reaper),
//! `policy.rs` (`[exec_policy]`: the command check and the built environment), `output.rs` (each
//! stream's bounded buffer and poll cursor), `store.rs` (`processes`), `tools.rs`. See
//! *Processes*.
//!
//! ## Processes
//!
//! - **Availability.** The five tools need only a `process.*` grant (the spec's gate: no section
//!   is required); `[exec_policy]` bounds what a granted agent runs. `read_only`: `process_list`
//!   and `process_poll` (a poll moves the agent's read cursor, bookkeeping like a search's
//!   access times); start, write and kill are audited durably.
//! - **Made ahead.** A start is two parts: the costly one (the supervisor's `exec`, then
//!   bubblewrap's namespaces and mounts, ~5 ms here) is made ahead of each agent's next
//!   `process_start` (`Prepared`, kept 60 s, killed with its agent or unused), and the sandbox's
//!   first process is `kennel __exec 3` (`exec.rs`), which waits on a pipe; `process_start`
//!   writes its `Spec` there (the folder as the sandbox shows it, the whole environment, the
//!   line) and `__exec` becomes `/bin/sh -c LINE`. The same path serves `sandbox = false` (the
//!   supervisor then runs `__exec` itself).
//! - **The supervisor.** A child is `/proc/self/exe __supervise DAEMON_PID [--cgroup
//!   PROCS]… [--max-address-space N] bwrap … -- kennel __exec 3` (the daemon's own binary,
//!   dispatched in `main` before any runtime starts, so it costs an `exec` and a few MiB, not a
//!   second daemon; `/proc/self/exe` still names the running binary after an upgrade replaced
//!   the file). It leads a new session (`setsid`: its own group, no controlling terminal a child
//!   could type into), so `pgid` = its pid; it is a child subreaper; it joins the child's
//!   control groups and sets the address-space limit before the command exists; signals meant
//!   for the group are caught by a no-op handler (reset by `exec`) and it waits for the command,
//!   kills what the command left behind, and exits as the command did, which is what `Exit`
//!   reports.
//! - **The sandbox** (`sandbox.rs`, issue 41). The command runs in bubblewrap: the workspace at
//!   `/workspace` read-write, the system read-only (`script::sandbox::system_binds`, shared with
//!   script tools), `[exec_policy] read_only` folders, a private `/tmp` and `HOME=/home/agent`
//!   on tmpfs, `--unshare-all` (its own PID, mount, IPC, UTS and network namespaces),
//!   `--new-session`, `--die-with-parent`. **A network** (`network = true`, or a script tool's
//!   manifest) is never the host's: the daemon listens on a Unix socket
//!   (`$KENNEL_HOME/run/sandbox-net-PID.sock`, `network.rs`) that forwards to a `GuardProxy`
//!   (the browser's proxy, with `[exec_policy] allowed_hosts`/`blocked_hosts`, the daemon's own
//!   port reserved); the socket and the daemon's binary are bound into the sandbox, and the
//!   first process inside is `kennel __relay` (`relay.rs`, std only), which listens on the
//!   namespace's own `127.0.0.1:3128`, carries each connection to the socket, and runs the
//!   command with `HTTP(S)_PROXY` pointing at it. The namespace has no other way out. Nothing of
//!   `$KENNEL_HOME` is mounted, so `cli.token` is the person's: no child can act as the CLI.
//!   Bubblewrap is probed at the first start (never at daemon start); without it
//!   `process_start` is `Unavailable`, saying why. **Ending the tree:** the command's group is
//!   the one bubblewrap's init (the PID namespace's first process, the supervisor's grandchild)
//!   leads; signals go to that group (init ignores them, the command gets them), and SIGKILL goes
//!   to init itself, after which the kernel kills everything in the namespace however deep
//!   (a `setsid` chain of 150 included: tested for `process_kill`, the wall clock, an agent
//!   stop and the daemon's `kill -9`). If the supervisor dies, `--die-with-parent` takes the
//!   namespace with it. Bubblewrap reports a command killed by a signal as exit code 128 + N,
//!   which the daemon reads back as that signal. `[exec_policy] sandbox = false` is the old
//!   behaviour (a child as the daemon's user, `cli.token` readable), warned about in the log at
//!   every start.
//! - **Limits** (`cgroup.rs`). Each child gets a control group where the daemon may make one —
//!   the hierarchy holding `pids` or `memory` for the daemon's own cgroup, v2 where its
//!   `cgroup.subtree_control` hands them down, v1 on a hybrid system (this CI machine, as root)
//!   — with `pids.max = max_processes` and the memory limit `max_memory_mib`; empty groups of
//!   earlier runs are swept at the first start. Group names start with a hash of the home
//!   (`kennel-proc-<home>-<child>`) and a daemon sweeps only its own: daemons of other homes
//!   share the folder, and a group is empty from its making until its supervisor joins it. Where no memory group can be made, the
//!   supervisor sets `RLIMIT_AS` instead. **Decision:** no `RLIMIT_NPROC` fallback: it counts
//!   every process of the daemon's user (and nothing for root), so as a per-child bound it
//!   would either fail the daemon's other work or bound nothing; without a pids group the
//!   count is unbounded, and the log and the README say so.
//! - **Dying with the daemon.** The supervisor gets the daemon's pid as its first argument,
//!   opens a pidfd of it (`pidfd_open`, then checks the daemon is still its parent, so the pidfd
//!   is the daemon's and not a later process's) and waits on it in a thread. When the daemon
//!   exits, however it exits, the pidfd turns readable and the supervisor SIGKILLs what the
//!   command started (in rounds: its group and what was re-parented to it) and then its group.
//!   Nothing a child can reach (no pipe, no file) fakes or blocks that; the supervisor is not
//!   dumpable, so its command cannot attach to it. Measured: no member of any child's group, and
//!   no `setsid` process it started, is left 2 s after `kill -9` (the test's bound; it takes a
//!   few ms). A stopped supervisor acts too: the daemon's death orphans its group, and the kernel
//!   sends a stopped orphaned group SIGHUP and SIGCONT. **The reaper** covers a supervisor
//!   killed while the daemon could not act: every child is a row of `processes` (run id, the
//!   daemon's pid and start time, pgid, the leader's start time in ticks, the boot id, and a
//!   `KENNEL_PROCESS` marker the child gets in its environment) written before `process_start`
//!   answers; at start, rows of runs whose daemon no longer runs are closed, and their group is
//!   SIGKILLed when it is certainly the one recorded (the leader alive with the recorded start
//!   time, or the leader gone and a member carrying the marker).
//! - **Signals and pid reuse.** A child's group is signalled only while the daemon has not yet
//!   reaped its supervisor (`Child::reaped`, set the moment it is: the supervisor's pid, which is
//!   the group id, cannot be reused before that). `process_kill` sends TERM by default; TERM,
//!   INT and QUIT are followed past `kill_grace_secs` by SIGKILL to every member but the
//!   supervisor (which then kills the leftovers and exits; the whole group only if it has not
//!   within 2 s), and the call answers with the exit; HUP, USR1, USR2 are only sent.
//!   Stopping an agent TERMs (then KILLs) its children without waiting; the daemon's shutdown
//!   gives them 1 s.
//! - **Policy** (`policy.rs`). The environment is built, never inherited: `PATH`, `LANG`,
//!   `LC_ALL`, `TZ` from the daemon, `HOME=/home/agent` and `TMPDIR=/tmp` (the sandbox's),
//!   `TERM=dumb`, the
//!   daemon variables `pass_env` names, then the call's `env`. `secret_env` globs (default
//!   `*_API_KEY`, `*_TOKEN`, `*_SECRET`, `*PASSWORD*`) plus every provider's `api_key_env`, the
//!   media providers' and `[a2a.tokens]` are never given: in `pass_env` they are a config error,
//!   in a call's `env` `Forbidden`. The daemon marks itself not dumpable (`PR_SET_DUMPABLE 0` in
//!   `kennel start`), so a child of an unprivileged daemon cannot read its keys from
//!   `/proc/PID/environ` either. `cwd` is an existing folder of the workspace
//!   (`workspace::folder_inside`: the workspace path rules, links resolved and kept inside).
//!   The call's `env` may never set what loads code into a program or configures it from
//!   elsewhere (`policy::loads_code`: `LD_*`, `GIT_*` but the identity variables, `PYTHON*`,
//!   `PERL5*`, `RUBY*`, `CARGO_*`, `NODE_OPTIONS`, `BASH_ENV`, `HOME`, `TMPDIR`…); with
//!   `allowed_commands`, nor `PATH`. `allowed_commands` compares the line's first word
//!   exactly (a name, never a path) and, when set, refuses anything but plain ASCII with spaces
//!   and tabs and shell control characters (`; & | \` $ < > ( )` and line breaks). It narrows
//!   which programs start, not what they do (`git -c alias.x='!cmd' x`): the sandbox is the
//!   boundary.
//! - **Output.** Each stream has its own buffer of `output_buffer_bytes` (oldest dropped; the poll
//!   reports `stdout_dropped_bytes`/`stderr_dropped_bytes` since the last poll) and a read
//!   cursor; `process_poll` returns what is new, at most `max_bytes` shared between the streams
//!   so a busy stdout cannot hide stderr, cut at a whole UTF-8 character. A child counts as ended
//!   only when its pipes are read to the end, so a poll that sees the exit has seen all output.
//!   Output lives in memory; an ended child stays listed (and pollable) for 15 minutes, at most
//!   32 per agent (an agent's removal forgets its ended ones). Starts are serialised from the
//!   `max_children` count to the child's entry, and run on a task of their own, so a cancelled
//!   call never leaves a child unrecorded. `[exec_policy] wall_clock_secs` stops a child (TERM, then KILL) that runs too
//!   long (`reason: "wall_clock"`); `max_children` running per agent, else `ResourceExhausted`.
//! - **Fronts.** `GET /api/agents/{id}/processes`, `GET …/processes/{process_id}`,
//!   `POST …/processes/{process_id}/kill` (recorded as `process.kill`), and the agent's
//!   **Processes** page (`/agents/{id}/processes`): command, state, the last 4 KiB of each stream
//!   and a Kill button.
//!
//! ## Tests
//!
//! - Processes: `tests/tests/system/processes.rs` (poll increments with the streams apart, stdin
//!   and its end, kill escalation for a group that ignores SIGTERM, HUP only sent, the wall-clock
//!   budget and the output bound, the built environment with the daemon's secrets absent, the
//!   gates, no group member left after the agent stops, within 2 s of `kill -9`, or — through
//!   the reaper at the next start — after the supervisor itself was killed); `process::output`,
//!   `policy` and `reaper` unit tests; `scripts/bench-process`.
//! - Containment (issue 41): `tests/tests/system/containment.rs` (each attack of the issue
//!   through the real path: the home and other workspaces out of a child's sight, `setsid`
//!   chains 150 deep ended by kill, wall clock, agent stop and `kill -9`, a fork bomb under
//!   `max_processes`, git aliases under `allowed_commands`, networks only through the guard for
//!   processes and script tools, a folder swapped for a link during 1,200 writes, a planted
//!   hard link, and the same as an unprivileged daemon); `workspace` unit tests (the swap race
//!   over 3,000 rounds, hard links); `browser::pipe`'s bridge test; the STUN canvas in
//!   `end2end/tests/sandbox.spec.ts`.

mod cgroup;
pub(crate) mod config;
pub mod exec;
pub(crate) mod network;
mod output;
mod policy;
pub(crate) mod reaper;
pub mod relay;
mod sandbox;
pub use config::ExecPolicyConfig;
pub(crate) use policy::base_environment;
mod store;
pub mod supervisor;
mod tools;

use std::collections::{BTreeMap, HashMap};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::ChildStdin;
use tokio::sync::watch;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::agent::AgentId;
use crate::config::Config;
use crate::db::{self, Db};
use crate::error::{Error, Result};
use crate::family::{Family, Home};
use output::Stream;
use policy::Policy;
use reaper::Recorded;

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "process",
    open: |s| {
        s.provide(Processes::new(s.get::<Db>().clone(), s.config(), s.get::<Home>().path()));
        Ok(())
    },
    register: tools::register,
};

/// An ended child stays listed and pollable this long, so its last output and exit are seen.
const KEEP_ENDED: Duration = Duration::from_secs(15 * 60);
/// The most ended children kept per agent (the oldest forgotten first).
const MAX_ENDED_PER_AGENT: usize = 32;
/// How long a write to a child's input may wait for the child to read.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a sandbox made ahead waits for its agent's next start before it is killed.
const KEEP_READY: Duration = Duration::from_secs(60);
/// How long the daemon's shutdown gives children after SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);
/// What the dashboard shows of each stream.
const TAIL_BYTES: usize = 4096;
/// The variable every child gets with a value of its own: the reaper's proof that a group
/// whose supervisor is gone is the one recorded.
pub(crate) const MARKER: &str = "KENNEL_PROCESS";

/// How a child ended.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Exit {
    /// The exit code, when it exited by itself.
    pub code: Option<i32>,
    /// The signal that ended it (`TERM`, `KILL`, …), when one did.
    pub signal: Option<String>,
    /// Why: `exited`, `killed` (process_kill or an operator), `wall_clock` (`[exec_policy]
    /// wall_clock_secs`), `agent_stopped`, `daemon_stopped`.
    pub reason: String,
    /// When (RFC 3339).
    pub ended_at: String,
}

/// A child as lists and the dashboard show it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProcessView {
    pub process_id: i64,
    pub command: String,
    /// Its folder, relative to the agent's workspace (`.` for the top).
    pub cwd: String,
    /// The command's own process id, while it runs.
    pub pid: Option<i32>,
    /// Its process group (signals go to all of it).
    pub pgid: i32,
    pub started_at: String,
    pub age_secs: u64,
    pub running: bool,
    pub exit: Option<Exit>,
    /// The last few KiB of each stream, whatever the agent's polls read.
    pub stdout_tail: String,
    pub stderr_tail: String,
}

/// What `process_poll` returns.
#[derive(Debug, Serialize)]
pub struct Poll {
    pub process_id: i64,
    pub running: bool,
    pub stdout: String,
    pub stderr: String,
    /// Output dropped (`[exec_policy] output_buffer_bytes`) before this poll could read it.
    #[serde(skip_serializing_if = "is_zero")]
    pub stdout_dropped_bytes: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub stderr_dropped_bytes: u64,
    /// Unread output remains: poll again.
    pub more: bool,
    pub exit: Option<Exit>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The signals `process_kill` sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Signal {
    #[serde(alias = "SIGTERM")]
    Term,
    #[serde(alias = "SIGINT")]
    Int,
    #[serde(alias = "SIGQUIT")]
    Quit,
    #[serde(alias = "SIGKILL")]
    Kill,
    #[serde(alias = "SIGHUP")]
    Hup,
    #[serde(alias = "SIGUSR1")]
    Usr1,
    #[serde(alias = "SIGUSR2")]
    Usr2,
}

impl Signal {
    fn number(self) -> i32 {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Int => libc::SIGINT,
            Signal::Quit => libc::SIGQUIT,
            Signal::Kill => libc::SIGKILL,
            Signal::Hup => libc::SIGHUP,
            Signal::Usr1 => libc::SIGUSR1,
            Signal::Usr2 => libc::SIGUSR2,
        }
    }

    /// A signal meant to end the process (SIGKILL follows the others past the grace period).
    /// HUP and the user signals are messages (reload, rotate logs) and are only sent.
    fn ends(self) -> bool {
        matches!(self, Signal::Term | Signal::Int | Signal::Quit | Signal::Kill)
    }
}

/// Kills every process of group `pgid` (a child this daemon started with its own group: a
/// script tool's sandbox, an MCP server).
pub(crate) fn kill_group(pgid: u32) {
    // SAFETY: kill only sends a signal, to a group the caller started and has not reaped.
    unsafe {
        libc::kill(-(pgid as i32), libc::SIGKILL);
    }
}

fn signal_name(number: i32) -> String {
    match number {
        libc::SIGTERM => "TERM",
        libc::SIGINT => "INT",
        libc::SIGQUIT => "QUIT",
        libc::SIGKILL => "KILL",
        libc::SIGHUP => "HUP",
        libc::SIGUSR1 => "USR1",
        libc::SIGUSR2 => "USR2",
        libc::SIGPIPE => "PIPE",
        libc::SIGSEGV => "SEGV",
        libc::SIGABRT => "ABRT",
        libc::SIGALRM => "ALRM",
        _ => return number.to_string(),
    }
    .to_string()
}

/// What `process_start` asks for, checked by the service.
pub struct StartRequest {
    pub command: String,
    /// A folder of the workspace; `None` for its top.
    pub cwd: Option<String>,
    pub env: BTreeMap<String, String>,
}

/// The subprocess service.
pub struct Processes {
    db: Db,
    policy: Policy,
    limits: ExecPolicyConfig,
    /// This daemon run (rows of other runs are the reaper's).
    run_id: String,
    /// This daemon's pid and start time, recorded with each child: the reaper leaves the
    /// children of a daemon still running on the same home alone.
    owner: Recorded,
    children: Mutex<HashMap<i64, Arc<Child>>>,
    /// Bubblewrap, probed at the first start (`None`: `[exec_policy] sandbox = false`).
    sandbox: tokio::sync::OnceCell<Option<crate::script::sandbox::Sandbox>>,
    /// Where children's control groups are made, found at the first start.
    cgroups: std::sync::OnceLock<cgroup::Place>,
    /// A sandbox made ahead for each agent that started a process in the last [`KEEP_READY`].
    ready: Mutex<HashMap<AgentId, Prepared>>,
    /// The proxy sandboxes with a network reach, started by the first that needs it.
    network: tokio::sync::OnceCell<network::SandboxNetwork>,
    /// Where its socket goes (`$KENNEL_HOME/run/`), and the daemon's own port it never reaches.
    home: PathBuf,
    api_port: u16,
    /// Held from the count against `max_children` until the child is in `children`, so
    /// concurrent starts cannot pass the count together.
    starting: tokio::sync::Mutex<()>,
}

struct Child {
    id: i64,
    agent: AgentId,
    command: String,
    cwd: String,
    pgid: libc::pid_t,
    /// Runs in the sandbox: its command is in the group the PID namespace's first process
    /// leads, not the supervisor's.
    sandboxed: bool,
    /// Its control groups, removed once it ended.
    groups: Mutex<Option<cgroup::Groups>>,
    started_at: String,
    started: Instant,
    output: Mutex<Output>,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    /// Set the moment the daemon reaped the supervisor: from then on its group id may be
    /// another's, and no signal is sent to it.
    reaped: AtomicBool,
    /// Set (with its exit) once the child is reaped and its output read to the end.
    ended: watch::Sender<Option<Exit>>,
    /// Why it is being stopped, set before the first signal of a stop.
    stopping: Mutex<Option<&'static str>>,
}

struct Output {
    stdout: Stream,
    stderr: Stream,
    ended_at: Option<Instant>,
}

impl Child {
    fn exit(&self) -> Option<Exit> {
        self.ended.borrow().clone()
    }

    /// The first process of the sandbox's PID namespace (bubblewrap's init, the supervisor's
    /// grandchild), which leads the command's group; `None` unsandboxed or before it exists.
    fn namespace_init(&self) -> Option<libc::pid_t> {
        if !self.sandboxed {
            return None;
        }
        reaper::first_child(reaper::first_child(self.pgid)?)
    }

    /// Signals the command's group, unless its supervisor was reaped (its group id may then be
    /// another's). In the sandbox that is the group inside (the namespace's init ignores the
    /// signal, the command gets it); before the sandbox is up, the supervisor's group.
    fn signal(&self, signal: i32) {
        if !self.reaped.load(Ordering::Acquire) {
            let group = self.namespace_init().unwrap_or(self.pgid);
            // SAFETY: a signal to the group of a supervisor this daemon has not reaped (whose
            // pid, the group's id, cannot be reused until it is), or of its grandchild, which
            // cannot be reused before its parent reaps it.
            unsafe {
                libc::kill(-group, signal);
            }
        }
    }

    /// Ends the command and everything it started, leaving the supervisor to report. In the
    /// sandbox: SIGKILL to the namespace's first process, after which the kernel kills every
    /// other process in it, however deep. Without: SIGKILL to every member of the group but
    /// the supervisor, which then kills what the command left (a `setsid` process re-parented
    /// to it included) and exits; a KILL to the whole group would kill the supervisor first
    /// and leave those behind.
    fn kill_command(&self) {
        if self.reaped.load(Ordering::Acquire) {
            return;
        }
        if let Some(init) = self.namespace_init() {
            // SAFETY: the supervisor's grandchild, not yet reaped by its parent (see above).
            unsafe {
                libc::kill(init, libc::SIGKILL);
            }
            return;
        }
        for pid in reaper::members(self.pgid).into_iter().filter(|&p| p != self.pgid) {
            // SAFETY: a member of a group whose leader is not reaped; a member's pid cannot be
            // reused before its parent (in the group) reaps it.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }

    async fn wait_ended(&self, within: Duration) -> Option<Exit> {
        let mut ended = self.ended.subscribe();
        let _ = tokio::time::timeout(within, ended.wait_for(Option::is_some)).await;
        self.exit()
    }

    /// Sends `signal`; for one that ends the process, SIGKILL follows after `grace`. Returns
    /// the exit, once it ended.
    async fn stop(&self, signal: Signal, grace: Duration, reason: &'static str) -> Option<Exit> {
        self.stopping.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(reason);
        self.signal(signal.number());
        if !signal.ends() {
            return self.exit();
        }
        if signal != Signal::Kill && self.wait_ended(grace).await.is_some() {
            return self.exit();
        }
        self.kill_command();
        if self.wait_ended(Duration::from_secs(2)).await.is_some() {
            return self.exit();
        }
        self.signal(libc::SIGKILL);
        self.wait_ended(Duration::from_secs(3)).await
    }

    fn view(&self) -> ProcessView {
        let exit = self.exit();
        let output = self.output.lock().unwrap_or_else(|e| e.into_inner());
        ProcessView {
            process_id: self.id,
            command: self.command.clone(),
            cwd: self.cwd.clone(),
            pid: match (&exit, self.namespace_init()) {
                (Some(_), _) => None,
                (None, Some(init)) => reaper::first_child(init),
                (None, None) if self.sandboxed => None,
                (None, None) => reaper::first_child(self.pgid),
            },
            pgid: self.pgid,
            started_at: self.started_at.clone(),
            age_secs: self.started.elapsed().as_secs(),
            running: exit.is_none(),
            exit,
            stdout_tail: output.stdout.tail(TAIL_BYTES),
            stderr_tail: output.stderr.tail(TAIL_BYTES),
        }
    }
}

/// A supervisor (and in it, with the sandbox, bubblewrap) started ahead of its command,
/// waiting for it on a pipe (`exec.rs`). Dropped unused, its whole group is killed.
struct Prepared {
    spawned: Option<tokio::process::Child>,
    pgid: libc::pid_t,
    marker: String,
    groups: Option<cgroup::Groups>,
    spec: Option<std::io::PipeWriter>,
    sandboxed: bool,
}

impl Prepared {
    /// Still waiting for its command (not ended while it waited).
    fn is_waiting(&mut self) -> bool {
        self.spawned.as_mut().is_some_and(|s| matches!(s.try_wait(), Ok(None)))
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if let Some(mut spawned) = self.spawned.take() {
            // SAFETY: the group of a supervisor this value started and has not reaped.
            unsafe {
                libc::kill(-self.pgid, libc::SIGKILL);
            }
            // Reaped in the background, so no zombie is left (outside a runtime, at the end
            // of the process, there is nothing left to reap it for).
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move { spawned.wait().await });
            }
        }
    }
}

/// Places the spec pipe's reading end at [`exec::SPEC_FD`] in the forked supervisor, where
/// it stays open across `exec` (and bubblewrap's) for `kennel __exec`.
fn place_spec_fd(fd: i32) -> std::io::Result<()> {
    // SAFETY: dup2 and fcntl on the forked child's own descriptors.
    let ok = unsafe {
        if fd == exec::SPEC_FD {
            libc::fcntl(fd, libc::F_SETFD, 0) == 0
        } else {
            libc::dup2(fd, exec::SPEC_FD) == exec::SPEC_FD
        }
    };
    if ok { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

impl Processes {
    /// The supervisor's options that bound the child `marker`'s tree, and its control groups:
    /// a cgroup where one can be made; the address-space limit where no memory group can.
    fn limits_for(&self, marker: &str) -> Result<(Vec<String>, Option<cgroup::Groups>)> {
        let place = self.cgroups.get_or_init(cgroup::Place::find);
        let memory = self.limits.max_memory_mib * 1024 * 1024;
        let groups = place
            .make(&format!("{}{marker}", cgroup::prefix_for(&self.home)), self.limits.max_processes, memory)
            .map_err(|e| Error::internal(format!("making a child's control group: {e}")))?;
        let mut options = Vec::new();
        for procs in groups.iter().flat_map(cgroup::Groups::procs_files) {
            options.extend(["--cgroup".to_string(), procs.display().to_string()]);
        }
        if !place.limits_memory() {
            options.extend(["--max-address-space".to_string(), memory.to_string()]);
        }
        Ok((options, groups))
    }

    pub(crate) fn new(db: Db, config: &Config, home: &std::path::Path) -> Processes {
        Processes {
            db,
            policy: Policy::new(config),
            limits: config.exec_policy.clone(),
            run_id: Uuid::now_v7().to_string(),
            owner: reaper::this_process(),
            children: Mutex::default(),
            sandbox: tokio::sync::OnceCell::new(),
            cgroups: std::sync::OnceLock::new(),
            ready: Mutex::default(),
            network: tokio::sync::OnceCell::new(),
            home: home.to_path_buf(),
            api_port: config.server.bind.port(),
            starting: tokio::sync::Mutex::new(()),
        }
    }

    /// The daemon's socket to the address guard's proxy for sandboxes with a network (script
    /// tools' too), started by the first call.
    pub(crate) async fn sandbox_network(&self) -> Result<PathBuf> {
        let network = self
            .network
            .get_or_try_init(|| async {
                let socket = self.home.join("run").join(format!("sandbox-net-{}.sock", std::process::id()));
                let rules = crate::net::proxy::ProxyRules {
                    allowed: self.limits.allowed_hosts.clone(),
                    blocked: self.limits.blocked_hosts.clone(),
                    allowed_setting: "[exec_policy] allowed_hosts",
                    blocked_setting: "[exec_policy] blocked_hosts",
                };
                network::SandboxNetwork::start(socket, rules, &[self.api_port]).await
            })
            .await?;
        Ok(network.socket().to_path_buf())
    }

    /// Says at start, loudly, that children run unsandboxed (the daemon only).
    pub(crate) fn warn_if_unsandboxed(&self) {
        if !self.limits.sandbox {
            tracing::warn!(
                "[exec_policy] sandbox = false: agents' processes run as the daemon's user and can read everything it \
                 can, $KENNEL_HOME/cli.token included (so act as the operator's CLI)"
            );
        }
    }

    /// The bubblewrap that sandboxes children, probed once; `None` when `[exec_policy]
    /// sandbox = false`; `Unavailable` when it should and cannot.
    async fn bubblewrap(&self) -> Result<Option<PathBuf>> {
        use crate::script::sandbox::Sandbox;
        let sandbox = self
            .sandbox
            .get_or_init(|| async {
                let place = self.cgroups.get_or_init(cgroup::Place::find);
                cgroup::sweep(place, &cgroup::prefix_for(&self.home));
                if !self.limits.sandbox {
                    return None;
                }
                let detected = Sandbox::detect().await;
                tracing::info!(
                    "process tools: {}; {}",
                    detected.note().unwrap_or("bubblewrap".into()),
                    place.describe()
                );
                Some(detected)
            })
            .await;
        match sandbox {
            None => Ok(None),
            Some(Sandbox::Bubblewrap(bwrap)) => Ok(Some(bwrap.clone())),
            Some(Sandbox::None(why)) => Err(Error::unavailable(format!(
                "processes run in a sandbox ([exec_policy] sandbox = true) and there is none: {}",
                why.trim_start_matches("runs without a sandbox: ")
            ))),
        }
    }

    fn grace(&self) -> Duration {
        Duration::from_secs(self.limits.kill_grace_secs)
    }

    /// Starts `request.command` for `agent` in `workspace` (the agent's folder, already made).
    /// The child is started and recorded on a task of its own, so a call cancelled midway
    /// never leaves a child running unrecorded.
    pub async fn start(
        self: &Arc<Self>,
        agent: AgentId,
        workspace: PathBuf,
        request: StartRequest,
    ) -> Result<ProcessView> {
        self.policy.check_command(&request.command)?;
        let (cwd, folder) = match request.cwd.as_deref() {
            None | Some("" | ".") => (".".to_string(), workspace.clone()),
            Some(rel) => (rel.to_string(), crate::workspace::folder_inside(&workspace, rel)?),
        };
        let bwrap = self.bubblewrap().await?;
        let home = if bwrap.is_some() { PathBuf::from(sandbox::HOME) } else { workspace.clone() };
        let mut env = self.policy.environment(&home, &request.env, |name| std::env::var(name).ok())?;
        if bwrap.is_some() {
            env.insert("TMPDIR".into(), "/tmp".into());
            if self.limits.network {
                env.extend(network::proxy_environment());
            }
        }
        let inside = if bwrap.is_some() { sandbox::inside_path(&cwd) } else { folder.display().to_string() };
        let this = self.clone();
        let started = tokio::spawn(async move {
            let _one_at_a_time = this.starting.lock().await;
            this.forget_old();
            let running = this.children_of(agent).iter().filter(|c| c.exit().is_none()).count() as u64;
            if running >= this.limits.max_children {
                return Err(Error::exhausted(format!(
                    "this agent has {running} processes running, the most [exec_policy] max_children allows: stop one first (process_kill)"
                )));
            }
            let prepared = match this.take_ready(agent) {
                Some(ready) => ready,
                None => this.prepare(&workspace).await?,
            };
            env.insert(MARKER.into(), prepared.marker.clone());
            let spec = exec::Spec { cwd: inside, env, line: request.command };
            let started = this.spawn(agent, cwd, prepared, spec).await;
            this.prepare_next(agent, workspace);
            started
        });
        started.await.map_err(|e| Error::internal(format!("starting a process: {e}")))?
    }

    /// The sandbox made ahead for `agent`'s next start, if it is still waiting.
    fn take_ready(&self, agent: AgentId) -> Option<Prepared> {
        let mut ready = self.ready.lock().unwrap_or_else(|e| e.into_inner()).remove(&agent)?;
        ready.is_waiting().then_some(ready)
    }

    /// Makes `agent`'s next sandbox in the background, dropped (killed) after [`KEEP_READY`]
    /// without a start.
    fn prepare_next(self: &Arc<Self>, agent: AgentId, workspace: PathBuf) {
        let this = Arc::downgrade(self);
        tokio::spawn(async move {
            let Some(processes) = this.upgrade() else { return };
            let prepared = match processes.prepare(&workspace).await {
                Ok(prepared) => prepared,
                Err(e) => return tracing::debug!(error = %e, "making a sandbox ahead failed"),
            };
            let made = prepared.pgid;
            processes.ready.lock().unwrap_or_else(|e| e.into_inner()).insert(agent, prepared);
            drop(processes);
            tokio::time::sleep(KEEP_READY).await;
            if let Some(processes) = this.upgrade() {
                let mut ready = processes.ready.lock().unwrap_or_else(|e| e.into_inner());
                if ready.get(&agent).is_some_and(|r| r.pgid == made) {
                    ready.remove(&agent);
                }
            }
        });
    }

    /// Starts a supervisor (and in it the sandbox) for a command yet to come: everything of a
    /// start but the command, which [`Processes::spawn`] hands it.
    async fn prepare(&self, workspace: &std::path::Path) -> Result<Prepared> {
        let bwrap = self.bubblewrap().await?;
        let network = match (&bwrap, self.limits.network) {
            (Some(_), true) => Some(self.sandbox_network().await?),
            _ => None,
        };
        // What tells the reaper a group is this child's, should its supervisor be gone.
        let marker = Uuid::now_v7().to_string();
        let (options, groups) = self.limits_for(&marker)?;
        let waiting = [exec::ARG.to_string(), exec::SPEC_FD.to_string()];
        let mut command = match &bwrap {
            Some(bwrap) => {
                let jail = sandbox::Jail { workspace, network: network.as_deref(), read_only: &self.limits.read_only };
                supervisor::command(&options, &bwrap.display().to_string(), &sandbox::arguments(&jail)?)
            }
            // The supervisor's own binary, run as `/proc/self/exe` by the supervisor.
            None => supervisor::command(&options, "/proc/self/exe", &waiting),
        };
        let (spec_reader, spec_writer) = std::io::pipe()?;
        let reader_fd = std::os::fd::AsRawFd::as_raw_fd(&spec_reader);
        // SAFETY: between fork and exec this calls only dup2 and fcntl, which are
        // async-signal-safe, on the forked child's own descriptors.
        unsafe {
            command.pre_exec(move || place_spec_fd(reader_fd));
        }
        command
            .env_clear()
            .envs(crate::process::base_environment(|name| std::env::var(name).ok()))
            .env(MARKER, &marker)
            .current_dir(workspace)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(false);
        let spawned = command.spawn().map_err(|e| Error::failed(format!("cannot start the process: {e}")))?;
        drop(spec_reader);
        let pgid = spawned.id().map(|p| p as libc::pid_t).ok_or_else(|| Error::failed("the process ended at once"))?;
        Ok(Prepared {
            spawned: Some(spawned),
            pgid,
            marker,
            groups,
            spec: Some(spec_writer),
            sandboxed: bwrap.is_some(),
        })
    }

    /// Hands `prepared` its command and records the child. The spec goes through a pipe the
    /// sandbox reads once it is up; a sandbox that died meanwhile is a failed start.
    async fn spawn(
        self: &Arc<Self>,
        agent: AgentId,
        cwd: String,
        mut prepared: Prepared,
        spec: exec::Spec,
    ) -> Result<ProcessView> {
        let bytes = serde_json::to_vec(&spec).map_err(Error::internal)?;
        let mut writer = prepared.spec.take().expect("a prepared sandbox has its spec pipe");
        let fed = tokio::task::spawn_blocking(move || std::io::Write::write_all(&mut writer, &bytes)).await;
        if !matches!(fed, Ok(Ok(()))) {
            return Err(Error::failed("the process's sandbox ended before its command started"));
        }
        let mut spawned = prepared.spawned.take().expect("a prepared sandbox has its supervisor");
        let (pgid, line, marker) = (prepared.pgid, spec.line, prepared.marker.clone());
        let group = Recorded {
            pgid,
            start_ticks: reaper::stat(pgid).map(|s| s.start_ticks).unwrap_or(0),
            boot_id: reaper::boot_id(),
            marker,
        };
        let started_at = db::now();
        let row = store::NewRow {
            agent: &agent.to_string(),
            run_id: &self.run_id,
            owner: &self.owner,
            command: &line,
            cwd: &cwd,
            group: &group,
            started_at: &started_at,
        };
        let id = match store::insert(&self.db, row).await {
            Ok(id) => id,
            Err(e) => {
                // Unrecorded, it could outlive a crash unseen by the reaper: not run at all.
                // SAFETY: the group of the supervisor just spawned, not yet reaped.
                unsafe {
                    libc::kill(-pgid, libc::SIGKILL);
                }
                let _ = spawned.wait().await;
                return Err(e);
            }
        };
        let capacity = self.limits.output_buffer_bytes as usize;
        let child = Arc::new(Child {
            id,
            agent,
            command: line,
            cwd,
            pgid,
            sandboxed: prepared.sandboxed,
            groups: Mutex::new(prepared.groups.take()),
            started_at,
            started: Instant::now(),
            output: Mutex::new(Output { stdout: Stream::new(capacity), stderr: Stream::new(capacity), ended_at: None }),
            stdin: tokio::sync::Mutex::new(spawned.stdin.take()),
            reaped: AtomicBool::new(false),
            ended: watch::Sender::new(None),
            stopping: Mutex::new(None),
        });
        let readers = [
            spawned.stdout.take().map(|s| tokio::spawn(read_into(s, child.clone(), Pipe::Stdout))),
            spawned.stderr.take().map(|s| tokio::spawn(read_into(s, child.clone(), Pipe::Stderr))),
        ];
        self.children.lock().unwrap_or_else(|e| e.into_inner()).insert(id, child.clone());
        tokio::spawn(self.clone().supervise(spawned, child.clone(), readers.into_iter().flatten().collect()));
        Ok(child.view())
    }

    /// Waits for the child to end (or its wall-clock budget to run out), then records how.
    async fn supervise(
        self: Arc<Self>,
        mut spawned: tokio::process::Child,
        child: Arc<Child>,
        readers: Vec<tokio::task::JoinHandle<()>>,
    ) {
        let budget = Duration::from_secs(self.limits.wall_clock_secs);
        let status = tokio::select! {
            status = spawned.wait() => status,
            () = tokio::time::sleep(budget) => {
                let stopping = child.clone();
                let grace = self.grace();
                tokio::spawn(async move { stopping.stop(Signal::Term, grace, "wall_clock").await });
                spawned.wait().await
            }
        };
        child.reaped.store(true, Ordering::Release);
        let status = status.ok();
        drop(child.groups.lock().unwrap_or_else(|e| e.into_inner()).take());
        let (code, signal) = ended_how(status, child.sandboxed);
        // A supervisor killed on its own (or by the command) could not clean up: what is left of
        // its group goes now. A group with members keeps its id reserved, so this reaches no one else.
        if reaper::has_members(child.pgid) {
            // SAFETY: see above.
            unsafe {
                libc::kill(-child.pgid, libc::SIGKILL);
            }
        }
        // Everything the child wrote is read before it counts as ended (a poll that sees the
        // exit has seen all of its output); a pipe held open by an escaped process is let go.
        for reader in readers {
            let abort = reader.abort_handle();
            if tokio::time::timeout(Duration::from_secs(2), reader).await.is_err() {
                abort.abort();
            }
        }
        let reason = child.stopping.lock().unwrap_or_else(|e| e.into_inner()).unwrap_or("exited");
        let exit = Exit { code, signal: signal.map(signal_name), reason: reason.to_string(), ended_at: db::now() };
        let end = store::End { ended_at: &exit.ended_at, code: exit.code, signal, how: reason };
        if let Err(e) = store::finish(&self.db, child.id, end).await {
            tracing::warn!(process = child.id, error = %e, "recording a process's end failed");
        }
        child.output.lock().unwrap_or_else(|e| e.into_inner()).ended_at = Some(Instant::now());
        child.ended.send_replace(Some(exit));
    }

    fn children_of(&self, agent: AgentId) -> Vec<Arc<Child>> {
        let children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        let mut of: Vec<Arc<Child>> = children.values().filter(|c| c.agent == agent).cloned().collect();
        of.sort_by_key(|c| c.id);
        of
    }

    /// The agent's child `id`; another agent's is not found, as a missing one is.
    fn child(&self, agent: AgentId, id: i64) -> Result<Arc<Child>> {
        self.children
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .filter(|c| c.agent == agent)
            .cloned()
            .ok_or_else(|| {
                Error::not_found(format!("this agent has no process {id} (process_list shows its processes)"))
            })
    }

    /// Forgets ended children past [`KEEP_ENDED`], and each agent's beyond [`MAX_ENDED_PER_AGENT`].
    fn forget_old(&self) {
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        let mut ended: Vec<(AgentId, Instant, i64)> = children
            .values()
            .filter_map(|c| Some((c.agent, c.output.lock().unwrap_or_else(|e| e.into_inner()).ended_at?, c.id)))
            .collect();
        ended.sort_by_key(|(agent, at, _)| (*agent, std::cmp::Reverse(*at)));
        let mut kept: HashMap<AgentId, usize> = HashMap::new();
        for (agent, at, id) in ended {
            let n = kept.entry(agent).or_default();
            *n += 1;
            if *n > MAX_ENDED_PER_AGENT || at.elapsed() > KEEP_ENDED {
                children.remove(&id);
            }
        }
    }

    /// Forgets the ended children of an agent that was removed.
    pub fn forget_agent(&self, agent: AgentId) {
        self.ready.lock().unwrap_or_else(|e| e.into_inner()).remove(&agent);
        self.children.lock().unwrap_or_else(|e| e.into_inner()).retain(|_, c| c.agent != agent || c.exit().is_none());
    }

    /// How many children run now, every agent's.
    pub fn running(&self) -> usize {
        self.children.lock().unwrap_or_else(|e| e.into_inner()).values().filter(|c| c.exit().is_none()).count()
    }

    /// The agent's children: running ones and those ended recently, oldest first.
    pub fn list(&self, agent: AgentId) -> Vec<ProcessView> {
        self.forget_old();
        self.children_of(agent).iter().map(|c| c.view()).collect()
    }

    /// One of the agent's children.
    pub fn get(&self, agent: AgentId, id: i64) -> Result<ProcessView> {
        Ok(self.child(agent, id)?.view())
    }

    /// Output new since the last poll, at most `max_bytes` in all (shared between the two
    /// streams, so a busy stdout does not hide stderr).
    pub fn poll(&self, agent: AgentId, id: i64, max_bytes: usize) -> Result<Poll> {
        let child = self.child(agent, id)?;
        // Read the exit first: output after it is complete, so `running: false` with
        // `more: false` means everything was seen.
        let exit = child.exit();
        let mut output = child.output.lock().unwrap_or_else(|e| e.into_inner());
        let stderr_share = (output.stderr.unread() as usize).min(max_bytes / 2);
        let stdout = output.stdout.read(max_bytes - stderr_share);
        let stderr = output.stderr.read(max_bytes.saturating_sub(stdout.text.len()).max(stderr_share));
        Ok(Poll {
            process_id: id,
            running: exit.is_none(),
            stdout: stdout.text,
            stderr: stderr.text,
            stdout_dropped_bytes: stdout.dropped,
            stderr_dropped_bytes: stderr.dropped,
            more: stdout.more || stderr.more,
            exit,
        })
    }

    /// Writes `data` to the child's input; `close` then ends the input (the child reads end of file).
    pub async fn write(&self, agent: AgentId, id: i64, data: &[u8], close: bool) -> Result<usize> {
        let child = self.child(agent, id)?;
        if let Some(exit) = child.exit() {
            return Err(Error::conflict(format!("process {id} has ended ({})", describe(&exit))));
        }
        let mut stdin = child.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(Error::conflict(format!("process {id}'s input was closed (process_write with close)")));
        };
        let written = tokio::time::timeout(WRITE_TIMEOUT, async {
            pipe.write_all(data).await?;
            pipe.flush().await
        })
        .await;
        match written {
            Err(_) => {
                return Err(Error::timeout(format!(
                    "process {id} has not read its input for {} s: the write did not finish",
                    WRITE_TIMEOUT.as_secs()
                )));
            }
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                return Err(Error::conflict(format!("process {id} no longer reads its input (it closed it)")));
            }
            Ok(Err(e)) => return Err(Error::failed(format!("writing to process {id} failed: {e}"))),
            Ok(Ok(())) => {}
        }
        if close {
            stdin.take();
        }
        Ok(data.len())
    }

    /// Sends `signal` to the child's group; for an ending signal, waits for the end (SIGKILL
    /// after `[exec_policy] kill_grace_secs`). An ended child is answered as it is.
    pub async fn kill(&self, agent: AgentId, id: i64, signal: Signal) -> Result<ProcessView> {
        let child = self.child(agent, id)?;
        if child.exit().is_none() {
            child.stop(signal, self.grace(), "killed").await;
        }
        Ok(child.view())
    }

    /// Stops the agent's children (its agent stopped). Returns at once; they get SIGTERM, and
    /// SIGKILL past the grace period.
    pub fn close_agent(&self, agent: AgentId) {
        self.ready.lock().unwrap_or_else(|e| e.into_inner()).remove(&agent);
        for child in self.children_of(agent).into_iter().filter(|c| c.exit().is_none()) {
            let grace = self.grace();
            tokio::spawn(async move { child.stop(Signal::Term, grace, "agent_stopped").await });
        }
    }

    /// Stops every child (the daemon is shutting down): SIGTERM, then SIGKILL a second later.
    pub async fn shut_down(&self) {
        self.ready.lock().unwrap_or_else(|e| e.into_inner()).clear();
        let running: Vec<Arc<Child>> = self
            .children
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|c| c.exit().is_none())
            .cloned()
            .collect();
        let stops =
            running.into_iter().map(|c| async move { c.stop(Signal::Term, SHUTDOWN_GRACE, "daemon_stopped").await });
        futures_util::future::join_all(stops).await;
    }

    /// Kills the groups an earlier run recorded as running and closes their rows.
    pub(crate) async fn reap_left_running(&self) -> Result<usize> {
        let mut killed = 0;
        for (id, group, owner) in store::left_running(&self.db, &self.run_id).await? {
            if reaper::is_alive(&owner) {
                // Another daemon on this home runs it (a second `kennel start`): its own.
                continue;
            }
            let reaped = reaper::reap(&group);
            killed += usize::from(reaped);
            store::close_left(&self.db, id, &db::now(), if reaped { "reaped" } else { "daemon_stopped" }).await?;
        }
        Ok(killed)
    }
}

/// The exit code or the signal that ended a child. Bubblewrap passes a signal that ended
/// the command on as the exit code 128 + its number (as a shell does), so in the sandbox
/// such a code is read as that signal.
fn ended_how(status: Option<std::process::ExitStatus>, sandboxed: bool) -> (Option<i32>, Option<i32>) {
    match (status.and_then(|s| s.code()), status.and_then(|s| s.signal())) {
        (Some(code @ 129..=192), None) if sandboxed => (None, Some(code - 128)),
        (code, signal) => (code, signal),
    }
}

/// Which of a child's output pipes a reader reads.
#[derive(Clone, Copy)]
enum Pipe {
    Stdout,
    Stderr,
}

async fn read_into(mut pipe: impl AsyncRead + Unpin, child: Arc<Child>, which: Pipe) {
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n @ 1..) = pipe.read(&mut buf).await {
        let mut output = child.output.lock().unwrap_or_else(|e| e.into_inner());
        match which {
            Pipe::Stdout => output.stdout.push(&buf[..n]),
            Pipe::Stderr => output.stderr.push(&buf[..n]),
        }
    }
}

/// A process id as a path or form gives it: a whole number, else `InvalidArguments` naming
/// `process_id` (never the router's own plain-text refusal).
pub fn parse_id(raw: &str) -> Result<i64> {
    raw.parse().map_err(|_| Error::invalid("not a process id (a whole number)").with_field("process_id"))
}

/// "exit code 0", "killed by TERM": how a message names an exit.
pub fn describe(exit: &Exit) -> String {
    match (&exit.signal, exit.code) {
        (Some(signal), _) => format!("ended by SIG{signal}, {}", exit.reason.replace('_', " ")),
        (None, Some(code)) => format!("exit code {code}"),
        (None, None) => exit.reason.replace('_', " "),
    }
}

/// Starts the reaper (the daemon only: a CLI command must not touch the daemon's children).
pub(crate) fn start(processes: Arc<Processes>) {
    processes.warn_if_unsandboxed();
    tokio::spawn(async move {
        match processes.reap_left_running().await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(groups = n, "killed process groups an earlier run of the daemon left running"),
            Err(e) => tracing::warn!(error = %e, "reaping processes of an earlier run failed"),
        }
    });
}
