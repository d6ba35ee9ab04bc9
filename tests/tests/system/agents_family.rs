use std::time::Duration;

use kennel_tests::eventually;
use kennel_tests::fake_llm::{FakeLlm, Scripted};
use serde_json::json;

use crate::{agent_from, daemon, daemon_with_config, daemon_with_llm};

#[tokio::test]
async fn agent_type_create_and_rest_store_identical_types_and_never_overwrite() {
    let local = "[providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"\"\n";
    let (_home, _d, api) = daemon_with_config(local).await;
    // The maker holds what it gives: a type is never wider than its maker (`identity.rs`).
    let maker =
        agent_from(&api, json!({"name": "maker", "tools": ["agent_type_create", "system_time", "memory_*"]})).await;
    let fields = json!({"description": "writes reports", "system_prompt": "Be brief.", "provider": "local",
                        "model": "m1", "tools": ["system_time", "memory_*"], "skills": ["writing"]});
    let mut by_tool = fields.clone();
    by_tool["name"] = json!("reporter-a");
    let made = api.invoke(&maker, "agent_type_create", by_tool).await;
    assert_eq!(made.status, 200, "{}", made.text);
    let mut by_rest = fields.clone();
    by_rest["name"] = json!("reporter-b");
    assert_eq!(api.post("/api/templates", by_rest).await.status, 201);

    let strip = |mut v: serde_json::Value| {
        for k in ["name", "made_by", "created_at", "updated_at"] {
            v.as_object_mut().unwrap().remove(k);
        }
        v
    };
    let a = strip(api.get("/api/templates/reporter-a").await.body);
    let b = strip(api.get("/api/templates/reporter-b").await.body);
    assert_eq!(a, b, "a type made by an agent is stored as one made over REST, but for its maker");

    let again = api.invoke(&maker, "agent_type_create", json!({"name": "reporter-a", "description": "other"})).await;
    assert_eq!(again.status, 409);
    assert_eq!(api.get("/api/templates/reporter-a").await.body["description"], "writes reports");
    api.post("/api/agents", json!({"template": "maker", "name": "scout"})).await;
    let running = api.invoke(&maker, "agent_type_create", json!({"name": "scout"})).await;
    assert_eq!(running.status, 409);
    assert!(running.error_message().contains("agent named `scout` is running"), "{}", running.text);
    let extra = api.invoke(&maker, "agent_type_create", json!({"name": "x", "tool_mode": "stable"})).await;
    assert_eq!(extra.status, 422, "only the seven fields");
    let invalid = api.invoke(&maker, "agent_type_create", json!({"name": "Bad Name"})).await;
    assert_eq!(invalid.body["error"]["fields"][0]["field"], "name");
}

#[tokio::test]
async fn children_get_only_what_their_parent_may_use_and_cannot_spawn_or_kill() {
    let (_home, _d, api) = daemon().await;
    let parent = agent_from(&api, json!({"name": "parent", "tools": ["agents.*", "system_time"]})).await;
    api.post("/api/templates", json!({"name": "worker", "tools": ["*"]})).await;
    let spawned = api.invoke(&parent, "agent_spawn", json!({"template": "worker", "name": "w1", "goal": "help"})).await;
    assert_eq!(spawned.status, 200, "{}", spawned.text);
    let child = spawned.body["content"]["agent_id"].as_str().unwrap().to_string();
    assert_eq!(spawned.body["content"]["parent_id"], parent);

    let manifest = api.get(&format!("/api/agents/{child}")).await.body["manifest"].clone();
    let grants: Vec<&str> =
        manifest["capabilities"]["tools"].as_array().unwrap().iter().map(|g| g.as_str().unwrap()).collect();
    assert!(grants.contains(&"system_time") && grants.contains(&"agent_send"));
    assert!(!grants.iter().any(|g| *g == "*" || *g == "read_artifact"), "{grants:?}");
    assert_eq!(manifest["capabilities"]["deny"], json!(["agent_spawn", "agent_kill"]));

    // Applying the type (`*`) to its agents leaves a child's narrowed grants and its denials.
    api.put("/api/templates/worker", json!({"name": "worker", "tools": ["*"], "model": "other"})).await;
    let applied = api.post("/api/templates/worker/apply", json!({"dry_run": false})).await;
    assert_eq!(applied.status, 200, "{}", applied.text);
    let after = api.get(&format!("/api/agents/{child}")).await.body["manifest"].clone();
    assert_eq!(after["model"], "other", "the rest of the type is applied");
    assert_eq!(after["capabilities"]["tools"], manifest["capabilities"]["tools"], "never wider than the parent's");
    assert_eq!(after["capabilities"]["deny"], json!(["agent_spawn", "agent_kill"]));

    // read_artifact needs no grant: every agent reads its own spilled results, and only those.
    assert_eq!(api.invoke(&child, "read_artifact", json!({"artifact_id": "0".repeat(64)})).await.status, 404);
    let fork = api.invoke(&child, "agent_spawn", json!({"template": "worker"})).await;
    assert_eq!(fork.status, 403);
    assert!(fork.error_message().contains("denied"));
    assert_eq!(api.invoke(&child, "agent_kill", json!({"agent_id": parent})).await.status, 403);
    assert_eq!(api.invoke(&child, "system_time", json!({})).await.status, 200);

    // The parent may list, find and kill.
    let list = api.invoke(&parent, "agent_list", json!({})).await;
    assert_eq!(list.body["content"]["agents"].as_array().unwrap().len(), 2);
    let found = api.invoke(&parent, "agent_find", json!({"query": "worker"})).await;
    assert_eq!(found.body["content"]["agents"][0]["name"], "w1");
    let by_id = api.invoke(&parent, "agent_find", json!({"query": &child})).await;
    assert_eq!(by_id.body["content"]["agents"][0]["agent_id"], child);
    assert_eq!(api.invoke(&parent, "agent_kill", json!({"agent_id": parent})).await.status, 422);
    let killed = api.invoke(&parent, "agent_kill", json!({"agent_id": "w1"})).await;
    assert_eq!(killed.body["content"]["status"], "stopped");
}

#[tokio::test]
async fn goal_update_is_stored_and_the_next_prompt_shows_it() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "planner", "model": "m", "tools": ["goal_update"]})).await;
    llm.push(Scripted::call("goal_update", json!({"goal": "Write the launch post"}))).push(Scripted::text("ok"));
    api.post(&format!("/api/agents/{id}/messages"), json!({"message": "new plan"})).await;
    assert_eq!(api.get(&format!("/api/agents/{id}")).await.body["goal"], "Write the launch post");
    let sent = llm.requests();
    assert!(!sent[0].system().contains("launch post"));
    assert!(sent[1].system().ends_with("Your current goal: Write the launch post"), "the very next model call sees it");
}

#[tokio::test]
async fn a_blocking_agent_send_returns_the_other_agents_reply() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let a =
        agent_from(&api, json!({"name": "alice", "model": "m", "tools": ["agent_send", "agents.message_any"]})).await;
    agent_from(&api, json!({"name": "bob", "model": "m", "system_prompt": "You are Bob."})).await;
    llm.push(Scripted::call("agent_send", json!({"agent_id": "bob", "message": "ping", "async": false})))
        .push(Scripted::text("pong from bob"))
        .push(Scripted::text("Bob says pong."));
    let turn = api.post(&format!("/api/agents/{a}/messages"), json!({"message": "ask bob"})).await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    assert_eq!(turn.body["reply"], "Bob says pong.");
    assert!(turn.body["trace"][0]["summary"].as_str().unwrap().contains("pong from bob"));
    let sent = llm.requests();
    assert_eq!(sent[1].system(), "You are Bob.");
    assert_eq!(sent[1].body["messages"][1]["content"], "ping");
}

#[tokio::test]
async fn an_a_b_a_loop_is_refused_at_the_depth_cap_naming_the_chain() {
    let llm = FakeLlm::start().await;
    let config = format!("{}[kernel]\nmax_agent_call_depth = 2\n", llm.provider_config("fake", "openai"));
    let (_home, _d, api) = daemon_with_config(&config).await;
    let a = agent_from(&api, json!({"name": "a", "model": "m", "tools": ["agent_send", "agents.message_any"]})).await;
    let b = agent_from(&api, json!({"name": "b", "model": "m", "tools": ["agent_send", "agents.message_any"]})).await;
    llm.push(Scripted::call("agent_send", json!({"agent_id": "b", "message": "1", "async": false}))) // a, depth 0
        .push(Scripted::call("agent_send", json!({"agent_id": "a", "message": "2", "async": false}))) // b, depth 1
        .push(Scripted::call("agent_send", json!({"agent_id": "b", "message": "3", "async": false}))) // a, depth 2: refused
        .push(Scripted::text("a gives up"))
        .push(Scripted::text("b done"))
        .push(Scripted::text("a done"));
    let turn = api.post(&format!("/api/agents/{a}/messages"), json!({"message": "start the loop"})).await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    assert_eq!(turn.body["reply"], "a done");
    assert_eq!(llm.requests().len(), 6, "no further recursion");
    let refusals = api.get(&format!("/api/audit?agent={a}&tool=agent_send")).await;
    let refused =
        refusals.body.as_array().unwrap().iter().find(|r| r["outcome"] == "ResourceExhausted").expect("refused");
    assert!(refused["message"].as_str().unwrap().contains("chain: a → b → a → b"), "{}", refused["message"]);
    let b_calls = api.get(&format!("/api/audit?agent={b}&tool=agent_send")).await;
    assert_eq!(b_calls.body[0]["outcome"], "ok");
}

#[tokio::test]
async fn an_async_agent_send_delivers_the_reply_into_the_callers_session() {
    let (llm_a, llm_b) = (FakeLlm::start().await, FakeLlm::start().await);
    let config = format!(
        "{}{}{}",
        kennel_tests::fake_llm::default_provider("pa"),
        llm_a.provider_config("pa", "openai"),
        llm_b.provider_config("pb", "anthropic")
    );
    let (_home, _d, api) = daemon_with_config(&config).await;
    let a = agent_from(
        &api,
        json!({"name": "asker", "model": "m", "provider": "pa", "tools": ["agent_send", "agents.message_any"]}),
    )
    .await;
    agent_from(&api, json!({"name": "worker", "model": "m", "provider": "pb"})).await;
    llm_b.push(Scripted::Delay { millis: 300 }).push(Scripted::text("the answer is 42"));
    llm_a
        .push(Scripted::call("agent_send", json!({"agent_id": "worker", "message": "compute"})))
        .push(Scripted::text("asked"));

    let turn = api.post(&format!("/api/agents/{a}/messages"), json!({"message": "delegate"})).await;
    assert_eq!(turn.body["reply"], "asked", "the caller did not wait");
    assert!(turn.body["trace"][0]["summary"].as_str().unwrap().contains("task_id"));
    let session = turn.body["session_id"].as_str().unwrap().to_string();
    let path = format!("/api/sessions/{session}/messages");
    let delivered = eventually(Duration::from_secs(5), || async {
        api.get(&path).await.body.as_array().unwrap().last().unwrap()["content"]
            .as_str()
            .is_some_and(|c| c.contains("the answer is 42"))
    })
    .await;
    assert!(delivered, "the reply lands in the caller's session");

    llm_a.push(Scripted::text("42 it is"));
    api.post(&format!("/api/agents/{a}/messages"), json!({"message": "and?", "session": session})).await;
    let last = llm_a.requests().pop().unwrap();
    let seen = last.body["messages"].as_array().unwrap().iter().any(|m| {
        m["content"]
            .as_str()
            .is_some_and(|c| c.contains("[Reply from agent `worker`") && c.contains("the answer is 42"))
    });
    assert!(seen, "the caller's next turn sees the reply");
}
