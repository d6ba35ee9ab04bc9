//! Workflows (spec §7): stored, ordered steps, each a whole agent turn whose prompt can use
//! the run's inputs and earlier steps' outputs. `workflow_run` and `POST
//! /api/workflows/{id}/runs` run one synchronously; every run is kept with each step's output
//! and timing. Each step nests one level of `[kernel] max_agent_call_depth`.

mod template;

use std::time::Instant;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::Row;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::Kernel;
use crate::agent::{NAME_RULE, SpawnRequest, is_valid_name};
use crate::db::{self, Db};
use crate::error::{Error, ErrorKind, FieldError, Result};
use crate::tool::{CallContext, Caller, Tool, ToolDef};
use crate::turn::TurnRequest;

pub use template::render;

/// One step: an existing agent, or an agent type to spawn a fresh agent from for the step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// A running agent's name or id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Or an agent type: a new agent is spawned for the step and stopped after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// The step's message. `{{inputs.KEY}}`, `{{steps.N.output}}` (N from 1) and `{{previous}}`
    /// are replaced when the step runs.
    pub prompt: String,
}

/// A workflow as it is written (REST body).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowInput {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub steps: Vec<Step>,
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
    /// `running`, `succeeded` or `failed`.
    pub status: String,
    /// The last step's output.
    pub output: Option<String>,
    pub error: Option<String>,
    pub steps: Vec<StepRun>,
    pub started_at: String,
    pub finished_at: Option<String>,
}

const MAX_STEPS: usize = 32;
const MAX_PROMPT: usize = 10_000;

/// Checks a workflow; every problem is reported with its field.
fn validate(input: &WorkflowInput) -> Result<()> {
    let mut errors = Vec::new();
    let mut err = |field: String, message: String| errors.push(FieldError { field, message });
    if !is_valid_name(&input.name) {
        err("name".into(), format!("`{}` is not a valid name: {NAME_RULE}", input.name));
    }
    if input.description.len() > 2_000 {
        err("description".into(), "is at most 2000 bytes".into());
    }
    if input.steps.is_empty() || input.steps.len() > MAX_STEPS {
        err("steps".into(), format!("a workflow has 1 to {MAX_STEPS} steps"));
    }
    for (i, step) in input.steps.iter().enumerate() {
        if step.agent.is_some() == step.agent_type.is_some() {
            err(format!("steps[{i}]"), "name exactly one of `agent` or `agent_type`".into());
        }
        if step.prompt.trim().is_empty() || step.prompt.len() > MAX_PROMPT {
            err(format!("steps[{i}].prompt"), format!("a prompt of 1 to {MAX_PROMPT} bytes"));
        } else if let Err(message) = template::check(&step.prompt, i + 1) {
            err(format!("steps[{i}].prompt"), message);
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(Error::invalid_fields(errors)) }
}

pub struct Workflows {
    db: Db,
}

impl Workflows {
    pub(crate) fn new(db: Db) -> Workflows {
        Workflows { db }
    }

    pub async fn create(&self, input: WorkflowInput) -> Result<Workflow> {
        validate(&input)?;
        let now = db::now();
        let wf = Workflow {
            id: Uuid::now_v7(),
            name: input.name,
            description: input.description,
            steps: input.steps,
            created_at: now.clone(),
            updated_at: now,
        };
        let result = sqlx::query(
            "INSERT INTO workflows (id, name, description, steps, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(wf.id.to_string())
        .bind(&wf.name)
        .bind(&wf.description)
        .bind(serde_json::to_string(&wf.steps).expect("steps serialise"))
        .bind(&wf.created_at)
        .bind(&wf.updated_at)
        .execute(&self.db)
        .await;
        db::unique_or(result, || format!("a workflow named `{}` already exists", wf.name))?;
        Ok(wf)
    }

    pub async fn list(&self) -> Result<Vec<Workflow>> {
        let rows = sqlx::query("SELECT * FROM workflows ORDER BY name").fetch_all(&self.db).await?;
        rows.iter().map(workflow_from).collect()
    }

    /// By id or name.
    pub async fn get(&self, id_or_name: &str) -> Result<Workflow> {
        let row = sqlx::query("SELECT * FROM workflows WHERE id = ?1 OR name = ?1")
            .bind(id_or_name)
            .fetch_optional(&self.db)
            .await?
            .ok_or_else(|| Error::not_found(format!("no workflow `{id_or_name}`")))?;
        workflow_from(&row)
    }

    pub async fn replace(&self, id_or_name: &str, input: WorkflowInput) -> Result<Workflow> {
        let current = self.get(id_or_name).await?;
        validate(&input)?;
        let wf = Workflow {
            name: input.name,
            description: input.description,
            steps: input.steps,
            updated_at: db::now(),
            ..current
        };
        let result =
            sqlx::query("UPDATE workflows SET name = ?, description = ?, steps = ?, updated_at = ? WHERE id = ?")
                .bind(&wf.name)
                .bind(&wf.description)
                .bind(serde_json::to_string(&wf.steps).expect("steps serialise"))
                .bind(&wf.updated_at)
                .bind(wf.id.to_string())
                .execute(&self.db)
                .await;
        db::unique_or(result, || format!("a workflow named `{}` already exists", wf.name))?;
        Ok(wf)
    }

    pub async fn delete(&self, id_or_name: &str) -> Result<()> {
        let wf = self.get(id_or_name).await?;
        sqlx::query("DELETE FROM workflows WHERE id = ?").bind(wf.id.to_string()).execute(&self.db).await?;
        Ok(())
    }

    /// The workflow's runs, newest first.
    pub async fn runs(&self, id_or_name: &str) -> Result<Vec<WorkflowRun>> {
        let wf = self.get(id_or_name).await?;
        let rows = sqlx::query("SELECT * FROM workflow_runs WHERE workflow_id = ? ORDER BY id DESC LIMIT 100")
            .bind(wf.id.to_string())
            .fetch_all(&self.db)
            .await?;
        rows.iter().map(run_from).collect()
    }

    async fn save_run(&self, run: &WorkflowRun) -> Result<()> {
        sqlx::query(
            "INSERT INTO workflow_runs (id, workflow_id, inputs, status, output, error, steps, started_at, finished_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT (id) DO UPDATE SET status = ?4, output = ?5, error = ?6, steps = ?7, finished_at = ?9",
        )
        .bind(run.id.to_string())
        .bind(run.workflow_id.to_string())
        .bind(run.inputs.to_string())
        .bind(&run.status)
        .bind(&run.output)
        .bind(&run.error)
        .bind(serde_json::to_string(&run.steps).expect("steps serialise"))
        .bind(&run.started_at)
        .bind(&run.finished_at)
        .execute(&self.db)
        .await?;
        Ok(())
    }
}

/// Who is running a workflow, and how deep in agent calls they already are.
#[derive(Debug, Clone)]
pub struct RunOrigin {
    pub caller: Caller,
    pub depth: u32,
    pub chain: Vec<Uuid>,
}

/// Runs a workflow to the end (or its first failing step) and records the run.
pub async fn run(kernel: &Kernel, id_or_name: &str, inputs: Value, origin: RunOrigin) -> Result<WorkflowRun> {
    let wf = kernel.workflows().get(id_or_name).await?;
    if !(inputs.is_object() || inputs.is_null()) {
        return Err(Error::invalid("`inputs` must be a JSON object"));
    }
    let depth = origin.depth + 1;
    let max = kernel.config().kernel.max_agent_call_depth;
    if u64::from(depth) > max {
        return Err(Error::new(
            ErrorKind::ResourceExhausted,
            format!(
                "refused: workflow `{}` would run {depth} agent calls deep, over [kernel] max_agent_call_depth = {max}",
                wf.name
            ),
        ));
    }
    let mut run = WorkflowRun {
        id: Uuid::now_v7(),
        workflow_id: wf.id,
        inputs: if inputs.is_null() { json!({}) } else { inputs },
        status: "running".into(),
        output: None,
        error: None,
        steps: Vec::new(),
        started_at: db::now(),
        finished_at: None,
    };
    kernel.workflows().save_run(&run).await?;
    for (i, step) in wf.steps.iter().enumerate() {
        let started = Instant::now();
        let outputs: Vec<&str> = run.steps.iter().map(|s| s.output.as_deref().unwrap_or_default()).collect();
        let outcome = async {
            let prompt = render(&step.prompt, &run.inputs, &outputs)?;
            let (agent, spawned) = step_agent(kernel, step).await?;
            let req = TurnRequest {
                depth,
                chain: origin.chain.clone(),
                ..TurnRequest::headless(prompt.clone(), origin.caller.clone())
            };
            let turn = crate::turn::run(kernel, agent.clone(), req).await;
            if spawned {
                kernel.stop_agent(&agent.id.to_string()).await?;
            }
            Ok::<_, Error>((agent.name.clone(), prompt, turn?.reply))
        }
        .await;
        let duration_ms = started.elapsed().as_millis() as u64;
        match outcome {
            Ok((agent, prompt, reply)) => {
                run.steps.push(StepRun { step: i + 1, agent, prompt, output: Some(reply), error: None, duration_ms })
            }
            Err(e) => {
                let agent = step.agent.clone().or(step.agent_type.clone()).unwrap_or_default();
                run.steps.push(StepRun {
                    step: i + 1,
                    agent,
                    prompt: step.prompt.clone(),
                    output: None,
                    error: Some(e.model_text()),
                    duration_ms,
                });
                run.status = "failed".into();
                run.error = Some(format!("step {} failed: {}", i + 1, e.model_text()));
                run.finished_at = Some(db::now());
                kernel.workflows().save_run(&run).await?;
                return Ok(run);
            }
        }
        kernel.workflows().save_run(&run).await?;
    }
    run.status = "succeeded".into();
    run.output = run.steps.last().and_then(|s| s.output.clone());
    run.finished_at = Some(db::now());
    kernel.workflows().save_run(&run).await?;
    Ok(run)
}

/// The step's agent, and whether it was spawned for this step.
async fn step_agent(kernel: &Kernel, step: &Step) -> Result<(std::sync::Arc<crate::agent::Agent>, bool)> {
    match (&step.agent, &step.agent_type) {
        (Some(agent), _) => {
            let agent = kernel.agents().get(agent)?;
            if !agent.is_running() {
                return Err(Error::unavailable(format!("agent `{}` is stopped", agent.name)));
            }
            Ok((agent, false))
        }
        (None, Some(agent_type)) => {
            // A step agent lives for one step: its type's [[cron]] jobs are not scheduled.
            let agent =
                kernel.agents().spawn(SpawnRequest { agent_type: agent_type.clone(), ..Default::default() }).await?;
            Ok((agent, true))
        }
        (None, None) => Err(Error::invalid("the step names no agent")),
    }
}

fn workflow_from(row: &sqlx::sqlite::SqliteRow) -> Result<Workflow> {
    let unreadable = |e: String| Error::internal(format_args!("stored workflow is unreadable: {e}"));
    Ok(Workflow {
        id: Uuid::parse_str(row.try_get("id")?).map_err(|e| unreadable(e.to_string()))?,
        name: row.try_get("name")?,
        description: row.try_get("description")?,
        steps: serde_json::from_str(row.try_get("steps")?).map_err(|e| unreadable(e.to_string()))?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn run_from(row: &sqlx::sqlite::SqliteRow) -> Result<WorkflowRun> {
    let unreadable = |e: String| Error::internal(format_args!("stored workflow run is unreadable: {e}"));
    Ok(WorkflowRun {
        id: Uuid::parse_str(row.try_get("id")?).map_err(|e| unreadable(e.to_string()))?,
        workflow_id: Uuid::parse_str(row.try_get("workflow_id")?).map_err(|e| unreadable(e.to_string()))?,
        inputs: serde_json::from_str(row.try_get("inputs")?).map_err(|e| unreadable(e.to_string()))?,
        status: row.try_get("status")?,
        output: row.try_get("output")?,
        error: row.try_get("error")?,
        steps: serde_json::from_str(row.try_get("steps")?).map_err(|e| unreadable(e.to_string()))?,
        started_at: row.try_get("started_at")?,
        finished_at: row.try_get("finished_at")?,
    })
}

/// `workflow_run(workflow_id, inputs?)`.
pub struct WorkflowRunTool;

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
        let origin = RunOrigin { caller: Caller::Agent, depth: ctx.depth, chain: ctx.chain.to_vec() };
        let run = run(&ctx.kernel, &args.workflow_id, args.inputs, origin).await?;
        if run.status == "failed" {
            return Err(Error::failed(format!("workflow run {} {}", run.id, run.error.unwrap_or_default())));
        }
        Ok(json!({ "run_id": run.id, "status": run.status, "output": run.output, "steps": run.steps }))
    }
}
