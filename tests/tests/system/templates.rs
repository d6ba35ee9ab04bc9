use serde_json::json;

use crate::daemon;

#[tokio::test]
async fn create_read_list_replace_delete() {
    let (_home, _d, api) = daemon().await;
    let created = api
        .post(
            "/api/templates",
            json!({"name": "coder", "description": "writes code", "tools": ["meta.*", "system_time"]}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.header("location"), Some("/api/templates/coder"));
    assert_eq!(created.body["capabilities"]["tools"], json!(["meta.*", "system_time"]));
    assert_eq!(created.body["tool_mode"], "all");

    let got = api.get("/api/templates/coder").await;
    assert_eq!(got.status, 200);
    assert_eq!(got.body["description"], "writes code");

    api.post("/api/templates", json!({"name": "alpha"})).await;
    let list = api.get("/api/templates").await;
    let names: Vec<_> = list.body.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["alpha", "coder"]);

    let replaced = api
        .put(
            "/api/templates/coder",
            json!({"description": "reviews code", "tool_mode": "lazy", "capabilities": {"tools": ["tool_search"]}}),
        )
        .await;
    assert_eq!(replaced.status, 200, "{}", replaced.text);
    assert_eq!(replaced.body["tool_mode"], "lazy");
    assert_eq!(replaced.body["created_at"], created.body["created_at"]);
    assert_eq!(api.get("/api/templates/coder").await.body["description"], "reviews code");

    assert_eq!(api.delete("/api/templates/coder").await.status, 204);
    let gone = api.get("/api/templates/coder").await;
    assert_eq!(gone.status, 404);
    assert_eq!(gone.error_kind(), "NotFound");
    assert_eq!(api.delete("/api/templates/coder").await.status, 404);
    assert_eq!(api.put("/api/templates/coder", json!({})).await.status, 404);
}

#[tokio::test]
async fn a_taken_type_name_is_a_conflict_and_nothing_is_overwritten() {
    let (_home, _d, api) = daemon().await;
    assert_eq!(api.post("/api/templates", json!({"name": "ops", "description": "first"})).await.status, 201);
    let again = api.post("/api/templates", json!({"name": "ops", "description": "second"})).await;
    assert_eq!(again.status, 409);
    assert_eq!(again.error_kind(), "Conflict");
    assert!(again.error_message().contains("agent type named `ops` already exists"), "{}", again.text);
    assert_eq!(api.get("/api/templates/ops").await.body["description"], "first");
}

#[tokio::test]
async fn a_running_agents_name_is_a_conflict_until_it_stops() {
    let (_home, _d, api) = daemon().await;
    api.post("/api/templates", json!({"name": "worker"})).await;
    let agent = api.post("/api/agents", json!({"template": "worker", "name": "scout"})).await;
    assert_eq!(agent.status, 201, "{}", agent.text);

    let clash = api.post("/api/templates", json!({"name": "scout"})).await;
    assert_eq!(clash.status, 409);
    assert!(clash.error_message().contains("an agent named `scout` is running"), "{}", clash.text);
    assert_eq!(api.get("/api/templates/scout").await.status, 404);

    let id = agent.body["id"].as_str().unwrap();
    assert_eq!(api.post(&format!("/api/agents/{id}/stop"), json!({})).await.body["status"], "stopped");
    assert_eq!(api.post("/api/templates", json!({"name": "scout"})).await.status, 201);
}

#[tokio::test]
async fn invalid_manifests_get_422_with_every_field() {
    let (_home, _d, api) = daemon().await;
    let bad = api
        .post(
            "/api/templates",
            json!({"name": "Not Valid", "tools": ["ok_*", "rm -rf"], "limits": {"max_iterations": 0}, "capabilities": {"memory_read": ["disk:*"]}}),
        )
        .await;
    assert_eq!(bad.status, 422, "{}", bad.text);
    assert_eq!(bad.error_kind(), "InvalidArguments");
    let fields: Vec<_> =
        bad.body["error"]["fields"].as_array().unwrap().iter().map(|f| f["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["name", "tools[1]", "capabilities.memory_read[0]", "limits.max_iterations"]);

    let wrong_type = api.post("/api/templates", json!({"name": "a", "capabilities": {"tools": "system_time"}})).await;
    assert_eq!(wrong_type.status, 422);
    assert_eq!(wrong_type.body["error"]["fields"][0]["field"], "capabilities.tools");

    let unknown = api.post("/api/templates", json!({"name": "a", "colour": "red"})).await;
    assert_eq!(unknown.status, 422);
    assert!(unknown.error_message().contains("unknown field `colour`"));

    let not_json = kennel_tests::Api::send(api.request(reqwest::Method::POST, "/api/templates").body("{nope")).await;
    assert_eq!(not_json.status, 422);
    assert!(not_json.error_message().contains("not valid JSON"));

    let renamed = api.put("/api/templates/a", json!({"name": "b"})).await;
    assert_eq!(renamed.status, 422);
    assert!(api.get("/api/templates").await.body.as_array().unwrap().is_empty(), "nothing was stored");
}

#[tokio::test]
async fn manifests_round_trip_as_toml() {
    let (_home, _d, api) = daemon().await;
    let manifest = r#"name = "reporter"
description = "weekly reports"
model = "small"
tool_mode = "stable"

[capabilities]
tools = ["tasks.*", "system_time"]
memory_read = ["kv:*"]

[[cron]]
schedule = "0 9 * * 1"
prompt = "Write the weekly report."
"#;
    let created = kennel_tests::Api::send(
        api.request(reqwest::Method::POST, "/api/templates").header("content-type", "application/toml").body(manifest),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.body["cron"][0]["schedule"], "0 9 * * 1");

    let toml_text = kennel_tests::Api::send(
        api.request(reqwest::Method::GET, "/api/templates/reporter").header("accept", "application/toml"),
    )
    .await;
    assert_eq!(toml_text.status, 200);
    assert!(toml_text.header("content-type").unwrap().starts_with("application/toml"));
    assert!(toml_text.text.contains("tool_mode = \"stable\""), "{}", toml_text.text);

    // What came out as TOML goes back in unchanged.
    let replaced = kennel_tests::Api::send(
        api.request(reqwest::Method::PUT, "/api/templates/reporter")
            .header("content-type", "application/toml")
            .body(toml_text.text.clone()),
    )
    .await;
    assert_eq!(replaced.status, 200, "{}", replaced.text);
    let strip = |mut v: serde_json::Value| {
        v.as_object_mut().unwrap().remove("updated_at");
        v
    };
    assert_eq!(strip(replaced.body), strip(created.body));

    let bad_toml = kennel_tests::Api::send(
        api.request(reqwest::Method::POST, "/api/templates").header("content-type", "application/toml").body("name = "),
    )
    .await;
    assert_eq!(bad_toml.status, 422);
    assert!(bad_toml.error_message().contains("TOML"));
}

/// Editing a type changes no agent; applying it does, after a preview of what each agent
/// gains and loses, and only the version that was previewed.
#[tokio::test]
async fn a_type_is_applied_to_its_agents_after_a_preview_of_what_changes() {
    let (_home, _d, api, b) = crate::dashboard::signed_in_with("").await;
    let made = api.post("/api/templates", json!({"name": "scout", "model": "small", "tools": ["system_time"]})).await;
    assert_eq!(made.status, 201, "{}", made.text);
    let first = api.post("/api/agents", json!({"template": "scout"})).await.body["id"].as_str().unwrap().to_string();
    let second = api.post("/api/agents", json!({"template": "scout"})).await.body["id"].as_str().unwrap().to_string();
    api.post(&format!("/api/agents/{second}/stop"), json!({})).await;
    let edited = json!({"name": "scout", "model": "large", "system_prompt": "Look twice.", "tools": ["tasks.*"]});
    assert_eq!(api.put("/api/templates/scout", edited).await.status, 200);
    assert_eq!(
        api.get(&format!("/api/agents/{first}")).await.body["manifest"]["model"],
        "small",
        "editing changes no agent"
    );

    let preview = api.post("/api/templates/scout/apply", json!({})).await;
    assert_eq!(preview.status, 200, "{}", preview.text);
    assert_eq!(preview.body["applied"], false, "no body is a preview");
    let agents = preview.body["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2, "running and stopped agents: {}", preview.text);
    let changes = agents[0]["changes"].as_array().unwrap();
    let field = |name: &str| changes.iter().find(|c| c["field"] == name).cloned().unwrap_or_default();
    assert_eq!((field("model")["before"].clone(), field("model")["after"].clone()), (json!("small"), json!("large")));
    assert_eq!(field("capabilities.tools")["added"], json!(["tasks.*"]));
    assert_eq!(field("capabilities.tools")["removed"], json!(["system_time"]));
    assert_eq!(field("system_prompt")["after"], "Look twice.");
    let version = preview.body["type_updated_at"].as_str().unwrap().to_string();

    // The dashboard: the editor says agents keep an older copy; the preview page lists it.
    let editor = b.get("/agent-types/scout").await.text;
    assert!(editor.contains("2 agents made from this type; 2 keep an older copy of it."), "{editor}");
    // Times read as on every other page: `YYYY-MM-DD HH:MM:SS`, UTC, not RFC 3339's `T`.
    let created = &version[..19].replace('T', " ");
    assert!(editor.contains(&format!("changed {created} (UTC)")), "{editor}");
    let page = b.get("/agent-types/scout/apply").await;
    assert_eq!(page.status, 200);
    assert!(
        page.text.contains("<code>capabilities.tools</code>") && page.text.contains("<code>tasks.*</code>"),
        "{}",
        page.text
    );
    assert!(page.text.contains(&format!(r#"name="expected_updated_at" value="{version}""#)));

    // A version other than the one previewed is refused, with the new preview.
    let stale = b
        .submit(
            "/agent-types/scout/apply",
            "/agent-types/scout/apply",
            &[("expected_updated_at", "2000-01-01T00:00:00.000Z")],
        )
        .await;
    assert_eq!(stale.status, 409, "{}", stale.text);
    assert!(stale.text.contains("preview it again"));
    assert_eq!(api.get(&format!("/api/agents/{first}")).await.body["manifest"]["model"], "small", "nothing applied");

    let applied =
        b.submit("/agent-types/scout/apply", "/agent-types/scout/apply", &[("expected_updated_at", &version)]).await;
    assert_eq!(applied.status, 303, "{}", applied.text);
    for id in [&first, &second] {
        let agent = api.get(&format!("/api/agents/{id}")).await.body;
        assert_eq!(
            (agent["manifest"]["model"].as_str(), agent["manifest"]["capabilities"]["tools"].clone()),
            (Some("large"), json!(["tasks.*"]))
        );
    }
    assert_eq!(api.get(&format!("/api/agents/{second}")).await.body["status"], "stopped", "its status stays");
    let again = api.post("/api/templates/scout/apply", json!({})).await;
    assert!(again.body["agents"].as_array().unwrap().iter().all(|a| a["changes"] == json!([])), "{}", again.text);

    // The log has the refusal and the change, and not the API's previews.
    let log = api.get("/api/audit/actions?action=type.apply").await;
    let outcomes: Vec<&str> = log.body.as_array().unwrap().iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["ok", "Conflict"], "{}", log.text);
}
