//! The event bus (spec §7): `event_publish` and `POST /api/events` publish a typed event;
//! every running agent whose manifest has a matching `[[trigger]]` gets a headless turn with
//! the trigger's prompt, subject to its cooldown and fire limit. Fires are audited.

use chrono::Utc;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::Row;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::Kernel;
use crate::agent::Agent;
use crate::capability::glob_match;
use crate::error::{Error, Result};
use crate::tool::audit::AuditEntry;
use crate::tool::{CallContext, Caller, Tool, ToolDef};
use crate::turn::TurnRequest;

/// Where an event came from, so turns it starts stay within the depth budget.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// `api:TOKEN`, `agent:NAME`, …
    pub source: String,
    pub depth: u32,
    pub chain: Vec<Uuid>,
}

/// What publishing did.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Published {
    pub event_type: String,
    /// Agents whose triggers fired (each gets a turn).
    pub fired: Vec<Fire>,
    /// Matching triggers that did not fire, and why.
    pub skipped: Vec<Fire>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Fire {
    pub agent_id: Uuid,
    pub agent: String,
    /// The trigger's event pattern.
    pub trigger: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

const MAX_PAYLOAD: usize = 64 * 1024;

/// Event types: 1–128 of lowercase letters, digits, `.`, `_`, `-` (`inbox.new_file`).
pub fn check_event_type(event_type: &str) -> Result<()> {
    let ok = (1..=128).contains(&event_type.len())
        && event_type.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "`{event_type}` is not an event type: 1-128 lowercase letters, digits, `.`, `_` or `-` (like inbox.new_file)"
        )))
    }
}

/// Publishes an event and fires every matching trigger.
pub async fn publish(kernel: &Kernel, event_type: &str, payload: Value, origin: Origin) -> Result<Published> {
    check_event_type(event_type)?;
    let payload_text = payload.to_string();
    if payload_text.len() > MAX_PAYLOAD {
        return Err(Error::invalid(format!("the payload is over {MAX_PAYLOAD} bytes")));
    }
    let max_depth = kernel.config().kernel.max_agent_call_depth;
    let mut published = Published { event_type: event_type.to_string(), fired: Vec::new(), skipped: Vec::new() };
    for agent in kernel.agents().list().into_iter().filter(|a| a.is_running()) {
        for (index, trigger) in agent.manifest.trigger.iter().enumerate() {
            if !glob_match(trigger.event.as_bytes(), event_type.as_bytes()) {
                continue;
            }
            let mut fire =
                Fire { agent_id: agent.id, agent: agent.name.clone(), trigger: trigger.event.clone(), reason: None };
            let key = format!("{index}:{}", trigger.event);
            let skip = if u64::from(origin.depth) + 1 > max_depth {
                Some(format!(
                    "the event came {} agent calls deep, at [kernel] max_agent_call_depth = {max_depth}",
                    origin.depth
                ))
            } else {
                claim_fire(kernel, &agent, &key, trigger.cooldown_secs, trigger.max_fires).await?
            };
            if let Some(reason) = skip {
                fire.reason = Some(reason);
                published.skipped.push(fire);
                continue;
            }
            let prompt = trigger.prompt.replace("{{payload}}", &payload_text).replace("{{event_type}}", event_type);
            kernel.audit().record(AuditEntry {
                agent_id: agent.id,
                session_id: None,
                caller: format!("event:{}", origin.source),
                tool: "trigger".into(),
                args_digest: crate::tool::pipeline::args_digest(&payload),
                outcome: "ok",
                message: Some(format!("`{event_type}` fired trigger `{}`", trigger.event)),
                duration_us: 0,
                artifact_id: None,
            });
            let req = TurnRequest {
                depth: origin.depth + 1,
                chain: origin.chain.clone(),
                ..TurnRequest::headless(prompt, Caller::Trigger(event_type.to_string()))
            };
            let (kernel, agent) = (kernel.clone(), agent.clone());
            tokio::spawn(async move {
                if let Err(e) = crate::turn::run(&kernel, agent.clone(), req).await {
                    tracing::warn!(agent = %agent.name, error = %e.message, "a triggered turn failed");
                }
            });
            published.fired.push(fire);
        }
    }
    if !published.fired.is_empty() {
        // A fire changes state (a turn starts): its audit row is written before anyone is
        // answered, like a state-changing tool call's.
        kernel.audit().flush().await;
    }
    Ok(published)
}

/// Records a fire if the trigger's limits allow it; otherwise says why not. The check and the
/// record are one statement, so two events published at once cannot both take a trigger's
/// last allowed fire.
async fn claim_fire(
    kernel: &Kernel,
    agent: &Agent,
    key: &str,
    cooldown_secs: Option<u64>,
    max_fires: Option<u64>,
) -> Result<Option<String>> {
    if max_fires == Some(0) {
        return Ok(Some("max_fires = 0".into()));
    }
    let db = kernel.db();
    let now = Utc::now();
    // Validated manifests bound both limits; stored ones from before that are clamped.
    let cooled_since = cooldown_secs.map(|c| {
        let cooldown =
            chrono::Duration::try_seconds(c.min(i64::MAX as u64 / 1000) as i64).unwrap_or(chrono::Duration::MAX);
        crate::db::timestamp(now.checked_sub_signed(cooldown).unwrap_or(chrono::DateTime::<Utc>::MIN_UTC))
    });
    let fired = sqlx::query(
        "INSERT INTO trigger_state (agent_id, trigger_key, fires, last_fired) VALUES (?1, ?2, 1, ?3)
         ON CONFLICT (agent_id, trigger_key) DO UPDATE SET fires = fires + 1, last_fired = ?3
         WHERE (?4 IS NULL OR fires < ?4) AND (?5 IS NULL OR last_fired <= ?5)",
    )
    .bind(agent.id.to_string())
    .bind(key)
    .bind(crate::db::timestamp(now))
    .bind(max_fires.map(|m| m.min(i64::MAX as u64) as i64))
    .bind(cooled_since)
    .execute(db)
    .await?
    .rows_affected()
        == 1;
    if fired {
        return Ok(None);
    }
    let row = sqlx::query("SELECT fires, last_fired FROM trigger_state WHERE agent_id = ? AND trigger_key = ?")
        .bind(agent.id.to_string())
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

/// `event_publish(event_type, payload)`.
pub struct EventPublish;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventPublishArgs {
    /// Like `inbox.new_file`: lowercase letters, digits, `.`, `_`, `-`.
    pub event_type: String,
    /// Any JSON; triggers can put it into their prompt with `{{payload}}`.
    #[serde(default)]
    pub payload: Value,
}

impl Tool for EventPublish {
    type Args = EventPublishArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "event_publish",
            "event",
            "Publish an event on the event bus; agents with a matching [[trigger]] get a turn.",
        )
        .tags(&["event", "publish", "trigger", "notify"])
    }

    async fn run(&self, ctx: CallContext, args: EventPublishArgs) -> Result<Value> {
        let origin =
            Origin { source: format!("agent:{}", ctx.agent.name), depth: ctx.depth, chain: ctx.chain.to_vec() };
        let published = publish(&ctx.kernel, &args.event_type, args.payload, origin).await?;
        Ok(json!(published))
    }
}
