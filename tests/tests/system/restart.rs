use serde_json::json;

use crate::agent_with;
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
    api.delete(&format!("/api/agents/{stopped}")).await;
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
