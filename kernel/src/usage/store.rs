//! SQL for the meter: `model_calls` (created by migration 0019 with the turn's other records).

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
}

impl Sum {
    pub fn tokens(&self) -> super::Tokens {
        super::Tokens {
            input_tokens: self.input,
            output_tokens: self.output,
            cached_tokens: self.cached,
            cache_write_tokens: self.cache_write,
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
                 created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
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
        .execute(&mut tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// The sums cast back to integers: PostgreSQL sums `BIGINT`s into a `NUMERIC`.
const SUMS: &str = "count(*) AS calls, CAST(COALESCE(sum(input_tokens), 0) AS BIGINT) AS input,
     CAST(COALESCE(sum(cached_tokens), 0) AS BIGINT) AS cached,
     CAST(COALESCE(sum(cache_write_tokens), 0) AS BIGINT) AS cache_write,
     CAST(COALESCE(sum(output_tokens), 0) AS BIGINT) AS output";

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
        "SELECT {key} AS key, provider, model, {SUMS} FROM model_calls
         WHERE ($1 IS NULL OR created_at >= $1) GROUP BY {key}, provider, model"
    )))
    .bind(since)
    .fetch_all(db)
    .await?;
    rows.iter().map(sum_from).collect()
}

/// Sums by provider and model of `agent`'s calls (every agent's with `None`) since `since`.
pub(super) async fn sums_of(db: &Db, agent: Option<Uuid>, since: &str) -> Result<Vec<Sum>> {
    let rows = db::query(sqlx::AssertSqlSafe(format!(
        "SELECT '' AS key, provider, model, {SUMS} FROM model_calls
         WHERE ($1 IS NULL OR agent_id = $1) AND created_at >= $2 GROUP BY provider, model"
    )))
    .bind(agent.map(|a| a.to_string()))
    .bind(since)
    .fetch_all(db)
    .await?;
    rows.iter().map(sum_from).collect()
}

/// Sums by session (key: `SESSION AGENT`), provider and model, since `since`.
pub(super) async fn session_sums(db: &Db, since: Option<&str>) -> Result<Vec<Sum>> {
    let rows = db::query(sqlx::AssertSqlSafe(format!(
        "SELECT session_id || ' ' || agent_id AS key, provider, model, {SUMS} FROM model_calls
         WHERE ($1 IS NULL OR created_at >= $1) GROUP BY session_id, agent_id, provider, model"
    )))
    .bind(since)
    .fetch_all(db)
    .await?;
    rows.iter().map(sum_from).collect()
}

/// Sums by UTC day (key), provider and model since `since`: one scan for both the per-day and
/// the per-model report.
pub(super) async fn day_sums(db: &Db, since: &str) -> Result<Vec<Sum>> {
    sums(db, Group::Day, Some(since)).await
}
