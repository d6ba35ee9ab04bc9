//! The sandbox `process_start` runs a command in (bubblewrap, as script tools run): the
//! agent's workspace read-write at `/workspace`, the system's programs and libraries
//! read-only, a private `/tmp` and a fresh `HOME` outside the workspace (both gone when the
//! command ends), nothing of `$KENNEL_HOME` or another agent's workspace, its own PID
//! namespace (its first process gone, the kernel ends every other, however deep the tree),
//! its own session, and no network unless `[exec_policy] network` keeps the host's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the agent's workspace appears inside.
pub(crate) const WORKSPACE: &str = "/workspace";
/// The command's `HOME`: an empty folder on the sandbox's own file system, so nothing the
/// agent writes to its workspace (`.gitconfig`, `.cargo/config.toml`, Python's user site)
/// configures the programs it runs.
pub(crate) const HOME: &str = "/home/agent";

/// One command to run inside.
pub(super) struct Jail<'a> {
    pub workspace: &'a Path,
    /// The folder to start in, relative to the workspace (`.` for its top).
    pub cwd: &'a str,
    pub env: &'a BTreeMap<String, String>,
    pub network: bool,
    /// More host folders to show read-only (`[exec_policy] read_only`).
    pub read_only: &'a [PathBuf],
    pub line: &'a str,
}

/// Bubblewrap's arguments for `jail`, the command last.
pub(super) fn arguments(jail: &Jail<'_>) -> Vec<String> {
    let mut args = crate::script::sandbox::system_binds(jail.network);
    args.extend(["--unshare-all", "--die-with-parent", "--new-session", "--clearenv"].map(String::from));
    if jail.network {
        args.push("--share-net".into());
    }
    for folder in jail.read_only {
        let folder = folder.display().to_string();
        args.extend(["--ro-bind-try".into(), folder.clone(), folder]);
    }
    args.extend(["--bind".into(), jail.workspace.display().to_string(), WORKSPACE.into()]);
    args.extend(["--tmpfs", "/home", "--dir", HOME].map(String::from));
    let cwd = if jail.cwd == "." { WORKSPACE.to_string() } else { format!("{WORKSPACE}/{}", jail.cwd) };
    args.extend(["--chdir".into(), cwd]);
    for (name, value) in jail.env {
        args.extend(["--setenv".into(), name.clone(), value.clone()]);
    }
    args.extend(["--", "/bin/sh", "-c"].map(String::from));
    args.push(jail.line.to_string());
    args
}
