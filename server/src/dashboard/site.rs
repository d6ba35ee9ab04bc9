//! Which site a dashboard request belongs to.
//!
//! `/setup` and `/login` answer only requests addressed to one of this daemon's own names
//! (`Host`) and, when the browser says where a request comes from (`Origin`), coming from one
//! of them. So a page on another site cannot post to them, not even one whose name was made
//! to resolve to this machine (DNS rebinding: the browser then sends that site's name as
//! `Host`). Requests without `Origin` (curl, scripts) pass. Also here: which `back=` paths a
//! form may redirect to.

use std::net::{IpAddr, SocketAddr};

use axum::extract::FromRequestParts;
use axum::http::header::{HOST, ORIGIN};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use kennel_kernel::Kernel;
use kennel_kernel::config::split_host;

/// The address the daemon listens on (its real port, also when started with port 0); the
/// server puts it in every request's extensions.
#[derive(Debug, Clone, Copy)]
pub struct ListenAddr(pub SocketAddr);

/// Proof that a request passed [`check`]; a handler that takes it runs only for requests
/// addressed to this daemon from its own pages (or from no page at all).
pub struct OwnSite;

impl FromRequestParts<Kernel> for OwnSite {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, kernel: &Kernel) -> Result<OwnSite, Response> {
        let Some(ListenAddr(listen)) = parts.extensions.get::<ListenAddr>().copied() else {
            return Err((StatusCode::INTERNAL_SERVER_ERROR, "the daemon's address is unknown").into_response());
        };
        let names = OwnNames { listen, public: &kernel.config().server.public_names };
        check(&parts.headers, &names).map(|()| OwnSite).map_err(|m| (StatusCode::FORBIDDEN, m).into_response())
    }
}

/// The names this daemon answers to: its listen address, `localhost`, `127.0.0.1` and
/// `[::1]` (with its port), and `[server] public_names` (matched exactly as written there).
/// When it listens on every address (`0.0.0.0`, `[::]`), any IP address with its port: a
/// rebinding page always has a DNS name, never a bare address.
struct OwnNames<'a> {
    listen: SocketAddr,
    public: &'a [String],
}

impl OwnNames<'_> {
    /// Whether `host` (a `Host` value, or an origin's host) is one of ours; no port means
    /// `default_port` (80 in `Host`, the scheme's in an origin).
    fn include(&self, host: &str, default_port: u16) -> bool {
        self.names(host, default_port) || self.any_address(host, default_port)
    }

    /// `host` is a public name, a loopback name or the listen address, with our port.
    fn names(&self, host: &str, default_port: u16) -> bool {
        let host = host.to_ascii_lowercase();
        if self.public.contains(&host) {
            return true;
        }
        let Some((name, port)) = split_host(&host) else { return false };
        port.unwrap_or(default_port) == self.listen.port()
            && (matches!(name, "localhost" | "127.0.0.1" | "[::1]") || name == host_form(self.listen.ip()))
    }

    /// Listening on every address, `host` is some IP address with our port.
    fn any_address(&self, host: &str, default_port: u16) -> bool {
        let Some((name, port)) = split_host(host) else { return false };
        self.listen.ip().is_unspecified()
            && port.unwrap_or(default_port) == self.listen.port()
            && ip_literal(name).is_some()
    }

    /// Whether `origin` (`scheme://host[:port]`) is one of our pages. `null` (sandboxed or
    /// privacy-sensitive contexts) is not. An origin that is ours only as "any address" must
    /// also be the address the request went to: otherwise a page served from another
    /// machine's address (when listening on every address) could post here.
    fn include_origin(&self, origin: &str, request_host: &str) -> bool {
        let parsed = origin
            .strip_prefix("http://")
            .map(|authority| (authority, 80))
            .or_else(|| origin.strip_prefix("https://").map(|authority| (authority, 443)));
        parsed.is_some_and(|(authority, port)| {
            self.names(authority, port) || (self.any_address(authority, port) && same_name(authority, request_host))
        })
    }
}

/// Whether two `host[:port]` values name the same host (ports are checked by the caller).
fn same_name(a: &str, b: &str) -> bool {
    let name_of = |h: &str| split_host(&h.to_ascii_lowercase()).map(|(name, _)| name.to_string());
    name_of(a).is_some_and(|n| Some(n) == name_of(b))
}

/// An IP address as it appears in a `Host` header (IPv6 in brackets).
fn host_form(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

fn ip_literal(name: &str) -> Option<IpAddr> {
    match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        Some(v6) => v6.parse().ok(),
        None => name.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4),
    }
}

/// `Ok` if the request is addressed to one of `names` and any `Origin` is one of them too;
/// otherwise the reason, for a 403. Neither header's value is echoed.
fn check(headers: &HeaderMap, names: &OwnNames) -> Result<(), String> {
    let host = headers.get(HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !names.include(host, 80) {
        return Err(format!(
            "this request was addressed to a name that is not this daemon's (its Host header); open the dashboard \
             at http://localhost:{port}/ or add the name it is reached by to `[server] public_names` in config.toml",
            port = names.listen.port()
        ));
    }
    if let Some(origin) = headers.get(ORIGIN)
        && !origin.to_str().is_ok_and(|o| names.include_origin(o, host))
    {
        return Err("this form was sent from a page on another site (its Origin header); sign-in and setup accept \
                    forms only from Kennel's own pages"
            .into());
    }
    Ok(())
}

/// Whether a request came from this machine itself and not through a proxy on it: a reverse
/// proxy on the same machine connects from loopback for every visitor on the internet, so
/// first-run setup (loopback only) refuses requests that carry a proxy's forwarding headers.
pub fn direct_from_this_machine(client: IpAddr, headers: &HeaderMap) -> bool {
    const FORWARDING: [&str; 4] = ["forwarded", "x-forwarded-for", "x-forwarded-host", "x-real-ip"];
    client.is_loopback() && !FORWARDING.iter().any(|h| headers.contains_key(*h))
}

/// `path` if it is a path on this site to redirect to: one `/` followed by neither `/` nor
/// `\` (browsers read `//x` and `/\x` as the host `x`), and only visible ASCII (browsers drop
/// tabs and newlines inside URLs, so `/<tab>/x` would become `//x`; and a `Location` header
/// holds nothing else).
pub fn same_site_path(path: &str) -> Option<&str> {
    let mut bytes = path.bytes();
    let starts_well = bytes.next() == Some(b'/') && bytes.next().is_some_and(|b| b != b'/' && b != b'\\');
    (starts_well && path.bytes().all(|b| b.is_ascii_graphic())).then_some(path)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn names(listen: &str, public: &[&str]) -> (SocketAddr, Vec<String>) {
        (listen.parse().unwrap(), public.iter().map(|s| s.to_string()).collect())
    }

    fn allowed(listen: &str, public: &[&str], host: &str, origin: Option<&str>) -> bool {
        let (listen, public) = names(listen, public);
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_str(host).unwrap());
        if let Some(o) = origin {
            headers.insert(ORIGIN, HeaderValue::from_str(o).unwrap());
        }
        check(&headers, &OwnNames { listen, public: &public }).is_ok()
    }

    #[test]
    fn the_listen_address_and_loopback_names_with_our_port_are_ours() {
        for host in ["127.0.0.1:4545", "localhost:4545", "LOCALHOST:4545", "[::1]:4545"] {
            assert!(allowed("127.0.0.1:4545", &[], host, None), "{host}");
        }
        assert!(allowed("192.168.1.5:4545", &[], "192.168.1.5:4545", None));
        assert!(allowed("[fd00::5]:4545", &[], "[fd00::5]:4545", None));
        assert!(allowed("127.0.0.1:80", &[], "localhost", None), "no port is port 80");
    }

    #[test]
    fn other_names_ports_and_addresses_are_refused() {
        for host in [
            "evil.example:4545",
            "localhost:4546",
            "localhost",
            "127.0.0.2:4545",
            "192.168.1.6:4545",
            "localhost.evil.example:4545",
            "",
            "localhost:4545/x",
        ] {
            assert!(!allowed("127.0.0.1:4545", &[], host, None), "{host}");
        }
        assert!(!allowed("192.168.1.5:4545", &[], "192.168.1.6:4545", None));
    }

    #[test]
    fn an_origin_must_name_the_host_the_request_went_to() {
        // Listening everywhere, any IP literal is ours: a page served from another machine's
        // address must still not post to this one.
        assert!(!allowed("0.0.0.0:4545", &[], "192.168.1.5:4545", Some("http://203.0.113.9:4545")));
        assert!(allowed("0.0.0.0:4545", &[], "192.168.1.5:4545", Some("http://192.168.1.5:4545")));
        assert!(allowed("0.0.0.0:4545", &[], "192.168.1.5:4545", Some("http://localhost:4545")), "named: ours");
    }

    #[test]
    fn setup_is_direct_from_this_machine_only() {
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(direct_from_this_machine(loopback, &HeaderMap::new()));
        assert!(!direct_from_this_machine("192.168.1.6".parse().unwrap(), &HeaderMap::new()));
        for header in ["forwarded", "x-forwarded-for", "x-forwarded-host", "x-real-ip"] {
            let mut proxied = HeaderMap::new();
            proxied.insert(header, HeaderValue::from_static("203.0.113.9"));
            assert!(!direct_from_this_machine(loopback, &proxied), "{header}");
        }
    }

    #[test]
    fn listening_everywhere_accepts_any_address_but_no_other_name() {
        assert!(allowed("0.0.0.0:4545", &[], "192.168.1.5:4545", None));
        assert!(allowed("[::]:4545", &[], "[fd00::5]:4545", None));
        assert!(!allowed("0.0.0.0:4545", &[], "rebound.evil.example:4545", None));
        assert!(!allowed("0.0.0.0:4545", &[], "192.168.1.5:80", None));
    }

    #[test]
    fn public_names_match_as_written() {
        let public = ["kennel.example.com", "kennel.example.com:8443"];
        assert!(allowed("127.0.0.1:4545", &public, "kennel.example.com", None));
        assert!(allowed("127.0.0.1:4545", &public, "Kennel.Example.com:8443", None));
        assert!(!allowed("127.0.0.1:4545", &public, "kennel.example.com:9000", None));
        assert!(!allowed("127.0.0.1:4545", &public, "evil.example.com", None));
    }

    #[test]
    fn an_origin_if_sent_must_be_one_of_ours() {
        let host = "localhost:4545";
        assert!(allowed("127.0.0.1:4545", &[], host, Some("http://localhost:4545")));
        assert!(allowed("127.0.0.1:4545", &[], host, Some("http://127.0.0.1:4545")));
        let public = ["kennel.example.com"];
        assert!(allowed("127.0.0.1:4545", &public, "kennel.example.com", Some("https://kennel.example.com")));
        for origin in [
            "http://evil.example",
            "http://evil.example:4545",
            "null",
            "http://localhost:4546",
            "https://localhost:4545/",
            "ftp://localhost:4545",
            "http://localhost",
        ] {
            assert!(!allowed("127.0.0.1:4545", &[], host, Some(origin)), "{origin}");
        }
    }

    #[test]
    fn only_single_slash_paths_on_this_site_are_redirect_targets() {
        for good in ["/agents/1", "/tools?agent=a1&x=%2F%2F", "/a//b", "/a\\b"] {
            assert_eq!(same_site_path(good), Some(good));
        }
        for bad in [
            "//evil.example/",
            "/\\evil.example/",
            "\\\\evil.example",
            "/\t/evil.example",
            "/\n/evil.example",
            "https://evil.example/",
            "evil.example",
            "/",
            "",
            "/ é",
            "/a b",
        ] {
            assert_eq!(same_site_path(bad), None, "{bad:?}");
        }
    }
}
