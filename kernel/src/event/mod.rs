//! The event bus (spec §7): `event_publish` and `POST /api/events` publish a typed event;
//! every running agent whose manifest has a matching `[[trigger]]` gets a headless turn with
//! the trigger's prompt, subject to its cooldown and fire limit. Fires are audited.
//!
//! # Design notes
//!
//! ## Layout
//!
//! The event bus is the family's service, [`Events`]: `Events::publish` (used by `event_publish`
//! and `POST /api/events`) fires every running agent's matching `[[trigger]]` (glob on the event
//! type) as a headless turn, within `cooldown_secs`/`max_fires` (`store.rs`: `trigger_state`),
//! and audits each fire (`tool = "trigger"`).

mod store;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::agent::Agents;
use crate::capability::glob_match;
use crate::config::Config;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::family::{Family, Services};
use crate::runtime::{Runtime, TurnRequest};
use crate::tool::audit::{AuditEntry, AuditLog};
use crate::tool::{CallContext, Caller, Registry, Tool, ToolDef};

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "event",
    open: |s| {
        let events = Events {
            config: s.need(),
            agents: s.need(),
            db: s.get::<Db>().clone(),
            audit: s.need(),
            runtime: s.get::<Runtime>().clone(),
        };
        s.provide(events);
        Ok(())
    },
    register,
};

pub(crate) fn register(r: &mut Registry, services: &Services) {
    r.add(EventPublish(services.need()));
}

/// Where an event came from, so turns it starts stay within the depth budget.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// Who published it, as records name callers (`token:NAME`, `agent:NAME`, …).
    pub source: String,
    pub depth: u32,
    pub chain: Vec<Uuid>,
}

/// What publishing did.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Published {
    pub event_type: String,
    /// Agents whose triggers fired (each gets a turn).
    pub fired: Vec<TriggerFire>,
    /// Matching triggers that did not fire, and why.
    pub skipped: Vec<TriggerFire>,
}

/// One matching trigger of a published event.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TriggerFire {
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

/// The event bus: what publishing an event reaches (the running agents' triggers, the depth
/// budget, the fires' limits and audit, the turns they start).
pub struct Events {
    config: Arc<Config>,
    agents: Arc<Agents>,
    db: Db,
    audit: Arc<AuditLog>,
    runtime: Runtime,
}

impl Events {
    /// Publishes an event and fires every matching trigger.
    pub async fn publish(&self, event_type: &str, payload: Value, origin: Origin) -> Result<Published> {
        check_event_type(event_type)?;
        let payload_text = payload.to_string();
        if payload_text.len() > MAX_PAYLOAD {
            return Err(Error::invalid(format!("the payload is over {MAX_PAYLOAD} bytes")));
        }
        let mut published = Published { event_type: event_type.to_string(), fired: Vec::new(), skipped: Vec::new() };
        for agent in self.agents.list().into_iter().filter(|a| a.is_running()) {
            for (index, trigger) in agent.manifest.trigger.iter().enumerate() {
                if !glob_match(trigger.event.as_bytes(), event_type.as_bytes()) {
                    continue;
                }
                let mut fire = TriggerFire {
                    agent_id: agent.id,
                    agent: agent.name.clone(),
                    trigger: trigger.event.clone(),
                    reason: None,
                };
                let key = format!("{index}:{}", trigger.event);
                let within =
                    crate::turn::depth::check_with(&self.config, &self.agents, origin.depth + 1, &origin.chain, || {
                        format!("the turn of trigger `{}`", trigger.event)
                    });
                let skip = if let Err(e) = within {
                    Some(e.message)
                } else {
                    store::claim_fire(&self.db, agent.id, &key, trigger.cooldown_secs, trigger.max_fires).await?
                };
                if let Some(reason) = skip {
                    fire.reason = Some(reason);
                    published.skipped.push(fire);
                    continue;
                }
                let prompt = trigger.prompt.replace("{{payload}}", &payload_text).replace("{{event_type}}", event_type);
                self.audit.record(AuditEntry {
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
                    new_session_label: crate::session::Origin::Trigger(event_type.to_string()).label(),
                    ..TurnRequest::headless(prompt, Caller::Trigger(event_type.to_string()))
                };
                let (runtime, agent) = (self.runtime.clone(), agent.clone());
                tokio::spawn(async move {
                    if let Err(e) = runtime.run_turn(agent.clone(), req).await {
                        tracing::warn!(agent = %agent.name, error = %e.message, "a triggered turn failed");
                    }
                });
                published.fired.push(fire);
            }
        }
        if !published.fired.is_empty() {
            // A fire changes state (a turn starts): its audit row is written before anyone is
            // answered, like a state-changing tool call's.
            self.audit.flush().await;
        }
        Ok(published)
    }
}

/// `event_publish(event_type, payload)`.
pub struct EventPublish(Arc<Events>);

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
        let origin = Origin { source: ctx.actor(), depth: ctx.depth, chain: ctx.chain.to_vec() };
        let published = self.0.publish(&args.event_type, args.payload, origin).await?;
        Ok(json!(published))
    }
}
