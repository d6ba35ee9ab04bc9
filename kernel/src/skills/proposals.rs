//! `skill_proposals`: agents' changes to skills they may not change themselves, waiting for an
//! operator (see [`super::owners`] for when a change is one). A proposal holds the skill as
//! the change would leave it and the version it was made against; accepting it writes that
//! as a new version only if the skill is still at that version.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::{self, Db};
use crate::error::Result;

/// An agent's change to a skill, for an operator to accept or reject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[schema(as = SkillProposal)]
pub struct Proposal {
    pub id: i64,
    pub skill: String,
    /// create, update, patch or rollback.
    pub op: String,
    /// The skill's version the change was made against (0: the skill did not exist).
    pub base_version: i64,
    pub agent_id: String,
    pub agent_name: String,
    /// When it was proposed (RFC 3339).
    pub at: String,
    /// Why this change waits for an operator.
    pub reason: String,
    /// The unified diff from the base version.
    pub diff: String,
    /// The strategy of a patch, the version rolled back to.
    pub detail: Option<String>,
    /// The manifest (TOML) and body as the change would leave them.
    pub manifest: String,
    pub body: String,
    pub state: ProposalState,
    /// Who accepted or rejected it, and when.
    pub decided_by: Option<String>,
    pub decided_at: Option<String>,
    /// The version an accepted proposal made.
    pub version: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProposalState {
    Pending,
    Accepted,
    Rejected,
}

impl ProposalState {
    pub fn as_str(self) -> &'static str {
        match self {
            ProposalState::Pending => "pending",
            ProposalState::Accepted => "accepted",
            ProposalState::Rejected => "rejected",
        }
    }

    fn parse(s: &str) -> Result<ProposalState, sqlx::Error> {
        match s {
            "pending" => Ok(ProposalState::Pending),
            "accepted" => Ok(ProposalState::Accepted),
            "rejected" => Ok(ProposalState::Rejected),
            other => Err(sqlx::Error::Decode(format!("unknown proposal state `{other}`").into())),
        }
    }
}

impl db::FromRow for Proposal {
    fn from_row(row: &db::Row) -> Result<Self, sqlx::Error> {
        Ok(Proposal {
            id: row.try_get("id")?,
            skill: row.try_get("skill")?,
            op: row.try_get("op")?,
            base_version: row.try_get("base_version")?,
            agent_id: row.try_get("agent_id")?,
            agent_name: row.try_get("agent_name")?,
            at: row.try_get("at")?,
            reason: row.try_get("reason")?,
            diff: row.try_get("diff")?,
            detail: row.try_get("detail")?,
            manifest: row.try_get("manifest")?,
            body: row.try_get("body")?,
            state: ProposalState::parse(row.try_get::<&str, _>("state")?)?,
            decided_by: row.try_get("decided_by")?,
            decided_at: row.try_get("decided_at")?,
            version: row.try_get("version")?,
        })
    }
}

pub(super) struct NewProposal<'a> {
    pub skill: &'a str,
    pub op: &'a str,
    pub base_version: i64,
    pub agent: &'a crate::agent::Agent,
    pub at: String,
    pub reason: &'a str,
    pub diff: &'a str,
    pub detail: Option<&'a str>,
    pub manifest: &'a str,
    pub body: &'a str,
}

/// `SELECT` of every column, then `rest` (sqlx takes only SQL written in the source).
macro_rules! select {
    ($rest:literal) => {
        concat!(
            "SELECT id, skill, op, base_version, agent_id, agent_name, at, reason, diff, detail, manifest, body, state, decided_by, decided_at, version FROM skill_proposals ",
            $rest
        )
    };
}

/// Stores `p` as pending unless its agent already has `limit` pending; `None` then.
pub(super) async fn insert_within(db: &Db, p: NewProposal<'_>, limit: u64) -> Result<Option<i64>> {
    let agent_id = p.agent.id.to_string();
    let mut tx = db.begin_write().await?;
    let pending: i64 =
        db::query_scalar("SELECT count(*) FROM skill_proposals WHERE agent_id = $1 AND state = 'pending'")
            .bind(&agent_id)
            .fetch_one(&mut tx)
            .await?;
    if pending as u64 >= limit {
        return Ok(None);
    }
    let id = db::query_scalar(
        "INSERT INTO skill_proposals (skill, op, base_version, agent_id, agent_name, at, reason, diff, detail, manifest, body, state)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending') RETURNING id",
    )
    .bind(p.skill)
    .bind(p.op)
    .bind(p.base_version)
    .bind(&agent_id)
    .bind(&p.agent.name)
    .bind(&p.at)
    .bind(p.reason)
    .bind(p.diff)
    .bind(p.detail)
    .bind(p.manifest)
    .bind(p.body)
    .fetch_one(&mut tx)
    .await?;
    tx.commit().await?;
    Ok(Some(id))
}

pub(super) async fn get(db: &Db, id: i64) -> Result<Option<Proposal>> {
    Ok(db::query_as(select!("WHERE id = $1")).bind(id).fetch_optional(db).await?)
}

/// Proposals in `state` (every state when `None`), of one skill when `skill` is given, oldest
/// first. One query per filter (no `$N IS NULL OR`, which keeps SQLite from the index).
pub(super) async fn list(db: &Db, state: Option<ProposalState>, skill: Option<&str>) -> Result<Vec<Proposal>> {
    let query = match (state, skill) {
        (Some(state), Some(skill)) => {
            db::query_as(select!("WHERE state = $1 AND skill = $2 ORDER BY id")).bind(state.as_str()).bind(skill)
        }
        (Some(state), None) => db::query_as(select!("WHERE state = $1 ORDER BY id")).bind(state.as_str()),
        (None, Some(skill)) => db::query_as(select!("WHERE skill = $1 ORDER BY id")).bind(skill),
        (None, None) => db::query_as(select!("ORDER BY id")),
    };
    Ok(query.fetch_all(db).await?)
}

/// Moves a pending proposal to `to`; false when it was not pending (decided already).
pub(super) async fn decide(db: &Db, id: i64, to: ProposalState, by: &str, at: &str) -> Result<bool> {
    let changed = db::query(
        "UPDATE skill_proposals SET state = $2, decided_by = $3, decided_at = $4 WHERE id = $1 AND state = 'pending'",
    )
    .bind(id)
    .bind(to.as_str())
    .bind(by)
    .bind(at)
    .execute(db)
    .await?
    .rows_affected();
    Ok(changed == 1)
}

/// Puts an accepted proposal back to pending: what it would have written could not be.
pub(super) async fn reopen(db: &Db, id: i64) -> Result<()> {
    db::query("UPDATE skill_proposals SET state = 'pending', decided_by = NULL, decided_at = NULL WHERE id = $1")
        .bind(id)
        .execute(db)
        .await?;
    Ok(())
}

/// Records the version an accepted proposal made.
pub(super) async fn set_version(db: &Db, id: i64, version: i64) -> Result<()> {
    db::query("UPDATE skill_proposals SET version = $2 WHERE id = $1").bind(id).bind(version).execute(db).await?;
    Ok(())
}
