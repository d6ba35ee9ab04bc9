use kennel_tests::fake_llm::{FakeLlm, Scripted};
use serde_json::json;

use crate::{agent_from, daemon_with_config, daemon_with_llm};

#[tokio::test]
async fn workflows_are_stored_and_run_step_by_step_with_history() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    agent_from(&api, json!({"name": "writer", "model": "m"})).await;
    api.post("/api/templates", json!({"name": "editor", "model": "m", "system_prompt": "You edit."})).await;
    let wf = api
        .post(
            "/api/workflows",
            json!({"name": "post", "description": "draft then edit", "steps": [
                {"agent": "writer", "prompt": "Draft a post about {{inputs.topic}}."},
                {"agent_type": "editor", "prompt": "Edit this: {{previous}} (first draft: {{steps.1.output}})"}
            ]}),
        )
        .await;
    assert_eq!(wf.status, 201, "{}", wf.text);
    let id = wf.body["id"].as_str().unwrap().to_string();
    assert_eq!(api.get("/api/workflows/post").await.body["id"], id.as_str());

    llm.push(Scripted::text("Otters hold hands.")).push(Scripted::text("Otters hold hands while asleep."));
    let run = api.post(&format!("/api/workflows/{id}/runs"), json!({"inputs": {"topic": "otters"}})).await;
    assert_eq!(run.status, 200, "{}", run.text);
    assert_eq!(run.body["status"], "succeeded");
    assert_eq!(run.body["output"], "Otters hold hands while asleep.");
    assert_eq!(run.body["steps"][1]["prompt"], "Edit this: Otters hold hands. (first draft: Otters hold hands.)");
    let sent = llm.requests();
    assert_eq!(sent[0].body["messages"][1]["content"], "Draft a post about otters.");
    assert_eq!(sent[1].system(), "You edit.");
    // The editor was spawned for its step and stopped after it; it is a workflow step agent,
    // left out of the default list.
    let listed = api.get("/api/agents").await;
    assert!(!listed.body.as_array().unwrap().iter().any(|a| a["agent_type"] == "editor"), "{}", listed.text);
    let agents = api.get("/api/agents?ephemeral=true").await;
    let editor = agents.body.as_array().unwrap().iter().find(|a| a["agent_type"] == "editor").unwrap().clone();
    assert_eq!(editor["status"], "stopped");
    assert_eq!(editor["ephemeral"], true);

    let history = api.get(&format!("/api/workflows/{id}/runs")).await;
    assert_eq!(history.body.as_array().unwrap().len(), 1);
    assert_eq!(history.body[0]["steps"].as_array().unwrap().len(), 2);
    assert!(history.body[0]["steps"][0]["duration_ms"].is_u64());

    let missing = api.post(&format!("/api/workflows/{id}/runs"), json!({})).await;
    assert_eq!(missing.body["status"], "failed");
    assert!(missing.body["error"].as_str().unwrap().contains("input `topic` is missing"));
}

#[tokio::test]
async fn bad_workflows_are_refused_with_every_field() {
    let (_home, _d, api, _llm) = daemon_with_llm("openai", "").await;
    agent_from(&api, json!({"name": "a", "model": "m"})).await;
    let bad = api
        .post(
            "/api/workflows",
            json!({"name": "Bad", "steps": [
                {"prompt": "no agent"},
                {"agent": "a", "prompt": "{{steps.3.output}}"}
            ]}),
        )
        .await;
    assert_eq!(bad.status, 422);
    let fields: Vec<_> =
        bad.body["error"]["fields"].as_array().unwrap().iter().map(|f| f["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["name", "steps[0]", "steps[1].prompt"]);
    let ok = json!({"name": "w", "steps": [{"agent": "a", "prompt": "hi"}]});
    assert_eq!(api.post("/api/workflows", ok.clone()).await.status, 201);
    assert_eq!(api.post("/api/workflows", ok).await.status, 409);
    assert_eq!(api.delete("/api/workflows/w").await.status, 204);
    assert_eq!(api.get("/api/workflows/w").await.status, 404);
}

#[tokio::test]
async fn nested_workflow_runs_count_against_the_depth_cap() {
    let llm = FakeLlm::start().await;
    let config = format!("{}[kernel]\nmax_agent_call_depth = 2\n", llm.provider_config("fake", "openai"));
    let (_home, _d, api) = daemon_with_config(&config).await;
    agent_from(&api, json!({"name": "runner", "model": "m", "tools": ["workflow_run"]})).await;
    api.post("/api/workflows", json!({"name": "again", "steps": [{"agent": "runner", "prompt": "run it again"}]}))
        .await;
    // The run's step is a turn at depth 1; it runs the workflow again, whose step (depth 2)
    // tries once more and is refused; then each turn answers.
    llm.push(Scripted::call("workflow_run", json!({"workflow_id": "again"}))) // depth 1
        .push(Scripted::call("workflow_run", json!({"workflow_id": "again"}))) // depth 2: refused
        .push(Scripted::text("inner step gives up"))
        .push(Scripted::text("outer step done"));
    let run = api.post("/api/workflows/again/runs", json!({})).await;
    assert_eq!(run.status, 200, "{}", run.text);
    assert_eq!(run.body["output"], "outer step done");
    assert_eq!(llm.requests().len(), 4, "never recursed past the cap");
    let runs = api.get("/api/workflows/again/runs").await;
    assert_eq!(runs.body.as_array().unwrap().len(), 2, "the nested run is recorded too");
    let audit = api.get("/api/audit?tool=workflow_run").await;
    let outcomes: Vec<_> = audit.body.as_array().unwrap().iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["ok", "ResourceExhausted"]);
    assert!(audit.body[1]["message"].as_str().unwrap().contains("max_agent_call_depth = 2"));
}

/// A run whose daemon dies mid-step is failed, saying why, when a daemon starts again: not
/// left `running` for ever.
#[tokio::test]
async fn a_run_cut_short_by_the_daemons_death_is_failed_at_the_next_start() {
    let (home, daemon, api, llm) = daemon_with_llm("openai", "").await;
    agent_from(&api, json!({"name": "writer", "model": "m"})).await;
    let made =
        api.post("/api/workflows", json!({"name": "slow", "steps": [{"agent": "writer", "prompt": "Write."}]})).await;
    assert_eq!(made.status, 201, "{}", made.text);
    llm.push(Scripted::Delay { millis: 30_000 });
    let running = tokio::spawn({
        let api = api.clone();
        async move { api.post("/api/workflows/slow/runs", json!({})).await }
    });
    let asked =
        kennel_tests::eventually(std::time::Duration::from_secs(10), || async { llm.requests().len() == 1 }).await;
    assert!(asked, "the step's turn began");
    let runs = api.get("/api/workflows/slow/runs").await;
    assert_eq!(runs.body[0]["status"], "running", "{}", runs.text);
    daemon.kill().await;
    running.abort();

    let token = home.token("again").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    let failed = kennel_tests::eventually(std::time::Duration::from_secs(10), || async {
        api.get("/api/workflows/slow/runs").await.body[0]["status"] == "failed"
    })
    .await;
    let runs = api.get("/api/workflows/slow/runs").await;
    assert!(failed, "{}", runs.text);
    assert!(runs.body[0]["error"].as_str().unwrap().contains("stopped before it finished"), "{}", runs.text);
    assert!(runs.body[0]["finished_at"].is_string(), "{}", runs.text);
}
