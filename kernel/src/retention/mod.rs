//! Retention (issue 43): nothing grows without bound. Finished records are kept for
//! `[retention]`'s days, then removed by a sweep that runs an hour after the daemon starts and
//! every day after. What is still in use is never swept: a running process, a message not
//! yet answered, an unfinished job or task, an agent's latest canvas. The audit log is kept
//! for ever unless an operator sets `audit_days`.
//!
//! Each table is swept in batches of rows by its time column (indexed: migration
//! 0034), so one sweep never holds SQLite's single writer for long, on either back end.
//!
//! # Design notes
//!
//! ## Layout
//!
//! Nothing grows without bound (issue 43): `[retention]`'s days per kind of finished record;
//! `sweep(kernel, now)` an hour after start and daily (the database's part on one daemon of a
//! cluster, the holder of the lease `retention`; each home's files on every daemon) — `store.rs`
//! deletes by time in batches of 1,000 (`rowid` on SQLite, `ctid` on PostgreSQL; migration 0034's
//! indexes) ended processes, older canvas versions (never an agent's latest), answered channel
//! traffic, finished media jobs and A2A tasks, and the audit log only when `audit_days` is set;
//! `Workspaces::sweep_trash` (trash entries are named by UUIDv7, whose time says when) and
//! `Skills::sweep_deleted` (`skills/.deleted` folders; history stays). Model calls past
//! `model_calls_days` (90) are rolled up, not lost: `usage::roll_up` adds each batch to its day's
//! line of `usage_days` (per agent, session, provider and model; migration 0037) and deletes the
//! rows in one transaction, and every usage sum reads both tables (a rolled-up day counts from its
//! start).

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::Kernel;
use crate::db;
use crate::error::Result;
use crate::skills::Skills;
use crate::workspace::Workspaces;

pub(crate) mod config;
mod store;

pub use config::RetentionConfig;

/// The first sweep after a start waits this long (a start is busy enough); then one a day.
const FIRST_SWEEP: Duration = Duration::from_secs(3600);
const EVERY: Duration = Duration::from_secs(24 * 3600);

/// What one sweep removed, by kind.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Swept {
    pub processes: u64,
    pub canvas_versions: u64,
    pub channel_inbound: u64,
    pub channel_outbound: u64,
    pub media_jobs: u64,
    pub a2a_tasks: u64,
    /// Model-call rows rolled up into daily totals.
    pub model_calls: u64,
    pub audit: u64,
    pub trash_files: u64,
    pub deleted_skills: u64,
}

/// The lease under which one daemon of a cluster sweeps the database (the others would only
/// repeat it).
const SWEEPER_LEASE: &str = "retention";

/// Whether this daemon sweeps the database: always on SQLite; on a shared database, when it
/// holds (or can take) [`SWEEPER_LEASE`].
async fn sweeps_database_here(kernel: &Kernel) -> bool {
    if !kernel.db().is_shared() {
        return true;
    }
    match kernel.cluster().acquire(SWEEPER_LEASE).await {
        Ok(held) => held,
        Err(e) => {
            tracing::warn!(error = %e.message, "could not ask for the retention sweep's lease");
            false
        }
    }
}

/// Starts the daily sweep.
pub(crate) fn start(kernel: &Kernel) {
    let kernel = kernel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(FIRST_SWEEP).await;
        loop {
            match sweep(&kernel, kernel.clock().now()).await {
                Ok(swept) if swept != Swept::default() => tracing::info!(?swept, "swept records past their retention"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e.message, "the retention sweep failed; it runs again tomorrow"),
            }
            tokio::time::sleep(EVERY).await;
        }
    });
}

/// Removes everything past its retention as of `now`: this home's files (the trash, deleted
/// skills) on every daemon, the database's rows on one daemon of a cluster.
pub async fn sweep(kernel: &Kernel, now: DateTime<Utc>) -> Result<Swept> {
    let config = &kernel.config().retention;
    let mut swept = match sweeps_database_here(kernel).await {
        true => store::sweep(kernel.db(), config, now).await?,
        false => Swept::default(),
    };
    if let Some(cutoff) = cutoff(now, config.trash_days) {
        swept.trash_files = kernel.service::<Workspaces>().sweep_trash(cutoff).await?;
    }
    if let Some(cutoff) = cutoff(now, config.deleted_skills_days) {
        swept.deleted_skills = kernel.service::<Skills>().sweep_deleted(&db::timestamp(cutoff)).await?;
    }
    Ok(swept)
}

/// `now` less `days`, or `None` for 0 (kept for ever).
pub(super) fn cutoff(now: DateTime<Utc>, days: u64) -> Option<DateTime<Utc>> {
    (days > 0).then(|| now - chrono::Duration::days(days as i64))
}
