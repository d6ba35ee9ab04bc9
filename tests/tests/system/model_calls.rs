//! Issue 44, item 5: how a turn's model calls fail and end — a model stuck repeating one
//! call, one deadline across retries, refusals that will not pass, a transport error's cause,
//! no event for a call not made, `read_artifact` offered once there is something to read.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::{agent_from, daemon_with_config, daemon_with_llm, say};
use kennel_tests::fake_llm::{FakeLlm, Scripted};

#[tokio::test]
async fn the_same_call_with_the_same_result_four_times_in_a_row_stops_the_turn_and_the_session_goes_on() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "stuck", "model": "m", "tools": ["tool_search", "system_time"]})).await;
    // The clock's result changes every call (to the millisecond): polling it is not a loop.
    for _ in 0..5 {
        llm.push(Scripted::call("system_time", json!({})));
    }
    llm.push(Scripted::text("It is late."));
    let polled = say(&api, &id, None, "watch the clock").await;
    assert_eq!(polled.body["ended"], "reply", "{}", polled.text);

    // A search finds the same every time: the fourth time in a row ends the turn.
    for _ in 0..4 {
        llm.push(Scripted::call("tool_search", json!({"query": "clock"})));
    }
    let turn = say(&api, &id, None, "find a clock tool").await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    assert_eq!(turn.body["ended"], "repeated_call", "{}", turn.text);
    assert_eq!(turn.body["trace"].as_array().unwrap().len(), 4, "{}", turn.text);
    let reply = turn.body["reply"].as_str().unwrap();
    assert!(
        reply.contains("`tool_search` was called 4 times in a row") && reply.contains("max_repeated_calls"),
        "{reply}"
    );

    // The session goes on, and the model is told why the last turn stopped.
    let session = turn.body["session_id"].as_str().unwrap();
    llm.push(Scripted::text("Sorry, I will stop searching."));
    let next = say(&api, &id, Some(session), "what happened?").await;
    assert_eq!(next.status, 200, "{}", next.text);
    assert_eq!(next.body["ended"], "reply");
    let sent = llm.requests().last().unwrap().body["messages"].to_string();
    assert!(sent.contains("[Kennel] The turn was stopped"), "the model is told: {sent}");
    let detail = api.get(&format!("/api/sessions/{session}")).await;
    assert!(detail.text.contains("RepeatedCall"), "noted in the session: {}", detail.text);
}

#[tokio::test]
async fn a_repeated_call_limit_of_zero_never_stops_a_turn() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "[kernel]\nmax_repeated_calls = 0\n").await;
    let id = agent_from(&api, json!({"name": "patient", "model": "m", "tools": ["tool_search"]})).await;
    for _ in 0..6 {
        llm.push(Scripted::call("tool_search", json!({"query": "clock"})));
    }
    llm.push(Scripted::text("done"));
    let turn = say(&api, &id, None, "search away").await;
    assert_eq!(turn.body["ended"], "reply", "{}", turn.text);
    assert_eq!(turn.body["trace"].as_array().unwrap().len(), 6);
}

#[tokio::test]
async fn a_schema_500_is_not_retried_and_the_same_500_twice_ends_the_retries() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "strict", "model": "m"})).await;
    let schema = r#"{"error":{"message":"1 validation error: ('body', 'messages', 1, 'content'): Input should be a valid string"}}"#;
    llm.push(Scripted::error(500, schema));
    let refused = say(&api, &id, None, "hello").await;
    assert_eq!(refused.status, 502, "{}", refused.text);
    assert_eq!(llm.requests().len(), 1, "a request the server's schema refuses is not sent again");

    llm.push(Scripted::error(500, r#"{"error":{"message":"boom"}}"#));
    llm.push(Scripted::error(500, r#"{"error":{"message":"boom"}}"#));
    let started = Instant::now();
    let twice = say(&api, &id, None, "hello again").await;
    assert_eq!(twice.status, 502, "{}", twice.text);
    assert!(twice.error_message().contains("the same answer twice"), "{}", twice.text);
    assert_eq!(llm.requests().len(), 3, "tried once more, not max_retries times");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

    llm.push(Scripted::error(500, r#"{"error":{"message":"boom"}}"#));
    llm.push(Scripted::text("better now"));
    let passing = say(&api, &id, None, "third time").await;
    assert_eq!(passing.status, 200, "a 500 that passes is still retried: {}", passing.text);
}

#[tokio::test]
async fn timeout_secs_bounds_a_model_call_across_its_retries() {
    let llm = FakeLlm::start().await;
    let config = format!("{}timeout_secs = 2\nmax_retries = 5\n", llm.provider_config("fake", "openai"));
    let (_home, _d, api) = daemon_with_config(&config).await;
    let id = agent_from(&api, json!({"name": "waiter", "model": "m"})).await;
    for _ in 0..8 {
        llm.push(Scripted::Delay { millis: 1_500 });
        llm.push(Scripted::error(503, "busy"));
    }
    let started = Instant::now();
    let turn = say(&api, &id, None, "hello").await;
    let took = started.elapsed();
    assert_eq!(turn.status, 504, "{}", turn.text);
    assert!(turn.error_message().contains("timeout_secs (2 s"), "{}", turn.text);
    assert!(took < Duration::from_millis(3_500), "one deadline, not one per attempt: {took:?}");
}

#[tokio::test]
async fn a_provider_refusing_connections_is_named_as_such_and_no_call_is_announced_without_a_key() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let config = format!(
        "[kernel]\ndefault_provider = \"gone\"\n[providers.gone]\nkind = \"openai\"\nbase_url = \"http://{closed}/v1\"\napi_key_env = \"\"\nmax_retries = 0\n\
         [providers.keyless]\nkind = \"openai\"\nbase_url = \"http://{closed}/v1\"\napi_key_env = \"KENNEL_TEST_UNSET_KEY\"\n"
    );
    let (_home, _d, api) = daemon_with_config(&config).await;
    let id = agent_from(&api, json!({"name": "caller", "provider": "gone", "model": "m"})).await;
    let turn = say(&api, &id, None, "hello").await;
    assert_eq!(turn.status, 502, "{}", turn.text);
    assert!(turn.error_message().to_lowercase().contains("connection refused"), "the cause: {}", turn.text);
    assert!(turn.body["error"]["session_id"].is_string(), "{}", turn.text);

    let keyless = agent_from(&api, json!({"name": "keyless", "provider": "keyless", "model": "m"})).await;
    let mut events = api.events(&format!("/api/agents/{keyless}/events")).await;
    let refused = say(&api, &keyless, None, "hello").await;
    assert_eq!(refused.status, 503, "{}", refused.text);
    assert!(refused.error_message().contains("KENNEL_TEST_UNSET_KEY"), "{}", refused.text);
    let sessions = api.get(&format!("/api/agents/{keyless}/sessions")).await;
    assert_eq!(sessions.body.as_array().map(Vec::len), Some(0), "nothing stored: {}", sessions.text);
    // A turn that never called the model announces no call (nor any other event).
    let first = tokio::time::timeout(Duration::from_millis(500), events.next()).await;
    assert!(first.is_err() || first.as_ref().unwrap().is_none(), "no event at all: {first:?}");
}

#[tokio::test]
async fn read_artifact_is_offered_once_the_session_holds_a_spilled_result() {
    let (home, _d, api, llm) = daemon_with_llm("openai", "[tool_results]\nspill_threshold_bytes = 64\n").await;
    let id = agent_from(&api, json!({"name": "reader", "model": "m", "tools": ["files.*"]})).await;
    let bare = agent_from(&api, json!({"name": "bare", "model": "m", "tools": []})).await;
    llm.push(Scripted::text("hi"));
    assert_eq!(say(&api, &bare, None, "hello").await.status, 200);
    assert!(llm.requests()[0].tool_names().is_empty(), "a type with no tools is offered none");

    let workspace = home.path().join("workspaces").join(&id);
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("notes.txt"), "a line of notes that goes on for a while\n".repeat(10)).unwrap();
    llm.push(Scripted::call("read_file", json!({"path": "notes.txt"})));
    llm.push(Scripted::text("read it"));
    let turn = say(&api, &id, None, "read my notes").await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    let requests = llm.requests();
    assert!(!requests[1].tool_names().contains(&"read_artifact".to_string()), "nothing spilled yet");
    assert!(
        requests[2].body["messages"].to_string().contains("artifact_id"),
        "spilled: {}",
        requests[2].body["messages"]
    );
    assert!(requests[2].tool_names().contains(&"read_artifact".to_string()), "{:?}", requests[2].tool_names());
}

#[tokio::test]
async fn a_client_chosen_key_names_one_session_per_agent() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    llm.set_fallback(Scripted::text("noted"));
    let id = agent_from(&api, json!({"name": "keeper", "model": "m"})).await;
    let other = agent_from(&api, json!({"name": "other", "model": "m"})).await;
    let first = say(&api, &id, Some("s1"), "one").await;
    assert_eq!(first.status, 200, "{}", first.text);
    let session = first.body["session_id"].as_str().unwrap().to_string();
    let again = say(&api, &id, Some("s1"), "two").await;
    assert_eq!(again.body["session_id"].as_str(), Some(session.as_str()), "the same key, the same session");
    let by_id = say(&api, &id, Some(&session), "three").await;
    assert_eq!(by_id.body["session_id"].as_str(), Some(session.as_str()), "and by its id");
    let elsewhere = say(&api, &other, Some("s1"), "one").await;
    assert_ne!(elsewhere.body["session_id"].as_str(), Some(session.as_str()), "keys are per agent");
    let stored = api.get(&format!("/api/sessions/{session}/messages")).await;
    assert_eq!(stored.body.as_array().unwrap().len(), 6, "{}", stored.text);

    for bad in ["", "a\u{7}b", &"k".repeat(101)] {
        let refused = say(&api, &id, Some(bad), "hi").await;
        assert_eq!(refused.status, 422, "{bad:?}: {}", refused.text);
    }
}

#[tokio::test]
async fn a_frozen_provider_gives_way_to_the_fallback_at_its_deadline() {
    let (frozen, backup) = (FakeLlm::start().await, FakeLlm::start().await);
    let config = format!(
        "{}{}timeout_secs = 1\n{}",
        kennel_tests::fake_llm::default_provider("frozen"),
        frozen.provider_config("frozen", "openai"),
        backup.provider_config("backup", "openai")
    );
    let (_home, _d, api) = daemon_with_config(&config).await;
    let manifest = json!({"name": "resilient", "provider": "frozen", "model": "m",
        "fallbacks": [{"provider": "backup", "model": "m"}]});
    let id = agent_from(&api, manifest).await;
    frozen.push(Scripted::Delay { millis: 5_000 });
    frozen.push(Scripted::text("too late"));
    backup.push(Scripted::text("from the backup"));
    let started = Instant::now();
    let turn = say(&api, &id, None, "hello").await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    assert_eq!(turn.body["reply"], "from the backup");
    assert!(turn.body["fell_back"][0]["reason"].as_str().unwrap().contains("timeout_secs (1 s"), "{}", turn.text);
    assert!(started.elapsed() < Duration::from_millis(2_500), "{:?}", started.elapsed());
}
