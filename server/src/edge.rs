//! The daemon's HTTP edge (issue 43): how connections are accepted, timed and bounded.
//!
//! `axum::serve` gives hyper no timer, so its header-read timeout never applied and a
//! connection that trickled header lines, or sent nothing, stayed open for ever; a thousand of
//! them took every file descriptor and the daemon stopped answering. Here each connection is
//! served by hyper's HTTP/1 server with a timer:
//! - **Header read**: a request's head must arrive within `[server] header_read_timeout_secs`
//!   of the connection opening or of the previous response (so it bounds an idle keep-alive
//!   connection too).
//! - **Body**: each part of a request body must follow the last within
//!   `[server] body_timeout_secs` (`tower_http`'s request body timeout), and the whole body
//!   arrive within `body_deadline_secs` of the head ([`Deadline`]: a client dripping a byte
//!   at a time never pauses long), else the request fails.
//! - **Writes**: a write that cannot go on for `[server] write_timeout_secs` (the client stopped
//!   reading, its window full) ends the connection ([`WriteTimeout`]), so a live stream or a
//!   download nobody reads does not hold a connection for ever.
//! - **Connections**: at most `[server] max_connections` at once (never more than the open-file
//!   limit leaves, after [`raise_open_file_limit`]). A new connection at the cap takes the
//!   place of the oldest one that is not serving a request (waiting for a head: a slow client,
//!   or an idle keep-alive), so a flood of slow connections cannot keep `/healthz` or a person
//!   out; when every one is serving, the newcomer is answered `503` naming the setting. At
//!   most [`MAX_REFUSING`] refusals are under way at once, each for at most a second or two;
//!   past that a newcomer is closed at once, so refusals cannot take the descriptors either.
//!
//! # Design notes
//!
//! Accepted connections get `TCP_NODELAY`, so streamed events are not held back for the
//! client's delayed ACK (36.6 ms p50 first token before, 125 µs after; `docs/BENCHMARKS.md`).
//! The open-file limit is raised to the hard limit at start. At most 64 refusals (503) run at
//! once, a second per step; the rest are closed unanswered. `build.rs` links the release binary
//! with packed relative relocations (RELR).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tower::ServiceExt;

/// File descriptors kept for everything but connections (the database, Chromium's pipes,
/// agents' processes and files, outgoing requests): this many, or a quarter of a lower limit.
const RESERVED_FILES: u64 = 256;

/// How long the daemon waits on a full accept queue's error (out of descriptors) before
/// accepting again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Connections over the cap being answered 503 at once, at most; more are closed unanswered.
const MAX_REFUSING: usize = 64;

/// How long a refused connection may take to send its request's head, and to take the 503.
const REFUSAL_STEP: Duration = Duration::from_secs(1);

/// The edge's settings, from `[server]`.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_read: Duration,
    pub body: Duration,
    pub body_deadline: Duration,
    pub write: Duration,
    pub max_connections: usize,
}

impl Limits {
    /// `[server]`'s settings, the connection cap lowered to what `open_files` (the soft
    /// open-file limit) leaves after [`RESERVED_FILES`].
    pub fn from_config(server: &kennel_kernel::config::ServerConfig, open_files: u64) -> Limits {
        let room = open_files.saturating_sub(RESERVED_FILES.min(open_files / 4)).max(16);
        let max_connections = server.max_connections.min(room) as usize;
        if (max_connections as u64) < server.max_connections {
            tracing::warn!(
                configured = server.max_connections,
                open_files,
                max_connections,
                "[server] max_connections is over what the open-file limit leaves: lowered"
            );
        }
        Limits {
            header_read: Duration::from_secs(server.header_read_timeout_secs),
            body: Duration::from_secs(server.body_timeout_secs),
            body_deadline: Duration::from_secs(server.body_deadline_secs),
            write: Duration::from_secs(server.write_timeout_secs),
            max_connections,
        }
    }
}

/// Raises the soft open-file limit to the hard one (the common soft default, 1,024, is the
/// limit a flood of connections hit), and returns the soft limit now in force.
pub fn raise_open_file_limit() -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write the struct they are given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit.rlim_cur = limit.rlim_max;
            } else {
                tracing::warn!(soft = limit.rlim_cur, hard = limit.rlim_max, "cannot raise the open-file limit");
            }
        }
    }
    limit.rlim_cur
}

/// One open connection, as the cap sees it.
struct Open {
    /// Requests being served on it, from their head until their response's body ends.
    serving: Arc<AtomicUsize>,
    /// Told when the connection must give its place up.
    evict: Arc<Notify>,
}

/// The open connections, oldest first (ids grow).
#[derive(Default)]
struct Connections {
    open: Mutex<BTreeMap<u64, Open>>,
    next: AtomicU64,
    /// Wakes the server's shutdown when the last connection ends.
    closed: Notify,
}

impl Connections {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Open>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for a new connection: free, or taken from the oldest one serving nothing.
    /// `None` when all `max` are serving.
    fn admit(&self, max: usize) -> Option<(u64, Arc<AtomicUsize>, Arc<Notify>)> {
        let mut open = self.lock();
        if open.len() >= max {
            let idle = open.iter().find(|(_, c)| c.serving.load(Ordering::Acquire) == 0).map(|(id, _)| *id)?;
            if let Some(evicted) = open.remove(&idle) {
                evicted.evict.notify_one();
            }
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (serving, evict) = (Arc::new(AtomicUsize::new(0)), Arc::new(Notify::new()));
        open.insert(id, Open { serving: serving.clone(), evict: evict.clone() });
        Some((id, serving, evict))
    }

    fn remove(&self, id: u64) {
        let mut open = self.lock();
        open.remove(&id);
        if open.is_empty() {
            self.closed.notify_waiters();
        }
    }

    fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

/// Counts a request as served on its connection until its response body is done.
struct Serving(Arc<AtomicUsize>);

impl Serving {
    fn enter(count: &Arc<AtomicUsize>) -> Serving {
        count.fetch_add(1, Ordering::AcqRel);
        Serving(count.clone())
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its request counted as served until it ends (a live stream for
/// as long as it streams).
struct Counted {
    body: axum::body::Body,
    _serving: Serving,
}

impl http_body::Body for Counted {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Serves `app` on `listener` until `shutdown` resolves; then stops accepting, lets each
/// connection finish the request it serves, and returns once all are closed.
pub async fn serve(
    listener: TcpListener,
    app: App,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let limits = app.limits();
    let connections = Arc::new(Connections::default());
    let refusing = Arc::new(AtomicUsize::new(0));
    let (stopping, stop) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors (or a connection reset before it was taken): wait a
                    // moment rather than spin; connections closing free descriptors.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        // Without TCP_NODELAY a streamed event (a token, a live page's signal) written right
        // after another waits for the client's delayed ACK: 40 ms a piece on Linux.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!(error = %e, "cannot set TCP_NODELAY on a connection");
        }
        let Some((id, serving, evict)) = connections.admit(limits.max_connections) else {
            let refusal = Serving::enter(&refusing);
            if refusing.load(Ordering::Acquire) <= MAX_REFUSING {
                tokio::spawn(async move {
                    let _refusal = refusal;
                    refuse(tcp, limits.max_connections).await;
                });
            }
            continue;
        };
        let connection = Connection { app: app.clone(), peer, serving, evict, stop: stop.clone(), limits };
        let registered = Registered { connections: connections.clone(), id };
        tokio::spawn(async move {
            // Dropped however the task ends, a handler's panic included.
            let _registered = registered;
            connection.run(tcp).await;
        });
    }
    let _ = stopping.send(true);
    while !connections.is_empty() {
        let closed = connections.closed.notified();
        if connections.is_empty() {
            break;
        }
        closed.await;
    }
    Ok(())
}

/// What the edge serves: the daemon's router, which may still be being built when the first
/// connections come. Until it is, `GET /healthz` is answered by a router of its own (the
/// daemon is up: its store is open, its tools loaded, its socket bound) and every other
/// request waits for the whole router, then is served by it.
#[derive(Clone)]
pub struct App(Arc<Routers>);

struct Routers {
    health: Router,
    whole: std::sync::OnceLock<Router>,
    built: Notify,
    limits: Limits,
}

impl App {
    /// An edge that answers `GET /healthz` with `health` until [`App::finish`].
    pub fn starting(health: Router, limits: Limits) -> App {
        App(Arc::new(Routers {
            health: bounded(health, limits),
            whole: std::sync::OnceLock::new(),
            built: Notify::new(),
            limits,
        }))
    }

    /// The edge's settings.
    pub fn limits(&self) -> Limits {
        self.0.limits
    }

    /// Serves everything with `router` from now on, the requests waiting for it first.
    pub fn finish(&self, router: Router) {
        let _ = self.0.whole.set(bounded(router, self.0.limits));
        self.0.built.notify_waiters();
    }

    /// The router to serve a request with, once there is one (`health_check`: the request is
    /// `GET /healthz`).
    async fn router_for(&self, health_check: bool) -> Router {
        let routers = &self.0;
        loop {
            if let Some(router) = routers.whole.get() {
                return router.clone();
            }
            if health_check {
                return routers.health.clone();
            }
            // Registered before the second look, so a `finish` between the two still wakes it.
            let built = routers.built.notified();
            if routers.whole.get().is_none() {
                built.await;
            }
        }
    }
}

/// `router` with the request body's bounds: a pause of at most `[server] body_timeout_secs`
/// between parts, the whole within `body_deadline_secs`.
fn bounded(router: Router, limits: Limits) -> Router {
    let deadline = limits.body_deadline;
    router.layer(tower_http::timeout::RequestBodyTimeoutLayer::new(limits.body)).layer(axum::middleware::map_request(
        move |req: axum::extract::Request| async move {
            // A request with no body (most: every GET) gets no timer: nothing on the hot path.
            if http_body::Body::is_end_stream(req.body()) {
                return req;
            }
            req.map(|body| axum::body::Body::new(Deadline::new(body, deadline)))
        },
    ))
}

/// A connection's place in the registry, given back when its task ends.
struct Registered {
    connections: Arc<Connections>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.connections.remove(self.id);
    }
}

/// One accepted connection and what it needs to serve itself.
struct Connection {
    app: App,
    peer: SocketAddr,
    serving: Arc<AtomicUsize>,
    evict: Arc<Notify>,
    stop: watch::Receiver<bool>,
    limits: Limits,
}

impl Connection {
    async fn run(mut self, tcp: TcpStream) {
        let (app, peer, serving) = (self.app.clone(), self.peer, self.serving.clone());
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            let counted = Serving::enter(&serving);
            request.extensions_mut().insert(ConnectInfo(peer));
            let app = app.clone();
            async move {
                let health_check = request.method() == hyper::Method::GET && request.uri().path() == "/healthz";
                let router = app.router_for(health_check).await;
                let response = router.oneshot(request.map(axum::body::Body::new)).await?;
                Ok::<_, std::convert::Infallible>(
                    response.map(|body| axum::body::Body::new(Counted { body, _serving: counted })),
                )
            }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_read)
            .serve_connection(TokioIo::new(WriteTimeout::new(tcp, self.limits.write)), service);
        tokio::pin!(conn);
        tokio::select! {
            served = conn.as_mut() => log_end(served),
            // Its place went to a newer connection. A request begins only while the
            // connection is polled, never inside this branch: serving nothing now, dropping it
            // loses nothing; a request that began after the cap looked is let finish.
            () = self.evict.notified() => {
                if self.serving.load(Ordering::Acquire) > 0 {
                    conn.as_mut().graceful_shutdown();
                    log_end(conn.await);
                }
            }
            () = stopped(&mut self.stop) => {
                conn.as_mut().graceful_shutdown();
                log_end(conn.await);
            }
        }
    }
}

/// Resolves once the server stops (its guard, not `Send`, is not held).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

fn log_end(served: Result<(), hyper::Error>) {
    if let Err(e) = served
        && !e.is_incomplete_message()
    {
        tracing::debug!(error = %e, "a connection ended with an error");
    }
}

/// Answers a connection over the cap with a 503 naming the setting, and closes it: after its
/// request's head (a client reads no answer to a request it has not sent), or a moment.
async fn refuse(mut tcp: TcpStream, max: usize) {
    let mut head = Vec::with_capacity(1024);
    let read_head = async {
        let mut chunk = [0u8; 1024];
        while head.len() < 8 * 1024 && !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match tcp.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&chunk[..n]),
            }
        }
    };
    let _ = tokio::time::timeout(REFUSAL_STEP, read_head).await;
    let body =
        format!("Kennel is serving its [server] max_connections = {max} connections: try again in a few seconds.\n");
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nretry-after: 5\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSAL_STEP, tcp.write_all(answer.as_bytes())).await;
    let _ = tcp.shutdown().await;
}

/// A request body that fails once `deadline` has passed since the request began, however
/// steadily its parts come: the whole-body bound `tower_http`'s per-pause timeout is not.
struct Deadline {
    body: axum::body::Body,
    expires: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl Deadline {
    fn new(body: axum::body::Body, deadline: Duration) -> Deadline {
        Deadline { body, expires: Box::pin(tokio::time::sleep(deadline)) }
    }
}

/// The error a body past its deadline fails with (the handler answers it as a bad request).
#[derive(Debug)]
struct PastDeadline;

impl std::fmt::Display for PastDeadline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body took longer than [server] body_deadline_secs to arrive")
    }
}

impl std::error::Error for PastDeadline {}

impl http_body::Body for Deadline {
    type Data = axum::body::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if self.expires.as_mut().poll(cx).is_ready() {
            return std::task::Poll::Ready(Some(Err(Box::new(PastDeadline))));
        }
        std::pin::Pin::new(&mut self.body).poll_frame(cx).map_err(Into::into)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// A connection whose writes must make progress: one that stays pending for `limit` (the
/// client stopped reading and its window is full) fails, and hyper ends the connection.
struct WriteTimeout {
    io: TcpStream,
    limit: Duration,
    /// Running while a write waits; gone once one goes through.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl WriteTimeout {
    fn new(io: TcpStream, limit: Duration) -> WriteTimeout {
        WriteTimeout { io, limit, stalled: None }
    }

    /// What a write's poll gave, with pending turned into an error once it has lasted `limit`.
    fn timed<T>(&mut self, cx: &mut Context<'_>, polled: Poll<std::io::Result<T>>) -> Poll<std::io::Result<T>> {
        if polled.is_ready() {
            self.stalled = None;
            return polled;
        }
        let limit = self.limit;
        let stalled = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the client read nothing for {} s ([server] write_timeout_secs)", limit.as_secs()),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for WriteTimeout {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for WriteTimeout {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.timed(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.timed(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_flush(cx);
        self.timed(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use axum::routing::get;

    use super::*;

    fn limits() -> Limits {
        let second = Duration::from_secs(1);
        Limits { header_read: second, body: second, body_deadline: second, write: second, max_connections: 16 }
    }

    /// The body of `GET path` on a connection of its own.
    async fn get_body(addr: SocketAddr, path: &str) -> String {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nhost: kennel\r\nconnection: close\r\n\r\n");
        tcp.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        tcp.read_to_string(&mut answer).await.unwrap();
        answer.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or(answer)
    }

    #[tokio::test]
    async fn while_the_router_is_built_healthz_answers_and_every_other_request_waits_for_it() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = App::starting(Router::new().route("/healthz", get(|| async { "starting" })), limits());
        tokio::spawn(serve(listener, app.clone(), std::future::pending()));

        assert_eq!(get_body(addr, "/healthz").await, "starting");
        let early = tokio::spawn(get_body(addr, "/api/templates"));
        let early_post = tokio::spawn(async move {
            let mut tcp = TcpStream::connect(addr).await.unwrap();
            tcp.write_all(b"POST /healthz HTTP/1.1\r\nhost: kennel\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .await
                .unwrap();
            let mut answer = String::new();
            tcp.read_to_string(&mut answer).await.unwrap();
            answer
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!early.is_finished() && !early_post.is_finished(), "requests other than GET /healthz wait");

        app.finish(
            Router::new()
                .route("/healthz", get(|| async { "serving" }))
                .route("/api/templates", get(|| async { "the whole router" })),
        );
        assert_eq!(early.await.unwrap(), "the whole router", "a waiting request is served once the router is built");
        assert!(early_post.await.unwrap().starts_with("HTTP/1.1 405"), "and by the whole router's rules");
        assert_eq!(get_body(addr, "/healthz").await, "serving");
    }
}
