//! SQL for the processes table: a row per child, written when it runs and finished when it
//! ends, so the reaper can find what an earlier run left.

use super::reaper::Recorded;
use crate::db::{self, Db};
use crate::error::Result;

/// A child as recorded when it starts.
pub(super) struct NewRow<'a> {
    pub agent: &'a str,
    pub run_id: &'a str,
    pub owner: &'a Recorded,
    pub command: &'a str,
    pub cwd: &'a str,
    pub group: &'a Recorded,
    pub started_at: &'a str,
}

pub(super) async fn insert(db: &Db, row: NewRow<'_>) -> Result<i64> {
    let id = db::query_scalar(
        "INSERT INTO processes (agent_id, run_id, command, cwd, pgid, start_ticks, boot_id, marker,
                                owner_pid, owner_ticks, started_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id",
    )
    .bind(row.agent)
    .bind(row.run_id)
    .bind(row.command)
    .bind(row.cwd)
    .bind(row.group.pgid)
    .bind(row.group.start_ticks as i64)
    .bind(&row.group.boot_id)
    .bind(&row.group.marker)
    .bind(row.owner.pgid)
    .bind(row.owner.start_ticks as i64)
    .bind(row.started_at)
    .fetch_one(db)
    .await?;
    Ok(id)
}

/// How a child ended.
pub(super) struct End<'a> {
    pub ended_at: &'a str,
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub how: &'a str,
}

pub(super) async fn finish(db: &Db, id: i64, end: End<'_>) -> Result<()> {
    db::query("UPDATE processes SET ended_at = $2, exit_code = $3, signal = $4, ended = $5 WHERE id = $1")
        .bind(id)
        .bind(end.ended_at)
        .bind(end.code)
        .bind(end.signal)
        .bind(end.how)
        .execute(db)
        .await?;
    Ok(())
}

/// Groups other daemon runs recorded as running: their row ids, the groups and the daemons
/// that recorded them.
pub(super) async fn left_running(db: &Db, run_id: &str) -> Result<Vec<(i64, Recorded, Recorded)>> {
    let rows = db::query(
        "SELECT id, pgid, start_ticks, boot_id, marker, owner_pid, owner_ticks FROM processes
         WHERE ended_at IS NULL AND run_id <> $1",
    )
    .bind(run_id)
    .fetch_all(db)
    .await?;
    rows.iter()
        .map(|r| {
            let (ticks, owner_ticks): (i64, i64) = (r.try_get("start_ticks")?, r.try_get("owner_ticks")?);
            let boot_id: String = r.try_get("boot_id")?;
            let owner = Recorded {
                pgid: r.try_get("owner_pid")?,
                start_ticks: owner_ticks as u64,
                boot_id: boot_id.clone(),
                marker: String::new(),
            };
            let group =
                Recorded { pgid: r.try_get("pgid")?, start_ticks: ticks as u64, boot_id, marker: r.try_get("marker")? };
            Ok((r.try_get("id")?, group, owner))
        })
        .collect()
}

/// Closes the rows of an earlier run: `how` says whether the reaper killed the group.
pub(super) async fn close_left(db: &Db, id: i64, ended_at: &str, how: &str) -> Result<()> {
    db::query("UPDATE processes SET ended_at = $2, ended = $3 WHERE id = $1 AND ended_at IS NULL")
        .bind(id)
        .bind(ended_at)
        .bind(how)
        .execute(db)
        .await?;
    Ok(())
}
