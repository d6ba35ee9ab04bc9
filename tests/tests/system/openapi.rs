use crate::daemon;

#[tokio::test]
async fn the_openapi_document_describes_every_route() {
    let (_home, _d, api) = daemon().await;
    let doc = api.get("/api/openapi.json").await;
    assert_eq!(doc.status, 200);
    assert_eq!(doc.body["openapi"], "3.1.0");
    let paths = doc.body["paths"].as_object().unwrap();
    for (path, methods) in [
        ("/api/templates", &["get", "post"][..]),
        ("/api/templates/{name}", &["get", "put", "delete"]),
        ("/api/agents", &["get", "post"]),
        ("/api/agents/{id}", &["get", "delete"]),
        ("/api/agents/{id}/capabilities", &["put"]),
        ("/api/agents/{id}/tools", &["get"]),
        ("/api/agents/{id}/tools/{name}/invoke", &["post"]),
        ("/api/agents/{id}/sessions", &["get", "post"]),
        ("/api/tools", &["get"]),
        ("/api/audit", &["get"]),
        ("/api/tasks", &["get", "post"]),
        ("/api/tasks/{id}", &["get"]),
        ("/api/schedules", &["get"]),
        ("/api/schedules/{id}", &["get", "delete"]),
        ("/api/schedules/{id}/pause", &["post"]),
        ("/api/schedules/{id}/resume", &["post"]),
    ] {
        for m in methods {
            assert!(paths.get(path).and_then(|p| p.get(*m)).is_some(), "{m} {path} is not documented");
        }
    }
    let schemas = doc.body["components"]["schemas"].as_object().unwrap();
    for name in ["AgentType", "ManifestInput", "Agent", "CallOutput", "ErrorBody", "AuditRecord", "Schedule", "Fire"] {
        assert!(schemas.contains_key(name), "schema {name} missing");
    }
    assert_eq!(doc.body["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    // Permanent deletion of a schedule is documented as what it is for tokens: refused.
    let delete = &paths["/api/schedules/{id}"]["delete"]["responses"];
    assert!(delete.get("403").is_some() && delete.get("200").is_none(), "{delete}");
    // The request body of POST /api/templates is the manifest input, derived from its type.
    let post = &paths["/api/templates"]["post"];
    assert_eq!(
        post["requestBody"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/ManifestInput"
    );
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
