//! The supervisor: `kennel __supervise PROGRAM ARGS…`, the small process between the daemon
//! and an agent's command. It leads the command's process group, so a signal for the group
//! reaches everything the command started, and it is what makes children die with the daemon
//! even when the daemon cannot clean up (`kill -9`, a crash, the OOM killer):
//!
//! - it reads file descriptor 3, the read end of a pipe whose only write end the daemon holds
//!   (close-on-exec, so no other child inherits it). When the daemon dies, however it dies,
//!   the kernel closes that end and the read returns: the supervisor kills its whole group,
//!   itself included, at once;
//! - it is a child subreaper, so what the command starts and then abandons (a double fork, a
//!   `setsid` daemon) is re-parented to it rather than to init, and is killed with the rest;
//! - when the command exits, whatever it left running is killed, and the supervisor exits as
//!   the command did (the same code, or the same signal), which the daemon reports.
//!
//! Everything here runs before any thread but the lifeline's exists and uses only the
//! standard library and libc: no async runtime, nothing from the daemon.

use std::io::Read;
use std::os::fd::FromRawFd;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitCode};

/// The argument that turns `kennel` into a supervisor (never shown in `--help`).
pub const ARG: &str = "__supervise";

/// The file descriptor the daemon gives the supervisor its lifeline on.
pub(super) const LIFELINE_FD: i32 = 3;

/// The signals the supervisor outlives: the group's signals are meant for the command, and the
/// supervisor must stay to report how it ended. A handler (not `SIG_IGN`) is reset by `exec`,
/// so the command gets the default dispositions.
const PASSED_ON: [i32; 6] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2];

extern "C" fn ignore(_: libc::c_int) {}

/// Runs the supervisor for `args` (the program and its arguments) and never returns to the
/// caller's normal path: the process exits as the command did.
pub fn main(args: &[String]) -> ExitCode {
    let Some((program, rest)) = args.split_first() else {
        eprintln!("kennel {ARG}: no command to run");
        return ExitCode::from(127);
    };
    // SAFETY: plain system calls on this process's own state, before any other thread exists.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
        libc::fcntl(LIFELINE_FD, libc::F_SETFD, libc::FD_CLOEXEC);
        for signal in PASSED_ON {
            libc::signal(signal, ignore as *const () as libc::sighandler_t);
        }
    }
    let child = match Command::new(program).args(rest).spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("kennel: cannot start `{program}`: {e}");
            return ExitCode::from(127);
        }
    };
    // Only the command holds its pipes now, so they close when it (and what it started) ends.
    release_stdio();
    std::thread::spawn(watch_lifeline);
    let status = wait_for(child.id() as libc::pid_t);
    kill_leftovers();
    exit_as(status)
}

/// Blocks on the lifeline; when it returns (the daemon is gone), kills the whole group.
fn watch_lifeline() {
    // SAFETY: fd 3 is the lifeline the daemon passed; nothing else in this process uses it.
    let mut lifeline = unsafe { std::fs::File::from_raw_fd(LIFELINE_FD) };
    let mut byte = [0u8; 1];
    // The daemon never writes: a return (end of file, or an error other than a signal's
    // interruption) means its end closed.
    while let Err(e) = lifeline.read(&mut byte) {
        if e.kind() != std::io::ErrorKind::Interrupted {
            break;
        }
    }
    let me = std::process::id() as libc::pid_t;
    // SAFETY: signals processes re-parented here (not reusable until reaped), then this
    // process's own group, which it leads (itself last, with it).
    unsafe {
        for pid in related_processes(me) {
            libc::kill(pid, libc::SIGKILL);
        }
        libc::kill(0, libc::SIGKILL);
    }
}

/// Points standard input, output and error at `/dev/null`.
fn release_stdio() {
    // SAFETY: open and dup2 on this process's own descriptors.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            if null > 2 {
                libc::close(null);
            }
        }
    }
}

/// Waits for the command, reaping whatever else is re-parented here meanwhile.
fn wait_for(command: libc::pid_t) -> libc::c_int {
    loop {
        let mut status = 0;
        // SAFETY: waitpid with a valid status pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == command {
            return status;
        }
        if pid < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // No child left to wait for: the command is gone without a status we saw.
            return 127 << 8;
        }
    }
}

/// Kills what the command left: the rest of its group, and anything re-parented here (a
/// process that left the group with `setsid`). Repeats until nothing is left, since killing a
/// process re-parents its own children here.
fn kill_leftovers() {
    let me = std::process::id() as libc::pid_t;
    for _ in 0..100 {
        let others = related_processes(me);
        if others.is_empty() {
            return;
        }
        for pid in others {
            // SAFETY: each pid is in this group or a child of this process, so not reusable
            // until this process reaps it.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        // SAFETY: reaping this process's own children.
        while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The live processes in `me`'s group or with `me` as parent, `me` left out.
fn related_processes(me: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|&pid| pid != me)
        .filter(|&pid| super::reaper::stat(pid).is_some_and(|s| s.state != 'Z' && (s.pgrp == me || s.ppid == me)))
        .collect()
}

/// Exits with the command's code, or by the signal that ended it.
fn exit_as(status: libc::c_int) -> ExitCode {
    let status = std::process::ExitStatus::from_raw(status);
    if let Some(signal) = status.signal() {
        // SAFETY: restores the default action and raises the signal on this process.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(std::process::id() as libc::pid_t, signal);
        }
    }
    ExitCode::from(status.code().unwrap_or(128).clamp(0, 255) as u8)
}

/// Makes the supervisor its own group's leader and hands it the lifeline: what runs between
/// `fork` and `exec` of the supervisor.
pub(super) fn prepare(command: &mut tokio::process::Command, lifeline: i32) {
    command.process_group(0);
    // SAFETY: dup2 is async-signal-safe, the only kind of call allowed between fork and exec.
    unsafe {
        command.pre_exec(move || {
            if libc::dup2(lifeline, LIFELINE_FD) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
