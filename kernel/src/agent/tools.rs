//! Family `agents` (spec §3): agents in the same daemon working together, and
//! `agent_type_create`, which goes through exactly the validator and store of
//! `POST /api/templates`.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::delivery::{Deliveries, Delivery};
use super::{Agent, AgentTypeSpec, Agents, SpawnRequest};
use crate::capability::Reach;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::family::Services;
use crate::runtime::{Runtime, TurnRequest};
use crate::schedule::Schedules;
use crate::tool::{CallContext, Caller, NoArgs, Registry, Tool, ToolDef, Tools};

const FAMILY: &str = "agents";

/// What the agent tools reach, taken from the kernel's services when they are registered.
#[derive(Clone)]
pub struct Uses {
    /// The depth budget and the bindings an agent may not stop.
    config: Arc<Config>,
    agents: Arc<Agents>,
    /// The tools a child or a new type may be given (no more than its maker's).
    tools: Arc<Tools>,
    deliveries: Arc<Deliveries>,
    /// A spawned child's `[[cron]]` jobs.
    schedules: Arc<Schedules>,
    /// A blocking `agent_send`'s turn; `agent_kill`'s stop.
    runtime: Runtime,
}

impl Uses {
    /// Takes them from the kernel's services (a benchmark builds a tool with it).
    pub fn new(services: &Services) -> Uses {
        Uses {
            config: services.need(),
            agents: services.need(),
            tools: services.need(),
            deliveries: services.need(),
            schedules: services.need(),
            runtime: services.get::<Runtime>().clone(),
        }
    }
}

pub(crate) fn register(r: &mut Registry, services: &Services) {
    let uses = Uses::new(services);
    r.add(AgentSend(uses.clone()));
    r.add(AgentSpawn(uses.clone()));
    r.add(AgentList(uses.clone()));
    r.add(AgentFind(uses.clone()));
    r.add(AgentKill(uses.clone()));
    r.add(GoalUpdate(uses.clone()));
    r.add(AgentTypeCreate(uses));
}

fn agent_summary(a: &Agent) -> Value {
    json!({
        "agent_id": a.id,
        "name": a.name,
        "agent_type": a.agent_type,
        "status": a.status,
        "goal": a.goal,
        "parent_id": a.parent_id,
    })
}

/// `agent_send(agent_id, message, async?)`.
pub struct AgentSend(pub Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSendArgs {
    /// The other agent's id or name.
    pub agent_id: String,
    pub message: String,
    /// `true` (default): return a task id now; the reply arrives in this session when the
    /// other agent's turn ends. `false`: wait for the reply and return it.
    #[serde(rename = "async", default = "yes")]
    pub is_async: bool,
}

fn yes() -> bool {
    true
}

impl Tool for AgentSend {
    type Args = AgentSendArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "agent_send",
            FAMILY,
            "Send a message to an agent you spawned or one of its descendants (any agent with the grant `agents.message_any`). By default returns a task id at once and delivers the reply into this session later; async=false waits for the reply.",
        )
        .tags(&["agents", "message", "delegate"])
    }

    async fn run(&self, ctx: CallContext, args: AgentSendArgs) -> Result<Value> {
        let uses = &self.0;
        let target = uses.agents.get(&args.agent_id)?;
        uses.agents.ensure_within_reach(&ctx.agent, &target, Reach::MessageAny, "message")?;
        target.ensure_running()?;
        if crate::text::is_blank(&args.message) {
            return Err(Error::invalid("the message is empty"));
        }
        let depth = ctx.depth + 1;
        let chain: Vec<Uuid> = ctx.chain.iter().copied().chain([target.id]).collect();
        crate::turn::depth::check_with(&uses.config, &uses.agents, depth, &chain, || {
            format!("sending to agent `{}`", target.name)
        })?;
        // One conversation per sender on the receiving side, the sender known by its id: a
        // later agent of the same name does not continue it.
        let session = uses.deliveries.session_for(target.id, ctx.agent.id).await?;
        if !args.is_async {
            let req = TurnRequest {
                session: Some(session),
                depth,
                chain: ctx.chain.to_vec(),
                // What the sender had read wrote this message: the receiver's turn is tainted
                // the same (issue 48), so a page cannot act through a second agent.
                taint: ctx.provenance.as_ref().map(crate::approval::Provenance::labels).unwrap_or_default(),
                ..TurnRequest::headless(args.message, Caller::Agent)
            };
            let turn = uses.runtime.run_turn(target.clone(), req).await?;
            return Ok(
                json!({ "agent_id": target.id, "reply": turn.reply, "ended": turn.ended, "session_id": turn.session_id }),
            );
        }
        let reply_to = ctx.session.ok_or_else(|| {
            Error::unavailable("an async agent_send needs a session to deliver the reply into; use async=false here")
        })?;
        let task_id = Uuid::now_v7();
        let delivery = Delivery {
            id: task_id,
            from_agent: ctx.agent.id,
            reply_to,
            to_agent: target.id,
            session,
            message: args.message,
            depth,
            chain: ctx.chain.to_vec(),
            attempts: 1,
            reply: None,
            taint: ctx.provenance.as_ref().map(crate::approval::Provenance::labels).unwrap_or_default(),
        };
        uses.deliveries.send(delivery).await?;
        Ok(json!({ "task_id": task_id, "agent_id": target.id, "status": "sent",
                   "note": "The reply will appear in this conversation when the other agent's turn ends." }))
    }
}

/// `agent_spawn(template, name?, goal?)`.
pub struct AgentSpawn(pub Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSpawnArgs {
    /// The agent type to make the child from.
    pub template: String,
    pub name: Option<String>,
    pub goal: Option<String>,
}

impl Tool for AgentSpawn {
    type Args = AgentSpawnArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("agent_spawn", FAMILY, "Spawn a child agent from an agent type. It gets only the tools both its type and you may use, and cannot spawn or kill.")
            .tags(&["agents", "spawn", "child"])
    }

    async fn run(&self, ctx: CallContext, args: AgentSpawnArgs) -> Result<Value> {
        let uses = &self.0;
        let agent_type = uses.agents.get_type(&args.template)?;
        // Never a grant the parent lacks: the child's grants are the exact tools both the
        // type's grants and the parent's allow (the type's deny list kept).
        let defs = uses.tools.snapshot().defs();
        let (capabilities, _) = agent_type
            .manifest
            .capabilities
            .narrowed_to(&ctx.agent.manifest.capabilities, defs.iter().map(|d| d.as_ref()));
        let child = super::spawn_with_cron(
            &uses.agents,
            &uses.schedules,
            SpawnRequest {
                agent_type: args.template,
                name: args.name,
                goal: args.goal,
                parent: Some(ctx.agent.id),
                tools: Some(capabilities.tools),
                ephemeral: false,
            },
        )
        .await?;
        Ok(agent_summary(&child))
    }
}

/// `agent_list()`.
pub struct AgentList(pub Uses);

impl Tool for AgentList {
    type Args = NoArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("agent_list", FAMILY, "List the running agents of this daemon: id, name, type, status, goal.")
            .tags(&["agents", "list"])
            .read_only()
    }

    async fn run(&self, _: CallContext, _: NoArgs) -> Result<Value> {
        let agents: Vec<Value> =
            self.0.agents.list().iter().filter(|a| a.is_running()).map(|a| agent_summary(a)).collect();
        Ok(json!({ "agents": agents }))
    }
}

/// `agent_find(query)`.
pub struct AgentFind(pub Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentFindArgs {
    /// Part of a name, an id (or its start), or a tag: the agent type's name or a skill.
    pub query: String,
}

impl Tool for AgentFind {
    type Args = AgentFindArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("agent_find", FAMILY, "Find running agents by name, id or tag (agent type or skill).")
            .tags(&["agents", "find", "search"])
            .read_only()
    }

    async fn run(&self, _: CallContext, args: AgentFindArgs) -> Result<Value> {
        let q = args.query.trim().to_lowercase();
        if q.is_empty() {
            return Err(Error::invalid("the query is empty"));
        }
        let found: Vec<Value> = self
            .0
            .agents
            .list()
            .iter()
            .filter(|a| a.is_running() && matches_agent(a, &q))
            .map(|a| agent_summary(a))
            .collect();
        Ok(json!({ "agents": found }))
    }
}

fn matches_agent(a: &Agent, q: &str) -> bool {
    a.name.contains(q)
        || a.id.to_string().starts_with(q)
        || a.agent_type == q
        || a.manifest.skills.iter().any(|s| s == q)
}

/// `agent_kill(agent_id)`.
pub struct AgentKill(pub Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentKillArgs {
    /// The agent's id or name.
    pub agent_id: String,
}

impl Tool for AgentKill {
    type Args = AgentKillArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("agent_kill", FAMILY, "Stop a running agent you spawned or one of its descendants (any agent with the grant `agents.kill_any`), and cancel its turns.")
            .tags(&["agents", "stop", "kill"])
    }

    async fn run(&self, ctx: CallContext, args: AgentKillArgs) -> Result<Value> {
        let agents = &self.0.agents;
        let target = agents.get(&args.agent_id)?;
        if target.id == ctx.agent.id {
            return Err(Error::invalid("an agent cannot kill itself; finish the turn instead"));
        }
        agents.ensure_within_reach(&ctx.agent, &target, Reach::KillAny, "stop")?;
        if let Some(binding) = agents.binding_held_by(&self.0.config, &target) {
            return Err(Error::forbidden(format!(
                "agent `{}` answers {binding}: only an operator stops it",
                target.name
            )));
        }
        let stopped = self.0.runtime.stop_agent(&target.id.to_string()).await?;
        Ok(agent_summary(&stopped))
    }
}

/// `goal_update(goal)`.
pub struct GoalUpdate(pub Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalUpdateArgs {
    /// The new goal; later prompts show it. Empty clears it.
    pub goal: String,
}

impl Tool for GoalUpdate {
    type Args = GoalUpdateArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "goal_update",
            FAMILY,
            "Change your own goal. It is stored with you and shown in every later prompt.",
        )
        .tags(&["agents", "goal", "plan"])
    }

    async fn run(&self, ctx: CallContext, args: GoalUpdateArgs) -> Result<Value> {
        let updated = self.0.agents.set_goal(&ctx.agent.id.to_string(), &args.goal).await?;
        Ok(json!({ "goal": updated.goal }))
    }
}

/// `agent_type_create(name, description?, system_prompt?, provider?, model?, tools?, skills?)`.
pub struct AgentTypeCreate(pub Uses);

impl Tool for AgentTypeCreate {
    type Args = AgentTypeSpec;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "agent_type_create",
            FAMILY,
            "Create an agent type (a reusable manifest) from seven fields. Its tools are capped at your own: what you may not use yourself is dropped and named in the result. A name already used by an agent type or a running agent is refused, never overwritten.",
        )
        .tags(&["agents", "agent type", "template", "create"])
    }

    async fn run(&self, ctx: CallContext, spec: AgentTypeSpec) -> Result<Value> {
        let defs = self.0.tools.snapshot().defs();
        let (created, dropped) = self.0.agents.create_type_by_agent(spec.into(), &ctx.agent, &defs).await?;
        let mut answer = json!({ "created": created.manifest.name, "agent_type": Arc::clone(&created).as_ref() });
        if !dropped.is_empty() {
            answer["dropped"] = json!(dropped);
            answer["note"] = json!(format!(
                "{} of the tools asked for are not yours to give and were left out: an agent type is never wider than its maker",
                dropped.len()
            ));
        }
        Ok(answer)
    }
}
