//! Dashboard sessions: the signed-in operator, their CSRF token, one-time notices and
//! secrets to reveal, and the proof of a person's approval.

use hmac::{Hmac, Mac};
use rand::RngExt;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::tokens::token_hash;
use super::{Auth, store};
use crate::error::{Error, Result};

/// How long a dashboard sign-in lasts.
pub const SESSION_HOURS: i64 = 12;
/// The longest notice a redirect carries to the next page.
pub const MAX_NOTICE_BYTES: usize = 1024;

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

/// A fresh random token for a form (48 hex characters).
pub fn new_form_token() -> String {
    hex::encode(rand::rng().random::<[u8; 24]>())
}

/// Compares two secrets in constant time (CSRF tokens and the like). An empty secret never
/// matches.
pub fn secrets_match(a: &str, b: &str) -> bool {
    !a.is_empty() && a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

impl Auth {
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

    /// Ends, in this process, every session of `operator` (its rows are already gone; other
    /// processes drop them when they read the sessions again).
    pub(super) fn forget_sessions_of(&self, operator: &str) {
        self.sessions.write().expect("sessions lock").retain(|_, s| s.operator != operator);
        self.revisions.send_modify(|r| *r += 1);
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

    pub(super) async fn load_sessions(&self) -> Result<()> {
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
