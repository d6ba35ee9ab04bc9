//! How a script or extension tool runs: its arguments as JSON on stdin, its result on stdout,
//! inside bubblewrap when the daemon has it — the agent's workspace as the only writable
//! folder (and the only one of the daemon's), the tool's own folder read-only, the system's
//! programs and libraries read-only, a fresh `/tmp`, no network unless the manifest asks for
//! it (and then only the address guard's proxy: `process/network.rs`, as for processes), and
//! an environment of `PATH`, `HOME`, `LANG` and the tool's and agent's names only.
//! Wall-clock and output limits apply with or without it.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Child;

use super::manifest::Checked;
use crate::error::{Error, Result};

/// Where the agent's workspace and the tool's folder appear inside the sandbox.
const WORKSPACE: &str = "/workspace";
const TOOL_DIR: &str = "/tool";

/// What of stderr a failure message carries.
const STDERR_SHOWN: usize = 2000;

/// Whether tools run in bubblewrap here, decided once at start.
#[derive(Debug, Clone)]
pub enum Sandbox {
    Bubblewrap(PathBuf),
    /// Runs without one, and why: the Tools inspector says so on every such tool.
    None(String),
}

impl Sandbox {
    /// Bubblewrap if it is on `PATH` and can make a sandbox on this machine (a container may
    /// forbid the namespaces it needs).
    pub async fn detect() -> Sandbox {
        let Some(bwrap) = crate::tool::availability::find_on_path("bwrap") else {
            return Sandbox::None("runs without a sandbox: `bwrap` was not found on PATH (install bubblewrap)".into());
        };
        let probe = tokio::process::Command::new(&bwrap)
            .args(system_binds(false))
            .args(["--unshare-all", "--die-with-parent", "--", "/bin/sh", "-c", "exit 0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output();
        match tokio::time::timeout(Duration::from_secs(10), probe).await {
            Ok(Ok(out)) if out.status.success() => Sandbox::Bubblewrap(bwrap),
            Ok(Ok(out)) => Sandbox::None(format!(
                "runs without a sandbox: bubblewrap cannot make one here: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Ok(Err(e)) => Sandbox::None(format!("runs without a sandbox: cannot run bwrap: {e}")),
            Err(_) => Sandbox::None("runs without a sandbox: bwrap did not answer within 10 s".into()),
        }
    }

    /// What the Tools inspector says about it, when it is worth saying.
    pub fn note(&self) -> Option<String> {
        match self {
            Sandbox::Bubblewrap(_) => None,
            Sandbox::None(why) => Some(why.clone()),
        }
    }
}

/// The system's programs and libraries, read-only; merged-`/usr` links where the host has them.
/// The name service, DNS and TLS files only for a tool that keeps the network: each bind costs
/// bubblewrap about 0.1 ms, and a tool without a network has no use for them.
pub(crate) fn system_binds(network: bool) -> Vec<String> {
    const ALWAYS: &[&str] =
        &["/usr", "/etc/alternatives", "/etc/ld.so.cache", "/etc/localtime", "/etc/passwd", "/etc/group"];
    const NETWORK: &[&str] =
        &["/etc/nsswitch.conf", "/etc/hosts", "/etc/resolv.conf", "/etc/ssl/certs", "/etc/ca-certificates"];
    let mut args = Vec::new();
    for dir in ALWAYS.iter().chain(if network { NETWORK } else { &[] }) {
        args.extend(["--ro-bind-try".to_string(), dir.to_string(), dir.to_string()]);
    }
    for dir in ["/bin", "/sbin", "/lib", "/lib64", "/lib32"] {
        match std::fs::read_link(dir) {
            Ok(target) => args.extend(["--symlink".to_string(), target.display().to_string(), dir.to_string()]),
            Err(_) => args.extend(["--ro-bind-try".to_string(), dir.to_string(), dir.to_string()]),
        }
    }
    args.extend(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"].map(String::from));
    args
}

/// Who runs a tool, as its environment names them.
pub struct Run<'a> {
    pub tool: &'a str,
    pub agent: &'a str,
    pub workspace: &'a Path,
    pub folder: &'a Path,
    pub checked: &'a Checked,
    /// The daemon's socket to the address guard's proxy, for a tool with `network = true`.
    pub network: Option<&'a Path>,
}

/// A sandbox made ahead of its call: bubblewrap has made the namespaces and the mounts, the
/// part of a start that costs, and waits on `go` (its `--block-fd`) before it starts the tool.
/// Nothing of the tool runs before [`run`] is given it. Dropped unused, it is killed.
pub struct Ready {
    child: Child,
    go: std::io::PipeWriter,
    /// Whom it was made for: a renamed agent's old sandbox carries its old name.
    pub agent: String,
}

/// The descriptor bubblewrap waits on in a [`Ready`] sandbox.
const GO_FD: i32 = 3;

/// Makes a [`Ready`] sandbox for `run`'s next call, or `None` without bubblewrap (a tool run
/// without one starts at once anyway) or when it cannot be started.
pub fn prepare(sandbox: &Sandbox, run: &Run<'_>) -> Option<Ready> {
    let Sandbox::Bubblewrap(_) = sandbox else { return None };
    let (wait, go) = std::io::pipe().ok()?;
    let mut command = command(sandbox, run, true).ok()?;
    let wait_fd = wait.as_raw_fd();
    // SAFETY: between fork and exec this calls only dup2 and fcntl, which are async-signal-safe,
    // and touches no memory but its two integers.
    unsafe {
        command.pre_exec(move || {
            // The pipe is close-on-exec; its copy at GO_FD is not (a dup2 onto itself would keep
            // the flag, so clear it there).
            let ok = if wait_fd == GO_FD {
                libc::fcntl(GO_FD, libc::F_SETFD, 0) == 0
            } else {
                libc::dup2(wait_fd, GO_FD) == GO_FD
            };
            if ok { Ok(()) } else { Err(std::io::Error::last_os_error()) }
        });
    }
    let child =
        spawn(command).inspect_err(|e| tracing::debug!("cannot make a sandbox ahead for `{}`: {e}", run.tool)).ok()?;
    Some(Ready { child, go, agent: run.agent.to_string() })
}

impl Ready {
    /// Its process id, which tells one made-ahead sandbox from the next.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Lets the tool start, if the sandbox is still waiting for it.
    fn go(mut self) -> Option<Child> {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return None;
        }
        self.go.write_all(b"g").ok()?;
        Some(self.child)
    }
}

fn spawn(mut command: tokio::process::Command) -> std::io::Result<Child> {
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).kill_on_drop(true);
    command.spawn()
}

/// Runs the tool with `args` on stdin and reads its result: JSON if stdout is JSON, else the
/// text. A non-zero exit is a failed call with stderr's message. `ready` is a sandbox made
/// ahead for this call; without one (or if it has died) a sandbox is made now.
pub async fn run(sandbox: &Sandbox, run: Run<'_>, args: &Value, ready: Option<Ready>) -> Result<Value> {
    let manifest = &run.checked.manifest;
    let mut child = match ready.and_then(Ready::go) {
        Some(child) => child,
        None => spawn(command(sandbox, &run, false)?)
            .map_err(|e| Error::failed(format!("cannot start `{}`: {e}", run.tool)))?,
    };
    let pid = child.id();
    let input = serde_json::to_vec(args).map_err(Error::internal)?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let limit = manifest.max_output_bytes;
    // Stderr is read on its own: a tool stopped for too much output still holds it open.
    let stderr = tokio::spawn(async move {
        let mut err = Vec::new();
        let _ = (&mut stderr).take(64 * 1024).read_to_end(&mut err).await;
        err
    });
    let work = async {
        // A tool that exits without reading its input is not an error of ours.
        let write = async {
            let _ = stdin.write_all(&input).await;
            drop(stdin);
        };
        let mut out = Vec::new();
        let mut stdout = (&mut stdout).take(limit + 1);
        let (_, read_out) = tokio::join!(write, stdout.read_to_end(&mut out));
        read_out?;
        if out.len() as u64 > limit {
            return Ok::<_, std::io::Error>((None, out));
        }
        let status = child.wait().await?;
        Ok((Some(status), out))
    };
    let outcome = tokio::time::timeout(Duration::from_secs(manifest.timeout_secs), work).await;
    let kill = || {
        if let Some(pid) = pid {
            crate::process::kill_group(pid);
        }
    };
    let (status, out) = match outcome {
        Err(_) => {
            kill();
            return Err(Error::timeout(format!(
                "`{}` ran longer than its {} s (timeout_secs in its manifest) and was killed",
                run.tool, manifest.timeout_secs
            )));
        }
        Ok(Err(e)) => return Err(Error::failed(format!("`{}`: {e}", run.tool))),
        Ok(Ok(result)) => result,
    };
    let Some(status) = status else {
        kill();
        return Err(Error::exhausted(format!(
            "`{}` wrote more than its {limit} bytes of output (max_output_bytes in its manifest) and was killed",
            run.tool
        )));
    };
    if !status.success() {
        let err = stderr.await.unwrap_or_default();
        let how = match status.code() {
            Some(code) => format!("exited with status {code}"),
            None => "was killed by a signal".into(),
        };
        let message = String::from_utf8_lossy(&err);
        let message: String = message.trim().chars().take(STDERR_SHOWN).collect();
        let message = if message.is_empty() { "(nothing on stderr)".into() } else { message };
        return Err(Error::failed(format!("`{}` {how}: {message}", run.tool)));
    }
    let text = String::from_utf8_lossy(&out);
    Ok(serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.trim_end_matches('\n').to_string())))
}

/// The command that runs the tool: inside bubblewrap, or on its own in the workspace. With
/// `wait_for_go`, bubblewrap waits on [`GO_FD`] before it starts the tool.
fn command(sandbox: &Sandbox, run: &Run<'_>, wait_for_go: bool) -> Result<tokio::process::Command> {
    let relative = run.checked.executable.strip_prefix(run.folder).unwrap_or(&run.checked.executable);
    let env = [
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("LANG", "C.UTF-8"),
        ("KENNEL_TOOL", run.tool),
        ("KENNEL_AGENT", run.agent),
    ];
    match sandbox {
        Sandbox::Bubblewrap(bwrap) => {
            let mut c = tokio::process::Command::new(bwrap);
            c.args(system_binds(run.network.is_some()));
            c.args(["--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]);
            c.arg("--bind").arg(run.workspace).arg(WORKSPACE);
            c.arg("--ro-bind").arg(run.folder).arg(TOOL_DIR);
            c.args(["--chdir", WORKSPACE, "--setenv", "HOME", WORKSPACE]);
            for (key, value) in env {
                c.args(["--setenv", key, value]);
            }
            if wait_for_go {
                c.args(["--block-fd", &GO_FD.to_string()]);
            }
            let tool = Path::new(TOOL_DIR).join(relative).display().to_string();
            match run.network {
                Some(socket) => {
                    c.args(crate::process::network::binary_inside()?);
                    c.args(crate::process::network::arguments(socket, &[tool]));
                }
                None => {
                    c.arg("--").arg(tool);
                }
            }
            c.env_clear();
            Ok(c)
        }
        Sandbox::None(_) => {
            let mut c = tokio::process::Command::new(&run.checked.executable);
            c.env_clear().envs(env).env("HOME", run.workspace).current_dir(run.workspace);
            Ok(c)
        }
    }
}
