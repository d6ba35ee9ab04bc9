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

mod store;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::agent::Agents;
use crate::db::{self, Db};
use crate::error::{Error, Result};
use crate::page::{Key, Page, PageRequest, bad_cursor};

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
    /// An agent's name or id.
    pub agent: Option<String>,
    /// A tool's exact name, or a prefix ending in `*` (`browser_*`, `mcp__docs__*`).
    pub tool: Option<String>,
    /// `ok`, `error` (any failure), or one outcome (`Forbidden`, `InvalidArguments`, …).
    pub outcome: Option<String>,
    /// Only calls at or after this time (RFC 3339, e.g. `2026-12-01T09:00:00Z`).
    #[param(format = DateTime)]
    pub since: Option<String>,
}

/// An entry waiting for the writer, with its time and, for a durable record, who waits for
/// the commit (told whether it succeeded).
pub(super) struct Queued {
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
    agents: Arc<Agents>,
    tx: mpsc::UnboundedSender<Msg>,
}

/// The most entries (and flushes) one write takes.
const BATCH: usize = 512;

impl AuditLog {
    pub(crate) fn start(db: Db, agents: Arc<Agents>) -> AuditLog {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(db.clone(), rx));
        AuditLog { db, agents, tx }
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

    /// The latest `limit` records, newest first (the overview's recent calls: no total).
    pub async fn recent(&self, limit: u32) -> Result<Vec<AuditRecord>> {
        self.flush().await;
        store::list(&self.db, &[], None, None, i64::from(limit)).await
    }

    /// Tool calls per UTC hour since `since`, oldest first.
    pub async fn calls_per_hour(&self, since: &str) -> Result<Vec<(String, u64)>> {
        self.flush().await;
        store::calls_per_hour(&self.db, since).await
    }

    /// A page of the records matching the filter, newest first (the cursor is the last
    /// record's id). Waits for everything queued before it, so a call is visible to a read
    /// that starts after the call returned.
    pub async fn list(&self, filter: &AuditFilter, page: &PageRequest) -> Result<Page<AuditRecord>> {
        self.flush().await;
        let agent_id = self.agents.id_of(filter.agent.as_deref())?;
        // A time given blank is not a time: refused, like any other that does not parse.
        let since = filter.since.as_deref().map(|t| crate::db::parse_time("since", t)).transpose()?;
        // `error` is every outcome but `ok`.
        let outcome = match given(filter.outcome.as_deref()) {
            Some("error") => ("outcome <> ", Some("ok")),
            other => ("outcome = ", other),
        };
        let tool = given(filter.tool.as_deref());
        let prefix = tool.and_then(|t| t.strip_suffix('*'));
        let filters = [
            ("agent_id = ", agent_id.as_deref()),
            ("tool = ", tool.filter(|_| prefix.is_none())),
            outcome,
            ("at >= ", since.as_deref()),
        ];
        let before = page.after(Key::Number)?.map(|c| c.parse::<i64>().map_err(|_| bad_cursor())).transpose()?;
        let rows = store::list(&self.db, &filters, prefix, before, page.fetch_limit()).await?;
        let total = store::count(&self.db, &filters, prefix).await?;
        Ok(Page::from_rows(rows, page, total, |r| r.id.to_string()))
    }
}

/// A filter's value as given: `None` when absent or blank.
fn given(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
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
            || match store::insert_batch(&db, &entries).await {
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
