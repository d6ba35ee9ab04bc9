//! The network of a sandbox that may have one (`[exec_policy] network = true`, or a script
//! tool's `network = true`): not the host's, but a Unix socket of the daemon's, bound into
//! the sandbox, behind which the address guard's proxy (`net::proxy`, the one the browser goes
//! through) checks every request against `[exec_policy] allowed_hosts` and `blocked_hosts`.
//! Inside, `relay.rs` listens on the sandbox's own loopback and is the command's
//! `HTTP(S)_PROXY`; a program that ignores the proxy reaches nothing.

use std::path::{Path, PathBuf};

use tokio::net::{TcpStream, UnixListener};
use tokio::task::JoinHandle;

use crate::error::Result;
use crate::net::proxy::{GuardProxy, ProxyRules};

/// The port the relay listens on inside each sandbox.
pub(crate) const PROXY_PORT: u16 = 3128;
/// Where the daemon's socket and the relay (the daemon's own binary) appear inside.
pub(crate) const INSIDE_SOCKET: &str = "/run/kennel/proxy.sock";
pub(crate) const INSIDE_BINARY: &str = "/run/kennel/kennel";

/// The daemon's side: the socket, and the proxy behind it.
pub(crate) struct SandboxNetwork {
    socket: PathBuf,
    _proxy: GuardProxy,
    accept: JoinHandle<()>,
}

impl SandboxNetwork {
    /// Listens on `socket` (made afresh, owner-only) and starts the proxy with `rules`;
    /// `reserved` are loopback ports no request may reach whatever the rules say (the
    /// daemon's own API).
    pub async fn start(socket: PathBuf, rules: ProxyRules, reserved: &[u16]) -> Result<SandboxNetwork> {
        if let Some(parent) = socket.parent() {
            std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700).create(parent)?;
        }
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket)?;
        let proxy = GuardProxy::start(rules).await?;
        for port in reserved {
            proxy.reserve(*port);
        }
        let upstream = proxy.addr();
        let accept = tokio::spawn(async move {
            while let Ok((mut inside, _)) = listener.accept().await {
                tokio::spawn(async move {
                    if let Ok(mut proxy) = TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut inside, &mut proxy).await;
                    }
                });
            }
        });
        Ok(SandboxNetwork { socket, _proxy: proxy, accept })
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for SandboxNetwork {
    fn drop(&mut self) {
        self.accept.abort();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// The variables that point a sandbox's programs at the relay: `HTTP(S)_PROXY` in both
/// spellings and `ALL_PROXY`, with no exceptions.
pub(crate) fn proxy_environment() -> Vec<(String, String)> {
    let proxy = format!("http://127.0.0.1:{PROXY_PORT}");
    let mut env: Vec<(String, String)> =
        ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"]
            .into_iter()
            .map(|name| (name.to_string(), proxy.clone()))
            .collect();
    env.extend([("NO_PROXY".to_string(), String::new()), ("no_proxy".to_string(), String::new())]);
    env
}

/// Bubblewrap's arguments that show the daemon's own binary inside, read-only, at
/// [`INSIDE_BINARY`] (the relay, and the command's launcher `exec.rs`).
pub(crate) fn binary_inside() -> Result<Vec<String>> {
    let binary = std::env::current_exe()?;
    Ok(vec!["--ro-bind".into(), binary.display().to_string(), INSIDE_BINARY.into()])
}

/// Bubblewrap's arguments that give a sandbox this network (with [`binary_inside`]): the
/// socket bound in, the proxy variables set, and `command` run by the relay.
pub(crate) fn arguments(socket: &Path, command: &[String]) -> Vec<String> {
    let mut args: Vec<String> = vec!["--ro-bind".into(), socket.display().to_string(), INSIDE_SOCKET.into()];
    for (name, value) in proxy_environment() {
        args.extend(["--setenv".into(), name, value]);
    }
    args.extend(["--".into(), INSIDE_BINARY.into(), super::relay::ARG.into(), INSIDE_SOCKET.into()]);
    args.push(PROXY_PORT.to_string());
    args.extend(command.iter().cloned());
    args
}
