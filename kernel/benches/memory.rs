//! The semantic store at size, through the tools as an agent calls them (registry, gate,
//! validation, audit — the whole pipeline):
//!
//! - `memory_semantic_search` over one agent's 100,000 memories with the local embedder:
//!   p50 and p99 of 2,000 searches (the labelled set's questions, in turn);
//! - the index's memory for those 100,000 (its own count of bytes, and the process's RSS
//!   before and after the index loads);
//! - `memory_semantic_add` of new facts, one after another, into a store of 10,000
//!   (extractor and duplicate check included): adds per second.
//!
//! The memories are the labelled set's 235 facts, each repeated with a distinct note of two
//! made-up words, so the common words are as frequent as they would be in a big store and
//! every memory is still its own.
//!
//! `cargo bench -p kennel-kernel --bench memory`

use std::time::{Duration, Instant};

use kennel_kernel::Kernel;
use kennel_kernel::agent::{ManifestInput, SpawnRequest};
use kennel_kernel::config::Config;
use kennel_kernel::memory::semantic;
use kennel_kernel::memory::semantic::SemanticMemory;
use kennel_kernel::tool::{CallContext, Caller};
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};

fn lines(name: &str) -> Vec<Value> {
    let path = format!("{}/../tests/memory-quality/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `n` distinct memories built on the labelled set's facts.
fn fixture(n: usize, seed: u64) -> Vec<String> {
    let facts: Vec<String> =
        lines("memories.jsonl").iter().map(|m| m["content"].as_str().unwrap().to_string()).collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut word =
        || -> String { (0..rng.random_range(4..9)).map(|_| rng.random_range(b'a'..=b'z') as char).collect() };
    (0..n).map(|i| format!("{} (note {i}: {} {})", facts[i % facts.len()], word(), word())).collect()
}

fn rss_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0.0);
    pages * 4096.0 / (1024.0 * 1024.0)
}

async fn agent(kernel: &Kernel, name: &str) -> CallContext {
    let manifest: ManifestInput =
        kennel_kernel::error::from_value(json!({"name": name, "tools": ["memory_semantic.*"]})).unwrap();
    kernel.agents().create_type(manifest).await.unwrap();
    let agent = kernel.spawn_agent(SpawnRequest { agent_type: name.into(), ..Default::default() }).await.unwrap();
    CallContext::new(agent, Caller::Agent)
}

fn out_of(some: &[String], all: &[String]) -> String {
    format!("{} of {} distinct questions", some.iter().collect::<std::collections::HashSet<_>>().len(), all.len())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    {
        let kernel = Kernel::open_with(dir.path(), Config::default()).await.unwrap();
        let big = agent(&kernel, "big").await;
        let facts = fixture(100_000, 1);
        let pairs: Vec<(&str, &str)> = facts.iter().map(|f| (f.as_str(), "fact")).collect();
        for chunk in pairs.chunks(10_000) {
            kernel
                .optional::<SemanticMemory>()
                .ok_or_else(semantic::switched_off)
                .unwrap()
                .import(big.agent.id, chunk, "import")
                .await
                .unwrap();
        }
        kernel.close().await;
    }
    // Search over 100,000, the index loaded as after a restart: a fresh kernel on the home.
    let kernel = Kernel::open_with(dir.path(), Config::default()).await.unwrap();
    let memory = kernel.optional::<SemanticMemory>().ok_or_else(semantic::switched_off).unwrap();
    let big = CallContext::new(kernel.agents().get("big").unwrap(), Caller::Agent);
    let before = rss_mib();
    let loading = Instant::now();
    let first = kernel.call_tool(big.clone(), "memory_semantic_search", json!({"query": "warm up"})).await.unwrap();
    let load_time = loading.elapsed();
    let after = rss_mib();
    assert!(first.content["hits"].is_array());
    let index_bytes = memory.index_bytes(big.agent.id).await;
    let questions: Vec<String> =
        lines("questions.jsonl").iter().map(|q| q["question"].as_str().unwrap().to_string()).collect();
    let mut took = Vec::with_capacity(2000);
    let mut empty = Vec::new();
    for i in 0..2000 {
        let started = Instant::now();
        let out = kernel
            .call_tool(big.clone(), "memory_semantic_search", json!({"query": questions[i % questions.len()]}))
            .await
            .unwrap();
        took.push(started.elapsed());
        if out.content["hits"].as_array().is_none_or(Vec::is_empty) {
            empty.push(questions[i % questions.len()].clone());
        }
    }
    empty.dedup();
    println!("questions with no hit: {empty:?} ({})", out_of(&empty, &questions));
    took.sort();
    println!(
        "memory_semantic_search, 100,000 memories, local embedder, through the pipeline: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (2,000 searches)",
        percentile(&took, 0.5).as_secs_f64() * 1e3,
        percentile(&took, 0.99).as_secs_f64() * 1e3,
        took.last().unwrap().as_secs_f64() * 1e3
    );
    println!(
        "index of 100,000 memories: {:.1} MiB by its own count; RSS {:.1} → {:.1} MiB (+{:.1}) on loading it in {:.2} s",
        index_bytes as f64 / (1024.0 * 1024.0),
        before,
        after,
        after - before,
        load_time.as_secs_f64()
    );

    // Adds into 10,000.
    let mid = agent(&kernel, "mid").await;
    let seed = fixture(10_000, 2);
    let pairs: Vec<(&str, &str)> = seed.iter().map(|f| (f.as_str(), "fact")).collect();
    memory.import(mid.agent.id, &pairs, "import").await.unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let new: Vec<String> = (0..2000)
        .map(|i| {
            let w: String = (0..8).map(|_| rng.random_range(b'a'..=b'z') as char).collect();
            format!("Project {w} number {i} ships its release on the {}th with {} engineers.", i % 28 + 1, i % 9 + 2)
        })
        .collect();
    let started = Instant::now();
    let mut written = 0;
    for content in &new {
        let out = kernel.call_tool(mid.clone(), "memory_semantic_add", json!({"content": content})).await.unwrap();
        written += out.content["written"].as_array().unwrap().len();
    }
    let elapsed = started.elapsed();
    println!(
        "memory_semantic_add into 10,000 memories, one at a time through the pipeline (extractor, duplicate check, durable audit): {:.0} adds/s ({} of {} written)",
        new.len() as f64 / elapsed.as_secs_f64(),
        written,
        new.len()
    );
    kernel.close().await;
}
