//! Test harness: the real `kennel` binary on a temp home, driven over HTTP and its CLI.
//!
//! The binary is the one `cargo build -p kennel` made in this workspace's target directory
//! (or `$KENNEL_BIN`). `scripts/test` builds it before running the suite.

pub mod fake_discord;
pub mod fake_docker;
pub mod fake_llm;
pub mod fake_slack;
pub mod fake_smtp;
pub mod fake_telegram;
pub mod fake_webhook;
pub mod llama_server;
pub mod postgres;
pub mod pty;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Where the `kennel` binary is.
pub fn kennel_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("KENNEL_BIN") {
        return PathBuf::from(p);
    }
    // target/<profile>/deps/<test-binary> → target/<profile>/kennel
    let exe = std::env::current_exe().expect("test binary path");
    let bin = exe.parent().and_then(Path::parent).expect("target dir").join("kennel");
    assert!(bin.exists(), "{} is missing: run `cargo build -p kennel` first (scripts/test does)", bin.display());
    bin
}

/// A temporary `$KENNEL_HOME`; with `KENNEL_TEST_BACKEND=postgres`, its state is in a
/// PostgreSQL database of its own on `KENNEL_TEST_DATABASE_URL`'s server, named to every
/// daemon and CLI run through `KENNEL_DATABASE_URL`, and dropped with the home.
pub struct Home {
    dir: TempDir,
    database: Option<postgres::Database>,
    /// A database this home shares with others (a cluster's), not dropped with it.
    shared_database: Option<String>,
}

impl Default for Home {
    fn default() -> Self {
        Self::new()
    }
}

impl Home {
    pub fn new() -> Home {
        Home {
            dir: tempfile::tempdir().expect("temp dir"),
            database: postgres::Database::for_test(),
            shared_database: None,
        }
    }

    /// Everything the daemon stored, as bytes: the SQLite file with its write-ahead log, or
    /// a dump of the home's PostgreSQL database. For checks that a secret is never stored.
    pub fn stored_bytes(&self) -> Vec<u8> {
        match &self.database {
            Some(database) => database.dump(),
            None => {
                let db = std::fs::read(self.path().join("kennel.db")).expect("the home's kennel.db");
                let wal = std::fs::read(self.path().join("kennel.db-wal")).unwrap_or_default();
                [db, wal].concat()
            }
        }
    }

    /// Whether the daemon's database was made: the SQLite file, or the PostgreSQL schema.
    pub fn has_database(&self) -> bool {
        match &self.database {
            Some(database) => database.has_schema(),
            None => self.path().join("kennel.db").exists(),
        }
    }

    /// The environment every `kennel` this home runs gets: where its database is.
    fn database_env(&self) -> Vec<(&'static str, String)> {
        let url = self.database.as_ref().map(|d| d.url.clone()).or_else(|| self.shared_database.clone());
        url.into_iter().map(|url| ("KENNEL_DATABASE_URL", url)).collect()
    }

    /// A home on SQLite whatever the suite's back end (`kennel migrate-to-postgres`'s source).
    pub fn on_sqlite(config: &str) -> Home {
        let home = Home { dir: tempfile::tempdir().expect("temp dir"), database: None, shared_database: None };
        std::fs::write(home.path().join("config.toml"), config).expect("write config");
        home
    }

    /// An empty directory for a home on SQLite, nothing in it yet (`kennel restore`'s target).
    pub fn empty_on_sqlite() -> Home {
        Home { dir: tempfile::tempdir().expect("temp dir"), database: None, shared_database: None }
    }

    /// A home whose state is in the PostgreSQL database `url`, which other homes share (the
    /// daemons of a cluster); the caller owns the database.
    pub fn sharing(url: &str, config: &str) -> Home {
        let home =
            Home { dir: tempfile::tempdir().expect("temp dir"), database: None, shared_database: Some(url.into()) };
        std::fs::write(home.path().join("config.toml"), config).expect("write config");
        home
    }

    /// A home whose `config.toml` is `config`.
    pub fn with_config(config: &str) -> Home {
        let home = Home::new();
        std::fs::write(home.path().join("config.toml"), config).expect("write config");
        home
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `kennel --home HOME args…`, to start on a terminal ([`pty::Pty`]).
    pub fn command(&self, args: &[&str]) -> std::process::Command {
        let mut command = std::process::Command::new(kennel_bin());
        command.arg("--home").arg(self.path()).args(args).env("RUST_LOG", "warn").envs(self.database_env());
        command
    }

    /// Runs `kennel --home HOME args…` to completion.
    pub async fn cli(&self, args: &[&str]) -> Output {
        self.cli_with_stdin(args, "").await
    }

    pub async fn cli_with_stdin(&self, args: &[&str], stdin: &str) -> Output {
        use tokio::io::AsyncWriteExt;
        let mut child = Command::new(kennel_bin())
            .arg("--home")
            .arg(self.path())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("RUST_LOG", "warn")
            .envs(self.database_env())
            .spawn()
            .expect("spawn kennel");
        let mut input = child.stdin.take().expect("stdin");
        input.write_all(stdin.as_bytes()).await.expect("write stdin");
        drop(input);
        child.wait_with_output().await.expect("kennel ran")
    }

    /// Runs a CLI command that must succeed; returns its standard output.
    pub async fn cli_ok(&self, args: &[&str]) -> String {
        let out = self.cli(args).await;
        assert!(out.status.success(), "kennel {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    /// Creates an API token with the CLI.
    pub async fn token(&self, name: &str) -> String {
        self.cli_ok(&["token", "create", name]).await.trim().to_string()
    }

    /// Starts the daemon on a free loopback port and waits until `/healthz` answers.
    pub async fn start(&self) -> Daemon {
        self.start_with_env(&[]).await
    }

    /// Like [`Home::start`], with extra environment variables for the daemon.
    pub async fn start_with_env(&self, env: &[(&str, &str)]) -> Daemon {
        self.spawn_daemon(Command::new(kennel_bin()), env).await
    }

    /// Like [`Home::start`], the daemon started with its open-file limit at `soft` (and `hard`,
    /// when given) through util-linux's `prlimit`, which execs it: still this test's child.
    pub async fn start_with_open_files(&self, soft: u64, hard: Option<u64>) -> Daemon {
        let mut command = Command::new("prlimit");
        let hard = hard.map(|h| h.to_string()).unwrap_or_default();
        command.arg(format!("--nofile={soft}:{hard}")).arg("--").arg(kennel_bin());
        self.spawn_daemon(command, &[]).await
    }

    /// Like [`Home::start`], the daemon run by an unprivileged user, as a deployment should:
    /// the tests' own user when it is not root; under root (CI), `nobody`, made the owner of
    /// the home (through `setpriv`, which execs, so the daemon is still this test's child).
    pub async fn start_unprivileged(&self) -> Daemon {
        if !is_root() {
            return self.start().await;
        }
        let chowned = std::process::Command::new("chown").args(["-R", "65534:65534"]).arg(self.path()).status();
        assert!(chowned.expect("chown").success(), "the home is given to nobody");
        let mut command = Command::new("setpriv");
        command.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(kennel_bin());
        self.spawn_daemon(command, &[]).await
    }

    async fn spawn_daemon(&self, mut command: Command, env: &[(&str, &str)]) -> Daemon {
        let mut child = command
            .arg("--home")
            .arg(self.path())
            .args(["start", "--bind", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("RUST_LOG", std::env::var("KENNEL_TEST_LOG").unwrap_or_else(|_| "warn".into()))
            .envs(self.database_env())
            .envs(env.iter().copied())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn kennel start");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await;
        let base = match line {
            Ok(Ok(Some(line))) => line.strip_prefix("kennel listening on ").expect("listening line").to_string(),
            other => {
                let out = child.wait_with_output().await.expect("daemon output");
                panic!("daemon did not start ({other:?}): {}", String::from_utf8_lossy(&out.stderr));
            }
        };
        let daemon = Daemon { child, base, http: kennel_kernel::net::http_client().build().expect("an HTTP client") };
        let health = daemon.http.get(format!("{}/healthz", daemon.base)).send().await.expect("healthz");
        assert_eq!(health.status(), 200);
        daemon
    }
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A running daemon.
pub struct Daemon {
    child: Child,
    pub base: String,
    http: reqwest::Client,
}

/// An HTTP answer: status, headers and the body as JSON (or as a JSON string if it is not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
    pub body: Value,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The `error.kind` of an error body.
    pub fn error_kind(&self) -> &str {
        self.body["error"]["kind"].as_str().unwrap_or("")
    }

    pub fn error_message(&self) -> &str {
        self.body["error"]["message"].as_str().unwrap_or("")
    }
}

impl Daemon {
    /// A client that sends `token` on every request.
    pub fn api(&self, token: &str) -> Api {
        Api { base: self.base.clone(), http: self.http.clone(), token: Some(token.to_string()) }
    }

    /// A client that sends no token.
    pub fn anonymous(&self) -> Api {
        Api { base: self.base.clone(), http: self.http.clone(), token: None }
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("daemon is running")
    }

    /// Kills the daemon with SIGKILL, as a crash would (no shutdown, nothing flushed), and
    /// waits until it is gone.
    pub async fn kill(mut self) {
        self.child.kill().await.expect("kill -9 the daemon");
    }

    /// Sends SIGTERM and waits for a clean exit; returns the exit code and standard error.
    pub async fn stop(mut self) -> (Option<i32>, String) {
        let status =
            std::process::Command::new("kill").args(["-TERM", &self.pid().to_string()]).status().expect("kill");
        assert!(status.success());
        let child = std::mem::replace(&mut self.child, Command::new("true").spawn().expect("placeholder"));
        let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
            .await
            .expect("daemon stops within 20 s")
            .expect("daemon output");
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// A small REST client for one daemon.
#[derive(Clone)]
pub struct Api {
    base: String,
    http: reqwest::Client,
    token: Option<String>,
}

impl Api {
    /// The bearer token this client sends (empty for an anonymous one), for raw requests.
    pub fn token(&self) -> &str {
        self.token.as_deref().unwrap_or_default()
    }

    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let req = self.http.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    pub async fn send(req: reqwest::RequestBuilder) -> Reply {
        let res = req.send().await.expect("request sent");
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let text = res.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.clone()));
        Reply { status, headers, text, body }
    }

    pub async fn get(&self, path: &str) -> Reply {
        Self::send(self.request(reqwest::Method::GET, path)).await
    }

    pub async fn delete(&self, path: &str) -> Reply {
        Self::send(self.request(reqwest::Method::DELETE, path)).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        Self::send(self.request(reqwest::Method::POST, path).json(&body)).await
    }

    pub async fn put(&self, path: &str, body: Value) -> Reply {
        Self::send(self.request(reqwest::Method::PUT, path).json(&body)).await
    }

    /// One A2A JSON-RPC call to `path` (`/a2a/NAME`), with `A2A-Version: version` if given.
    pub async fn rpc(&self, path: &str, method: &str, params: Value, version: Option<&str>) -> Reply {
        Self::send(self.rpc_request(path, method, params, version)).await
    }

    /// Opens a server-sent event stream of the API (an agent's turn events).
    pub async fn events(&self, path: &str) -> Events {
        let res = self.request(reqwest::Method::GET, path).send().await.expect("request sent");
        Events { res, buffer: String::new() }
    }

    /// A streaming A2A call: its answer's server-sent events as they come.
    pub async fn rpc_stream(&self, path: &str, method: &str, params: Value, version: Option<&str>) -> Events {
        let res = self.rpc_request(path, method, params, version).send().await.expect("request sent");
        Events { res, buffer: String::new() }
    }

    fn rpc_request(&self, path: &str, method: &str, params: Value, version: Option<&str>) -> reqwest::RequestBuilder {
        let body = serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let req = self.request(reqwest::Method::POST, path).json(&body);
        match version {
            Some(v) => req.header("A2A-Version", v),
            None => req,
        }
    }

    /// Invokes a tool as an agent through the pipeline.
    pub async fn invoke(&self, agent: &str, tool: &str, args: Value) -> Reply {
        self.post(&format!("/api/agents/{agent}/tools/{tool}/invoke"), serde_json::json!({ "args": args })).await
    }
}

/// A server-sent event stream, read event by event: each event's `data` as JSON.
pub struct Events {
    res: reqwest::Response,
    buffer: String,
}

impl Events {
    pub fn status(&self) -> u16 {
        self.res.status().as_u16()
    }

    pub fn content_type(&self) -> &str {
        self.res.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default()
    }

    /// The next event with data (comments and keep-alives skipped); `None` once the stream ends.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: Vec<&str> =
                    event.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim_start).collect();
                if !data.is_empty() {
                    return Some(serde_json::from_str(&data.join("\n")).expect("event data is JSON"));
                }
                continue;
            }
            match self.res.chunk().await {
                Ok(Some(bytes)) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                _ => return None,
            }
        }
    }

    /// Every remaining event, until the stream ends.
    pub async fn rest(&mut self) -> Vec<Value> {
        let mut all = Vec::new();
        while let Some(event) = self.next().await {
            all.push(event);
        }
        all
    }
}

/// Polls `check` until it holds or `within` passes; for changes the CLI makes to a running
/// daemon, which it picks up within a fraction of a second.
pub async fn eventually<F, Fut>(within: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if check().await {
            return true;
        }
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Serves `app` on an ephemeral loopback port until the test ends; returns the port. The
/// sites, peers and refused servers tests point the daemon at.
pub async fn serve_on_loopback(app: axum::Router) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serving on loopback") });
    port
}

/// Serves one HTML page at every path on loopback; returns the port.
pub async fn serve_html(html: String) -> u16 {
    serve_on_loopback(axum::Router::new().fallback(move || {
        let html = html.clone();
        async move { axum::response::Html(html) }
    }))
    .await
}

/// A browser-like client for the dashboard: keeps cookies, follows no redirects, posts forms.
pub struct Browser {
    base: String,
    http: reqwest::Client,
    cookies: std::sync::Mutex<std::collections::BTreeMap<String, String>>,
}

impl Daemon {
    pub fn browser(&self) -> Browser {
        self.browser_with(kennel_kernel::net::http_client())
    }

    /// A browser whose connections come from `ip` (any of 127.0.0.0/8 reaches a daemon on
    /// 127.0.0.1), for per-address rules.
    pub fn browser_from(&self, ip: std::net::IpAddr) -> Browser {
        self.browser_with(kennel_kernel::net::http_client().local_address(ip))
    }

    fn browser_with(&self, client: reqwest::ClientBuilder) -> Browser {
        Browser {
            base: self.base.clone(),
            http: client.redirect(reqwest::redirect::Policy::none()).build().expect("client"),
            cookies: Default::default(),
        }
    }

    /// The daemon's peak resident memory so far (`VmHWM`), in MiB.
    pub fn peak_rss_mib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).expect("/proc/PID/status");
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("a VmHWM line");
        let kib: u64 = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("VmHWM in kB");
        kib / 1024
    }
}

impl Browser {
    async fn send(&self, req: reqwest::RequestBuilder) -> Reply {
        let cookie = self.cookie_header();
        let req = if cookie.is_empty() { req } else { req.header("cookie", cookie) };
        let reply = Api::send(req).await;
        for set in reply.headers.get_all("set-cookie") {
            let set = set.to_str().unwrap_or_default();
            let pair = set.split(';').next().unwrap_or_default();
            if let Some((k, v)) = pair.split_once('=') {
                let mut cookies = self.cookies.lock().expect("cookies");
                if v.is_empty() || set.contains("Max-Age=0") {
                    cookies.remove(k);
                } else {
                    cookies.insert(k.to_string(), v.to_string());
                }
            }
        }
        reply
    }

    /// The `Cookie` header this browser sends.
    pub fn cookie_header(&self) -> String {
        self.cookies.lock().expect("cookies").iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
    }

    pub fn cookie(&self, name: &str) -> Option<String> {
        self.cookies.lock().expect("cookies").get(name).cloned()
    }

    /// A browser on `other`'s address holding this one's cookies (a load balancer sending the
    /// same person to another daemon of a cluster).
    pub fn on(&self, other: &Daemon) -> Browser {
        let moved = other.browser();
        *moved.cookies.lock().expect("cookies") = self.cookies.lock().expect("cookies").clone();
        moved
    }

    pub fn set_cookie(&self, name: &str, value: &str) {
        self.cookies.lock().expect("cookies").insert(name.into(), value.into());
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.get_with(path, &[]).await
    }

    /// Like [`Browser::get`], with extra headers (a `Host` or `Origin` of the test's choosing).
    pub async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        self.send(with_headers(self.http.get(format!("{}{path}", self.base)), headers)).await
    }

    /// Posts a urlencoded form exactly as given (add `csrf` yourself, or leave it out).
    pub async fn post(&self, path: &str, form: &[(&str, &str)]) -> Reply {
        self.post_with(path, form, &[]).await
    }

    /// Like [`Browser::post`], with extra headers.
    pub async fn post_with(&self, path: &str, form: &[(&str, &str)], headers: &[(&str, &str)]) -> Reply {
        self.send(with_headers(self.http.post(format!("{}{path}", self.base)).form(form), headers)).await
    }

    /// Posts a form with the CSRF token of the page at `page`.
    pub async fn submit(&self, page: &str, action: &str, form: &[(&str, &str)]) -> Reply {
        let html = self.get(page).await.text;
        let csrf = csrf_in(&html).expect("the page has a CSRF field");
        let mut fields = vec![("csrf", csrf.as_str())];
        fields.extend_from_slice(form);
        self.post(action, &fields).await
    }

    /// Opens a server-sent event stream of the dashboard (an agent page's live feed).
    pub async fn events(&self, path: &str) -> Events {
        let req = self.http.get(format!("{}{path}", self.base)).header("cookie", self.cookie_header());
        Events { res: req.send().await.expect("request sent"), buffer: String::new() }
    }

    /// Uploads a file as the agent page's upload form does: multipart, the session's CSRF token
    /// (read from `page`) its first field, `fields` after it, the file last.
    pub async fn upload(&self, page: &str, action: &str, fields: &[(&str, &str)], file: (&str, &[u8])) -> Reply {
        let html = self.get(page).await.text;
        let csrf = csrf_in(&html).expect("the page has a CSRF field");
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        self.post_multipart(action, &all, file).await
    }

    /// Posts a multipart form of `fields` in order, then `file`, with the session's cookie and
    /// nothing else: a CSRF token goes in `fields` or in `action`'s query, as a test chooses.
    pub async fn post_multipart(&self, action: &str, fields: &[(&str, &str)], file: (&str, &[u8])) -> Reply {
        let boundary = "kennel-test-boundary-7d1f";
        let mut body = Vec::new();
        for (name, value) in fields {
            body.extend(
                format!("--{boundary}\r\ncontent-disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").bytes(),
            );
        }
        let (file_name, bytes) = file;
        body.extend(
            format!(
                "--{boundary}\r\ncontent-disposition: form-data; name=\"file\"; filename=\"{file_name}\"\r\n\
                 content-type: application/octet-stream\r\n\r\n"
            )
            .bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend(format!("\r\n--{boundary}--\r\n").bytes());
        let req = self
            .http
            .post(format!("{}{action}", self.base))
            .header("content-type", format!("multipart/form-data; boundary={boundary}"))
            .body(body);
        self.send(req).await
    }

    /// Creates the first operator through `/setup` and stays signed in.
    pub async fn set_up(&self, name: &str, password: &str) -> Reply {
        self.submit("/setup", "/setup", &[("name", name), ("password", password)]).await
    }

    pub async fn sign_in(&self, name: &str, password: &str) -> Reply {
        self.submit("/login", "/login", &[("name", name), ("password", password)]).await
    }
}

fn with_headers(req: reqwest::RequestBuilder, headers: &[(&str, &str)]) -> reqwest::RequestBuilder {
    headers.iter().fold(req, |req, (k, v)| req.header(*k, *v))
}

/// The first `csrf` hidden field's value in a page.
pub fn csrf_in(html: &str) -> Option<String> {
    let at = html.find("name=\"csrf\" value=\"")? + "name=\"csrf\" value=\"".len();
    Some(html[at..].split('"').next()?.to_string())
}
