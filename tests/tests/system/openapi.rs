//! The published contract against the running daemon. (Its validity as OpenAPI 3.1 and every
//! operation's behaviour under generated requests are checked by `tests/contract/run`, with
//! openapi-spec-validator and schemathesis, in `./scripts/test`.)

use crate::daemon;

/// Every documented operation is served: calling it reaches its handler, never the router's
/// "no such route" or a 405. (That the router serves nothing undocumented is checked where the
/// routes are registered, `server/src/http/mod.rs`.)
#[tokio::test]
async fn every_documented_operation_is_served() {
    let (_home, _d, api) = daemon().await;
    let doc = api.get("/api/openapi.json").await;
    assert_eq!(doc.status, 200);
    assert_eq!(doc.body["openapi"], "3.1.0");
    let paths = doc.body["paths"].as_object().unwrap();
    assert!(paths.len() >= 27, "{:?}", paths.keys());
    let mut checked = 0;
    for (path, item) in paths {
        let concrete = path.split('/').map(|s| if s.starts_with('{') { "x" } else { s }).collect::<Vec<_>>().join("/");
        for method in item.as_object().unwrap().keys() {
            let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let response =
                tokio::time::timeout(std::time::Duration::from_secs(10), api.request(method.clone(), &concrete).send())
                    .await
                    .expect("answered")
                    .expect("sent");
            let status = response.status().as_u16();
            let body = response.text().await.unwrap_or_default();
            assert_ne!(status, 405, "{method} {path} is documented but not served");
            assert!(!body.contains("no such route"), "{method} {path} is documented but not served: {body}");
            checked += 1;
        }
    }
    assert!(checked >= 38, "{checked} operations");
}

#[tokio::test]
async fn the_bearer_scheme_and_paging_headers_are_declared_once_and_apply_to_every_operation() {
    let (_home, _d, api) = daemon().await;
    let doc = api.get("/api/openapi.json").await.body;
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    assert_eq!(doc["security"], serde_json::json!([{ "bearer": [] }]));
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let public = path == "/healthz";
            assert_eq!(op["responses"].get("401").is_some(), !public, "{method} {path}: 401 documented");
            assert!(op["responses"].get("500").is_some(), "{method} {path}: 500 documented");
            let paged = op["parameters"].as_array().is_some_and(|ps| ps.iter().any(|p| p["name"] == "cursor"));
            let headers = &op["responses"]["200"]["headers"];
            assert_eq!(headers.get("x-total-count").is_some(), paged, "{method} {path}: x-total-count documented");
            assert_eq!(headers.get("link").is_some(), paged, "{method} {path}: link documented");
            for (status, response) in op["responses"].as_object().unwrap() {
                let description = response["description"].as_str().unwrap_or_default();
                assert!(!description.is_empty(), "{method} {path} {status} has no description");
            }
        }
    }
    // A search's `limit` caps its hits; it is not a page, and answers without a total.
    let search = &doc["paths"]["/api/agents/{id}/memory/semantic/search"]["get"]["responses"]["200"];
    assert!(search.get("headers").is_none(), "{search}");
    let listed = &doc["paths"]["/api/agents/{id}/memory/semantic"]["get"]["responses"]["200"];
    assert!(listed["headers"].get("x-total-count").is_some(), "{listed}");
    // Deleting a schedule for good is documented as what it is for tokens: refused.
    let delete = &doc["paths"]["/api/schedules/{id}"]["delete"]["responses"];
    assert!(delete.get("403").is_some() && delete.get("200").is_none(), "{delete}");
}

#[tokio::test]
async fn request_schemas_carry_the_rules_the_server_enforces() {
    let (_home, _d, api) = daemon().await;
    let doc = api.get("/api/openapi.json").await.body;
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["WorkflowInput"]["properties"]["steps"]["minItems"], 1);
    assert_eq!(schemas["WorkflowInput"]["properties"]["steps"]["maxItems"], 32);
    // A name's pattern is written once, in `Name`, and referred to.
    assert_eq!(schemas["WorkflowInput"]["properties"]["name"]["$ref"], "#/components/schemas/Name");
    assert_eq!(schemas["Name"]["pattern"], "^[a-z0-9_-]{1,64}$");
    let cursor = |path: &str| {
        let params = doc["paths"][path]["get"]["parameters"].as_array().unwrap().clone();
        params.into_iter().find(|p| p["name"] == "cursor").expect("a cursor")["schema"].clone()
    };
    // Cursors' patterns are inline, one per kind of key.
    assert_eq!(cursor("/api/audit")["pattern"], "^[0-9]{1,18}$", "{}", cursor("/api/audit"));
    assert_eq!(cursor("/api/tools")["pattern"], "^[0-9]{6}$");
    let task = cursor("/api/tasks");
    assert!(task["pattern"].as_str().is_some_and(|p| p.starts_with("^[0-9]:[0-9a-f]{8}-")), "{task}");
    assert_eq!(schemas["NewTask"]["properties"]["title"]["maxLength"], 200);
    assert_eq!(schemas["NewTask"]["required"], serde_json::json!(["title"]));
    assert_eq!(schemas["NewCapabilities"]["required"], serde_json::json!(["tools"]));
    assert!(schemas["Step"]["oneOf"].as_array().is_some_and(|o| o.len() == 2), "exactly one of agent, agent_type");
    let limit = doc["paths"]["/api/tasks"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "limit")
        .expect("limit documented")
        .clone();
    assert_eq!((limit["schema"]["minimum"].as_i64(), limit["schema"]["maximum"].as_i64()), (Some(1), Some(1000)));
    // Creating an agent type needs a name; replacing one takes it from the path.
    let create = &doc["paths"]["/api/templates"]["post"]["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(create["allOf"][0]["$ref"], "#/components/schemas/ManifestInput");
    assert_eq!(create["allOf"][1]["required"], serde_json::json!(["name"]));
    // A schedule's fire and an event's trigger fire are two schemas, not one shadowing the other.
    assert!(schemas.get("Fire").is_some() && schemas.get("TriggerFire").is_some());
}

#[tokio::test]
async fn the_openapi_document_carries_the_status_table() {
    let (_home, _d, api) = daemon().await;
    let doc = api.get("/api/openapi.json").await;
    let description = doc.body["info"]["description"].as_str().unwrap_or_default();
    for row in [
        "| `Failed` | 502 |",
        "| `Timeout` | 504 |",
        "| `Internal` | 500 |",
        "| `InvalidArguments` | 422 |",
        "| `Unauthorized` | 401 |",
    ] {
        assert!(description.contains(row), "the OpenAPI description lacks `{row}`:\n{description}");
    }
    assert!(description.contains("internal error (ref ID)"), "{description}");
}

/// Every `$ref` in the document points at a schema it holds. (A type a query parameter names,
/// say, is not collected into `components` by itself; a dangling reference breaks every client
/// generator and the contract run's validator.)
#[tokio::test]
async fn every_schema_reference_resolves() {
    let (_home, _d, api) = daemon().await;
    let doc = api.get("/api/openapi.json").await.body;
    let schemas = doc["components"]["schemas"].as_object().expect("components.schemas");
    let mut refs = Vec::new();
    let mut stack = vec![&doc];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::Object(map) => {
                if let Some(r) = map.get("$ref").and_then(|r| r.as_str()) {
                    refs.push(r.to_string());
                }
                stack.extend(map.values());
            }
            serde_json::Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    assert!(refs.len() > 100, "{} references", refs.len());
    for r in &refs {
        let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("{r} is not a schema reference"));
        assert!(schemas.contains_key(name), "{r} points at no schema");
    }
}
