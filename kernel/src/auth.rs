//! Who may use the daemon: operators (people, argon2id passwords) and API tokens
//! (automation; only a SHA-256 of each token is stored).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use rand::RngExt;
use sha2::{Digest, Sha256};
use sqlx::Row;
use subtle::ConstantTimeEq;

use crate::agent::{NAME_RULE, is_valid_name};
use crate::db::{self, Db};
use crate::error::{Error, Result};

/// Prefix that makes a Kennel token recognisable in logs and secret scanners.
const TOKEN_PREFIX: &str = "kn_";
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

pub struct Auth {
    db: Db,
    /// Hashes of live tokens, reloaded when another process (the CLI) changes them.
    tokens: RwLock<Vec<TokenRecord>>,
    /// Live dashboard sign-ins by the hash of their cookie value.
    sessions: RwLock<HashMap<[u8; 32], OperatorSession>>,
    /// Recent failed sign-ins per client address.
    failures: Mutex<HashMap<IpAddr, Vec<Instant>>>,
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

fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn check_name(name: &str) -> Result<()> {
    if is_valid_name(name) { Ok(()) } else { Err(Error::invalid(format!("`{name}` is not a valid name: {NAME_RULE}"))) }
}

impl Auth {
    pub(crate) async fn load(db: Db) -> Result<Auth> {
        let auth =
            Auth { db, tokens: RwLock::new(Vec::new()), sessions: RwLock::default(), failures: Mutex::default() };
        auth.reload().await?;
        auth.load_sessions().await?;
        Ok(auth)
    }

    pub async fn reload(&self) -> Result<()> {
        let rows = sqlx::query("SELECT name, token_hash FROM api_tokens").fetch_all(&self.db).await?;
        let records = rows
            .iter()
            .filter_map(|r| {
                let mut hash = [0u8; 32];
                // An unreadable row is logged (under its ref) and skipped: that token cannot sign in.
                hex::decode_to_slice(r.try_get::<&str, _>("token_hash").map_err(Error::from).ok()?, &mut hash).ok()?;
                Some(TokenRecord { name: r.try_get("name").map_err(Error::from).ok()?, hash })
            })
            .collect();
        *self.tokens.write().expect("token lock") = records;
        Ok(())
    }

    /// Creates a token and returns it; this is the only time it can be seen.
    pub async fn create_token(&self, name: &str) -> Result<String> {
        check_name(name)?;
        let secret: [u8; 32] = rand::rng().random();
        let token = format!("{TOKEN_PREFIX}{}", hex::encode(secret));
        let result = sqlx::query("INSERT INTO api_tokens (name, token_hash, created_at) VALUES (?, ?, ?)")
            .bind(name)
            .bind(hex::encode(token_hash(&token)))
            .bind(db::now())
            .execute(&self.db)
            .await;
        db::unique_or(result, || format!("a token named `{name}` exists; revoke it first"))?;
        self.reload().await?;
        Ok(token)
    }

    pub async fn revoke_token(&self, name: &str) -> Result<()> {
        let done = sqlx::query("DELETE FROM api_tokens WHERE name = ?").bind(name).execute(&self.db).await?;
        if done.rows_affected() == 0 {
            return Err(Error::not_found(format!("no token named `{name}`")));
        }
        self.reload().await
    }

    pub async fn list_tokens(&self) -> Result<Vec<TokenInfo>> {
        let rows = sqlx::query("SELECT name, created_at FROM api_tokens ORDER BY name").fetch_all(&self.db).await?;
        rows.iter().map(|r| Ok(TokenInfo { name: r.try_get("name")?, created_at: r.try_get("created_at")? })).collect()
    }

    /// The name of the token, if it is live. Every stored hash is compared in constant time,
    /// so timing says nothing about which (or whether any) token nearly matched.
    pub fn verify_token(&self, token: &str) -> Option<String> {
        let presented = token_hash(token);
        let mut found = None;
        for record in self.tokens.read().expect("token lock").iter() {
            if bool::from(record.hash.ct_eq(&presented)) {
                found = Some(record.name.clone());
            }
        }
        found
    }

    /// Adds an operator with an argon2id hash of `password`.
    pub async fn add_operator(&self, name: &str, password: &str) -> Result<()> {
        check_name(name)?;
        if password.chars().count() < MIN_PASSWORD {
            return Err(Error::invalid(format!("a password needs at least {MIN_PASSWORD} characters")));
        }
        let password = password.to_string();
        let hash = tokio::task::spawn_blocking(move || {
            Argon2::default().hash_password(password.as_bytes()).map(|h| h.to_string())
        })
        .await
        .map_err(|e| Error::failed(format!("hashing failed: {e}")))?
        .map_err(|e| Error::failed(format!("hashing failed: {e}")))?;
        let result = sqlx::query("INSERT INTO operators (name, password_hash, created_at) VALUES (?, ?, ?)")
            .bind(name)
            .bind(hash)
            .bind(db::now())
            .execute(&self.db)
            .await;
        db::unique_or(result, || format!("an operator named `{name}` exists"))?;
        Ok(())
    }

    /// Whether `name` / `password` is a valid operator sign-in. An unknown name costs the
    /// same hashing work as a wrong password, so the two cannot be told apart by timing.
    pub async fn verify_operator(&self, name: &str, password: &str) -> Result<bool> {
        let stored: Option<String> = sqlx::query_scalar("SELECT password_hash FROM operators WHERE name = ?")
            .bind(name)
            .fetch_optional(&self.db)
            .await?;
        let known = stored.is_some();
        let hash = match stored {
            Some(h) => h,
            None => dummy_hash().await?,
        };
        let password = password.to_string();
        let ok = tokio::task::spawn_blocking(move || {
            PasswordHash::new(&hash)
                .map(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
                .unwrap_or(false)
        })
        .await
        .map_err(|e| Error::failed(format!("verifying failed: {e}")))?;
        Ok(known && ok)
    }

    pub async fn operator_count(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM operators").fetch_one(&self.db).await?)
    }

    // ---- dashboard sign-in ----

    /// Signs an operator in: checks the per-address limit, then the password. On success
    /// returns the cookie value (shown to no one else) and the session. A wrong password and
    /// an unknown operator get the same error.
    pub async fn sign_in(&self, client: IpAddr, name: &str, password: &str) -> Result<(String, OperatorSession)> {
        if let Some(wait) = self.login_wait(client) {
            return Err(Error::new(
                crate::ErrorKind::ResourceExhausted,
                format!("too many failed sign-ins from this address; try again in {} s", wait.as_secs().max(1)),
            ));
        }
        if !self.verify_operator(name, password).await? {
            self.failures.lock().expect("failures lock").entry(client).or_default().push(Instant::now());
            return Err(Error::forbidden("unknown operator or wrong password"));
        }
        self.failures.lock().expect("failures lock").remove(&client);
        self.open_session(name).await
    }

    /// How long `client` must wait before trying again, if it must.
    fn login_wait(&self, client: IpAddr) -> Option<Duration> {
        let mut failures = self.failures.lock().expect("failures lock");
        let recent = failures.entry(client).or_default();
        recent.retain(|t| t.elapsed() < LOGIN_WINDOW);
        (recent.len() >= LOGIN_ATTEMPTS).then(|| LOGIN_WINDOW.saturating_sub(recent[0].elapsed()))
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
        sqlx::query(
            "INSERT INTO operator_sessions (token_hash, operator, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
        )
        .bind(hex::encode(hash))
        .bind(operator)
        .bind(&session.csrf)
        .bind(db::now())
        .bind(session.expires_at.to_rfc3339())
        .execute(&self.db)
        .await?;
        self.sessions.write().expect("sessions lock").insert(hash, session.clone());
        Ok((cookie, session))
    }

    /// The live session a cookie value belongs to; expired sessions are gone.
    pub fn session(&self, cookie: &str) -> Option<OperatorSession> {
        let hash = token_hash(cookie);
        let session = self.sessions.read().expect("sessions lock").get(&hash).cloned()?;
        (session.expires_at > chrono::Utc::now()).then_some(session)
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
        sqlx::query("DELETE FROM operator_sessions WHERE token_hash = ?")
            .bind(hex::encode(hash))
            .execute(&self.db)
            .await?;
        Ok(())
    }

    async fn load_sessions(&self) -> Result<()> {
        sqlx::query("DELETE FROM operator_sessions WHERE expires_at < ?")
            .bind(chrono::Utc::now().to_rfc3339())
            .execute(&self.db)
            .await?;
        let rows = sqlx::query("SELECT token_hash, operator, csrf, expires_at FROM operator_sessions")
            .fetch_all(&self.db)
            .await?;
        let sessions = rows
            .iter()
            .filter_map(|r| {
                let mut hash = [0u8; 32];
                // An unreadable row is logged (under its ref) and skipped: that session is over.
                let column = |name| r.try_get::<&str, _>(name).map_err(Error::from).ok();
                hex::decode_to_slice(column("token_hash")?, &mut hash).ok()?;
                let expires_at =
                    chrono::DateTime::parse_from_rfc3339(column("expires_at")?).ok()?.with_timezone(&chrono::Utc);
                let (operator, csrf) = (column("operator")?.to_string(), column("csrf")?.to_string());
                Some((hash, OperatorSession { operator, csrf, expires_at }))
            })
            .collect();
        *self.sessions.write().expect("sessions lock") = sessions;
        Ok(())
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

/// An argon2id hash (default parameters) of a random password, checked against when the
/// operator is unknown so that case costs the same work as a wrong password.
async fn dummy_hash() -> Result<String> {
    static DUMMY: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    DUMMY
        .get_or_try_init(|| async {
            tokio::task::spawn_blocking(|| {
                let password: [u8; 16] = rand::rng().random();
                Argon2::default().hash_password(&password).map(|h| h.to_string())
            })
            .await
            .map_err(|e| Error::failed(format!("hashing failed: {e}")))?
            .map_err(|e| Error::failed(format!("hashing failed: {e}")))
        })
        .await
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn auth() -> (tempfile::TempDir, Auth) {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::db::open(&dir.path().join("k.db")).await.unwrap();
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

    #[tokio::test]
    async fn tokens_verify_until_revoked() {
        let (_dir, auth) = auth().await;
        let token = auth.create_token("ci").await.unwrap();
        let other = auth.create_token("cd").await.unwrap();
        assert_eq!(auth.verify_token(&token).as_deref(), Some("ci"));
        assert_eq!(auth.verify_token(&other).as_deref(), Some("cd"));
        assert_eq!(auth.verify_token("kn_guess"), None);
        auth.revoke_token("ci").await.unwrap();
        assert_eq!(auth.verify_token(&token), None);
        assert_eq!(auth.verify_token(&other).as_deref(), Some("cd"));
        assert_eq!(auth.revoke_token("ci").await.unwrap_err().kind, crate::ErrorKind::NotFound);
    }
}
