//! The browser's only way out: an HTTP forward proxy on 127.0.0.1 that headless Chromium is
//! started behind (`--proxy-server=http://127.0.0.1:PORT --proxy-bypass-list=<-loopback>`), so
//! every request a page makes (navigations, redirects, sub-resources, fetch, WebSockets)
//! reaches the network only after the check every other outbound URL gets ([`super::guard`]).
//!
//! Chromium hands the proxy host names and does no DNS itself. For each request the proxy
//! resolves the host once ([`guard::lookup`]), refuses it when `blocked` names the host or any
//! of its addresses ([`guard::check_blocked`]), checks every address against `allowed`
//! ([`guard::check`]), and connects to a checked address itself: what was checked is what is
//! reached, whatever DNS answers next.
//!
//! - `CONNECT host:port` (https, wss): `200 Connection Established`, then bytes both ways.
//!   Refused: `403` with the reason as text, and the connection closes. Chromium shows only
//!   `ERR_TUNNEL_CONNECTION_FAILED`, so the proxy keeps the latest refusals for
//!   [`GuardProxy::refusal_for`].
//! - An absolute-form `http://` request (any method, any body): forwarded in origin form on an
//!   upstream connection of its own (`Connection: close` upstream, hop-by-hop headers dropped,
//!   `Host` from the checked URL) and the response streamed back. The browser's connection
//!   stays open for its next request, which is checked on its own. `Upgrade: websocket` is
//!   forwarded and, once upstream answers `101`, tunnelled like a `CONNECT`.
//! - A refused request, and anything that is not one of the two forms above (origin form,
//!   `https://` in absolute form, other schemes), gets the refusal page: `403`,
//!   `X-Kennel-Refused: REASON` and an HTML page whose `data-kennel-refused` attribute the
//!   browser tools look for after a navigation. A malformed request gets hyper's `400`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http_body_util::{Either, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::http::uri::PathAndQuery;
use hyper::upgrade::OnUpgrade;
use hyper::{Method, Request, Response, StatusCode, Uri, Version};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::guard::{self, AllowedHosts, UrlHost};
use crate::error::{Error, ErrorKind, Result};

/// The most a request's line and headers may take (hyper answers `431` beyond it).
const MAX_HEAD: usize = 64 * 1024;
/// How long a client may take to send a request's head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long reaching a checked address may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How many refusals [`GuardProxy::refusal_for`] can look back on.
const REFUSALS_KEPT: usize = 64;

/// What the proxy lets through: `allowed` with the guard's usual meaning, minus whatever
/// `blocked` names. The settings are how messages name the two lists, like
/// `[browser] allowed_hosts`.
#[derive(Debug, Clone)]
pub struct ProxyRules {
    pub allowed: AllowedHosts,
    pub blocked: AllowedHosts,
    pub allowed_setting: &'static str,
    pub blocked_setting: &'static str,
}

impl ProxyRules {
    /// The addresses `host:port` resolves to, once, when the rules let it through: `blocked`
    /// first, then `allowed` for every address. The one check of the proxy and of a tool
    /// that looks before it opens a URL.
    pub async fn checked(&self, host: &UrlHost, port: u16) -> Result<Vec<std::net::IpAddr>> {
        let ips = guard::lookup(host, port).await?;
        guard::check_blocked(&self.blocked, self.blocked_setting, host, port, &ips)
            .and_then(|()| guard::check(&self.allowed, self.allowed_setting, host, port, &ips))
            .inspect_err(|e| {
                tracing::info!(%host, port, addresses = ?ips, reason = %e.message, "the browser proxy refused a connection");
            })?;
        Ok(ips)
    }

    /// [`ProxyRules::checked`] for an http(s) URL.
    pub async fn check_url(&self, url: &reqwest::Url) -> Result<()> {
        let (host, port) = guard::host_and_port(url)?;
        self.checked(&host, port).await.map(|_| ())
    }
}

/// A running proxy. Dropping it stops it: no new connections, and every open one (tunnels
/// included) ends.
pub struct GuardProxy {
    addr: SocketAddr,
    nonce: Arc<str>,
    refusals: Arc<FailedOpens>,
    reserved: Arc<Reserved>,
    stop: CancellationToken,
}

/// Loopback ports no page may reach whatever the lists open: the proxy's own and Chromium's
/// DevTools port (an operator who opens `127.0.0.1:*` must not hand pages the browser's
/// controls).
#[derive(Default)]
struct Reserved(std::sync::Mutex<Vec<u16>>);

impl Reserved {
    /// Any address that reaches this machine: loopback, the unspecified address (Linux takes
    /// `0.0.0.0` for 127.0.0.1) and IPv4 in IPv6.
    fn holds(&self, ip: std::net::IpAddr, port: u16) -> bool {
        let ip = ip.to_canonical();
        let local =
            ip.is_loopback() || ip.is_unspecified() || matches!(ip, std::net::IpAddr::V4(v4) if v4.octets()[0] == 0);
        local && self.0.lock().unwrap_or_else(|e| e.into_inner()).contains(&port)
    }
}

impl GuardProxy {
    /// Binds 127.0.0.1:0 and serves until the returned value is dropped.
    pub async fn start(rules: ProxyRules) -> Result<GuardProxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let refusals = Arc::new(FailedOpens::default());
        let reserved = Arc::new(Reserved::default());
        reserved.0.lock().unwrap_or_else(|e| e.into_inner()).push(addr.port());
        let stop = CancellationToken::new();
        let nonce: Arc<str> = format!("{:032x}", rand::random::<u128>()).into();
        let proxy =
            Arc::new(Proxy { rules, refusals: refusals.clone(), reserved: reserved.clone(), nonce: nonce.clone() });
        tokio::spawn(accept(listener, proxy, stop.clone()));
        Ok(GuardProxy { addr, nonce, refusals, reserved, stop })
    }

    /// Refuses every connection to loopback `port` from now on (Chromium's DevTools port).
    pub fn reserve(&self, port: u16) {
        self.reserved.0.lock().unwrap_or_else(|e| e.into_inner()).push(port);
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The most recent refusals (newest last, at most 64 kept): host:port and the reason, for the
    /// tool that navigated there to explain a failed CONNECT (Chromium shows only ERR_TUNNEL_CONNECTION_FAILED).
    ///
    /// Kept are the hosts the rules refused and those the proxy could not reach (no such name,
    /// no answer); a later successful connection to the same host and port forgets them.
    /// `host` is matched as the URL parser writes it, in any case, with or without brackets.
    pub fn refusal_for(&self, host: &str, port: u16) -> Option<Error> {
        self.refusals.latest_error(host, port)
    }

    /// The mark of this proxy's refusal pages (`data-kennel-nonce`): random, so a page cannot
    /// pass itself off as a refusal.
    pub fn nonce(&self) -> &str {
        &self.nonce
    }
}

impl Drop for GuardProxy {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A response body: one the proxy wrote, or upstream's as it arrives.
type Body = Either<Full<Bytes>, Incoming>;

async fn accept(listener: TcpListener, proxy: Arc<Proxy>, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                tokio::spawn(stop.clone().run_until_cancelled_owned(serve(stream, proxy.clone(), stop.clone())));
            }
            Err(e) => {
                // Most likely out of file descriptors: wait for some to close rather than spin.
                tracing::warn!(error = %e, "the browser proxy cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// One browser connection: its requests, one after another, until either side closes.
async fn serve(stream: TcpStream, proxy: Arc<Proxy>, stop: CancellationToken) {
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |request| {
        let (proxy, stop) = (proxy.clone(), stop.clone());
        async move { Ok::<_, Infallible>(proxy.answer(request, stop).await) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .max_header_size(MAX_HEAD)
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    if let Err(e) = connection.await {
        tracing::debug!(error = %e, "a browser proxy connection ended with an error");
    }
}

struct Proxy {
    rules: ProxyRules,
    refusals: Arc<FailedOpens>,
    reserved: Arc<Reserved>,
    nonce: Arc<str>,
}

impl Proxy {
    async fn answer(&self, request: Request<Incoming>, stop: CancellationToken) -> Response<Body> {
        if request.method() == Method::CONNECT {
            self.tunnel(request, stop).await
        } else {
            self.forward(request, stop).await
        }
    }

    /// `CONNECT host:port`: connect, answer `200`, then copy bytes both ways.
    async fn tunnel(&self, request: Request<Incoming>, stop: CancellationToken) -> Response<Body> {
        let opened = match connect_target(request.uri()) {
            Ok((host, port)) => self.open(&host, port).await,
            Err(e) => Err(e),
        };
        let upstream = match opened {
            Ok(upstream) => upstream,
            Err(e) => {
                let mut answer = text(status_for(&e), &e.message);
                if answer.status() == StatusCode::FORBIDDEN {
                    answer.headers_mut().insert("x-kennel-refused", header_text(&e.message));
                }
                answer.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                return answer;
            }
        };
        let client = hyper::upgrade::on(request);
        tokio::spawn(stop.run_until_cancelled_owned(relay(client, upstream)));
        let mut established = Response::new(Either::Left(Full::default()));
        established.extensions_mut().insert(hyper::ext::ReasonPhrase::from_static(b"Connection Established"));
        established
    }

    /// An absolute-form `http://` request: forward it in origin form, stream the answer back.
    async fn forward(&self, mut request: Request<Incoming>, stop: CancellationToken) -> Response<Body> {
        let target = match HttpTarget::of(request.uri()) {
            Ok(target) => target,
            Err(e) => return refused_page(&e.message, &self.nonce),
        };
        let websocket = is_websocket_upgrade(request.headers()).then(|| hyper::upgrade::on(&mut request));
        let (mut head, body) = request.into_parts();
        let upgrade = head.headers.get(header::UPGRADE).cloned();
        strip_hop_by_hop(&mut head.headers);
        head.uri = target.origin;
        head.version = Version::HTTP_11;
        head.extensions.clear();
        head.headers.insert(header::HOST, target.host_header);
        // The request comes from 127.0.0.1 but on a page's behalf: a server that trusts loopback
        // peers (Kennel's own first-run setup) must see that it was forwarded.
        head.headers.insert(header::FORWARDED, HeaderValue::from_static("for=unknown;by=kennel-browser;proto=http"));
        head.headers.insert("x-forwarded-for", HeaderValue::from_static("unknown"));
        match (&websocket, upgrade) {
            (Some(_), Some(upgrade)) => {
                head.headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
                head.headers.insert(header::UPGRADE, upgrade);
            }
            _ => {
                head.headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
        }

        let (host, port) = (target.host, target.port);
        let upstream = match self.open(&host, port).await {
            Ok(upstream) => upstream,
            Err(e) if status_for(&e) == StatusCode::FORBIDDEN => return refused_page(&e.message, &self.nonce),
            Err(e) => return text(status_for(&e), &e.message),
        };
        let (mut sender, connection) = match hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await {
            Ok(handshake) => handshake,
            Err(e) => return text(StatusCode::BAD_GATEWAY, &format!("cannot talk to `{host}:{port}`: {e}")),
        };
        tokio::spawn(stop.clone().run_until_cancelled_owned(async move {
            if let Err(e) = connection.with_upgrades().await {
                tracing::debug!(error = %e, "an upstream connection of the browser proxy ended with an error");
            }
        }));
        let mut response = match sender.send_request(Request::from_parts(head, body)).await {
            Ok(response) => response,
            Err(e) => return text(StatusCode::BAD_GATEWAY, &format!("`{host}:{port}` gave no answer: {e}")),
        };

        let upgrade = response.headers().get(header::UPGRADE).cloned();
        strip_hop_by_hop(response.headers_mut());
        if let (Some(client), Some(upgrade), StatusCode::SWITCHING_PROTOCOLS) = (websocket, upgrade, response.status())
        {
            response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
            response.headers_mut().insert(header::UPGRADE, upgrade);
            let upstream = hyper::upgrade::on(&mut response);
            tokio::spawn(stop.run_until_cancelled_owned(async move {
                match upstream.await {
                    Ok(upstream) => relay(client, TokioIo::new(upstream)).await,
                    Err(e) => tracing::debug!(error = %e, "upstream did not switch protocols"),
                }
            }));
        }
        response.map(Either::Right)
    }

    /// Resolves `host` once, checks it, and connects to a checked address. A failure is kept
    /// for [`GuardProxy::refusal_for`]; a success forgets earlier ones.
    async fn open(&self, host: &UrlHost, port: u16) -> Result<TcpStream> {
        let opened = self.connect(host, port).await;
        match &opened {
            Ok(_) => self.refusals.forget(host, port),
            Err(e) => self.refusals.remember_kind(host, port, &e.message, e.kind),
        }
        opened
    }

    async fn connect(&self, host: &UrlHost, port: u16) -> Result<TcpStream> {
        let ips = self.rules.checked(host, port).await?;
        if ips.iter().any(|&ip| self.reserved.holds(ip, port)) {
            tracing::warn!(%host, port, "a page tried to reach the browser's own control port");
            return Err(Error::forbidden(format!(
                "`{host}:{port}` is the browser's own control port: no page may reach it"
            )));
        }
        // Every address passed the check: try them in the order DNS gave them.
        let attempts = async {
            let mut failure = io::Error::other("no address");
            for &ip in &ips {
                match TcpStream::connect((ip, port)).await {
                    Ok(stream) => return Ok(stream),
                    Err(e) => failure = e,
                }
            }
            Err(failure)
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, attempts).await {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(e)) => Err(Error::failed(format!("cannot connect to `{host}:{port}`: {e}"))),
            Err(_) => Err(Error::new(
                ErrorKind::Timeout,
                format!("`{host}:{port}` did not accept a connection within {} s", CONNECT_TIMEOUT.as_secs()),
            )),
        }
    }
}

/// Copies bytes both ways between the browser's upgraded connection and `upstream` until both
/// sides are done.
async fn relay<U: AsyncRead + AsyncWrite + Unpin>(client: OnUpgrade, mut upstream: U) {
    match client.await {
        Ok(client) => {
            if let Err(e) = tokio::io::copy_bidirectional(&mut TokioIo::new(client), &mut upstream).await {
                tracing::debug!(error = %e, "a browser proxy tunnel ended with an error");
            }
        }
        Err(e) => tracing::debug!(error = %e, "the browser did not take its tunnel"),
    }
}

/// A `CONNECT` request's `host:port`, read as the guard reads a URL's.
fn connect_target(uri: &Uri) -> Result<(UrlHost, u16)> {
    let authority = uri
        .authority()
        .filter(|a| uri.scheme().is_none() && !a.as_str().contains('@') && a.port_u16().is_some())
        .ok_or_else(|| Error::invalid(format!("`CONNECT {uri}` does not name a host and a port")))?;
    let url = reqwest::Url::parse(&format!("http://{authority}/"))
        .map_err(|e| Error::invalid(format!("`CONNECT {uri}` does not name a host and a port: {e}")))?;
    guard::host_and_port(&url)
}

/// Where an absolute-form `http://` request goes, and how to ask for it there.
struct HttpTarget {
    host: UrlHost,
    port: u16,
    /// The URL's host and port, as `Host` says them to upstream (whatever the browser wrote).
    host_header: HeaderValue,
    /// The path and query, as the browser wrote them.
    origin: Uri,
}

impl HttpTarget {
    fn of(uri: &Uri) -> Result<HttpTarget> {
        if uri.scheme().is_none() {
            return Err(Error::invalid(format!(
                "`{uri}` is not an absolute URL: Kennel's proxy takes requests like `GET http://host/path`"
            )));
        }
        let url = reqwest::Url::parse(&uri.to_string())
            .map_err(|e| Error::invalid(format!("`{uri}` is not a URL Kennel can open: {e}")))?;
        let (host, port) = guard::host_and_port(&url)?;
        if url.scheme() != "http" {
            return Err(Error::invalid(format!("`{url}`: an https request goes through the proxy as a CONNECT")));
        }
        let host_header = match (url.host_str(), url.port()) {
            (Some(name), Some(port)) => format!("{name}:{port}"),
            (Some(name), None) => name.to_string(),
            (None, _) => String::new(),
        };
        let host_header = HeaderValue::from_str(&host_header)
            .map_err(|_| Error::invalid(format!("`{url}` has a host Kennel cannot write in a request")))?;
        Ok(HttpTarget { host, port, host_header, origin: origin_form(uri) })
    }
}

/// `http://host/a?b` → `/a?b`; an empty path is `/`.
fn origin_form(uri: &Uri) -> Uri {
    let path = uri.path_and_query().map_or("", PathAndQuery::as_str);
    let path = if path.starts_with('/') { path.to_string() } else { format!("/{path}") };
    path.parse::<PathAndQuery>().map(Uri::from).unwrap_or_else(|_| Uri::from_static("/"))
}

/// Headers that describe one connection, not the message: never passed on. `Transfer-Encoding`
/// and `Content-Length` stay, for hyper to frame the body on the next hop as it was framed on
/// this one.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "upgrade",
];

/// What `Connection` may not take away with it.
const FRAMING: [&str; 3] = ["content-length", "transfer-encoding", "host"];

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let listed: Vec<String> = tokens(headers, header::CONNECTION)
        .map(|name| name.to_ascii_lowercase())
        .filter(|name| !name.is_empty() && !FRAMING.contains(&name.as_str()))
        .collect();
    for name in listed.iter().map(String::as_str).chain(HOP_BY_HOP) {
        headers.remove(name);
    }
}

/// The comma-separated tokens of every `name` header.
fn tokens(headers: &HeaderMap, name: header::HeaderName) -> impl Iterator<Item = &str> {
    headers.get_all(name).into_iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).map(str::trim)
}

fn is_websocket_upgrade(headers: &HeaderMap) -> bool {
    tokens(headers, header::CONNECTION).any(|t| t.eq_ignore_ascii_case("upgrade"))
        && tokens(headers, header::UPGRADE).any(|t| t.eq_ignore_ascii_case("websocket"))
}

/// The status that answers a failure to open: a refusal (by the rules, or of a request the
/// proxy does not take) is `403`; a name that does not resolve or a host that does not answer is
/// upstream's failure.
fn status_for(e: &Error) -> StatusCode {
    match e.kind {
        ErrorKind::Forbidden | ErrorKind::InvalidArguments => StatusCode::FORBIDDEN,
        ErrorKind::Timeout => StatusCode::GATEWAY_TIMEOUT,
        _ => StatusCode::BAD_GATEWAY,
    }
}

fn text(status: StatusCode, message: &str) -> Response<Body> {
    let mut answer = Response::new(Either::Left(Full::new(Bytes::from(format!("{message}\n")))));
    *answer.status_mut() = status;
    answer.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    answer
}

/// The answer to a refused request: a page that says why, marked for the browser tools.
fn refused_page(reason: &str, nonce: &str) -> Response<Body> {
    let escaped = html_escape(reason);
    let page = format!(
        "<!doctype html><html data-kennel-refused=\"{escaped}\" data-kennel-nonce=\"{nonce}\"><head><title>Refused by Kennel</title></head>\
         <body><h1>Refused by Kennel</h1><p>{escaped}</p></body></html>"
    );
    let mut answer = Response::new(Either::Left(Full::new(Bytes::from(page))));
    *answer.status_mut() = StatusCode::FORBIDDEN;
    let headers = answer.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("x-kennel-refused", header_text(reason));
    answer
}

/// `text` as a header value: what is not printable ASCII becomes `?`.
fn header_text(text: &str) -> HeaderValue {
    let printable: String = text.chars().map(|c| if c == ' ' || c.is_ascii_graphic() { c } else { '?' }).collect();
    HeaderValue::from_str(&printable).unwrap_or_else(|_| HeaderValue::from_static("refused"))
}

/// `text` safe in HTML text and in a quoted attribute.
fn html_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// The latest failures to open, newest last, one per host and port.
#[derive(Default)]
struct FailedOpens(Mutex<VecDeque<FailedOpen>>);

struct FailedOpen {
    host: String,
    port: u16,
    reason: String,
    kind: ErrorKind,
}

impl FailedOpens {
    #[cfg(test)]
    fn remember(&self, host: &UrlHost, port: u16, reason: &str) {
        self.remember_kind(host, port, reason, ErrorKind::Forbidden);
    }

    fn remember_kind(&self, host: &UrlHost, port: u16, reason: &str, kind: ErrorKind) {
        let host = host_key(&host.to_string());
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        kept.retain(|r| !(r.host == host && r.port == port));
        if kept.len() == REFUSALS_KEPT {
            kept.pop_front();
        }
        kept.push_back(FailedOpen { host, port, reason: reason.to_string(), kind });
    }

    fn forget(&self, host: &UrlHost, port: u16) {
        let host = host_key(&host.to_string());
        self.0.lock().unwrap_or_else(PoisonError::into_inner).retain(|r| !(r.host == host && r.port == port));
    }

    #[cfg(test)]
    fn latest(&self, host: &str, port: u16) -> Option<String> {
        self.latest_error(host, port).map(|e| e.message)
    }

    fn latest_error(&self, host: &str, port: u16) -> Option<Error> {
        let host = host_key(host);
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        kept.iter().rev().find(|r| r.host == host && r.port == port).map(|r| Error::new(r.kind, r.reason.clone()))
    }
}

/// One spelling per host: lower case, no brackets or trailing dot, addresses in their short form.
fn host_key(host: &str) -> String {
    let host = host.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.');
    match host.parse::<IpAddr>() {
        Ok(ip) => ip.to_string(),
        Err(_) => host.to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    const ALLOWED: &str = "[browser] allowed_hosts";
    const BLOCKED: &str = "[browser] blocked_hosts";
    const ANSWER: &str = "hello from upstream";

    /// An origin server on loopback: answers every request with [`ANSWER`] and keeps what it
    /// received (head as sent, body decoded).
    struct Upstream {
        addr: SocketAddr,
        received: Arc<Mutex<Vec<String>>>,
        hits: Arc<AtomicUsize>,
    }

    impl Upstream {
        async fn start() -> Upstream {
            let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
            let addr = listener.local_addr().unwrap();
            let received = Arc::new(Mutex::new(Vec::new()));
            let hits = Arc::new(AtomicUsize::new(0));
            let (seen, counted) = (received.clone(), hits.clone());
            tokio::spawn(async move {
                while let Ok((mut stream, _)) = listener.accept().await {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let seen = seen.clone();
                    tokio::spawn(async move {
                        let request = read_request(&mut stream).await;
                        seen.lock().unwrap().push(request);
                        let answer = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{ANSWER}",
                            ANSWER.len()
                        );
                        let _ = stream.write_all(answer.as_bytes()).await;
                        let _ = stream.shutdown().await;
                    });
                }
            });
            Upstream { addr, received, hits }
        }

        fn url(&self, path: &str) -> String {
            format!("http://{}{path}", self.addr)
        }

        fn hits(&self) -> usize {
            self.hits.load(Ordering::SeqCst)
        }

        /// The one request upstream received, lower-cased for header checks.
        fn only_request(&self) -> String {
            let received = self.received.lock().unwrap();
            assert_eq!(received.len(), 1, "{received:?}");
            received[0].clone()
        }
    }

    /// A request's head and its body (a `Content-Length` one, or chunked, decoded).
    async fn read_request(stream: &mut TcpStream) -> String {
        let mut data = Vec::new();
        let mut buf = [0u8; 4096];
        let head_end = loop {
            if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "the request ended before its head: {:?}", String::from_utf8_lossy(&data));
            data.extend_from_slice(&buf[..n]);
        };
        let head = String::from_utf8_lossy(&data[..head_end]).to_ascii_lowercase();
        let length = head.lines().find_map(|l| l.strip_prefix("content-length:")).map(|v| v.trim().parse().unwrap());
        let chunked = head.contains("transfer-encoding: chunked");
        loop {
            let body = &data[head_end..];
            let done = match length {
                Some(length) => body.len() >= length,
                None => !chunked || body.ends_with(b"0\r\n\r\n"),
            };
            if done {
                break;
            }
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "the request ended before its body");
            data.extend_from_slice(&buf[..n]);
        }
        let body = String::from_utf8_lossy(&data[head_end..]).to_string();
        format!("{head}{}", if chunked { dechunk(&body) } else { body })
    }

    fn dechunk(mut body: &str) -> String {
        let mut out = String::new();
        loop {
            let (size, rest) = body.split_once("\r\n").unwrap();
            let size = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).unwrap();
            if size == 0 {
                return out;
            }
            out.push_str(&rest[..size]);
            body = &rest[size + 2..];
        }
    }

    async fn proxy(allowed: &[&str], blocked: &[&str]) -> GuardProxy {
        GuardProxy::start(ProxyRules {
            allowed: AllowedHosts::parse(allowed).unwrap(),
            blocked: AllowedHosts::parse(blocked).unwrap(),
            allowed_setting: ALLOWED,
            blocked_setting: BLOCKED,
        })
        .await
        .unwrap()
    }

    fn client(proxy: &GuardProxy) -> reqwest::Client {
        let through = reqwest::Proxy::all(format!("http://{}", proxy.addr())).unwrap();
        crate::net::http_client().proxy(through).build().unwrap()
    }

    /// Sends `request` on a new connection to the proxy and reads until the proxy closes it.
    async fn raw(proxy: &GuardProxy, request: &str) -> String {
        let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    /// Reads up to the end of a response's head.
    async fn read_head(stream: &mut TcpStream) -> String {
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8];
            assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "closed in the head: {head:?}");
            head.push(byte[0]);
        }
        String::from_utf8(head).unwrap()
    }

    #[tokio::test]
    async fn an_allowed_request_reaches_upstream_in_origin_form_without_proxy_headers() {
        let upstream = Upstream::start().await;
        let proxy = proxy(&[&upstream.addr.to_string()], &[]).await;
        let answer = client(&proxy)
            .get(upstream.url("/page?q=1"))
            .header("proxy-connection", "keep-alive")
            .header("proxy-authorization", "Basic c2VjcmV0")
            .header("connection", "x-hop")
            .header("x-hop", "1")
            .header("x-end-to-end", "2")
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.text().await.unwrap(), ANSWER);
        let request = upstream.only_request();
        assert!(request.starts_with("get /page?q=1 http/1.1\r\n"), "{request}");
        assert!(request.contains(&format!("host: {}\r\n", upstream.addr)), "{request}");
        assert!(request.contains("connection: close\r\n"), "{request}");
        assert!(request.contains("x-end-to-end: 2\r\n"), "{request}");
        for dropped in ["proxy-connection", "proxy-authorization", "x-hop", "keep-alive"] {
            assert!(!request.contains(dropped), "{dropped} was passed on: {request}");
        }
    }

    #[tokio::test]
    async fn a_refused_request_gets_the_refusal_page_and_never_reaches_upstream() {
        let upstream = Upstream::start().await;
        let proxy = proxy(&["other.example:443"], &[]).await;
        let answer = client(&proxy).get(upstream.url("/")).send().await.unwrap();
        assert_eq!(answer.status(), 403);
        let expected = format!("`{}` is not in {ALLOWED}", upstream.addr);
        assert_eq!(answer.headers()["x-kennel-refused"], expected.as_str());
        assert_eq!(answer.headers()["content-type"], "text/html; charset=utf-8");
        let page = answer.text().await.unwrap();
        let escaped = html_escape(&expected);
        let marked = format!("<html data-kennel-refused=\"{escaped}\" data-kennel-nonce=\"{}\">", proxy.nonce());
        assert!(page.contains(&marked), "{page}");
        assert!(page.contains(&format!("<p>{escaped}</p>")), "{page}");
        assert_eq!(upstream.hits(), 0);
        assert_eq!(proxy.refusal_for("127.0.0.1", upstream.addr.port()).map(|e| e.message), Some(expected));

        // With no list, loopback is refused as special-purpose.
        let proxy = self::proxy(&[], &[]).await;
        let answer = client(&proxy).get(upstream.url("/")).send().await.unwrap();
        assert_eq!(answer.status(), 403);
        assert!(answer.headers()["x-kennel-refused"].to_str().unwrap().contains("loopback"));
        assert_eq!(upstream.hits(), 0);
    }

    #[tokio::test]
    async fn blocked_overrides_allowed() {
        let upstream = Upstream::start().await;
        let proxy = proxy(&[&upstream.addr.to_string()], &["127.0.0.0/8:*"]).await;
        let answer = client(&proxy).get(upstream.url("/")).send().await.unwrap();
        assert_eq!(answer.status(), 403);
        let expected = format!("`{}` is in {BLOCKED}", upstream.addr);
        assert_eq!(answer.headers()["x-kennel-refused"], expected.as_str());
        assert_eq!(upstream.hits(), 0);
    }

    #[tokio::test]
    async fn connect_to_an_allowed_target_tunnels_bytes() {
        let upstream = Upstream::start().await;
        let proxy = proxy(&[&upstream.addr.to_string()], &[]).await;
        let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
        let target = upstream.addr;
        stream.write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes()).await.unwrap();
        let head = read_head(&mut stream).await;
        assert!(head.starts_with("HTTP/1.1 200 Connection Established\r\n"), "{head}");
        stream.write_all(b"GET /through HTTP/1.1\r\nHost: tunnel\r\n\r\n").await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n") && answer.ends_with(ANSWER), "{answer}");
        assert!(upstream.only_request().starts_with("get /through http/1.1\r\nhost: tunnel\r\n"));
    }

    #[tokio::test]
    async fn a_refused_connect_is_403_and_remembered() {
        let upstream = Upstream::start().await;
        let port = upstream.addr.port();
        let proxy = proxy(&["127.0.0.1:1"], &[]).await;
        let answer = raw(&proxy, &format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n")).await;
        let expected = format!("`127.0.0.1:{port}` is not in {ALLOWED}");
        assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
        assert!(answer.ends_with(&format!("\r\n\r\n{expected}\n")), "{answer}");
        assert_eq!(proxy.refusal_for("127.0.0.1", port).map(|e| e.message), Some(expected));
        assert!(proxy.refusal_for("127.0.0.1", port + 1).is_none());
        assert_eq!(upstream.hits(), 0);

        let answer = raw(&proxy, "CONNECT no-port.example HTTP/1.1\r\nHost: no-port.example\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
    }

    #[tokio::test]
    async fn request_bodies_arrive_intact() {
        let upstream = Upstream::start().await;
        let proxy = proxy(&[&upstream.addr.to_string()], &[]).await;
        let body = "name=kennel&text=".to_string() + &"x".repeat(100_000);
        let answer = client(&proxy).post(upstream.url("/form")).body(body.clone()).send().await.unwrap();
        assert_eq!(answer.text().await.unwrap(), ANSWER);
        let request = upstream.only_request();
        assert!(request.starts_with("post /form http/1.1\r\n"), "{}", &request[..100]);
        assert!(request.ends_with(&format!("\r\n\r\n{body}")), "the body arrives as sent");

        let chunked = Upstream::start().await;
        let proxy = self::proxy(&[&chunked.addr.to_string()], &[]).await;
        let target = chunked.url("/chunks");
        let answer = raw(
            &proxy,
            &format!(
                "POST {target} HTTP/1.1\r\nHost: {}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
                 5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
                chunked.addr
            ),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n") && answer.ends_with(ANSWER), "{answer}");
        assert!(chunked.only_request().ends_with("\r\n\r\nhello world"), "{}", chunked.only_request());
    }

    #[tokio::test]
    async fn a_malformed_request_is_400_and_the_proxy_keeps_serving() {
        let upstream = Upstream::start().await;
        let proxy = proxy(&[&upstream.addr.to_string()], &[]).await;
        let answer = raw(&proxy, "NONSENSE\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{answer}");
        let answer = raw(&proxy, &format!("GET /x HTTP/1.1\r\nHost: x\r\nX: {}\r\n\r\n", "a".repeat(70_000))).await;
        assert!(answer.starts_with("HTTP/1.1 431 "), "a head over 64 KiB: {answer}");
        let answer = client(&proxy).get(upstream.url("/after")).send().await.unwrap();
        assert_eq!(answer.text().await.unwrap(), ANSWER);
    }

    #[tokio::test]
    async fn requests_not_in_absolute_http_form_are_refused_with_the_page() {
        let proxy = proxy(&[], &[]).await;
        for (request, reason) in [
            ("GET /local HTTP/1.1\r\nHost: x\r\n", "is not an absolute URL"),
            ("GET https://example.com/ HTTP/1.1\r\nHost: example.com\r\n", "goes through the proxy as a CONNECT"),
            ("GET ftp://example.com/ HTTP/1.1\r\nHost: example.com\r\n", "is not an http(s) URL"),
        ] {
            let answer = raw(&proxy, &format!("{request}Connection: close\r\n\r\n")).await;
            assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
            assert!(answer.contains(reason) && answer.contains("data-kennel-refused="), "{answer}");
        }
    }

    #[tokio::test]
    async fn a_websocket_upgrade_over_plain_http_is_tunnelled_after_101() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let request = read_request(&mut stream).await;
            assert!(request.starts_with("get /socket http/1.1\r\n"), "{request}");
            assert!(request.contains("connection: upgrade\r\n") && request.contains("upgrade: websocket\r\n"));
            stream
                .write_all(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
                .await
                .unwrap();
            let mut ping = [0u8; 4];
            stream.read_exact(&mut ping).await.unwrap();
            stream.write_all(&ping).await.unwrap();
        });
        let proxy = proxy(&[&addr.to_string()], &[]).await;
        let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
        let request = format!(
            "GET http://{addr}/socket HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let head = read_head(&mut stream).await.to_ascii_lowercase();
        assert!(head.starts_with("http/1.1 101 switching protocols\r\n"), "{head}");
        assert!(head.contains("upgrade: websocket\r\n"), "{head}");
        stream.write_all(b"ping").await.unwrap();
        let mut echo = [0u8; 4];
        stream.read_exact(&mut echo).await.unwrap();
        assert_eq!(&echo, b"ping");
    }

    #[tokio::test]
    async fn dropping_the_proxy_stops_it() {
        let proxy = proxy(&[], &[]).await;
        let addr = proxy.addr();
        let open = TcpStream::connect(addr).await.unwrap();
        drop(proxy);
        let mut refused = false;
        for _ in 0..100 {
            if TcpStream::connect(addr).await.is_err() {
                refused = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(refused, "the proxy still accepts connections");
        let mut open = open;
        let mut rest = Vec::new();
        // Closed either way: an end of stream, or a reset.
        let closed = open.read_to_end(&mut rest).await;
        assert!(matches!(closed, Ok(0)) || closed.is_err(), "an open connection is closed: {closed:?}");
    }

    #[test]
    fn refusal_pages_escape_the_reason() {
        let answer = refused_page("`a\"b` <c> & 'd'", "n");
        assert_eq!(answer.headers()["x-kennel-refused"], "`a\"b` <c> & 'd'");
        assert_eq!(html_escape("`a\"b` <c> & 'd'"), "`a&quot;b` &lt;c&gt; &amp; &#39;d&#39;");
        assert_eq!(header_text("naïve\r\n"), "na?ve??");
    }

    #[test]
    fn origin_form_keeps_path_and_query() {
        for (absolute, origin) in
            [("http://h", "/"), ("http://h/", "/"), ("http://h?x=1", "/?x=1"), ("http://h//a/../b?c", "//a/../b?c")]
        {
            assert_eq!(origin_form(&absolute.parse().unwrap()).to_string(), origin, "{absolute}");
        }
    }

    #[test]
    fn refusals_are_found_in_any_spelling_and_kept_to_the_last_64() {
        let refusals = FailedOpens::default();
        refusals.remember(&UrlHost::Ip("::1".parse().unwrap()), 443, "v6");
        refusals.remember(&UrlHost::Name("ads.example".into()), 443, "old");
        refusals.remember(&UrlHost::Name("ads.example".into()), 443, "new");
        assert_eq!(refusals.latest("[0:0::1]", 443).as_deref(), Some("v6"));
        assert_eq!(refusals.latest("ADS.example.", 443).as_deref(), Some("new"));
        for n in 0..REFUSALS_KEPT {
            refusals.remember(&UrlHost::Name(format!("h{n}.example")), 80, "filler");
        }
        assert_eq!(refusals.latest("ads.example", 443), None, "the oldest went first");
        assert!(refusals.latest("h0.example", 80).is_some());
        refusals.forget(&UrlHost::Name("h0.example".into()), 80);
        assert_eq!(refusals.latest("h0.example", 80), None);
    }
}
