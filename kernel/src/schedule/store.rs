//! SQL for schedules and their fires. The services ([`super::Schedules`], the runner) decide;
//! this module only reads and writes rows.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Fire, FireOutcome, Kind, Origin, Schedule, State};
use crate::db::{self, Db};
use crate::error::{Error, Result};

/// A schedule with its latest fire's columns, prefixed `f_`.
const SELECT: &str = "SELECT s.*, f.id AS f_id, f.due_at AS f_due_at, f.fired_at AS f_fired_at, f.finished_at AS f_finished_at, f.outcome AS f_outcome,
        f.detail AS f_detail, f.session_id AS f_session_id, f.duration_ms AS f_duration_ms, f.missed_slots AS f_missed_slots
    FROM schedules s
    LEFT JOIN schedule_fires f ON f.id = (SELECT max(id) FROM schedule_fires WHERE schedule_id = s.id)";

/// A `schedules` row as both ways of making one (tools, manifests) store it: active when it
/// has a next fire, paused otherwise.
pub(super) struct NewRow<'a> {
    pub id: Uuid,
    pub agent_id: &'a str,
    pub kind: Kind,
    pub origin: Origin,
    pub expression: Option<&'a str>,
    pub timezone: Option<&'a str>,
    pub run_at: Option<&'a str>,
    pub prompt: &'a str,
    pub channel: Option<&'a str>,
    pub next_fire: Option<DateTime<Utc>>,
    pub created_by: &'a str,
    pub lineage: Option<&'a super::Lineage>,
    pub at: DateTime<Utc>,
}

/// What a list selects, the agent resolved to its id.
pub(super) struct Query<'a> {
    pub agent_id: Option<&'a str>,
    pub kind: Option<Kind>,
    pub state: Option<State>,
}

async fn insert(conn: &mut db::Tx, row: NewRow<'_>) -> Result<()> {
    let state = if row.next_fire.is_some() { State::Active } else { State::Paused };
    let at = db::timestamp(row.at);
    db::query(
        "INSERT INTO schedules (id, agent_id, kind, origin, expression, timezone, run_at, prompt, channel, state,
                                next_fire, created_by, created_at, updated_at, lineage)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, $14)",
    )
    .bind(row.id.to_string())
    .bind(row.agent_id)
    .bind(row.kind.as_str())
    .bind(row.origin.as_str())
    .bind(row.expression)
    .bind(row.timezone)
    .bind(row.run_at)
    .bind(row.prompt)
    .bind(row.channel)
    .bind(state.as_str())
    .bind(row.next_fire.map(db::timestamp))
    .bind(row.created_by)
    .bind(&at)
    .bind(row.lineage.map(|l| serde_json::to_string(l).expect("a lineage always serialises")))
    .execute(conn)
    .await?;
    Ok(())
}

/// Inserts a runtime schedule unless its agent already holds `limit` that are not done; the
/// count and the insert hold the write lock together, so concurrent creates cannot pass the
/// limit. Whether it was inserted.
pub(super) async fn insert_runtime_within(db: &Db, row: NewRow<'_>, limit: i64) -> Result<bool> {
    let mut tx = db.begin_write().await?;
    let held: i64 = db::query_scalar(
        "SELECT count(*) FROM schedules WHERE agent_id = $1 AND origin = 'runtime' AND state != 'done'",
    )
    .bind(row.agent_id)
    .fetch_one(&mut tx)
    .await?;
    if held >= limit {
        return Ok(false);
    }
    insert(&mut tx, row).await?;
    tx.commit().await?;
    Ok(true)
}

/// Inserts an agent's manifest jobs, once per agent ever: if its seed was recorded before,
/// nothing is written. Whether they were inserted.
pub(super) async fn seed(db: &Db, agent_id: &str, rows: Vec<NewRow<'_>>) -> Result<bool> {
    let mut tx = db.begin().await?;
    let fresh = db::query("INSERT INTO schedule_seeds (agent_id) VALUES ($1) ON CONFLICT DO NOTHING")
        .bind(agent_id)
        .execute(&mut tx)
        .await?
        .rows_affected()
        == 1;
    if !fresh {
        return Ok(false);
    }
    for row in rows {
        insert(&mut tx, row).await?;
    }
    tx.commit().await?;
    Ok(true)
}

pub(super) async fn get(db: &Db, id: &str) -> Result<Option<Schedule>> {
    let row = db::query(sqlx::AssertSqlSafe(format!("{SELECT} WHERE s.id = $1"))).bind(id).fetch_optional(db).await?;
    row.as_ref().map(schedule_from).transpose()
}

/// The `WHERE` of a schedule listing: a condition for each filter given and none for the
/// others (an `$N IS NULL OR …` form keeps SQLite from the `(agent_id, id)` index).
fn push_filter(query: &mut db::QueryBuilder, q: &Query<'_>, after: Option<&str>) {
    db::push_conditions(
        query,
        [
            ("s.agent_id = ", q.agent_id),
            ("s.kind = ", q.kind.map(Kind::as_str)),
            ("s.state = ", q.state.map(State::as_str)),
            ("s.id > ", after),
        ],
    );
}

/// Schedules matching `q` after the id `after`, oldest first, at most `limit`.
pub(super) async fn list(db: &Db, q: &Query<'_>, after: Option<&str>, limit: i64) -> Result<Vec<Schedule>> {
    let mut query = db::QueryBuilder::new(SELECT);
    push_filter(&mut query, q, after);
    query.push(" ORDER BY s.id LIMIT ").push_bind(limit);
    let rows = query.build().fetch_all(db).await?;
    rows.iter().map(schedule_from).collect()
}

pub(super) async fn count(db: &Db, q: &Query<'_>) -> Result<u64> {
    let mut query = db::QueryBuilder::new("SELECT count(*) FROM schedules s");
    push_filter(&mut query, q, None);
    let n: i64 = query.build_query_scalar().fetch_one(db).await?;
    Ok(n as u64)
}

/// The latest fires of a schedule, newest first.
pub(super) async fn fires(db: &Db, id: &str, limit: u32) -> Result<Vec<Fire>> {
    let rows = db::query(
        "SELECT id AS f_id, due_at AS f_due_at, fired_at AS f_fired_at, finished_at AS f_finished_at, outcome AS f_outcome, detail AS f_detail,
                session_id AS f_session_id, duration_ms AS f_duration_ms, missed_slots AS f_missed_slots
         FROM schedule_fires WHERE schedule_id = $1 ORDER BY id DESC LIMIT $2",
    )
    .bind(id)
    .bind(i64::from(limit))
    .fetch_all(db)
    .await?;
    rows.iter().filter_map(|r| fire_from(r).transpose()).collect()
}

/// Pauses the active schedules with this id, or of this agent.
pub(super) async fn pause(db: &Db, id: Option<&str>, agent_id: Option<&str>) -> Result<()> {
    db::query(
        "UPDATE schedules SET state = 'paused', next_fire = NULL, updated_at = $1
         WHERE state = 'active' AND ($2 IS NULL OR id = $2) AND ($3 IS NULL OR agent_id = $3)",
    )
    .bind(db::now())
    .bind(id)
    .bind(agent_id)
    .execute(db)
    .await?;
    Ok(())
}

/// Makes a paused schedule active again, firing next at `next`.
pub(super) async fn resume(db: &Db, id: &str, next: DateTime<Utc>) -> Result<()> {
    db::query(
        "UPDATE schedules SET state = 'active', next_fire = $1, updated_at = $2 WHERE id = $3 AND state = 'paused'",
    )
    .bind(db::timestamp(next))
    .bind(db::now())
    .bind(id)
    .execute(db)
    .await?;
    Ok(())
}

/// Deletes a schedule and (by the foreign key's cascade) its fires.
pub(super) async fn delete(db: &Db, id: &str) -> Result<()> {
    db::query("DELETE FROM schedules WHERE id = $1").bind(id).execute(db).await?;
    Ok(())
}

/// An active schedule that is due, as the runner plans its fire.
pub(super) struct DueRow {
    pub id: String,
    pub agent_id: String,
    pub kind: Kind,
    pub expression: Option<String>,
    pub timezone: Option<String>,
    pub prompt: String,
    /// Where the fire's reply is delivered (`NAME` or `NAME:TARGET`).
    pub channel: Option<String>,
    /// The `next_fire` it is due at, as stored (the fire's write is guarded on it).
    pub next_fire: String,
    /// Made in a turn: where it comes from; the default (depth 0) for an operator's.
    pub lineage: super::Lineage,
}

/// A stored lineage; an unreadable one counts as the deepest there is, so its fire is refused
/// rather than run at depth 0.
fn lineage_from(stored: Option<String>) -> super::Lineage {
    let Some(text) = stored else { return super::Lineage::default() };
    serde_json::from_str(&text).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "a schedule's stored lineage is unreadable; its fires are refused");
        super::Lineage { depth: u32::MAX - 1, ..Default::default() }
    })
}

/// Active schedules due at `now`, earliest first, at most `limit`. On PostgreSQL they are
/// read in `tx`, to be taken in it: each row is locked, and rows another daemon is taking are
/// passed over, so daemons taking at once take different schedules and none waits. (SQLite
/// has one daemon; the read is outside the write, which is guarded on `next_fire`.)
/// A row that cannot be read (a damaged database, a value no longer valid) is paused and
/// logged, not allowed to stop every other schedule from firing.
pub(super) async fn due(db: &Db, mut tx: Option<&mut db::Tx>, now: DateTime<Utc>, limit: i64) -> Result<Vec<DueRow>> {
    let sql = db.dialect(
        "SELECT id, agent_id, kind, expression, timezone, prompt, channel, next_fire, lineage FROM schedules
         WHERE state = 'active' AND next_fire <= $1 ORDER BY next_fire, id LIMIT $2",
        "SELECT id, agent_id, kind, expression, timezone, prompt, channel, next_fire, lineage FROM schedules
         WHERE state = 'active' AND next_fire <= $1 ORDER BY next_fire, id LIMIT $2 FOR UPDATE SKIP LOCKED",
    );
    let query = db::query(sql).bind(db::timestamp(now)).bind(limit);
    let rows = match tx.as_deref_mut() {
        Some(tx) => query.fetch_all(tx).await?,
        None => query.fetch_all(db).await?,
    };
    let mut due = Vec::with_capacity(rows.len());
    for row in &rows {
        match due_row(row) {
            Ok(d) => due.push(d),
            Err(e) => {
                let id: String = row.try_get("id")?;
                tracing::error!(schedule = %id, error = %e.message, "a schedule's stored row cannot be read; it is paused");
                let pause = db::query("UPDATE schedules SET state = 'paused', updated_at = $2 WHERE id = $1")
                    .bind(&id)
                    .bind(db::timestamp(now));
                match tx.as_deref_mut() {
                    Some(tx) => pause.execute(tx).await?,
                    None => pause.execute(db).await?,
                };
            }
        }
    }
    Ok(due)
}

fn due_row(r: &db::Row) -> Result<DueRow> {
    Ok(DueRow {
        id: r.try_get("id")?,
        agent_id: r.try_get("agent_id")?,
        kind: Kind::parse(r.try_get("kind")?)?,
        expression: r.try_get("expression")?,
        timezone: r.try_get("timezone")?,
        prompt: r.try_get("prompt")?,
        channel: r.try_get("channel")?,
        next_fire: r.try_get("next_fire")?,
        lineage: lineage_from(r.try_get("lineage")?),
    })
}

/// One fire to write down: the schedule's next state, and the `running` fire row.
pub(super) struct Taking<'a> {
    pub schedule_id: &'a str,
    /// The `next_fire` it was due at; a schedule changed since is not taken.
    pub due: &'a str,
    pub next: Option<DateTime<Utc>>,
    pub state: State,
    pub missed: i64,
}

/// Writes the fires down in `tx` on PostgreSQL: one statement for the whole batch (the
/// schedules updated, each only if still active and due at the same time, and a fire row for
/// each taken), so a burst costs a round trip per batch rather than two per fire. The fire
/// row id of each taken one (`None`: paused or changed since).
pub(super) async fn take_fires_postgres(
    tx: &mut db::Tx,
    daemon: &str,
    fired_at: &str,
    fires: &[Taking<'_>],
) -> Result<Vec<Option<i64>>> {
    if fires.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = db::QueryBuilder::new("WITH v(id, due, next, state, missed) AS (");
    q.push_values(fires, |mut row, f| {
        row.push_bind(f.schedule_id)
            .push_bind(f.due)
            .push_bind(f.next.map(db::timestamp))
            .push_bind(f.state.as_str())
            .push_bind(f.missed);
    });
    q.push("), taken AS (UPDATE schedules s SET next_fire = v.next, state = v.state, updated_at = ");
    q.push_bind(fired_at);
    q.push(
        " FROM v WHERE s.id = v.id AND s.state = 'active' AND s.next_fire = v.due RETURNING s.id, v.due, v.missed)
         INSERT INTO schedule_fires (schedule_id, due_at, fired_at, outcome, missed_slots, daemon_id) SELECT id, due, ",
    );
    q.push_bind(fired_at);
    q.push(", 'running', missed, ");
    q.push_bind(daemon);
    q.push(" FROM taken RETURNING id, schedule_id");
    let rows = q.build().fetch_all(&mut *tx).await?;
    let mut taken = std::collections::HashMap::with_capacity(rows.len());
    for row in &rows {
        taken.insert(row.try_get::<String, _>("schedule_id")?, row.try_get::<i64, _>("id")?);
    }
    Ok(fires.iter().map(|f| taken.get(f.schedule_id).copied()).collect())
}

/// Writes the fires down in `tx`, as `daemon`'s; the caller commits. Each is guarded on the
/// `next_fire` it was read at: one paused or taken since is passed over (`None`).
pub(super) async fn take_fires(
    tx: &mut db::Tx,
    daemon: &str,
    fired_at: &str,
    fires: &[Taking<'_>],
) -> Result<Vec<Option<i64>>> {
    let mut ids = Vec::with_capacity(fires.len());
    for f in fires {
        let taken = db::query(
            "UPDATE schedules SET next_fire = $1, state = $2, updated_at = $3
             WHERE id = $4 AND state = 'active' AND next_fire = $5",
        )
        .bind(f.next.map(db::timestamp))
        .bind(f.state.as_str())
        .bind(fired_at)
        .bind(f.schedule_id)
        .bind(f.due)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if taken == 0 {
            ids.push(None);
            continue;
        }
        let fire_id: i64 = db::query_scalar(
            "INSERT INTO schedule_fires (schedule_id, due_at, fired_at, outcome, missed_slots, daemon_id)
             VALUES ($1, $2, $3, 'running', $4, $5) RETURNING id",
        )
        .bind(f.schedule_id)
        .bind(f.due)
        .bind(fired_at)
        .bind(f.missed)
        .bind(daemon)
        .fetch_one(&mut *tx)
        .await?;
        ids.push(Some(fire_id));
    }
    Ok(ids)
}

/// What taking an operator's fire found.
pub(super) enum ManualFire {
    /// The schedule as a fire reads it, and its new `running` fire row.
    Taken(Box<DueRow>, i64),
    /// A fire of the schedule is running: none is added.
    Running,
    Gone,
}

/// A fire an operator asked for outside the schedule's times ("run now"): the schedule as a
/// fire reads it, and its `running` fire row (due now, nothing missed), in one transaction
/// that first makes sure no fire of the schedule is running.
pub(super) async fn take_manual_fire(db: &Db, id: &str, daemon: &str, at: &str) -> Result<ManualFire> {
    let mut tx = db.begin_write().await?;
    let row = db::query(
        "SELECT id, agent_id, kind, expression, timezone, prompt, channel, $2 AS next_fire, lineage FROM schedules
         WHERE id = $1",
    )
    .bind(id)
    .bind(at)
    .fetch_optional(&mut tx)
    .await?;
    let Some(row) = row.as_ref().map(due_row).transpose()? else { return Ok(ManualFire::Gone) };
    let running: i64 =
        db::query_scalar("SELECT count(*) FROM schedule_fires WHERE schedule_id = $1 AND outcome = 'running'")
            .bind(id)
            .fetch_one(&mut tx)
            .await?;
    if running > 0 {
        return Ok(ManualFire::Running);
    }
    let fire_id: i64 = db::query_scalar(
        "INSERT INTO schedule_fires (schedule_id, due_at, fired_at, outcome, missed_slots, daemon_id)
         VALUES ($1, $2, $2, 'running', 0, $3) RETURNING id",
    )
    .bind(id)
    .bind(at)
    .bind(daemon)
    .fetch_one(&mut tx)
    .await?;
    tx.commit().await?;
    Ok(ManualFire::Taken(Box::new(row), fire_id))
}

/// The earliest `next_fire` of any active schedule, as stored.
pub(super) async fn earliest(db: &Db) -> Result<Option<String>> {
    Ok(db::query_scalar("SELECT min(next_fire) FROM schedules WHERE state = 'active'").fetch_one(db).await?)
}

/// How a fire ended.
pub(super) struct Finished<'a> {
    pub fire_id: i64,
    pub schedule_id: &'a str,
    pub outcome: FireOutcome,
    pub detail: &'a str,
    pub session: Option<Uuid>,
    pub duration_ms: i64,
    pub at: DateTime<Utc>,
}

/// Records how a fire ended and drops the schedule's fires beyond the newest `keep`.
pub(super) async fn finish_fire(db: &Db, f: Finished<'_>, keep: u64) -> Result<()> {
    db::query(
        "UPDATE schedule_fires SET outcome = $1, detail = $2, session_id = $3, duration_ms = $4, finished_at = $5 WHERE id = $6",
    )
    .bind(f.outcome.as_str())
    .bind(f.detail)
    .bind(f.session.map(|s| s.to_string()))
    .bind(f.duration_ms)
    .bind(db::timestamp(f.at))
    .bind(f.fire_id)
    .execute(db)
    .await?;
    db::query(
        "DELETE FROM schedule_fires WHERE schedule_id = $1 AND id <
            (SELECT id FROM schedule_fires WHERE schedule_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)",
    )
    .bind(f.schedule_id)
    .bind(keep as i64 - 1)
    .execute(db)
    .await?;
    Ok(())
}

/// Marks fires left `running` (by a daemon that stopped mid-turn) `interrupted`.
pub(super) async fn mark_interrupted(db: &Db, daemon: &str, at: DateTime<Utc>) -> Result<u64> {
    let done = db::query(
        "UPDATE schedule_fires SET outcome = 'interrupted', detail = 'the daemon stopped during this fire',
             finished_at = $1 WHERE outcome = 'running' AND (daemon_id = $2 OR daemon_id IS NULL)",
    )
    .bind(db::timestamp(at))
    .bind(daemon)
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

fn schedule_from(row: &db::Row) -> Result<Schedule> {
    let id: String = row.try_get("id")?;
    Ok(Schedule {
        id: Uuid::parse_str(&id)
            .map_err(|e| Error::internal(format_args!("stored schedule id `{id}` is unreadable: {e}")))?,
        agent_id: row.try_get("agent_id")?,
        kind: Kind::parse(row.try_get("kind")?)?,
        origin: Origin::parse(row.try_get("origin")?)?,
        expression: row.try_get("expression")?,
        timezone: row.try_get("timezone")?,
        run_at: row.try_get("run_at")?,
        prompt: row.try_get("prompt")?,
        channel: row.try_get("channel")?,
        state: State::parse(row.try_get("state")?)?,
        next_fire: row.try_get("next_fire")?,
        created_by: row.try_get("created_by")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        last_fire: fire_from(row)?,
    })
}

/// The `f_`-prefixed fire columns of a row, if it has a fire.
fn fire_from(row: &db::Row) -> Result<Option<Fire>> {
    let Some(id) = row.try_get("f_id")? else { return Ok(None) };
    Ok(Some(Fire {
        id,
        due_at: row.try_get("f_due_at")?,
        fired_at: row.try_get("f_fired_at")?,
        finished_at: row.try_get("f_finished_at")?,
        outcome: FireOutcome::parse(row.try_get("f_outcome")?)?,
        detail: row.try_get("f_detail")?,
        session_id: row.try_get("f_session_id")?,
        duration_ms: row.try_get("f_duration_ms")?,
        missed_slots: row.try_get("f_missed_slots")?,
    }))
}

/// Fires that failed since `since` (RFC 3339), over every schedule.
pub(super) async fn failed_fires_since(db: &Db, since: &str) -> Result<u64> {
    let n: i64 = db::query_scalar("SELECT count(*) FROM schedule_fires WHERE outcome = 'failed' AND fired_at >= $1")
        .bind(since)
        .fetch_one(db)
        .await?;
    Ok(n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A due row that cannot be read is paused; the others are still taken.
    #[tokio::test]
    async fn one_unreadable_due_row_is_paused_and_the_others_fire() {
        let dir = tempfile::tempdir().unwrap();
        let db = db::open_for_test(dir.path()).await;
        let (agent, at) = ("01930000-0000-7000-8000-0000000000aa", "2026-12-01T00:00:00.000Z");
        db::query(
            "INSERT INTO agents (id, name, agent_type, manifest, status, created_at, updated_at)
             VALUES ($1, 'a', 't', '{}', 'running', $2, $2)",
        )
        .bind(agent)
        .bind(at)
        .execute(&db)
        .await
        .unwrap();
        for (id, kind) in
            [("01930000-0000-7000-8000-000000000001", "cron?"), ("01930000-0000-7000-8000-000000000002", "once")]
        {
            db::query(
                "INSERT INTO schedules (id, agent_id, kind, origin, run_at, prompt, state, next_fire, created_by, created_at, updated_at)
                 VALUES ($1, $2, $3, 'runtime', $4, 'p', 'active', $4, 'test', $4, $4)",
            )
            .bind(id)
            .bind(agent)
            .bind(kind)
            .bind(at)
            .execute(&db)
            .await
            .unwrap();
        }
        let now = chrono::Utc::now();
        let taken = due(&db, None, now, 10).await.expect("the readable rows");
        assert_eq!(taken.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(), ["01930000-0000-7000-8000-000000000002"]);
        let state: String = db::query_scalar("SELECT state FROM schedules WHERE id = $1")
            .bind("01930000-0000-7000-8000-000000000001")
            .fetch_one(&db)
            .await
            .unwrap();
        assert_eq!(state, "paused");
    }

    /// SQLite's plan for an agent's schedules: the `(agent_id, id)` index, not a scan of every
    /// schedule (which an `$N IS NULL OR` filter forces).
    #[tokio::test]
    async fn an_agent_filter_uses_its_index() {
        let dir = tempfile::tempdir().unwrap();
        let db = db::open_for_test(dir.path()).await;
        if db.dialect("sqlite", "postgres") == "postgres" {
            return;
        }
        let q = Query { agent_id: Some("01930000-0000-7000-8000-000000000000"), kind: None, state: None };
        let mut query = db::QueryBuilder::new(format!("EXPLAIN QUERY PLAN {SELECT}"));
        push_filter(&mut query, &q, None);
        query.push(" ORDER BY s.id LIMIT ").push_bind(50i64);
        let plan: Vec<String> =
            query.build().fetch_all(&db).await.unwrap().iter().map(|r| r.try_get("detail").unwrap()).collect();
        assert!(plan.iter().any(|step| step.contains("USING INDEX schedules_by_agent")), "{plan:?}");
    }
}
