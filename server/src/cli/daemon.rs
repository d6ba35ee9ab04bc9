//! How the command line finds the running daemon of its home. At start the daemon writes
//! `$KENNEL_HOME/daemon.json` (where it listens, its pid) and `$KENNEL_HOME/cli.token` (this
//! run's CLI token, mode 0600), and removes both when it stops. Commands that need the daemon
//! read them and talk to it over its REST API; the daemon audits them as `cli`.

use std::fmt;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

const DAEMON_FILE: &str = "daemon.json";
const TOKEN_FILE: &str = "cli.token";
const LOCK_FILE: &str = "daemon.lock";
/// How long a starting daemon waits for the home's lock before refusing to start.
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// Takes `$KENNEL_HOME/daemon.lock` for as long as the returned file is open (the daemon's
/// life; the kernel lets go of it when the process ends, however it ends): a second daemon
/// on the same home is refused, naming the first.
pub fn lock_home(home: &Path) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(home)
        .with_context(|| format!("cannot make {}", home.display()))?;
    let path = home.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    // A daemon that was just stopped or killed may take a moment to be gone.
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    let mut locked = file.try_lock();
    while matches!(locked, Err(std::fs::TryLockError::WouldBlock)) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        locked = file.try_lock();
    }
    match locked {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => {
            let running = read_file(home).map(|f| format!(" (pid {}, at {})", f.pid, f.url)).unwrap_or_default();
            anyhow::bail!(
                "another Kennel daemon runs on {}{running}: one home has one daemon. Stop it with `kennel stop`, \
                 or give this one another home (KENNEL_HOME)",
                home.display()
            )
        }
        Err(std::fs::TryLockError::Error(e)) => Err(e).with_context(|| format!("cannot lock {}", path.display())),
    }
}

/// What `daemon.json` says.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DaemonFile {
    /// Where the CLI reaches the daemon: the bound address (loopback when it listens on all
    /// addresses).
    pub url: String,
    pub pid: u32,
    pub started_at: String,
    pub version: String,
}

/// The two files of a running daemon; dropping it (when the daemon stops) removes them, if
/// they are still this daemon's.
pub struct Announced {
    home: PathBuf,
    pid: u32,
}

/// Writes `daemon.json` and `cli.token` for the daemon listening on `addr`. Each is written
/// to a temporary file and renamed, so a reader never sees half of one; the token file is
/// created with mode 0600, never readable by others even for a moment.
pub fn announce(home: &Path, addr: SocketAddr, started_at: &str, token: &str) -> anyhow::Result<Announced> {
    let pid = std::process::id();
    let file = DaemonFile {
        url: format!("http://{}", reachable(addr)),
        pid,
        started_at: started_at.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
    };
    write_private(&home.join(TOKEN_FILE), format!("{token}\n").as_bytes())?;
    let json = serde_json::to_vec_pretty(&file).context("cannot write daemon.json")?;
    write_private(&home.join(DAEMON_FILE), &json)?;
    Ok(Announced { home: home.to_path_buf(), pid })
}

impl Drop for Announced {
    fn drop(&mut self) {
        // Another daemon started on this home since (and wrote its own files): leave them.
        let ours = read_file(&self.home).is_ok_and(|f| f.pid == self.pid);
        if ours {
            let _ = std::fs::remove_file(self.home.join(DAEMON_FILE));
            let _ = std::fs::remove_file(self.home.join(TOKEN_FILE));
        }
    }
}

/// The address a client on this machine connects to for a listener bound to `addr`.
pub(crate) fn reachable(addr: SocketAddr) -> SocketAddr {
    let ip = match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    SocketAddr::new(ip, addr.port())
}

fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    // Named by pid, so two daemons started on one home at once never rename each other's.
    let temp = path.with_extension(format!("{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)
        .with_context(|| format!("cannot write {}", temp.display()))?;
    // No fsync: the files describe this run only, and a crash makes them stale anyway.
    file.write_all(bytes).with_context(|| format!("cannot write {}", temp.display()))?;
    std::fs::rename(&temp, path).with_context(|| format!("cannot write {}", path.display()))
}

fn read_file(home: &Path) -> std::io::Result<DaemonFile> {
    let text = std::fs::read_to_string(home.join(DAEMON_FILE))?;
    serde_json::from_str(&text).map_err(std::io::Error::other)
}

/// No daemon to talk to: the message says why and what to do. `kennel` exits with 3 for it
/// (as `systemctl status` does for a unit that is not running), so scripts can tell it apart.
#[derive(Debug)]
pub struct NoDaemon(String);

impl fmt::Display for NoDaemon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoDaemon {}

/// The kernel's error the daemon answered with (`{"error": {kind, message, fields}}`), as a
/// person reads it: the message, then each field's problem on a line of its own.
#[derive(Debug)]
pub struct Refused(pub kennel_kernel::Error);

impl fmt::Display for Refused {
    /// The message, or, when the refusal names fields, each field's problem (the message
    /// only joins them).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.fields.is_empty() {
            return f.write_str(&self.0.message);
        }
        let lines: Vec<String> = self.0.fields.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
        f.write_str(&lines.join("\n  "))
    }
}

impl std::error::Error for Refused {}

/// A request body in a given format.
pub struct Body {
    pub content_type: &'static str,
    pub text: String,
}

/// The running daemon of a home, reached over HTTP with its CLI token, which is sent only
/// once the process at its address proved it holds it ([`Daemon::verify`]).
pub struct Daemon {
    pub file: DaemonFile,
    token: String,
    http: reqwest::Client,
    verified: tokio::sync::OnceCell<()>,
    /// Where the token came from, for messages.
    token_file: PathBuf,
}

impl Daemon {
    /// The daemon `home`'s files name. Errors are [`NoDaemon`] when there is none.
    pub fn of(home: &Path) -> anyhow::Result<Daemon> {
        let file = match read_file(home) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(NoDaemon(format!(
                    "no Kennel daemon is running for {} (it has no daemon.json): start one with `kennel start`",
                    home.display()
                ))
                .into());
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", home.join(DAEMON_FILE).display())),
        };
        let token = std::fs::read_to_string(home.join(TOKEN_FILE))
            .with_context(|| format!("cannot read {}", home.join(TOKEN_FILE).display()))?
            .trim()
            .to_string();
        // Loopback only, and never through a proxy the environment names.
        let http = kennel_kernel::net::http_client()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(3))
            .build()
            .context("cannot make an HTTP client")?;
        Ok(Daemon { file, token, http, verified: tokio::sync::OnceCell::new(), token_file: home.join(TOKEN_FILE) })
    }

    /// Asks the process at the daemon's address to prove it holds this home's CLI token
    /// (`GET /healthz` with a fresh challenge; the answer's `X-Kennel-Proof`), once. After a
    /// crash another local user may have taken the port: it gets no token.
    async fn verify(&self) -> anyhow::Result<()> {
        self.verified
            .get_or_try_init(|| async {
                let challenge = uuid::Uuid::new_v4().simple().to_string();
                let url = format!("{}/healthz", self.file.url);
                let resp = self.http.get(&url).header("x-kennel-challenge", &challenge).send().await;
                let resp = resp.map_err(|e| self.unreachable(e))?;
                let proof = resp.headers().get("x-kennel-proof").and_then(|v| v.to_str().ok()).unwrap_or_default();
                let expected = kennel_kernel::auth::cli_proof_of(&self.token, &challenge);
                if !kennel_kernel::auth::secrets_match(proof, &expected) {
                    return Err(NoDaemon(format!(
                        "what answers at {} is not the daemon that wrote {} (it cannot prove it holds the \
                         token), so the token was not sent: the daemon may have crashed and another program \
                         taken its port. Start the daemon again with `kennel start`",
                        self.file.url,
                        self.token_file.display()
                    ))
                    .into());
                }
                Ok(())
            })
            .await
            .map(|_| ())
    }

    /// This run's CLI token, for a client of the daemon's own (the MCP bridge).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The daemon, if one is running and answers (commands that also work without one ask).
    pub async fn running(home: &Path) -> anyhow::Result<Option<Daemon>> {
        let daemon = match Daemon::of(home) {
            Ok(daemon) => daemon,
            Err(e) if e.is::<NoDaemon>() => return Ok(None),
            Err(e) => return Err(e),
        };
        match daemon.http.get(format!("{}/healthz", daemon.file.url)).send().await {
            Ok(_) => Ok(Some(daemon)),
            Err(e) if e.is_connect() => Ok(None),
            Err(e) => Err(daemon.unreachable(e)),
        }
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        self.call(Method::GET, path, None).await
    }

    pub async fn post<T: DeserializeOwned>(&self, path: &str, body: &Value) -> anyhow::Result<T> {
        self.call(Method::POST, path, Some(body)).await
    }

    pub async fn put<T: DeserializeOwned>(&self, path: &str, body: &Value) -> anyhow::Result<T> {
        self.call(Method::PUT, path, Some(body)).await
    }

    pub async fn delete<T: DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        self.call(Method::DELETE, path, None).await
    }

    /// A request whose answer has no body (204): only whether it was done.
    pub async fn act(&self, method: Method, path: &str) -> anyhow::Result<()> {
        self.verify().await?;
        self.answered(self.request(method, path).send().await).await.map(|_| ())
    }

    /// Sends a body that is already text in its format (a manifest file as written); the
    /// answer, with its header `header` when it has one (a warning).
    pub async fn send_noting<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Body,
        header: &str,
    ) -> anyhow::Result<(T, Option<String>)> {
        self.verify().await?;
        let req = self.request(method, path).header(reqwest::header::CONTENT_TYPE, body.content_type).body(body.text);
        let resp = self.answered(req.send().await).await?;
        let noted = resp.headers().get(header).and_then(|v| v.to_str().ok()).map(str::to_string);
        let answer =
            resp.json().await.with_context(|| format!("the daemon's answer to {path} is not what this CLI expects"))?;
        Ok((answer, noted))
    }

    async fn call<T: DeserializeOwned>(&self, method: Method, path: &str, body: Option<&Value>) -> anyhow::Result<T> {
        let mut req = self.request(method, path);
        if let Some(body) = body {
            req = req.json(body);
        }
        self.answer(path, req).await
    }

    async fn answer<T: DeserializeOwned>(&self, path: &str, req: reqwest::RequestBuilder) -> anyhow::Result<T> {
        self.verify().await?;
        let resp = self.answered(req.send().await).await?;
        resp.json().await.with_context(|| format!("the daemon's answer to {path} is not what this CLI expects"))
    }

    /// Opens a server-sent event stream (`GET path`).
    pub async fn events(&self, path: &str) -> anyhow::Result<EventStream> {
        self.verify().await?;
        let resp = self.answered(self.request(Method::GET, path).send().await).await?;
        Ok(EventStream { resp, decoder: Default::default(), ready: Default::default() })
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.http.request(method, format!("{}{path}", self.file.url)).bearer_auth(&self.token)
    }

    /// The response if it is a success; otherwise the daemon's refusal, or why it could not
    /// be reached.
    async fn answered(&self, sent: reqwest::Result<reqwest::Response>) -> anyhow::Result<reqwest::Response> {
        let resp = sent.map_err(|e| self.unreachable(e))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        if status == StatusCode::UNAUTHORIZED {
            return Err(NoDaemon(format!(
                "the daemon at {} did not take this home's CLI token: it is not the daemon that wrote {} \
                 (another home's, or one that stopped without removing it)",
                self.file.url, DAEMON_FILE
            ))
            .into());
        }
        let mut body: Value = resp.json().await.unwrap_or_default();
        let error = serde_json::from_value(body["error"].take()).unwrap_or_else(|_| {
            kennel_kernel::Error::new(kennel_kernel::ErrorKind::Failed, format!("the daemon answered {status}"))
        });
        Err(Refused(error).into())
    }

    fn unreachable(&self, e: reqwest::Error) -> anyhow::Error {
        let f = &self.file;
        if e.is_connect() {
            NoDaemon(format!(
                "no Kennel daemon answers at {} (daemon.json names pid {}, started {}; it has stopped): \
                 start one with `kennel start`",
                f.url, f.pid, f.started_at
            ))
            .into()
        } else {
            anyhow::Error::new(e).context(format!("the daemon at {} did not answer", f.url))
        }
    }
}

/// A server-sent event stream from the daemon: each event's name and its JSON data.
pub struct EventStream {
    resp: reqwest::Response,
    decoder: kennel_kernel::llm::sse::SseDecoder,
    ready: std::collections::VecDeque<kennel_kernel::llm::sse::SseEvent>,
}

impl EventStream {
    /// The next event; `None` when the daemon closed the stream.
    pub async fn next(&mut self) -> anyhow::Result<Option<(String, Value)>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                let data = serde_json::from_str(&event.data).unwrap_or(Value::String(event.data));
                return Ok(Some((event.event, data)));
            }
            match self.resp.chunk().await.context("the daemon's event stream broke off")? {
                Some(bytes) => self.ready.extend(self.decoder.feed(&bytes)),
                None => return Ok(None),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_on_every_address_is_reached_on_loopback() {
        assert_eq!(reachable("0.0.0.0:4545".parse().unwrap()).to_string(), "127.0.0.1:4545");
        assert_eq!(reachable("[::]:4545".parse().unwrap()).to_string(), "[::1]:4545");
        assert_eq!(reachable("192.0.2.1:80".parse().unwrap()).to_string(), "192.0.2.1:80");
    }

    #[test]
    fn the_files_are_private_and_go_when_the_daemon_does() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile_dir();
        let announced = announce(&home, "127.0.0.1:9".parse().unwrap(), "2026-12-01T00:00:00Z", "kncli_x").unwrap();
        let mode = std::fs::metadata(home.join(TOKEN_FILE)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(std::fs::read_to_string(home.join(TOKEN_FILE)).unwrap(), "kncli_x\n");
        assert_eq!(read_file(&home).unwrap().url, "http://127.0.0.1:9");
        drop(announced);
        assert!(!home.join(DAEMON_FILE).exists() && !home.join(TOKEN_FILE).exists());
        std::fs::remove_dir_all(&home).unwrap();
    }

    #[test]
    fn another_daemons_files_are_left_alone() {
        let home = tempfile_dir();
        let announced = announce(&home, "127.0.0.1:9".parse().unwrap(), "t", "kncli_x").unwrap();
        let other =
            DaemonFile { url: "http://127.0.0.1:10".into(), pid: 1, started_at: "t".into(), version: "v".into() };
        write_private(&home.join(DAEMON_FILE), &serde_json::to_vec(&other).unwrap()).unwrap();
        drop(announced);
        assert_eq!(read_file(&home).unwrap().pid, 1);
        std::fs::remove_dir_all(&home).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kennel-cli-{}", uuid::Uuid::now_v7()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
