//! SQL for A2A: tasks other clients sent this daemon's agents, and remote agents' cards
//! found by `a2a_discover`.

use uuid::Uuid;

use super::task::{ListFilter, Task, TaskState};
use crate::db::{self, Db, Row as DbRow};
use crate::error::{Error, Result};

/// `state` is not terminal: the guard of every write that ends a task, so the first end wins
/// (a cancel racing the turn's own end). A macro so the statements stay literals.
macro_rules! not_ended {
    () => {
        "state NOT IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED')"
    };
}

macro_rules! columns {
    () => {
        "id, agent_id, context_id, owner, state, updated_at, request, reply, error"
    };
}

/// A task as it is first stored.
pub(super) struct NewRow<'a> {
    pub id: Uuid,
    pub agent: Uuid,
    pub context_id: &'a str,
    pub owner: &'a str,
    pub state: TaskState,
    pub request: &'a str,
    /// The daemon that runs it (`crate::cluster`).
    pub daemon: &'a str,
}

pub(super) async fn insert_task(db: &Db, row: NewRow<'_>) -> Result<()> {
    db::query(
        "INSERT INTO a2a_tasks (id, agent_id, context_id, owner, state, request, created_at, updated_at, daemon_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8)",
    )
    .bind(row.id.to_string())
    .bind(row.agent.to_string())
    .bind(row.context_id)
    .bind(row.owner)
    .bind(row.state.as_str())
    .bind(row.request)
    .bind(db::now())
    .bind(row.daemon)
    .execute(db)
    .await?;
    Ok(())
}

/// Ends a task that has not ended yet; whether it did.
pub(super) async fn finish_task(
    db: &Db,
    id: Uuid,
    state: TaskState,
    reply: Option<&str>,
    error: Option<&str>,
) -> Result<bool> {
    let sql = concat!(
        "UPDATE a2a_tasks SET state = $1, reply = $2, error = $3, updated_at = $4 WHERE id = $5 AND ",
        not_ended!()
    );
    let done = db::query(sql)
        .bind(state.as_str())
        .bind(reply)
        .bind(error)
        .bind(db::now())
        .bind(id.to_string())
        .execute(db)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Fails every task of `daemon` (or of no daemon, from before clusters) that has not ended.
pub(super) async fn fail_unfinished(db: &Db, daemon: &str, reason: &str) -> Result<u64> {
    let sql = concat!(
        "UPDATE a2a_tasks SET state = $1, error = $2, updated_at = $3 WHERE (daemon_id = $4 OR daemon_id IS NULL) AND ",
        not_ended!()
    );
    let done =
        db::query(sql).bind(TaskState::Failed.as_str()).bind(reason).bind(db::now()).bind(daemon).execute(db).await?;
    Ok(done.rows_affected())
}

/// The task `id` of `agent`.
/// Whether `agent` has a task in `context` of `owner`: the context was given to that caller.
pub(super) async fn has_context(db: &Db, agent: Uuid, context: &str, owner: &str) -> Result<bool> {
    Ok(db::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM a2a_tasks WHERE agent_id = $1 AND owner = $2 AND context_id = $3)",
    )
    .bind(agent.to_string())
    .bind(owner)
    .bind(context)
    .fetch_one(db)
    .await?)
}

pub(super) async fn task(db: &Db, agent: Uuid, id: Uuid) -> Result<Option<Task>> {
    let sql = concat!("SELECT ", columns!(), " FROM a2a_tasks WHERE id = $1 AND agent_id = $2");
    let row = db::query(sql).bind(id.to_string()).bind(agent.to_string()).fetch_optional(db).await?;
    row.as_ref().map(task_from_row).transpose()
}

/// A page of `agent`'s tasks of `owner`, most recently updated first, and how many match
/// the filter on all pages.
pub(super) async fn list(db: &Db, agent: Uuid, owner: &str, filter: &ListFilter) -> Result<(Vec<Task>, u64)> {
    let mut query = db::QueryBuilder::new(concat!("SELECT ", columns!(), " FROM a2a_tasks"));
    filtered(&mut query, agent, owner, filter);
    if let Some(after) = &filter.after {
        query.push(" AND (updated_at, id) < (").push_bind(after.updated_at.clone());
        query.push(", ").push_bind(after.id.to_string()).push(")");
    }
    query.push(" ORDER BY updated_at DESC, id DESC LIMIT ").push_bind(filter.page_size as i64 + 1);
    let rows = query.build().fetch_all(db).await?;
    let tasks = rows.iter().map(task_from_row).collect::<Result<Vec<_>>>()?;

    let mut count = db::QueryBuilder::new("SELECT count(*) FROM a2a_tasks");
    filtered(&mut count, agent, owner, filter);
    let total: i64 = count.build_query_scalar().fetch_one(db).await?;
    Ok((tasks, total as u64))
}

/// The `WHERE` of a list: the agent and owner (the listing index), then only the filters given.
fn filtered(query: &mut db::QueryBuilder, agent: Uuid, owner: &str, filter: &ListFilter) {
    query.push(" WHERE agent_id = ").push_bind(agent.to_string());
    query.push(" AND owner = ").push_bind(owner.to_string());
    if let Some(context) = &filter.context_id {
        query.push(" AND context_id = ").push_bind(context.clone());
    }
    if let Some(state) = filter.state {
        query.push(" AND state = ").push_bind(state.as_str());
    }
    if let Some(since) = &filter.updated_since {
        query.push(" AND updated_at >= ").push_bind(since.clone());
    }
}

fn task_from_row(row: &DbRow) -> Result<Task> {
    let uuid = |column: &str| -> Result<Uuid> {
        let text: String = row.try_get(column)?;
        Uuid::parse_str(&text).map_err(|e| Error::internal(format_args!("a2a_tasks.{column} `{text}`: {e}")))
    };
    let request: String = row.try_get("request")?;
    Ok(Task {
        id: uuid("id")?,
        agent_id: uuid("agent_id")?,
        context_id: row.try_get("context_id")?,
        owner: row.try_get("owner")?,
        state: TaskState::parse(row.try_get("state")?)?,
        updated_at: row.try_get("updated_at")?,
        request: serde_json::from_str(&request)
            .map_err(|e| Error::internal(format_args!("a2a_tasks.request is not JSON: {e}")))?,
        reply: row.try_get("reply")?,
        error: row.try_get("error")?,
    })
}

/// Stores a remote's card under its URL (again: replaces it); the remote's id.
pub(super) async fn remember_remote(db: &Db, url: &str, card: &str) -> Result<String> {
    Ok(db::query_scalar(
        "INSERT INTO a2a_remotes (id, url, card, discovered_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (url) DO UPDATE SET card = $3, discovered_at = $4 RETURNING id",
    )
    .bind(Uuid::now_v7().to_string())
    .bind(url)
    .bind(card)
    .bind(db::now())
    .fetch_one(db)
    .await?)
}

/// A discovered remote's card.
pub(super) async fn remote(db: &Db, id: &str) -> Result<Option<serde_json::Value>> {
    let card: Option<String> =
        db::query_scalar("SELECT card FROM a2a_remotes WHERE id = $1").bind(id).fetch_optional(db).await?;
    card.map(|c| serde_json::from_str(&c).map_err(|e| Error::internal(format_args!("stored card unreadable: {e}"))))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SQL guard names exactly the states the code calls terminal.
    #[test]
    fn not_ended_lists_every_terminal_state() {
        for state in TaskState::ALL {
            assert_eq!(not_ended!().contains(&format!("'{}'", state.as_str())), state.is_terminal(), "{state}");
        }
    }
}
