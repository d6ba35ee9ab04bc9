//! SQL for the cluster: daemons and their heartbeats, leases, forwarded turns.

use crate::db::{self, Db};
use crate::error::Result;

use super::{Daemon, DaemonState, Lease};

pub(super) struct NewDaemon<'a> {
    pub id: &'a str,
    pub host: &'a str,
    pub pid: u32,
    pub listen: &'a str,
    pub version: &'a str,
    pub at: &'a str,
}

pub(super) async fn register(db: &Db, d: NewDaemon<'_>) -> Result<()> {
    db::query(
        "INSERT INTO daemons (id, host, pid, listen, version, started_at, heartbeat_at)
         VALUES ($1, $2, $3, $4, $5, $6, $6)",
    )
    .bind(d.id)
    .bind(d.host)
    .bind(i64::from(d.pid))
    .bind(d.listen)
    .bind(d.version)
    .bind(d.at)
    .execute(db)
    .await?;
    Ok(())
}

/// Moves the daemon's heartbeat and renews its leases until `expires`; the names of the
/// leases it still holds (one that expired and was taken meanwhile is not renewed).
pub(super) async fn heartbeat(db: &Db, id: &str, now: &str, expires: &str) -> Result<Vec<String>> {
    let mut tx = db.begin().await?;
    db::query("UPDATE daemons SET heartbeat_at = $1 WHERE id = $2").bind(now).bind(id).execute(&mut tx).await?;
    let held: Vec<String> =
        db::query_scalar("UPDATE leases SET expires_at = $1 WHERE holder = $2 AND expires_at >= $3 RETURNING name")
            .bind(expires)
            .bind(id)
            .bind(now)
            .fetch_all(&mut tx)
            .await?;
    tx.commit().await?;
    Ok(held)
}

/// Ends a dead daemon's leases at once. The rows stay, expired, naming it: whoever takes one
/// next knows it took it from a daemon that died (`Cluster::moved`).
async fn expire_leases(tx: &mut db::Tx, daemon: &str) -> Result<()> {
    db::query("UPDATE leases SET expires_at = $1 WHERE holder = $2").bind(EXPIRED).bind(daemon).execute(tx).await?;
    Ok(())
}

/// Earlier than any lease's time.
const EXPIRED: &str = "1970-01-01T00:00:00.000Z";

/// Marks a clean stop and gives up the daemon's leases at once.
pub(super) async fn stop(db: &Db, id: &str, at: &str) -> Result<()> {
    let mut tx = db.begin().await?;
    // Gone, not expired: a clean stop (a restart, an upgrade) is no news to the agents.
    db::query("DELETE FROM leases WHERE holder = $1").bind(id).execute(&mut tx).await?;
    db::query("UPDATE daemons SET stopped_at = $1 WHERE id = $2").bind(at).bind(id).execute(&mut tx).await?;
    tx.commit().await?;
    Ok(())
}

/// Claims the work of every daemon that stopped or whose heartbeat is older than
/// `beat_before`: each is claimed by one reaper only (the update is its guard).
pub(super) async fn claim_dead(db: &Db, me: &str, now: &str, beat_before: &str) -> Result<Vec<String>> {
    Ok(db::query_scalar(
        "UPDATE daemons SET reaped_at = $1, reaped_by = $2
         WHERE id <> $2 AND reaped_at IS NULL AND (stopped_at IS NOT NULL OR heartbeat_at < $3)
         RETURNING id",
    )
    .bind(now)
    .bind(me)
    .bind(beat_before)
    .fetch_all(db)
    .await?)
}

/// Ends a dead daemon's leases, and puts its half-run forwarded turns back in the queue;
/// those it was waiting for, and its turns' `ask_user` questions, have no one to answer and go;
/// its turns' waiting approvals expire, and the parked ones it was resuming are let go.
pub(super) async fn release_dead(db: &Db, dead: &str, cut_off: &str, at: &str) -> Result<()> {
    let mut tx = db.begin().await?;
    expire_leases(&mut tx, dead).await?;
    db::query("DELETE FROM cluster_turns WHERE asked_by = $1").bind(dead).execute(&mut tx).await?;
    db::query("UPDATE cluster_turns SET state = 'queued', run_by = NULL WHERE run_by = $1 AND state = 'running'")
        .bind(dead)
        .execute(&mut tx)
        .await?;
    db::query("DELETE FROM cluster_calls WHERE asked_by = $1").bind(dead).execute(&mut tx).await?;
    // The turns waiting for these answers ended with their daemon.
    db::query("DELETE FROM questions WHERE daemon_id = $1").bind(dead).execute(&mut tx).await?;
    // So did the calls waiting for approval: a late "yes" would run nothing (issue 48). Parked
    // calls wait in the database, not in a turn: they stay, and a session it was resuming is
    // resumed again (its call is not run twice: `crate::approval`).
    db::query(
        "UPDATE approvals SET status = 'expired', decided_by = 'daemon stopped', decided_at = $2
         WHERE daemon_id = $1 AND status = 'pending' AND parked IS NULL",
    )
    .bind(dead)
    .bind(at)
    .execute(&mut tx)
    .await?;
    db::query("UPDATE approvals SET resumed_by = NULL WHERE resumed_by = $1 AND resumed_at IS NULL")
        .bind(dead)
        .execute(&mut tx)
        .await?;
    // A call is not run twice: the one it was running ends with `cut_off` for its asker.
    let cut: Vec<String> = db::query_scalar(
        "UPDATE cluster_calls SET state = 'done', result = $2, finished_at = $3 WHERE run_by = $1 AND state = 'running'
         RETURNING id",
    )
    .bind(dead)
    .bind(cut_off)
    .bind(at)
    .fetch_all(&mut tx)
    .await?;
    for id in cut {
        tell(&mut tx, format!("done:{id}")).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Daemons not reaped, newest first, with the stopped and reaped ones of the last `since`.
pub(super) async fn daemons(db: &Db, since: &str) -> Result<Vec<Daemon>> {
    let rows = db::query(
        "SELECT id, host, pid, listen, version, started_at, heartbeat_at, stopped_at, reaped_at FROM daemons
         WHERE reaped_at IS NULL OR reaped_at >= $1 ORDER BY started_at DESC, id LIMIT 100",
    )
    .bind(since)
    .fetch_all(db)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(Daemon {
                id: r.try_get("id")?,
                host: r.try_get("host")?,
                pid: r.try_get::<i64, _>("pid")?,
                listen: r.try_get("listen")?,
                version: r.try_get("version")?,
                started_at: r.try_get("started_at")?,
                heartbeat_at: r.try_get("heartbeat_at")?,
                stopped_at: r.try_get("stopped_at")?,
                reaped_at: r.try_get("reaped_at")?,
                alive: false,
                // Named by `Cluster::overview`, which knows who beat in time.
                state: DaemonState::Silent,
                leases: Vec::new(),
            })
        })
        .collect()
}

/// How many daemons beat since `beat_since` and have not stopped.
/// Daemons neither stopped nor taken for dead (a late heartbeat included).
pub(super) async fn unended_count(db: &Db) -> Result<i64> {
    Ok(db::query_scalar("SELECT count(*) FROM daemons WHERE reaped_at IS NULL AND stopped_at IS NULL")
        .fetch_one(db)
        .await?)
}

pub(super) async fn live_count(db: &Db, beat_since: &str) -> Result<i64> {
    Ok(db::query_scalar(
        "SELECT count(*) FROM daemons WHERE reaped_at IS NULL AND stopped_at IS NULL AND heartbeat_at >= $1",
    )
    .bind(beat_since)
    .fetch_one(db)
    .await?)
}

pub(super) async fn leases(db: &Db) -> Result<Vec<Lease>> {
    let rows =
        db::query("SELECT name, holder, acquired_at, expires_at FROM leases ORDER BY name").fetch_all(db).await?;
    rows.iter()
        .map(|r| {
            Ok(Lease {
                name: r.try_get("name")?,
                holder: r.try_get("holder")?,
                acquired_at: r.try_get("acquired_at")?,
                expires_at: r.try_get("expires_at")?,
            })
        })
        .collect()
}

/// Who holds `name` until when, if anyone.
pub(super) async fn lease(db: &Db, name: &str) -> Result<Option<(String, String)>> {
    Ok(db::query_as::<(String, String)>("SELECT holder, expires_at FROM leases WHERE name = $1")
        .bind(name)
        .fetch_optional(db)
        .await?)
}

/// Takes `name` for `me` if it is free, expired at `now`, or `me`'s already; whether `me`
/// holds it now.
pub(super) async fn acquire(db: &Db, name: &str, me: &str, now: &str, expires: &str) -> Result<bool> {
    let holder: Option<String> = db::query_scalar(
        "INSERT INTO leases (name, holder, acquired_at, expires_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at,
             acquired_at = CASE WHEN leases.holder = excluded.holder THEN leases.acquired_at ELSE excluded.acquired_at END
         WHERE leases.holder = excluded.holder OR leases.expires_at < excluded.acquired_at
         RETURNING holder",
    )
    .bind(name)
    .bind(me)
    .bind(now)
    .bind(expires)
    .fetch_optional(db)
    .await?;
    Ok(holder.as_deref() == Some(me))
}

pub(super) async fn release(db: &Db, name: &str, me: &str) -> Result<()> {
    db::query("DELETE FROM leases WHERE name = $1 AND holder = $2").bind(name).bind(me).execute(db).await?;
    Ok(())
}

/// Tells every listening daemon `payload` on `channel`.
pub(super) async fn notify(db: &Db, channel: &str, payload: &str) -> Result<()> {
    db::query("SELECT pg_notify($1, $2)").bind(channel).bind(payload).execute(db).await?;
    Ok(())
}

/// `NOTIFY channel` with each of `payloads`, in one transaction: delivered together, in order.
pub(super) async fn notify_all(db: &Db, channel: &str, payloads: &[String]) -> Result<()> {
    let mut tx = db.begin().await?;
    for payload in payloads {
        db::query("SELECT pg_notify($1, $2)").bind(channel).bind(payload).execute(&mut tx).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Writes a turn for `agent`'s lease holder and wakes the daemons (PostgreSQL only).
pub(super) async fn ask_turn(db: &Db, id: &str, agent: &str, me: &str, request: &str, at: &str) -> Result<()> {
    let mut tx = db.begin().await?;
    db::query(
        "INSERT INTO cluster_turns (id, agent_id, asked_by, request, state, created_at)
         VALUES ($1, $2, $3, $4, 'queued', $5)",
    )
    .bind(id)
    .bind(agent)
    .bind(me)
    .bind(request)
    .bind(at)
    .execute(&mut tx)
    .await?;
    tell(&mut tx, format!("turn:{agent}")).await?;
    tx.commit().await?;
    Ok(())
}

/// The agents with turns waiting for a daemon.
pub(super) async fn agents_with_queued_turns(db: &Db) -> Result<Vec<String>> {
    Ok(db::query_scalar("SELECT DISTINCT agent_id FROM cluster_turns WHERE state = 'queued'").fetch_all(db).await?)
}

/// A forwarded turn taken to run: its id, request, times taken, and whether its asker has
/// cancelled it already.
pub(super) struct TakenTurn {
    pub id: String,
    pub request: String,
    pub attempts: i64,
    pub cancelled: bool,
}

db::from_row!(TakenTurn { id, request, attempts, cancelled });

/// Takes every waiting turn of `agent` for `me`. Daemons taking at once each get different
/// ones (`SKIP LOCKED`).
pub(super) async fn take_turns(db: &Db, agent: &str, me: &str) -> Result<Vec<TakenTurn>> {
    Ok(db::query_as::<TakenTurn>(
        "UPDATE cluster_turns SET state = 'running', run_by = $2, attempts = attempts + 1
         WHERE id IN (SELECT id FROM cluster_turns WHERE agent_id = $1 AND state = 'queued'
                      FOR UPDATE SKIP LOCKED)
         RETURNING id, request, attempts, cancelled <> 0 AS cancelled",
    )
    .bind(agent)
    .bind(me)
    .fetch_all(db)
    .await?)
}

/// Marks a forwarded turn cancelled by its asker and tells its runner (`cancel:<id>`).
pub(super) async fn cancel_turn(db: &Db, id: &str) -> Result<()> {
    let mut tx = db.begin().await?;
    db::query("UPDATE cluster_turns SET cancelled = 1 WHERE id = $1 AND state <> 'done'")
        .bind(id)
        .execute(&mut tx)
        .await?;
    tell(&mut tx, format!("cancel:{id}")).await?;
    tx.commit().await?;
    Ok(())
}

/// The forwarded turns `me` runs that their askers cancelled.
pub(super) async fn cancelled_turns(db: &Db, me: &str) -> Result<Vec<String>> {
    Ok(db::query_scalar("SELECT id FROM cluster_turns WHERE run_by = $1 AND state = 'running' AND cancelled <> 0")
        .bind(me)
        .fetch_all(db)
        .await?)
}

/// Whether the turn is still in the table (a reaper deletes those whose asker died).
pub(super) async fn turn_exists(db: &Db, id: &str) -> Result<bool> {
    Ok(db::query_scalar::<i64>("SELECT count(*) FROM cluster_turns WHERE id = $1").bind(id).fetch_one(db).await? > 0)
}

/// Writes a request for the holder of `lease` and wakes the daemons (PostgreSQL only).
pub(super) async fn ask_call(db: &Db, id: &str, lease: &str, me: &str, request: &str, at: &str) -> Result<()> {
    let mut tx = db.begin().await?;
    db::query(
        "INSERT INTO cluster_calls (id, lease, asked_by, request, state, created_at)
         VALUES ($1, $2, $3, $4, 'queued', $5)",
    )
    .bind(id)
    .bind(lease)
    .bind(me)
    .bind(request)
    .bind(at)
    .execute(&mut tx)
    .await?;
    tell(&mut tx, format!("call:{lease}")).await?;
    tx.commit().await?;
    Ok(())
}

/// The leases with requests waiting for their holder.
pub(super) async fn leases_with_queued_calls(db: &Db) -> Result<Vec<String>> {
    Ok(db::query_scalar("SELECT DISTINCT lease FROM cluster_calls WHERE state = 'queued'").fetch_all(db).await?)
}

/// Takes every waiting request for `lease` for `me`: (id, request).
pub(super) async fn take_calls(db: &Db, lease: &str, me: &str) -> Result<Vec<(String, String)>> {
    Ok(db::query_as::<(String, String)>(
        "UPDATE cluster_calls SET state = 'running', run_by = $2
         WHERE id IN (SELECT id FROM cluster_calls WHERE lease = $1 AND state = 'queued' FOR UPDATE SKIP LOCKED)
         RETURNING id, request",
    )
    .bind(lease)
    .bind(me)
    .fetch_all(db)
    .await?)
}

/// Withdraws a request nobody answered in time; whether it was still waiting to be taken
/// (`false`: a daemon is running it, or it is done).
pub(super) async fn withdraw_call(db: &Db, id: &str) -> Result<bool> {
    Ok(db::query("DELETE FROM cluster_calls WHERE id = $1 AND state = 'queued'")
        .bind(id)
        .execute(db)
        .await?
        .rows_affected()
        > 0)
}

/// Forgets a request whatever its state (its asker gave up waiting).
pub(super) async fn forget_call(db: &Db, id: &str) -> Result<()> {
    db::query("DELETE FROM cluster_calls WHERE id = $1").bind(id).execute(db).await?;
    Ok(())
}

/// Writes what the stdio MCP server `server` offers, as run by `me`, and tells the daemons.
pub(super) async fn put_offer(db: &Db, server: &str, me: &str, offer: &str, at: &str) -> Result<()> {
    let mut tx = db.begin().await?;
    db::query(
        "INSERT INTO mcp_offers (server, daemon_id, offer, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (server) DO UPDATE SET daemon_id = excluded.daemon_id, offer = excluded.offer,
             updated_at = excluded.updated_at",
    )
    .bind(server)
    .bind(me)
    .bind(offer)
    .bind(at)
    .execute(&mut tx)
    .await?;
    tell(&mut tx, format!("offer:{server}")).await?;
    tx.commit().await?;
    Ok(())
}

/// What the stdio MCP server `server` offers, and the daemon running it, as last written.
pub(super) async fn offer(db: &Db, server: &str) -> Result<Option<(String, String)>> {
    Ok(db::query_as::<(String, String)>("SELECT daemon_id, offer FROM mcp_offers WHERE server = $1")
        .bind(server)
        .fetch_optional(db)
        .await?)
}

/// The two tables of work one daemon asks of another: forwarded turns (`cluster_turns`)
/// and requests for a lease's holder (`cluster_calls`). Their rows end the same way.
#[derive(Clone, Copy)]
pub(super) enum Queue {
    Turns,
    Calls,
}

/// Stores a turn's or request's result for the daemon that asked, and tells it.
pub(super) async fn finish(db: &Db, queue: Queue, id: &str, me: &str, result: &str, at: &str) -> Result<()> {
    let sql = match queue {
        Queue::Turns => {
            "UPDATE cluster_turns SET state = 'done', result = $1, finished_at = $2 WHERE id = $3 AND run_by = $4"
        }
        Queue::Calls => {
            "UPDATE cluster_calls SET state = 'done', result = $1, finished_at = $2 WHERE id = $3 AND run_by = $4"
        }
    };
    let mut tx = db.begin().await?;
    db::query(sql).bind(result).bind(at).bind(id).bind(me).execute(&mut tx).await?;
    tell(&mut tx, format!("done:{id}")).await?;
    tx.commit().await?;
    Ok(())
}

/// A finished turn's or request's result, taken (the row goes).
pub(super) async fn take_result(db: &Db, queue: Queue, id: &str) -> Result<Option<String>> {
    let sql = match queue {
        Queue::Turns => "DELETE FROM cluster_turns WHERE id = $1 AND state = 'done' RETURNING result",
        Queue::Calls => "DELETE FROM cluster_calls WHERE id = $1 AND state = 'done' RETURNING result",
    };
    Ok(db::query_scalar::<Option<String>>(sql).bind(id).fetch_optional(db).await?.flatten())
}

/// `NOTIFY kennel_cluster` with `payload` when `tx` commits (every daemon listens).
async fn tell(tx: &mut db::Tx, payload: String) -> Result<()> {
    db::query("SELECT pg_notify('kennel_cluster', $1)").bind(payload).execute(tx).await?;
    Ok(())
}
