//! Outbound connections. Every URL Kennel opens on someone's behalf goes through
//! [`guard::resolve`] and is then fetched with a [`pinned_client`], so what was checked is
//! what is reached. The browser, which opens its own connections, sends them all through
//! [`proxy::GuardProxy`], which makes the same check for each.

pub mod guard;
pub mod proxy;

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

/// A client that connects only to `addr` (the address [`guard::resolve`] checked) for `url`'s
/// host and follows no redirects: a redirect is a new URL and would need its own check.
pub fn pinned_client(url: &reqwest::Url, addr: SocketAddr, timeout: Duration) -> Result<reqwest::Client> {
    let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']).to_string();
    http_client()
        .resolve(&host, addr)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .build()
        .map_err(|e| Error::failed(format!("cannot build an HTTP client: {e}")))
}
