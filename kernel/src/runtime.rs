//! The running kernel as a family sees it: run a turn, stop an agent, run a tool call through
//! the pipeline. These three need the whole kernel (the turn loop reads every service), so a
//! family that starts turns (tasks, schedules, channels, A2A, workflows), stops agents or runs
//! tools for others (`run_tool`, MCP) takes a [`Runtime`] from [`crate::family::Services`]
//! instead of importing [`crate::Kernel`] — the kernel's import graph stays a tree below
//! `lib.rs`. A `Runtime` holds the kernel weakly: a family keeping one does not keep the kernel
//! open, and a call after the kernel closed is refused (`Unavailable`).

use std::sync::{Arc, OnceLock};

use futures_util::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::tool::CallContext;
pub use crate::turn::request::{FellBack, TraceEntry, TurnEnd, TurnRequest, TurnResult};

/// A tool's result as the caller (and the model) gets it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CallOutput {
    /// The result, or the spill placeholder when it was too large.
    #[schema(value_type = Object)]
    pub content: Value,
    /// Set when the full result went to the artifact store.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact_id: Option<String>,
    pub duration_us: u64,
}

/// What the kernel does for a [`Runtime`]; `lib.rs` implements it over a weak handle.
pub(crate) trait Engine: Send + Sync {
    fn run_turn(&self, agent: Arc<Agent>, req: TurnRequest) -> BoxFuture<'static, Result<TurnResult>>;
    fn stop_agent(&self, agent: String) -> BoxFuture<'static, Result<Arc<Agent>>>;
    fn call_tool(&self, ctx: CallContext, name: String, args: Value) -> BoxFuture<'static, Result<CallOutput>>;
}

/// A handle on the running kernel. Cheap to clone. Families get it at open, before the kernel
/// exists; the kernel binds it once it is built.
#[derive(Clone)]
pub struct Runtime(Arc<OnceLock<Box<dyn Engine>>>);

impl Runtime {
    /// A handle not bound yet: calls are refused until [`Runtime::bind`].
    pub(crate) fn unbound() -> Runtime {
        Runtime(Arc::new(OnceLock::new()))
    }

    pub(crate) fn bind(&self, engine: Box<dyn Engine>) {
        assert!(self.0.set(engine).is_ok(), "the runtime is bound once");
    }

    fn engine(&self) -> Result<&dyn Engine> {
        self.0.get().map(|e| &**e).ok_or_else(not_running)
    }

    /// Runs one turn of `agent` (here, or on the daemon of the cluster that holds it), as
    /// `POST /api/agents/{id}/messages` does.
    pub async fn run_turn(&self, agent: Arc<Agent>, req: TurnRequest) -> Result<TurnResult> {
        self.engine()?.run_turn(agent, req).await
    }

    /// Stops an agent as an operator's stop does: its turns cancelled, schedules paused,
    /// browser and processes closed.
    pub async fn stop_agent(&self, agent: &str) -> Result<Arc<Agent>> {
        self.engine()?.stop_agent(agent.to_string()).await
    }

    /// Runs a tool call through the pipeline (grants, limits, audit), as any front does.
    pub async fn call_tool(&self, ctx: CallContext, name: &str, args: Value) -> Result<CallOutput> {
        self.engine()?.call_tool(ctx, name.to_string(), args).await
    }
}

/// The refusal of a call made before the kernel was built or after it closed.
pub(crate) fn not_running() -> Error {
    Error::unavailable("the kernel is not running (it is starting or has shut down); try again")
}
