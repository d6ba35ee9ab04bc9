//! SQL for operators, their dashboard sessions and API tokens.

use super::{OperatorInfo, TokenInfo};
use crate::db::{self, Db};
use crate::error::{Error, Result};

/// A stored token: its name and the hex SHA-256 of the secret.
pub(super) struct StoredToken {
    pub name: String,
    pub hash: String,
}

/// A stored dashboard session, as text.
pub(super) struct StoredSession {
    pub hash: String,
    pub operator: String,
    pub csrf: String,
    pub expires_at: String,
}

/// Every token. An unreadable row is logged (under its ref) and skipped: that token cannot
/// sign in.
pub(super) async fn tokens(db: &Db) -> Result<Vec<StoredToken>> {
    let rows = db::query("SELECT name, token_hash FROM api_tokens").fetch_all(db).await?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            let column = |name| r.try_get::<String, _>(name).map_err(Error::from).ok();
            Some(StoredToken { name: column("name")?, hash: column("token_hash")? })
        })
        .collect())
}

pub(super) async fn insert_token(db: &Db, name: &str, hash: &str) -> Result<()> {
    let result = db::query("INSERT INTO api_tokens (name, token_hash, created_at) VALUES ($1, $2, $3)")
        .bind(name)
        .bind(hash)
        .bind(db::now())
        .execute(db)
        .await;
    db::unique_or(result, || format!("a token named `{name}` exists; revoke it first"))?;
    Ok(())
}

/// Deletes a token; whether there was one.
pub(super) async fn delete_token(db: &Db, name: &str) -> Result<bool> {
    let done = db::query("DELETE FROM api_tokens WHERE name = $1").bind(name).execute(db).await?;
    Ok(done.rows_affected() > 0)
}

pub(super) async fn list_tokens(db: &Db) -> Result<Vec<TokenInfo>> {
    let rows = db::query("SELECT name, created_at FROM api_tokens ORDER BY name").fetch_all(db).await?;
    rows.iter().map(|r| Ok(TokenInfo { name: r.try_get("name")?, created_at: r.try_get("created_at")? })).collect()
}

pub(super) async fn insert_operator(db: &Db, name: &str, password_hash: &str) -> Result<()> {
    let result = db::query("INSERT INTO operators (name, password_hash, created_at) VALUES ($1, $2, $3)")
        .bind(name)
        .bind(password_hash)
        .bind(db::now())
        .execute(db)
        .await;
    db::unique_or(result, || format!("an operator named `{name}` exists"))?;
    Ok(())
}

/// Inserts the operator only if there is none yet; whether it did. In a write transaction:
/// on PostgreSQL two daemons' first set-ups could otherwise both see no operator.
pub(super) async fn insert_first_operator(db: &Db, name: &str, password_hash: &str) -> Result<bool> {
    let mut tx = db.begin_write().await?;
    let done = db::query(
        "INSERT INTO operators (name, password_hash, created_at) \
         SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM operators)",
    )
    .bind(name)
    .bind(password_hash)
    .bind(db::now())
    .execute(&mut tx)
    .await?;
    tx.commit().await?;
    Ok(done.rows_affected() == 1)
}

pub(super) async fn password_hash(db: &Db, name: &str) -> Result<Option<String>> {
    Ok(db::query_scalar("SELECT password_hash FROM operators WHERE name = $1").bind(name).fetch_optional(db).await?)
}

pub(super) async fn list_operators(db: &Db) -> Result<Vec<OperatorInfo>> {
    let rows = db::query(
        "SELECT o.name, o.created_at, \
         (SELECT COUNT(*) FROM operator_sessions s WHERE s.operator = o.name AND s.expires_at >= $1) AS signed_in \
         FROM operators o ORDER BY o.name",
    )
    .bind(db::now())
    .fetch_all(db)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(OperatorInfo {
                name: r.try_get("name")?,
                created_at: r.try_get("created_at")?,
                sessions: r.try_get("signed_in")?,
            })
        })
        .collect()
}

/// What removing an operator did.
pub(super) enum Removal {
    Removed,
    NoSuchOperator,
    /// Refused: it is the only one (with none, anyone on this machine could take `/setup`).
    LastOne,
}

/// Removes an operator and ends its dashboard sessions, unless it is the last one; one write
/// transaction, so two removals at once cannot leave no operator.
pub(super) async fn delete_operator(db: &Db, name: &str) -> Result<Removal> {
    let mut tx = db.begin_write().await?;
    let count: i64 = db::query_scalar("SELECT COUNT(*) FROM operators").fetch_one(&mut tx).await?;
    let exists: Option<String> =
        db::query_scalar("SELECT name FROM operators WHERE name = $1").bind(name).fetch_optional(&mut tx).await?;
    let removal = match (exists, count) {
        (None, _) => Removal::NoSuchOperator,
        (Some(_), 1) => Removal::LastOne,
        (Some(_), _) => {
            db::query("DELETE FROM operator_sessions WHERE operator = $1").bind(name).execute(&mut tx).await?;
            db::query("DELETE FROM operators WHERE name = $1").bind(name).execute(&mut tx).await?;
            Removal::Removed
        }
    };
    tx.commit().await?;
    Ok(removal)
}

/// Replaces an operator's password hash and ends its dashboard sessions (signed in with the
/// old password, wherever that was); whether there is such an operator.
pub(super) async fn set_password_hash(db: &Db, name: &str, password_hash: &str) -> Result<bool> {
    let mut tx = db.begin_write().await?;
    let updated = db::query("UPDATE operators SET password_hash = $1 WHERE name = $2")
        .bind(password_hash)
        .bind(name)
        .execute(&mut tx)
        .await?;
    db::query("DELETE FROM operator_sessions WHERE operator = $1").bind(name).execute(&mut tx).await?;
    tx.commit().await?;
    Ok(updated.rows_affected() == 1)
}

pub(super) async fn operator_count(db: &Db) -> Result<i64> {
    Ok(db::query_scalar("SELECT COUNT(*) FROM operators").fetch_one(db).await?)
}

pub(super) async fn insert_session(db: &Db, session: &StoredSession) -> Result<()> {
    db::query(
        "INSERT INTO operator_sessions (token_hash, operator, csrf, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&session.hash)
    .bind(&session.operator)
    .bind(&session.csrf)
    .bind(db::now())
    .bind(&session.expires_at)
    .execute(db)
    .await?;
    Ok(())
}

pub(super) async fn delete_session(db: &Db, hash: &str) -> Result<()> {
    db::query("DELETE FROM operator_sessions WHERE token_hash = $1").bind(hash).execute(db).await?;
    Ok(())
}

/// Drops sessions that expired before `now`.
pub(super) async fn drop_expired_sessions(db: &Db, now: &str) -> Result<()> {
    db::query("DELETE FROM operator_sessions WHERE expires_at < $1").bind(now).execute(db).await?;
    Ok(())
}

/// The sessions not expired at `now`; only reads (a write here would tell every daemon to
/// read them again). An unreadable row is logged (under its ref) and skipped: that session
/// is over.
pub(super) async fn live_sessions(db: &Db, now: &str) -> Result<Vec<StoredSession>> {
    let rows = db::query("SELECT token_hash, operator, csrf, expires_at FROM operator_sessions WHERE expires_at >= $1")
        .bind(now)
        .fetch_all(db)
        .await?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            let column = |name| r.try_get::<String, _>(name).map_err(Error::from).ok();
            Some(StoredSession {
                hash: column("token_hash")?,
                operator: column("operator")?,
                csrf: column("csrf")?,
                expires_at: column("expires_at")?,
            })
        })
        .collect())
}
