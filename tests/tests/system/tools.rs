use serde_json::json;
use sha2::{Digest, Sha256};

use crate::{agent_with, daemon, daemon_with_config};

#[tokio::test]
async fn the_registry_lists_every_tool_with_a_derived_schema() {
    let (_home, _d, api) = daemon().await;
    let tools = api.get("/api/tools").await;
    assert_eq!(tools.status, 200);
    let all = tools.body.as_array().unwrap();
    let names: Vec<_> = all.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for expected in ["system_time", "read_artifact", "tool_search", "tool_load"] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    let search = all.iter().find(|t| t["name"] == "tool_search").unwrap();
    assert_eq!(search["family"], "meta");
    assert_eq!(search["availability"]["state"], "registered");
    assert_eq!(search["schema"]["properties"]["query"]["type"], "string");
    assert_eq!(search["schema"]["required"], json!(["query"]));
    assert_eq!(search["schema"]["additionalProperties"], false);
}

#[tokio::test]
async fn a_call_outside_the_grants_is_forbidden_and_does_not_run() {
    let (_home, _d, api) = daemon().await;
    let id = agent_with(&api, "searcher", &["tool_search"]).await;
    let session = api.post(&format!("/api/agents/{id}/sessions"), json!({})).await;
    assert_eq!(session.status, 201);
    let session_id = session.body["id"].as_str().unwrap();
    let invoke = |tool: &'static str, args: serde_json::Value| {
        let api = api.clone();
        let path = format!("/api/agents/{id}/tools/{tool}/invoke");
        let body = json!({"args": args, "session_id": session_id});
        async move { api.post(&path, body).await }
    };

    // tool_load is not granted: refused, and the session's loaded set is unchanged.
    let refused = invoke("tool_load", json!({"name": "tool_search"})).await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert_eq!(refused.error_kind(), "Forbidden");
    assert!(refused.error_message().contains("no grant for `tool_load`"), "{}", refused.text);
    let seen = invoke("tool_search", json!({"query": "tool_search"})).await;
    assert_eq!(seen.body["content"]["tools"][0]["loaded"], false, "the forbidden call changed nothing");

    // Granted by family: the same call now runs and its effect is visible.
    api.put(&format!("/api/agents/{id}/capabilities"), json!({"tools": ["meta.*"]})).await;
    let loaded = invoke("tool_load", json!({"name": "tool_search"})).await;
    assert_eq!(loaded.status, 200, "{}", loaded.text);
    assert_eq!(loaded.body["content"]["parameters"]["properties"]["query"]["type"], "string");
    let seen = invoke("tool_search", json!({"query": "tool_search"})).await;
    assert_eq!(seen.body["content"]["tools"][0]["loaded"], true);

    // system_time is in another family: still refused.
    assert_eq!(invoke("system_time", json!({})).await.status, 403);

    let audit = api.get(&format!("/api/audit?agent={id}&tool=tool_load")).await;
    let outcomes: Vec<_> = audit.body.as_array().unwrap().iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["ok", "Forbidden"], "newest first, both recorded");
    assert_eq!(audit.body[0]["caller"], "token:tests");
    assert_eq!(audit.body[0]["session_id"], session_id);
}

#[tokio::test]
async fn deny_wins_and_the_effective_set_says_why() {
    let (_home, _d, api) = daemon().await;
    let id = agent_with(&api, "limited", &["meta.*"]).await;
    api.put(&format!("/api/agents/{id}/capabilities"), json!({"tools": ["meta.*"], "deny": ["tool_load"]})).await;
    let set = api.get(&format!("/api/agents/{id}/tools")).await;
    let status_of = |name: &str| set.body.as_array().unwrap().iter().find(|t| t["name"] == name).unwrap().clone();
    assert_eq!(status_of("tool_search")["status"], "allowed");
    assert_eq!(status_of("tool_search")["grant"], "meta.*");
    assert_eq!(status_of("tool_load")["status"], "denied");
    assert_eq!(status_of("tool_load")["grant"], "tool_load");
    assert_eq!(status_of("system_time")["status"], "not_granted");
    let refused = api.invoke(&id, "tool_load", json!({"name": "x"})).await;
    assert_eq!(refused.status, 403);
    assert!(refused.error_message().contains("denied"));
}

#[tokio::test]
async fn bad_arguments_name_the_json_path_and_nothing_runs() {
    let (_home, _d, api) = daemon().await;
    let id = agent_with(&api, "caller", &["*"]).await;
    let wrong_type = api.invoke(&id, "tool_search", json!({"query": "x", "limit": "ten"})).await;
    assert_eq!(wrong_type.status, 422);
    assert_eq!(wrong_type.body["error"]["fields"][0]["field"], "limit");
    let missing = api.invoke(&id, "tool_search", json!({})).await;
    assert_eq!(missing.status, 422);
    assert!(missing.error_message().contains("missing field `query`"));
    let extra = api.invoke(&id, "system_time", json!({"tz": "UTC"})).await;
    assert_eq!(extra.status, 422);
    assert!(extra.error_message().contains("unknown field `tz`"));
    let unknown = api.invoke(&id, "no_such_tool", json!({})).await;
    assert_eq!(unknown.status, 404);
    assert!(unknown.error_message().contains("tool_search"), "points to tool_search");

    let audit = api.get(&format!("/api/audit?agent={id}")).await;
    let outcomes: Vec<_> = audit.body.as_array().unwrap().iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["NotFound", "InvalidArguments", "InvalidArguments", "InvalidArguments"]);
}

#[tokio::test]
async fn system_time_is_rfc3339_utc() {
    let (_home, _d, api) = daemon().await;
    let id = agent_with(&api, "clock", &["system.*"]).await;
    let now = api.invoke(&id, "system_time", json!(null)).await;
    assert_eq!(now.status, 200, "{}", now.text);
    let utc = now.body["content"]["utc"].as_str().unwrap();
    assert!(utc.ends_with('Z') && utc.len() == 24 && &utc[10..11] == "T", "{utc}");
    let ms = now.body["content"]["unix_ms"].as_i64().unwrap();
    let host_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    assert!((host_ms - ms).abs() < 60_000);
}

#[tokio::test]
async fn large_results_spill_and_read_artifact_returns_the_exact_bytes() {
    let (home, _d, api) = daemon_with_config("[tool_results]\nspill_threshold_bytes = 256\n").await;
    let id = agent_with(&api, "reader", &["meta.*", "system_time"]).await;

    // An empty query lists every usable tool: well over 256 bytes.
    let big = api.invoke(&id, "tool_search", json!({"query": ""})).await;
    assert_eq!(big.status, 200, "{}", big.text);
    let content = &big.body["content"];
    assert_eq!(content["spilled"], true);
    let artifact = content["artifact_id"].as_str().unwrap();
    let size = content["size_bytes"].as_u64().unwrap() as usize;
    assert!(size > 256);
    assert_eq!(big.body["artifact_id"], artifact);

    // Page it back 100 bytes at a time.
    let mut bytes = Vec::new();
    let mut offset = 0;
    loop {
        let page =
            api.invoke(&id, "read_artifact", json!({"artifact_id": artifact, "offset": offset, "length": 100})).await;
        assert_eq!(page.status, 200, "{}", page.text);
        assert!(page.body.get("artifact_id").is_none(), "read_artifact itself never spills");
        bytes.extend_from_slice(page.body["content"]["content"].as_str().unwrap().as_bytes());
        match page.body["content"]["next_offset"].as_u64() {
            Some(next) => offset = next,
            None => break,
        }
    }
    assert_eq!(bytes.len(), size);
    assert_eq!(hex::encode(Sha256::digest(&bytes)), artifact, "content-addressed: the bytes hash to their id");
    let full: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert!(full["tools"].as_array().unwrap().len() >= 4);
    assert!(full.to_string().starts_with(&content["preview"].as_str().unwrap()[..200]));
    assert!(home.path().join("artifacts").join(&artifact[..2]).join(&artifact[2..]).exists());

    // Small results do not spill.
    let small = api.invoke(&id, "system_time", json!({})).await;
    assert!(small.body["content"]["utc"].is_string());

    let bad_id = api.invoke(&id, "read_artifact", json!({"artifact_id": "../../etc/passwd"})).await;
    assert_eq!(bad_id.status, 422);
    let missing = api.invoke(&id, "read_artifact", json!({"artifact_id": "0".repeat(64)})).await;
    assert_eq!(missing.status, 404);
}

#[tokio::test]
async fn tool_load_needs_a_session_of_that_agent() {
    let (_home, _d, api) = daemon().await;
    let id = agent_with(&api, "lazy", &["meta.*"]).await;
    let no_session = api.invoke(&id, "tool_load", json!({"name": "tool_search"})).await;
    assert_eq!(no_session.status, 503);
    assert!(no_session.error_message().contains("session"));
    let not_granted = {
        let s = api.post(&format!("/api/agents/{id}/sessions"), json!({"label": "chat"})).await;
        let body = json!({"args": {"name": "system_time"}, "session_id": s.body["id"]});
        api.post(&format!("/api/agents/{id}/tools/tool_load/invoke"), body).await
    };
    assert_eq!(not_granted.status, 403, "cannot load a tool the agent may not use");

    let other = agent_with(&api, "other", &["meta.*"]).await;
    let foreign = api.post(&format!("/api/agents/{other}/sessions"), json!({})).await;
    let body = json!({"args": {"name": "tool_search"}, "session_id": foreign.body["id"]});
    let wrong = api.post(&format!("/api/agents/{id}/tools/tool_load/invoke"), body).await;
    assert_eq!(wrong.status, 404, "another agent's session is not found");
}

#[tokio::test]
async fn a_tool_that_fails_is_a_bad_gateway_not_a_server_error() {
    // A port nothing listens on, on a host the config allows: the tool really runs and fails.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = format!("[a2a]\nallowed_hosts = [\"127.0.0.1:{closed}\"]\n");
    let (_home, _d, api) = daemon_with_config(&config).await;
    let id = agent_with(&api, "caller", &["a2a.*"]).await;
    let failed = api.invoke(&id, "a2a_discover", json!({"url": format!("http://127.0.0.1:{closed}/")})).await;
    assert_eq!(failed.status, 502, "{}", failed.text);
    assert_eq!(failed.error_kind(), "Failed", "{}", failed.text);
    let audit = api.get(&format!("/api/audit?agent={id}")).await;
    assert_eq!(audit.body[0]["outcome"], "Failed");
}
