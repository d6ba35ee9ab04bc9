//! SQL of the semantic store (`memories`).

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

/// Inserts a memory in `tx`, and marks the memories it replaces as merged into it.
pub(super) async fn insert(tx: &mut db::Tx, new: NewMemory<'_>, replaces: &[Uuid]) -> Result<()> {
    insert_row(tx, &new).await?;
    for old in replaces {
        db::query("UPDATE memories SET merged_into = $1 WHERE id = $2 AND agent_id = $3")
            .bind(new.id.to_string())
            .bind(old.to_string())
            .bind(new.agent.to_string())
            .execute(&mut *tx)
            .await?;
    }
    Ok(())
}

/// Inserts many memories in one transaction.
pub(super) async fn insert_all(db: &Db, rows: &[NewMemory<'_>]) -> Result<()> {
    let mut tx = db.begin().await?;
    for new in rows {
        insert_row(&mut tx, new).await?;
    }
    tx.commit().await?;
    Ok(())
}

async fn insert_row(conn: &mut db::Tx, new: &NewMemory<'_>) -> Result<()> {
    db::query(
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
    .execute(conn)
    .await?;
    Ok(())
}

/// Hands every live memory of `agent` (neither forgotten nor merged), oldest first, to
/// `each`, one row at a time: a store of 100,000 is never all in memory as rows.
pub(super) async fn each_live(db: &Db, agent: AgentId, mut each: impl FnMut(Stored) -> Result<()>) -> Result<()> {
    use futures_util::TryStreamExt;
    let agent = agent.to_string();
    let mut rows = db::query(
        "SELECT * FROM memories WHERE agent_id = $1 AND forgotten_at IS NULL AND merged_into IS NULL ORDER BY created_at, id",
    )
    .bind(&agent)
    .fetch(db);
    while let Some(row) = rows.try_next().await? {
        each(stored_from(&row)?)?;
    }
    Ok(())
}

/// Vectors made again by another embedder, in one transaction.
pub(super) async fn set_embeddings(db: &Db, embedder: &str, rows: &[(Uuid, Vec<u8>)]) -> Result<()> {
    let mut tx = db.begin().await?;
    for (id, embedding) in rows {
        db::query("UPDATE memories SET embedder = $1, embedding = $2 WHERE id = $3")
            .bind(embedder)
            .bind(embedding)
            .bind(id.to_string())
            .execute(&mut tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Withdraws a live memory; whether it was live.
pub(super) async fn forget(db: &Db, agent: AgentId, id: Uuid, by: &str, at: &str) -> Result<bool> {
    let done = db::query(
        "UPDATE memories SET forgotten_at = $1, forgotten_by = $2
         WHERE id = $3 AND agent_id = $4 AND forgotten_at IS NULL AND merged_into IS NULL",
    )
    .bind(at)
    .bind(by)
    .bind(id.to_string())
    .bind(agent.to_string())
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// One more hit for each memory a search returned, and its last access moved forward to
/// `at` (never back: refreshes may be written out of order).
pub(super) async fn refresh(db: &Db, ids: &[Uuid], at: &str) -> Result<()> {
    let mut tx = db.begin().await?;
    for id in ids {
        db::query(
            "UPDATE memories SET hits = hits + 1, accessed_at = CASE WHEN accessed_at < $1 THEN $1 ELSE accessed_at END
             WHERE id = $2",
        )
        .bind(at)
        .bind(id.to_string())
        .execute(&mut tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Per category of `agent`'s memories: how many were forgotten, and how many merged into
/// others.
pub(super) async fn withdrawn_counts(db: &Db, agent: AgentId) -> Result<Vec<(String, u64, u64)>> {
    let rows = db::query(
        "SELECT category, count(forgotten_at) AS forgotten, count(merged_into) AS merged FROM memories
         WHERE agent_id = $1 AND (forgotten_at IS NOT NULL OR merged_into IS NOT NULL) GROUP BY category",
    )
    .bind(agent.to_string())
    .fetch_all(db)
    .await?;
    rows.iter()
        .map(|r| {
            let (forgotten, merged): (i64, i64) = (r.try_get("forgotten")?, r.try_get("merged")?);
            Ok((r.try_get("category")?, forgotten as u64, merged as u64))
        })
        .collect()
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
