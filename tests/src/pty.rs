//! A pseudo-terminal for driving an interactive command as a person would (`kennel chat`):
//! the child's standard input, output and error are a terminal, what it writes is collected
//! as it comes, and lines are typed into it.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Pty {
    typing: File,
    /// Bytes as they came: a read may end inside a character.
    seen: Arc<Mutex<Vec<u8>>>,
    child: Child,
}

impl Pty {
    /// Starts `command` on a new terminal.
    pub fn spawn(command: &mut Command) -> Pty {
        let (mut master, mut slave) = (-1, -1);
        // SAFETY: openpty writes two descriptors it opened into the two ints; the other
        // arguments may be null (no name, default settings and size).
        let opened =
            unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
        assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
        // Close-on-exec, so the children other tests start at the same time do not inherit
        // this terminal (and keep it open after this child is gone).
        for fd in [master, slave] {
            // SAFETY: fcntl on a descriptor just opened; FD_CLOEXEC is its only flag.
            assert_eq!(unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) }, 0, "set close-on-exec");
        }
        // SAFETY: both descriptors are open and owned by nothing else.
        let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let io = |fd: &OwnedFd| Stdio::from(fd.try_clone().expect("dup the terminal"));
        let child = command.stdin(io(&slave)).stdout(io(&slave)).stderr(io(&slave)).spawn().expect("spawn on the pty");
        drop(slave);
        let mut reading = File::from(master.try_clone().expect("dup the master"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Ends with an error (EIO) once the child and its terminal are gone.
            while let Ok(n @ 1..) = reading.read(&mut buf) {
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Pty { typing: File::from(master), seen, child }
    }

    /// Everything the command has written so far (the terminal writes `\n` as `\r\n`).
    pub fn output(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().unwrap()).into_owned()
    }

    /// Waits until the output holds `text` after byte `from`; where it ends. Panics with
    /// the output after `within`.
    pub async fn expect_after(&self, from: usize, text: &str, within: Duration) -> usize {
        let deadline = Instant::now() + within;
        loop {
            let out = self.output();
            if let Some(at) = out.get(from..).and_then(|rest| rest.find(text)) {
                return from + at + text.len();
            }
            assert!(Instant::now() < deadline, "no {text:?} within {within:?}; the terminal shows:\n{out}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Types `line` and Enter.
    pub fn type_line(&mut self, line: &str) {
        self.typing.write_all(format!("{line}\n").as_bytes()).expect("type into the terminal");
    }

    /// Types `keys` as the terminal sends them: `\r` is Enter, `\x1b[A` the up arrow,
    /// `\x03` Ctrl-C (a byte, read by a program that has the terminal in raw mode).
    pub fn type_keys(&mut self, keys: &str) {
        self.typing.write_all(keys.as_bytes()).expect("type into the terminal");
    }

    /// Whether the terminal is in its usual line mode (echo, lines, signals), as a shell
    /// expects to find it after a program leaves.
    pub fn in_line_mode(&self) -> bool {
        // SAFETY: termios is plain data that tcgetattr fills in whole on success.
        let mut mode: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: the master is open; on Linux its settings are the terminal's.
        let read = unsafe { libc::tcgetattr(self.typing.as_raw_fd(), &mut mode) };
        assert_eq!(read, 0, "tcgetattr: {}", std::io::Error::last_os_error());
        let line_mode = libc::ECHO | libc::ICANON | libc::ISIG;
        mode.c_lflag & line_mode == line_mode
    }

    /// Presses Ctrl-C: the terminal sends SIGINT to the program in front (here, the child;
    /// the pty is not its controlling terminal, so the signal is sent as the terminal would).
    pub fn interrupt(&self) {
        // SAFETY: kill with a live child's pid and a valid signal number.
        let sent = unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        assert_eq!(sent, 0, "SIGINT: {}", std::io::Error::last_os_error());
    }

    /// Waits for the command to exit.
    pub async fn wait(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the child") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "still running after {within:?}; the terminal shows:\n{}",
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
