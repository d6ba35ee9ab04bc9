use std::time::Duration;

use kennel_tests::eventually;
use kennel_tests::fake_llm::Scripted;
use serde_json::json;

use crate::{agent_from, daemon_with_llm};

#[tokio::test]
async fn a_published_event_starts_a_turn_on_each_matching_trigger() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let watcher = agent_from(
        &api,
        json!({"name": "watcher", "model": "m", "trigger": [{"event": "inbox.*", "prompt": "New file: {{payload}} ({{event_type}})"}]}),
    )
    .await;
    agent_from(&api, json!({"name": "bystander", "model": "m", "trigger": [{"event": "billing.*", "prompt": "x"}]}))
        .await;
    llm.push(Scripted::text("filed it"));

    let published =
        api.post("/api/events", json!({"event_type": "inbox.new_file", "payload": {"path": "/inbox/a.pdf"}})).await;
    assert_eq!(published.status, 200, "{}", published.text);
    assert_eq!(published.body["fired"].as_array().unwrap().len(), 1);
    assert_eq!(published.body["fired"][0]["agent"], "watcher");

    let ran = eventually(Duration::from_secs(5), || async { !llm.requests().is_empty() }).await;
    assert!(ran, "the trigger started a turn");
    let prompt = llm.requests()[0].body["messages"][1]["content"].as_str().unwrap().to_string();
    assert_eq!(prompt, "New file: {\"path\":\"/inbox/a.pdf\"} (inbox.new_file)");
    let audit = api.get(&format!("/api/audit?agent={watcher}&tool=trigger")).await;
    assert_eq!(audit.body[0]["caller"], "event:token:tests", "callers are named as everywhere else");
    assert!(audit.body[0]["message"].as_str().unwrap().contains("inbox.new_file"));

    let bad = api.post("/api/events", json!({"event_type": "Not Valid"})).await;
    assert_eq!(bad.status, 422);
}

#[tokio::test]
async fn cooldown_and_max_fires_limit_a_trigger_and_agents_can_publish() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    agent_from(
        &api,
        json!({"name": "limited", "model": "m", "trigger": [{"event": "tick", "prompt": "tick", "max_fires": 2}]}),
    )
    .await;
    agent_from(
        &api,
        json!({"name": "cool", "model": "m", "trigger": [{"event": "tick", "prompt": "tock", "cooldown_secs": 3600}]}),
    )
    .await;
    let publisher = agent_from(&api, json!({"name": "publisher", "tools": ["event_publish"]})).await;
    llm.set_fallback(Scripted::text("ok"));

    let first = api.invoke(&publisher, "event_publish", json!({"event_type": "tick", "payload": 1})).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.body["content"]["fired"].as_array().unwrap().len(), 2);
    let second = api.post("/api/events", json!({"event_type": "tick"})).await;
    assert_eq!(second.body["fired"][0]["agent"], "limited");
    assert!(second.body["skipped"][0]["reason"].as_str().unwrap().contains("cooling down"));
    let third = api.post("/api/events", json!({"event_type": "tick"})).await;
    assert!(third.body["fired"].as_array().unwrap().is_empty());
    let reasons: Vec<_> =
        third.body["skipped"].as_array().unwrap().iter().map(|s| s["reason"].as_str().unwrap().to_string()).collect();
    assert!(reasons.iter().any(|r| r.contains("max_fires = 2 reached")), "{reasons:?}");
    let fired = eventually(Duration::from_secs(5), || async { llm.requests().len() == 3 }).await;
    assert!(fired, "three turns in all: {}", llm.requests().len());
}

#[tokio::test]
async fn events_published_at_once_never_exceed_max_fires() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    agent_from(
        &api,
        json!({"name": "capped", "model": "m", "trigger": [{"event": "burst", "prompt": "b", "max_fires": 3}]}),
    )
    .await;
    llm.set_fallback(Scripted::text("ok"));
    let publishes = (0..20).map(|_| {
        let api = api.clone();
        tokio::spawn(async move { api.post("/api/events", json!({"event_type": "burst"})).await })
    });
    let mut fired = 0;
    for p in publishes {
        let r = p.await.unwrap();
        assert_eq!(r.status, 200, "{}", r.text);
        fired += r.body["fired"].as_array().unwrap().len();
    }
    assert_eq!(fired, 3, "exactly max_fires fires, however the publishes interleave");
}
