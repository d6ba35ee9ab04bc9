//! Sign-in and first-run setup under attack: floods of wrong passwords, racing setups,
//! pages on other sites, and sign-in tokens the client made up.

use std::net::IpAddr;
use std::sync::Arc;

use kennel_kernel::auth::{HASHING_QUEUE, HASHING_SLOTS, LOGIN_ATTEMPTS};
use kennel_tests::{Browser, Daemon, Home, Reply, csrf_in};

use crate::{daemon, daemon_with_config};

/// The daemon's peak memory during a flood of sign-ins must stay under this. The debug build
/// holds about 37 MiB after start and each argon2 check 19 MiB more while it runs (two at
/// most): floods peaked at 78 MiB. Without the limits the peak grew with the requests sent at
/// once (about 2 GiB for 200), and without a fixed mmap threshold with the checks run in a
/// row (550 MiB for 70).
const FLOOD_MEMORY_BOUND_MIB: u64 = 120;

async fn with_operator() -> (Home, Daemon) {
    let home = Home::new();
    home.cli_with_stdin(&["operator", "add", "ada", "--password-stdin"], "correct horse\n").await;
    let d = home.start().await;
    (home, d)
}

fn loopback(last: u8) -> IpAddr {
    IpAddr::from([127, 0, 0, last])
}

/// Posts `form` to `path` from every browser at once, `each` times per browser.
async fn all_at_once(
    browsers: &[Arc<Browser>],
    each: usize,
    path: &'static str,
    form: Vec<(String, String)>,
) -> Vec<Reply> {
    let mut posts = tokio::task::JoinSet::new();
    for b in browsers {
        for _ in 0..each {
            let (b, form) = (b.clone(), form.clone());
            posts.spawn(async move {
                let fields: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                b.post(path, &fields).await
            });
        }
    }
    posts.join_all().await
}

fn count(replies: &[Reply], status: u16) -> usize {
    replies.iter().filter(|r| r.status == status).count()
}

fn sign_in_form(csrf: &str, name: &str, password: &str) -> Vec<(String, String)> {
    [("csrf", csrf), ("name", name), ("password", password)].map(|(k, v)| (k.to_string(), v.to_string())).to_vec()
}

#[tokio::test]
async fn a_sign_in_flood_from_one_address_checks_five_passwords_and_memory_stays_bounded() {
    let (_home, d) = with_operator().await;
    let b = Arc::new(d.browser());
    let csrf = csrf_in(&b.get("/login").await.text).unwrap();
    let replies = all_at_once(&[b], 200, "/login", sign_in_form(&csrf, "ada", "wrong horse")).await;

    assert_eq!(count(&replies, 401), LOGIN_ATTEMPTS, "only the address's attempts reach argon2");
    assert_eq!(count(&replies, 429), 200 - LOGIN_ATTEMPTS);
    assert!(replies.iter().filter(|r| r.status == 429).all(|r| r.text.contains("too many failed sign-ins")));
    let peak = d.peak_rss_mib();
    assert!(peak < FLOOD_MEMORY_BOUND_MIB, "the daemon peaked at {peak} MiB");

    // The operator, at another address, is not locked out.
    let ada = d.browser_from(loopback(2));
    assert_eq!(ada.sign_in("ada", "correct horse").await.status, 303);
}

#[tokio::test]
async fn a_sign_in_flood_from_many_addresses_waits_its_turn_for_argon2_and_memory_stays_bounded() {
    let (_home, d) = with_operator().await;
    let csrf = csrf_in(&d.browser().get("/login").await.text).unwrap();
    let browsers: Vec<Arc<Browser>> = (10..50).map(|i| Arc::new(d.browser_from(loopback(i)))).collect();
    for b in &browsers {
        b.set_cookie("kennel_csrf", &csrf);
    }
    // 40 addresses × 5 wrong passwords: none of them over its own limit.
    let replies = all_at_once(&browsers, LOGIN_ATTEMPTS, "/login", sign_in_form(&csrf, "ada", "wrong horse")).await;

    let (checked, busy) = (count(&replies, 401), count(&replies, 429));
    assert_eq!(checked + busy, 200, "every answer is a wrong password or 'busy'");
    assert!(checked >= HASHING_SLOTS + HASHING_QUEUE, "all that fit in the line were checked ({checked})");
    assert!(replies.iter().filter(|r| r.status == 429).all(|r| r.text.contains("busy checking other passwords")));
    let peak = d.peak_rss_mib();
    assert!(peak < FLOOD_MEMORY_BOUND_MIB, "the daemon peaked at {peak} MiB");

    let ada = d.browser_from(loopback(2));
    assert_eq!(ada.sign_in("ada", "correct horse").await.status, 303, "the line drains");
}

#[tokio::test]
async fn setups_racing_each_other_create_exactly_one_operator() {
    let (_home, d, _api) = daemon().await;
    let csrf = csrf_in(&d.browser().get("/setup").await.text).unwrap();
    let mut setups = tokio::task::JoinSet::new();
    for i in 0..8 {
        let b = d.browser();
        b.set_cookie("kennel_csrf", &csrf);
        let csrf = csrf.clone();
        setups.spawn(async move {
            let name = format!("op{i}");
            (name.clone(), b.post("/setup", &[("csrf", &csrf), ("name", &name), ("password", "correct horse")]).await)
        });
    }
    let results = setups.join_all().await;
    let winners: Vec<&String> =
        results.iter().filter(|(_, r)| r.header("location") == Some("/")).map(|(name, _)| name).collect();
    assert_eq!(
        winners.len(),
        1,
        "{:?}",
        results.iter().map(|(_, r)| (r.status, r.header("location"))).collect::<Vec<_>>()
    );
    for (_, r) in results.iter().filter(|(name, _)| name != winners[0]) {
        assert_eq!((r.status, r.header("location")), (303, Some("/login")), "the others are sent to sign in");
        assert!(r.header("set-cookie").is_none_or(|c| !c.starts_with("kennel_session=")));
    }
    // Only the winner exists: each name tries from its own address.
    for (i, (name, _)) in results.iter().enumerate() {
        let status = d.browser_from(loopback(20 + i as u8)).sign_in(name, "correct horse").await.status;
        assert_eq!(status, if name == winners[0] { 303 } else { 401 }, "{name}");
    }
}

#[tokio::test]
async fn setup_and_sign_in_answer_only_to_this_daemons_names_and_pages() {
    let (_home, d, _api) = daemon_with_config("[server]\npublic_names = [\"kennel.example.com\"]\n").await;
    let port = d.base.rsplit(':').next().unwrap().to_string();
    let b = d.browser();
    let rebound = format!("rebound.evil.example:{port}");

    // A DNS-rebinding page: its own name arrives as Host.
    let page = b.get_with("/setup", &[("host", &rebound)]).await;
    assert_eq!(page.status, 403);
    assert!(page.text.contains("public_names"), "{}", page.text);
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}"), "kennel.example.com".into()] {
        assert_eq!(b.get_with("/setup", &[("host", &host)]).await.status, 200, "{host}");
    }
    let csrf = csrf_in(&b.get("/setup").await.text).unwrap();
    let form = [("csrf", csrf.as_str()), ("name", "ada"), ("password", "correct horse")];
    assert_eq!(b.post_with("/setup", &form, &[("host", &rebound)]).await.status, 403);
    let foreign = b.post_with("/setup", &form, &[("origin", "http://evil.example")]).await;
    assert_eq!(foreign.status, 403);
    assert!(foreign.text.contains("another site"), "{}", foreign.text);
    assert_eq!(b.post_with("/setup", &form, &[("origin", "null")]).await.status, 403);
    assert_eq!(b.get("/setup").await.status, 200, "no operator was created");
    let own = b.post_with("/setup", &form, &[("origin", &d.base)]).await;
    assert_eq!((own.status, own.header("location")), (303, Some("/")), "a form from our own page");

    let visitor = d.browser();
    assert_eq!(visitor.get_with("/login", &[("host", &rebound)]).await.status, 403);
    let csrf = csrf_in(&visitor.get("/login").await.text).unwrap();
    let form = [("csrf", csrf.as_str()), ("name", "ada"), ("password", "correct horse")];
    let foreign = visitor.post_with("/login", &form, &[("origin", "http://evil.example")]).await;
    assert_eq!(foreign.status, 403, "even with the right password");
    assert!(visitor.cookie("kennel_session").is_none());
    let proxied = visitor.post_with("/login", &form, &[("origin", "https://kennel.example.com")]).await;
    assert_eq!(proxied.status, 303, "a public name's page");
    // Scripts and curl send no Origin.
    assert_eq!(d.browser().sign_in("ada", "correct horse").await.status, 303);
}

#[tokio::test]
async fn the_sign_in_forms_token_is_minted_by_the_daemon_never_chosen_by_the_client() {
    let (_home, d) = with_operator().await;
    // A value planted in the visitor's cookie jar (by a sibling site, say) before they come.
    let planted = "0123456789abcdef0123456789abcdef0123456789abcdef";
    let b = d.browser();
    b.set_cookie("kennel_csrf", planted);
    let page = b.get("/login").await;
    let minted = csrf_in(&page.text).unwrap();
    assert_ne!(minted, planted, "the planted value is not reflected in the form");
    assert_eq!(b.cookie("kennel_csrf").as_deref(), Some(minted.as_str()), "the cookie is replaced");
    assert_eq!(csrf_in(&b.get("/login").await.text).as_deref(), Some(minted.as_str()), "and kept on reload");

    let forger = d.browser();
    forger.set_cookie("kennel_csrf", planted);
    let forged = forger.post("/login", &[("csrf", planted), ("name", "ada"), ("password", "correct horse")]).await;
    assert_eq!(forged.status, 403, "a made-up value in cookie and field alike is refused");
    assert_eq!(
        b.post("/login", &[("csrf", &minted), ("name", "ada"), ("password", "correct horse")]).await.status,
        303
    );
}
