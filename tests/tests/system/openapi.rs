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
    ] {
        for m in methods {
            assert!(paths.get(path).and_then(|p| p.get(*m)).is_some(), "{m} {path} is not documented");
        }
    }
    let schemas = doc.body["components"]["schemas"].as_object().unwrap();
    for name in ["AgentType", "ManifestInput", "Agent", "CallOutput", "ErrorBody", "AuditRecord"] {
        assert!(schemas.contains_key(name), "schema {name} missing");
    }
    assert_eq!(doc.body["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    // The request body of POST /api/templates is the manifest input, derived from its type.
    let post = &paths["/api/templates"]["post"];
    assert_eq!(
        post["requestBody"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/ManifestInput"
    );
}
