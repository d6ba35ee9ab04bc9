//! The sandbox `process_start` runs a command in (bubblewrap, as script tools run): the
//! agent's workspace read-write at `/workspace`, the system's programs and libraries
//! read-only, a private `/tmp` and a fresh `HOME` outside the workspace (both gone when the
//! command ends), nothing of `$KENNEL_HOME` or another agent's workspace, its own PID
//! namespace (its first process gone, the kernel ends every other, however deep the tree),
//! its own session, and a network namespace of its own: no network, or with `[exec_policy]
//! network` only the daemon's proxy through the address guard (`network.rs`).

use std::path::{Path, PathBuf};

use super::network;

/// Where the agent's workspace appears inside.
pub(crate) const WORKSPACE: &str = "/workspace";
/// The command's `HOME`: an empty folder on the sandbox's own file system, so nothing the
/// agent writes to its workspace (`.gitconfig`, `.cargo/config.toml`, Python's user site)
/// configures the programs it runs.
pub(crate) const HOME: &str = "/home/agent";

/// A sandbox to make.
pub(super) struct Jail<'a> {
    pub workspace: &'a Path,
    /// The daemon's socket to the address guard's proxy, when the child has a network.
    pub network: Option<&'a Path>,
    /// More host folders to show read-only (`[exec_policy] read_only`).
    pub read_only: &'a [PathBuf],
}

/// Bubblewrap's arguments for `jail`, whose first process is the daemon's binary waiting for
/// its command on [`super::exec::SPEC_FD`] (`exec.rs`), through the relay with a network.
/// The environment is the spec's alone (`--clearenv` here).
pub(super) fn arguments(jail: &Jail<'_>) -> crate::error::Result<Vec<String>> {
    let mut args = crate::script::sandbox::system_binds(jail.network.is_some());
    args.extend(["--unshare-all", "--die-with-parent", "--new-session", "--clearenv"].map(String::from));
    for folder in jail.read_only {
        let folder = folder.display().to_string();
        args.extend(["--ro-bind-try".into(), folder.clone(), folder]);
    }
    args.extend(["--bind".into(), jail.workspace.display().to_string(), WORKSPACE.into()]);
    args.extend(["--tmpfs", "/home", "--dir", HOME, "--chdir", WORKSPACE].map(String::from));
    args.extend(super::network::binary_inside()?);
    let waiting = [network::INSIDE_BINARY.to_string(), super::exec::ARG.into(), super::exec::SPEC_FD.to_string()];
    match jail.network {
        Some(socket) => args.extend(network::arguments(socket, &waiting)),
        None => {
            args.push("--".into());
            args.extend(waiting);
        }
    }
    Ok(args)
}

/// The folder a command starts in, as the sandbox shows it.
pub(super) fn inside_path(cwd: &str) -> String {
    if cwd == "." { WORKSPACE.to_string() } else { format!("{WORKSPACE}/{cwd}") }
}
