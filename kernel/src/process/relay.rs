//! The relay: `kennel __relay SOCKET PORT PROGRAM ARGS…`, the first process inside a sandbox
//! that has a network. The sandbox's network namespace has only its own loopback; the relay
//! listens on `127.0.0.1:PORT` there (the `HTTP_PROXY` the command is given) and carries each
//! connection to the daemon's Unix socket `SOCKET`, behind which the address guard's proxy
//! checks every request (`network.rs`). Nothing else leaves the namespace. It starts the
//! command, lets the signals meant for the command pass it by, and exits as the command did.
//!
//! Like the supervisor, it uses only the standard library and libc: no runtime.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitCode};

/// The argument that turns `kennel` into a relay (never shown in `--help`).
pub const ARG: &str = "__relay";

extern "C" fn ignore(_: libc::c_int) {}

/// Runs the relay for `args` (the socket, the port, then the program and its arguments).
pub fn main(args: &[String]) -> ExitCode {
    let [socket, port, program, rest @ ..] = args else {
        eprintln!("kennel {ARG}: usage: kennel {ARG} SOCKET PORT PROGRAM [ARGS…] (a sandbox runs this)");
        return ExitCode::from(127);
    };
    let listener = match port.parse::<u16>().map(|port| TcpListener::bind(("127.0.0.1", port))) {
        Ok(Ok(listener)) => listener,
        _ => {
            eprintln!("kennel {ARG}: cannot listen on 127.0.0.1:{port}");
            return ExitCode::from(127);
        }
    };
    // The group's signals are the command's: a handler (reset by `exec`) keeps the relay up
    // until the command has ended.
    // SAFETY: installs a no-op handler on this process before any other thread exists.
    unsafe {
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2] {
            libc::signal(signal, ignore as *const () as libc::sighandler_t);
        }
    }
    let socket = socket.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let socket = socket.clone();
            std::thread::spawn(move || carry(client, &socket));
        }
    });
    let status = match Command::new(program).args(rest).status() {
        Ok(status) => status,
        Err(e) => {
            eprintln!("kennel: cannot start `{program}`: {e}");
            return ExitCode::from(127);
        }
    };
    if let Some(signal) = status.signal() {
        return ExitCode::from(128 + signal.clamp(0, 127) as u8);
    }
    ExitCode::from(status.code().unwrap_or(128).clamp(0, 255) as u8)
}

/// Carries one connection both ways until each side has closed.
fn carry(client: TcpStream, socket: &str) {
    let Ok(daemon) = UnixStream::connect(socket) else { return };
    let (Ok(client_back), Ok(daemon_back)) = (client.try_clone(), daemon.try_clone()) else { return };
    let up = std::thread::spawn(move || copy(client, daemon, |d| d.shutdown(Shutdown::Write)));
    copy(daemon_back, client_back, |c| c.shutdown(Shutdown::Write));
    let _ = up.join();
}

fn copy<R: Read, W: Write>(mut from: R, mut to: W, close: impl FnOnce(&W) -> std::io::Result<()>) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = close(&to);
}
