//! One Chromium process. Kennel starts it itself (not through chromiumoxide's launcher) so that
//! it owns the child: its flags, a profile folder of its own, death with the daemon
//! (`PR_SET_PDEATHSIG`), DevTools over a pipe rather than a port (`pipe.rs`), its own sandbox
//! unless the daemon is root, and a watcher that notices when it exits, which chromiumoxide's
//! handler alone does not (a closed DevTools socket leaves it pending).

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chromiumoxide::Browser;
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::handler::viewport::Viewport;
use futures_util::StreamExt;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::task::JoinHandle;

use super::pipe;
use crate::error::{Error, Result};

/// The window every page is laid out in (and the viewport screenshots show).
pub(super) const VIEWPORT: (u32, u32) = (1280, 800);

/// How long Chromium may take to answer its first DevTools command. Its first start on a machine
/// with a cold page cache and two busy cores took over 20 s (a full test run, issue 25); a
/// launch only ever waits this long when something is wrong or the machine is that slow.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(45);

/// What a launch needs besides the binary.
pub(super) struct Launch<'a> {
    pub executable: &'a Path,
    pub headless: bool,
    /// Every request of every page goes through this proxy (the address guard).
    pub proxy: std::net::SocketAddr,
    /// A fresh folder for this process's profile, removed when it stops.
    pub profile: PathBuf,
    /// How long one DevTools command may take (a navigation included).
    pub command_timeout: Duration,
    /// Chromium's own sandbox (`[browser] sandbox`); never for a daemon run as root, where
    /// Chromium refuses it.
    pub sandbox: bool,
}

/// A running Chromium and the DevTools connection to it.
pub(super) struct Chromium {
    pub browser: Browser,
    alive: Arc<AtomicBool>,
    pid: Option<u32>,
    profile: PathBuf,
    tasks: Vec<JoinHandle<()>>,
}

impl Chromium {
    pub async fn launch(launch: Launch<'_>) -> Result<Chromium> {
        std::fs::create_dir_all(&launch.profile)?;
        let mut command = tokio::process::Command::new(launch.executable);
        command
            .args(flags(&launch))
            // Built, not inherited: pages run code, and the daemon's keys are no business of
            // Chromium's (nor readable in its /proc environ by anything the daemon's user runs).
            .env_clear()
            .envs(environment(&launch))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        #[cfg(target_os = "linux")]
        // SAFETY: the closure runs in the forked child before exec and only makes one
        // async-signal-safe system call.
        unsafe {
            command.pre_exec(|| {
                // Killed with the daemon, even by `kill -9`; its helper processes follow it.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let pipes = pipe::Pipes::new()?;
        let (reads, writes) = (pipes.chromium_reads.as_raw_fd(), pipes.chromium_writes.as_raw_fd());
        // SAFETY: the closure runs in the forked child before exec and makes only
        // async-signal-safe system calls on that child's own descriptors.
        unsafe {
            command.pre_exec(move || pipe::place_in_child(reads, writes));
        }
        let mut child = command
            .spawn()
            .map_err(|e| Error::unavailable(format!("cannot start Chromium `{}`: {e}", launch.executable.display())))?;
        let pid = child.id();
        let stderr = child.stderr.take().ok_or_else(|| Error::internal("Chromium's stderr was not captured"))?;
        // What Chromium said first, for a launch that fails; its stderr must be read anyway,
        // or a full pipe stalls it.
        let said = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let drain = tokio::spawn({
            let said = said.clone();
            async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut said = said.lock().unwrap_or_else(|e| e.into_inner());
                    if said.len() < 20 {
                        said.push(line);
                    }
                }
            }
        });
        let (ws_url, bridge) = pipe::bridge(pipes).await?;
        let failed = |why: String| {
            let said = said.lock().unwrap_or_else(|e| e.into_inner()).join("\n");
            Error::unavailable(format!("{why}: {}", said.trim()))
        };
        let config = HandlerConfig {
            viewport: Some(Viewport {
                width: VIEWPORT.0,
                height: VIEWPORT.1,
                device_scale_factor: None,
                emulating_mobile: false,
                is_landscape: false,
                has_touch: false,
            }),
            request_timeout: launch.command_timeout,
            // chromiumoxide's default accepts any certificate: a page's TLS must mean what it says.
            ignore_https_errors: false,
            ..HandlerConfig::default()
        };
        let (browser, mut handler) = Browser::connect_with_config(ws_url, config)
            .await
            .map_err(|e| Error::unavailable(format!("cannot connect to Chromium's DevTools: {e}")))?;

        let alive = Arc::new(AtomicBool::new(true));
        let handler_alive = alive.clone();
        let events = tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                match event {
                    Err(chromiumoxide::error::CdpError::Ws(e)) => {
                        // The socket is gone: end the handler, so the commands waiting on it
                        // fail now instead of at their timeout.
                        tracing::warn!(error = %e, "Chromium's DevTools connection closed");
                        break;
                    }
                    Err(e) => tracing::debug!(error = %e, "Chromium's DevTools connection reported an error"),
                    Ok(()) => {}
                }
            }
            handler_alive.store(false, Ordering::Release);
        });
        let child_alive = alive.clone();
        let watcher = tokio::spawn(async move {
            let status = child.wait().await;
            child_alive.store(false, Ordering::Release);
            tracing::info!(?status, "Chromium exited");
        });
        let chromium =
            Chromium { browser, alive, pid, profile: launch.profile, tasks: vec![drain, events, watcher, bridge] };
        match tokio::time::timeout(LAUNCH_TIMEOUT, chromium.browser.version()).await {
            Ok(Ok(_)) => Ok(chromium),
            Ok(Err(e)) => Err(failed(format!("Chromium exited before it was ready ({e})"))),
            Err(_) => Err(failed(format!("Chromium did not answer within {} s", LAUNCH_TIMEOUT.as_secs()))),
        }
    }

    /// False once the process exited or its DevTools connection ended. A killed process is a
    /// zombie for a moment before it is reaped: that counts as gone too.
    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire) && self.pid.is_none_or(process_runs)
    }

    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Closes the browser politely, then makes sure the process is gone.
    pub async fn shut_down(mut self) {
        if self.is_alive() {
            let _ = tokio::time::timeout(Duration::from_secs(2), self.browser.close()).await;
        }
        self.kill();
    }

    fn kill(&mut self) {
        if let Some(pid) = self.pid.take()
            && self.alive.load(Ordering::Acquire)
        {
            // SAFETY: plain kill(2) on the child this value started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        for task in self.tasks.drain(..) {
            task.abort();
        }
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether process `pid` exists and is not a zombie (Linux: its state in `/proc/PID/stat`).
fn process_runs(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses and may hold any byte.
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => !cfg!(target_os = "linux"),
    }
}

/// Chromium's whole environment: the base every helper gets, its home and XDG folders in its
/// profile (it writes under ~/.config and ~/.cache even with a user-data-dir), and the
/// display's variables when it has a window.
fn environment(launch: &Launch<'_>) -> std::collections::BTreeMap<String, String> {
    let mut env = crate::process::base_environment(|name| std::env::var(name).ok());
    let inside = |folder: &str| launch.profile.join(folder).display().to_string();
    env.insert("HOME".into(), inside("home"));
    env.insert("XDG_CONFIG_HOME".into(), inside("xdg-config"));
    env.insert("XDG_CACHE_HOME".into(), inside("xdg-cache"));
    if !launch.headless {
        for name in ["DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS"] {
            if let Ok(value) = std::env::var(name) {
                env.insert(name.into(), value);
            }
        }
    }
    env
}

fn flags(launch: &Launch<'_>) -> Vec<String> {
    let mut flags: Vec<String> = [
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-default-apps",
        "--disable-breakpad",
        "--disable-dev-shm-usage",
        "--disable-features=Translate,MediaRouter,OptimizationHints,HttpsUpgrades,InterestFeedContentSuggestions",
        "--metrics-recording-only",
        "--mute-audio",
        "--hide-scrollbars",
        "--password-store=basic",
        // DevTools on descriptors 3 and 4: no port listens (`pipe.rs`).
        "--remote-debugging-pipe",
        // Loopback too goes through the proxy (Chromium bypasses it for loopback by default).
        "--proxy-bypass-list=<-loopback>",
        // WebRTC would send UDP (and TURN over TCP) straight to any address: only proxied.
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
        // A page opens no window of its own (it would sit outside the agent's tab pool).
        "--block-new-web-contents",
        "--dns-prefetch-disable",
    ]
    .map(String::from)
    .to_vec();
    if launch.headless {
        flags.push("--headless".into());
    }
    if !launch.sandbox {
        flags.push("--no-sandbox".into());
    }
    flags.push(format!("--window-size={},{}", VIEWPORT.0, VIEWPORT.1));
    flags.push(format!("--proxy-server=http://{}", launch.proxy));
    flags.push(format!("--user-data-dir={}", launch.profile.display()));
    flags.push("about:blank".into());
    flags
}

/// The Chromium to run: `[browser] executable`, else the first of the usual names on `PATH`.
pub(crate) fn find_executable(configured: Option<&Path>) -> std::result::Result<PathBuf, String> {
    match configured {
        Some(path) if path.is_file() => Ok(path.to_path_buf()),
        Some(path) => Err(format!("[browser] executable `{}` does not exist", path.display())),
        None => ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
            .iter()
            .find_map(|name| crate::tool::availability::find_on_path(name))
            .ok_or_else(|| {
                "no Chromium was found on PATH (chromium, chromium-browser, google-chrome): install one or set [browser] executable".to_string()
            }),
    }
}
