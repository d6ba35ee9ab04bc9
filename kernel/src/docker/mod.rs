//! The Docker family (spec §14): `docker_exec` runs a command in a running container the
//! operator listed in `[exec_policy] docker_allowlist`, through the engine's API on its Unix
//! socket (`[exec_policy] docker_socket`). Nothing touches the socket at daemon start: the
//! client is made on the first call, and an engine that is not there makes that call
//! `Unavailable`, not the daemon.
//!
//! # Design notes
//!
//! ## Layout
//!
//! Family `docker` (spec §14): `docker_exec` through `bollard` on the engine's Unix socket
//! (`[exec_policy] docker_socket`; the client is made on the first call, no engine is
//! `Unavailable`). The container must be in `[exec_policy] docker_allowlist` (checked before any
//! engine request) and be the running container of exactly that name (the engine also resolves id
//! prefixes); stdout and stderr bounded by `output_buffer_bytes` each, the call's timeout capped
//! by `wall_clock_secs`. Tested against `kennel_tests::fake_docker`, an engine on a Unix socket
//! speaking the exec endpoints and the multiplexed stream.

mod tools;

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use bollard::container::LogOutput;
use bollard::errors::Error as EngineError;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use futures_util::StreamExt;

pub(crate) use tools::register;

use crate::error::{Error, Result};
use crate::family::Family;

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family::tools_only("docker", register);

/// How long the engine has to answer one request. The output stream of a command is not one
/// answer: the call's own timeout bounds it.
const ANSWER_SECS: u64 = 30;

/// The Docker engine as this daemon reaches it.
pub(crate) struct Engine {
    socket: PathBuf,
    /// Made on the first call that gets that far; a failed attempt is not kept, so an engine
    /// started later is found by the next call.
    client: Mutex<Option<bollard::Docker>>,
}

/// What a command run in a container left behind.
pub(crate) struct Finished {
    pub exit_code: i64,
    pub stdout: Kept,
    pub stderr: Kept,
}

impl Engine {
    pub(crate) fn new(socket: PathBuf) -> Engine {
        Engine { socket, client: Mutex::new(None) }
    }

    fn client(&self) -> Result<bollard::Docker> {
        let mut held = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = held.as_ref() {
            return Ok(client.clone());
        }
        let path = self.socket.to_str().ok_or_else(|| self.unreachable("the path is not UTF-8"))?;
        let client = bollard::Docker::connect_with_unix(path, ANSWER_SECS, bollard::API_DEFAULT_VERSION)
            .map_err(|e| self.error(e))?;
        *held = Some(client.clone());
        Ok(client)
    }

    /// The id of the running container named exactly `name`. The engine resolves a
    /// reference as a full id, then an exact name, then an id *prefix*, so an allowlisted
    /// name that no container has could reach another container whose id starts with those
    /// letters: the container found must carry the name itself.
    pub(crate) async fn running_container(&self, name: &str) -> Result<String> {
        let found = self.client()?.inspect_container(name, None).await.map_err(|e| self.error(e))?;
        let id = found.id.unwrap_or_default();
        let actual = found.name.unwrap_or_default();
        if actual.strip_prefix('/') != Some(name) {
            return Err(Error::forbidden(format!(
                "no container is named `{name}`: the Docker engine resolved it to container `{}` (id {}), which is not in [exec_policy] docker_allowlist",
                actual.trim_start_matches('/'),
                id.get(..12).unwrap_or(&id),
            )));
        }
        let state = found.state.unwrap_or_default();
        if state.running != Some(true) {
            let status = state.status.map_or_else(|| "unknown".to_string(), |s| s.to_string());
            return Err(Error::conflict(format!(
                "container `{name}` is not running (its state: {status}); docker_exec runs commands only in a running container"
            )));
        }
        if id.is_empty() {
            return Err(Error::failed(format!("the Docker engine described container `{name}` without its id")));
        }
        Ok(id)
    }

    /// Runs `argv` in the container with output attached (no TTY, so stdout and stderr stay
    /// apart), keeping up to `bound` bytes of each, and waits for its exit code. The caller
    /// bounds the time: dropping this future closes the stream, but the engine has no call
    /// that stops an exec, so the command itself may go on.
    pub(crate) async fn exec(&self, container_id: &str, argv: Vec<String>, bound: usize) -> Result<Finished> {
        let client = self.client()?;
        let options = CreateExecOptions {
            attach_stdin: Some(false),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            tty: Some(false),
            cmd: Some(argv),
            ..Default::default()
        };
        let exec = client.create_exec(container_id, options).await.map_err(|e| self.error(e))?.id;
        let start = StartExecOptions { detach: false, tty: false, output_capacity: None };
        let StartExecResults::Attached { mut output, .. } =
            client.start_exec(&exec, Some(start)).await.map_err(|e| self.error(e))?
        else {
            return Err(Error::failed("the Docker engine started the command detached, without its output"));
        };
        let (mut stdout, mut stderr) = (Kept::new(bound), Kept::new(bound));
        // Read to the end even past the bound: a command blocked on a full pipe would never
        // finish, and the counts of what was dropped are part of the answer.
        while let Some(piece) = output.next().await {
            match piece.map_err(|e| self.error(e))? {
                LogOutput::StdOut { message } | LogOutput::Console { message } => stdout.push(&message),
                LogOutput::StdErr { message } => stderr.push(&message),
                LogOutput::StdIn { .. } => {}
            }
        }
        // The stream can end a moment before the engine records the exit.
        loop {
            let inspected = client.inspect_exec(&exec).await.map_err(|e| self.error(e))?;
            match (inspected.running, inspected.exit_code) {
                (Some(true), _) | (None, None) => tokio::time::sleep(Duration::from_millis(50)).await,
                (_, Some(exit_code)) => return Ok(Finished { exit_code, stdout, stderr }),
                (Some(false), None) => {
                    return Err(Error::failed("the Docker engine reports the command finished, without an exit code"));
                }
            }
        }
    }

    /// The engine's refusals as their kinds, with its own words; an engine that cannot be
    /// reached as `Unavailable`, saying where it was looked for.
    fn error(&self, e: EngineError) -> Error {
        match e {
            EngineError::DockerResponseServerError { status_code, message } => match status_code {
                404 => Error::not_found(format!("the Docker engine: {message}")),
                409 => Error::conflict(format!("the Docker engine: {message}")),
                _ => Error::failed(format!("the Docker engine answered {status_code}: {message}")),
            },
            EngineError::SocketNotFoundError(_) => self.unreachable("no such socket"),
            EngineError::HyperLegacyError { err } if err.is_connect() => self.unreachable(crate::net::root_cause(&err)),
            EngineError::IOError { err } => self.unreachable(err),
            EngineError::RequestTimeoutError => Error::timeout(format!(
                "the Docker engine at {} did not answer within {ANSWER_SECS} s",
                self.socket.display()
            )),
            other => Error::failed(format!("talking to the Docker engine: {}", crate::net::root_cause(&other))),
        }
    }

    fn unreachable(&self, cause: impl std::fmt::Display) -> Error {
        Error::unavailable(format!(
            "no Docker engine answers at {} ({cause}); start Docker, or point [exec_policy] docker_socket at its socket",
            self.socket.display()
        ))
    }
}

/// One stream's output: its first `limit` bytes, and how many more there were.
pub(crate) struct Kept {
    bytes: Vec<u8>,
    dropped: u64,
    limit: usize,
}

impl Kept {
    fn new(limit: usize) -> Kept {
        Kept { bytes: Vec::new(), dropped: 0, limit }
    }

    fn push(&mut self, piece: &[u8]) {
        let room = self.limit.saturating_sub(self.bytes.len()).min(piece.len());
        self.bytes.extend_from_slice(&piece[..room]);
        self.dropped += (piece.len() - room) as u64;
    }

    /// The kept bytes as text, and the count dropped. A character the bound cut in two is
    /// dropped whole; bytes that are not UTF-8 become U+FFFD.
    pub(crate) fn into_text(mut self) -> (String, u64) {
        if self.dropped > 0
            && let Err(e) = std::str::from_utf8(&self.bytes)
            && e.error_len().is_none()
        {
            self.dropped += (self.bytes.len() - e.valid_up_to()) as u64;
            self.bytes.truncate(e.valid_up_to());
        }
        (String::from_utf8_lossy(&self.bytes).into_owned(), self.dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::Kept;

    #[test]
    fn output_keeps_the_first_bytes_and_counts_the_rest() {
        let mut kept = Kept::new(10);
        kept.push(b"0123456");
        kept.push(b"789abc");
        kept.push(b"def");
        assert_eq!(kept.into_text(), ("0123456789".to_string(), 6));
        let mut under = Kept::new(10);
        under.push(b"short");
        assert_eq!(under.into_text(), ("short".to_string(), 0));
    }

    /// "é" is two bytes: a bound between them drops the whole character rather than
    /// answering half of it as U+FFFD.
    #[test]
    fn a_character_cut_by_the_bound_is_dropped_whole() {
        let mut kept = Kept::new(4);
        kept.push("abcé".as_bytes());
        assert_eq!(kept.into_text(), ("abc".to_string(), 2));
        // Not cut by the bound: output that is not UTF-8 is shown, not hidden.
        let mut binary = Kept::new(8);
        binary.push(&[b'a', 0xff, b'b']);
        assert_eq!(binary.into_text(), ("a\u{fffd}b".to_string(), 0));
    }
}
