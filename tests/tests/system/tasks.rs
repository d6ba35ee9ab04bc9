use std::collections::HashSet;
use std::time::Duration;

use kennel_tests::eventually;
use serde_json::json;

use crate::{agent_from, daemon, daemon_with_config};

#[tokio::test]
async fn sixteen_concurrent_claimers_never_share_a_task_and_lose_none() {
    let (_home, _d, api) = daemon_with_config("[task_board]\nwake_assignee = false\n").await;
    const TASKS: usize = 2000;
    for i in 0..TASKS {
        let posted = api.post("/api/tasks", json!({"title": format!("job {i}"), "priority": (i % 10) as i64})).await;
        assert_eq!(posted.status, 201);
    }
    api.post("/api/templates", json!({"name": "worker", "tools": ["tasks.*"]})).await;
    let mut workers = Vec::new();
    for i in 0..16 {
        let a = api.post("/api/agents", json!({"template": "worker", "name": format!("w{i}")})).await;
        workers.push(a.body["id"].as_str().unwrap().to_string());
    }
    let claimers = workers.into_iter().map(|w| {
        let api = api.clone();
        tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let r = api.invoke(&w, "task_claim", json!({})).await;
                assert_eq!(r.status, 200, "{}", r.text);
                match r.body["content"]["claimed"]["id"].as_str() {
                    Some(id) => mine.push(id.to_string()),
                    None => return mine,
                }
            }
        })
    });
    let mut all = Vec::new();
    for c in claimers {
        all.extend(c.await.unwrap());
    }
    let unique: HashSet<_> = all.iter().collect();
    assert_eq!(all.len(), TASKS, "none lost");
    assert_eq!(unique.len(), TASKS, "no task claimed twice");
    let pending = api.get("/api/tasks?status=pending").await;
    assert!(pending.body.as_array().unwrap().is_empty());
}

#[tokio::test]
async fn claims_take_the_best_task_meant_for_the_caller_and_only_the_claimant_completes() {
    let (_home, _d, api) = daemon_with_config("[task_board]\nwake_assignee = false\n").await;
    let alice = agent_from(&api, json!({"name": "alice", "tools": ["tasks.*"]})).await;
    let bob = agent_from(&api, json!({"name": "bob", "tools": ["tasks.*"]})).await;
    api.post("/api/tasks", json!({"title": "low", "priority": 1})).await;
    api.post("/api/tasks", json!({"title": "high, for bob", "priority": 9, "assignee": "bob"})).await;
    let posted =
        api.invoke(&alice, "task_post", json!({"title": "high, anyone", "body": "details", "priority": 8})).await;
    assert_eq!(posted.status, 200, "{}", posted.text);
    api.post("/api/tasks", json!({"title": "high, older", "priority": 8})).await;

    let first = api.invoke(&alice, "task_claim", json!({})).await;
    assert_eq!(first.body["content"]["claimed"]["title"], "high, anyone", "priority, then age; not bob's");
    let filtered = api.invoke(&alice, "task_claim", json!({"priority_filter": 9})).await;
    assert!(filtered.body["content"]["claimed"].is_null());
    let bobs = api.invoke(&bob, "task_claim", json!({})).await;
    assert_eq!(bobs.body["content"]["claimed"]["title"], "high, for bob");

    let id = first.body["content"]["claimed"]["id"].as_str().unwrap();
    let stolen = api.invoke(&bob, "task_complete", json!({"task_id": id, "result": "mine"})).await;
    assert_eq!(stolen.status, 403);
    let done = api.invoke(&alice, "task_complete", json!({"task_id": id, "result": "shipped"})).await;
    assert_eq!(done.status, 200);
    assert_eq!(api.invoke(&alice, "task_complete", json!({"task_id": id})).await.status, 409);
    let status = api.invoke(&bob, "task_status", json!({"task_id": id})).await;
    assert_eq!(status.body["content"]["status"], "done");
    assert_eq!(status.body["content"]["result"], "shipped");
    assert!(status.body["content"]["completed_at"].is_string());
    let listed = api.invoke(&bob, "task_list", json!({"status": "claimed", "assignee": "bob"})).await;
    assert_eq!(listed.body["content"]["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(api.invoke(&bob, "task_list", json!({"status": "lost"})).await.status, 422);
    assert_eq!(api.invoke(&bob, "task_post", json!({"title": "x", "body": "", "priority": 11})).await.status, 422);
}

#[tokio::test]
async fn the_sweeper_returns_expired_claims_and_fails_tasks_past_max_retries() {
    let (home, _d, api) =
        daemon_with_config("[task_board]\nclaim_ttl_secs = 1\nmax_retries = 2\nwake_assignee = false\n").await;
    let slow = agent_from(&api, json!({"name": "slow", "tools": ["tasks.*"]})).await;
    let task = api.post("/api/tasks", json!({"title": "flaky"})).await.body["id"].as_str().unwrap().to_string();
    let path = format!("/api/tasks/{task}");

    api.invoke(&slow, "task_claim", json!({})).await;
    let reset =
        eventually(Duration::from_secs(6), || async { api.get(&path).await.body["task"]["status"] == "pending" }).await;
    assert!(reset, "an expired claim goes back to pending");
    assert_eq!(api.get(&path).await.body["task"]["retries"], 1);

    api.invoke(&slow, "task_claim", json!({})).await;
    let failed =
        eventually(Duration::from_secs(6), || async { api.get(&path).await.body["task"]["status"] == "failed" }).await;
    assert!(failed, "after max_retries the task fails");
    let detail = api.get(&path).await;
    let statuses: Vec<_> =
        detail.body["history"].as_array().unwrap().iter().map(|e| e["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["pending", "claimed", "pending", "claimed", "failed"]);
    let changes = |detail: &serde_json::Value| -> Vec<String> {
        detail["history"].as_array().unwrap().iter().map(|e| e["change"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(changes(&detail.body), ["posted", "claimed", "claim_expired", "claimed", "failed"], "{}", detail.text);

    // Operators can retry it; a config change applies without a restart.
    assert_eq!(api.post(&format!("{path}/retry"), json!({})).await.body["status"], "pending");
    let retried = changes(&api.get(&path).await.body);
    assert_eq!(retried.last().map(String::as_str), Some("pending"), "an operator's retry is no expiry: {retried:?}");
    std::fs::write(home.path().join("config.toml"), "[task_board]\nclaim_ttl_secs = 600\nwake_assignee = false\n")
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    api.invoke(&slow, "task_claim", json!({})).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(api.get(&path).await.body["task"]["status"], "claimed", "the longer TTL now applies");
}

#[tokio::test]
async fn operators_reassign_cancel_and_retry() {
    let (_home, d, api) = daemon().await;
    let a = agent_from(&api, json!({"name": "a", "tools": ["tasks.*"]})).await;
    let b = agent_from(&api, json!({"name": "b", "tools": ["tasks.*"]})).await;
    let id = api.post("/api/tasks", json!({"title": "t"})).await.body["id"].as_str().unwrap().to_string();
    api.invoke(&a, "task_claim", json!({})).await;
    let moved = api.post(&format!("/api/tasks/{id}/reassign"), json!({"assignee": "b"})).await;
    assert_eq!(moved.status, 200, "{}", moved.text);
    assert_eq!(moved.body["status"], "pending");
    assert!(api.invoke(&a, "task_claim", json!({})).await.body["content"]["claimed"].is_null(), "now b's");
    assert_eq!(api.post(&format!("/api/tasks/{id}/cancel"), json!({})).await.body["status"], "cancelled");
    assert_eq!(api.post(&format!("/api/tasks/{id}/cancel"), json!({})).await.status, 409);
    assert_eq!(api.post(&format!("/api/tasks/{id}/retry"), json!({})).await.body["status"], "pending");
    assert_eq!(api.post("/api/tasks/nope/retry", json!({})).await.status, 404);

    // The history names who cancelled (the token) and who finished (the claimant); the
    // changes after a cancellation name their own actors again.
    let history = |detail: &serde_json::Value| -> Vec<(String, String)> {
        let events = detail["history"].as_array().cloned().unwrap_or_default();
        events
            .iter()
            .map(|e| (e["status"].as_str().unwrap_or_default().into(), e["actor"].as_str().unwrap_or_default().into()))
            .collect()
    };
    api.invoke(&b, "task_claim", json!({})).await;
    assert_eq!(api.invoke(&b, "task_complete", json!({"task_id": id, "result": "r"})).await.status, 200);
    let events = history(&api.get(&format!("/api/tasks/{id}")).await.body);
    let after: Vec<_> =
        events.iter().skip_while(|(s, _)| s != "cancelled").map(|(s, a)| (s.as_str(), a.as_str())).collect();
    assert_eq!(
        after,
        [("cancelled", "token:tests"), ("pending", b.as_str()), ("claimed", b.as_str()), ("done", b.as_str())]
    );
    // On the dashboard: cancelled by an operator, done by the agent's name.
    let other = api.post("/api/tasks", json!({"title": "u"})).await.body["id"].as_str().unwrap().to_string();
    let browser = d.browser();
    assert_eq!(browser.set_up("ada", "correct horse").await.status, 303);
    let cancelled = browser.submit(&format!("/tasks/{other}"), &format!("/tasks/{other}/cancel"), &[]).await;
    assert_eq!(cancelled.status, 303, "{}", cancelled.text);
    let page = browser.get(&format!("/tasks/{other}")).await.text;
    assert!(page.contains("cancelled by operator:ada"), "{page}");
    let page = browser.get(&format!("/tasks/{id}")).await.text;
    assert!(page.contains("done by b") && page.contains("cancelled by token:tests"), "{page}");
    let ghost = api.post("/api/tasks", json!({"title": "x", "assignee": "ghost"})).await;
    assert_eq!((ghost.status, ghost.body["error"]["fields"][0]["field"].as_str()), (422, Some("assignee")));
}

/// A right-to-left override in a title would show operators other words than it holds
/// (U+202E before `gnp.exe` reads `exe.png`): every title refuses the bidirectional controls,
/// through the API, the tools and the schema, and keeps the marks right-to-left text needs.
#[tokio::test]
async fn titles_refuse_bidirectional_controls_and_keep_right_to_left_text() {
    let (_home, _d, api) = daemon().await;
    let agent = agent_from(&api, json!({"name": "a", "tools": ["tasks.*", "canvas_present", "notify_owner"]})).await;
    for control in ['\u{202A}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2069}'] {
        let title = format!("invoice {control}fdp.exe");
        let posted = api.post("/api/tasks", json!({"title": title})).await;
        assert_eq!((posted.status, posted.body["error"]["fields"][0]["field"].as_str()), (422, Some("title")));
        assert!(posted.text.contains("bidirectional"), "the refusal says why: {}", posted.text);
        let by_tool = api.invoke(&agent, "task_post", json!({"title": title, "body": "b"})).await;
        assert!(by_tool.text.contains("bidirectional"), "{}", by_tool.text);
        let canvas = api.invoke(&agent, "canvas_present", json!({"html": "<p>x</p>", "title": title})).await;
        assert!(canvas.text.contains("bidirectional"), "{}", canvas.text);
        let note = api.invoke(&agent, "notify_owner", json!({"reason": title, "summary": "s"})).await;
        assert!(note.text.contains("bidirectional"), "{}", note.text);
    }
    assert_eq!(api.get("/api/tasks").await.body.as_array().map(Vec::len), Some(0), "nothing stored");
    assert_eq!(api.post("/api/tasks", json!({"title": "two\nlines"})).await.status, 422);
    let arabic = api.post("/api/tasks", json!({"title": "نشر الإصدار \u{200F}v2"})).await;
    assert_eq!(arabic.status, 201, "{}", arabic.text);

    let spec = api.get("/api/openapi.json").await;
    let pattern = &spec.body["components"]["schemas"]["NewTask"]["properties"]["title"]["pattern"];
    assert_eq!(pattern, kennel_kernel::text::TITLE_PATTERN, "the schema states the rule the kernel holds");
}
