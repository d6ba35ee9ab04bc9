//! SQL for stored workflows and their runs.

use uuid::Uuid;

use super::{RunStatus, Workflow, WorkflowRun};
use crate::db::{self, Db};
use crate::error::{Error, Result};

pub(super) async fn insert(db: &Db, wf: &Workflow) -> Result<()> {
    let result = db::query(
        "INSERT INTO workflows (id, name, description, steps, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(wf.id.to_string())
    .bind(&wf.name)
    .bind(&wf.description)
    .bind(serde_json::to_string(&wf.steps).expect("steps serialise"))
    .bind(&wf.created_at)
    .bind(&wf.updated_at)
    .execute(db)
    .await;
    db::unique_or(result, || format!("a workflow named `{}` already exists", wf.name))?;
    Ok(())
}

pub(super) async fn update(db: &Db, wf: &Workflow) -> Result<()> {
    let result =
        db::query("UPDATE workflows SET name = $1, description = $2, steps = $3, updated_at = $4 WHERE id = $5")
            .bind(&wf.name)
            .bind(&wf.description)
            .bind(serde_json::to_string(&wf.steps).expect("steps serialise"))
            .bind(&wf.updated_at)
            .bind(wf.id.to_string())
            .execute(db)
            .await;
    db::unique_or(result, || format!("a workflow named `{}` already exists", wf.name))?;
    Ok(())
}

pub(super) async fn delete(db: &Db, id: Uuid) -> Result<()> {
    db::query("DELETE FROM workflows WHERE id = $1").bind(id.to_string()).execute(db).await?;
    Ok(())
}

/// Workflows by name after `after`, at most `limit`.
pub(super) async fn list(db: &Db, after: Option<&str>, limit: i64) -> Result<Vec<Workflow>> {
    let rows = db::query("SELECT * FROM workflows WHERE name > $1 ORDER BY name LIMIT $2")
        .bind(after.unwrap_or(""))
        .bind(limit)
        .fetch_all(db)
        .await?;
    rows.iter().map(workflow_from).collect()
}

pub(super) async fn count(db: &Db) -> Result<u64> {
    let n: i64 = db::query_scalar("SELECT count(*) FROM workflows").fetch_one(db).await?;
    Ok(n as u64)
}

/// By id or name.
pub(super) async fn get(db: &Db, id_or_name: &str) -> Result<Option<Workflow>> {
    let row =
        db::query("SELECT * FROM workflows WHERE id = $1 OR name = $1").bind(id_or_name).fetch_optional(db).await?;
    row.as_ref().map(workflow_from).transpose()
}

/// The workflow's runs, newest first, before the run `before`, at most `limit`.
pub(super) async fn runs(db: &Db, workflow: Uuid, before: Option<&str>, limit: i64) -> Result<Vec<WorkflowRun>> {
    let rows = db::query("SELECT * FROM workflow_runs WHERE workflow_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3")
        .bind(workflow.to_string())
        .bind(before.unwrap_or(db::AFTER_EVERY_KEY))
        .bind(limit)
        .fetch_all(db)
        .await?;
    rows.iter().map(run_from).collect()
}

pub(super) async fn run_count(db: &Db, workflow: Uuid) -> Result<u64> {
    let n: i64 = db::query_scalar("SELECT count(*) FROM workflow_runs WHERE workflow_id = $1")
        .bind(workflow.to_string())
        .fetch_one(db)
        .await?;
    Ok(n as u64)
}

/// Writes a run as it stands (the first time inserts it), as run by `daemon`.
pub(super) async fn save_run(db: &Db, run: &WorkflowRun, daemon: &str) -> Result<()> {
    db::query(
        "INSERT INTO workflow_runs (id, workflow_id, inputs, status, output, error, steps, started_at, finished_at, daemon_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (id) DO UPDATE SET status = $4, output = $5, error = $6, steps = $7, finished_at = $9",
    )
    .bind(run.id.to_string())
    .bind(run.workflow_id.to_string())
    .bind(run.inputs.to_string())
    .bind(run.status.as_str())
    .bind(&run.output)
    .bind(&run.error)
    .bind(serde_json::to_string(&run.steps).expect("steps serialise"))
    .bind(&run.started_at)
    .bind(&run.finished_at)
    .bind(daemon)
    .execute(db)
    .await?;
    Ok(())
}

/// Fails the runs `daemon` (or no daemon) left `running`, finished `at`.
pub(super) async fn fail_interrupted(db: &Db, daemon: &str, at: &str) -> Result<u64> {
    let done = db::query(
        "UPDATE workflow_runs SET status = 'failed', error = 'the daemon running it stopped before it finished',
             finished_at = $1 WHERE status = 'running' AND (daemon_id = $2 OR daemon_id IS NULL)",
    )
    .bind(at)
    .bind(daemon)
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

fn workflow_from(row: &db::Row) -> Result<Workflow> {
    let unreadable = |e: String| Error::internal(format_args!("stored workflow is unreadable: {e}"));
    Ok(Workflow {
        id: Uuid::parse_str(row.try_get("id")?).map_err(|e| unreadable(e.to_string()))?,
        name: row.try_get("name")?,
        description: row.try_get("description")?,
        steps: serde_json::from_str(row.try_get("steps")?).map_err(|e| unreadable(e.to_string()))?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn run_from(row: &db::Row) -> Result<WorkflowRun> {
    let unreadable = |e: String| Error::internal(format_args!("stored workflow run is unreadable: {e}"));
    Ok(WorkflowRun {
        id: Uuid::parse_str(row.try_get("id")?).map_err(|e| unreadable(e.to_string()))?,
        workflow_id: Uuid::parse_str(row.try_get("workflow_id")?).map_err(|e| unreadable(e.to_string()))?,
        inputs: serde_json::from_str(row.try_get("inputs")?).map_err(|e| unreadable(e.to_string()))?,
        status: RunStatus::parse(row.try_get("status")?)?,
        output: row.try_get("output")?,
        error: row.try_get("error")?,
        steps: serde_json::from_str(row.try_get("steps")?).map_err(|e| unreadable(e.to_string()))?,
        started_at: row.try_get("started_at")?,
        finished_at: row.try_get("finished_at")?,
    })
}
