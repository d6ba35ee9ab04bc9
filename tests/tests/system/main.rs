//! System tests: the real daemon, over HTTP and its CLI.

mod a2a;
mod a2a_sdk;
mod a2a_server;
mod agents;
mod agents_family;
mod approvals;
mod ask;
mod auth;
mod backup;
mod browser;
mod channel_adapters;
mod channels;
mod cli;
mod cluster;
mod config;
mod containment;
mod context;
mod dashboard;
mod docker;
mod events;
mod files;
mod hostile_text;
mod http_edge;
mod identity;
mod inbox;
mod knowledge;
mod limits;
mod location;
mod mcp;
mod media;
mod memory;
mod metrics;
mod model_calls;
mod openai_compat;
mod openapi;
mod operator_actions;
mod postgres;
mod processes;
mod providers;
mod real_model;
mod restart;
mod schedule_clock;
mod schedules;
mod script_tools;
mod security_headers;
mod sign_in;
mod skills;
mod tasks;
mod templates;
mod tool_images;
mod tool_modes;
mod tools;
mod turns;
mod usage;
mod workflows;
mod workspace_canvas;

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

/// Sends `agent` a message over the API, in `session` (an id or a key) if given.
pub async fn say(api: &Api, agent: &str, session: Option<&str>, message: &str) -> kennel_tests::Reply {
    let mut body = serde_json::json!({"message": message});
    if let Some(s) = session {
        body["session"] = serde_json::json!(s);
    }
    api.post(&format!("/api/agents/{agent}/messages"), body).await
}

/// A loopback port free a moment ago (for a peer or setting that needs one named).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The Python of a virtual environment `./scripts/test` makes in `target/VENV` (or the one
/// the variable `var` names).
pub fn venv_python(var: &str, venv: &str) -> String {
    let python = std::env::var_os(var).map(std::path::PathBuf::from).unwrap_or_else(|| {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target").join(venv).join("bin/python")
    });
    assert!(python.exists(), "{} is missing: ./scripts/test makes it ({var})", python.display());
    python.display().to_string()
}

/// Creates an agent type and spawns an agent from it with `grants`; returns the agent id.
pub async fn agent_with(api: &Api, name: &str, grants: &[&str]) -> String {
    let t = api.post("/api/templates", serde_json::json!({ "name": name, "tools": grants })).await;
    assert_eq!(t.status, 201, "{}", t.text);
    let a = api.post("/api/agents", serde_json::json!({ "template": name })).await;
    assert_eq!(a.status, 201, "{}", a.text);
    a.body["id"].as_str().expect("agent id").to_string()
}

/// A daemon whose config has a provider `fake` (of `kind`) pointing at a fresh fake LLM.
pub async fn daemon_with_llm(kind: &str, extra_config: &str) -> (Home, Daemon, Api, kennel_tests::fake_llm::FakeLlm) {
    daemon_with_llm_and_env(kind, extra_config, &[]).await
}

/// Like [`daemon_with_llm`], the daemon started with `env` (the secrets config names).
pub async fn daemon_with_llm_and_env(
    kind: &str,
    extra_config: &str,
    env: &[(&str, &str)],
) -> (Home, Daemon, Api, kennel_tests::fake_llm::FakeLlm) {
    let llm = kennel_tests::fake_llm::FakeLlm::start().await;
    let config = format!("{}{extra_config}", llm.provider_config("fake", kind));
    let home = Home::with_config(&config);
    let token = home.token("tests").await;
    let daemon = home.start_with_env(env).await;
    let api = daemon.api(&token);
    (home, daemon, api, llm)
}

/// Creates an agent type from a JSON manifest and spawns an agent of it; returns its id.
pub async fn agent_from(api: &Api, manifest: serde_json::Value) -> String {
    let t = api.post("/api/templates", manifest.clone()).await;
    assert_eq!(t.status, 201, "{}", t.text);
    let a = api.post("/api/agents", serde_json::json!({ "template": manifest["name"] })).await;
    assert_eq!(a.status, 201, "{}", a.text);
    a.body["id"].as_str().expect("agent id").to_string()
}

/// The secret of the signed webhook channel `hook` ([`daemon_with_hook`]).
pub const HOOK_SECRET: &str = "shared-secret";

/// A daemon with the fake provider and a signed webhook channel `hook`, answered by the agent
/// named `agent` and posting its replies to `receiver`.
pub async fn daemon_with_hook(
    receiver: &kennel_tests::fake_webhook::FakeWebhookReceiver,
    agent: &str,
) -> (Home, Daemon, Api, kennel_tests::fake_llm::FakeLlm) {
    let channel = format!(
        "[channels]\nallowed_hosts = [\"127.0.0.1:*\"]\n[channels.hook]\nkind = \"webhook\"\nagent = \"{agent}\"\nsigning_secret_env = \"KENNEL_TEST_SECRET\"\nbase_url = \"{}\"\n",
        receiver.url()
    );
    daemon_with_llm_and_env("openai", &channel, &[("KENNEL_TEST_SECRET", HOOK_SECRET)]).await
}

/// Posts `body` to the channel `hook`, signed as its platform signs.
pub async fn post_to_hook(daemon: &Daemon, body: &serde_json::Value) -> kennel_tests::Reply {
    let body = body.to_string();
    let signature = kennel_tests::fake_webhook::signed(HOOK_SECRET, body.as_bytes());
    let req = daemon
        .anonymous()
        .request(reqwest::Method::POST, "/channels/hook/inbound")
        .header("content-type", "application/json")
        .headers(signature)
        .body(body);
    Api::send(req).await
}

/// Every module says in `tests/postgres-modules` whether `scripts/test` runs it again on
/// PostgreSQL, so a new one is neither skipped there unseen nor run there by default.
#[test]
fn every_module_says_whether_it_runs_on_postgres() {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let listed = std::fs::read_to_string(here.join("postgres-modules")).unwrap();
    let mut said = std::collections::BTreeMap::new();
    for line in listed.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let (Some(choice), Some(module)) = (words.next(), words.next()) else {
            panic!("`{line}`: `on|off MODULE why`")
        };
        assert!(matches!(choice, "on" | "off"), "`{line}`: `on` or `off` first");
        assert!(words.next().is_some(), "`{line}`: say why");
        assert!(said.insert(module.to_string(), choice).is_none(), "{module} is listed twice");
    }
    let mut modules: Vec<String> = std::fs::read_dir(here.join("tests/system"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".rs").to_string())
        .filter(|m| m != "main")
        .collect();
    modules.sort();
    assert_eq!(said.keys().cloned().collect::<Vec<_>>(), modules, "tests/postgres-modules lists each module once");
}
