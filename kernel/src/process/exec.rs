//! `kennel __exec FD`: what a child's sandbox (or bare supervisor) runs while it waits for
//! its command. The daemon makes the sandbox ahead of the agent's next `process_start`, the
//! part of a start that costs (bubblewrap's namespaces and mounts, about 5 ms here); the call
//! then only writes its [`Spec`] to descriptor `FD`, and this reads it to the end, moves to
//! its folder, sets its environment (nothing else of its own) and becomes `/bin/sh -c LINE`.
//!
//! Like the supervisor, it runs before any runtime and does nothing else.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

use serde::{Deserialize, Serialize};

/// The argument that turns `kennel` into the waiting command (never shown in `--help`).
pub const ARG: &str = "__exec";
/// The descriptor the spec arrives on.
pub(crate) const SPEC_FD: i32 = 3;

/// What one `process_start` runs: its folder (as the sandbox sees it), its whole environment
/// and its command line.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Spec {
    pub cwd: String,
    pub env: BTreeMap<String, String>,
    pub line: String,
}

/// Reads the spec from the descriptor `args[0]` and executes it; returns only on failure.
pub fn main(args: &[String]) -> ExitCode {
    let Some(fd) = args.first().and_then(|fd| fd.parse::<i32>().ok()).filter(|fd| *fd > 2) else {
        eprintln!("kennel {ARG}: usage: kennel {ARG} FD (a sandbox runs this)");
        return ExitCode::from(127);
    };
    // SAFETY: the descriptor was handed to this process for it alone; it is closed when read.
    let mut source = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut bytes = Vec::new();
    let read = source.read_to_end(&mut bytes);
    drop(source);
    if read.is_err() || bytes.is_empty() {
        // A sandbox made ahead and never used: nothing to run.
        return ExitCode::SUCCESS;
    }
    let spec: Spec = match serde_json::from_slice(&bytes) {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("kennel {ARG}: the daemon's spec is unreadable: {e}");
            return ExitCode::from(127);
        }
    };
    let error =
        Command::new("/bin/sh").arg("-c").arg(&spec.line).env_clear().envs(&spec.env).current_dir(&spec.cwd).exec();
    eprintln!("kennel: cannot start the command in {}: {error}", spec.cwd);
    ExitCode::from(127)
}
