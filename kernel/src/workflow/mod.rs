//! Workflows (spec §7): stored, ordered steps, each a whole agent turn whose prompt can use
//! the run's inputs and earlier steps' outputs. `workflow_run` and `POST
//! /api/workflows/{id}/runs` run one synchronously; every run is kept with each step's output
//! and timing. Each step nests one level of `[kernel] max_agent_call_depth`.
//!
//! # Design notes
//!
//! ## Layout
//!
//! Stored workflows (`/api/workflows`), synchronous runs recorded step by step (`workflow_runs`),
//! `workflow_run`; a `Step` is an agent's or a new agent of a type's (exactly one); `template.rs`
//! fills `{{inputs.KEY}}`, `{{steps.N.output}}`, `{{previous}}`; `store.rs`.
//!
//! ## Step agents
//!
//! - **Workflow step agents** are spawned `ephemeral`: `GET /api/agents` and the dashboard's list
//!   leave them out unless asked (`?ephemeral=true`, the list's "Show the N workflow step agents"
//!   link); a stopped one is removed (status `removed`, its sessions and audit kept)
//!   `[kernel] ephemeral_retention_hours` (default 24) after it stopped, checked every ten minutes.
//!   Step agents the last run left running (a crash mid-step) are stopped at start: no workflow
//!   run survives a restart. `POST /api/workflows/{id}/runs` runs detached like a turn, so a
//!   client that hangs up does not cancel the steps.

mod store;
mod template;

use std::sync::Arc;
use std::time::Instant;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::agent::{Agent, Agents, NAME_RULE, SpawnRequest, is_valid_name};
use crate::cluster::Cluster;
use crate::config::Config;
use crate::db::{self, Db, stored_enum};
use crate::error::{Error, FieldError, Result};
use crate::family::{Family, Services};
use crate::page::{Key, Page, PageRequest};
use crate::runtime::{Runtime, TurnRequest};
use crate::text::{is_blank, longer_than};
use crate::tool::{CallContext, Caller, Registry, Tool, ToolDef, Tools};

pub(crate) fn register(r: &mut Registry, services: &Services) {
    r.add(WorkflowRunTool(services.need()));
}

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    /// Every step answered.
    Succeeded,
    /// A step failed; the run stopped there.
    Failed,
}
stored_enum!(RunStatus { Running = "running", Succeeded = "succeeded", Failed = "failed" });

pub use template::render;

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "workflow",
    open: |s| {
        let workflows = Workflows::open(s);
        s.provide(workflows);
        Ok(())
    },
    register,
};

/// One step: an existing agent's turn, or the turn of an agent spawned from an agent type for
/// the step. Exactly one of `agent` and `agent_type` names who runs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged, try_from = "StepInput")]
pub enum Step {
    Agent(AgentStep),
    AgentType(AgentTypeStep),
}

/// A step run by an existing agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentStep {
    /// A running agent's name or id.
    #[schema(min_length = 1)]
    pub agent: String,
    /// The step's message (1–10,000 characters, not blank). `{{inputs.KEY}}`,
    /// `{{steps.N.output}}` (N from 1, an earlier step) and `{{previous}}` are replaced when
    /// the step runs.
    #[schema(pattern = r"[^ \t\n\r\f\v]", max_length = 10000)]
    pub prompt: String,
}

/// A step run by a new agent of a type, spawned for the step and stopped after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentTypeStep {
    /// The agent type's name.
    #[schema(min_length = 1)]
    pub agent_type: String,
    /// As [`AgentStep::prompt`].
    #[schema(pattern = r"[^ \t\n\r\f\v]", max_length = 10000)]
    pub prompt: String,
}

/// A step as written, before it is known to name exactly one runner (the validator reports
/// every step that does not, with the rest of the workflow's problems).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepInput {
    pub agent: Option<String>,
    pub agent_type: Option<String>,
    pub prompt: String,
}

impl TryFrom<StepInput> for Step {
    type Error = &'static str;

    fn try_from(f: StepInput) -> std::result::Result<Step, &'static str> {
        match (f.agent, f.agent_type) {
            (Some(agent), None) => Ok(Step::Agent(AgentStep { agent, prompt: f.prompt })),
            (None, Some(agent_type)) => Ok(Step::AgentType(AgentTypeStep { agent_type, prompt: f.prompt })),
            _ => Err("name exactly one of `agent` or `agent_type`"),
        }
    }
}

impl Step {
    pub fn prompt(&self) -> &str {
        match self {
            Step::Agent(s) => &s.prompt,
            Step::AgentType(s) => &s.prompt,
        }
    }

    /// Who runs it, as written: the agent, or the agent type.
    pub fn runner(&self) -> &str {
        match self {
            Step::Agent(s) => &s.agent,
            Step::AgentType(s) => &s.agent_type,
        }
    }
}

/// A workflow as it is written (REST body).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowInput {
    #[schema(value_type = crate::agent::Name)]
    pub name: String,
    /// At most 2,000 characters.
    #[serde(default)]
    #[schema(max_length = 2000)]
    pub description: String,
    /// 1 to 32 steps, run in order.
    #[schema(value_type = Vec<Step>, min_items = 1, max_items = 32)]
    pub steps: Vec<StepInput>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Workflow {
    pub id: Uuid,
    pub name: String,
    pub description: String,
    pub steps: Vec<Step>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct StepRun {
    /// 1-based.
    pub step: usize,
    pub agent: String,
    pub prompt: String,
    pub output: Option<String>,
    pub error: Option<String>,
    pub duration_ms: u64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WorkflowRun {
    pub id: Uuid,
    pub workflow_id: Uuid,
    #[schema(value_type = Object)]
    pub inputs: Value,
    pub status: RunStatus,
    /// The last step's output.
    pub output: Option<String>,
    pub error: Option<String>,
    pub steps: Vec<StepRun>,
    pub started_at: String,
    pub finished_at: Option<String>,
}

const MAX_STEPS: usize = 32;
const MAX_PROMPT: usize = 10_000;
const MAX_DESCRIPTION: usize = 2_000;

/// Checks a workflow and returns its steps; every problem is reported with its field. An
/// `agent` step is bound here to the id of the agent its name finds: a later agent of that
/// name does not run it.
fn validate(input: &WorkflowInput, agents: &Agents) -> Result<Vec<Step>> {
    let mut errors = Vec::new();
    let mut err = |field: String, message: String| errors.push(FieldError { field, message });
    if !is_valid_name(&input.name) {
        err("name".into(), format!("`{}` is not a valid name: {NAME_RULE}", input.name));
    }
    if longer_than(&input.description, MAX_DESCRIPTION) {
        err("description".into(), format!("is at most {MAX_DESCRIPTION} characters"));
    }
    if input.steps.is_empty() || input.steps.len() > MAX_STEPS {
        err("steps".into(), format!("a workflow has 1 to {MAX_STEPS} steps"));
    }
    let mut steps = Vec::with_capacity(input.steps.len());
    for (i, step) in input.steps.iter().enumerate() {
        match Step::try_from(step.clone()) {
            Ok(s) if s.runner().is_empty() => err(format!("steps[{i}]"), "the agent or agent type is empty".into()),
            Ok(Step::Agent(mut s)) => match agents.id_of(Some(&s.agent)) {
                Ok(Some(id)) => {
                    s.agent = id;
                    steps.push(Step::Agent(s));
                }
                _ => err(format!("steps[{i}].agent"), format!("no running agent `{}`", s.agent)),
            },
            Ok(s) => steps.push(s),
            Err(message) => err(format!("steps[{i}]"), message.into()),
        }
        if is_blank(&step.prompt) || longer_than(&step.prompt, MAX_PROMPT) {
            err(format!("steps[{i}].prompt"), format!("a prompt of 1 to {MAX_PROMPT} characters, not blank"));
        } else if let Err(message) = template::check(&step.prompt, i + 1) {
            err(format!("steps[{i}].prompt"), message);
        }
    }
    if errors.is_empty() { Ok(steps) } else { Err(Error::invalid_fields(errors)) }
}

/// The stored workflows and their runs. Cheap to clone (a detached run holds one).
#[derive(Clone)]
pub struct Workflows {
    db: Db,
    /// This daemon's id in the cluster, written on each run it runs.
    daemon: String,
    /// The depth budget.
    config: Arc<Config>,
    agents: Arc<Agents>,
    /// The tools an agent's step agent may be given (no more than that agent's).
    tools: Arc<Tools>,
    /// The steps' turns, and stopping the agents spawned for them.
    runtime: Runtime,
}

impl Workflows {
    fn open(services: &Services) -> Workflows {
        Workflows {
            db: services.get::<Db>().clone(),
            daemon: services.get::<Cluster>().id().to_string(),
            config: services.need(),
            agents: services.need(),
            tools: services.need(),
            runtime: services.get::<Runtime>().clone(),
        }
    }

    pub async fn create(&self, input: WorkflowInput) -> Result<Workflow> {
        let steps = validate(&input, &self.agents)?;
        let now = db::now();
        let wf = Workflow {
            id: Uuid::now_v7(),
            name: input.name,
            description: input.description,
            steps,
            created_at: now.clone(),
            updated_at: now,
        };
        store::insert(&self.db, &wf).await?;
        Ok(wf)
    }

    /// A page of the workflows, by name.
    pub async fn list(&self, page: &PageRequest) -> Result<Page<Workflow>> {
        let rows = store::list(&self.db, page.after(Key::Name)?, page.fetch_limit()).await?;
        Ok(Page::from_rows(rows, page, store::count(&self.db).await?, |w| w.name.clone()))
    }

    /// By id or name.
    pub async fn get(&self, id_or_name: &str) -> Result<Workflow> {
        store::get(&self.db, id_or_name).await?.ok_or_else(|| Error::not_found(format!("no workflow `{id_or_name}`")))
    }

    pub async fn replace(&self, id_or_name: &str, input: WorkflowInput) -> Result<Workflow> {
        let current = self.get(id_or_name).await?;
        let steps = validate(&input, &self.agents)?;
        let wf = Workflow { name: input.name, description: input.description, steps, updated_at: db::now(), ..current };
        store::update(&self.db, &wf).await?;
        Ok(wf)
    }

    pub async fn delete(&self, id_or_name: &str) -> Result<()> {
        let wf = self.get(id_or_name).await?;
        store::delete(&self.db, wf.id).await
    }

    /// A page of the workflow's runs, newest first.
    pub async fn runs(&self, id_or_name: &str, page: &PageRequest) -> Result<Page<WorkflowRun>> {
        let wf = self.get(id_or_name).await?;
        let rows = store::runs(&self.db, wf.id, page.after(Key::Id)?, page.fetch_limit()).await?;
        Ok(Page::from_rows(rows, page, store::run_count(&self.db, wf.id).await?, |r| r.id.to_string()))
    }

    async fn save_run(&self, run: &WorkflowRun) -> Result<()> {
        store::save_run(&self.db, run, &self.daemon).await
    }

    /// Fails the runs daemon `dead` left running (and those of no daemon, from before runs
    /// named theirs): nothing will finish them. Returns how many.
    pub(crate) async fn fail_interrupted(&self, dead: &str) -> Result<u64> {
        store::fail_interrupted(&self.db, dead, &crate::db::now()).await
    }

    /// Runs a workflow on a task of its own, for a front that must not cancel it when its
    /// client hangs up (`POST /api/workflows/{id}/runs`): the steps go on, their turns and the
    /// run's record end as they would have.
    pub async fn run_detached(&self, id_or_name: &str, inputs: Value, origin: RunOrigin) -> Result<WorkflowRun> {
        let (workflows, id_or_name) = (self.clone(), id_or_name.to_string());
        tokio::spawn(async move { workflows.run(&id_or_name, inputs, origin).await })
            .await
            .map_err(|e| Error::internal(format_args!("a workflow run's task ended abnormally: {e}")))?
    }

    /// Runs a workflow to the end (or its first failing step) and records the run.
    pub async fn run(&self, id_or_name: &str, inputs: Value, origin: RunOrigin) -> Result<WorkflowRun> {
        let wf = self.get(id_or_name).await?;
        if !(inputs.is_object() || inputs.is_null()) {
            return Err(Error::invalid("`inputs` must be a JSON object"));
        }
        let depth = origin.depth + 1;
        crate::turn::depth::check_with(&self.config, &self.agents, depth, &origin.chain, || {
            format!("workflow `{}`", wf.name)
        })?;
        let mut run = WorkflowRun {
            id: Uuid::now_v7(),
            workflow_id: wf.id,
            inputs: if inputs.is_null() { json!({}) } else { inputs },
            status: RunStatus::Running,
            output: None,
            error: None,
            steps: Vec::new(),
            started_at: db::now(),
            finished_at: None,
        };
        self.save_run(&run).await?;
        for (i, step) in wf.steps.iter().enumerate() {
            let started = Instant::now();
            let outputs: Vec<&str> = run.steps.iter().map(|s| s.output.as_deref().unwrap_or_default()).collect();
            let outcome = async {
                let prompt = render(step.prompt(), &run.inputs, &outputs)?;
                let (agent, spawned) = self.step_agent(step, origin.agent.as_deref()).await?;
                let req = TurnRequest {
                    depth,
                    chain: origin.chain.clone(),
                    ..TurnRequest::headless(prompt.clone(), origin.caller.clone())
                };
                let turn = self.runtime.run_turn(agent.clone(), req).await;
                if spawned {
                    self.runtime.stop_agent(&agent.id.to_string()).await?;
                }
                Ok::<_, Error>((agent.name.clone(), prompt, turn?.reply))
            }
            .await;
            let duration_ms = started.elapsed().as_millis() as u64;
            match outcome {
                Ok((agent, prompt, reply)) => run.steps.push(StepRun {
                    step: i + 1,
                    agent,
                    prompt,
                    output: Some(reply),
                    error: None,
                    duration_ms,
                }),
                Err(e) => {
                    run.steps.push(StepRun {
                        step: i + 1,
                        agent: step.runner().to_string(),
                        prompt: step.prompt().to_string(),
                        output: None,
                        error: Some(e.model_text()),
                        duration_ms,
                    });
                    run.status = RunStatus::Failed;
                    run.error = Some(format!("step {} failed: {}", i + 1, e.model_text()));
                    run.finished_at = Some(db::now());
                    self.save_run(&run).await?;
                    return Ok(run);
                }
            }
            self.save_run(&run).await?;
        }
        run.status = RunStatus::Succeeded;
        run.output = run.steps.last().and_then(|s| s.output.clone());
        run.finished_at = Some(db::now());
        self.save_run(&run).await?;
        Ok(run)
    }

    /// The step's agent, and whether it was spawned for this step. Run by an agent (`by`), a
    /// step reaches only what that agent could: an agent it may message, and a type's agent
    /// with no tool the caller lacks.
    async fn step_agent(&self, step: &Step, by: Option<&Agent>) -> Result<(Arc<Agent>, bool)> {
        match step {
            Step::Agent(s) => {
                let agent = self.agents.get(&s.agent)?;
                if let Some(by) = by {
                    self.agents.ensure_within_reach(by, &agent, crate::capability::Reach::MessageAny, "message")?;
                }
                agent.ensure_running()?;
                Ok((agent, false))
            }
            Step::AgentType(s) => {
                let tools = match by {
                    Some(by) => {
                        let agent_type = self.agents.get_type(&s.agent_type)?;
                        let defs = self.tools.snapshot().defs();
                        let (capped, _) = agent_type
                            .manifest
                            .capabilities
                            .narrowed_to(&by.manifest.capabilities, defs.iter().map(|d| d.as_ref()));
                        Some(capped.tools)
                    }
                    None => None,
                };
                // A step agent lives for one step: its type's [[cron]] jobs are not scheduled,
                // and it is removed some time after (`[kernel] ephemeral_retention_hours`).
                let agent = self
                    .agents
                    .spawn(SpawnRequest {
                        agent_type: s.agent_type.clone(),
                        ephemeral: true,
                        tools,
                        parent: by.map(|a| a.id),
                        ..Default::default()
                    })
                    .await?;
                Ok((agent, true))
            }
        }
    }
}

/// Who is running a workflow, and how deep in agent calls they already are.
#[derive(Debug, Clone)]
pub struct RunOrigin {
    pub caller: Caller,
    /// The agent running it (`workflow_run`); `None` for an operator. Its steps reach no
    /// further than it does.
    pub agent: Option<Arc<Agent>>,
    pub depth: u32,
    pub chain: Vec<Uuid>,
}

/// `workflow_run(workflow_id, inputs?)`.
pub struct WorkflowRunTool(Arc<Workflows>);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowRunArgs {
    /// The workflow's id or name.
    pub workflow_id: String,
    /// Values for the steps' `{{inputs.KEY}}`.
    #[serde(default)]
    pub inputs: Value,
}

impl Tool for WorkflowRunTool {
    type Args = WorkflowRunArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("workflow_run", "workflow", "Run a stored workflow synchronously: each step is a whole agent turn. Returns the final output and each step's.")
            .tags(&["workflow", "run", "pipeline", "steps"])
    }

    async fn run(&self, ctx: CallContext, args: WorkflowRunArgs) -> Result<Value> {
        let origin = RunOrigin {
            caller: Caller::Agent,
            agent: Some(ctx.agent.clone()),
            depth: ctx.depth,
            chain: ctx.chain.to_vec(),
        };
        let run = self.0.run(&args.workflow_id, args.inputs, origin).await?;
        if run.status == RunStatus::Failed {
            return Err(Error::failed(format!("workflow run {} {}", run.id, run.error.unwrap_or_default())));
        }
        Ok(json!({ "run_id": run.id, "status": run.status, "output": run.output, "steps": run.steps }))
    }
}
