//! System tests: the real daemon, over HTTP and its CLI.

mod agents;
mod auth;
mod config;
mod openapi;
mod restart;
mod templates;
mod tools;

use kennel_tests::{Api, Daemon, Home};

/// A started daemon on a fresh home with an API client.
pub async fn daemon() -> (Home, Daemon, Api) {
    daemon_with_config("").await
}

pub async fn daemon_with_config(config: &str) -> (Home, Daemon, Api) {
    let home = Home::with_config(config);
    let token = home.token("tests").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    (home, daemon, api)
}

/// Creates an agent type and spawns an agent from it with `grants`; returns the agent id.
pub async fn agent_with(api: &Api, name: &str, grants: &[&str]) -> String {
    let t = api.post("/api/templates", serde_json::json!({ "name": name, "tools": grants })).await;
    assert_eq!(t.status, 201, "{}", t.text);
    let a = api.post("/api/agents", serde_json::json!({ "template": name })).await;
    assert_eq!(a.status, 201, "{}", a.text);
    a.body["id"].as_str().expect("agent id").to_string()
}
