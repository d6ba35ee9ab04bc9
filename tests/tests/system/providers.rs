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

/// Issue 47: providers added, edited and removed while the daemon runs, from the API, the
/// dashboard and the CLI, written back to config.toml with its comments kept; the next turn
/// calls the new provider without a restart, and a change that would not load is refused
/// with the file untouched.
#[tokio::test]
async fn providers_are_added_edited_and_removed_without_a_restart_and_config_toml_keeps_its_comments() {
    let first = FakeLlm::start().await;
    let second = FakeLlm::start().await;
    let config = format!(
        "# my own words\n{}# the first model\n[providers.fake.models.m]\ncontext_tokens = 8000 # as served\n",
        first.provider_config("fake", "openai")
    );
    let (home, d, api, b) = crate::dashboard::signed_in_with(&config).await;
    let path = home.path().join("config.toml");
    // Changing a provider moves where its key goes: the CLI's token may, an API token may not.
    let cli = d.api(std::fs::read_to_string(home.path().join("cli.token")).unwrap().trim());
    let unnamed = agent_from(&api, json!({"name": "unnamed", "model": "m"})).await;

    // The API adds a second provider: the first stays the default of agents naming none.
    let body = json!({"kind": "openai", "base_url": second.base_url(), "api_key_env": "",
        "models": {"big": {"context_tokens": 32000, "input_usd_per_mtok": 1.5, "output_usd_per_mtok": 6}}});
    let refused = api.put("/api/providers/second", body.clone()).await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert_eq!(api.delete("/api/providers/fake").await.status, 403);
    assert_eq!(api.post("/api/providers/fake/default", json!({})).await.status, 403);
    assert!(!std::fs::read_to_string(&path).unwrap().contains("second"), "nothing written");
    let added = cli.put("/api/providers/second", body.clone()).await;
    assert_eq!(added.status, 201, "{}", added.text);
    assert_eq!((added.body["created"].as_bool(), added.body["default_set"].as_str()), (Some(true), Some("fake")));
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(
        written.starts_with("# my own words\n")
            && written.contains("# the first model\n[providers.fake.models.m]\ncontext_tokens = 8000 # as served\n")
            && written.contains("[providers.second]\nkind = \"openai\"")
            && written.contains("[providers.second.models.big]\ncontext_tokens = 32000\n")
            && written.contains("default_provider = \"fake\""),
        "{written}"
    );
    assert_eq!(cli.put("/api/providers/second", body).await.status, 200, "saved again: a replacement");

    // Without a restart: a type may name it, and its agent's turn goes to the new server.
    let named = agent_from(&api, json!({"name": "named", "provider": "second", "model": "big"})).await;
    second.push(Scripted::text("from the second"));
    let reply = api.post(&format!("/api/agents/{named}/messages"), json!({"message": "hi"})).await;
    assert_eq!(reply.body["reply"], "from the second", "{}", reply.text);
    first.push(Scripted::text("from the first"));
    let reply = api.post(&format!("/api/agents/{unnamed}/messages"), json!({"message": "hi"})).await;
    assert_eq!(reply.body["reply"], "from the first", "{}", reply.text);
    let usage = api.get("/api/usage?group=model").await;
    assert!(
        usage.text.contains("\"cost_usd\"") && !usage.text.contains("\"cost_usd\":0.0,\"key\":\"second"),
        "{}",
        usage.text
    );

    // Refusals leave the file as it was: a bad address, a bad key variable, an unknown field.
    let before = std::fs::read_to_string(&path).unwrap();
    for (bad, says) in [
        (json!({"kind": "openai", "base_url": "ftp://x"}), "is not an http:// or https:// address"),
        (json!({"kind": "openai", "api_key_env": "MY _KEY"}), "is not the name of an environment variable"),
        (json!({"kind": "openai", "api_key_env": "KENNEL_DATABASE_URL"}), "does not name a key"),
        (json!({"kind": "openai", "colour": "red"}), "colour"),
    ] {
        let refused = cli.put("/api/providers/second", bad).await;
        assert_eq!(refused.status, 422, "{}", refused.text);
        assert!(refused.text.contains(says), "{}", refused.text);
    }
    assert_eq!(cli.put("/api/providers/Bad%20Name", json!({"kind": "openai"})).await.status, 422);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    // In use: not removed.
    let in_use = cli.delete("/api/providers/second").await;
    assert_eq!(in_use.status, 409, "{}", in_use.text);
    assert!(in_use.text.contains("type `named`") && in_use.text.contains("agent `named`"), "{}", in_use.text);

    // The dashboard: added from its form, shown back, edited, refused with the form kept.
    let url = second.base_url();
    let form = [
        ("name", "spare"),
        ("kind", "anthropic"),
        ("base_url", url.as_str()),
        ("api_key_env", "SPARE_KEY"),
        ("timeout_secs", "30"),
        ("max_retries", "2"),
        ("models.0.name", "claude"),
        ("models.0.input_usd_per_mtok", "3"),
        ("models.0.output_usd_per_mtok", "15"),
    ];
    let saved = b.submit("/providers", "/providers", &form).await;
    assert_eq!((saved.status, saved.header("location")), (303, Some("/providers/spare")), "{}", saved.text);
    let page = b.get("/providers/spare").await.text;
    assert!(page.contains("Provider `spare` added") || page.contains("<code>spare</code> added"), "the notice: {page}");
    assert!(page.contains("value=\"SPARE_KEY\"") && page.contains("missing: set SPARE_KEY"), "{page}");
    assert!(page.contains("name=\"models.0.name\" value=\"claude\""), "{page}");
    let taken = b.submit("/providers", "/providers", &form).await;
    assert_eq!(taken.status, 409, "{}", taken.text);
    let refused = b
        .submit(
            "/providers/spare",
            "/providers/spare",
            &[("kind", "anthropic"), ("max_retries", "many"), ("models.0.name", "claude")],
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert!(refused.text.contains("max_retries") && refused.text.contains("value=\"many\""), "{}", refused.text);
    let spare = api.get("/api/providers/spare").await;
    assert_eq!(spare.body["settings"]["max_retries"], 2, "unchanged: {}", spare.text);
    assert_eq!(spare.body["settings"]["models"]["claude"]["output_usd_per_mtok"], 15.0);

    // The command line, through the daemon: flags change only what they name.
    let out =
        home.cli_ok(&["provider", "set", "spare", "--max-in-flight", "2", "--price", "haiku=1,5", "--no-key"]).await;
    assert!(
        out.contains("provider `spare` saved in config.toml: the daemon uses it from its next model call"),
        "{out}"
    );
    let spare = api.get("/api/providers/spare").await;
    assert_eq!(spare.body["settings"]["max_in_flight"], 2, "{}", spare.text);
    assert_eq!(spare.body["settings"]["timeout_secs"], 30, "kept: {}", spare.text);
    assert_eq!(spare.body["settings"]["api_key_env"], "", "{}", spare.text);
    assert_eq!(spare.body["settings"]["models"]["haiku"]["input_usd_per_mtok"], 1.0);
    home.cli_ok(&["provider", "set", "spare", "--max-in-flight", "0", "--no-stream"]).await;
    let spare = api.get("/api/providers/spare").await;
    assert!(spare.body["settings"].get("max_in_flight").is_none(), "0 unsets it: {}", spare.text);
    assert_eq!(spare.body["settings"]["stream"], false);
    let listed = home.cli_ok(&["provider", "list"]).await;
    assert!(
        listed.contains("fake (default)") && listed.contains("spare") && listed.contains("none needed"),
        "{listed}"
    );
    let refused = home.cli(&["provider", "set", "newone", "--base-url", "http://x"]).await;
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains("a new provider needs --kind"), "{said}");

    // The default moves; the dashboard removes what nobody uses; the log has each change.
    home.cli_ok(&["provider", "default", "spare"]).await;
    assert!(std::fs::read_to_string(&path).unwrap().contains("default_provider = \"spare\""));
    let refused = b.submit("/providers/spare", "/providers/spare/remove", &[]).await;
    assert_eq!(refused.status, 409, "the default, used by `unnamed`: {}", refused.text);
    home.cli_ok(&["provider", "default", "fake"]).await;
    let removed = b.submit("/providers/spare", "/providers/spare/remove", &[]).await;
    assert_eq!((removed.status, removed.header("location")), (303, Some("/#providers")), "{}", removed.text);
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(!written.contains("spare") && written.starts_with("# my own words\n"), "{written}");
    assert_eq!(api.get("/api/providers/spare").await.status, 404);
    let logged = api.get("/api/audit/actions?action=provider.save").await;
    assert!(logged.body.as_array().is_some_and(|a| a.len() >= 5), "{}", logged.text);
}
