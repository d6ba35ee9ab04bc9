//! MCP servers' tools on the real daemon (spec §15), against real peers: the MCP project's
//! reference server (`@modelcontextprotocol/server-everything`, npm) over stdio and streamable
//! HTTP, and a server on the official Python SDK (`tests/peers/python_server.py`). Tools go
//! through the whole pipeline (grant globs, the server's own JSON Schema, audit); names a
//! model API refuses are mapped; a server's errors are tool errors; a server that dies is
//! restarted, and one that keeps dying is given up on until an operator reconnects it.

use std::path::PathBuf;
use std::time::Duration;

use kennel_tests::{Api, Home, eventually};
use serde_json::{Value, json};

use crate::{agent_with, free_port};

fn peers() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers")
}

/// The reference server's entry point (`./scripts/test` installs it with npm).
fn everything() -> String {
    let path = peers().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(path.exists(), "{} is missing: ./scripts/test installs tests/peers with npm", path.display());
    path.display().to_string()
}

/// The Python of the MCP SDK's virtual environment (`./scripts/test` makes it).
pub(crate) fn python() -> String {
    crate::venv_python("KENNEL_MCP_PYTHON", "mcp-venv")
}

pub(crate) fn stdio_server(name: &str) -> String {
    format!("[mcp.servers.{name}]\ncommand = \"node\"\nargs = [\"{}\", \"stdio\"]\n", everything())
}

async fn servers(api: &Api) -> Vec<Value> {
    let r = api.get("/api/mcp/servers").await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body.as_array().unwrap().clone()
}

pub(crate) async fn server(api: &Api, name: &str) -> Value {
    servers(api).await.into_iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("no server {name}"))
}

async fn wait_for_state(api: &Api, name: &str, state: &str, within: Duration) -> Value {
    let reached = eventually(within, || async { server(api, name).await["state"] == state }).await;
    let s = server(api, name).await;
    assert!(reached, "{name} never became {state}: {s:#}");
    s
}

async fn tool(api: &Api, name: &str) -> Option<Value> {
    let tools = api.get("/api/tools?limit=1000").await;
    tools.body.as_array().unwrap().iter().find(|t| t["name"] == name).cloned()
}

/// The processes whose working folder is `dir` (a stdio server runs in `$KENNEL_HOME`).
pub(crate) fn processes_in(dir: &std::path::Path) -> Vec<i32> {
    let dir = dir.canonicalize().unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == dir))
        .filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.contains("index.js")))
        .collect()
}

#[tokio::test]
async fn a_stdio_servers_tools_go_through_the_pipeline_and_it_is_restarted_when_it_dies() {
    let home = Home::with_config(&stdio_server("everything"));
    let token = home.token("tests").await;
    let daemon = home.start_with_env(&[("OPENAI_API_KEY", "sk-never-leaks")]).await;
    let api = daemon.api(&token);
    let agent = agent_with(&api, "user", &["mcp__everything__*"]).await;
    let other = agent_with(&api, "plain", &["mcp__elsewhere__*"]).await;

    let connected = wait_for_state(&api, "everything", "connected", Duration::from_secs(30)).await;
    assert_eq!((connected["transport"].as_str(), connected["connections"].as_u64()), (Some("stdio"), Some(1)));
    let names: Vec<&str> = connected["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"mcp__everything__echo") && names.contains(&"mcp__everything__get-sum"), "{names:?}");
    let echo = tool(&api, "mcp__everything__echo").await.expect("in the tool list");
    assert_eq!(
        (echo["family"].as_str(), echo["description"].as_str()),
        (Some("mcp"), Some("Echoes back the input string"))
    );
    assert_eq!(echo["origin"], json!({"provider": "mcp:everything"}));
    assert_eq!(echo["schema"]["properties"]["message"]["type"], "string", "the server's own schema");

    let echoed = api.invoke(&agent, "mcp__everything__echo", json!({"message": "hi <b>there</b>"})).await;
    assert_eq!(echoed.status, 200, "{}", echoed.text);
    assert_eq!(echoed.body["content"], "Echo: hi <b>there</b>");
    let sum = api.invoke(&agent, "mcp__everything__get-sum", json!({"a": 2, "b": 40})).await;
    assert!(sum.body["content"].to_string().contains("42"), "{}", sum.text);

    // The server's schema is checked here, before the server is asked.
    let bad = api.invoke(&agent, "mcp__everything__get-sum", json!({"a": "two", "b": 40})).await;
    assert_eq!((bad.status, bad.error_kind()), (422, "InvalidArguments"), "{}", bad.text);
    assert_eq!(bad.body["error"]["fields"][0]["field"], "a", "{}", bad.text);
    // The grant glob applies.
    let refused = api.invoke(&other, "mcp__everything__echo", json!({"message": "x"})).await;
    assert_eq!((refused.status, refused.error_kind()), (403, "Forbidden"), "{}", refused.text);
    // The server's environment has none of the daemon's secrets.
    let env = api.invoke(&agent, "mcp__everything__get-env", json!({})).await;
    assert_eq!(env.status, 200, "{}", env.text);
    assert!(!env.text.contains("sk-never-leaks") && env.text.contains("PATH"), "{}", env.text);
    let audit = api.get(&format!("/api/audit?agent={agent}&tool=mcp__everything__echo")).await;
    assert_eq!(audit.body.as_array().unwrap().len(), 1, "{}", audit.text);

    // Killed mid-call: the call fails with why, the tools are withdrawn with the reason, and
    // the server is started again.
    let slow = {
        let api = api.clone();
        let agent = agent.clone();
        tokio::spawn(async move {
            api.invoke(&agent, "mcp__everything__trigger-long-running-operation", json!({"duration": 20, "steps": 4}))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pids = processes_in(home.path());
    assert_eq!(pids.len(), 1, "one server process: {pids:?}");
    unsafe { libc::kill(pids[0], libc::SIGKILL) };
    let slow =
        tokio::time::timeout(Duration::from_secs(10), slow).await.expect("the call ends with its server").unwrap();
    assert_eq!(slow.error_kind(), "Unavailable", "{}", slow.text);
    assert!(slow.error_message().contains("the MCP server `everything`"), "{}", slow.text);
    let restarted = eventually(Duration::from_secs(30), || async {
        let s = server(&api, "everything").await;
        s["state"] == "connected" && s["connections"] == 2
    })
    .await;
    let s = server(&api, "everything").await;
    assert!(restarted, "{s:#}");
    assert!(!s["errors"].as_array().unwrap().is_empty(), "the loss is on record: {s:#}");
    let again = api.invoke(&agent, "mcp__everything__echo", json!({"message": "back"})).await;
    assert_eq!(again.body["content"], "Echo: back", "{}", again.text);
    assert_eq!(processes_in(home.path()).len(), 1, "the old server is gone, one new one runs");
}

#[tokio::test]
async fn a_server_that_keeps_dying_is_given_up_on_until_an_operator_reconnects_it() {
    let home = Home::with_config(
        "[mcp.servers.broken]\ncommand = \"sh\"\nargs = [\"-c\", \"echo 'no such database' >&2; exit 1\"]\n",
    );
    let token = home.token("tests").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    let gave_up = wait_for_state(&api, "broken", "gave_up", Duration::from_secs(40)).await;
    assert!(gave_up["reason"].as_str().unwrap().starts_with("failed 5 times within 120 s"), "{gave_up:#}");
    assert_eq!(gave_up["errors"].as_array().unwrap().len(), 5, "{gave_up:#}");
    assert!(gave_up["stderr"].as_array().unwrap().iter().any(|l| l == "no such database"), "{gave_up:#}");
    let reconnect = api.post("/api/mcp/servers/broken/reconnect", json!({})).await;
    assert_eq!(reconnect.status, 200, "{}", reconnect.text);
    assert!(
        eventually(Duration::from_secs(10), || async {
            server(&api, "broken").await["errors"].as_array().unwrap().len() > 5
        })
        .await,
        "it tried again"
    );
    let missing = api.post("/api/mcp/servers/nope/reconnect", json!({})).await;
    assert_eq!((missing.status, missing.error_kind()), (404, "NotFound"), "{}", missing.text);
}

#[tokio::test]
async fn an_http_server_is_reached_through_the_address_guard_with_secret_headers() {
    let port = free_port();
    let mut peer = tokio::process::Command::new("node")
        .args([everything().as_str(), "streamableHttp"])
        .env("PORT", port.to_string())
        .kill_on_drop(true)
        .spawn()
        .expect("node");
    let up = eventually(Duration::from_secs(20), || async {
        tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok()
    })
    .await;
    assert!(up, "the reference server listens on {port}");
    let config = format!(
        "[mcp]\nallowed_hosts = [\"127.0.0.1:{port}\"]\n[mcp.servers.remote]\nurl = \"http://127.0.0.1:{port}/mcp\"\nheader_env = {{ Authorization = \"REMOTE_MCP_AUTH\" }}\n\
         [mcp.servers.unlisted]\nurl = \"http://127.0.0.2:{port}/mcp\"\n"
    );
    let home = Home::with_config(&config);
    let token = home.token("tests").await;
    let daemon = home.start_with_env(&[("REMOTE_MCP_AUTH", "Bearer from-the-env")]).await;
    let api = daemon.api(&token);
    let agent = agent_with(&api, "user", &["mcp__*"]).await;

    let remote = wait_for_state(&api, "remote", "connected", Duration::from_secs(30)).await;
    assert_eq!(remote["transport"], "http");
    let echoed = api.invoke(&agent, "mcp__remote__echo", json!({"message": "over http"})).await;
    assert_eq!(echoed.body["content"], "Echo: over http", "{}", echoed.text);
    let env_shown = serde_json::to_string(&servers(&api).await).unwrap();
    assert!(!env_shown.contains("from-the-env"), "a header's secret is never shown: {env_shown}");

    // An address the guard does not open is never connected to.
    let unlisted = wait_for_state(&api, "unlisted", "disconnected", Duration::from_secs(10)).await;
    assert!(unlisted["reason"].as_str().unwrap().contains("allowed_hosts"), "{unlisted:#}");

    // The server goes away: a call says so, and its tools are withdrawn with why.
    peer.kill().await.unwrap();
    let lost = api.invoke(&agent, "mcp__remote__echo", json!({"message": "anyone?"})).await;
    assert_eq!(lost.error_kind(), "Unavailable", "{}", lost.text);
    let gone = eventually(Duration::from_secs(10), || async { tool(&api, "mcp__remote__echo").await.is_none() }).await;
    assert!(gone, "withdrawn");
    let after = api.invoke(&agent, "mcp__remote__echo", json!({"message": "anyone?"})).await;
    assert!(
        after.error_message().contains("no longer available") && after.error_message().contains("`remote`"),
        "{}",
        after.text
    );
}

#[tokio::test]
async fn the_python_sdk_peer_names_mapped_errors_list_changes_resources_prompts_and_reload() {
    let script = peers().join("python_server.py").display().to_string();
    let home = Home::new();
    let token = home.token("tests").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    assert!(servers(&api).await.is_empty());

    // Added while the daemon runs, by `kennel reload`.
    let config = format!("[mcp.servers.py]\ncommand = \"{}\"\nargs = [\"{script}\"]\n", python());
    std::fs::write(home.path().join("config.toml"), &config).unwrap();
    let reloaded = home.cli_ok(&["reload", "--json"]).await;
    let reloaded: Value = serde_json::from_str(&reloaded).unwrap();
    assert_eq!(reloaded["added"], json!(["py"]), "{reloaded}");
    let agent = agent_with(&api, "user", &["mcp__py__*", "mcp_resources", "mcp_prompts"]).await;
    let outsider = agent_with(&api, "outsider", &["mcp_resources"]).await;
    let py = wait_for_state(&api, "py", "connected", Duration::from_secs(30)).await;

    // `files.read` is not a name model APIs take: it is mapped, stably, and shown.
    let mapped =
        py["tools"].as_array().unwrap().iter().find(|t| t["original_name"] == "files.read").expect("listed").clone();
    let name = mapped["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("mcp__py__files_read_") && name.len() == "mcp__py__files_read_".len() + 6, "{name}");
    assert_eq!(tool(&api, &name).await.unwrap()["origin"]["original_name"], "files.read");
    // The MCP page names each tool as the server does, renamed or not.
    let b = daemon.browser();
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);
    let page = b.get("/mcp").await.text;
    assert!(page.contains("<code>fail</code>") && page.contains("<code>files.read</code> (renamed"), "{page}");
    let read = api.invoke(&agent, &name, json!({"path": "notes.txt"})).await;
    assert_eq!(read.body["content"], "contents of notes.txt", "{}", read.text);

    // A tool's own error is the call's error, not the daemon's.
    let failed = api.invoke(&agent, "mcp__py__fail", json!({})).await;
    assert_eq!((failed.status, failed.error_kind()), (502, "Failed"), "{}", failed.text);
    assert_eq!(failed.error_message(), "the peer failed on purpose");

    // notifications/tools/list_changed: the new tool is offered without a restart.
    assert!(tool(&api, "mcp__py__late").await.is_none());
    let added = api.invoke(&agent, "mcp__py__add_late_tool", json!({})).await;
    assert_eq!(added.status, 200, "{}", added.text);
    assert!(eventually(Duration::from_secs(10), || async { tool(&api, "mcp__py__late").await.is_some() }).await);
    let late = api.invoke(&agent, "mcp__py__late", json!({})).await;
    assert_eq!(late.body["content"], "late tool ran", "{}", late.text);

    // Resources and prompts, for agents that may use the server's tools.
    let listed = api.invoke(&agent, "mcp_resources", json!({"server": "py"})).await;
    assert!(listed.text.contains("memo://greeting"), "{}", listed.text);
    let memo = api.invoke(&agent, "mcp_resources", json!({"server": "py", "uri": "memo://greeting"})).await;
    assert_eq!(memo.body["content"][0]["text"], "hello from the python peer", "{}", memo.text);
    let prompt = api
        .invoke(&agent, "mcp_prompts", json!({"server": "py", "name": "summarise", "arguments": {"topic": "otters"}}))
        .await;
    assert!(prompt.text.contains("Summarise otters in one line."), "{}", prompt.text);
    let outside = api.invoke(&outsider, "mcp_resources", json!({"server": "py"})).await;
    assert_eq!((outside.status, outside.error_kind()), (403, "Forbidden"), "{}", outside.text);

    // Removed from the config: stopped, its tools withdrawn with why.
    std::fs::write(home.path().join("config.toml"), "").unwrap();
    let reloaded = home.cli_ok(&["reload"]).await;
    assert!(reloaded.contains("removed    py"), "{reloaded}");
    assert!(servers(&api).await.is_empty());
    let gone = api.invoke(&agent, &name, json!({"path": "x"})).await;
    assert!(gone.error_message().contains("was removed from [mcp]"), "{}", gone.text);

    // A config error on reload changes nothing and says where.
    std::fs::write(home.path().join("config.toml"), "[mcp.servers.x]\nurl = \"ftp://nope\"\n").unwrap();
    let refused = api.post("/api/reload", json!({})).await;
    assert_eq!((refused.status, refused.error_kind()), (422, "InvalidArguments"), "{}", refused.text);
    assert!(refused.error_message().contains("config.toml:1:"), "{}", refused.text);
}

/// Runs the Python SDK's client (`tests/peers/python_client.py`) with `args`; its JSON report.
async fn python_client(args: &[&str]) -> Value {
    let script = peers().join("python_client.py");
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(python()).arg(script).args(args).output(),
    )
    .await
    .expect("the SDK client finishes")
    .expect("python runs");
    assert!(out.status.success(), "the SDK client failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[tokio::test]
async fn the_python_sdks_client_uses_an_agents_granted_tools_through_kennels_mcp_server() {
    let home = Home::new();
    let token = home.token("mcp-user").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    let agent = agent_with(&api, "helper", &["system_time", "memory_*"]).await;
    let denied_too = api
        .put(
            &format!("/api/agents/{agent}/capabilities"),
            json!({"tools": ["system_time", "memory_*"], "deny": ["memory_semantic_forget"]}),
        )
        .await;
    assert_eq!(denied_too.status, 200, "{}", denied_too.text);
    let url = format!("{}/api/agents/{agent}/mcp", daemon.base);

    // Over streamable HTTP with an API token.
    let http = python_client(&[
        "http",
        &url,
        &token,
        "memory_store",
        r#"{"key": "colour", "value": "blue"}"#,
        "memory_semantic_forget",
    ])
    .await;
    assert_eq!(http["server"], "kennel");
    let tools: Vec<&str> = http["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert!(
        tools.contains(&"system_time") && tools.contains(&"memory_store") && tools.contains(&"memory_recall"),
        "{tools:?}"
    );
    assert!(
        !tools.contains(&"memory_semantic_forget") && !tools.contains(&"process_start"),
        "denied, not granted: {tools:?}"
    );
    assert_eq!(http["granted"]["is_error"], false, "{http}");
    assert_eq!(http["refused"]["is_error"], true, "{http}");
    assert!(http["refused"]["text"].as_str().unwrap().starts_with("Forbidden:"), "not granted: {http}");
    let stored = api.invoke(&agent, "memory_recall", json!({"key": "colour"})).await;
    assert!(stored.text.contains("blue"), "the call ran as the agent: {}", stored.text);

    // Over stdio through `kennel mcp`, with the CLI's token.
    let kennel = kennel_tests::kennel_bin().display().to_string();
    let home_dir = home.path().display().to_string();
    let stdio =
        python_client(&["stdio", &kennel, &home_dir, "helper", "system_time", "{}", "memory_semantic_forget"]).await;
    assert_eq!(stdio["server"], "kennel");
    assert_eq!(stdio["tools"], http["tools"], "the same tools both ways");
    assert_eq!(stdio["granted"]["is_error"], false, "{stdio}");
    assert!(stdio["granted"]["text"].as_str().unwrap().contains('T'), "a time: {stdio}");
    assert_eq!(stdio["refused"]["is_error"], true, "{stdio}");
    assert!(stdio["refused"]["text"].as_str().unwrap().starts_with("Forbidden:"), "denied: {stdio}");

    // The audit names the MCP client and who let it in.
    let audit = api.get(&format!("/api/audit?agent={agent}")).await;
    let callers: Vec<(String, String)> = audit
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["tool"].as_str().unwrap().to_string(), e["caller"].as_str().unwrap().to_string()))
        .collect();
    assert!(callers.contains(&("memory_store".into(), "mcp:python-sdk-test (token:mcp-user)".into())), "{callers:?}");
    assert!(callers.contains(&("system_time".into(), "mcp:python-sdk-test (cli)".into())), "{callers:?}");
    assert!(
        callers.contains(&("memory_semantic_forget".into(), "mcp:python-sdk-test (cli)".into())),
        "refused calls too: {callers:?}"
    );

    // Without a token, nothing.
    let anonymous = daemon.anonymous().post(&format!("/api/agents/{agent}/mcp"), json!({})).await;
    assert_eq!(anonymous.status, 401, "{}", anonymous.text);
}
