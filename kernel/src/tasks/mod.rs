//! The task board (spec §5): agents post work for other agents to claim. Claims are atomic
//! (one `UPDATE … RETURNING` picks and takes the best pending task), a sweeper returns claims
//! older than `[task_board] claim_ttl_secs` to pending (or marks the task failed after
//! `max_retries`), and only a task's current claimant may complete it.
//!
//! # Design notes
//!
//! ## Layout
//!
//! The task board: `TaskBoard` (post, atomic `claim`, `complete` by the claimant only, list,
//! history, operator reassign/cancel/retry as `TaskStatus::actions` allows, `sweep`), `claims.rs`
//! (group commit of claims), the sweeper task, `store.rs`, and the `tasks` family's tools.
//!
//! ## The task board
//!
//! - **Atomic claims:** one statement, `UPDATE tasks SET status = 'claimed' … WHERE id = (SELECT
//!   … pending, assigned to the caller or nobody, priority ≥ filter, ORDER BY priority DESC, id
//!   LIMIT 1) RETURNING *`. SQLite runs writes one at a time, so two claimers can never take the
//!   same task. On PostgreSQL the subquery takes `FOR UPDATE SKIP LOCKED` and the update re-checks
//!   that the task is still pending (see `crate::db`).
//! - **History** comes from SQL triggers on `tasks` that write `task_events` in the same
//!   statement as each change (posted, claimed, reset by the sweeper, done, failed, reassigned…),
//!   so it cannot drift from the task and costs no extra round trip.
//! - **Sweeper:** every second, claims older than `[task_board] claim_ttl_secs` go back to pending
//!   with `retries + 1`, or to failed once `max_retries` (0 = unlimited) is reached. It re-reads
//!   `[task_board]` when `config.toml` changes, so TTL and retry changes apply without a restart
//!   (an invalid file is logged and ignored).
//! - **Decisions:** priority is 0 (lowest) to 9 (highest), default 5; assignees are stored as
//!   agent ids (names are accepted everywhere and resolved); `[task_board] wake_assignee = true`
//!   starts a turn on a running assignee telling it a task waits; the board page reloads itself
//!   every 5 s while open (no JS needed).

mod claims;
pub(crate) mod config;
mod store;
mod tools;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

pub use config::TaskBoardConfig;
pub(crate) use tools::register;

use crate::agent::Agents;
use crate::db::{self, Db, stored_enum};
use crate::error::{Error, FieldError, Result};
use crate::family::{Family, Home, Services};
use crate::page::{Key, Page, PageRequest, bad_cursor};
use crate::runtime::{Runtime, TurnRequest};
use crate::session::Origin;
use crate::text::{is_title, longer_than};
use crate::tool::Caller;

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "tasks",
    open: |s| {
        let wake = Wake { runtime: s.get::<Runtime>().clone(), on: s.config().task_board.wake_assignee };
        s.provide(TaskBoard::new(s.get::<Db>().clone(), s.need::<Agents>(), wake));
        Ok(())
    },
    register,
};

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    /// Waiting to be claimed.
    Pending,
    /// An agent took it and has until the claim TTL to complete it.
    Claimed,
    Done,
    /// Its claims expired `max_retries` times.
    Failed,
    /// An operator withdrew it.
    Cancelled,
}
stored_enum!(TaskStatus { Pending = "pending", Claimed = "claimed", Done = "done", Failed = "failed", Cancelled = "cancelled" });

/// What an operator can do to a task (the dashboard's buttons, `/api/tasks/{id}/…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskAction {
    /// Give it to another agent (or to anyone); it is pending again.
    Reassign,
    /// Withdraw it.
    Cancel,
    /// Put it back to pending.
    Retry,
}

impl TaskStatus {
    /// The operator actions a task in this status allows: the one rule the board, the API
    /// and the dashboard's buttons all follow.
    pub fn actions(self) -> &'static [TaskAction] {
        match self {
            TaskStatus::Pending | TaskStatus::Claimed => &[TaskAction::Reassign, TaskAction::Cancel],
            TaskStatus::Failed | TaskStatus::Cancelled => &[TaskAction::Retry],
            TaskStatus::Done => &[],
        }
    }

    /// The statuses an overview counts: waiting, in hand, and failed (an operator may retry).
    pub const WATCHED: [TaskStatus; 3] = [TaskStatus::Pending, TaskStatus::Claimed, TaskStatus::Failed];

    pub fn allows(self, action: TaskAction) -> bool {
        self.actions().contains(&action)
    }
}

impl TaskAction {
    fn verb(self) -> &'static str {
        match self {
            TaskAction::Reassign => "reassigned",
            TaskAction::Cancel => "cancelled",
            TaskAction::Retry => "retried",
        }
    }

    /// The statuses this action applies to, for its refusal message.
    fn applies_to(self) -> String {
        let from: Vec<&str> = TaskStatus::ALL.iter().filter(|s| s.allows(self)).map(|s| s.as_str()).collect();
        from.join(" or ")
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Task {
    pub id: Uuid,
    pub title: String,
    pub body: String,
    /// The agent (id) it is for; `None`: anyone.
    pub assigned_to: Option<String>,
    /// 0 (lowest) to 9 (highest).
    pub priority: i64,
    pub status: TaskStatus,
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
    pub status: TaskStatus,
    pub actor: Option<String>,
    pub retries: i64,
    /// What happened, in the board's words.
    pub change: TaskChange,
}

/// What a history event was. The store logs statuses (a trigger, whatever changed them); the
/// board names the change from the event and the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskChange {
    /// The first event: `actor` posted it.
    Posted,
    /// `actor` claimed it.
    Claimed,
    /// Its claim ran past `[task_board] claim_ttl_secs` and the sweeper put it back to
    /// pending, one retry more.
    ClaimExpired,
    /// Pending again, for `actor` (or anyone): reassigned or retried by an operator.
    Pending,
    Done,
    /// Failed: by its claimant, or by the sweeper past `max_retries`.
    Failed,
    Cancelled,
}

impl TaskChange {
    /// The change a stored event made, given the event before it (`None` for the first).
    fn between(previous: Option<&store::EventRow>, event: &store::EventRow) -> TaskChange {
        let Some(previous) = previous else { return TaskChange::Posted };
        match event.status {
            TaskStatus::Claimed => TaskChange::Claimed,
            // Only the sweeper counts a retry on the way from claimed back to pending.
            TaskStatus::Pending if previous.status == TaskStatus::Claimed && previous.retries < event.retries => {
                TaskChange::ClaimExpired
            }
            TaskStatus::Pending => TaskChange::Pending,
            TaskStatus::Done => TaskChange::Done,
            TaskStatus::Failed => TaskChange::Failed,
            TaskStatus::Cancelled => TaskChange::Cancelled,
        }
    }
}

/// A task's stored events (oldest first), each named by the change it made.
fn named_history(rows: Vec<store::EventRow>) -> Vec<TaskEvent> {
    let changes: Vec<TaskChange> =
        rows.iter().enumerate().map(|(i, row)| TaskChange::between(i.checked_sub(1).map(|p| &rows[p]), row)).collect();
    rows.into_iter()
        .zip(changes)
        .map(|(row, change)| TaskEvent {
            at: row.at,
            status: row.status,
            actor: row.actor,
            retries: row.retries,
            change,
        })
        .collect()
}

/// A task to post.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTask {
    /// What is to be done: 1 to 200 characters on one line, not blank, without bidirectional
    /// controls (the pattern is `text::TITLE_PATTERN`).
    #[schema(
        max_length = 200,
        pattern = r"^[^\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]*[^ \t\n\r\f\v\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069][^\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]*$"
    )]
    pub title: String,
    /// Details, at most 20,000 characters.
    #[serde(default)]
    #[schema(max_length = 20000)]
    pub body: String,
    /// An agent's name or id; absent or empty: anyone may claim it.
    pub assignee: Option<String>,
    /// 0–9, default 5.
    #[schema(minimum = 0, maximum = 9)]
    pub priority: Option<i64>,
}

#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TaskFilter {
    pub status: Option<TaskStatus>,
    /// An agent's name or id.
    pub assignee: Option<String>,
    /// Words in the title or body.
    pub text: Option<String>,
    /// Only tasks of at least this priority (0–9).
    #[param(minimum = 0, maximum = 9)]
    pub min_priority: Option<i64>,
}

const DEFAULT_PRIORITY: i64 = 5;
const MAX_TITLE: usize = 200;
const MAX_BODY: usize = 20_000;
const MAX_RESULT: usize = 100_000;

pub struct TaskBoard {
    db: Db,
    agents: Arc<Agents>,
    claims: claims::ClaimQueue,
    wake: Wake,
}

/// Whether and how the board wakes an assignee: with `[task_board] wake_assignee` on, a task
/// posted for (or given to) a running agent starts a turn telling it the task waits.
pub(crate) struct Wake {
    pub(crate) runtime: Runtime,
    pub(crate) on: bool,
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

/// `text` as a `LIKE` pattern that matches it anywhere, its own `%`, `_` and `\` taken literally.
fn contains_pattern(text: &str) -> String {
    let escaped: String =
        text.chars().flat_map(|c| if matches!(c, '%' | '_' | '\\') { vec!['\\', c] } else { vec![c] }).collect();
    format!("%{escaped}%")
}

impl TaskBoard {
    pub(crate) fn new(db: Db, agents: Arc<Agents>, wake: Wake) -> TaskBoard {
        TaskBoard { claims: claims::ClaimQueue::start(db.clone()), db, agents, wake }
    }

    /// Posts a pending task and, if `[task_board] wake_assignee` is on and it is for a running
    /// agent, starts a turn that tells that agent a task waits.
    /// `new.assignee` may be an agent's name or id; the task stores the id.
    pub async fn post(&self, new: NewTask, posted_by: &str) -> Result<Task> {
        let task = self.insert(new, posted_by).await?;
        self.wake_assignee(&task, "posted for you");
        Ok(task)
    }

    /// Checks and stores a new pending task.
    async fn insert(&self, new: NewTask, posted_by: &str) -> Result<Task> {
        let mut errors = Vec::new();
        if !is_title(&new.title, MAX_TITLE) {
            errors.push(FieldError {
                field: "title".into(),
                message: format!(
                    "a title of 1 to {MAX_TITLE} characters on one line, not blank, without bidirectional controls"
                ),
            });
        }
        if longer_than(&new.body, MAX_BODY) {
            errors.push(FieldError { field: "body".into(), message: format!("at most {MAX_BODY} characters") });
        }
        if !errors.is_empty() {
            return Err(Error::invalid_fields(errors));
        }
        let priority = new.priority.unwrap_or(DEFAULT_PRIORITY);
        check_priority("priority", priority)?;
        let assignee = self.agents.id_for_field("assignee", new.assignee.as_deref())?;
        let row = store::NewRow {
            title: new.title.trim(),
            body: &new.body,
            assignee: assignee.as_deref(),
            priority,
            posted_by,
        };
        store::insert(&self.db, row).await
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
        if result.as_ref().is_some_and(|r| longer_than(r, MAX_RESULT)) {
            return Err(Error::invalid(format!("a result is at most {MAX_RESULT} characters")));
        }
        let id = &self.full_id(id).await?;
        if let Some(task) = store::complete(&self.db, id, agent, result.as_deref()).await? {
            return Ok(task);
        }
        let task = self.get(id).await?;
        Err(match task.status {
            TaskStatus::Claimed => {
                Error::forbidden(format!("task {id} is claimed by another agent; only its claimant may complete it"))
            }
            status => Error::conflict(format!("task {id} is {status}, not claimed: claim it first")),
        })
    }

    /// A task by its whole id or the short form operators see (its last 8 hex digits).
    pub async fn get(&self, id: &str) -> Result<Task> {
        store::get(&self.db, &self.full_id(id).await?).await?.ok_or_else(|| no_task(id))
    }

    /// A task's events, oldest first, each with the change it made.
    pub async fn history(&self, id: &str) -> Result<Vec<TaskEvent>> {
        Ok(named_history(store::history(&self.db, &self.full_id(id).await?).await?))
    }

    /// The whole id that `id` (whole or short) names.
    async fn full_id(&self, id: &str) -> Result<String> {
        db::full_id(&self.db, db::ShortIds::Tasks, id).await?.ok_or_else(|| no_task(id))
    }

    /// How many tasks are in each status, every status listed (for the metrics).
    pub async fn counts_by_status(&self) -> Result<Vec<(String, u64)>> {
        let counted = store::counts_by_status(&self.db).await?;
        Ok(TaskStatus::ALL
            .iter()
            .map(|status| {
                let name = status.as_str();
                (name.to_string(), counted.iter().find(|(s, _)| s == name).map_or(0, |(_, n)| *n))
            })
            .collect())
    }

    /// A page of the tasks matching the filter, best first (priority, then oldest).
    pub async fn list(&self, filter: &TaskFilter, page: &PageRequest) -> Result<Page<Task>> {
        if let Some(p) = filter.min_priority {
            check_priority("min_priority", p)?;
        }
        let assignee = self.agents.id_of(filter.assignee.as_deref())?;
        let query = store::Query {
            status: filter.status,
            assignee: assignee.as_deref(),
            text: filter.text.as_deref().map(str::trim).filter(|t| !t.is_empty()).map(contains_pattern),
            min_priority: filter.min_priority.unwrap_or(0),
        };
        let after = page.after(Key::PriorityId)?.map(parse_cursor).transpose()?;
        let rows = store::list(&self.db, &query, after, page.fetch_limit()).await?;
        let total = store::count(&self.db, &query).await?;
        Ok(Page::from_rows(rows, page, total, |t| format!("{}:{}", t.priority, t.id)))
    }

    /// Operator action: give the task to another agent (a name or id; `None` or empty: anyone)
    /// and put it back to pending; the new assignee, if running, is woken as for a new task.
    pub async fn reassign(&self, id: &str, assignee: Option<&str>) -> Result<Task> {
        let assignee = self.agents.id_for_field("assignee", assignee)?;
        let task =
            self.act(id, TaskAction::Reassign, store::Change::Reassign { assignee: assignee.as_deref() }).await?;
        self.wake_assignee(&task, "given to you");
        Ok(task)
    }

    /// If `[task_board] wake_assignee` is on and `task` is for a running agent, starts a turn
    /// telling that agent the task waits (`how`: "posted for you", "given to you"), in a
    /// session labelled with the task's whole id (its wake-ups, on the task's page).
    fn wake_assignee(&self, task: &Task, how: &str) {
        if !self.wake.on {
            return;
        }
        let Some(agent) = task.assigned_to.as_deref().and_then(|a| self.agents.get(a).ok()).filter(|a| a.is_running())
        else {
            return;
        };
        let (runtime, title, id) = (self.wake.runtime.clone(), task.title.clone(), task.id);
        let message = format!("A task was {how}: \"{title}\" (task {id}). Claim it with task_claim when you can.");
        tokio::spawn(async move {
            let label = Origin::Task(id.to_string()).label();
            let req = TurnRequest { new_session_label: label, ..TurnRequest::headless(message, Caller::Agent) };
            if let Err(e) = runtime.run_turn(agent.clone(), req).await {
                tracing::info!(agent = %agent.name, error = %e.message, "could not wake the assignee of a task");
            }
        });
    }

    /// Operator action: withdraw a task that is not finished.
    /// `by`: who cancels it, as the logs name callers (`operator:ada`, `token:ci`, `cli`).
    pub async fn cancel(&self, id: &str, by: &str) -> Result<Task> {
        self.act(id, TaskAction::Cancel, store::Change::Cancel { by }).await
    }

    /// Operator action: put a failed or cancelled task back to pending.
    pub async fn retry(&self, id: &str) -> Result<Task> {
        self.act(id, TaskAction::Retry, store::Change::Retry).await
    }

    /// Applies an operator action if the task's status allows it ([`TaskStatus::actions`]).
    /// The update names the status it was allowed from, so a task that moved meanwhile is
    /// refused, not changed from a status that does not allow it.
    async fn act(&self, id: &str, action: TaskAction, change: store::Change<'_>) -> Result<Task> {
        let task = self.get(id).await?;
        let refusal = |status: TaskStatus| {
            Error::conflict(format!(
                "only a {} task can be {}; task {id} is {status}",
                action.applies_to(),
                action.verb()
            ))
        };
        if !task.status.allows(action) {
            return Err(refusal(task.status));
        }
        let full = task.id.to_string();
        match store::change(&self.db, &full, task.status, change).await? {
            Some(task) => Ok(task),
            None => Err(refusal(self.get(&full).await?.status)),
        }
    }

    /// Returns claims older than `ttl_secs` to pending, counting a retry; past `max_retries`
    /// (0 = unlimited) the task fails instead. Returns how many claims were taken back.
    pub async fn sweep(&self, ttl_secs: u64, max_retries: u64) -> Result<u64> {
        let now = chrono::Utc::now();
        let cutoff = db::timestamp(now - chrono::Duration::seconds(ttl_secs as i64));
        store::sweep(&self.db, &cutoff, max_retries as i64).await
    }
}

/// `PRIORITY:ID` (already checked to be a [`Key::PriorityId`]), as [`TaskBoard::list`] hands it out.
fn parse_cursor(cursor: &str) -> Result<(i64, &str)> {
    let (priority, id) = cursor.split_once(':').ok_or_else(bad_cursor)?;
    Ok((priority.parse().map_err(|_| bad_cursor())?, id))
}

/// Starts the sweeper: every second it takes back expired claims, reading `[task_board]`
/// from `config.toml` again when the file changed, so TTL and retry changes apply without a
/// restart.
pub(crate) fn start_sweeper(services: &Services) {
    // Held weakly: the sweeper ends with the kernel that holds the board.
    let weak = Arc::downgrade(&services.need::<TaskBoard>());
    let path = services.get::<Home>().path().join("config.toml");
    let mut settings = services.config().task_board.clone();
    tokio::spawn(async move {
        let mut seen = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        loop {
            tick.tick().await;
            let Some(board) = weak.upgrade() else { return };
            if board.db.is_closed() {
                return;
            }
            let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
            if modified != seen {
                seen = modified;
                match crate::config::Config::load(&path) {
                    Ok(c) => settings = c.task_board,
                    Err(e) => {
                        tracing::warn!(error = %e, "config.toml changed but is invalid; the task board keeps its settings")
                    }
                }
            }
            match board.sweep(settings.claim_ttl_secs, settings.max_retries).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(count = n, "task claims expired and were taken back"),
                Err(e) => tracing::warn!(error = %e.message, "the task sweeper failed"),
            }
        }
    });
}

fn no_task(id: &str) -> Error {
    Error::not_found(format!("no task `{id}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored value of the wrong type (a damaged database, a bad migration) is an
    /// `Internal` error with a ref, not a panic, and says nothing of the SQL or the column.
    #[tokio::test]
    async fn a_row_that_does_not_decode_is_an_internal_error() {
        let dir = tempfile::tempdir().unwrap();
        let db = db::open_for_test(dir.path()).await;
        let agents = Arc::new(Agents::load(db.clone(), Vec::new()).await.unwrap());
        let board = TaskBoard::new(db.clone(), agents, Wake { runtime: Runtime::unbound(), on: false });
        let id = Uuid::now_v7().to_string();
        let stored = db::query(
            "INSERT INTO tasks (id, title, body, priority, status, posted_by, created_at, updated_at)
             VALUES ($1, 'title', '', 'high', 'pending', 'test', $2, $2)",
        )
        .bind(&id)
        .bind(db::now())
        .execute(&db)
        .await;
        if db.dialect("sqlite", "postgres") == "postgres" {
            // PostgreSQL's typed columns refuse the value at the door: nothing to decode.
            assert!(stored.is_err_and(|e| e.to_string().contains("bigint")));
            return;
        }
        stored.unwrap();

        for e in [
            board.get(&id).await.unwrap_err(),
            board.list(&TaskFilter::default(), &PageRequest::default()).await.unwrap_err(),
        ] {
            assert_eq!(e.kind, crate::ErrorKind::Internal, "{e}");
            let reference = e.message.strip_prefix("internal error (ref ").and_then(|m| m.strip_suffix(')'));
            assert!(reference.is_some_and(|r| r.len() == 8 && r.bytes().all(|b| b.is_ascii_hexdigit())), "{e}");
            assert!(!e.message.contains("priority") && !e.model_text().contains("SELECT"), "{e}");
        }
    }
}
