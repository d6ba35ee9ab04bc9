//! Signing in: attempt limits per address, and the sign-in forms' tokens.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use rand::RngExt;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::{Auth, OperatorSession};
use crate::error::{Error, Result};

/// Failed sign-ins one address may make per window before it must wait.
pub const LOGIN_ATTEMPTS: usize = 5;
pub const LOGIN_WINDOW: Duration = Duration::from_secs(60);
/// Addresses with recent failures remembered before expired ones are swept out, so a flood
/// from many addresses cannot grow the map without end.
const TRACKED_ADDRESSES: usize = 10_000;
/// How long a sign-in form's token (and the cookie that carries it) stays good.
pub const SIGN_IN_FORM_SECS: i64 = 3600;

/// The address whose attempts `client`'s count against: an IPv4 address as it is (also when it
/// arrives IPv4-mapped), an IPv6 address by its /64, since one host commonly holds a whole /64
/// and could otherwise take a fresh address for every guess.
pub(super) fn limited_as(client: IpAddr) -> IpAddr {
    match client {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
        },
        v4 => v4,
    }
}

impl Auth {
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

    pub(super) fn sign_in_token_issued_at(&self, issued: i64) -> String {
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

    /// HMAC-SHA-256 of the token's issue time and nonce under this process's key.
    fn sign_in_mac(&self, issued: i64, nonce: &[u8]) -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.sign_in_key).expect("HMAC takes any key length");
        mac.update(&issued.to_be_bytes());
        mac.update(nonce);
        mac.finalize().into_bytes().into()
    }
}
