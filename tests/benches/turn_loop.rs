//! Loop overhead per turn against the fake provider on loopback: what the kernel adds to a
//! turn beyond the model's own round trip. Prints p50 and p99 (microseconds) of:
//! - the bare provider round trip (reqwest → fake provider → back),
//! - a turn that gets a text reply (one model call),
//! - a turn with one tool call then a reply (two model calls).
//!
//! `cargo bench -p kennel-tests --bench turn_loop` (add `-- N` for N turns per case).

use std::time::Instant;

use kennel_kernel::Kernel;
use kennel_kernel::agent::{ManifestInput, SpawnRequest};
use kennel_kernel::config::Config;
use kennel_kernel::tool::Caller;
use kennel_kernel::turn::TurnRequest;
use kennel_tests::fake_llm::{FakeLlm, Scripted};
use serde_json::json;

fn percentile(sorted: &[u128], p: f64) -> u128 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn report(label: &str, mut micros: Vec<u128>) -> u128 {
    micros.sort_unstable();
    let (p50, p99) = (percentile(&micros, 0.5), percentile(&micros, 0.99));
    println!("{label:42} p50 {p50:6} µs   p99 {p99:6} µs   (n = {})", micros.len());
    p50
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = std::env::args().filter_map(|a| a.parse().ok()).next().unwrap_or(500);
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = Config::parse(std::path::Path::new("bench.toml"), &llm.provider_config("fake", "openai")).unwrap();
    let kernel = Kernel::open_with(dir.path(), config).await.unwrap();
    let manifest: ManifestInput = kennel_kernel::error::from_value(json!({
        "name": "bench", "model": "m", "system_prompt": "You are a benchmark.", "tools": ["system_time"]
    }))
    .unwrap();
    kernel.agents().create_type(manifest).await.unwrap();
    let agent = kernel.spawn_agent(SpawnRequest { agent_type: "bench".into(), ..Default::default() }).await.unwrap();
    let agent = agent.id.to_string();

    // The provider alone, with a request of the same shape.
    let http = kennel_kernel::net::http_client().build().unwrap();
    let url = format!("{}/chat/completions", llm.base_url());
    let body = json!({"model": "m", "max_tokens": 4096, "messages": [
        {"role": "system", "content": "You are a benchmark."}, {"role": "user", "content": "hi"}]});
    llm.set_fallback(Scripted::text("hello"));
    let mut bare = Vec::with_capacity(n);
    for _ in 0..n + 50 {
        let t = Instant::now();
        http.post(&url).json(&body).send().await.unwrap().bytes().await.unwrap();
        bare.push(t.elapsed().as_micros());
    }
    let bare_p50 = report("provider round trip alone", bare.split_off(50));

    let turn = |message: &'static str| {
        let kernel = kernel.clone();
        let agent = agent.clone();
        async move {
            let t = Instant::now();
            let r = kernel.send_message(&agent, TurnRequest::headless(message, Caller::Agent)).await.unwrap();
            (t.elapsed().as_micros(), r.iterations)
        }
    };
    let mut text_turns = Vec::with_capacity(n);
    for _ in 0..n + 50 {
        text_turns.push(turn("hi").await.0);
    }
    let text_p50 = report("turn: text reply (1 model call)", text_turns.split_off(50));

    let mut tool_turns = Vec::with_capacity(n);
    for _ in 0..n + 50 {
        llm.push(Scripted::call("system_time", json!({}))).push(Scripted::text("done"));
        let (micros, iterations) = turn("time?").await;
        assert_eq!(iterations, 2);
        tool_turns.push(micros);
    }
    let tool_p50 = report("turn: one tool call + reply (2 model calls)", tool_turns.split_off(50));
    println!(
        "kernel overhead per turn (p50): {} µs; per tool iteration: {} µs",
        text_p50.saturating_sub(bare_p50),
        tool_p50.saturating_sub(text_p50 + bare_p50)
    );
    kernel.close().await;
}
