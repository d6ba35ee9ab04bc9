use kennel_tests::fake_llm::Scripted;
use serde_json::json;

use crate::{agent_from, daemon_with_llm};

async fn say(api: &kennel_tests::Api, agent: &str, message: &str, session: Option<&str>) -> kennel_tests::Reply {
    let mut body = json!({"message": message});
    if let Some(s) = session {
        body["session"] = json!(s);
    }
    let reply = api.post(&format!("/api/agents/{agent}/messages"), body).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply
}

const EVERYTHING: [&str; 1] = ["*"];

#[tokio::test]
async fn all_mode_sends_every_granted_tool_and_no_stable_machinery() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "full", "model": "m", "tools": EVERYTHING})).await;
    llm.push(Scripted::text("ok"));
    say(&api, &id, "hi", None).await;
    let mut names = llm.requests()[0].tool_names();
    names.sort();
    let registry = api.get("/api/tools").await;
    let mut expected: Vec<String> = registry
        .body
        .as_array()
        .unwrap()
        .iter()
        // Tools this daemon excludes (media with no provider) are never sent.
        .filter(|t| t["availability"]["state"] == "registered")
        .map(|t| t["name"].as_str().unwrap().to_string())
        .filter(|n| n != "find_tools" && n != "run_tool")
        // Nothing spilled yet: nothing to read back.
        .filter(|n| n != "read_artifact")
        // An API turn has no person present to answer (`ask.rs` tests that exclusion).
        .filter(|n| n != "ask_user")
        // No channel is configured: the channel tools are left out for every agent until one
        // is (`channels.rs` tests that).
        .filter(|n| !n.starts_with("channel_"))
        .collect();
    expected.sort();
    assert!(expected.contains(&"system_time".to_string()) && expected.len() > 4);
    assert!(!names.contains(&"media_transcribe".to_string()), "excluded: no media provider");
    assert_eq!(names, expected);
}

#[tokio::test]
async fn lazy_mode_sends_meta_tools_then_what_the_session_loaded() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    // Granted system_time only: the meta tools come with the mode.
    let id =
        agent_from(&api, json!({"name": "lazy", "model": "m", "lazy_tools": true, "tools": ["system_time"]})).await;
    llm.push(Scripted::call("system_time", json!({})))
        .push(Scripted::call("tool_search", json!({"query": "time"})))
        .push(Scripted::call("tool_load", json!({"name": "system_time"})))
        .push(Scripted::text("loaded"));
    let first = say(&api, &id, "find the clock", None).await;
    let session = first.body["session_id"].as_str().unwrap().to_string();
    let trace: Vec<_> =
        first.body["trace"].as_array().unwrap().iter().map(|t| t["outcome"].as_str().unwrap()).collect();
    assert_eq!(trace, ["Forbidden", "ok", "ok"]);
    assert!(first.body["trace"][0]["summary"].as_str().unwrap().contains("tool_load(name=\"system_time\")"));
    let sent = llm.requests();
    // read_artifact comes once the session holds a spilled result (stable mode: always).
    assert_eq!(sent[0].tool_names(), ["tool_search", "tool_load"]);
    assert!(sent[2].body["messages"][5]["content"].as_str().unwrap().contains("\"system_time\""), "search found it");

    // Loaded: the next model call carries its schema and the call runs.
    assert_eq!(sent[3].tool_names(), ["system_time", "tool_search", "tool_load"]);
    llm.push(Scripted::call("system_time", json!({}))).push(Scripted::text("noon"));
    let second = say(&api, &id, "now call it", Some(&session)).await;
    assert_eq!(second.body["trace"][0]["outcome"], "ok");

    // Another session starts lazy again.
    llm.push(Scripted::text("fresh"));
    say(&api, &id, "new chat", None).await;
    assert_eq!(llm.requests().last().unwrap().tool_names(), ["tool_search", "tool_load"]);
}

#[tokio::test]
async fn stable_mode_sends_byte_identical_tools_on_every_turn_of_every_session() {
    let (_home, _d, api, llm) = daemon_with_llm("anthropic", "").await;
    let id = agent_from(
        &api,
        json!({"name": "steady", "model": "m", "tool_mode": "stable", "tools": ["system_time", "read_artifact"]}),
    )
    .await;

    llm.push(Scripted::call("system_time", json!({}))) // direct call: refused
        .push(Scripted::call("run_tool", json!({"name": "system_time", "args": {}}))) // not fetched: schema back
        .push(Scripted::call("run_tool", json!({"name": "system_time", "args": {}}))) // runs
        .push(Scripted::call("run_tool", json!({"name": "rm_rf", "args": {}}))) // unknown: never runs
        .push(Scripted::text("done"));
    let first = say(&api, &id, "what time is it", None).await;
    let outcomes: Vec<_> =
        first.body["trace"].as_array().unwrap().iter().map(|t| t["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["Forbidden", "ok", "ok", "NotFound"]);
    let summaries: Vec<_> =
        first.body["trace"].as_array().unwrap().iter().map(|t| t["summary"].as_str().unwrap()).collect();
    assert!(summaries[0].contains("call run_tool(name=\"system_time\""), "{}", summaries[0]);
    assert!(summaries[1].contains("\"not_run\":true"), "{}", summaries[1]);
    assert!(summaries[2].contains("\"utc\""), "{}", summaries[2]);

    // A second turn, and a turn in another session, with find_tools this time.
    llm.push(Scripted::call("find_tools", json!({"names": ["read_artifact", "nope"]}))).push(Scripted::text("ok"));
    say(&api, &id, "again", first.body["session_id"].as_str()).await;
    llm.push(Scripted::text("hello"));
    say(&api, &id, "other chat", None).await;

    let sent = llm.requests();
    assert_eq!(sent.len(), 8);
    let tools = sent[0].tools_bytes();
    assert!(sent.iter().all(|r| r.tools_bytes() == tools), "the tools array never changes");
    assert_eq!(sent[0].tool_names(), ["read_artifact", "find_tools", "run_tool"]);
    assert_eq!(sent[0].body["tools"][2]["cache_control"]["type"], "ephemeral");
    assert_eq!(sent[0].body["system"][0]["cache_control"]["type"], "ephemeral");
    assert!(sent[0].system().ends_with("Tools (call through run_tool): system_time"), "{}", sent[0].system());
    assert!(sent.iter().all(|r| r.system() == sent[0].system()));

    // The audit names the real tool: system_time ran once, through run_tool.
    let audit = api.get(&format!("/api/audit?agent={id}&tool=system_time")).await;
    let outcomes: Vec<_> = audit.body.as_array().unwrap().iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["ok", "Forbidden"]);
}

#[tokio::test]
async fn run_tool_still_goes_through_the_gate_and_validation() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id =
        agent_from(&api, json!({"name": "guarded", "model": "m", "tool_mode": "stable", "tools": ["tool_search"]}))
            .await;
    llm.push(Scripted::call("run_tool", json!({"name": "system_time", "args": {}})))
        .push(Scripted::call("run_tool", json!({"name": "tool_search", "args": {"query": "x"}})))
        .push(Scripted::call("run_tool", json!({"name": "tool_search", "args": {"query": 7}})))
        .push(Scripted::text("ok"));
    let turn = say(&api, &id, "try", None).await;
    let outcomes: Vec<_> =
        turn.body["trace"].as_array().unwrap().iter().map(|t| t["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["Forbidden", "ok", "InvalidArguments"], "{}", turn.text);
    assert!(turn.body["trace"][2]["summary"].as_str().unwrap().contains("query"));
    assert!(llm.requests()[0].system().ends_with("Tools (call through run_tool): tool_search"));
}
