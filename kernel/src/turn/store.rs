//! SQL for turns (open while they run), the model calls each made, and the context windows
//! learned from providers.

use uuid::Uuid;

use crate::db::{self, Db};
use crate::error::{Error, Result};

pub(super) async fn start_turn(db: &Db, turn: Uuid, agent: Uuid, session: Uuid, daemon: &str) -> Result<()> {
    db::query("INSERT INTO turns (id, agent_id, session_id, started_at, daemon_id) VALUES ($1, $2, $3, $4, $5)")
        .bind(turn.to_string())
        .bind(agent.to_string())
        .bind(session.to_string())
        .bind(db::now())
        .bind(daemon)
        .execute(db)
        .await?;
    Ok(())
}

pub(super) async fn end_turn(db: &Db, turn: Uuid, ended: &str) -> Result<()> {
    db::query("UPDATE turns SET ended_at = $2, ended = $3 WHERE id = $1")
        .bind(turn.to_string())
        .bind(db::now())
        .bind(ended)
        .execute(db)
        .await?;
    Ok(())
}

/// The turns `daemon` left open (and those of no daemon, from before clusters): (turn,
/// session), oldest first.
pub(super) async fn open_turns_of(db: &Db, daemon: &str) -> Result<Vec<(Uuid, Uuid)>> {
    let rows = db::query(
        "SELECT id, session_id FROM turns WHERE ended_at IS NULL AND (daemon_id = $1 OR daemon_id IS NULL)
         ORDER BY started_at, id",
    )
    .bind(daemon)
    .fetch_all(db)
    .await?;
    let id = |s: String| {
        Uuid::parse_str(&s).map_err(|e| Error::internal(format_args!("stored id `{s}` is unreadable: {e}")))
    };
    rows.iter().map(|r| Ok((id(r.try_get("id")?)?, id(r.try_get("session_id")?)?))).collect()
}

pub(super) async fn learned_windows(db: &Db) -> Result<Vec<((String, String), u64)>> {
    let rows = db::query("SELECT provider, model, tokens FROM model_windows").fetch_all(db).await?;
    rows.iter()
        .map(|r| {
            let tokens: i64 = r.try_get("tokens")?;
            Ok(((r.try_get("provider")?, r.try_get("model")?), tokens.max(0) as u64))
        })
        .collect()
}

pub(super) async fn learn_window(db: &Db, provider: &str, model: &str, tokens: u64) -> Result<()> {
    db::query(
        "INSERT INTO model_windows (provider, model, tokens, learned_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (provider, model) DO UPDATE SET tokens = $3, learned_at = $4",
    )
    .bind(provider)
    .bind(model)
    .bind(tokens as i64)
    .bind(db::now())
    .execute(db)
    .await?;
    Ok(())
}

/// Turns started per UTC hour since `since` (`YYYY-MM-DDTHH`), oldest first.
pub(super) async fn turns_per_hour(db: &Db, since: &str) -> Result<Vec<(String, u64)>> {
    let rows = db::query(
        "SELECT substr(started_at, 1, 13) AS hour, count(*) AS turns FROM turns
         WHERE started_at >= $1 GROUP BY substr(started_at, 1, 13) ORDER BY hour",
    )
    .bind(since)
    .fetch_all(db)
    .await?;
    rows.iter().map(|r| Ok((r.try_get("hour")?, r.try_get::<i64, _>("turns")?.max(0) as u64))).collect()
}
