//! SQL for the event bus: each trigger's fire count and last fire, which its limits read.

use chrono::Utc;
use uuid::Uuid;

use crate::db::{self, Db};
use crate::error::Result;

/// Records a fire if the trigger's limits allow it; otherwise says why not. The check and the
/// record are one statement, so two events published at once cannot both take a trigger's
/// last allowed fire.
pub(super) async fn claim_fire(
    db: &Db,
    agent: Uuid,
    key: &str,
    cooldown_secs: Option<u64>,
    max_fires: Option<u64>,
) -> Result<Option<String>> {
    if max_fires == Some(0) {
        return Ok(Some("max_fires = 0".into()));
    }
    let now = Utc::now();
    // Validated manifests bound both limits; stored ones from before that are clamped.
    let cooled_since = cooldown_secs.map(|c| {
        let cooldown =
            chrono::Duration::try_seconds(c.min(i64::MAX as u64 / 1000) as i64).unwrap_or(chrono::Duration::MAX);
        db::timestamp(now.checked_sub_signed(cooldown).unwrap_or(chrono::DateTime::<Utc>::MIN_UTC))
    });
    // The row's columns are named with the table: PostgreSQL refuses a bare `fires` in an
    // upsert's update as ambiguous (the row's, or the `excluded` row's).
    let fired = db::query(
        "INSERT INTO trigger_state (agent_id, trigger_key, fires, last_fired) VALUES ($1, $2, 1, $3)
         ON CONFLICT (agent_id, trigger_key) DO UPDATE SET fires = trigger_state.fires + 1, last_fired = $3
         WHERE ($4 IS NULL OR trigger_state.fires < $4) AND ($5 IS NULL OR trigger_state.last_fired <= $5)",
    )
    .bind(agent.to_string())
    .bind(key)
    .bind(db::timestamp(now))
    .bind(max_fires.map(|m| m.min(i64::MAX as u64) as i64))
    .bind(cooled_since)
    .execute(db)
    .await?
    .rows_affected()
        == 1;
    if fired {
        return Ok(None);
    }
    let row = db::query("SELECT fires, last_fired FROM trigger_state WHERE agent_id = $1 AND trigger_key = $2")
        .bind(agent.to_string())
        .bind(key)
        .fetch_one(db)
        .await?;
    let fires: i64 = row.try_get("fires")?;
    if let Some(max) = max_fires
        && fires as u64 >= max
    {
        return Ok(Some(format!("max_fires = {max} reached")));
    }
    let last =
        chrono::DateTime::parse_from_rfc3339(row.try_get("last_fired")?).map(|t| t.with_timezone(&Utc)).unwrap_or(now);
    let cooldown = cooldown_secs.unwrap_or_default();
    let left_ms = cooldown.saturating_mul(1000).saturating_sub((now - last).num_milliseconds().max(0) as u64);
    Ok(Some(format!("cooling down: {} s of cooldown_secs = {cooldown} left", left_ms.div_ceil(1000).max(1))))
}
