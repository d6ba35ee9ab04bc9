//! SQL for canvases: each agent's versions, numbered from 1.

use uuid::Uuid;

use super::Canvas;
use crate::db::{self, Db};
use crate::error::{Error, Result};
use crate::page::{Key, Page, PageRequest};

const COLUMNS: &str = "SELECT agent_id, version, title, bytes, created_at FROM canvases";

/// Stores the agent's next version. One statement numbers and inserts it, after the agent's
/// key is locked (on PostgreSQL), so two calls at once, on any daemons, get two versions.
/// What an agent's canvas keeps: at most this many versions, of at most this many bytes together.
pub(super) struct Kept {
    pub versions: u64,
    pub bytes: u64,
}

/// Stores the agent's next version and drops the oldest ones past `kept`, in one transaction;
/// the new version and how many were dropped.
pub(super) async fn insert(db: &Db, agent: Uuid, title: &str, html: &str, kept: Kept) -> Result<(Canvas, u64)> {
    let mut tx = db.begin().await?;
    tx.lock_key(&format!("canvas:{agent}")).await?;
    let row = db::query(
        "INSERT INTO canvases (agent_id, version, title, html, bytes, created_at)
         SELECT $1, COALESCE(MAX(version), 0) + 1, $2, $3, $4, $5 FROM canvases WHERE agent_id = $1
         RETURNING agent_id, version, title, bytes, created_at",
    )
    .bind(agent.to_string())
    .bind(title)
    .bind(html)
    .bind(html.len() as i64)
    .bind(db::now())
    .fetch_one(&mut tx)
    .await?;
    let sizes = db::query("SELECT version, bytes FROM canvases WHERE agent_id = $1 ORDER BY version DESC")
        .bind(agent.to_string())
        .fetch_all(&mut tx)
        .await?;
    // The newest versions that fit both limits stay; everything older goes.
    let (mut count, mut total, mut oldest_kept) = (0u64, 0u64, i64::MAX);
    for size in &sizes {
        let bytes = size.try_get::<i64, _>("bytes")? as u64;
        if count > 0 && (count >= kept.versions || total + bytes > kept.bytes) {
            break;
        }
        count += 1;
        total += bytes;
        oldest_kept = size.try_get("version")?;
    }
    let dropped = db::query("DELETE FROM canvases WHERE agent_id = $1 AND version < $2")
        .bind(agent.to_string())
        .bind(oldest_kept)
        .execute(&mut tx)
        .await?
        .rows_affected();
    tx.commit().await?;
    Ok((canvas_from(&row)?, dropped))
}

pub(super) async fn html(db: &Db, agent: Uuid, version: u32) -> Result<Option<(Canvas, String)>> {
    let row = db::query(
        "SELECT agent_id, version, title, bytes, created_at, html FROM canvases WHERE agent_id = $1 AND version = $2",
    )
    .bind(agent.to_string())
    .bind(i64::from(version))
    .fetch_optional(db)
    .await?;
    row.map(|r| Ok((canvas_from(&r)?, r.try_get("html")?))).transpose()
}

/// A page of the agent's versions, newest first (the cursor is the last version listed).
pub(super) async fn versions(db: &Db, agent: Uuid, page: &PageRequest) -> Result<Page<Canvas>> {
    let before: Option<i64> = page.after(Key::Number)?.map(|c| c.parse().unwrap_or(i64::MAX));
    let rows = db::query(sqlx::AssertSqlSafe(format!(
        "{COLUMNS} WHERE agent_id = $1 AND version < $2 ORDER BY version DESC LIMIT $3"
    )))
    .bind(agent.to_string())
    .bind(before.unwrap_or(i64::MAX))
    .bind(page.fetch_limit())
    .fetch_all(db)
    .await?;
    let total: i64 = db::query_scalar("SELECT count(*) FROM canvases WHERE agent_id = $1")
        .bind(agent.to_string())
        .fetch_one(db)
        .await?;
    let items = rows.iter().map(canvas_from).collect::<Result<Vec<_>>>()?;
    Ok(Page::from_rows(items, page, total as u64, |c| c.version.to_string()))
}

/// Every agent's latest version, the most recent first.
pub(super) async fn latest_of_each(db: &Db, limit: u32) -> Result<Vec<Canvas>> {
    let rows = db::query(sqlx::AssertSqlSafe(format!(
        "{COLUMNS} c WHERE version = (SELECT MAX(version) FROM canvases WHERE agent_id = c.agent_id)
         ORDER BY created_at DESC, agent_id LIMIT $1"
    )))
    .bind(i64::from(limit))
    .fetch_all(db)
    .await?;
    rows.iter().map(canvas_from).collect()
}

fn canvas_from(row: &db::Row) -> Result<Canvas> {
    let agent: String = row.try_get("agent_id")?;
    let version: i64 = row.try_get("version")?;
    let bytes: i64 = row.try_get("bytes")?;
    Ok(Canvas {
        agent_id: Uuid::parse_str(&agent).map_err(Error::internal)?,
        version: u32::try_from(version).map_err(Error::internal)?,
        title: row.try_get("title")?,
        bytes: bytes as u64,
        created_at: row.try_get("created_at")?,
    })
}
