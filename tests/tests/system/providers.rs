//! Issue 17: what a provider bears. `max_in_flight` bounds the calls in flight to it (the rest
//! wait, shown as queued), and an agent type's fallbacks take over when it fails.

use std::time::Duration;

use serde_json::json;

use crate::agent_from;
use kennel_tests::Home;
use kennel_tests::fake_llm::{FakeLlm, Scripted};

#[tokio::test]
async fn fifty_turns_at_once_never_exceed_max_in_flight_and_all_finish() {
    let llm = FakeLlm::start().await;
    let home = Home::with_config(&format!("{}max_in_flight = 2\n", llm.provider_config("fake", "openai")));
    let token = home.token("t").await;
    let d = home.start().await;
    let api = d.api(&token);
    llm.set_fallback(Scripted::SlowText { text: "one two three".into(), piece_millis: 10 });
    let id = agent_from(&api, json!({"name": "busy", "model": "m"})).await;
    let mut events = api.request(reqwest::Method::GET, &format!("/api/agents/{id}/events")).send().await.unwrap();

    let turns: Vec<_> = (0..50)
        .map(|i| {
            let (api, id) = (api.clone(), id.clone());
            tokio::spawn(async move {
                api.post(&format!("/api/agents/{id}/messages"), json!({"message": format!("fire {i}")})).await
            })
        })
        .collect();
    for turn in turns {
        let reply = turn.await.unwrap();
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(reply.body["reply"], "one two three");
    }
    assert_eq!(llm.requests().len(), 50);
    assert_eq!(llm.most_in_flight(), 2, "bounded, and the bound was reached");
    let mut seen = String::new();
    while !seen.contains("event: queued") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), events.chunk()).await.expect("events").unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk.expect("open")));
    }
    assert!(seen.contains("\"provider\":\"fake\""), "the waiting calls were shown as queued");
}

#[tokio::test]
async fn a_provider_answering_503_gives_way_to_the_type_s_fallback_and_the_chat_says_so() {
    let (down, up) = (FakeLlm::start().await, FakeLlm::start().await);
    let config = format!(
        "{}{}max_retries = 1\n{}",
        kennel_tests::fake_llm::default_provider("primary"),
        down.provider_config("primary", "openai"),
        up.provider_config("backup", "anthropic")
    );
    let home = Home::with_config(&config);
    let token = home.token("t").await;
    let d = home.start().await;
    let api = d.api(&token);
    down.set_fallback(Scripted::error(503, r#"{"error":{"message":"overloaded, try later"}}"#));
    up.push(Scripted::text("Answered by the backup."));
    let unknown = api
        .post(
            "/api/templates",
            json!({"name": "bad", "provider": "primary", "model": "m", "fallbacks": [{"provider": "nowhere", "model": "x"}]}),
        )
        .await;
    assert_eq!(unknown.status, 422, "{}", unknown.text);
    assert_eq!(unknown.body["error"]["fields"][0]["field"], "fallbacks[0].provider");
    let id = agent_from(
        &api,
        json!({"name": "sturdy", "provider": "primary", "model": "big-model",
               "fallbacks": [{"provider": "backup", "model": "claude-small"}]}),
    )
    .await;
    let mut events = api.request(reqwest::Method::GET, &format!("/api/agents/{id}/events")).send().await.unwrap();
    let reply = api.post(&format!("/api/agents/{id}/messages"), json!({"message": "are you there?"})).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.body["reply"], "Answered by the backup.");
    assert_eq!(down.requests().len(), 2, "the primary was tried and retried once");
    assert_eq!(up.requests()[0].body["model"], "claude-small");
    let moved = &reply.body["fell_back"][0];
    assert_eq!(
        (moved["from"].as_str(), moved["to"].as_str()),
        (Some("primary / big-model"), Some("backup / claude-small"))
    );
    assert!(moved["reason"].as_str().unwrap().contains("503"), "{moved}");
    let mut seen = String::new();
    while !seen.contains("event: turn_ended") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), events.chunk()).await.expect("events").unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk.expect("open")));
    }
    assert!(seen.contains("event: fallback"));
    let session = reply.body["session_id"].as_str().unwrap();
    let notes = api.get(&format!("/api/sessions/{session}")).await.body["failures"].clone();
    assert_eq!(notes[0]["kind"], "Fallback", "{notes}");
    let b = d.browser();
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);
    let chat = b.get(&format!("/agents/{id}?session={session}")).await;
    assert!(chat.text.contains("Fallback ·") && chat.text.contains("the turn went on with"), "{}", chat.text);
}

/// "Test connection" from every front: the API, the overview's Test button and `kennel
/// provider test`, each a real call to the provider's wire protocol.
#[tokio::test]
async fn a_provider_is_tested_with_one_tiny_call_from_the_api_the_dashboard_and_the_cli() {
    let llm = FakeLlm::start().await;
    let config =
        format!("{}[providers.fake.models.small]\ncontext_tokens = 8192\n", llm.provider_config("fake", "anthropic"));
    let (home, d, api, b) = crate::dashboard::signed_in_with(&config).await;

    // The API: the first configured model by default, the answer and what it cost.
    llm.push(Scripted::text("ok"));
    let tested = api.post("/api/providers/fake/test", json!({})).await;
    assert_eq!(tested.status, 200, "{}", tested.text);
    assert_eq!((tested.body["model"].as_str(), tested.body["reply"].as_str()), (Some("small"), Some("ok")));
    assert!(tested.body["millis"].is_u64() && tested.body["output_tokens"].is_u64(), "{}", tested.text);
    let sent = llm.requests().pop().unwrap();
    assert_eq!(sent.protocol, "anthropic");
    assert_eq!(sent.body["model"], "small");
    assert!(sent.body["max_tokens"].as_u64().unwrap() <= 32, "a tiny call: {}", sent.body);
    assert!(sent.body.get("tools").is_none_or(|t| t.as_array().is_some_and(Vec::is_empty)), "{}", sent.body);
    assert_eq!(api.post("/api/providers/nothere/test", json!({})).await.status, 404);
    let refused = api.post("/api/providers/fake/test", json!({"model": "m", "colour": "red"})).await;
    assert_eq!(refused.status, 422, "{}", refused.text);

    // The provider's own error, in its words.
    llm.push(Scripted::error(
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"model: nope is not served"}}"#,
    ));
    let failed = api.post("/api/providers/fake/test", json!({"model": "nope"})).await;
    assert_eq!(failed.status, 502, "{}", failed.text);
    assert!(failed.text.contains("nope is not served"), "{}", failed.text);

    // The overview's Test button: the answer, or a warning with the provider's words, there.
    let overview = b.get("/").await.text;
    assert!(
        overview.contains("action=\"/providers/fake/test\"") && overview.contains("placeholder=\"small\""),
        "{overview}"
    );
    llm.push(Scripted::text("ok"));
    let ok = b.submit("/", "/providers/fake/test", &[("model", "")]).await;
    assert_eq!((ok.status, ok.header("location")), (303, Some("/#providers")), "{}", ok.text);
    let shown = b.get("/").await.text;
    assert!(
        shown.contains("<code>fake</code> answered in ")
            && shown.contains("(model <code>small</code>): \u{201c}ok\u{201d}"),
        "{shown}"
    );
    llm.push(Scripted::error(
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"no such model"}}"#,
    ));
    b.submit("/", "/providers/fake/test", &[("model", "gone")]).await;
    let shown = b.get("/").await.text;
    let warned = shown.split("class=\"flash warning\">").nth(1).unwrap_or_default();
    assert!(warned.contains("Test of <code>fake</code> failed: ") && warned.contains("no such model"), "{shown}");
    let logged = api.get("/api/audit/actions?action=provider.test").await;
    // Every test is in the operator-action log, refused ones too: four by the API, two here.
    assert_eq!(logged.body.as_array().map(Vec::len), Some(6), "{}", logged.text);

    // The command line, through the daemon.
    llm.push(Scripted::text("ok"));
    let out = home.cli_ok(&["provider", "test", "fake", "--model", "small"]).await;
    assert!(
        out.starts_with("`fake` answered in ")
            && out.contains("with model `small`")
            && out.trim_end().ends_with(": ok"),
        "{out}"
    );
    llm.push(Scripted::error(
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad model"}}"#,
    ));
    let failed = home.cli(&["provider", "test", "fake", "--model", "x"]).await;
    assert_eq!(failed.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&failed.stderr).contains("bad model"), "{failed:?}");
    drop(d);
}
