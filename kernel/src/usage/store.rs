//! SQL for the meter: `model_calls` (created by migration 0019 with the turn's other records),
//! and `usage_days` (0037), the calls past `[retention] model_calls_days` rolled up by day.

use uuid::Uuid;

use super::{Group, ModelCall};
use crate::db::{self, Db};
use crate::error::Result;

/// Calls summed by a group key and their provider and model (prices are per model).
pub(super) struct Sum {
    pub key: String,
    pub provider: String,
    pub model: String,
    pub calls: u64,
    pub input: u64,
    pub cached: u64,
    pub cache_write: u64,
    pub output: u64,
    /// Calls whose tokens are Kennel's estimate (the provider reported none).
    pub estimated: u64,
}

impl Sum {
    pub fn tokens(&self) -> super::Tokens {
        super::Tokens {
            input_tokens: self.input,
            output_tokens: self.output,
            cached_tokens: self.cached,
            cache_write_tokens: self.cache_write,
            estimated: false,
        }
    }
}

/// Writes the calls in one transaction.
pub(super) async fn insert(db: &Db, calls: &[ModelCall]) -> Result<()> {
    let mut tx = db.begin().await?;
    for c in calls {
        db::query(
            "INSERT INTO model_calls (turn_id, agent_id, session_id, provider, model, purpose, compaction_id, first_seq,
                 messages, estimated_tokens, input_tokens, output_tokens, cached_tokens, cache_write_tokens, outcome,
                 created_at, usage_estimated)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
        )
        .bind(c.turn.to_string())
        .bind(c.agent.to_string())
        .bind(c.session.to_string())
        .bind(&c.provider)
        .bind(&c.model)
        .bind(c.purpose)
        .bind(c.compaction)
        .bind(c.first_seq)
        .bind(c.messages as i64)
        .bind(c.estimated_tokens as i64)
        .bind(c.tokens.input_tokens as i64)
        .bind(c.tokens.output_tokens as i64)
        .bind(c.tokens.cached_tokens as i64)
        .bind(c.tokens.cache_write_tokens as i64)
        .bind(&c.outcome)
        .bind(&c.at)
        .bind(i64::from(c.tokens.estimated))
        .execute(&mut tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Every call the sums read: those still a row each, and those rolled up into their day's
/// line (counted as made at the day's start, so a report from mid-way through a rolled-up day
/// counts all of it or none).
const CALLS: &str = "(SELECT agent_id, session_id, provider, model, created_at, 1 AS calls, input_tokens,
         cached_tokens, cache_write_tokens, output_tokens, usage_estimated AS estimated FROM model_calls
     UNION ALL
     SELECT agent_id, session_id, provider, model, day || 'T00:00:00.000Z', calls, input_tokens,
         cached_tokens, cache_write_tokens, output_tokens, estimated_calls FROM usage_days) AS c";

/// Calls rolled up in one transaction at most.
const ROLL_UP_BATCH: i64 = 1000;

/// Adds the calls made before `before` to their days' lines in `usage_days` and deletes
/// their rows, [`ROLL_UP_BATCH`] at a time; how many rows went.
pub(super) async fn roll_up(db: &Db, before: &str) -> Result<u64> {
    let mut total = 0;
    loop {
        // One snapshot for the select, the sums and the delete: a call committed meanwhile is
        // neither deleted uncounted nor counted and kept.
        let mut tx = db.begin_snapshot().await?;
        let ids: Vec<i64> = db::query_scalar("SELECT id FROM model_calls WHERE created_at < $1 ORDER BY id LIMIT $2")
            .bind(before)
            .bind(ROLL_UP_BATCH)
            .fetch_all(&mut tx)
            .await?;
        let Some(&last) = ids.last() else { return Ok(total) };
        // The old calls up to `last` are exactly `ids`: the oldest ids among the old calls.
        db::query(
            "INSERT INTO usage_days (day, agent_id, session_id, provider, model, calls, input_tokens, output_tokens,
                 cached_tokens, cache_write_tokens, estimated_calls)
             SELECT substr(created_at, 1, 10), agent_id, session_id, provider, model, count(*),
                 CAST(sum(input_tokens) AS BIGINT), CAST(sum(output_tokens) AS BIGINT),
                 CAST(sum(cached_tokens) AS BIGINT), CAST(sum(cache_write_tokens) AS BIGINT),
                 CAST(sum(usage_estimated) AS BIGINT)
             FROM model_calls WHERE created_at < $1 AND id <= $2
             GROUP BY substr(created_at, 1, 10), agent_id, session_id, provider, model
             ON CONFLICT (day, agent_id, session_id, provider, model) DO UPDATE SET
                 calls = usage_days.calls + excluded.calls,
                 input_tokens = usage_days.input_tokens + excluded.input_tokens,
                 output_tokens = usage_days.output_tokens + excluded.output_tokens,
                 cached_tokens = usage_days.cached_tokens + excluded.cached_tokens,
                 cache_write_tokens = usage_days.cache_write_tokens + excluded.cache_write_tokens,
                 estimated_calls = usage_days.estimated_calls + excluded.estimated_calls",
        )
        .bind(before)
        .bind(last)
        .execute(&mut tx)
        .await?;
        db::query("DELETE FROM model_calls WHERE created_at < $1 AND id <= $2")
            .bind(before)
            .bind(last)
            .execute(&mut tx)
            .await?;
        tx.commit().await?;
        total += ids.len() as u64;
        if (ids.len() as i64) < ROLL_UP_BATCH {
            return Ok(total);
        }
        tokio::task::yield_now().await;
    }
}

/// The sums cast back to integers: PostgreSQL sums `BIGINT`s into a `NUMERIC`.
const SUMS: &str =
    "CAST(COALESCE(sum(calls), 0) AS BIGINT) AS calls, CAST(COALESCE(sum(input_tokens), 0) AS BIGINT) AS input,
     CAST(COALESCE(sum(cached_tokens), 0) AS BIGINT) AS cached,
     CAST(COALESCE(sum(cache_write_tokens), 0) AS BIGINT) AS cache_write,
     CAST(COALESCE(sum(output_tokens), 0) AS BIGINT) AS output,
     CAST(COALESCE(sum(estimated), 0) AS BIGINT) AS estimated";

fn sum_from(row: &db::Row) -> Result<Sum> {
    let n = |col: &str| -> Result<u64> { Ok(row.try_get::<i64, _>(col)?.max(0) as u64) };
    Ok(Sum {
        key: row.try_get("key")?,
        provider: row.try_get("provider")?,
        model: row.try_get("model")?,
        calls: n("calls")?,
        input: n("input")?,
        cached: n("cached")?,
        cache_write: n("cache_write")?,
        output: n("output")?,
        estimated: n("estimated")?,
    })
}

/// Sums by `group` (and provider and model), of calls at or after `since`.
pub(super) async fn sums(db: &Db, group: Group, since: Option<&str>) -> Result<Vec<Sum>> {
    let key = match group {
        Group::Agent => "agent_id",
        Group::Provider => "provider",
        Group::Model => "provider || ' / ' || model",
        Group::Day => "substr(created_at, 1, 10)",
    };
    let rows = db::query(sqlx::AssertSqlSafe(format!(
        "SELECT {key} AS key, provider, model, {SUMS} FROM {CALLS}
         WHERE created_at >= $1 GROUP BY {key}, provider, model"
    )))
    .bind(since.unwrap_or(""))
    .fetch_all(db)
    .await?;
    rows.iter().map(sum_from).collect()
}

/// Sums by provider and model of `agent`'s calls (every agent's with `None`) since `since`.
pub(super) async fn sums_of(db: &Db, agent: Option<Uuid>, since: &str) -> Result<Vec<Sum>> {
    let of_agent = if agent.is_some() { "agent_id = $2 AND" } else { "" };
    let query = db::query(sqlx::AssertSqlSafe(format!(
        "SELECT '' AS key, provider, model, {SUMS} FROM {CALLS}
         WHERE {of_agent} created_at >= $1 GROUP BY provider, model"
    )))
    .bind(since);
    let query = match agent {
        Some(agent) => query.bind(agent.to_string()),
        None => query,
    };
    let rows = query.fetch_all(db).await?;
    rows.iter().map(sum_from).collect()
}

/// Sums by session (key: `SESSION AGENT`), provider and model, since `since`.
pub(super) async fn session_sums(db: &Db, since: Option<&str>) -> Result<Vec<Sum>> {
    let rows = db::query(sqlx::AssertSqlSafe(format!(
        "SELECT session_id || ' ' || agent_id AS key, provider, model, {SUMS} FROM {CALLS}
         WHERE created_at >= $1 GROUP BY session_id, agent_id, provider, model"
    )))
    .bind(since.unwrap_or(""))
    .fetch_all(db)
    .await?;
    rows.iter().map(sum_from).collect()
}

/// Sums by UTC day (key), provider and model since `since`: one scan for both the per-day and
/// the per-model report.
pub(super) async fn day_sums(db: &Db, since: &str) -> Result<Vec<Sum>> {
    sums(db, Group::Day, Some(since)).await
}
