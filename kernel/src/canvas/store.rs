//! SQL for canvases: each agent's versions, numbered from 1.

use uuid::Uuid;

use super::Canvas;
use crate::db::{self, Db};
use crate::error::{Error, Result};
use crate::page::{Key, Page, PageRequest};

const COLUMNS: &str = "SELECT agent_id, version, title, bytes, created_at FROM canvases";

/// Stores the agent's next version. One statement numbers and inserts it, after the agent's
/// key is locked (on PostgreSQL), so two calls at once, on any daemons, get two versions.
pub(super) async fn insert(db: &Db, agent: Uuid, title: &str, html: &str) -> Result<Canvas> {
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
    tx.commit().await?;
    canvas_from(&row)
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
        "{COLUMNS} WHERE agent_id = $1 AND ($2 IS NULL OR version < $2) ORDER BY version DESC LIMIT $3"
    )))
    .bind(agent.to_string())
    .bind(before)
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
