//! The supervisor: `kennel __supervise DAEMON_PID PROGRAM ARGS…`, the small process between
//! the daemon and an agent's command. It leads the command's process group, so a signal for
//! the group reaches everything the command started, and it is what makes children die with
//! the daemon even when the daemon cannot clean up (`kill -9`, a crash, the OOM killer):
//!
//! - it holds a pidfd of the daemon (its parent) and waits on it in a thread: when the daemon
//!   exits, however it exits, the pidfd becomes readable and the supervisor kills what the
//!   command started and then its whole group, itself included. Nothing a child can reach
//!   (no pipe, no file) can fake or block that;
//! - it is a child subreaper, so what the command starts and then abandons (a double fork, a
//!   `setsid` daemon) is re-parented to it rather than to init, and is killed with the rest;
//! - it is not dumpable, so its own command cannot attach to it or read its descriptors;
//! - when the command exits, whatever it left running is killed, and the supervisor exits as
//!   the command did (the same code, or the same signal), which the daemon reports.
//!
//! Everything here runs before any thread but the watcher's exists and uses only the
//! standard library and libc: no async runtime, nothing from the daemon.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitCode};

/// The argument that turns `kennel` into a supervisor (never shown in `--help`).
pub const ARG: &str = "__supervise";

/// The signals the supervisor outlives: the group's signals are meant for the command, and the
/// supervisor must stay to report how it ended. A handler (not `SIG_IGN`) is reset by `exec`,
/// so the command gets the default dispositions.
const PASSED_ON: [i32; 6] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2];

extern "C" fn ignore(_: libc::c_int) {}

/// What the daemon asks of the supervisor besides the command: the control groups to join
/// (`--cgroup PROCS_FILE`, repeated) and an address-space limit where there is no memory
/// group (`--max-address-space BYTES`).
#[derive(Debug, Default, PartialEq, Eq)]
struct Options {
    cgroups: Vec<String>,
    max_address_space: Option<u64>,
}

/// Splits `args` (after the daemon's pid) into the options and the command.
fn parse_options(mut args: &[String]) -> Option<(Options, &[String])> {
    let mut options = Options::default();
    loop {
        match args {
            [flag, value, rest @ ..] if flag == "--cgroup" => {
                options.cgroups.push(value.clone());
                args = rest;
            }
            [flag, value, rest @ ..] if flag == "--max-address-space" => {
                options.max_address_space = Some(value.parse().ok()?);
                args = rest;
            }
            [program, ..] if !program.starts_with("--") => return Some((options, args)),
            _ => return None,
        }
    }
}

/// Runs the supervisor for `args` (the daemon's pid, the options, then the program and its
/// arguments); the process exits as the command did.
pub fn main(args: &[String]) -> ExitCode {
    let daemon = args.first().and_then(|p| p.parse::<libc::pid_t>().ok());
    let parsed = args.get(1..).and_then(parse_options);
    let (Some(daemon), Some((options, [program, rest @ ..]))) = (daemon, parsed) else {
        eprintln!(
            "kennel {ARG}: usage: kennel {ARG} DAEMON_PID [--cgroup PROCS_FILE]… [--max-address-space BYTES] PROGRAM [ARGS…] (the daemon runs this)"
        );
        return ExitCode::from(127);
    };
    // SAFETY: getpid and getpgrp have no preconditions.
    if unsafe { libc::getpgrp() != libc::getpid() } {
        // Killing "its group" would kill whoever ran it by hand.
        eprintln!("kennel {ARG}: not the leader of its own process group: only the daemon runs this");
        return ExitCode::from(127);
    }
    // SAFETY: plain system calls on this process's own state, before any other thread exists.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0);
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
        for signal in PASSED_ON {
            libc::signal(signal, ignore as *const () as libc::sighandler_t);
        }
    }
    if let Err(why) = limit(&options) {
        // A child that would run past its limits does not run at all.
        eprintln!("kennel: cannot apply the process's limits: {why}");
        return ExitCode::from(127);
    }
    let Some(watch) = DaemonWatch::new(daemon) else { kill_everything() };
    let child = match Command::new(program).args(rest).spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("kennel: cannot start `{program}`: {e}");
            return ExitCode::from(127);
        }
    };
    // Only the command holds its pipes now, so they close when it (and what it started) ends.
    release_stdio();
    if std::thread::Builder::new().name("daemon-watch".into()).spawn(move || watch.wait_then_kill()).is_err() {
        kill_everything();
    }
    let status = wait_for(child.id() as libc::pid_t);
    kill_leftovers();
    exit_as(status)
}

/// Joins the control groups and sets the address-space limit, before the command exists:
/// everything it starts inherits both.
fn limit(options: &Options) -> std::io::Result<()> {
    for procs in &options.cgroups {
        std::fs::write(procs, std::process::id().to_string())
            .map_err(|e| std::io::Error::new(e.kind(), format!("joining {procs}: {e}")))?;
    }
    if let Some(bytes) = options.max_address_space {
        let limit = libc::rlimit { rlim_cur: bytes as libc::rlim_t, rlim_max: bytes as libc::rlim_t };
        // SAFETY: setrlimit with a valid rlimit for this process.
        if unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// How the supervisor learns that the daemon exited.
struct DaemonWatch {
    daemon: libc::pid_t,
    /// A pidfd of the daemon; `None` on a kernel without them (before 5.3): then the parent is
    /// checked every 100 ms instead.
    pidfd: Option<std::os::fd::OwnedFd>,
}

impl DaemonWatch {
    /// `None` when the daemon is already gone.
    fn new(daemon: libc::pid_t) -> Option<DaemonWatch> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, daemon, 0) };
        // SAFETY: a descriptor pidfd_open just returned, owned by nothing else.
        let pidfd = (fd >= 0).then(|| unsafe { std::os::fd::FromRawFd::from_raw_fd(fd as i32) });
        // Checked after opening: while the daemon is this process's parent its pid cannot be
        // reused, so the pidfd is the daemon's, not a later process's with its number.
        // SAFETY: getppid has no preconditions.
        (unsafe { libc::getppid() } == daemon).then_some(DaemonWatch { daemon, pidfd })
    }

    fn wait_then_kill(self) -> ! {
        use std::os::fd::AsRawFd;
        loop {
            match &self.pidfd {
                Some(fd) => {
                    let mut pfd = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                    // SAFETY: poll on one valid pollfd.
                    let ready = unsafe { libc::poll(&mut pfd, 1, -1) };
                    if ready > 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                        break;
                    }
                }
                // SAFETY: getppid has no preconditions.
                None if unsafe { libc::getppid() } != self.daemon => break,
                None => std::thread::sleep(std::time::Duration::from_millis(100)),
            }
        }
        kill_everything()
    }
}

/// Kills everything the command started (its group and what was re-parented here), then the
/// group with this process in it.
fn kill_everything() -> ! {
    kill_related(20, std::time::Duration::from_millis(2));
    // SAFETY: signals this process's own group, which it leads (checked at start).
    unsafe {
        libc::kill(0, libc::SIGKILL);
    }
    std::process::exit(137)
}

/// SIGKILLs the processes in this group or re-parented here, in up to `rounds` rounds (each
/// death re-parents that process's children here); says whether none is left.
fn kill_related(rounds: usize, pause: std::time::Duration) -> bool {
    let me = std::process::id() as libc::pid_t;
    for _ in 0..rounds {
        let others = related_processes(me);
        if others.is_empty() {
            return true;
        }
        for pid in others {
            // SAFETY: each pid is in this group or a child of this process, so not reusable
            // until this process reaps it (or its group is gone).
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        // SAFETY: reaping this process's own children.
        while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
        std::thread::sleep(pause);
    }
    related_processes(me).is_empty()
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

/// Kills what the command left when it exited: the rest of its group, and anything
/// re-parented here (a process that left the group with `setsid`). Something that keeps
/// coming back ends it all rather than being left.
fn kill_leftovers() {
    if !kill_related(100, std::time::Duration::from_millis(5)) {
        kill_everything();
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

/// The command line that starts `program` with `args` under a supervisor watching this
/// daemon, with `options` (`--cgroup`, `--max-address-space`), as the leader of a new
/// session: its own process group, and no controlling terminal a child could open
/// (`/dev/tty`) to type into the operator's shell.
pub(super) fn command(options: &[String], program: &str, args: &[String]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("/proc/self/exe");
    command.arg0("kennel").arg(ARG).arg(std::process::id().to_string()).args(options).arg(program).args(args);
    // SAFETY: setsid is async-signal-safe and touches only the forked child's own state.
    unsafe {
        command.pre_exec(|| if libc::setsid() < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_come_before_the_program_and_the_rest_is_its_own() {
        let args: Vec<String> =
            ["--cgroup", "/a/cgroup.procs", "--max-address-space", "4096", "/bin/sh", "-c", "--cgroup x"]
                .map(String::from)
                .to_vec();
        let (options, command) = parse_options(&args).unwrap();
        assert_eq!(options.cgroups, ["/a/cgroup.procs"]);
        assert_eq!(options.max_address_space, Some(4096));
        assert_eq!(command, ["/bin/sh", "-c", "--cgroup x"]);
        assert!(parse_options(&["--max-address-space".into(), "lots".into(), "sh".into()]).is_none());
        assert!(parse_options(&["--unknown".into(), "sh".into()]).is_none());
        assert!(parse_options(&[]).is_none());
    }
}
