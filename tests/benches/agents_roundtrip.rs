//! Round trips between agents, against the fake provider on loopback. Prints p50 and p99:
//! - `agent_send` (blocking) from one agent to another in the same daemon: the pipeline, the
//!   receiver's whole turn (one model call) and the reply;
//! - `a2a_send` from an in-process kernel to a second Kennel daemon (the release binary) over
//!   A2A JSON-RPC on loopback: the same, across two daemons, in A2A 1.0 (the daemon's card)
//!   and in 0.3 (a 0.3-only card, served beside it, naming the same endpoint);
//! - the first event of `SendStreamingMessage` (and of 0.3's `message/stream`): from sending
//!   the request to reading the task's first server-sent event.
//!
//! `cargo build --release -p kennel && cargo bench -p kennel-tests --bench agents_roundtrip`

use std::time::Instant;

use kennel_kernel::Kernel;
use kennel_kernel::agent::{ManifestInput, SpawnRequest};
use kennel_kernel::config::Config;
use kennel_kernel::tool::{CallContext, Caller};
use kennel_tests::Home;
use kennel_tests::fake_llm::{FakeLlm, Scripted};
use serde_json::json;

fn report(label: &str, mut micros: Vec<u128>) {
    micros.sort_unstable();
    let at = |p: f64| micros[((micros.len() as f64 - 1.0) * p).round() as usize];
    println!("{label:44} p50 {:6} µs   p99 {:6} µs   (n = {})", at(0.5), at(0.99), micros.len());
}

async fn agent(kernel: &Kernel, name: &str, tools: &[&str]) -> std::sync::Arc<kennel_kernel::agent::Agent> {
    let manifest: ManifestInput =
        kennel_kernel::error::from_value(json!({"name": name, "model": "m", "tools": tools})).unwrap();
    kernel.agents().create_type(manifest).await.unwrap();
    kernel.spawn_agent(SpawnRequest { agent_type: name.into(), ..Default::default() }).await.unwrap()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = std::env::args().filter_map(|a| a.parse().ok()).next().unwrap_or(300);
    let llm = FakeLlm::start().await;
    llm.set_fallback(Scripted::text("pong"));

    // A second daemon, exposing `bob` over A2A.
    let remote = Home::with_config(&format!(
        "{}[a2a]\nexpose = [\"bob\"]\npublic = [\"bob\"]\n",
        llm.provider_config("fake", "openai")
    ));
    let token = remote.token("bench").await;
    let daemon = remote.start().await;
    let api = daemon.api(&token);
    api.post("/api/templates", json!({"name": "bob", "model": "m"})).await;
    api.post("/api/agents", json!({"template": "bob"})).await;

    let dir = tempfile::tempdir().unwrap();
    let config = format!("{}[a2a]\nallowed_hosts = [\"127.0.0.1:*\"]\n", llm.provider_config("fake", "openai"));
    let config = Config::parse(std::path::Path::new("bench.toml"), &config).unwrap();
    let kernel = Kernel::open_with(dir.path(), config).await.unwrap();
    let alice = agent(&kernel, "alice", &["agent_send", "agents.message_any", "a2a.*"]).await;
    agent(&kernel, "carol", &[]).await;
    let ctx = CallContext::new(alice, Caller::Agent);

    let mut local = Vec::with_capacity(n);
    for i in 0..n + 30 {
        let t = Instant::now();
        let out = kernel
            .call_tool(ctx.clone(), "agent_send", json!({"agent_id": "carol", "message": "ping", "async": false}))
            .await
            .unwrap();
        assert_eq!(out.content["reply"], "pong");
        if i >= 30 {
            local.push(t.elapsed().as_micros());
        }
    }
    report("agent_send (blocking) in one daemon", local);

    let found = kernel.call_tool(ctx.clone(), "a2a_discover", json!({"url": daemon.base})).await.unwrap();
    let remote_id = found.content["agent_id"].clone();
    let mut across = Vec::with_capacity(n);
    for i in 0..n + 30 {
        let t = Instant::now();
        let out =
            kernel.call_tool(ctx.clone(), "a2a_send", json!({"agent_id": remote_id, "message": "ping"})).await.unwrap();
        assert_eq!(out.content["reply"], "pong");
        if i >= 30 {
            across.push(t.elapsed().as_micros());
        }
    }
    report("a2a_send to a second daemon, A2A 1.0", across);

    let card_0_3 = serve_card_0_3(&format!("{}/a2a/bob", daemon.base)).await;
    let found = kernel.call_tool(ctx.clone(), "a2a_discover", json!({"url": card_0_3})).await.unwrap();
    let remote_0_3 = found.content["agent_id"].clone();
    let mut across_0_3 = Vec::with_capacity(n);
    for i in 0..n + 30 {
        let t = Instant::now();
        let out = kernel
            .call_tool(ctx.clone(), "a2a_send", json!({"agent_id": remote_0_3, "message": "ping"}))
            .await
            .unwrap();
        assert_eq!((out.content["reply"].as_str(), out.content["protocol"].as_str()), (Some("pong"), Some("0.3")));
        if i >= 30 {
            across_0_3.push(t.elapsed().as_micros());
        }
    }
    report("a2a_send to a second daemon, A2A 0.3", across_0_3);

    for (method, version) in [("SendStreamingMessage", "1.0"), ("message/stream", "0.3")] {
        let mut first = Vec::with_capacity(n);
        for i in 0..n + 30 {
            let (elapsed, rest) = first_streamed_event(&api, method, version).await;
            rest.await;
            if i >= 30 {
                first.push(elapsed);
            }
        }
        report(&format!("first streamed event, {method}"), first);
    }
    kernel.close().await;
}

/// Serves a 0.3-only agent card (no `supportedInterfaces`) whose `url` is `endpoint`; its base.
async fn serve_card_0_3(endpoint: &str) -> String {
    let card = json!({
        "name": "bob (0.3 card)", "description": "bob, as a 0.3 client finds him", "version": "1",
        "url": endpoint, "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC",
        "capabilities": {}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": [],
    });
    let app = axum::Router::new()
        .route("/.well-known/agent-card.json", axum::routing::get(move || async move { axum::Json(card.clone()) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

/// Sends a streaming request; the microseconds until its first event arrived, and the rest of
/// the stream to read to its end (the turn's reply).
async fn first_streamed_event(
    api: &kennel_tests::Api,
    method: &str,
    version: &str,
) -> (u128, impl std::future::Future<Output = ()>) {
    let params =
        json!({ "message": { "messageId": "b", "role": "ROLE_USER", "parts": [{ "kind": "text", "text": "ping" }] } });
    let t = Instant::now();
    let mut events = api.rpc_stream("/a2a/bob", method, params, Some(version)).await;
    let first = events.next().await.expect("a first event");
    let elapsed = t.elapsed().as_micros();
    assert!(first.get("result").is_some(), "{first}");
    (elapsed, async move {
        events.rest().await;
    })
}
