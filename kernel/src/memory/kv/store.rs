//! SQL of the key/value store (`memory_kv`).

use super::KvEntry;
use crate::agent::AgentId;
use crate::db::{self, Db};
use crate::error::Result;

/// Writes `value` under `key` unless the key is new and the agent already holds `limit`
/// keys; the count and the write hold the write lock together. `Some(replaced)` when written.
pub(super) async fn upsert_within(
    db: &Db,
    agent: AgentId,
    key: &str,
    value: &str,
    written_by: &[crate::approval::Label],
    limit: u64,
) -> Result<Option<bool>> {
    let provenance = match written_by {
        [] => None,
        labels => Some(serde_json::to_string(labels).map_err(|e| crate::error::Error::internal(e.to_string()))?),
    };
    let agent = agent.to_string();
    let mut tx = db.begin_write().await?;
    let exists = db::query("SELECT 1 FROM memory_kv WHERE agent_id = $1 AND key = $2")
        .bind(&agent)
        .bind(key)
        .fetch_optional(&mut tx)
        .await?
        .is_some();
    if !exists {
        let held: i64 = db::query_scalar("SELECT count(*) FROM memory_kv WHERE agent_id = $1")
            .bind(&agent)
            .fetch_one(&mut tx)
            .await?;
        if held as u64 >= limit {
            return Ok(None);
        }
    }
    let now = db::now();
    db::query(
        "INSERT INTO memory_kv (agent_id, key, value, created_at, updated_at, provenance) VALUES ($1, $2, $3, $4, $4, $5)
         ON CONFLICT (agent_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at,
         provenance = excluded.provenance",
    )
    .bind(&agent)
    .bind(key)
    .bind(value)
    .bind(&now)
    .bind(provenance)
    .execute(&mut tx)
    .await?;
    tx.commit().await?;
    Ok(Some(exists))
}

pub(super) async fn get(db: &Db, agent: AgentId, key: &str) -> Result<Option<KvEntry>> {
    let row = db::query("SELECT * FROM memory_kv WHERE agent_id = $1 AND key = $2")
        .bind(agent.to_string())
        .bind(key)
        .fetch_optional(db)
        .await?;
    row.as_ref().map(entry_from).transpose()
}

pub(super) async fn delete(db: &Db, agent: AgentId, key: &str) -> Result<bool> {
    let done = db::query("DELETE FROM memory_kv WHERE agent_id = $1 AND key = $2")
        .bind(agent.to_string())
        .bind(key)
        .execute(db)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Every key of `agent`, in byte order (SQLite compares text by its bytes).
pub(super) async fn keys(db: &Db, agent: AgentId) -> Result<Vec<String>> {
    let rows = db::query("SELECT key FROM memory_kv WHERE agent_id = $1 ORDER BY key")
        .bind(agent.to_string())
        .fetch_all(db)
        .await?;
    rows.iter().map(|r| Ok(r.try_get("key")?)).collect()
}

/// Up to `limit` entries after the first `skip`, in key order.
pub(super) async fn entries(db: &Db, agent: AgentId, skip: i64, limit: i64) -> Result<Vec<KvEntry>> {
    let rows = db::query("SELECT * FROM memory_kv WHERE agent_id = $1 ORDER BY key LIMIT $2 OFFSET $3")
        .bind(agent.to_string())
        .bind(limit)
        .bind(skip)
        .fetch_all(db)
        .await?;
    rows.iter().map(entry_from).collect()
}

pub(super) async fn count(db: &Db, agent: AgentId) -> Result<u64> {
    let n: i64 = db::query_scalar("SELECT count(*) FROM memory_kv WHERE agent_id = $1")
        .bind(agent.to_string())
        .fetch_one(db)
        .await?;
    Ok(n as u64)
}

fn entry_from(row: &db::Row) -> Result<KvEntry> {
    Ok(KvEntry {
        key: row.try_get("key")?,
        value: row.try_get("value")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        provenance: match row.try_get::<Option<String>, _>("provenance")? {
            Some(text) => serde_json::from_str(&text).unwrap_or_else(|_| {
                // Unreadable labels count as read: the value is untrusted rather than trusted.
                vec![crate::approval::Label::new("unknown", "a memory's stored provenance is unreadable")]
            }),
            None => Vec::new(),
        },
    })
}
