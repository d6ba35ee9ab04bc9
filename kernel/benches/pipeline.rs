//! Pipeline overhead and tool search, measured with criterion.
//!
//! - `pipeline/system_time`: a whole call through the pipeline (resolve, gate, validate,
//!   depth, run, spill check, audit queueing) of a trivial tool.
//! - `direct/system_time`: the same tool's `run` called directly; the difference between the
//!   two is the pipeline's overhead.
//! - `tool_search/*`: ranking a registry of the built-ins plus 150 synthetic tools.

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use kennel_kernel::Kernel;
use kennel_kernel::agent::{Agent, AgentTypeSpec, ManifestInput, SpawnRequest, validate};
use kennel_kernel::config::Config;
use kennel_kernel::error::Result;
use kennel_kernel::system::SystemTime;
use kennel_kernel::tool::meta::search;
use kennel_kernel::tool::{CallContext, Caller, NoArgs, Registry, Tool, ToolDef};
use serde_json::{Value, json};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

async fn kernel_with_agent(dir: &std::path::Path) -> (Kernel, Arc<Agent>) {
    let kernel = Kernel::open_with(dir, Config::default()).await.unwrap();
    let spec = AgentTypeSpec { name: "bench".into(), tools: Some(vec!["system.*".into()]), ..Default::default() };
    kernel.agents().create_type(ManifestInput::from(spec)).await.unwrap();
    let agent = kernel.agents().spawn(SpawnRequest { agent_type: "bench".into(), ..Default::default() }).await.unwrap();
    (kernel, agent)
}

fn pipeline(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (kernel, agent) = rt.block_on(kernel_with_agent(dir.path()));
    let ctx = CallContext::new(kernel.clone(), agent, Caller::Agent);

    c.bench_function("pipeline/system_time", |b| {
        b.to_async(&rt).iter(|| kernel.call_tool(ctx.clone(), "system_time", Value::Null))
    });
    c.bench_function("pipeline/forbidden", |b| {
        b.to_async(&rt).iter(|| kernel.call_tool(ctx.clone(), "tool_search", json!({"query": "x"})))
    });
    c.bench_function("direct/system_time", |b| b.to_async(&rt).iter(|| SystemTime.run(ctx.clone(), NoArgs {})));
    rt.block_on(kernel.close());
}

/// A stand-in tool so the search bench ranks a registry the size of the full catalogue.
struct Synthetic(ToolDef);

impl Tool for Synthetic {
    type Args = NoArgs;
    fn def(&self) -> ToolDef {
        self.0.clone()
    }
    async fn run(&self, _: CallContext, _: NoArgs) -> Result<Value> {
        Ok(Value::Null)
    }
}

fn tool_search(c: &mut Criterion) {
    let mut registry = Registry::builtin(&Config::default());
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
    let manifest = validate(ManifestInput::from(AgentTypeSpec {
        name: "all".into(),
        tools: Some(vec!["*".into()]),
        ..Default::default()
    }))
    .unwrap();
    let agent = Agent {
        id: uuid::Uuid::now_v7(),
        name: "all".into(),
        agent_type: "all".into(),
        manifest,
        goal: None,
        status: kennel_kernel::agent::AgentStatus::Running,
        parent_id: None,
        created_at: String::new(),
        updated_at: String::new(),
    };
    assert_eq!(registry.len(), 154);
    c.bench_function("tool_search/one_word_154_tools", |b| b.iter(|| search(&registry, &agent, "memory", 10).len()));
    c.bench_function("tool_search/three_words_154_tools", |b| {
        b.iter(|| search(&registry, &agent, "browser click page", 10).len())
    });
}

criterion_group!(benches, pipeline, tool_search);
criterion_main!(benches);
