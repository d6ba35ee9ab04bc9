//! Family `tasks`: the board's tools, thin over [`super::TaskBoard`].

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{NewTask, TaskFilter, TaskStatus};
use crate::error::Result;
use crate::family::Services;
use crate::page::PageRequest;
use crate::tasks::TaskBoard;
use crate::tool::{CallContext, Registry, Tool, ToolDef};

const FAMILY: &str = "tasks";

/// What this family's tools reach, taken from the kernel's services when they are registered.
#[derive(Clone)]
pub(super) struct Uses {
    board: Arc<TaskBoard>,
}

pub(crate) fn register(r: &mut Registry, services: &Services) {
    let uses = Uses { board: services.need() };
    r.add(TaskPost(uses.clone()));
    r.add(TaskClaim(uses.clone()));
    r.add(TaskComplete(uses.clone()));
    r.add(TaskList(uses.clone()));
    r.add(TaskStatusTool(uses));
}

pub struct TaskPost(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskPostArgs {
    pub title: String,
    pub body: String,
    /// An agent's name or id; without it any agent may claim the task.
    pub assignee: Option<String>,
    /// 0 (lowest) to 9 (highest); default 5.
    pub priority: Option<i64>,
}

impl Tool for TaskPost {
    type Args = TaskPostArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("task_post", FAMILY, "Post a task on the shared board for another agent (or anyone) to claim.")
            .tags(&["tasks", "board", "delegate", "post"])
    }

    async fn run(&self, ctx: CallContext, args: TaskPostArgs) -> Result<Value> {
        let new = NewTask { title: args.title, body: args.body, assignee: args.assignee, priority: args.priority };
        let task = self.0.board.post(new, &ctx.actor()).await?;
        Ok(json!(task))
    }
}

pub struct TaskClaim(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskClaimArgs {
    /// Only claim tasks of at least this priority (0–9).
    pub priority_filter: Option<i64>,
}

impl Tool for TaskClaim {
    type Args = TaskClaimArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "task_claim",
            FAMILY,
            "Claim the highest-priority pending task assigned to you or to nobody. Complete it with task_complete before the claim TTL runs out.",
        )
        .tags(&["tasks", "board", "claim", "work"])
    }

    async fn run(&self, ctx: CallContext, args: TaskClaimArgs) -> Result<Value> {
        let claimed = self.0.board.claim(&ctx.agent.id.to_string(), args.priority_filter).await?;
        Ok(match claimed {
            Some(task) => json!({ "claimed": task }),
            None => json!({ "claimed": null, "note": "no pending task for you right now" }),
        })
    }
}

pub struct TaskComplete(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskCompleteArgs {
    pub task_id: String,
    pub result: Option<String>,
}

impl Tool for TaskComplete {
    type Args = TaskCompleteArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "task_complete",
            FAMILY,
            "Mark a task you claimed as done, with its result. Only the current claimant may.",
        )
        .tags(&["tasks", "board", "complete", "done"])
    }

    async fn run(&self, ctx: CallContext, args: TaskCompleteArgs) -> Result<Value> {
        let task = self.0.board.complete(&args.task_id, &ctx.agent.id.to_string(), args.result).await?;
        Ok(json!(task))
    }
}

pub struct TaskList(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskListArgs {
    pub status: Option<TaskStatus>,
    /// An agent's name or id.
    pub assignee: Option<String>,
}

impl Tool for TaskList {
    type Args = TaskListArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("task_list", FAMILY, "List tasks on the board, optionally by status and assignee.")
            .tags(&["tasks", "board", "list"])
            .read_only()
    }

    async fn run(&self, _: CallContext, args: TaskListArgs) -> Result<Value> {
        let filter = TaskFilter { status: args.status, assignee: args.assignee, ..Default::default() };
        let page = self.0.board.list(&filter, &PageRequest::default()).await?;
        Ok(json!({ "tasks": page.items, "total": page.total }))
    }
}

pub struct TaskStatusTool(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskStatusArgs {
    pub task_id: String,
}

impl Tool for TaskStatusTool {
    type Args = TaskStatusArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("task_status", FAMILY, "One task's status and result: poll a task you posted.")
            .tags(&["tasks", "board", "status", "poll"])
            .read_only()
    }

    async fn run(&self, _: CallContext, args: TaskStatusArgs) -> Result<Value> {
        let t = self.0.board.get(&args.task_id).await?;
        Ok(json!({
            "task_id": t.id, "status": t.status, "result": t.result, "title": t.title,
            "assigned_to": t.assigned_to, "created_at": t.created_at, "completed_at": t.completed_at,
        }))
    }
}
