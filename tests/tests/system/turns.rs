use std::time::Duration;

use kennel_tests::fake_llm::Scripted;
use serde_json::json;

use crate::{agent_from, daemon, daemon_with_llm};

async fn say(api: &kennel_tests::Api, agent: &str, message: &str) -> kennel_tests::Reply {
    api.post(&format!("/api/agents/{agent}/messages"), json!({"message": message})).await
}

#[tokio::test]
async fn a_turn_calls_a_tool_and_replies_over_the_openai_protocol() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(
        &api,
        json!({"name": "clock", "system_prompt": "You tell the time.", "model": "gpt-test", "tools": ["system_time"]}),
    )
    .await;
    llm.push(Scripted::call("system_time", json!({}))).push(Scripted::text("It is noon."));

    let turn = say(&api, &id, "What time is it?").await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    assert_eq!(turn.body["reply"], "It is noon.");
    assert_eq!(turn.body["ended"], "reply");
    assert_eq!(turn.body["iterations"], 2);
    assert_eq!(turn.body["trace"][0]["name"], "system_time");
    assert_eq!(turn.body["trace"][0]["outcome"], "ok");
    assert!(turn.body["trace"][0]["summary"].as_str().unwrap().contains("utc"));

    let sent = llm.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].body["model"], "gpt-test");
    assert_eq!(sent[0].system(), "You tell the time.");
    assert_eq!(sent[0].tool_names(), ["system_time"], "read_artifact only once something spilled");
    assert_eq!(sent[0].body["messages"][1], json!({"role": "user", "content": "What time is it?"}));
    // The second call carries the tool's result as the model is meant to see it.
    let tool_msg = &sent[1].body["messages"][3];
    assert_eq!(tool_msg["role"], "tool");
    assert!(tool_msg["content"].as_str().unwrap().contains("\"utc\""));

    let session = turn.body["session_id"].as_str().unwrap();
    let history = api.get(&format!("/api/sessions/{session}/messages")).await;
    let roles: Vec<_> = history.body.as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    let audit = api.get(&format!("/api/audit?agent={id}")).await;
    assert_eq!(audit.body[0]["tool"], "system_time");
    assert_eq!(audit.body[0]["caller"], "token:tests");
}

#[tokio::test]
async fn the_anthropic_protocol_sends_the_key_and_groups_tool_results() {
    let llm = kennel_tests::fake_llm::FakeLlm::start().await;
    let config = format!(
        "[providers.claude]\nkind = \"anthropic\"\nbase_url = \"{}\"\napi_key_env = \"KENNEL_TEST_ANTHROPIC_KEY\"\n",
        llm.base_url()
    );
    let home = kennel_tests::Home::with_config(&config);
    let token = home.token("t").await;
    let daemon = home.start_with_env(&[("KENNEL_TEST_ANTHROPIC_KEY", "sk-test-123")]).await;
    let api = daemon.api(&token);
    let id =
        agent_from(&api, json!({"name": "a", "model": "claude-test", "provider": "claude", "tools": ["system_time"]}))
            .await;
    llm.push(Scripted::calls(&[("system_time", json!({})), ("system_time", json!({}))])).push(Scripted::text("Twice."));

    let turn = say(&api, &id, "Check the clock twice").await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    assert_eq!(turn.body["reply"], "Twice.");
    assert_eq!(turn.body["trace"].as_array().unwrap().len(), 2);

    let sent = llm.requests();
    assert_eq!(sent[0].protocol, "anthropic");
    assert_eq!(sent[0].header("x-api-key"), Some("sk-test-123"));
    assert_eq!(sent[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent[0].body["tools"][0]["input_schema"]["type"], "object");
    let messages = sent[1].body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "user, assistant with two tool_use blocks, one user with both results");
    assert_eq!(messages[2]["content"].as_array().unwrap().len(), 2);
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], messages[1]["content"][0]["id"]);
}

#[tokio::test]
async fn missing_provider_or_key_is_a_clear_error_and_the_daemon_keeps_serving() {
    let (_home, _d, api) = daemon().await;
    let id = agent_from(&api, json!({"name": "lonely", "model": "m"})).await;
    let refused = say(&api, &id, "hello?").await;
    assert_eq!(refused.status, 503);
    assert!(refused.error_message().contains("no LLM provider is configured"), "{}", refused.text);
    assert_eq!(api.get("/api/agents").await.status, 200);

    let config = "[providers.cloud]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"KENNEL_TEST_NOT_SET\"\n";
    let (_home, _d, api) = crate::daemon_with_config(config).await;
    let id = agent_from(&api, json!({"name": "keyless", "model": "m"})).await;
    let refused = say(&api, &id, "hello?").await;
    assert_eq!(refused.status, 503);
    assert!(refused.error_message().contains("set KENNEL_TEST_NOT_SET"), "{}", refused.text);
    // A provider config.toml does not define is refused when the type is made, not at the first turn.
    let unknown = api.post("/api/templates", json!({"name": "elsewhere", "model": "m", "provider": "nope"})).await;
    assert_eq!(unknown.status, 422, "{}", unknown.text);
    assert_eq!(unknown.body["error"]["fields"][0]["field"], "provider", "{}", unknown.text);
    assert!(unknown.text.contains("`nope` is not a provider of this daemon (configured: cloud)"), "{}", unknown.text);
    let no_model = agent_from(&api, json!({"name": "modelless", "provider": "cloud"})).await;
    assert!(say(&api, &no_model, "hi").await.error_message().contains("no model"));
}

#[tokio::test]
async fn a_forbidden_tool_in_a_model_response_is_refused_and_not_run() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "narrow", "model": "m", "tools": ["tool_search"]})).await;
    llm.push(Scripted::call("tool_load", json!({"name": "tool_search"})))
        .push(Scripted::call("tool_search", json!({"query": "tool_search"})))
        .push(Scripted::text("done"));
    let turn = say(&api, &id, "load something").await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    assert_eq!(turn.body["trace"][0]["outcome"], "Forbidden");
    assert_eq!(turn.body["trace"][1]["outcome"], "ok");
    let sent = llm.requests();
    let refusal = &sent[1].body["messages"][3]["content"];
    assert!(refusal.as_str().unwrap().starts_with("Forbidden:"), "{refusal}");
    // The refused tool_load changed nothing: the search shows the tool as not loaded.
    let search_result: serde_json::Value =
        serde_json::from_str(sent[2].body["messages"][5]["content"].as_str().unwrap()).unwrap();
    assert_eq!(search_result["tools"][0]["loaded"], false);
}

/// An agent whose type names no provider uses the daemon's default, and adding a second
/// provider cannot leave it without one: a config with several and no `[kernel]
/// default_provider` does not load, and with one the agent keeps working (it once failed
/// "names no provider and several are configured").
#[tokio::test]
async fn agents_naming_no_provider_use_the_default_one_when_a_second_is_added() {
    let llm = kennel_tests::fake_llm::FakeLlm::start().await;
    let second = "[providers.other]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"\"\n";
    let both = format!("{}{second}", llm.provider_config("fake", "openai"));
    let home = kennel_tests::Home::with_config(&both);
    let refused = home.cli(&["start", "--bind", "127.0.0.1:0"]).await;
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("config.toml:5:") && stderr.contains("default_provider"), "{stderr}");

    let chosen = format!("[kernel]\ndefault_provider = \"fake\"\n{both}");
    let home = kennel_tests::Home::with_config(&chosen);
    let token = home.token("tests").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    let id = agent_from(&api, json!({"name": "plain", "model": "m"})).await;
    llm.push(Scripted::text("hello from the default"));
    let turn = say(&api, &id, "hi").await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    assert_eq!(turn.body["reply"], "hello from the default");

    let typo =
        kennel_tests::Home::with_config(&chosen.replace("default_provider = \"fake\"", "default_provider = \"fak\""));
    let refused = typo.cli(&["start", "--bind", "127.0.0.1:0"]).await;
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("config.toml:2:") && stderr.contains("`fak` is not a configured provider"), "{stderr}");
}

/// What an agent's model does in a turn is the agent's doing, on behalf of whoever sent the
/// message; what the token does itself outside a turn is the token's. (A task and a cron job
/// an agent made in an operator's chat once read "posted by operator:NAME".)
#[tokio::test]
async fn records_of_a_turn_name_the_agent_that_acted_and_for_whom() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "planner", "model": "m", "tools": ["tasks.*", "schedule.*"]})).await;
    llm.push(Scripted::calls(&[
        ("task_post", json!({"title": "write the report", "body": "", "priority": 5})),
        ("cron_create", json!({"expression": "0 9 * * *", "prompt": "report"})),
    ]))
    .push(Scripted::text("planned"));
    let turn = say(&api, &id, "plan the week").await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    let by_the_agent = "agent:planner for token:tests";
    let tasks = api.get("/api/tasks").await;
    assert_eq!(tasks.body[0]["posted_by"], by_the_agent, "{}", tasks.text);
    let jobs = api.get("/api/schedules?agent=planner").await;
    assert_eq!(jobs.body[0]["created_by"], by_the_agent, "{}", jobs.text);

    // The same tool called through the API, outside a turn: the token acted.
    let direct = api.invoke(&id, "task_post", json!({"title": "by hand", "body": "", "priority": 9})).await;
    assert_eq!(direct.status, 200, "{}", direct.text);
    let tasks = api.get("/api/tasks").await;
    assert_eq!(
        (tasks.body[0]["title"].as_str(), tasks.body[0]["posted_by"].as_str()),
        (Some("by hand"), Some("token:tests"))
    );
}

/// A reply's calls are steps: each that changes something runs after the ones before it (the
/// calls of one reply once all ran at the same time, and a relation failed NotFound beside the
/// call adding its end).
#[tokio::test]
async fn the_calls_of_one_reply_run_in_the_models_order() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "grapher", "model": "m", "tools": ["knowledge.*"]})).await;
    let mut calls = vec![("knowledge_add_entity", json!({"name": "kennel", "type": "project"}))];
    for i in 0..12 {
        calls.push(("knowledge_add_entity", json!({"name": format!("crate-{i}"), "type": "library"})));
        calls.push(("knowledge_add_relation", json!({"from": "kennel", "to": format!("crate-{i}"), "type": "uses"})));
    }
    llm.push(Scripted::calls(&calls)).push(Scripted::text("mapped"));
    let turn = say(&api, &id, "map the dependencies").await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    let trace = turn.body["trace"].as_array().unwrap();
    let names: Vec<&str> = trace.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, calls.iter().map(|(name, _)| *name).collect::<Vec<_>>(), "results in the model's order");
    let failed: Vec<&serde_json::Value> = trace.iter().filter(|t| t["outcome"] != "ok").collect();
    assert!(failed.is_empty(), "every step found the one before it done: {failed:?}");
    let relations = api.get("/api/agents/grapher/knowledge/relations?limit=100").await;
    assert_eq!(relations.body.as_array().map(Vec::len), Some(12), "{}", relations.text);
}

#[tokio::test]
async fn the_iteration_cap_ends_a_runaway_turn() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(
        &api,
        json!({"name": "loopy", "model": "m", "tools": ["system_time"], "limits": {"max_iterations": 3}}),
    )
    .await;
    llm.set_fallback(Scripted::call("system_time", json!({})));
    let turn = say(&api, &id, "never stop").await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    assert_eq!(turn.body["ended"], "iteration_cap");
    assert_eq!(turn.body["iterations"], 3);
    assert!(turn.body["reply"].as_str().unwrap().contains("3 model calls"));
    assert_eq!(llm.requests().len(), 3);
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_client_errors_are_not() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "patient", "model": "m"})).await;
    llm.push(Scripted::Error {
        status: 429,
        body: r#"{"error":{"message":"slow down"}}"#.into(),
        retry_after: Some(0),
    })
    .push(Scripted::error(503, "overloaded"))
    .push(Scripted::text("finally"));
    let turn = say(&api, &id, "hi").await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    assert_eq!(turn.body["reply"], "finally");
    assert_eq!(llm.requests().len(), 3);

    llm.push(Scripted::error(400, r#"{"error":{"message":"model `m` does not exist"}}"#));
    let failed = say(&api, &id, "hi").await;
    assert_eq!(failed.status, 502, "a provider's refusal is a bad gateway");
    assert!(failed.error_message().contains("model `m` does not exist"), "{}", failed.text);
    assert_eq!(llm.requests().len(), 4, "a 400 is not retried");
}

#[tokio::test]
async fn history_survives_a_restart_and_the_next_turn_sees_all_of_it() {
    let llm = kennel_tests::fake_llm::FakeLlm::start().await;
    let home = kennel_tests::Home::with_config(&llm.provider_config("fake", "openai"));
    let token = home.token("t").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    let id = agent_from(&api, json!({"name": "memo", "model": "m", "tools": ["system_time"]})).await;
    llm.push(Scripted::call("system_time", json!({}))).push(Scripted::text("first answer"));
    let first = say(&api, &id, "first").await;
    let session = first.body["session_id"].as_str().unwrap().to_string();
    let before = api.get(&format!("/api/sessions/{session}/messages")).await.body;
    daemon.stop().await;

    let daemon = home.start().await;
    let api = daemon.api(&token);
    assert_eq!(api.get(&format!("/api/sessions/{session}/messages")).await.body, before);
    llm.push(Scripted::text("second answer"));
    let second =
        api.post(&format!("/api/agents/{id}/messages"), json!({"message": "second", "session": session})).await;
    assert_eq!(second.body["session_id"], session);
    let last = llm.requests().pop().unwrap();
    let roles: Vec<_> = last.body["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant", "user"]);
    let sessions = api.get(&format!("/api/agents/{id}/sessions")).await;
    assert_eq!(sessions.body.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn stopping_an_agent_cancels_its_running_turn() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "slow", "model": "m"})).await;
    llm.push(Scripted::Delay { millis: 20_000 }).push(Scripted::text("too late"));
    let running = {
        let api = api.clone();
        let id = id.clone();
        tokio::spawn(async move { say(&api, &id, "take your time").await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    api.post(&format!("/api/agents/{id}/stop"), json!({})).await;
    let turn = tokio::time::timeout(Duration::from_secs(5), running).await.expect("the turn ends at once").unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(turn.status, 200, "{}", turn.text);
    assert_eq!(turn.body["ended"], "cancelled");
}

#[tokio::test]
async fn cancelling_a_sessions_turn_ends_that_turn_only_and_the_chat_says_who() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "slow", "model": "m"})).await;
    let session =
        api.post(&format!("/api/agents/{id}/sessions"), json!({})).await.body["id"].as_str().unwrap().to_string();
    let other =
        api.post(&format!("/api/agents/{id}/sessions"), json!({})).await.body["id"].as_str().unwrap().to_string();
    let cancel = format!("/api/agents/{id}/sessions/{session}/cancel");
    assert_eq!(api.post(&cancel, json!({})).await.body["cancelled"], 0, "no turn runs yet");

    // Eighty words a quarter of a second apart: twenty seconds unless cut.
    llm.push(Scripted::SlowText { text: "word ".repeat(80), piece_millis: 250 });
    let running = {
        let (api, id, session) = (api.clone(), id.clone(), session.clone());
        tokio::spawn(async move {
            api.post(&format!("/api/agents/{id}/messages"), json!({"message": "take your time", "session": session}))
                .await
        })
    };
    let started = kennel_tests::eventually(Duration::from_secs(5), || async {
        api.get(&format!("/api/sessions/{session}/messages")).await.body.as_array().is_some_and(|m| !m.is_empty())
    })
    .await;
    assert!(started, "the turn stored its message");
    // Another session's cancel touches nothing.
    assert_eq!(api.post(&format!("/api/agents/{id}/sessions/{other}/cancel"), json!({})).await.body["cancelled"], 0);
    let at = std::time::Instant::now();
    let cancelled = api.post(&cancel, json!({})).await;
    assert_eq!((cancelled.status, &cancelled.body["cancelled"]), (200, &json!(1)), "{}", cancelled.text);
    let turn = tokio::time::timeout(Duration::from_secs(5), running).await.expect("the turn ends at once").unwrap();
    assert!(at.elapsed() < Duration::from_secs(3), "{:?}", at.elapsed());
    assert_eq!(turn.body["ended"], "cancelled", "{}", turn.text);

    // The agent still runs, the session says why the message has no answer, and takes the next.
    assert_eq!(api.get(&format!("/api/agents/{id}")).await.body["status"], "running");
    let detail = api.get(&format!("/api/sessions/{session}")).await;
    let note = &detail.body["failures"][0];
    assert_eq!(note["kind"], "Cancelled", "{}", detail.text);
    assert!(note["message"].as_str().unwrap().contains("cancelled by token:"), "{note}");
    llm.push(Scripted::text("here now"));
    let next = api.post(&format!("/api/agents/{id}/messages"), json!({"message": "again", "session": session})).await;
    assert_eq!(next.body["reply"], "here now", "{}", next.text);

    // Who did it is in the operator-action log; a session of nobody's is not found.
    let actions = api.get("/api/audit/actions?action=turn.cancel").await;
    assert!(actions.body.as_array().is_some_and(|a| a.len() == 3), "{}", actions.text);
    let stranger = format!("/api/agents/{id}/sessions/01900000-0000-7000-8000-000000000000/cancel");
    assert_eq!(api.post(&stranger, json!({})).await.status, 404);
    assert_eq!(api.post(&format!("/api/agents/{id}/sessions/nonsense/cancel"), json!({})).await.status, 404);
}

#[tokio::test]
async fn turn_progress_streams_as_server_sent_events() {
    let (_home, d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "live", "model": "m", "tools": ["system_time"]})).await;
    let mut events = api.request(reqwest::Method::GET, &format!("/api/agents/{id}/events")).send().await.unwrap();
    assert_eq!(events.status(), 200);
    assert!(events.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    llm.push(Scripted::call("system_time", json!({}))).push(Scripted::text("now"));
    say(&api, &id, "time?").await;
    let mut text = String::new();
    while !text.contains("event: turn_ended") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), events.chunk()).await.expect("events arrive").unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk.expect("stream open")));
    }
    let names: Vec<_> = text.lines().filter_map(|l| l.strip_prefix("event: ")).collect();
    // The provider streams: the tool call arrives as pieces (its name, then its arguments in
    // two), the reply as text pieces, before the finished call and reply.
    assert_eq!(
        names,
        [
            "turn_started",
            "model_call",
            "tool_call_delta",
            "tool_call_delta",
            "tool_call_delta",
            "tool_call_started",
            "tool_call_finished",
            "model_call",
            "text_delta",
            "reply",
            "turn_ended"
        ]
    );
    assert!(text.contains("\"name\":\"system_time\""));
    assert!(text.contains("\"type\":\"text_delta\",\"iteration\":2,\"text\":\"now\""), "{text}");
    drop(d);
}

#[tokio::test]
async fn the_system_prompt_carries_the_agents_goal() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    api.post("/api/templates", json!({"name": "planner", "model": "m", "system_prompt": "Plan carefully."})).await;
    let agent = api.post("/api/agents", json!({"template": "planner", "goal": "Ship the release by Friday"})).await;
    let id = agent.body["id"].as_str().unwrap();
    llm.push(Scripted::text("on it"));
    say(&api, id, "status?").await;
    assert_eq!(llm.requests()[0].system(), "Plan carefully.\n\nYour current goal: Ship the release by Friday");
}
