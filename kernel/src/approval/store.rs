//! The `approvals` table, and the provenance column of `sessions`.

use uuid::Uuid;

use super::provenance::Label;
use super::{Approval, Status};
use crate::db::{self, Db};
use crate::error::{Error, Result};

/// The columns an [`Approval`] is read from, for `concat!` (queries are static text).
macro_rules! columns {
    () => {
        "id, agent_id, agent, session_id, turn_id, tool, arguments, provenance, rule, reason, \
         requested_at, expires_at, status, decided_by, decided_at, note, allow_until, parked IS NOT NULL AS is_parked, \
         resumed_at"
    };
}

fn unreadable(what: &str, e: impl std::fmt::Display) -> Error {
    Error::internal(format_args!("a stored approval's {what} is unreadable: {e}"))
}

fn approval_from(row: &db::Row) -> Result<Approval> {
    let id = |column: &str| -> Result<Option<Uuid>> {
        let text: Option<String> = row.try_get(column)?;
        text.map(|t| t.parse().map_err(|e| unreadable(column, e))).transpose()
    };
    let arguments: String = row.try_get("arguments")?;
    let provenance: String = row.try_get("provenance")?;
    let status: String = row.try_get("status")?;
    Ok(Approval {
        id: id("id")?.ok_or_else(|| unreadable("id", "empty"))?,
        agent_id: id("agent_id")?.ok_or_else(|| unreadable("agent", "empty"))?,
        agent: row.try_get("agent")?,
        session_id: id("session_id")?,
        turn_id: id("turn_id")?,
        tool: row.try_get("tool")?,
        arguments: serde_json::from_str(&arguments).map_err(|e| unreadable("arguments", e))?,
        provenance: serde_json::from_str(&provenance).map_err(|e| unreadable("provenance", e))?,
        rule: row.try_get("rule")?,
        reason: row.try_get("reason")?,
        requested_at: row.try_get("requested_at")?,
        expires_at: row.try_get("expires_at")?,
        status: Status::parse(&status).ok_or_else(|| unreadable("status", status))?,
        decided_by: row.try_get("decided_by")?,
        decided_at: row.try_get("decided_at")?,
        note: row.try_get("note")?,
        allow_until: row.try_get("allow_until")?,
        parked: row.try_get("is_parked")?,
        resumed_at: row.try_get("resumed_at")?,
    })
}

/// Stores a pending approval; `parked` (how to resume its session, as JSON) when its turn did
/// not wait.
pub(super) async fn insert(db: &Db, a: &Approval, daemon: &str, parked: Option<&str>) -> Result<()> {
    db::query(
        "INSERT INTO approvals (id, agent_id, agent, session_id, turn_id, daemon_id, tool, arguments, provenance,
                                rule, reason, requested_at, expires_at, parked)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
    )
    .bind(a.id.to_string())
    .bind(a.agent_id.to_string())
    .bind(&a.agent)
    .bind(a.session_id.map(|s| s.to_string()))
    .bind(a.turn_id.map(|t| t.to_string()))
    .bind(daemon)
    .bind(&a.tool)
    .bind(a.arguments.to_string())
    .bind(serde_json::to_string(&a.provenance).map_err(|e| Error::internal(e.to_string()))?)
    .bind(&a.rule)
    .bind(&a.reason)
    .bind(&a.requested_at)
    .bind(&a.expires_at)
    .bind(parked)
    .execute(db)
    .await?;
    Ok(())
}

pub(super) async fn get(db: &Db, id: &str) -> Result<Option<Approval>> {
    db::query(concat!("SELECT ", columns!(), " FROM approvals WHERE id = $1"))
        .bind(id)
        .fetch_optional(db)
        .await?
        .map(|row| approval_from(&row))
        .transpose()
}

/// Approvals newest first: only those in `status` when given, at most `limit`.
pub(super) async fn list(db: &Db, status: Option<Status>, agent: Option<&str>, limit: i64) -> Result<Vec<Approval>> {
    let rows = db::query(concat!(
        "SELECT ",
        columns!(),
        " FROM approvals WHERE ($1 IS NULL OR status = $1) AND ($2 IS NULL OR agent_id = $2)
         ORDER BY id DESC LIMIT $3"
    ))
    .bind(status.map(Status::as_str))
    .bind(agent)
    .bind(limit)
    .fetch_all(db)
    .await?;
    rows.iter().map(approval_from).collect()
}

pub(super) async fn pending_count(db: &Db) -> Result<u64> {
    let n: i64 = db::query_scalar("SELECT count(*) FROM approvals WHERE status = 'pending'").fetch_one(db).await?;
    Ok(n.max(0) as u64)
}

/// Decides a pending approval; false when it was decided (or expired) first.
pub(super) async fn decide(
    db: &Db,
    id: &str,
    status: Status,
    by: &str,
    at: &str,
    note: Option<&str>,
    allow_until: Option<&str>,
) -> Result<bool> {
    let changed = db::query(
        "UPDATE approvals SET status = $2, decided_by = $3, decided_at = $4, note = $5, allow_until = $6
         WHERE id = $1 AND status = 'pending'",
    )
    .bind(id)
    .bind(status.as_str())
    .bind(by)
    .bind(at)
    .bind(note)
    .bind(allow_until)
    .execute(db)
    .await?;
    Ok(changed.rows_affected() == 1)
}

/// An approval for a while that lets this call through: same agent, tool and rule.
pub(super) async fn standing(db: &Db, agent: Uuid, tool: &str, rule: &str, now: &str) -> Result<Option<String>> {
    Ok(db::query_scalar(
        "SELECT id FROM approvals WHERE agent_id = $1 AND tool = $2 AND rule = $3 AND status = 'approved'
         AND allow_until > $4 ORDER BY allow_until DESC LIMIT 1",
    )
    .bind(agent.to_string())
    .bind(tool)
    .bind(rule)
    .bind(now)
    .fetch_optional(db)
    .await?)
}

pub(super) async fn session_labels(db: &Db, session: Uuid) -> Result<Vec<Label>> {
    let text: Option<Option<String>> = db::query_scalar("SELECT provenance FROM sessions WHERE id = $1")
        .bind(session.to_string())
        .fetch_optional(db)
        .await?;
    match text.flatten() {
        Some(text) => serde_json::from_str(&text)
            .map_err(|e| Error::internal(format_args!("a session's provenance is unreadable: {e}"))),
        None => Ok(Vec::new()),
    }
}

pub(super) async fn save_session_labels(db: &Db, session: Uuid, labels: &[Label]) -> Result<()> {
    let text = serde_json::to_string(labels).map_err(|e| Error::internal(e.to_string()))?;
    db::query("UPDATE sessions SET provenance = $2 WHERE id = $1")
        .bind(session.to_string())
        .bind(text)
        .execute(db)
        .await?;
    Ok(())
}

/// A decided parked approval whose session has not gone on yet.
pub(super) struct ToResume {
    pub approval: Approval,
    /// How to resume, as stored at parking.
    pub resume: String,
}

/// Parked approvals nobody decided by their time: expired, as a waiting turn's would be.
pub(super) async fn expire_parked(db: &Db, now: &str) -> Result<u64> {
    let expired = db::query(
        "UPDATE approvals SET status = 'expired', decided_by = 'timeout', decided_at = $1
         WHERE parked IS NOT NULL AND status = 'pending' AND expires_at <= $1",
    )
    .bind(now)
    .execute(db)
    .await?;
    Ok(expired.rows_affected())
}

/// When the next parked approval expires, if one waits.
pub(super) async fn next_parked_expiry(db: &Db) -> Result<Option<String>> {
    Ok(db::query_scalar("SELECT min(expires_at) FROM approvals WHERE parked IS NOT NULL AND status = 'pending'")
        .fetch_one(db)
        .await?)
}

/// Decided parked approvals no daemon is resuming, oldest first.
pub(super) async fn unresumed(db: &Db, limit: i64) -> Result<Vec<ToResume>> {
    let rows = db::query(concat!(
        "SELECT ",
        columns!(),
        ", parked FROM approvals
         WHERE parked IS NOT NULL AND status <> 'pending' AND resumed_at IS NULL AND resumed_by IS NULL
         ORDER BY id LIMIT $1"
    ))
    .bind(limit)
    .fetch_all(db)
    .await?;
    rows.iter().map(|row| Ok(ToResume { approval: approval_from(row)?, resume: row.try_get("parked")? })).collect()
}

/// Makes resuming `id` this daemon's: `Some` with the outcome written so far (read with the
/// claim, so one a daemon wrote before it died is never missed); `None` when another daemon
/// took it first.
pub(super) async fn claim(db: &Db, id: Uuid, daemon: &str) -> Result<Option<Option<String>>> {
    let claimed = db::query(
        "UPDATE approvals SET resumed_by = $2 WHERE id = $1 AND resumed_by IS NULL AND resumed_at IS NULL
         RETURNING outcome",
    )
    .bind(id.to_string())
    .bind(daemon)
    .fetch_optional(db)
    .await?;
    claimed.map(|row| Ok(row.try_get("outcome")?)).transpose()
}

/// Lets go of a resume this daemon claimed and could not go on with: the next pass tries again.
pub(super) async fn unclaim(db: &Db, id: Uuid, daemon: &str) -> Result<()> {
    db::query("UPDATE approvals SET resumed_by = NULL WHERE id = $1 AND resumed_by = $2 AND resumed_at IS NULL")
        .bind(id.to_string())
        .bind(daemon)
        .execute(db)
        .await?;
    Ok(())
}

pub(super) async fn set_outcome(db: &Db, id: Uuid, outcome: &str) -> Result<()> {
    db::query("UPDATE approvals SET outcome = $2 WHERE id = $1").bind(id.to_string()).bind(outcome).execute(db).await?;
    Ok(())
}

pub(super) async fn set_resumed(db: &Db, id: Uuid, at: &str) -> Result<()> {
    db::query("UPDATE approvals SET resumed_at = $2 WHERE id = $1").bind(id.to_string()).bind(at).execute(db).await?;
    Ok(())
}

/// Whether `agent` has sent to `target` before (`when = "new_target"`).
pub(super) async fn knows_target(db: &Db, agent: Uuid, target: &str) -> Result<bool> {
    let known = db::query("SELECT agent_id FROM approval_targets WHERE agent_id = $1 AND target = $2")
        .bind(agent.to_string())
        .bind(target)
        .fetch_optional(db)
        .await?;
    Ok(known.is_some())
}

pub(super) async fn know_target(db: &Db, agent: Uuid, target: &str, at: &str) -> Result<()> {
    db::query("INSERT INTO approval_targets (agent_id, target, first_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
        .bind(agent.to_string())
        .bind(target)
        .bind(at)
        .execute(db)
        .await?;
    Ok(())
}

/// Stores the hash of the one-time code sent to the owner's chat for `id`.
pub(super) async fn set_owner_code(db: &Db, id: Uuid, hash: &str) -> Result<()> {
    db::query("UPDATE approvals SET owner_code = $2 WHERE id = $1").bind(id.to_string()).bind(hash).execute(db).await?;
    Ok(())
}

/// The waiting approvals with a code sent to the owner: their ids and codes' hashes.
pub(super) async fn pending_owner_codes(db: &Db) -> Result<Vec<(Uuid, String)>> {
    let rows = db::query("SELECT id, owner_code FROM approvals WHERE status = 'pending' AND owner_code IS NOT NULL")
        .fetch_all(db)
        .await?;
    rows.iter()
        .map(|row| {
            let id: String = row.try_get("id")?;
            Ok((id.parse().map_err(|e| unreadable("id", e))?, row.try_get("owner_code")?))
        })
        .collect()
}
