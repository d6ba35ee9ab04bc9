//! SQL for the retention sweep.

use chrono::{DateTime, Utc};

use super::RetentionConfig;
use super::{Swept, cutoff};
use crate::db::{self, Db};
use crate::error::Result;

/// Rows one delete removes at most; the sweep repeats it until fewer go.
const BATCH: i64 = 1000;

/// The database's part of a sweep.
pub(super) async fn sweep(db: &Db, config: &RetentionConfig, now: DateTime<Utc>) -> Result<Swept> {
    let mut swept = Swept::default();
    let old = |days| cutoff(now, days).map(db::timestamp);
    if let Some(before) = old(config.processes_days) {
        swept.processes = delete(db, "processes", "ended_at < $1", &before).await?;
    }
    if let Some(before) = old(config.canvas_versions_days) {
        // An agent's latest version stays, however old.
        let older = "created_at < $1 AND version < (SELECT MAX(c.version) FROM canvases c WHERE c.agent_id = canvases.agent_id)";
        swept.canvas_versions = delete(db, "canvases", older, &before).await?;
    }
    if let Some(before) = old(config.channel_traffic_days) {
        swept.channel_inbound =
            delete(db, "channel_inbound", "received_at < $1 AND state <> 'pending'", &before).await?;
        swept.channel_outbound = delete(db, "channel_outbound", "at < $1", &before).await?;
    }
    if let Some(before) = old(config.media_jobs_days) {
        let finished = "updated_at < $1 AND status IN ('succeeded', 'failed', 'canceled')";
        swept.media_jobs = delete(db, "media_jobs", finished, &before).await?;
    }
    if let Some(before) = old(config.a2a_tasks_days) {
        let finished = "updated_at < $1 AND state IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED')";
        swept.a2a_tasks = delete(db, "a2a_tasks", finished, &before).await?;
    }
    if let Some(before) = old(config.model_calls_days) {
        swept.model_calls = crate::usage::roll_up(db, &before).await?;
    }
    if let Some(before) = old(config.audit_days) {
        swept.audit = delete(db, "audit", "at < $1", &before).await?;
    }
    Ok(swept)
}

/// Deletes `table`'s rows where `condition` (`$1` the cutoff) holds, [`BATCH`] at a time (by
/// SQLite's `rowid`, PostgreSQL's `ctid`). How many went.
async fn delete(db: &Db, table: &str, condition: &str, before: &str) -> Result<u64> {
    let row = db.dialect("rowid", "ctid");
    let sql = format!("DELETE FROM {table} WHERE {row} IN (SELECT {row} FROM {table} WHERE {condition} LIMIT {BATCH})");
    let mut total = 0;
    loop {
        let done = db::query(sqlx::AssertSqlSafe(sql.clone())).bind(before).execute(db).await?.rows_affected();
        total += done;
        if done < BATCH as u64 {
            return Ok(total);
        }
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(db: &Db, sql: &str, binds: &[&str]) {
        let mut query = db::query(sqlx::AssertSqlSafe(sql.to_string()));
        for b in binds {
            query = query.bind(*b);
        }
        query.execute(db).await.unwrap();
    }

    async fn count(db: &Db, table: &str) -> i64 {
        db::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}"))).fetch_one(db).await.unwrap()
    }

    /// With the clock moved past each retention, the sweep takes what is finished and old,
    /// and leaves what is recent or still in use; the audit log stays unless set.
    #[tokio::test]
    async fn the_sweep_takes_what_is_finished_and_old_and_leaves_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::db::open_for_test(dir.path()).await;
        let (old, recent) = ("2026-01-01T00:00:00.000Z", "2026-05-01T00:00:00.000Z");
        let agent = "01930000-0000-7000-8000-0000000000aa";
        run(&db, "INSERT INTO agents (id, name, agent_type, manifest, status, created_at, updated_at) VALUES ($1, 'a', 't', '{}', 'running', $2, $2)", &[agent, old]).await;
        let process = "INSERT INTO processes (agent_id, run_id, command, cwd, pgid, start_ticks, boot_id, marker, owner_pid, owner_ticks, started_at, ended_at)
                       VALUES ($1, $2, 'sleep 1', '.', 1, 1, 'b', 'm', 1, 1, $3, $4)";
        run(&db, process, &[agent, "r1", old, old]).await; // ended long ago: swept
        run(&db, process, &[agent, "r2", old, recent]).await; // ended lately: kept
        run(&db, &process.replace(", ended_at)", ")").replace(", $4)", ")"), &[agent, "r3", old]).await; // running: kept
        for version in 1..=3 {
            let canvas = format!(
                "INSERT INTO canvases (agent_id, version, title, html, bytes, created_at) VALUES ($1, {version}, 't', 'h', 1, $2)"
            );
            run(&db, &canvas, &[agent, old]).await;
        }
        let inbound = "INSERT INTO channel_inbound (channel, message_id, chat_id, is_group, user_id, display_name, text, received_at, state)
                       VALUES ('c', $1, 'chat', 0, 'u', 'U', 'hi', $2, $3)";
        run(&db, inbound, &["m1", old, "answered"]).await;
        run(&db, inbound, &["m2", old, "pending"]).await;
        run(&db, inbound, &["m3", recent, "failed"]).await;
        let outbound = "INSERT INTO channel_outbound (channel, chat_id, kind, summary, sent_by, at, outcome) VALUES ('c', 'chat', 'text', 's', 'reply', $1, 'ok')";
        run(&db, outbound, &[old]).await;
        run(&db, outbound, &[recent]).await;
        let job = "INSERT INTO media_jobs (id, agent_id, tool, provider, prediction_id, status, created_at, updated_at) VALUES ($1, $2, 'video_generate', 'p', 'x', $3, $4, $4)";
        run(&db, job, &["j1", agent, "succeeded", old]).await;
        run(&db, job, &["j2", agent, "processing", old]).await;
        let task = "INSERT INTO a2a_tasks (id, agent_id, context_id, state, request, created_at, updated_at) VALUES ($1, $2, 'ctx', $3, '{}', $4, $4)";
        run(&db, task, &["t1", agent, "TASK_STATE_COMPLETED", old]).await;
        run(&db, task, &["t2", agent, "TASK_STATE_WORKING", old]).await;
        let audit = "INSERT INTO audit (at, agent_id, caller, tool, args_digest, outcome, duration_us) VALUES ($1, $2, 'agent', 'read_file', 'x', 'ok', 1)";
        run(&db, audit, &[old, agent]).await;
        let call = "INSERT INTO model_calls (turn_id, agent_id, session_id, provider, model, purpose, messages, estimated_tokens,
                        input_tokens, output_tokens, cached_tokens, cache_write_tokens, outcome, created_at)
                    VALUES ('t', $1, 's', 'p', 'm', 'reply', 1, 1, 10, 1, 0, 0, 'ok', $2)";
        run(&db, call, &[agent, old]).await;
        run(&db, call, &[agent, old]).await;
        run(&db, call, &[agent, recent]).await;

        // The clock moved to ten days after `recent`: past 30 and 90 days of `old`.
        let now = DateTime::parse_from_rfc3339("2026-05-11T00:00:00Z").unwrap().to_utc();
        let swept = sweep(&db, &RetentionConfig::default(), now).await.unwrap();
        let expected = Swept {
            processes: 1,
            canvas_versions: 2,
            channel_inbound: 1,
            channel_outbound: 1,
            media_jobs: 1,
            a2a_tasks: 1,
            model_calls: 2,
            ..Swept::default()
        };
        assert_eq!(swept, expected);
        assert_eq!(count(&db, "processes").await, 2, "the running and the recent stay");
        let latest: i64 = db::query_scalar("SELECT version FROM canvases").fetch_one(&db).await.unwrap();
        assert_eq!(latest, 3, "an agent's latest canvas stays, however old");
        assert_eq!(count(&db, "channel_inbound").await, 2, "the pending and the recent stay");
        assert_eq!((count(&db, "media_jobs").await, count(&db, "a2a_tasks").await), (1, 1), "unfinished work stays");
        assert_eq!(count(&db, "audit").await, 1, "the audit log is kept unless set");
        assert_eq!((count(&db, "model_calls").await, count(&db, "usage_days").await), (1, 1), "old calls became a day");

        let keep_less = RetentionConfig { audit_days: 30, ..RetentionConfig::default() };
        assert_eq!(sweep(&db, &keep_less, now).await.unwrap(), Swept { audit: 1, ..Swept::default() });
        let none = RetentionConfig { processes_days: 0, ..RetentionConfig::default() };
        let far = now + chrono::Duration::days(3650);
        assert_eq!(sweep(&db, &none, far).await.unwrap().processes, 0, "0 keeps for ever");
    }
}
