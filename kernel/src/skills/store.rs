//! `skill_history`: every operation on every skill, kept after a skill is deleted (the
//! skills' only SQL).

use serde::Serialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::db::{self, Db};
use crate::error::Result;

/// One operation in a skill's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[schema(as = SkillHistoryEntry)]
pub struct HistoryEntry {
    pub skill: String,
    /// Kennel's version number: 1 for the create, one more for each operation after it.
    pub version: i64,
    /// create, update, patch, write_file, remove_file, rollback, delete or restore.
    pub op: String,
    pub actor: String,
    /// When (RFC 3339).
    pub at: String,
    /// sha256 of the manifest and body after the operation.
    pub content_hash: String,
    /// The unified diff of what changed.
    pub diff: String,
    /// The file of a file operation, the strategy of a patch, the version rolled back to.
    pub detail: Option<String>,
    /// The manifest (TOML) and body after the operation.
    pub manifest: String,
    pub body: String,
}

pub(super) struct NewEntry<'a> {
    pub skill: &'a str,
    pub op: &'a str,
    pub actor: String,
    pub at: String,
    pub diff: &'a str,
    pub detail: Option<&'a str>,
    pub manifest: &'a str,
    pub body: &'a str,
    /// The agent whose change this is (`None`: a person's, or a proposal an operator accepted).
    pub agent_id: Option<uuid::Uuid>,
}

/// `SELECT` of every column, then `rest` (sqlx takes only SQL written in the source).
macro_rules! select {
    ($rest:literal) => {
        concat!(
            "SELECT skill, version, op, actor, at, content_hash, diff, detail, manifest, body FROM skill_history ",
            $rest
        )
    };
}

db::from_row!(HistoryEntry { skill, version, op, actor, at, content_hash, diff, detail, manifest, body });

/// Appends `entry` as the skill's next version, and returns that version. The caller holds
/// the skill's lock; the version is still taken inside the insert, so it is one more than the
/// last whatever else writes — on any daemon: on PostgreSQL the skill's key is locked first.
pub(super) async fn append(db: &Db, entry: NewEntry<'_>) -> Result<i64> {
    let mut tx = db.begin().await?;
    tx.lock_key(&format!("skill:{}", entry.skill)).await?;
    let hash =
        hex::encode(Sha256::new().chain_update(entry.manifest).chain_update([0]).chain_update(entry.body).finalize());
    let version = db::query_scalar(
        "INSERT INTO skill_history (skill, version, op, actor, at, content_hash, diff, detail, manifest, body, agent_id)
         VALUES ($1, (SELECT COALESCE(MAX(version), 0) + 1 FROM skill_history WHERE skill = $1), $2, $3, $4, $5, $6, $7, $8, $9, $10)
         RETURNING version",
    )
    .bind(entry.skill)
    .bind(entry.op)
    .bind(&entry.actor)
    .bind(&entry.at)
    .bind(&hash)
    .bind(entry.diff)
    .bind(entry.detail)
    .bind(entry.manifest)
    .bind(entry.body)
    .bind(entry.agent_id.map(|id| id.to_string()))
    .fetch_one(&mut tx)
    .await?;
    tx.commit().await?;
    Ok(version)
}

pub(super) async fn all(db: &Db, skill: &str) -> Result<Vec<HistoryEntry>> {
    Ok(db::query_as(select!("WHERE skill = $1 ORDER BY version")).bind(skill).fetch_all(db).await?)
}

pub(super) async fn latest(db: &Db, skill: &str) -> Result<Option<HistoryEntry>> {
    Ok(db::query_as(select!("WHERE skill = $1 ORDER BY version DESC LIMIT 1")).bind(skill).fetch_optional(db).await?)
}

pub(super) async fn at(db: &Db, skill: &str, version: i64) -> Result<Option<HistoryEntry>> {
    Ok(db::query_as(select!("WHERE skill = $1 AND version = $2")).bind(skill).bind(version).fetch_optional(db).await?)
}

/// Who made `skill`: its last `create` row's agent, `Some(None)` when a person made it (or
/// accepted the proposal that did), `None` when it has no history (a folder an operator put
/// under `skills/` by hand).
pub(super) async fn maker(db: &Db, skill: &str) -> Result<Option<Option<String>>> {
    Ok(db::query_scalar::<Option<String>>(
        "SELECT agent_id FROM skill_history WHERE skill = $1 AND op = 'create' ORDER BY version DESC LIMIT 1",
    )
    .bind(skill)
    .fetch_optional(db)
    .await?)
}

/// The last entry of each skill whose last operation is a delete, by name.
/// Every delete made before `cutoff`: the skill and the version its folder was put aside as.
pub(super) async fn deletes_before(db: &Db, cutoff: &str) -> Result<Vec<(String, i64)>> {
    let rows = db::query("SELECT skill, version FROM skill_history WHERE op = 'delete' AND at < $1")
        .bind(cutoff)
        .fetch_all(db)
        .await?;
    rows.iter().map(|r| Ok((r.try_get("skill")?, r.try_get("version")?))).collect()
}

pub(super) async fn deleted(db: &Db) -> Result<Vec<HistoryEntry>> {
    Ok(db::query_as(select!(
        "AS h WHERE op = 'delete' AND version = (SELECT MAX(version) FROM skill_history WHERE skill = h.skill) ORDER BY skill"
    ))
    .fetch_all(db)
    .await?)
}
