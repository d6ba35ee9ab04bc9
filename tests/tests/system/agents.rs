use std::time::Duration;

use kennel_tests::eventually;
use serde_json::json;

use crate::daemon;

#[tokio::test]
async fn spawn_list_get_and_stop() {
    let (_home, _d, api) = daemon().await;
    api.post("/api/templates", json!({"name": "coder", "tools": ["system_time"]})).await;

    let first = api.post("/api/agents", json!({"template": "coder", "goal": "ship it"})).await;
    assert_eq!(first.status, 201, "{}", first.text);
    assert_eq!(first.body["name"], "coder");
    assert_eq!(first.body["goal"], "ship it");
    assert_eq!(first.body["status"], "running");
    let id = first.body["id"].as_str().unwrap();
    assert_eq!(first.header("location"), Some(format!("/api/agents/{id}").as_str()));

    let second = api.post("/api/agents", json!({"template": "coder"})).await;
    assert_eq!(second.body["name"], "coder-2");

    assert_eq!(api.get("/api/agents").await.body.as_array().unwrap().len(), 2);
    assert_eq!(api.get(&format!("/api/agents/{id}")).await.body["name"], "coder");
    assert_eq!(api.get("/api/agents/coder-2").await.body["id"], second.body["id"]);

    let stopped = api.post(&format!("/api/agents/{id}/stop"), json!({})).await;
    assert_eq!(stopped.body["status"], "stopped");
    let refused = api.invoke(id, "system_time", json!({})).await;
    assert_eq!(refused.status, 409, "a stopped agent is a state that refuses the call");
    assert!(refused.error_message().contains("stopped"));
    assert_eq!(api.get(&format!("/api/agents/{id}")).await.body["status"], "stopped", "still found by id");

    // Removing (DELETE) stops a running agent too; a removed agent is neither listed nor found,
    // while its sessions and audit rows stay.
    let removed = api.delete("/api/agents/coder-2").await;
    assert_eq!((removed.status, removed.body["status"].as_str()), (200, Some("removed")), "{}", removed.text);
    let gone = second.body["id"].as_str().unwrap();
    assert_eq!(api.get(&format!("/api/agents/{gone}")).await.status, 404);
    assert_eq!(api.delete(&format!("/api/agents/{gone}")).await.status, 404);
    let listed = api.get("/api/agents").await;
    assert_eq!(listed.body.as_array().unwrap().len(), 1, "{}", listed.text);
    assert_eq!(listed.headers["x-total-count"], "1");
}

#[tokio::test]
async fn spawning_checks_type_name_and_goal() {
    let (_home, _d, api) = daemon().await;
    let unknown = api.post("/api/agents", json!({"template": "ghost"})).await;
    assert_eq!(unknown.status, 422, "a body field naming nothing is an invalid field");
    assert_eq!(unknown.body["error"]["fields"][0]["field"], "template");
    api.post("/api/templates", json!({"name": "coder"})).await;
    api.post("/api/templates", json!({"name": "other"})).await;
    let bad_name = api.post("/api/agents", json!({"template": "coder", "name": "No Spaces"})).await;
    assert_eq!(bad_name.status, 422);
    let type_name = api.post("/api/agents", json!({"template": "coder", "name": "other"})).await;
    assert_eq!(type_name.status, 409, "agent and type names share one namespace");
    let missing = api.post("/api/agents", json!({})).await;
    assert_eq!(missing.status, 422);
    assert!(missing.error_message().contains("template"));
}

#[tokio::test]
async fn grants_change_over_rest_and_cli() {
    let (home, _d, api) = daemon().await;
    let id = crate::agent_with(&api, "helper", &["tool_search"]).await;

    let caps =
        api.put(&format!("/api/agents/{id}/capabilities"), json!({"tools": ["meta.*"], "deny": ["tool_load"]})).await;
    assert_eq!(caps.status, 200, "{}", caps.text);
    assert_eq!(caps.body["manifest"]["capabilities"]["tools"], json!(["meta.*"]));
    let bad = api.put(&format!("/api/agents/{id}/capabilities"), json!({"tools": ["a.b.c"]})).await;
    assert_eq!(bad.status, 422);
    assert_eq!(bad.body["error"]["fields"][0]["field"], "capabilities.tools[0]");

    // The CLI changes the same agent while the daemon runs.
    home.cli_ok(&["agent", "grant", "helper", "system_time"]).await;
    let path = format!("/api/agents/{id}");
    let seen = eventually(Duration::from_secs(3), || async {
        api.get(&path).await.body["manifest"]["capabilities"]["tools"] == json!(["meta.*", "system_time"])
    })
    .await;
    assert!(seen, "the daemon sees a grant made with the CLI");
    assert_eq!(api.invoke(&id, "system_time", json!({})).await.status, 200);

    home.cli_ok(&["agent", "revoke", "helper", "system_time"]).await;
    let revoked =
        eventually(Duration::from_secs(3), || async { api.invoke(&id, "system_time", json!({})).await.status == 403 })
            .await;
    assert!(revoked, "a revoke applies to the next call");

    let listed = home.cli_ok(&["agent", "list"]).await;
    assert!(listed.contains("helper") && listed.contains("meta.*"), "{listed}");
    let not_held = home.cli(&["agent", "revoke", "helper", "browser.*"]).await;
    assert!(!not_held.status.success());
    assert!(String::from_utf8_lossy(&not_held.stderr).contains("has no grant"));
}

#[tokio::test]
async fn an_empty_body_never_clears_grants_but_still_opens_a_session() {
    let (_home, _d, api) = daemon().await;
    let id = crate::agent_with(&api, "keeper", &["system_time", "meta.*"]).await;
    let caps = format!("/api/agents/{id}/capabilities");
    let grants =
        || async { api.get(&format!("/api/agents/{id}")).await.body["manifest"]["capabilities"]["tools"].clone() };

    // No body at all, and an empty object: `tools` is required, nothing changes.
    let no_body = kennel_tests::Api::send(api.request(reqwest::Method::PUT, &caps)).await;
    assert_eq!(no_body.status, 422, "{}", no_body.text);
    assert_eq!(no_body.body["error"]["fields"][0]["field"], "tools", "{}", no_body.text);
    assert!(no_body.error_message().contains("the body is empty"), "{}", no_body.text);
    let empty_object = api.put(&caps, json!({})).await;
    assert_eq!(empty_object.status, 422, "{}", empty_object.text);
    assert_eq!(empty_object.body["error"]["fields"][0]["field"], "tools");
    let only_deny = api.put(&caps, json!({"deny": ["tool_load"]})).await;
    assert_eq!(only_deny.status, 422, "{}", only_deny.text);
    assert_eq!(grants().await, json!(["system_time", "meta.*"]), "a refused body changed nothing");

    // An explicit empty list still clears.
    let cleared = api.put(&caps, json!({"tools": []})).await;
    assert_eq!(cleared.status, 200, "{}", cleared.text);
    assert_eq!(grants().await, json!([]));

    // A body whose fields are all optional still accepts no body at all.
    let session =
        kennel_tests::Api::send(api.request(reqwest::Method::POST, &format!("/api/agents/{id}/sessions"))).await;
    assert_eq!(session.status, 201, "{}", session.text);
}

/// A removed agent's name is free like a stopped one's (found by the contract run: the name
/// index counted removed agents as running, and spawning under the name was a 500).
#[tokio::test]
async fn a_removed_agents_name_can_be_taken_again() {
    let (_home, _d, api) = daemon().await;
    let first = crate::agent_with(&api, "keeper", &[]).await;
    assert_eq!(api.delete(&format!("/api/agents/{first}")).await.status, 200);
    let again = api.post("/api/agents", json!({"template": "keeper"})).await;
    assert_eq!((again.status, again.body["name"].as_str()), (201, Some("keeper")), "{}", again.text);
    assert_ne!(again.body["id"].as_str(), Some(first.as_str()));
    // Its records still answer to its id in filters.
    assert_eq!(api.get(&format!("/api/audit?agent={first}")).await.status, 200);
    assert_eq!(api.get(&format!("/api/schedules?agent={first}")).await.status, 200);
}
