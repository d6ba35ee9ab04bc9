use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::agent_with;
use kennel_kernel::tool::pipeline::args_digest;
use kennel_tests::Home;

#[tokio::test]
async fn types_agents_grants_tokens_and_sessions_survive_a_restart() {
    let home = Home::new();
    let token = home.token("ops").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    let id = agent_with(&api, "keeper", &["tool_search"]).await;
    api.put(&format!("/api/agents/{id}/capabilities"), json!({"tools": ["meta.*"], "memory_read": ["kv:*"]})).await;
    let stopped = agent_with(&api, "retired", &[]).await;
    api.post(&format!("/api/agents/{stopped}/stop"), json!({})).await;
    let session =
        api.post(&format!("/api/agents/{id}/sessions"), json!({})).await.body["id"].as_str().unwrap().to_string();
    let load = api
        .post(
            &format!("/api/agents/{id}/tools/tool_load/invoke"),
            json!({"args": {"name": "read_artifact"}, "session_id": session}),
        )
        .await;
    assert_eq!(load.status, 200, "{}", load.text);
    let before = (api.get("/api/templates").await.body, api.get("/api/agents").await.body);

    let (code, stderr) = daemon.stop().await;
    assert_eq!(code, Some(0), "clean shutdown on SIGTERM: {stderr}");
    assert!(stderr.contains("closing the database") || !stderr.contains("ERROR"), "{stderr}");

    let daemon = home.start().await;
    let api = daemon.api(&token);
    assert_eq!(api.get("/api/templates").await.body, before.0);
    assert_eq!(api.get("/api/agents").await.body, before.1);
    let agent = api.get(&format!("/api/agents/{id}")).await;
    assert_eq!(agent.body["manifest"]["capabilities"]["memory_read"], json!(["kv:*"]));
    assert_eq!(api.get(&format!("/api/agents/{stopped}")).await.body["status"], "stopped");
    let search = api
        .post(
            &format!("/api/agents/{id}/tools/tool_search/invoke"),
            json!({"args": {"query": "read_artifact"}, "session_id": session}),
        )
        .await;
    assert_eq!(search.body["content"]["tools"][0]["name"], "read_artifact");
    assert_eq!(search.body["content"]["tools"][0]["loaded"], true, "loaded tools survive restarts");
    let audit = api.get(&format!("/api/audit?agent={id}&tool=tool_load")).await;
    assert_eq!(audit.body.as_array().unwrap().len(), 1, "the audit log survives too");
}

/// Issue 10 §5: `kill -9` during a burst of calls lost acknowledged audit rows, because the
/// answer went out before the queued row was written. A state-changing call (`task_post`) is
/// now answered only after its row is committed, so every call that got an answer before the
/// kill has its row after the restart.
#[tokio::test]
async fn every_answered_state_changing_call_keeps_its_audit_row_through_kill_9() {
    const WORKERS: usize = 16;
    const CALLS_EACH: usize = 60; // at most 960 rows: one audit page holds them all
    const KILL_AFTER: usize = 250;
    let home = Home::new();
    let token = home.token("ops").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    let agent = agent_with(&api, "poster", &["task_post"]).await;

    let answered: Arc<Mutex<Vec<Value>>> = Arc::default();
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..WORKERS {
        let (api, answered, path) =
            (api.clone(), answered.clone(), format!("/api/agents/{agent}/tools/task_post/invoke"));
        workers.spawn(async move {
            for call in 0..CALLS_EACH {
                let args = json!({"body": "", "title": format!("w{worker} c{call}")});
                let sent = api.request(reqwest::Method::POST, &path).json(&json!({ "args": args })).send().await;
                let Ok(res) = sent else { return }; // the daemon is gone
                let ok = res.status() == 200;
                if res.bytes().await.is_err() {
                    return; // killed before the answer was complete: not acknowledged
                }
                assert!(ok, "task_post failed before the kill");
                answered.lock().unwrap().push(args);
            }
        });
    }
    let started = std::time::Instant::now();
    while answered.lock().unwrap().len() < KILL_AFTER && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    daemon.kill().await;
    while let Some(done) = workers.join_next().await {
        done.expect("a worker panicked");
    }
    let answered = answered.lock().unwrap().clone();
    assert!(answered.len() >= KILL_AFTER, "the burst was under way when the daemon was killed");

    let daemon = home.start().await;
    let api = daemon.api(&token);
    let audit = api.get(&format!("/api/audit?agent={agent}&tool=task_post&limit=1000")).await;
    let stored: HashSet<&str> =
        audit.body.as_array().unwrap().iter().map(|r| r["args_digest"].as_str().unwrap()).collect();
    let lost: Vec<&Value> = answered.iter().filter(|args| !stored.contains(args_digest(args).as_str())).collect();
    assert!(lost.is_empty(), "{} of {} answered calls lost their audit row: {lost:?}", lost.len(), answered.len());
}
