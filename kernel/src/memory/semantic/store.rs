//! SQL of the semantic store (`memories`).

use sqlx::Row;
use uuid::Uuid;

use crate::agent::AgentId;
use crate::db::{self, Db};
use crate::error::{Error, Result};

/// A stored memory as the store reads it back.
pub(super) struct Stored {
    pub id: Uuid,
    pub content: String,
    pub category: String,
    pub source: String,
    pub confidence: f64,
    pub hits: i64,
    pub created_at: String,
    pub accessed_at: String,
    pub embedder: String,
    pub embedding: Vec<u8>,
}

pub(super) struct NewMemory<'a> {
    pub id: Uuid,
    pub agent: AgentId,
    pub content: &'a str,
    pub category: &'a str,
    pub source: &'a str,
    pub confidence: f64,
    pub hits: i64,
    pub at: &'a str,
    pub embedder: &'a str,
    pub embedding: &'a [u8],
}

/// Inserts a memory, and marks the memories it replaces as merged into it, in one
/// transaction.
pub(super) async fn insert(db: &Db, new: NewMemory<'_>, replaces: &[Uuid]) -> Result<()> {
    let mut tx = db.begin().await?;
    sqlx::query(
        "INSERT INTO memories (id, agent_id, content, category, source, confidence, hits, created_at, accessed_at, embedder, embedding)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, $10)",
    )
    .bind(new.id.to_string())
    .bind(new.agent.to_string())
    .bind(new.content)
    .bind(new.category)
    .bind(new.source)
    .bind(new.confidence)
    .bind(new.hits)
    .bind(new.at)
    .bind(new.embedder)
    .bind(new.embedding)
    .execute(&mut *tx)
    .await?;
    for old in replaces {
        sqlx::query("UPDATE memories SET merged_into = $1 WHERE id = $2 AND agent_id = $3")
            .bind(new.id.to_string())
            .bind(old.to_string())
            .bind(new.agent.to_string())
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Every live memory of `agent` (neither forgotten nor merged), oldest first.
pub(super) async fn live(db: &Db, agent: AgentId) -> Result<Vec<Stored>> {
    let rows = sqlx::query(
        "SELECT * FROM memories WHERE agent_id = $1 AND forgotten_at IS NULL AND merged_into IS NULL ORDER BY created_at, id",
    )
    .bind(agent.to_string())
    .fetch_all(db.pool())
    .await?;
    rows.iter().map(stored_from).collect()
}

/// A vector made again by another embedder.
pub(super) async fn set_embedding(db: &Db, id: Uuid, embedder: &str, embedding: &[u8]) -> Result<()> {
    sqlx::query("UPDATE memories SET embedder = $1, embedding = $2 WHERE id = $3")
        .bind(embedder)
        .bind(embedding)
        .bind(id.to_string())
        .execute(db.pool())
        .await?;
    Ok(())
}

/// Withdraws a live memory; whether it was live.
pub(super) async fn forget(db: &Db, agent: AgentId, id: Uuid, by: &str, at: &str) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE memories SET forgotten_at = $1, forgotten_by = $2
         WHERE id = $3 AND agent_id = $4 AND forgotten_at IS NULL AND merged_into IS NULL",
    )
    .bind(at)
    .bind(by)
    .bind(id.to_string())
    .bind(agent.to_string())
    .execute(db.pool())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Writes refreshed hits and last access of memories a search returned.
pub(super) async fn refresh(db: &Db, ids: &[(Uuid, i64)], at: &str) -> Result<()> {
    let mut tx = db.begin().await?;
    for (id, hits) in ids {
        sqlx::query("UPDATE memories SET hits = $1, accessed_at = $2 WHERE id = $3")
            .bind(hits)
            .bind(at)
            .bind(id.to_string())
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// How many of `agent`'s memories were forgotten, and how many merged into others.
pub(super) async fn withdrawn_counts(db: &Db, agent: AgentId) -> Result<(u64, u64)> {
    let row = sqlx::query(
        "SELECT count(forgotten_at) AS forgotten, count(merged_into) AS merged FROM memories WHERE agent_id = $1",
    )
    .bind(agent.to_string())
    .fetch_one(db.pool())
    .await?;
    let forgotten: i64 = row.try_get("forgotten")?;
    let merged: i64 = row.try_get("merged")?;
    Ok((forgotten as u64, merged as u64))
}

fn stored_from(row: &db::Row) -> Result<Stored> {
    let id: String = row.try_get("id")?;
    Ok(Stored {
        id: Uuid::parse_str(&id).map_err(|e| Error::internal(format!("memory id `{id}`: {e}")))?,
        content: row.try_get("content")?,
        category: row.try_get("category")?,
        source: row.try_get("source")?,
        confidence: row.try_get("confidence")?,
        hits: row.try_get("hits")?,
        created_at: row.try_get("created_at")?,
        accessed_at: row.try_get("accessed_at")?,
        embedder: row.try_get("embedder")?,
        embedding: row.try_get("embedding")?,
    })
}
