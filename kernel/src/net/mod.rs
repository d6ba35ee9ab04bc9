//! Outbound connections. Every URL Kennel opens on someone's behalf goes through
//! [`guard::resolve`] and is then fetched with a [`pinned_client`], so what was checked is
//! what is reached. The browser, which opens its own connections, sends them all through
//! [`proxy::GuardProxy`], which makes the same check for each.
//!
//! # Design notes
//!
//! ## Layout
//!
//! Outbound connections: `guard.rs` the one address guard (`AllowedHosts`, `resolve`, `lookup`,
//! `check`, `check_blocked` for a `blocked_hosts` list, the special-purpose ranges), `mod.rs`
//! `pinned_client` (connects only to the checked address, no redirects), `retry.rs` the one
//! backoff rule for a service that says "later" (429, 5xx, a dropped connection: its
//! `Retry-After`, else 0.5 s doubling, at most 30 s), used by model, embeddings, media
//! (`[media.providers.NAME] max_retries`, default 3) and email calls (three more tries after a 4xx
//! reply or a failed connection; a 5xx reply is final), `proxy.rs` `GuardProxy` (see `crate::browser`).
//!
//! ## The one address guard
//!
//! - **A2A client, SSRF: the one address guard.** Every outbound URL goes through
//!   `net::guard::resolve(url, allowed_hosts, setting)`, the kernel's one address guard (A2A, the
//!   browser's proxy, processes' and script tools' networks, media URLs, channels, MCP and
//!   location, each with its own `allowed_hosts` in the same syntax). Rules: http(s) only; `allowed_hosts` entries are
//!   `host:port` or `host:*` with host a name, an IP, or a CIDR (`agents.example.com:443`,
//!   `127.0.0.1:8080`, `10.0.0.0/8:*`, `[fd00::/8]:*`), parsed into `AllowedHosts` at config
//!   load — a bare host is a config error that shows the fix. Empty list: any public address.
//!   Non-empty: only listed hosts and ports. Special-purpose addresses (`net::guard::
//!   SPECIAL_RANGES`: 0/8, 10/8, 100.64/10, 127/8, 169.254/16, 172.16/12, 192.0.0/24,
//!   192.168/16, 198.18/15, 224/4, 240/4, the documentation and 6to4-relay ranges, ::, ::1,
//!   IPv4-mapped and -compatible IPv6, NAT64, Teredo, 6to4, fc00::/7, fe80::/10, fec0::/10,
//!   ff00::/8) are refused unless an IP or CIDR entry covers that address and port.
//!   **Decision:** a host-name entry never opens them (DNS can point a name anywhere), and an
//!   IP/CIDR entry matches the resolved address whatever name the URL used. The name is resolved
//!   once, every address it resolves to must pass, and `net::pinned_client` connects to the
//!   checked address (no second DNS lookup) and follows no redirects. Tokens for remote daemons
//!   come from environment variables named in `[a2a.tokens]`. `a2a_send` reads the remote's card
//!   (`client::Endpoint::of`: a 1.0 `JSONRPC` interface if there is one, else a 0.3 one or the
//!   0.3 card's `url`), sends in that dialect (blocking), and polls `GetTask` / `tasks/get` while
//!   the remote's task is not yet terminal, until it is or `task_ttl_secs` pass (`Timeout`); its result names the `protocol` used.

pub mod guard;
pub mod proxy;
pub mod retry;

use std::net::SocketAddr;
use std::time::Duration;

use crate::error::{Error, Result};

/// Every HTTP client Kennel (and its tests) builds starts here: it installs the TLS crypto
/// provider (rustls with *ring*) the first time, which reqwest needs before any client.
pub fn http_client() -> reqwest::ClientBuilder {
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        // Fails only if a provider is installed already, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    #[allow(clippy::disallowed_methods)]
    reqwest::Client::builder()
}

/// The innermost error's text: the wrappers' own ("client error (Connect)", "error sending
/// request") say little, the innermost says what happened ("Connection refused").
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut inner = e;
    while let Some(source) = inner.source() {
        inner = source;
    }
    inner.to_string()
}

/// An error's text with its root cause when that says more: `error sending request (…):
/// Connection refused (os error 111)`.
pub fn causes(e: &(dyn std::error::Error + 'static)) -> String {
    let (outer, root) = (e.to_string(), root_cause(e));
    if outer.contains(&root) { outer } else { format!("{outer}: {root}") }
}

/// The TLS settings of every pinned client, made once: the platform's certificate verifier
/// reads the system's roots when it is made, and a client made per request (A2A, media,
/// channel sends) read all of `/etc/ssl/certs` each time (docs/BENCHMARKS.md, "Channels").
fn shared_tls() -> Result<rustls::ClientConfig> {
    use rustls_platform_verifier::ConfigVerifierExt;
    static TLS: std::sync::OnceLock<std::result::Result<rustls::ClientConfig, String>> = std::sync::OnceLock::new();
    let _installed = http_client();
    TLS.get_or_init(|| rustls::ClientConfig::with_platform_verifier().map_err(|e| e.to_string()))
        .clone()
        .map_err(|e| Error::internal(format!("cannot set up TLS with the system's certificates: {e}")))
}

/// A client that connects only to `addr` (the address [`guard::resolve`] checked) for `url`'s
/// host and follows no redirects: a redirect is a new URL and would need its own check.
pub fn pinned_client(url: &reqwest::Url, addr: SocketAddr, timeout: Duration) -> Result<reqwest::Client> {
    pinned_builder(url, addr)?
        .timeout(timeout)
        .build()
        .map_err(|e| Error::failed(format!("cannot build an HTTP client: {e}")))
}

/// [`pinned_client`] before its timeout is set: for a connection that stays open (an MCP
/// server's event stream), whose requests the caller times itself.
pub fn pinned_builder(url: &reqwest::Url, addr: SocketAddr) -> Result<reqwest::ClientBuilder> {
    let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']).to_string();
    Ok(http_client()
        .tls_backend_preconfigured(shared_tls()?)
        .resolve(&host, addr)
        .redirect(reqwest::redirect::Policy::none()))
}
