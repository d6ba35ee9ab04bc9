//! Pipeline overhead and tool search, measured with criterion.
//!
//! - `pipeline/system_time`: a whole call through the pipeline (resolve, gate, validate,
//!   depth, run, spill check, audit queueing) of a trivial read-only tool.
//! - `pipeline/system_time_in_turn`: the same call made in a turn (issue 48): the approvals
//!   step finds no rule covering it and no sink, and the result is looked at for a label.
//! - `direct/system_time`: the same tool's `run` called directly; the difference between the
//!   two is the pipeline's overhead on the read-only (queued audit) path.
//! - `pipeline/goal_update` and `direct/goal_update`: the same for a tool that changes state,
//!   whose call waits until its audit row is committed (the durable path).
//! - `audit/queued` and `audit/durable`: recording one entry either way; `audit/durable_x32`:
//!   32 concurrent durable records, which share commits (group commit).
//! - `tool_search/*`: ranking a registry of the built-ins plus 150 synthetic tools.

use std::sync::Arc;

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use kennel_kernel::Kernel;
use kennel_kernel::agent::tools::{GoalUpdate, GoalUpdateArgs, Uses};
use kennel_kernel::agent::{Agent, AgentTypeSpec, ManifestInput, SpawnRequest};
use kennel_kernel::config::Config;
use kennel_kernel::system::SystemTime;
use kennel_kernel::tool::audit::AuditEntry;
use kennel_kernel::tool::meta::search;
use kennel_kernel::tool::{CallContext, Caller, NoArgs, Tool};
use serde_json::{Value, json};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

async fn kernel_with_agent(dir: &std::path::Path) -> (Kernel, Arc<Agent>) {
    let kernel = Kernel::open_with(dir, Config::default()).await.unwrap();
    let spec = AgentTypeSpec {
        name: "bench".into(),
        tools: Some(vec!["system.*".into(), "goal_update".into()]),
        ..Default::default()
    };
    kernel.agents().create_type(ManifestInput::from(spec)).await.unwrap();
    let agent = kernel.spawn_agent(SpawnRequest { agent_type: "bench".into(), ..Default::default() }).await.unwrap();
    (kernel, agent)
}

fn pipeline(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (kernel, agent) = rt.block_on(kernel_with_agent(dir.path()));
    let ctx = CallContext::new(agent, Caller::Agent);

    c.bench_function("pipeline/system_time", |b| {
        b.to_async(&rt).iter(|| kernel.call_tool(ctx.clone(), "system_time", Value::Null))
    });
    // In a turn, with the session's provenance: the approvals step scans the rules' tool globs
    // and the sinks for a call none of them covers, and the result is looked at for a label.
    let mut in_turn = ctx.clone();
    in_turn.turn = Some(uuid::Uuid::now_v7());
    in_turn.provenance = Some(kennel_kernel::approval::Provenance::default());
    c.bench_function("pipeline/system_time_in_turn", |b| {
        b.to_async(&rt).iter(|| kernel.call_tool(in_turn.clone(), "system_time", Value::Null))
    });
    c.bench_function("pipeline/forbidden", |b| {
        b.to_async(&rt).iter(|| kernel.call_tool(ctx.clone(), "tool_search", json!({"query": "x"})))
    });
    c.bench_function("direct/system_time", |b| b.to_async(&rt).iter(|| SystemTime.run(ctx.clone(), NoArgs {})));
    c.bench_function("pipeline/goal_update", |b| {
        b.to_async(&rt).iter(|| kernel.call_tool(ctx.clone(), "goal_update", json!({"goal": "bench"})))
    });
    let goal_update = GoalUpdate(Uses::new(kernel.services()));
    c.bench_function("direct/goal_update", |b| {
        b.to_async(&rt).iter(|| goal_update.run(ctx.clone(), GoalUpdateArgs { goal: "bench".into() }))
    });
    let entry = || AuditEntry {
        agent_id: ctx.agent.id,
        session_id: None,
        caller: "agent".into(),
        tool: "bench".into(),
        args_digest: "0123456789abcdef".into(),
        outcome: "ok",
        message: None,
        duration_us: 1,
        artifact_id: None,
    };
    c.bench_function("audit/durable", |b| b.to_async(&rt).iter(|| kernel.audit().record_durably(entry())));
    c.bench_function("audit/durable_x32", |b| {
        b.to_async(&rt).iter(|| futures_util::future::join_all((0..32).map(|_| kernel.audit().record_durably(entry()))))
    });
    // Last: it writes millions of rows, which would slow the durable inserts measured above.
    // Timed: queueing; untimed after each sample: writing what was queued, so the queue (and
    // memory) does not grow for the whole run.
    c.bench_function("audit/queued", |b| {
        b.iter_custom(|iters| {
            let started = std::time::Instant::now();
            for _ in 0..iters {
                kernel.audit().record(entry());
            }
            let took = started.elapsed();
            rt.block_on(kernel.audit().flush());
            took
        })
    });
    rt.block_on(kernel.close());
}

fn tool_search(c: &mut Criterion) {
    let registry = common::full_registry();
    let agent = common::agent_granted(&["*"], "all");
    // The built-ins plus 150 synthetic tools: the size of the spec's full catalogue and more.
    let n = registry.len();
    c.bench_function(&format!("tool_search/one_word_{n}_tools"), |b| {
        b.iter(|| search(&registry, &agent, None, "memory", 10).len())
    });
    c.bench_function(&format!("tool_search/three_words_{n}_tools"), |b| {
        b.iter(|| search(&registry, &agent, None, "browser click page", 10).len())
    });
}

criterion_group!(benches, pipeline, tool_search);
criterion_main!(benches);
