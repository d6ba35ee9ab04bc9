//! Shared bench fixtures: a registry the size of the full tool catalogue.

use kennel_kernel::agent::{Agent, AgentStatus, ManifestInput, validate};
use kennel_kernel::config::Config;
use kennel_kernel::error::Result;
use kennel_kernel::tool::{CallContext, NoArgs, Registry, Tool, ToolDef};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// Arguments shaped like a typical real tool's: a few typed, documented fields.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
pub struct TypicalArgs {
    /// The main input of the tool, e.g. a selector, a key or a path.
    target: String,
    /// Optional free text that goes with it.
    text: Option<String>,
    /// How many results at most (default 10).
    limit: Option<u32>,
}

/// A stand-in tool so benches measure a registry as large as the spec's catalogue.
pub struct Synthetic(pub ToolDef);

impl Tool for Synthetic {
    type Args = TypicalArgs;
    fn def(&self) -> ToolDef {
        self.0.clone()
    }
    async fn run(&self, _: CallContext, _: TypicalArgs) -> Result<Value> {
        Ok(Value::Null)
    }
}

/// Stand-in for a tool without arguments (kept for shape variety).
#[allow(dead_code)]
pub struct Bare(pub ToolDef);

impl Tool for Bare {
    type Args = NoArgs;
    fn def(&self) -> ToolDef {
        self.0.clone()
    }
    async fn run(&self, _: CallContext, _: NoArgs) -> Result<Value> {
        Ok(Value::Null)
    }
}

/// The built-in tools, as a kernel opened on the default config registers them.
pub fn builtin_registry() -> Registry {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let home = tempfile::tempdir().unwrap();
        let kernel = kennel_kernel::Kernel::open_with(home.path(), Config::default()).await.unwrap();
        let registry = (*kernel.tools()).clone();
        kernel.close().await;
        registry
    })
}

/// The built-in tools plus 150 synthetic ones spread over ten families.
pub fn full_registry() -> Registry {
    let mut registry = builtin_registry();
    let families =
        ["browser", "memory", "tasks", "schedule", "media", "channel", "process", "skills", "knowledge", "a2a"];
    for i in 0..150 {
        let family = families[i % families.len()];
        let def = ToolDef::new(
            format!("{family}_action_{i}"),
            family,
            format!("Does synthetic thing number {i} for the {family} family, with a longer description like real tools have."),
        )
        .tags(&[family, "synthetic"]);
        registry.add(Synthetic(def));
    }
    registry
}

/// An agent (not stored anywhere) with these grants and tool mode.
pub fn agent_granted(grants: &[&str], mode: &str) -> Agent {
    let manifest = validate(
        kennel_kernel::error::from_value::<ManifestInput>(serde_json::json!({
            "name": "bench", "tool_mode": mode, "tools": grants,
        }))
        .unwrap(),
    )
    .unwrap();
    Agent {
        id: uuid::Uuid::now_v7(),
        name: "bench".into(),
        agent_type: "bench".into(),
        manifest,
        goal: None,
        status: AgentStatus::Running,
        parent_id: None,
        ephemeral: false,
        paused: None,
        budget_lifted_at: None,
        created_at: String::new(),
        updated_at: String::new(),
    }
}
