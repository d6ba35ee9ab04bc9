//! Outbound connections. Every URL Kennel opens on someone's behalf goes through
//! [`guard::resolve`] and is then fetched with a [`pinned_client`], so what was checked is
//! what is reached. The browser, which opens its own connections, sends them all through
//! [`proxy::GuardProxy`], which makes the same check for each.

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
