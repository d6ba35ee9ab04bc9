//! The task board (spec §5): agents post work for other agents to claim. Claims are atomic
//! (one `UPDATE … RETURNING` picks and takes the best pending task), a sweeper returns claims
//! older than `[task_board] claim_ttl_secs` to pending (or marks the task failed after
//! `max_retries`), and only a task's current claimant may complete it.

mod claims;
mod tools;

use serde::{Deserialize, Serialize};
use sqlx::Row;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

pub use tools::{TaskClaim, TaskComplete, TaskList, TaskPost, TaskStatus};

use crate::db::{self, Db};
use crate::error::{Error, FieldError, Result};

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Task {
    pub id: Uuid,
    pub title: String,
    pub body: String,
    /// The agent (id) it is for; `None`: anyone.
    pub assigned_to: Option<String>,
    /// 0 (lowest) to 9 (highest).
    pub priority: i64,
    /// `pending`, `claimed`, `done`, `failed` or `cancelled`.
    pub status: String,
    pub claimed_by: Option<String>,
    pub claimed_at: Option<String>,
    /// Times the sweeper took it back from a claimant that did not finish.
    pub retries: i64,
    pub result: Option<String>,
    pub posted_by: String,
    pub created_at: String,
    pub updated_at: String,
    pub completed_at: Option<String>,
}

/// One change in a task's life, for its history.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TaskEvent {
    pub at: String,
    pub status: String,
    pub actor: Option<String>,
    pub retries: i64,
}

/// A task to post.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTask {
    pub title: String,
    #[serde(default)]
    pub body: String,
    /// An agent's name or id.
    pub assignee: Option<String>,
    /// 0–9, default 5.
    pub priority: Option<i64>,
}

#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TaskFilter {
    pub status: Option<String>,
    /// An agent's name or id.
    pub assignee: Option<String>,
    /// Words in the title or body.
    pub text: Option<String>,
    pub min_priority: Option<i64>,
}

pub const STATUSES: [&str; 5] = ["pending", "claimed", "done", "failed", "cancelled"];
const DEFAULT_PRIORITY: i64 = 5;
const MAX_TITLE: usize = 200;
const MAX_BODY: usize = 20_000;
const MAX_RESULT: usize = 100_000;

pub struct TaskBoard {
    db: Db,
    claims: claims::ClaimQueue,
}

fn check_priority(field: &str, p: i64) -> Result<()> {
    if (0..=9).contains(&p) {
        Ok(())
    } else {
        Err(Error::invalid_fields(vec![FieldError {
            field: field.into(),
            message: "a priority from 0 (lowest) to 9 (highest)".into(),
        }]))
    }
}

impl TaskBoard {
    pub(crate) fn new(db: Db) -> TaskBoard {
        TaskBoard { claims: claims::ClaimQueue::start(db.clone()), db }
    }

    /// Posts a pending task. `assignee` must already be resolved to an agent id.
    pub async fn post(&self, new: NewTask, assignee_id: Option<String>, posted_by: &str) -> Result<Task> {
        let mut errors = Vec::new();
        if new.title.trim().is_empty() || new.title.len() > MAX_TITLE {
            errors.push(FieldError { field: "title".into(), message: format!("a title of 1 to {MAX_TITLE} bytes") });
        }
        if new.body.len() > MAX_BODY {
            errors.push(FieldError { field: "body".into(), message: format!("at most {MAX_BODY} bytes") });
        }
        if !errors.is_empty() {
            return Err(Error::invalid_fields(errors));
        }
        let priority = new.priority.unwrap_or(DEFAULT_PRIORITY);
        check_priority("priority", priority)?;
        let now = db::now();
        let row = sqlx::query(
            "INSERT INTO tasks (id, title, body, assignee, priority, status, posted_by, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?) RETURNING *",
        )
        .bind(Uuid::now_v7().to_string())
        .bind(new.title.trim())
        .bind(&new.body)
        .bind(assignee_id)
        .bind(priority)
        .bind(posted_by)
        .bind(&now)
        .bind(&now)
        .fetch_one(&self.db)
        .await?;
        task_from(&row)
    }

    /// Claims the highest-priority, then oldest, pending task assigned to `agent` or to
    /// nobody. Atomic: concurrent claimers never get the same task (see [`claims`]).
    pub async fn claim(&self, agent: &str, min_priority: Option<i64>) -> Result<Option<Task>> {
        if let Some(p) = min_priority {
            check_priority("priority_filter", p)?;
        }
        self.claims.claim(agent, min_priority.unwrap_or(0)).await
    }

    /// Marks a claimed task done. Only its current claimant may.
    pub async fn complete(&self, id: &str, agent: &str, result: Option<String>) -> Result<Task> {
        if result.as_ref().is_some_and(|r| r.len() > MAX_RESULT) {
            return Err(Error::invalid(format!("a result is at most {MAX_RESULT} bytes")));
        }
        let now = db::now();
        let row = sqlx::query(
            "UPDATE tasks SET status = 'done', result = ?3, completed_at = ?4, updated_at = ?4
             WHERE id = ?1 AND status = 'claimed' AND claimed_by = ?2 RETURNING *",
        )
        .bind(id)
        .bind(agent)
        .bind(result)
        .bind(&now)
        .fetch_optional(&self.db)
        .await?;
        match row {
            Some(row) => task_from(&row),
            None => {
                let task = self.get(id).await?;
                Err(match task.status.as_str() {
                    "claimed" => Error::forbidden(format!(
                        "task {id} is claimed by another agent; only its claimant may complete it"
                    )),
                    status => Error::conflict(format!("task {id} is {status}, not claimed: claim it first")),
                })
            }
        }
    }

    pub async fn get(&self, id: &str) -> Result<Task> {
        let row = sqlx::query("SELECT * FROM tasks WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.db)
            .await?
            .ok_or_else(|| Error::not_found(format!("no task `{id}`")))?;
        task_from(&row)
    }

    pub async fn history(&self, id: &str) -> Result<Vec<TaskEvent>> {
        let rows = sqlx::query("SELECT at, status, actor, retries FROM task_events WHERE task_id = ? ORDER BY id")
            .bind(id)
            .fetch_all(&self.db)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(TaskEvent {
                    at: r.try_get("at")?,
                    status: r.try_get("status")?,
                    actor: r.try_get("actor")?,
                    retries: r.try_get("retries")?,
                })
            })
            .collect()
    }

    /// Tasks matching the filter (`assignee` already resolved to an id), best first.
    pub async fn list(&self, filter: &TaskFilter) -> Result<Vec<Task>> {
        if let Some(s) = &filter.status
            && !STATUSES.contains(&s.as_str())
        {
            return Err(Error::invalid(format!("`{s}` is not a status: {}", STATUSES.join(", "))));
        }
        let text = filter.text.as_ref().filter(|t| !t.trim().is_empty()).map(|t| format!("%{}%", t.trim()));
        let rows = sqlx::query(
            "SELECT * FROM tasks
             WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR assignee = ?2)
               AND (?3 IS NULL OR title LIKE ?3 OR body LIKE ?3) AND priority >= ?4
             ORDER BY priority DESC, id ASC LIMIT 500",
        )
        .bind(&filter.status)
        .bind(&filter.assignee)
        .bind(text)
        .bind(filter.min_priority.unwrap_or(0))
        .fetch_all(&self.db)
        .await?;
        rows.iter().map(task_from).collect()
    }

    /// Operator action: give the task to another agent (or to anyone) and put it back to pending.
    pub async fn reassign(&self, id: &str, assignee_id: Option<String>) -> Result<Task> {
        let row = sqlx::query(
            "UPDATE tasks SET assignee = ?2, status = 'pending', claimed_by = NULL, claimed_at = NULL, updated_at = ?3
             WHERE id = ?1 AND status IN ('pending', 'claimed') RETURNING *",
        )
        .bind(id)
        .bind(assignee_id)
        .bind(db::now())
        .fetch_optional(&self.db)
        .await?;
        self.changed(id, row, "only a pending or claimed task can be reassigned").await
    }

    /// Operator action: withdraw a task that is not finished.
    pub async fn cancel(&self, id: &str) -> Result<Task> {
        let row = sqlx::query(
            "UPDATE tasks SET status = 'cancelled', claimed_by = NULL, updated_at = ?2, completed_at = ?2
             WHERE id = ?1 AND status IN ('pending', 'claimed') RETURNING *",
        )
        .bind(id)
        .bind(db::now())
        .fetch_optional(&self.db)
        .await?;
        self.changed(id, row, "only a pending or claimed task can be cancelled").await
    }

    /// Operator action: put a failed or cancelled task back to pending.
    pub async fn retry(&self, id: &str) -> Result<Task> {
        let row = sqlx::query(
            "UPDATE tasks SET status = 'pending', claimed_by = NULL, claimed_at = NULL, result = NULL, completed_at = NULL, updated_at = ?2
             WHERE id = ?1 AND status IN ('failed', 'cancelled') RETURNING *",
        )
        .bind(id)
        .bind(db::now())
        .fetch_optional(&self.db)
        .await?;
        self.changed(id, row, "only a failed or cancelled task can be retried").await
    }

    /// The updated task, or why the update did not apply.
    async fn changed(&self, id: &str, row: Option<sqlx::sqlite::SqliteRow>, refusal: &str) -> Result<Task> {
        match row {
            Some(row) => task_from(&row),
            None => {
                let task = self.get(id).await?;
                Err(Error::conflict(format!("{refusal}; task {id} is {}", task.status)))
            }
        }
    }

    /// Returns claims older than `ttl_secs` to pending, counting a retry; past `max_retries`
    /// (0 = unlimited) the task fails instead. Returns how many claims were taken back.
    pub async fn sweep(&self, ttl_secs: u64, max_retries: u64) -> Result<u64> {
        let now = chrono::Utc::now();
        let cutoff = db::timestamp(now - chrono::Duration::seconds(ttl_secs as i64));
        let done = sqlx::query(
            "UPDATE tasks SET
                 status = CASE WHEN ?2 > 0 AND retries + 1 >= ?2 THEN 'failed' ELSE 'pending' END,
                 retries = retries + 1, claimed_by = NULL, claimed_at = NULL, updated_at = ?3,
                 completed_at = CASE WHEN ?2 > 0 AND retries + 1 >= ?2 THEN ?3 ELSE NULL END,
                 result = CASE WHEN ?2 > 0 AND retries + 1 >= ?2 THEN 'failed: the claim expired ' || (retries + 1) || ' times' ELSE result END
             WHERE status = 'claimed' AND claimed_at < ?1",
        )
        .bind(cutoff)
        .bind(max_retries as i64)
        .bind(db::now())
        .execute(&self.db)
        .await?;
        Ok(done.rows_affected())
    }
}

fn task_from(row: &sqlx::sqlite::SqliteRow) -> Result<Task> {
    let id: String = row.try_get("id")?;
    Ok(Task {
        id: Uuid::parse_str(&id)
            .map_err(|e| Error::internal(format_args!("stored task id `{id}` is unreadable: {e}")))?,
        title: row.try_get("title")?,
        body: row.try_get("body")?,
        assigned_to: row.try_get("assignee")?,
        priority: row.try_get("priority")?,
        status: row.try_get("status")?,
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

/// Starts the sweeper: every second it takes back expired claims, reading `[task_board]`
/// from `config.toml` again when the file changed, so TTL and retry changes apply without a
/// restart.
pub(crate) fn start_sweeper(kernel: &crate::Kernel) {
    let weak = kernel.downgrade();
    let path = kernel.home().join("config.toml");
    let mut board = kernel.config().task_board.clone();
    tokio::spawn(async move {
        let mut seen = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        loop {
            tick.tick().await;
            let Some(kernel) = crate::Kernel::upgrade(&weak) else { return };
            let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
            if modified != seen {
                seen = modified;
                match crate::config::Config::load(&path) {
                    Ok(c) => board = c.task_board,
                    Err(e) => {
                        tracing::warn!(error = %e, "config.toml changed but is invalid; the task board keeps its settings")
                    }
                }
            }
            match kernel.tasks().sweep(board.claim_ttl_secs, board.max_retries).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(count = n, "task claims expired and were taken back"),
                Err(e) => tracing::warn!(error = %e.message, "the task sweeper failed"),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored value of the wrong type (a damaged database, a bad migration) is an
    /// `Internal` error with a ref, not a panic, and says nothing of the SQL or the column.
    #[tokio::test]
    async fn a_row_that_does_not_decode_is_an_internal_error() {
        let dir = tempfile::tempdir().unwrap();
        let db = db::open(&dir.path().join("k.db")).await.unwrap();
        let board = TaskBoard::new(db.clone());
        let id = Uuid::now_v7().to_string();
        sqlx::query(
            "INSERT INTO tasks (id, title, body, priority, status, posted_by, created_at, updated_at)
             VALUES (?, 'title', '', 'high', 'pending', 'test', ?, ?)",
        )
        .bind(&id)
        .bind(db::now())
        .bind(db::now())
        .execute(&db)
        .await
        .unwrap();

        for e in [board.get(&id).await.unwrap_err(), board.list(&TaskFilter::default()).await.unwrap_err()] {
            assert_eq!(e.kind, crate::ErrorKind::Internal, "{e}");
            let reference = e.message.strip_prefix("internal error (ref ").and_then(|m| m.strip_suffix(')'));
            assert!(reference.is_some_and(|r| r.len() == 8 && r.bytes().all(|b| b.is_ascii_hexdigit())), "{e}");
            assert!(!e.message.contains("priority") && !e.model_text().contains("SELECT"), "{e}");
        }
    }
}
