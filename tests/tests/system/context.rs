//! Issue 16: long conversations. Token streaming (both wire protocols, cancellation, a client
//! hanging up), context windows and compaction against a provider that refuses long
//! requests as the real ones do, and what a restart finds in flight.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{agent_from, daemon_with_llm, say};
use kennel_tests::fake_llm::{FakeLlm, Scripted};
use kennel_tests::{Api, Home, eventually};

/// Every message of a session, across its pages.
async fn all_messages(api: &Api, session: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = api.get(&format!("/api/sessions/{session}/messages?limit=1000{cursor}")).await;
        let items = page.body.as_array().unwrap().clone();
        let Some(last) = items.last().map(|m| m["seq"].clone()) else { break };
        out.extend(items);
        cursor = format!("&cursor={last}");
    }
    out
}

/// The SSE events of an agent until `until` arrives: (name, data) each.
async fn events_until(events: &mut reqwest::Response, until: &str) -> Vec<(String, Value)> {
    let mut text = String::new();
    while !text.contains(&format!("event: {until}")) {
        let chunk = tokio::time::timeout(Duration::from_secs(10), events.chunk()).await.expect("events arrive");
        text.push_str(&String::from_utf8_lossy(&chunk.unwrap().expect("stream open")));
    }
    let mut out = Vec::new();
    let mut name = String::new();
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("event: ") {
            name = n.to_string();
        } else if let Some(data) = line.strip_prefix("data: ") {
            out.push((name.clone(), serde_json::from_str(data).unwrap_or(Value::Null)));
        }
    }
    out
}

#[tokio::test]
async fn a_500_turn_session_fits_a_small_context_the_daemon_learns_from_the_refusal() {
    let llm = FakeLlm::start().await;
    let home = Home::with_config(&llm.provider_config("fake", "openai"));
    let token = home.token("t").await;
    let d = home.start().await;
    let api = d.api(&token);
    // A model no family default knows, and nobody configured: the first refusal teaches it.
    const LIMIT: u64 = 3_000;
    llm.set_context_limit(Some(LIMIT));
    llm.set_fallback(Scripted::text("Noted. I have written that down and will keep it in mind for later."));
    let id =
        agent_from(&api, json!({"name": "diarist", "model": "tiny-local-model", "system_prompt": "You keep a diary."}))
            .await;
    let first = say(&api, &id, None, "Day 1: the otters were out early.").await;
    assert_eq!(first.status, 200, "{}", first.text);
    let session = first.body["session_id"].as_str().unwrap().to_string();
    for day in 2..=500 {
        let turn =
            say(&api, &id, Some(&session), &format!("Day {day}: the otters were out early again, {day} of them."))
                .await;
        assert_eq!(turn.status, 200, "turn {day}: {}", turn.text);
    }

    let stored = all_messages(&api, &session).await;
    assert_eq!(stored.len(), 1000, "every message is stored: 500 asked, 500 answered");
    assert_eq!(stored[0]["content"], "Day 1: the otters were out early.");
    let requests = llm.requests();
    let refused: Vec<_> = requests.iter().filter(|r| r.refused).collect();
    assert_eq!(refused.len(), 1, "refused once, before the window was known");
    let over: Vec<u64> = requests.iter().filter(|r| !r.refused && r.tokens > LIMIT).map(|r| r.tokens).collect();
    assert!(over.is_empty(), "every request after the refusal fits: {over:?}");
    let summaries = requests.iter().filter(|r| r.system().contains("compacting a conversation")).count();
    assert!(summaries >= 5, "older turns were summarised by the model ({summaries} times)");
    // The last request to answer the diary starts from a summary, and holds the latest day.
    let last = requests.iter().rev().find(|r| !r.system().contains("compacting")).unwrap();
    assert!(last.body["messages"][1]["content"].as_str().unwrap().starts_with("[Summary of the earlier conversation"));
    assert!(last.body.to_string().contains("Day 500:"));

    let detail = api.get(&format!("/api/sessions/{session}")).await;
    let compactions = detail.body["compactions"].as_array().unwrap();
    assert!(compactions.len() >= summaries, "{}", detail.text);
    assert!(compactions.last().unwrap()["summary"].as_str().unwrap().starts_with("Noted."));
    assert!(detail.body["failures"].as_array().unwrap().is_empty());

    // The learned window survives a restart: no new refusal.
    d.stop().await;
    let d = home.start().await;
    let api = d.api(&token);
    let turn = say(&api, &id, Some(&session), "Day 501.").await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    assert_eq!(llm.requests().iter().filter(|r| r.refused).count(), 1);
}

/// A configured window (in the provider's own count, learned from its usage reports) is
/// never exceeded: older tool results become stubs first.
#[tokio::test]
async fn a_configured_window_compacts_before_any_refusal_and_stubs_old_tool_results_first() {
    let llm = FakeLlm::start().await;
    let config =
        format!("{}[providers.fake.models.small]\ncontext_tokens = 1500\n", llm.provider_config("fake", "anthropic"));
    let home = Home::with_config(&format!("{config}[tool_results]\nspill_threshold_bytes = 1000000\n"));
    let token = home.token("t").await;
    let d = home.start().await;
    let api = d.api(&token);
    llm.set_context_limit(Some(1500));
    // It counts the wire's JSON (escapes and framing too), more than Kennel's estimate of the
    // text: the usage it reports calibrates the estimate, so the window holds as it counts.
    llm.report_counted_usage();
    let id = agent_from(&api, json!({"name": "reader", "model": "small", "tools": ["tool_search"]})).await;
    // Each turn: a search whose result is large, then a short answer.
    let mut session: Option<String> = None;
    for turn in 0..6 {
        llm.push(Scripted::call("tool_search", json!({"query": "artifact"})));
        llm.push(Scripted::text(&format!("answer {turn}")));
        let reply = say(&api, &id, session.as_deref(), &format!("question {turn}")).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        session = Some(reply.body["session_id"].as_str().unwrap().to_string());
    }
    let requests = llm.requests();
    assert!(requests.iter().all(|r| !r.refused), "a configured window is never exceeded");
    let last = requests.last().unwrap().body.to_string();
    assert!(last.contains("[compacted: this result of `tool_search`"), "older results became stubs: {last}");
    let detail = api.get(&format!("/api/sessions/{}", session.unwrap())).await;
    assert!(detail.body["compactions"][0]["stubbed"].as_i64().unwrap() >= 1, "{}", detail.text);
}

/// Kennel's estimate is on the safe side, so a turn it finds too large goes to the model once
/// to be counted; the refusal's count calibrates the estimate, and the turn is answered 413
/// with the sizes. The next such turn is refused without a request.
#[tokio::test]
async fn a_turn_too_large_for_the_window_on_its_own_is_413_with_the_sizes_once_the_model_counted() {
    let llm = FakeLlm::start().await;
    let config =
        format!("{}[providers.fake.models.small]\ncontext_tokens = 1000\n", llm.provider_config("fake", "openai"));
    let home = Home::with_config(&config);
    let token = home.token("t").await;
    let d = home.start().await;
    let api = d.api(&token);
    llm.set_context_limit(Some(1000));
    let id = agent_from(&api, json!({"name": "small", "model": "small"})).await;
    let reply = say(&api, &id, None, &"long words ".repeat(1000)).await;
    assert_eq!(reply.status, 413, "{}", reply.text);
    let message = reply.error_message();
    assert!(
        message.contains("this turn's message is too long") && message.contains("window of 1000 tokens"),
        "{message}"
    );
    assert!(message.contains("(as the model counts)"), "the refusal's count was learned: {message}");
    assert_eq!(llm.requests().len(), 1, "sent once, to be counted");
    assert!(reply.body["error"]["session_id"].is_string(), "the session the message is kept in: {}", reply.text);

    let again = say(&api, &id, None, &"more long words ".repeat(1000)).await;
    assert_eq!(again.status, 413, "{}", again.text);
    assert_eq!(llm.requests().len(), 1, "known too large: nothing sent");
}

#[tokio::test]
async fn replies_stream_as_text_deltas_over_anthropic_and_a_tool_call_as_pieces() {
    let (_home, _d, api, llm) = daemon_with_llm("anthropic", "").await;
    let id = agent_from(&api, json!({"name": "talker", "model": "claude-test", "tools": ["system_time"]})).await;
    let mut events = api.request(reqwest::Method::GET, &format!("/api/agents/{id}/events")).send().await.unwrap();
    llm.push(Scripted::call("system_time", json!({"timezone": "UTC"}))).push(Scripted::text("It is late, go to bed."));
    let reply = say(&api, &id, None, "time?").await;
    assert_eq!(reply.body["reply"], "It is late, go to bed.");
    let seen = events_until(&mut events, "turn_ended").await;
    let text: String =
        seen.iter().filter(|(n, _)| n == "text_delta").map(|(_, d)| d["text"].as_str().unwrap()).collect();
    assert_eq!(text, "It is late, go to bed.");
    assert!(seen.iter().filter(|(n, _)| n == "text_delta").count() >= 5, "word by word");
    let call: Vec<&Value> = seen.iter().filter(|(n, _)| n == "tool_call_delta").map(|(_, d)| d).collect();
    assert_eq!(call[0]["name"], "system_time");
    let arguments: String = call.iter().map(|d| d["arguments"].as_str().unwrap()).collect();
    assert_eq!(serde_json::from_str::<Value>(&arguments).unwrap(), json!({"timezone": "UTC"}));
    assert_eq!(llm.requests()[0].body["stream"], true);
    assert_eq!(reply.body["trace"][0]["arguments"], json!({"timezone": "UTC"}), "the streamed call ran as sent");
}

#[tokio::test]
async fn a_stream_that_breaks_off_is_read_again_and_its_pieces_taken_back() {
    let (_home, _d, api, llm) = daemon_with_llm("anthropic", "").await;
    let id = agent_from(&api, json!({"name": "shaky", "model": "claude-test"})).await;
    let mut events = api.request(reqwest::Method::GET, &format!("/api/agents/{id}/events")).send().await.unwrap();
    llm.push(Scripted::CutText { text: "this reply will break off halfway".into() });
    llm.push(Scripted::text("the whole reply, the second time"));
    let reply = say(&api, &id, None, "go").await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.body["reply"], "the whole reply, the second time");
    let seen = events_until(&mut events, "turn_ended").await;
    let names: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
    let reset = names.iter().position(|n| *n == "reply_reset").expect("the broken pieces are taken back");
    let before: String =
        seen[..reset].iter().filter(|(n, _)| n == "text_delta").map(|(_, d)| d["text"].as_str().unwrap()).collect();
    let after: String =
        seen[reset..].iter().filter(|(n, _)| n == "text_delta").map(|(_, d)| d["text"].as_str().unwrap()).collect();
    assert_eq!(before, "this reply will ");
    assert_eq!(after, "the whole reply, the second time");
    assert_eq!(llm.requests().len(), 2);
}

/// A reply cut off for good fails its turn, and what the model had written (which the
/// operator watched stream) stays with the failure instead of vanishing.
#[tokio::test]
async fn a_reply_cut_off_for_good_keeps_what_the_model_had_written() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "max_retries = 0\n").await;
    let id = agent_from(&api, json!({"name": "cut", "model": "m"})).await;
    llm.push(Scripted::CutText { text: "the first words survive the break in the stream".into() });
    let turn = say(&api, &id, None, "go").await;
    assert_ne!(turn.status, 200, "{}", turn.text);
    let said = turn.error_message();
    assert!(said.contains("What the model had written before that:\nthe first words survive"), "{said}");
    let session = turn.body["error"]["session_id"].as_str().expect("the failed turn's session").to_string();
    let failures = api.get(&format!("/api/sessions/{session}")).await.body["failures"].clone();
    let kept = failures[0]["message"].as_str().unwrap_or_default();
    assert!(kept.contains("the first words survive"), "stored with the failure: {failures}");
}

#[tokio::test]
async fn a_stream_closed_with_done_but_no_finish_reason_is_incomplete_not_a_reply() {
    // llama.cpp's server, under parallel sessions, ends streams it cuts with `data: [DONE]`
    // and no finish reason (issue 44): that is half a reply, not a short one.
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "shaky", "model": "m"})).await;
    llm.push(Scripted::CutTextDone { text: "One fateful day, the dragon".into() });
    llm.push(Scripted::text("One fateful day, the dragon woke and flew away."));
    let reply = say(&api, &id, None, "tell me a story").await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.body["reply"], "One fateful day, the dragon woke and flew away.");
    assert_eq!(llm.requests().len(), 2, "the cut stream was read again");
}

#[tokio::test]
async fn a_configured_window_larger_than_the_model_s_gives_way_to_the_refusal() {
    let llm = FakeLlm::start().await;
    let config =
        format!("{}[providers.fake.models.m]\ncontext_tokens = 100000\n", llm.provider_config("fake", "openai"));
    let home = Home::with_config(&config);
    let token = home.token("t").await;
    let d = home.start().await;
    let api = d.api(&token);
    llm.set_context_limit(Some(3_000));
    llm.set_fallback(Scripted::text("fine"));
    let id = agent_from(&api, json!({"name": "wrong", "model": "m"})).await;
    let reply = say(&api, &id, None, "hello").await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let refused: Vec<bool> = llm.requests().iter().map(|r| r.refused).collect();
    assert_eq!(refused, [true, false], "refused once at 4096 reply tokens, then asked for what fits");
    assert!(llm.requests()[1].body["max_tokens"].as_u64().unwrap() <= 750);
}

#[tokio::test]
async fn a_provider_set_not_to_stream_gives_the_same_events_at_the_end() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "stream = false\n").await;
    let id = agent_from(&api, json!({"name": "plain", "model": "m"})).await;
    let mut events = api.request(reqwest::Method::GET, &format!("/api/agents/{id}/events")).send().await.unwrap();
    llm.push(Scripted::text("all at once"));
    assert_eq!(say(&api, &id, None, "hi").await.body["reply"], "all at once");
    let seen = events_until(&mut events, "turn_ended").await;
    let deltas: Vec<&Value> = seen.iter().filter(|(n, _)| n == "text_delta").map(|(_, d)| d).collect();
    assert_eq!(deltas.len(), 1);
    assert_eq!(deltas[0]["text"], "all at once");
    assert!(llm.requests()[0].body.get("stream").is_none(), "no stream asked for");
}

#[tokio::test]
async fn stopping_the_agent_closes_the_provider_stream_at_once() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "slow", "model": "m"})).await;
    let mut events = api.request(reqwest::Method::GET, &format!("/api/agents/{id}/events")).send().await.unwrap();
    // Forty words a quarter of a second apart: ten seconds unless cut.
    llm.push(Scripted::SlowText { text: "word ".repeat(40), piece_millis: 250 });
    let turn = tokio::spawn({
        let (api, id) = (api.clone(), id.clone());
        async move { say(&api, &id, None, "talk slowly").await }
    });
    events_until(&mut events, "text_delta").await;
    let started = std::time::Instant::now();
    assert_eq!(api.post(&format!("/api/agents/{id}/stop"), json!({})).await.status, 200);
    let ended = turn.await.unwrap();
    assert_eq!(ended.body["ended"], "cancelled", "{}", ended.text);
    assert!(eventually(Duration::from_secs(2), || async { llm.cut_streams() == 1 }).await, "the stream was closed");
    assert!(started.elapsed() < Duration::from_secs(3), "at once, not after the reply: {:?}", started.elapsed());
}

#[tokio::test]
async fn a_client_that_hangs_up_does_not_cancel_the_turn() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "patient", "model": "m"})).await;
    let session =
        api.post(&format!("/api/agents/{id}/sessions"), json!({})).await.body["id"].as_str().unwrap().to_string();
    llm.push(Scripted::SlowText { text: "I finished anyway".into(), piece_millis: 300 });
    let hung_up = api
        .request(reqwest::Method::POST, &format!("/api/agents/{id}/messages"))
        .json(&json!({"message": "take your time", "session": session}))
        .timeout(Duration::from_millis(300))
        .send()
        .await;
    assert!(hung_up.is_err(), "the client gave up first");
    let finished = eventually(Duration::from_secs(5), || async {
        all_messages(&api, &session).await.iter().any(|m| m["content"] == "I finished anyway")
    })
    .await;
    assert!(finished, "the turn went on and its reply is stored");
    assert_eq!(llm.cut_streams(), 0);
}

/// Two providers, so each agent's replies are scripted apart: the sender's and the
/// receiver's turns run at the same time.
fn two_providers(sender: &FakeLlm, receiver: &FakeLlm) -> String {
    format!(
        "{}{}{}",
        kennel_tests::fake_llm::default_provider("front"),
        sender.provider_config("front", "openai"),
        receiver.provider_config("back", "openai")
    )
}

#[tokio::test]
async fn an_async_delivery_cut_off_by_a_kill_is_retried_once_then_reported_interrupted() {
    let (front, back) = (FakeLlm::start().await, FakeLlm::start().await);
    let home = Home::with_config(&two_providers(&front, &back));
    let token = home.token("t").await;
    let d = home.start().await;
    let api = d.api(&token);
    let worker = agent_from(&api, json!({"name": "worker", "provider": "back", "model": "m"})).await;
    let boss = agent_from(
        &api,
        json!({"name": "boss", "provider": "front", "model": "m", "tools": ["agent_send", "agents.message_any"]}),
    )
    .await;

    // The boss delegates; the worker is still writing when the daemon is killed.
    front.push(Scripted::call("agent_send", json!({"agent_id": "worker", "message": "count the otters"})));
    front.push(Scripted::text("Asked the worker."));
    back.push(Scripted::SlowText {
        text: "one two three four five six seven eight nine ten".into(),
        piece_millis: 500,
    });
    let sent = say(&api, &boss, None, "get the otters counted").await;
    assert_eq!(sent.status, 200, "{}", sent.text);
    let boss_session = sent.body["session_id"].as_str().unwrap().to_string();
    assert!(eventually(Duration::from_secs(5), || async { !back.requests().is_empty() }).await);
    d.kill().await;

    // After the restart the worker's turn runs again and its reply reaches the boss.
    back.push(Scripted::text("There are 12 otters."));
    let d = home.start().await;
    let api = d.api(&token);
    let delivered = eventually(Duration::from_secs(10), || async {
        all_messages(&api, &boss_session).await.iter().any(|m| {
            m["content"].as_str().is_some_and(|c| c.contains("Reply from agent `worker`") && c.contains("12 otters"))
        })
    })
    .await;
    assert!(delivered, "the reply arrived after the restart: {:?}", all_messages(&api, &boss_session).await);
    let worker_session =
        api.get(&format!("/api/agents/{worker}/sessions")).await.body[0]["id"].as_str().unwrap().to_string();
    let worker_messages = all_messages(&api, &worker_session).await;
    let asked = worker_messages.iter().filter(|m| m["content"] == "count the otters").count();
    assert_eq!(asked, 1, "the retry answered the message it had, not a copy: {worker_messages:?}");
    let failures = api.get(&format!("/api/sessions/{worker_session}")).await.body["failures"].clone();
    assert_eq!(failures[0]["kind"], "Interrupted", "the cut-off turn is marked: {failures}");

    // Cut off twice: the boss is told, never left waiting.
    front.push(Scripted::call("agent_send", json!({"agent_id": "worker", "message": "count them again"})));
    front.push(Scripted::text("Asked again."));
    back.push(Scripted::SlowText { text: "one two three four five six seven eight".into(), piece_millis: 500 });
    let before = back.requests().len();
    assert_eq!(say(&api, &boss, Some(&boss_session), "and again").await.status, 200);
    assert!(eventually(Duration::from_secs(5), || async { back.requests().len() > before }).await);
    d.kill().await;
    back.push(Scripted::SlowText { text: "one two three four five six seven eight".into(), piece_millis: 500 });
    let before = back.requests().len();
    let d = home.start().await;
    assert!(eventually(Duration::from_secs(5), || async { back.requests().len() > before }).await, "retried once");
    d.kill().await;
    let d = home.start().await;
    let api = d.api(&token);
    let told = eventually(Duration::from_secs(10), || async {
        all_messages(&api, &boss_session).await.iter().any(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains("was interrupted") && c.contains("retry after the restart was cut off too"))
        })
    })
    .await;
    assert!(told, "{:?}", all_messages(&api, &boss_session).await);
    // And the worker's next message continues cleanly.
    back.push(Scripted::text("Fresh start."));
    let next = say(&api, &worker, Some(&worker_session), "hello again").await;
    assert_eq!(next.body["reply"], "Fresh start.", "{}", next.text);
}
