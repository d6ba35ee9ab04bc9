//! The one address guard for every outbound URL Kennel opens (A2A now; the browser, media
//! URLs, channels and MCP later): one `allowed_hosts` syntax, parsed at config load, and one
//! function, [`resolve`], that turns a URL into the single socket address to connect to.
//!
//! The rules:
//! - An entry is `host:port` or `host:*`, where host is a name, an IP address, or a CIDR
//!   range (`api.example.com:443`, `127.0.0.1:8080`, `10.0.0.0/8:*`, `[fd00::/8]:*`).
//!   A bare host is refused at load: a forgotten port must not silently open every port.
//! - When the list is not empty, only listed hosts and ports are reachable at all.
//! - A special-purpose address (loopback, private, link-local, multicast, IPv4 embedded in
//!   IPv6, …, see [`SPECIAL_RANGES`]) is refused unless an IP or CIDR entry opens that address
//!   and port. A name entry never does: names are resolved by DNS, which whoever controls the
//!   name can point anywhere.
//! - A name is resolved once, every address it resolves to is checked, and the caller connects
//!   to the checked address (no second lookup that DNS rebinding could change).
//! - A `blocked_hosts` list, in the same syntax, refuses what it names whatever the allowed
//!   list says ([`check_blocked`]): a name by its name, an IP or CIDR entry by every address.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::sync::LazyLock;

use ipnet::IpNet;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};

/// Address ranges that are not the public internet, each with what it is. Refused unless an
/// IP or CIDR entry opens them.
pub const SPECIAL_RANGES: [(&str, &str); 29] = [
    ("0.0.0.0/8", "\"this network\""),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared (carrier-grade NAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignment"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved (and broadcast)"),
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::ffff:0:0/96", "IPv4-mapped IPv6"),
    ("::/96", "IPv4-compatible IPv6"),
    ("64:ff9b::/96", "NAT64"),
    ("64:ff9b:1::/48", "local NAT64"),
    ("100::/64", "discard-only"),
    ("2001::/32", "Teredo"),
    ("2001:db8::/32", "documentation"),
    ("2002::/16", "6to4"),
    ("fc00::/7", "unique local (private)"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
];

static SPECIAL: LazyLock<Vec<(IpNet, &'static str)>> = LazyLock::new(|| {
    SPECIAL_RANGES.iter().map(|(net, what)| (net.parse().expect("SPECIAL_RANGES are valid CIDRs"), *what)).collect()
});

/// The special-purpose range `ip` is in, if any, with what it is.
pub fn special_range(ip: IpAddr) -> Option<(IpNet, &'static str)> {
    // The most specific match names it best (`::1` is loopback, not "IPv4-compatible").
    SPECIAL.iter().filter(|(net, _)| net.contains(&ip)).max_by_key(|(net, _)| net.prefix_len()).copied()
}

/// What an entry names: a host name (matched against the URL's name), or addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Name(String),
    Net(IpNet),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ports {
    Any,
    One(u16),
}

/// One `allowed_hosts` entry: `host:port`, `host:*`, `IP:port`, `CIDR:*`, `[v6]:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRule {
    target: Target,
    ports: Ports,
}

impl HostRule {
    fn port_matches(&self, port: u16) -> bool {
        self.ports == Ports::Any || self.ports == Ports::One(port)
    }
}

impl FromStr for HostRule {
    type Err = String;

    fn from_str(entry: &str) -> std::result::Result<HostRule, String> {
        let text = entry.trim();
        let (host, port, bracketed) = if let Some(rest) = text.strip_prefix('[') {
            let (inside, after) =
                rest.split_once(']').ok_or_else(|| format!("`{text}` opens `[` without closing it"))?;
            let port = after.strip_prefix(':').ok_or_else(|| no_port(text))?;
            (inside, port, true)
        } else {
            match text.rsplit_once(':') {
                None => return Err(no_port(text)),
                Some((host, _)) if host.contains(':') => {
                    return Err(format!(
                        "`{text}`: write an IPv6 address or range in brackets with a port, like `[::1]:8080` or `[fd00::/8]:*`"
                    ));
                }
                Some((host, port)) => (host, port, false),
            }
        };
        let ports = match port {
            "*" => Ports::Any,
            p => match p.parse::<u16>() {
                Ok(n) if n > 0 => Ports::One(n),
                _ => return Err(format!("`{text}`: the port `{p}` must be a number from 1 to 65535, or `*` for any")),
            },
        };
        let target = if let Ok(net) = host.parse::<IpNet>() {
            Target::Net(net.trunc())
        } else if let Ok(ip) = host.parse::<IpAddr>() {
            Target::Net(IpNet::from(ip))
        } else if !bracketed && is_host_name(host) {
            Target::Name(host.trim_end_matches('.').to_ascii_lowercase())
        } else {
            return Err(format!("`{text}`: `{host}` is not a host name, an IP address or a CIDR range"));
        };
        if bracketed && !matches!(target, Target::Net(IpNet::V6(_))) {
            return Err(format!("`{text}`: brackets are for IPv6 addresses only"));
        }
        Ok(HostRule { target, ports })
    }
}

fn no_port(text: &str) -> String {
    let host = text.trim_matches(['[', ']']);
    let shown = if host.contains(':') { format!("[{host}]") } else { host.to_string() };
    format!("`{text}` has no port: write `{shown}:PORT` to allow one port, or `{shown}:*` to allow any port")
}

/// Letters, digits, `-` and `_` in dot-separated labels of 1-63 characters (a trailing dot
/// allowed); the last label is not all digits, so a mistyped address (`10.0.0.300`) is not
/// taken for a name.
fn is_host_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    !host.is_empty()
        && host.len() <= 253
        && !host.rsplit('.').next().is_some_and(|last| last.bytes().all(|b| b.is_ascii_digit()))
        && host.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

impl fmt::Display for HostRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            Target::Name(name) => write!(f, "{name}")?,
            Target::Net(IpNet::V6(net)) if net.prefix_len() == 128 => write!(f, "[{}]", net.addr())?,
            Target::Net(IpNet::V6(net)) => write!(f, "[{net}]")?,
            Target::Net(IpNet::V4(net)) if net.prefix_len() == 32 => write!(f, "{}", net.addr())?,
            Target::Net(net) => write!(f, "{net}")?,
        }
        match self.ports {
            Ports::Any => write!(f, ":*"),
            Ports::One(port) => write!(f, ":{port}"),
        }
    }
}

impl<'de> Deserialize<'de> for HostRule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<HostRule, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

impl Serialize for HostRule {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A parsed `allowed_hosts` list. Empty: any public address, nothing special-purpose.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(transparent)]
pub struct AllowedHosts(Vec<HostRule>);

impl AllowedHosts {
    /// Parses entries as a config file would (for tests and programmatic configs).
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> std::result::Result<AllowedHosts, String> {
        entries.iter().map(|e| e.as_ref().parse()).collect::<std::result::Result<_, _>>().map(AllowedHosts)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// An IP or CIDR entry covers this address and port.
    fn opens_address(&self, ip: IpAddr, port: u16) -> bool {
        self.0.iter().any(|r| r.port_matches(port) && matches!(&r.target, Target::Net(net) if net.contains(&ip)))
    }

    /// A name entry lists this host name and port.
    fn lists_name(&self, name: &str, port: u16) -> bool {
        let name = name.trim_end_matches('.');
        self.0
            .iter()
            .any(|r| r.port_matches(port) && matches!(&r.target, Target::Name(n) if n.eq_ignore_ascii_case(name)))
    }
}

/// The host of a URL as the guard sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlHost {
    /// A name, resolved by DNS.
    Name(String),
    /// An address written in the URL.
    Ip(IpAddr),
}

impl fmt::Display for UrlHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlHost::Name(name) => write!(f, "{name}"),
            UrlHost::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            UrlHost::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// Checks `url` against `allowed` (named `setting` in messages, like `[a2a] allowed_hosts`),
/// resolving its host once, and returns the address to connect to. Connect to exactly that
/// address (see [`super::pinned_client`]), never to the URL's host again.
pub async fn resolve(url: &reqwest::Url, allowed: &AllowedHosts, setting: &str) -> Result<SocketAddr> {
    let (host, port) = host_and_port(url)?;
    let ips = lookup(&host, port).await?;
    check(allowed, setting, &host, port, &ips)?;
    Ok(SocketAddr::new(ips[0], port))
}

/// The addresses `host` stands for: itself for an address, one DNS lookup for a name. Check
/// them all ([`check`]) and connect only to those.
pub async fn lookup(host: &UrlHost, port: u16) -> Result<Vec<IpAddr>> {
    match host {
        UrlHost::Ip(ip) => Ok(vec![*ip]),
        UrlHost::Name(name) => Ok(tokio::net::lookup_host((name.as_str(), port))
            .await
            .map_err(|e| Error::failed(format!("cannot resolve `{name}`: {e}")))?
            .map(|a| a.ip())
            .collect()),
    }
}

/// An http(s) URL's host and port (the scheme's default when none is written).
pub fn host_and_port(url: &reqwest::Url) -> Result<(UrlHost, u16)> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Error::invalid(format!("`{url}` is not an http(s) URL")));
    }
    let host = url.host_str().ok_or_else(|| Error::invalid(format!("`{url}` has no host")))?;
    let port = url.port_or_known_default().ok_or_else(|| Error::invalid(format!("`{url}` has no port")))?;
    // The URL parser has already normalised addresses (`http://2130706433/` is 127.0.0.1).
    let host = match host.trim_matches(['[', ']']).parse::<IpAddr>() {
        Ok(ip) => UrlHost::Ip(ip),
        Err(_) => UrlHost::Name(host.to_ascii_lowercase()),
    };
    Ok((host, port))
}

/// The rules, on a host and every address it resolved to: all of them must pass.
pub fn check(allowed: &AllowedHosts, setting: &str, host: &UrlHost, port: u16, ips: &[IpAddr]) -> Result<()> {
    if ips.is_empty() {
        return Err(Error::failed(format!("`{host}` resolves to no address")));
    }
    let listed_name = matches!(host, UrlHost::Name(name) if allowed.lists_name(name, port));
    for &ip in ips {
        let opened = allowed.opens_address(ip, port);
        if !allowed.is_empty() && !listed_name && !opened {
            return Err(Error::forbidden(format!("`{host}:{port}` is not in {setting}")));
        }
        if let Some((net, what)) = special_range(ip)
            && !opened
        {
            return Err(refused_special(setting, host, port, ip, net, what));
        }
    }
    Ok(())
}

/// A list read as `blocked_hosts` (same syntax as `allowed_hosts`, named `setting` in
/// messages): refuses `host:port` when a name entry lists the name or an IP or CIDR entry covers
/// any address it resolved to. An empty list blocks nothing. Check it beside [`check`], which
/// still decides everything the list does not block.
pub fn check_blocked(blocked: &AllowedHosts, setting: &str, host: &UrlHost, port: u16, ips: &[IpAddr]) -> Result<()> {
    let by_name = matches!(host, UrlHost::Name(name) if blocked.lists_name(name, port));
    if by_name || ips.iter().any(|&ip| blocked.opens_address(ip, port)) {
        return Err(Error::forbidden(format!("`{host}:{port}` is in {setting}")));
    }
    Ok(())
}

/// The refusal of a special-purpose address. Callers are often agents, which are untrusted: for
/// a host name they learn only the kind of address, never the address itself (that would let
/// them map internal DNS); the operator finds it in the daemon's log.
fn refused_special(setting: &str, host: &UrlHost, port: u16, ip: IpAddr, net: IpNet, what: &str) -> Error {
    let rule = format!("only an IP or CIDR entry in {setting} opens such an address");
    match host {
        UrlHost::Ip(_) => Error::forbidden(format!(
            "`{host}:{port}` is refused: {ip} is a {what} address ({net}), not the public internet; {rule}, like `{host}:{port}`"
        )),
        UrlHost::Name(_) => {
            tracing::warn!(%host, port, address = %ip, range = %net, "refused an outbound connection to a {what} address");
            Error::forbidden(format!(
                "`{host}:{port}` is refused: it resolves to a {what} address, not the public internet; {rule} \
                 (the daemon's log names the address)"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTING: &str = "[test] allowed_hosts";

    fn list(entries: &[&str]) -> AllowedHosts {
        AllowedHosts::parse(entries).unwrap()
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// The guard's answer for a URL host `host` that resolved to `to`, on `port`.
    fn verdict(allowed: &AllowedHosts, host: &str, port: u16, to: &str) -> Result<()> {
        let host = match host.parse::<IpAddr>() {
            Ok(addr) => UrlHost::Ip(addr),
            Err(_) => UrlHost::Name(host.into()),
        };
        check(allowed, SETTING, &host, port, &[ip(to)])
    }

    /// One special-purpose range: refused with no list, refused through a name entry that
    /// resolves into it, refused by its CIDR on another port, opened by its CIDR on this one.
    fn special(range: &str, inside: &str) {
        let (net, _) = special_range(ip(inside)).unwrap_or_else(|| panic!("{inside} is not special"));
        assert_eq!(net.to_string(), range.parse::<IpNet>().unwrap().to_string(), "{inside} is named by its range");
        let refused = verdict(&AllowedHosts::default(), inside, 80, inside).unwrap_err();
        assert_eq!(refused.kind, crate::ErrorKind::Forbidden);
        assert!(refused.message.contains("only an IP or CIDR entry"), "{}", refused.message);
        assert!(
            refused.message.contains(&net.to_string()),
            "an address in the URL is named with its range: {}",
            refused.message
        );
        let refused = verdict(&list(&["peer.example:*"]), "peer.example", 80, inside).unwrap_err();
        assert!(refused.message.contains("only an IP or CIDR entry"), "{}", refused.message);
        assert!(!refused.message.contains(inside), "a name's address is not told: {}", refused.message);
        let cidr = if net.addr().is_ipv6() { format!("[{net}]") } else { net.to_string() };
        assert!(verdict(&list(&[&format!("{cidr}:81")]), inside, 80, inside).is_err(), "{range}: another port");
        verdict(&list(&[&format!("{cidr}:80")]), inside, 80, inside).unwrap();
        verdict(&list(&[&format!("{cidr}:*")]), "peer.example", 80, inside).unwrap();
    }

    macro_rules! special_range_tests {
        ($($name:ident: $range:literal, $inside:literal;)*) => {
            $(#[test] fn $name() { special($range, $inside); })*
            const TESTED: &[&str] = &[$($range),*];
        };
    }

    special_range_tests! {
        this_network_0_0_0_0_8: "0.0.0.0/8", "0.1.2.3";
        private_10_8: "10.0.0.0/8", "10.200.3.4";
        cgnat_100_64_10: "100.64.0.0/10", "100.127.255.254";
        loopback_127_8: "127.0.0.0/8", "127.0.0.1";
        link_local_169_254_16: "169.254.0.0/16", "169.254.169.254";
        private_172_16_12: "172.16.0.0/12", "172.31.255.1";
        ietf_192_0_0_24: "192.0.0.0/24", "192.0.0.170";
        documentation_192_0_2_24: "192.0.2.0/24", "192.0.2.9";
        relay_192_88_99_24: "192.88.99.0/24", "192.88.99.1";
        private_192_168_16: "192.168.0.0/16", "192.168.1.1";
        benchmarking_198_18_15: "198.18.0.0/15", "198.19.0.1";
        documentation_198_51_100_24: "198.51.100.0/24", "198.51.100.7";
        documentation_203_0_113_24: "203.0.113.0/24", "203.0.113.200";
        multicast_224_4: "224.0.0.0/4", "239.255.255.250";
        reserved_240_4: "240.0.0.0/4", "255.255.255.255";
        unspecified_v6: "::/128", "::";
        loopback_v6: "::1/128", "::1";
        ipv4_mapped_v6: "::ffff:0:0/96", "::ffff:127.0.0.1";
        ipv4_compatible_v6: "::/96", "::127.0.0.1";
        nat64_64_ff9b_96: "64:ff9b::/96", "64:ff9b::7f00:1";
        local_nat64_64_ff9b_1_48: "64:ff9b:1::/48", "64:ff9b:1::1";
        discard_100_64: "100::/64", "100::1";
        teredo_2001_32: "2001::/32", "2001:0:4136:e378::1";
        documentation_2001_db8_32: "2001:db8::/32", "2001:db8::1";
        six_to_four_2002_16: "2002::/16", "2002:7f00:1::1";
        unique_local_fc00_7: "fc00::/7", "fd12:3456::1";
        link_local_fe80_10: "fe80::/10", "fe80::1";
        site_local_fec0_10: "fec0::/10", "fec0::1";
        multicast_ff00_8: "ff00::/8", "ff02::1";
    }

    #[test]
    fn every_special_range_has_its_test() {
        let listed: Vec<&str> = SPECIAL_RANGES.iter().map(|(net, _)| *net).collect();
        assert_eq!(TESTED, listed.as_slice());
    }

    #[test]
    fn addresses_just_outside_the_ranges_are_public() {
        let empty = AllowedHosts::default();
        for outside in [
            "11.0.0.1",
            "100.128.0.1",
            "126.255.255.255",
            "128.0.0.1",
            "172.32.0.1",
            "198.20.0.1",
            "223.255.255.255",
            "8.8.8.8",
            "2606:4700::1111",
            "2003::1",
        ] {
            verdict(&empty, outside, 443, outside).unwrap_or_else(|e| panic!("{outside}: {}", e.message));
        }
    }

    #[test]
    fn a_listed_name_still_refuses_loopback_and_private_addresses() {
        let allowed = list(&["vm:*", "localhost:8080"]);
        for to in ["127.0.0.1", "10.0.0.5", "169.254.169.254", "::1", "::ffff:127.0.0.1"] {
            let e = verdict(&allowed, "vm", 8080, to).unwrap_err();
            assert!(e.message.contains("only an IP or CIDR entry"), "{to}: {}", e.message);
            // Agents must not learn what an internal name resolves to.
            assert!(!e.message.contains(to), "{to} leaked: {}", e.message);
        }
        assert!(verdict(&allowed, "localhost", 8080, "127.0.0.1").is_err());
        verdict(&allowed, "vm", 8080, "93.184.215.14").unwrap();
    }

    #[test]
    fn ports_must_match_when_one_is_given() {
        let allowed = list(&["127.0.0.1:8080", "api.example.com:443"]);
        verdict(&allowed, "127.0.0.1", 8080, "127.0.0.1").unwrap();
        let e = verdict(&allowed, "127.0.0.1", 4545, "127.0.0.1").unwrap_err();
        assert!(e.message.contains("not in [test] allowed_hosts"), "{}", e.message);
        verdict(&allowed, "api.example.com", 443, "93.184.215.14").unwrap();
        assert!(verdict(&allowed, "api.example.com", 80, "93.184.215.14").is_err());
        assert!(verdict(&allowed, "other.example.com", 443, "93.184.215.14").is_err(), "only listed hosts");
        verdict(&list(&["api.example.com:*"]), "API.example.com.", 8443, "93.184.215.14").unwrap();
    }

    #[test]
    fn an_ip_entry_opens_only_its_own_address() {
        let allowed = list(&["127.0.0.1:*"]);
        verdict(&allowed, "127.0.0.1", 9, "127.0.0.1").unwrap();
        assert!(verdict(&allowed, "127.0.0.2", 9, "127.0.0.2").is_err());
        assert!(verdict(&allowed, "::ffff:127.0.0.1", 9, "::ffff:127.0.0.1").is_err(), "mapped is another address");
        verdict(&list(&["[::1]:9"]), "::1", 9, "::1").unwrap();
    }

    #[test]
    fn every_resolved_address_must_pass() {
        let host = UrlHost::Name("mixed.example".into());
        let e = check(&AllowedHosts::default(), SETTING, &host, 80, &[ip("93.184.215.14"), ip("127.0.0.1")]);
        assert!(e.is_err(), "one loopback address among public ones refuses the host");
        assert!(check(&AllowedHosts::default(), SETTING, &host, 80, &[]).is_err());
    }

    #[test]
    fn a_blocked_list_refuses_by_name_and_by_address() {
        const BLOCKED: &str = "[test] blocked_hosts";
        let blocked = list(&["ads.example:*", "10.0.0.0/8:443"]);
        let name = UrlHost::Name("ads.example".into());
        let e = check_blocked(&blocked, BLOCKED, &name, 80, &[ip("93.184.215.14")]).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::Forbidden);
        assert_eq!(e.message, "`ads.example:80` is in [test] blocked_hosts");
        let other = UrlHost::Name("www.example".into());
        let e = check_blocked(&blocked, BLOCKED, &other, 443, &[ip("93.184.215.14"), ip("10.1.2.3")]).unwrap_err();
        assert!(!e.message.contains("10.1.2.3"), "a name's address is not told: {}", e.message);
        check_blocked(&blocked, BLOCKED, &other, 80, &[ip("10.1.2.3")]).unwrap();
        check_blocked(&blocked, BLOCKED, &UrlHost::Ip(ip("10.9.9.9")), 443, &[ip("10.9.9.9")]).unwrap_err();
        check_blocked(&AllowedHosts::default(), BLOCKED, &name, 80, &[ip("127.0.0.1")]).unwrap();
    }

    #[test]
    fn entries_parse_and_print_back() {
        for text in
            ["vm:22", "vm:*", "127.0.0.1:8080", "10.0.0.0/8:*", "[::1]:8080", "[fd00::/8]:*", "api.example.com:443"]
        {
            assert_eq!(text.parse::<HostRule>().unwrap().to_string(), text);
        }
        assert_eq!("VM.Example.:80".parse::<HostRule>().unwrap().to_string(), "vm.example:80");
    }

    #[test]
    fn bad_entries_say_how_to_write_them() {
        let e = "vm".parse::<HostRule>().unwrap_err();
        assert!(e.contains("`vm` has no port") && e.contains("`vm:PORT`") && e.contains("`vm:*`"), "{e}");
        let e = "127.0.0.1".parse::<HostRule>().unwrap_err();
        assert!(e.contains("`127.0.0.1:*`"), "{e}");
        let e = "::1".parse::<HostRule>().unwrap_err();
        assert!(e.contains("brackets"), "{e}");
        let e = "[::1]".parse::<HostRule>().unwrap_err();
        assert!(e.contains("`[::1]:*`"), "{e}");
        for bad in [
            "vm:0",
            "vm:65536",
            "vm:http",
            "vm:",
            ":80",
            "a b:80",
            "10.0.0.300:80",
            "[127.0.0.1]:80",
            "[::1:80",
            "10.0.0.0/33:*",
        ] {
            assert!(bad.parse::<HostRule>().is_err(), "{bad} must be refused");
        }
    }

    #[test]
    fn urls_give_host_and_port() {
        let url = |s: &str| reqwest::Url::parse(s).unwrap();
        assert_eq!(
            host_and_port(&url("https://Agents.Example.com/x")).unwrap(),
            (UrlHost::Name("agents.example.com".into()), 443)
        );
        assert_eq!(host_and_port(&url("http://2130706433:81/")).unwrap(), (UrlHost::Ip(ip("127.0.0.1")), 81));
        assert_eq!(host_and_port(&url("http://[::1]/")).unwrap(), (UrlHost::Ip(ip("::1")), 80));
        assert_eq!(host_and_port(&url("file:///etc/passwd")).unwrap_err().kind, crate::ErrorKind::InvalidArguments);
    }

    #[tokio::test]
    async fn resolve_refuses_localhost_and_returns_the_checked_address() {
        let url = reqwest::Url::parse("http://localhost:4545/").unwrap();
        let e = resolve(&url, &list(&["localhost:*"]), SETTING).await.unwrap_err();
        assert!(e.message.contains("loopback"), "{}", e.message);
        let allowed = list(&["127.0.0.1:4545", "[::1]:4545"]);
        let addr = resolve(&url, &allowed, SETTING).await.unwrap();
        assert!(addr.ip().is_loopback() && addr.port() == 4545, "{addr}");
    }
}
