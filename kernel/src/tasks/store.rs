//! SQL for the task board. A task's history comes from SQL triggers on `tasks` (see the
//! migration), written in the same statement as each change.

use uuid::Uuid;

use super::{Task, TaskStatus};
use crate::db::{self, Db};
use crate::error::{Error, Result};

/// Claims the best pending task for `agent` in one statement: the subquery picks it, the
/// update takes it, so two claims can never take the same task. SQLite runs writes one at a
/// time; on PostgreSQL, where daemons claim at once, the subquery locks the row it picks and
/// passes over rows another claim holds (`FOR UPDATE SKIP LOCKED`), and the update checks
/// the task is still pending.
const CLAIM: &str =
    "UPDATE tasks SET status = 'claimed', changed_by = NULL, claimed_by = $1, claimed_at = $2, updated_at = $2
     WHERE id = (SELECT id FROM tasks
                 WHERE status = 'pending' AND (assignee IS NULL OR assignee = $1) AND priority >= $3
                 ORDER BY priority DESC, id ASC LIMIT 1)
     RETURNING *";
const CLAIM_POSTGRES: &str =
    "UPDATE tasks SET status = 'claimed', changed_by = NULL, claimed_by = $1, claimed_at = $2, updated_at = $2
     WHERE status = 'pending' AND id = (SELECT id FROM tasks
                 WHERE status = 'pending' AND (assignee IS NULL OR assignee = $1) AND priority >= $3
                 ORDER BY priority DESC, id ASC LIMIT 1 FOR UPDATE SKIP LOCKED)
     RETURNING *";

/// What a list selects: the filter of [`super::TaskFilter`] with the assignee resolved.
pub(super) struct Query<'a> {
    pub status: Option<TaskStatus>,
    pub assignee: Option<&'a str>,
    /// A `LIKE` pattern, already escaped.
    pub text: Option<String>,
    pub min_priority: i64,
}

pub(super) struct NewRow<'a> {
    pub title: &'a str,
    pub body: &'a str,
    pub assignee: Option<&'a str>,
    pub priority: i64,
    pub posted_by: &'a str,
}

pub(super) async fn insert(db: &Db, new: NewRow<'_>) -> Result<Task> {
    let now = db::now();
    let row = db::query(
        "INSERT INTO tasks (id, title, body, assignee, priority, status, posted_by, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $7) RETURNING *",
    )
    .bind(Uuid::now_v7().to_string())
    .bind(new.title)
    .bind(new.body)
    .bind(new.assignee)
    .bind(new.priority)
    .bind(new.posted_by)
    .bind(&now)
    .fetch_one(db)
    .await?;
    task_from(&row)
}

pub(super) async fn get(db: &Db, id: &str) -> Result<Option<Task>> {
    let row = db::query("SELECT * FROM tasks WHERE id = $1").bind(id).fetch_optional(db).await?;
    row.as_ref().map(task_from).transpose()
}

/// Runs claims in order in one transaction (all commit or none): a burst of claims writes
/// the pages it changed once instead of once per claim.
pub(super) async fn claim_all(db: &Db, claims: impl Iterator<Item = (&str, i64)>) -> Result<Vec<Option<Task>>> {
    let now = db::now();
    let claim = db.dialect(CLAIM, CLAIM_POSTGRES);
    let mut tx = db.begin().await?;
    let mut claimed = Vec::new();
    for (agent, min_priority) in claims {
        let row = db::query(claim).bind(agent).bind(&now).bind(min_priority).fetch_optional(&mut tx).await?;
        claimed.push(row.as_ref().map(task_from).transpose()?);
    }
    tx.commit().await?;
    Ok(claimed)
}

/// Puts a claimed task back to pending (its claimant never heard of the claim).
pub(super) async fn release(db: &Db, id: &str) -> Result<()> {
    db::query(
        "UPDATE tasks SET status = 'pending', changed_by = NULL, claimed_by = NULL, claimed_at = NULL, updated_at = $1
         WHERE id = $2 AND status = 'claimed'",
    )
    .bind(db::now())
    .bind(id)
    .execute(db)
    .await?;
    Ok(())
}

/// Marks the task done if `agent` holds its claim; `None` if it does not.
pub(super) async fn complete(db: &Db, id: &str, agent: &str, result: Option<&str>) -> Result<Option<Task>> {
    let row = db::query(
        "UPDATE tasks SET status = 'done', changed_by = NULL, result = $3, completed_at = $4, updated_at = $4
         WHERE id = $1 AND status = 'claimed' AND claimed_by = $2 RETURNING *",
    )
    .bind(id)
    .bind(agent)
    .bind(result)
    .bind(db::now())
    .fetch_optional(db)
    .await?;
    row.as_ref().map(task_from).transpose()
}

/// How an operator action changes a task.
pub(super) enum Change<'a> {
    Reassign {
        assignee: Option<&'a str>,
    },
    /// `by`: who cancels it, as the logs name callers (`operator:ada`), kept in its history.
    Cancel {
        by: &'a str,
    },
    Retry,
}

/// Applies `change` if the task is still in status `from`; `None` if it no longer is.
pub(super) async fn change(db: &Db, id: &str, from: TaskStatus, change: Change<'_>) -> Result<Option<Task>> {
    let now = db::now();
    let query = match change {
        Change::Reassign { assignee } => db::query(
            "UPDATE tasks SET assignee = $3, status = 'pending', changed_by = NULL, claimed_by = NULL, claimed_at = NULL,
                              updated_at = $4
             WHERE id = $1 AND status = $2 RETURNING *",
        )
        .bind(id)
        .bind(from.as_str())
        .bind(assignee)
        .bind(now),
        Change::Cancel { by } => db::query(
            "UPDATE tasks SET status = 'cancelled', changed_by = $4, claimed_by = NULL, updated_at = $3, completed_at = $3
             WHERE id = $1 AND status = $2 RETURNING *",
        )
        .bind(id)
        .bind(from.as_str())
        .bind(now)
        .bind(by),
        Change::Retry => db::query(
            "UPDATE tasks SET status = 'pending', changed_by = NULL, claimed_by = NULL, claimed_at = NULL, result = NULL,
                              completed_at = NULL, updated_at = $3
             WHERE id = $1 AND status = $2 RETURNING *",
        )
        .bind(id)
        .bind(from.as_str())
        .bind(now),
    };
    let row = query.fetch_optional(db).await?;
    row.as_ref().map(task_from).transpose()
}

/// A row of `task_events`: a status the task took, whatever changed it.
pub(super) struct EventRow {
    pub at: String,
    pub status: TaskStatus,
    pub actor: Option<String>,
    pub retries: i64,
}

pub(super) async fn history(db: &Db, id: &str) -> Result<Vec<EventRow>> {
    let rows = db::query("SELECT at, status, actor, retries FROM task_events WHERE task_id = $1 ORDER BY id")
        .bind(id)
        .fetch_all(db)
        .await?;
    rows.iter()
        .map(|r| {
            Ok(EventRow {
                at: r.try_get("at")?,
                status: TaskStatus::parse(r.try_get("status")?)?,
                actor: r.try_get("actor")?,
                retries: r.try_get("retries")?,
            })
        })
        .collect()
}

/// The `WHERE` of a task listing: a condition for each filter given and none for the others
/// (an `$N IS NULL OR …` form keeps SQLite from the `(status, priority, id)` index).
fn push_filter(query: &mut db::QueryBuilder, q: &Query<'_>) {
    query.push(" WHERE priority >= ").push_bind(q.min_priority);
    if let Some(status) = q.status {
        query.push(" AND status = ").push_bind(status.as_str());
    }
    if let Some(assignee) = q.assignee {
        query.push(" AND assignee = ").push_bind(assignee);
    }
    if let Some(text) = &q.text {
        query.push(" AND (lower(title) LIKE lower(").push_bind(text).push(") ESCAPE '\\'");
        query.push(" OR lower(body) LIKE lower(").push_bind(text).push(") ESCAPE '\\')");
    }
}

/// Tasks matching `q`, best first (priority, then oldest), after `after` = (priority, id) of
/// the previous page's last task, at most `limit`.
pub(super) async fn list(db: &Db, q: &Query<'_>, after: Option<(i64, &str)>, limit: i64) -> Result<Vec<Task>> {
    let mut query = db::QueryBuilder::new("SELECT * FROM tasks");
    push_filter(&mut query, q);
    if let Some((priority, id)) = after {
        query.push(" AND (priority < ").push_bind(priority);
        query.push(" OR (priority = ").push_bind(priority).push(" AND id > ").push_bind(id).push("))");
    }
    query.push(" ORDER BY priority DESC, id ASC LIMIT ").push_bind(limit);
    let rows = query.build().fetch_all(db).await?;
    rows.iter().map(task_from).collect()
}

pub(super) async fn count(db: &Db, q: &Query<'_>) -> Result<u64> {
    let mut query = db::QueryBuilder::new("SELECT count(*) FROM tasks");
    push_filter(&mut query, q);
    let n: i64 = query.build_query_scalar().fetch_one(db).await?;
    Ok(n as u64)
}

/// How many tasks there are in each status (statuses with none are left out).
pub(super) async fn counts_by_status(db: &Db) -> Result<Vec<(String, u64)>> {
    let rows = db::query("SELECT status, count(*) AS n FROM tasks GROUP BY status").fetch_all(db).await?;
    rows.iter().map(|r| Ok((r.try_get("status")?, r.try_get::<i64, _>("n")?.max(0) as u64))).collect()
}

/// Returns claims made before `cutoff` to pending, counting a retry; past `max_retries`
/// (0 = unlimited) the task fails instead. How many claims were taken back.
pub(super) async fn sweep(db: &Db, cutoff: &str, max_retries: i64) -> Result<u64> {
    let done = db::query(
        "UPDATE tasks SET
             status = CASE WHEN $2 > 0 AND retries + 1 >= $2 THEN 'failed' ELSE 'pending' END,
             retries = retries + 1, changed_by = NULL, claimed_by = NULL, claimed_at = NULL, updated_at = $3,
             completed_at = CASE WHEN $2 > 0 AND retries + 1 >= $2 THEN $3 ELSE NULL END,
             result = CASE WHEN $2 > 0 AND retries + 1 >= $2 THEN 'failed: the claim expired ' || (retries + 1) || ' times' ELSE result END
         WHERE status = 'claimed' AND claimed_at < $1",
    )
    .bind(cutoff)
    .bind(max_retries)
    .bind(db::now())
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

fn task_from(row: &db::Row) -> Result<Task> {
    let id: String = row.try_get("id")?;
    Ok(Task {
        id: Uuid::parse_str(&id)
            .map_err(|e| Error::internal(format_args!("stored task id `{id}` is unreadable: {e}")))?,
        title: row.try_get("title")?,
        body: row.try_get("body")?,
        assigned_to: row.try_get("assignee")?,
        priority: row.try_get("priority")?,
        status: TaskStatus::parse(row.try_get("status")?)?,
        claimed_by: row.try_get("claimed_by")?,
        claimed_at: row.try_get("claimed_at")?,
        retries: row.try_get("retries")?,
        result: row.try_get("result")?,
        posted_by: row.try_get("posted_by")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        completed_at: row.try_get("completed_at")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SQLite's plan for a listing by status: the `(status, priority, id)` index, not a scan
    /// of every task (which an `$N IS NULL OR` filter forces).
    #[tokio::test]
    async fn a_status_filter_uses_its_index() {
        let dir = tempfile::tempdir().unwrap();
        let db = db::open_for_test(dir.path()).await;
        if db.dialect("sqlite", "postgres") == "postgres" {
            return;
        }
        let q = Query { status: Some(TaskStatus::Pending), assignee: None, text: None, min_priority: 0 };
        let mut query = db::QueryBuilder::new("EXPLAIN QUERY PLAN SELECT * FROM tasks");
        push_filter(&mut query, &q);
        query.push(" ORDER BY priority DESC, id ASC LIMIT ").push_bind(50i64);
        let plan: Vec<String> =
            query.build().fetch_all(&db).await.unwrap().iter().map(|r| r.try_get("detail").unwrap()).collect();
        assert!(plan.iter().any(|step| step.contains("USING INDEX tasks_claimable")), "{plan:?}");
    }
}
