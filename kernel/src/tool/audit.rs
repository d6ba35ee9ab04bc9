//! The audit log (spec §0.6): every tool call, whatever its outcome.
//!
//! One writer task inserts queued entries in batches, one transaction each. Two ways in:
//! - [`AuditLog::record_durably`], for calls that change state: it resolves once the batch
//!   holding the entry is committed, so such a call is never acknowledged without its record
//!   (a commit in WAL mode with `synchronous = NORMAL` survives the process being killed).
//!   Concurrent calls share one commit (group commit).
//! - [`AuditLog::record`], for read-only calls: it only queues the entry; a crash right after
//!   may lose the last few such records.
//!
//! Readers call [`AuditLog::list`], which first waits until everything queued before it is
//! written, so a call is always visible to a read that starts after the call returned.

use serde::{Deserialize, Serialize};
use sqlx::Row;
use tokio::sync::{mpsc, oneshot};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::db::{self, Db};
use crate::error::{Error, Result};

pub struct AuditEntry {
    pub agent_id: Uuid,
    pub session_id: Option<Uuid>,
    pub caller: String,
    pub tool: String,
    pub args_digest: String,
    pub outcome: &'static str,
    pub message: Option<String>,
    pub duration_us: u64,
    pub artifact_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AuditRecord {
    pub id: i64,
    pub at: String,
    pub agent_id: String,
    pub session_id: Option<String>,
    pub caller: String,
    pub tool: String,
    pub args_digest: String,
    /// `ok` or an error kind.
    pub outcome: String,
    pub message: Option<String>,
    pub duration_us: i64,
    pub artifact_id: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditFilter {
    /// Agent id.
    pub agent: Option<String>,
    /// Exact tool name.
    pub tool: Option<String>,
    /// Only records older than this id (for paging).
    pub before: Option<i64>,
    /// At most this many records, newest first (default 100, at most 1000).
    pub limit: Option<u32>,
}

/// An entry waiting for the writer, with its time and, for a durable record, who waits for
/// the commit (told whether it succeeded).
struct Queued {
    entry: AuditEntry,
    at: String,
    committed: Option<oneshot::Sender<bool>>,
}

// Entries far outnumber flushes; boxing them would cost an allocation on every call.
#[allow(clippy::large_enum_variant)]
enum Msg {
    Entry(Queued),
    Flush(oneshot::Sender<()>),
}

pub struct AuditLog {
    db: Db,
    tx: mpsc::UnboundedSender<Msg>,
}

const MESSAGE_LIMIT: usize = 2_000;
/// The most entries (and flushes) one write takes.
const BATCH: usize = 512;

impl AuditLog {
    pub(crate) fn start(db: Db) -> AuditLog {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(db.clone(), rx));
        AuditLog { db, tx }
    }

    /// Queues an entry; never blocks, never fails the call it describes. For read-only calls.
    pub fn record(&self, entry: AuditEntry) {
        if self.tx.send(Msg::Entry(Queued { entry, at: db::now(), committed: None })).is_err() {
            tracing::error!("audit writer is gone; an audit entry was lost");
        }
    }

    /// Queues an entry and waits until the batch holding it is committed. For calls that
    /// change state: the caller must not answer before this returns `Ok`.
    pub async fn record_durably(&self, entry: AuditEntry) -> Result<()> {
        let tool = entry.tool.clone();
        let (committed, wait) = oneshot::channel();
        let queued = Queued { entry, at: db::now(), committed: Some(committed) };
        if self.tx.send(Msg::Entry(queued)).is_ok() && wait.await == Ok(true) {
            return Ok(());
        }
        // The writer has logged why (or is gone): a fault of this daemon. Whatever the call did
        // stands, so the log says so for whoever follows up the ref.
        Err(Error::internal(format_args!(
            "the audit record of a `{tool}` call could not be written; the call itself ran"
        )))
    }

    /// Waits until every entry queued so far is in the database.
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Msg::Flush(done)).is_ok() {
            let _ = wait.await;
        }
    }

    pub async fn list(&self, filter: &AuditFilter) -> Result<Vec<AuditRecord>> {
        self.flush().await;
        let limit = filter.limit.unwrap_or(100).clamp(1, 1000);
        let rows = sqlx::query(
            "SELECT id, at, agent_id, session_id, caller, tool, args_digest, outcome, message, duration_us, artifact_id
             FROM audit
             WHERE (?1 IS NULL OR agent_id = ?1) AND (?2 IS NULL OR tool = ?2) AND (?3 IS NULL OR id < ?3)
             ORDER BY id DESC LIMIT ?4",
        )
        .bind(&filter.agent)
        .bind(&filter.tool)
        .bind(filter.before)
        .bind(limit)
        .fetch_all(&self.db)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(AuditRecord {
                    id: r.try_get("id")?,
                    at: r.try_get("at")?,
                    agent_id: r.try_get("agent_id")?,
                    session_id: r.try_get("session_id")?,
                    caller: r.try_get("caller")?,
                    tool: r.try_get("tool")?,
                    args_digest: r.try_get("args_digest")?,
                    outcome: r.try_get("outcome")?,
                    message: r.try_get("message")?,
                    duration_us: r.try_get("duration_us")?,
                    artifact_id: r.try_get("artifact_id")?,
                })
            })
            .collect()
    }
}

async fn write_loop(db: Db, mut rx: mpsc::UnboundedReceiver<Msg>) {
    let mut batch = Vec::new();
    let mut waiters = Vec::new();
    while rx.recv_many(&mut batch, BATCH).await > 0 {
        let mut entries = Vec::with_capacity(batch.len());
        for msg in batch.drain(..) {
            match msg {
                Msg::Entry(queued) => entries.push(queued),
                Msg::Flush(done) => waiters.push(done),
            }
        }
        let written = entries.is_empty()
            || match write_batch(&db, &entries).await {
                Ok(()) => true,
                Err(e) => {
                    tracing::error!(error = %e.message, count = entries.len(), "audit entries could not be written");
                    false
                }
            };
        for committed in entries.into_iter().filter_map(|q| q.committed) {
            let _ = committed.send(written);
        }
        for done in waiters.drain(..) {
            let _ = done.send(());
        }
    }
}

/// Writes a batch as one multi-row `INSERT`: one statement is one round trip to SQLite's
/// thread and its own transaction (all rows or none), where BEGIN, an INSERT per row and
/// COMMIT were several. A durable call waits for this, so it is its latency. A batch holds at
/// most `BATCH` rows, 10 parameters each: far below SQLite's 32,766 parameters.
async fn write_batch(db: &Db, entries: &[Queued]) -> Result<(), Error> {
    let mut insert = sqlx::QueryBuilder::new(
        "INSERT INTO audit (at, agent_id, session_id, caller, tool, args_digest, outcome, message, duration_us, artifact_id) ",
    );
    insert.push_values(entries, |mut row, Queued { entry: e, at, .. }| {
        let message = e.message.as_ref().map(|m| m.chars().take(MESSAGE_LIMIT).collect::<String>());
        row.push_bind(at.as_str())
            .push_bind(e.agent_id.to_string())
            .push_bind(e.session_id.map(|s| s.to_string()))
            .push_bind(e.caller.as_str())
            .push_bind(e.tool.as_str())
            .push_bind(e.args_digest.as_str())
            .push_bind(e.outcome)
            .push_bind(message)
            .push_bind(e.duration_us as i64)
            .push_bind(e.artifact_id.as_deref());
    });
    insert.build().execute(db).await?;
    Ok(())
}
