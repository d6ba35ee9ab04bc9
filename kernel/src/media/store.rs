//! SQL for media jobs.

use super::jobs::Job;
use crate::db::{self, Db};
use crate::error::Result;

pub(super) async fn insert(db: &Db, job: &Job) -> Result<()> {
    db::query(
        "INSERT INTO media_jobs (id, agent_id, tool, provider, prediction_id, status, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
    )
    .bind(&job.id)
    .bind(&job.agent_id)
    .bind(&job.tool)
    .bind(&job.provider)
    .bind(&job.prediction_id)
    .bind(&job.status)
    .bind(db::now())
    .execute(db)
    .await?;
    Ok(())
}

/// The agent's job `id`; another agent's reads as none.
pub(super) async fn get(db: &Db, agent_id: &str, id: &str) -> Result<Option<Job>> {
    let row = db::query(
        "SELECT id, agent_id, tool, provider, prediction_id, status, path, bytes, error FROM media_jobs WHERE id = $1 AND agent_id = $2",
    )
    .bind(id)
    .bind(agent_id)
    .fetch_optional(db)
    .await?;
    row.map(|r| {
        Ok(Job {
            id: r.try_get("id")?,
            agent_id: r.try_get("agent_id")?,
            tool: r.try_get("tool")?,
            provider: r.try_get("provider")?,
            prediction_id: r.try_get("prediction_id")?,
            status: r.try_get("status")?,
            path: r.try_get("path")?,
            bytes: r.try_get("bytes")?,
            error: r.try_get("error")?,
        })
    })
    .transpose()
}

pub(super) async fn update(db: &Db, job: &Job) -> Result<()> {
    db::query("UPDATE media_jobs SET status = $1, path = $2, bytes = $3, error = $4, updated_at = $5 WHERE id = $6")
        .bind(&job.status)
        .bind(&job.path)
        .bind(job.bytes)
        .bind(&job.error)
        .bind(db::now())
        .bind(&job.id)
        .execute(db)
        .await?;
    Ok(())
}
