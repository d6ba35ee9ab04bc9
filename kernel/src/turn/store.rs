//! SQL for turns (open while they run), the model calls each made, and the context windows
//! learned from providers.

use sqlx::Row;
use uuid::Uuid;

use crate::db::{self, Db};
use crate::error::{Error, Result};

pub(super) async fn start_turn(db: &Db, turn: Uuid, agent: Uuid, session: Uuid) -> Result<()> {
    sqlx::query("INSERT INTO turns (id, agent_id, session_id, started_at) VALUES ($1, $2, $3, $4)")
        .bind(turn.to_string())
        .bind(agent.to_string())
        .bind(session.to_string())
        .bind(db::now())
        .execute(db.pool())
        .await?;
    Ok(())
}

pub(super) async fn end_turn(db: &Db, turn: Uuid, ended: &str) -> Result<()> {
    sqlx::query("UPDATE turns SET ended_at = $2, ended = $3 WHERE id = $1")
        .bind(turn.to_string())
        .bind(db::now())
        .bind(ended)
        .execute(db.pool())
        .await?;
    Ok(())
}

/// Every turn still open: (turn, session), oldest first.
pub(super) async fn open_turns(db: &Db) -> Result<Vec<(Uuid, Uuid)>> {
    let rows = sqlx::query("SELECT id, session_id FROM turns WHERE ended_at IS NULL ORDER BY started_at, id")
        .fetch_all(db.pool())
        .await?;
    let id = |s: String| {
        Uuid::parse_str(&s).map_err(|e| Error::internal(format_args!("stored id `{s}` is unreadable: {e}")))
    };
    rows.iter().map(|r| Ok((id(r.try_get("id")?)?, id(r.try_get("session_id")?)?))).collect()
}

/// One model call, as the meter and the record of what was sent keep it.
pub(super) struct ModelCallRow<'a> {
    pub turn: Uuid,
    pub agent: Uuid,
    pub session: Uuid,
    pub provider: &'a str,
    pub model: &'a str,
    pub purpose: &'static str,
    pub compaction: Option<i64>,
    pub first_seq: Option<i64>,
    pub messages: usize,
    pub estimated_tokens: u64,
    pub usage: &'a crate::llm::Usage,
    pub outcome: &'a str,
}

pub(super) async fn record_model_call(db: &Db, c: &ModelCallRow<'_>) -> Result<()> {
    sqlx::query(
        "INSERT INTO model_calls (turn_id, agent_id, session_id, provider, model, purpose, compaction_id, first_seq,
             messages, estimated_tokens, input_tokens, output_tokens, cached_tokens, outcome, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
    )
    .bind(c.turn.to_string())
    .bind(c.agent.to_string())
    .bind(c.session.to_string())
    .bind(c.provider)
    .bind(c.model)
    .bind(c.purpose)
    .bind(c.compaction)
    .bind(c.first_seq)
    .bind(c.messages as i64)
    .bind(c.estimated_tokens as i64)
    .bind(c.usage.input_tokens as i64)
    .bind(c.usage.output_tokens as i64)
    .bind(c.usage.cached_tokens as i64)
    .bind(c.outcome)
    .bind(db::now())
    .execute(db.pool())
    .await?;
    Ok(())
}

pub(super) async fn learned_windows(db: &Db) -> Result<Vec<((String, String), u64)>> {
    let rows = sqlx::query("SELECT provider, model, tokens FROM model_windows").fetch_all(db.pool()).await?;
    rows.iter()
        .map(|r| {
            let tokens: i64 = r.try_get("tokens")?;
            Ok(((r.try_get("provider")?, r.try_get("model")?), tokens.max(0) as u64))
        })
        .collect()
}

pub(super) async fn learn_window(db: &Db, provider: &str, model: &str, tokens: u64) -> Result<()> {
    sqlx::query(
        "INSERT INTO model_windows (provider, model, tokens, learned_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (provider, model) DO UPDATE SET tokens = $3, learned_at = $4",
    )
    .bind(provider)
    .bind(model)
    .bind(tokens as i64)
    .bind(db::now())
    .execute(db.pool())
    .await?;
    Ok(())
}
