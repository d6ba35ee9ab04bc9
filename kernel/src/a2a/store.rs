//! SQL for A2A: tasks other clients sent this daemon's agents, and remote agents'
//! cards found by `a2a_discover`.

use sqlx::Row;
use uuid::Uuid;

use crate::db::{self, Db};
use crate::error::{Error, Result};

/// A task as stored.
pub(super) struct StoredTask {
    pub id: String,
    pub context_id: String,
    pub state: String,
    pub updated_at: String,
    pub request: String,
    pub reply: Option<String>,
    pub error: Option<String>,
}

pub(super) async fn insert_task(
    db: &Db,
    id: Uuid,
    agent: Uuid,
    context_id: &str,
    state: &str,
    request: &str,
) -> Result<()> {
    let now = db::now();
    sqlx::query(
        "INSERT INTO a2a_tasks (id, agent_id, context_id, state, request, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $6)",
    )
    .bind(id.to_string())
    .bind(agent.to_string())
    .bind(context_id)
    .bind(state)
    .bind(request)
    .bind(&now)
    .execute(db.pool())
    .await?;
    Ok(())
}

pub(super) async fn finish_task(
    db: &Db,
    id: Uuid,
    state: &str,
    reply: Option<&str>,
    error: Option<&str>,
) -> Result<()> {
    sqlx::query("UPDATE a2a_tasks SET state = $1, reply = $2, error = $3, updated_at = $4 WHERE id = $5")
        .bind(state)
        .bind(reply)
        .bind(error)
        .bind(db::now())
        .bind(id.to_string())
        .execute(db.pool())
        .await?;
    Ok(())
}

pub(super) async fn set_state(db: &Db, id: &str, state: &str) -> Result<()> {
    sqlx::query("UPDATE a2a_tasks SET state = $1, updated_at = $2 WHERE id = $3")
        .bind(state)
        .bind(db::now())
        .bind(id)
        .execute(db.pool())
        .await?;
    Ok(())
}

/// The task `id` of `agent`.
pub(super) async fn task(db: &Db, agent: Uuid, id: &str) -> Result<Option<StoredTask>> {
    let row = sqlx::query("SELECT * FROM a2a_tasks WHERE id = $1 AND agent_id = $2")
        .bind(id)
        .bind(agent.to_string())
        .fetch_optional(db.pool())
        .await?;
    let Some(row) = row else { return Ok(None) };
    Ok(Some(StoredTask {
        id: row.try_get("id")?,
        context_id: row.try_get("context_id")?,
        state: row.try_get("state")?,
        updated_at: row.try_get("updated_at")?,
        request: row.try_get("request")?,
        reply: row.try_get("reply")?,
        error: row.try_get("error")?,
    }))
}

/// Stores a remote's card under its URL (again: replaces it); the remote's id.
pub(super) async fn remember_remote(db: &Db, url: &str, card: &str) -> Result<String> {
    Ok(sqlx::query_scalar(
        "INSERT INTO a2a_remotes (id, url, card, discovered_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (url) DO UPDATE SET card = $3, discovered_at = $4 RETURNING id",
    )
    .bind(Uuid::now_v7().to_string())
    .bind(url)
    .bind(card)
    .bind(db::now())
    .fetch_one(db.pool())
    .await?)
}

/// A discovered remote's card.
pub(super) async fn remote(db: &Db, id: &str) -> Result<Option<serde_json::Value>> {
    let card: Option<String> =
        sqlx::query_scalar("SELECT card FROM a2a_remotes WHERE id = $1").bind(id).fetch_optional(db.pool()).await?;
    card.map(|c| serde_json::from_str(&c).map_err(|e| Error::internal(format_args!("stored card unreadable: {e}"))))
        .transpose()
}
