//! Streaming latency: from the fake provider handing a reply's first piece to its connection
//! to a client of the agent's event stream (`GET /api/agents/{id}/events`, the stream the
//! dashboard's chat reads at `/agents/{id}/live` through the same function) receiving it as
//! `text_delta`. The daemon is the real binary (`KENNEL_BIN`, the release build), on
//! loopback; provider and client share this process's clock. Prints p50 and p99.
//!
//! `cargo build --release -p kennel && KENNEL_BIN=$PWD/target/release/kennel cargo bench -p kennel-tests --bench first_token`

use std::time::{Duration, Instant};

use kennel_tests::Home;
use kennel_tests::fake_llm::{FakeLlm, Scripted};
use serde_json::json;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = std::env::args().filter_map(|a| a.parse().ok()).next().unwrap_or(200);
    let llm = FakeLlm::start().await;
    let home = Home::with_config(&llm.provider_config("fake", "openai"));
    let token = home.token("bench").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    api.post("/api/templates", json!({"name": "bench", "model": "m"})).await;
    let agent = api.post("/api/agents", json!({"template": "bench"})).await.body["id"].as_str().unwrap().to_string();

    // The event stream's reader notes when each turn's first text piece arrives.
    let mut events = api.request(reqwest::Method::GET, &format!("/api/agents/{agent}/events")).send().await.unwrap();
    let (seen, mut arrivals) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    tokio::spawn(async move {
        let mut pending = String::new();
        let mut first_of_turn = true;
        while let Ok(Some(chunk)) = events.chunk().await {
            let at = Instant::now();
            pending.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = pending.find("\n\n") {
                let event: String = pending.drain(..end + 2).collect();
                if event.contains("event: text_delta") && first_of_turn {
                    first_of_turn = false;
                    let _ = seen.send(at);
                } else if event.contains("event: turn_ended") {
                    first_of_turn = true;
                }
            }
        }
    });

    let mut micros: Vec<u128> = Vec::with_capacity(n);
    for i in 0..n + 20 {
        // A gap before the first piece, so its moment stands apart from the stream's start.
        llm.push(Scripted::SlowText { text: "first second".into(), piece_millis: 5 });
        let path = format!("/api/agents/{agent}/messages");
        let turn = api.post(&path, json!({"message": "go"}));
        let (reply, arrived) = tokio::join!(turn, arrivals.recv());
        assert_eq!(reply.status, 200, "{}", reply.text);
        let sent = llm.first_pieces()[i];
        let latency = arrived.expect("an arrival").duration_since(sent);
        if i >= 20 {
            micros.push(latency.as_micros());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    micros.sort_unstable();
    let at = |p: f64| micros[((micros.len() as f64 - 1.0) * p).round() as usize];
    println!("first token: provider → event stream client   p50 {:5} µs   p99 {:5} µs   (n = {n})", at(0.5), at(0.99));
    drop(daemon);
}
