//! `ask_user` through the daemon: a dashboard chat's turn waits for the operator's answer
//! (and is told plainly when nobody answers in time), `kennel chat` takes the next line as
//! the answer, a channel conversation's next message from the asker is the answer and starts
//! no turn, and headless turns (a schedule, the API) are never offered the tool.

use std::sync::Arc;
use std::time::Duration;

use kennel_tests::fake_llm::{FakeLlm, Scripted};
use kennel_tests::fake_webhook::{FakeWebhookReceiver, signed};
use kennel_tests::pty::Pty;
use kennel_tests::{Api, eventually};
use serde_json::{Value, json};

const SECRET: &str = "ask-secret";

/// The tool result the model was given in its `n`th request (0-based), parsed.
fn tool_result(llm: &FakeLlm, n: usize) -> Value {
    let request = &llm.requests()[n];
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    let content = messages.iter().rev().find(|m| m["role"] == "tool").map(|m| m["content"].clone());
    serde_json::from_str(content.as_ref().and_then(Value::as_str).unwrap_or("null")).unwrap_or(Value::Null)
}

/// The questions waiting, once there are `n`.
async fn waiting(api: &Api, n: usize) -> Value {
    let there = eventually(Duration::from_secs(10), || async {
        api.get("/api/questions").await.body.as_array().is_some_and(|q| q.len() == n)
    })
    .await;
    let questions = api.get("/api/questions").await;
    assert!(there, "{n} question(s) waiting: {}", questions.text);
    questions.body
}

#[tokio::test]
async fn a_dashboard_chat_waits_for_the_operators_answer_and_hears_when_none_comes() {
    let (home, daemon, api, llm) = crate::daemon_with_llm("openai", "[ask]\ntimeout_secs = 3\n").await;
    let _ = home;
    let agent =
        crate::agent_from(&api, json!({"name": "asker", "model": "m", "tools": ["ask_user", "system_time"]})).await;
    let b = Arc::new(daemon.browser());
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);
    llm.push_all([
        Scripted::call("ask_user", json!({"question": "Which <b>colour</b>?", "choices": ["Red", "Blue"]})),
        Scripted::text("Blue it is."),
    ]);
    let page = format!("/agents/{agent}");
    let chat = {
        let (b, page) = (b.clone(), page.clone());
        tokio::spawn(async move { b.submit(&page, &format!("{page}/chat"), &[("message", "Paint the fence")]).await })
    };
    let questions = waiting(&api, 1).await;
    let q = &questions[0];
    assert_eq!((q["question"].as_str(), &q["choices"]), (Some("Which <b>colour</b>?"), &json!(["Red", "Blue"])));
    assert_eq!(q["asked_in"], json!({"kind": "chat"}));
    let id = q["id"].as_str().unwrap().to_string();

    // The agent page shows it, escaped, with a button per choice.
    let shown = b.get(&page).await.text;
    assert!(shown.contains("Which &lt;b&gt;colour&lt;/b&gt;?") && !shown.contains("<b>colour"), "{shown}");
    assert!(shown.contains(&format!(r#"action="/agents/{agent}/questions/{id}""#)), "{shown}");
    assert!(shown.contains(r#"name="choice" value="Blue""#), "{shown}");

    let empty = api.post(&format!("/api/questions/{id}/answer"), json!({"answer": "  "})).await;
    assert_eq!(empty.status, 422, "{}", empty.text);
    let answered = b.submit(&page, &format!("{page}/questions/{id}"), &[("choice", "Blue"), ("answer", "")]).await;
    assert_eq!(answered.status, 303, "{}", answered.text);
    let done = tokio::time::timeout(Duration::from_secs(10), chat).await.expect("the turn went on").unwrap();
    assert_eq!(done.status, 303, "{}", done.text);
    assert_eq!(
        tool_result(&llm, 1),
        json!({"answered": true, "answer": "Blue", "choice": "Blue", "answered_by": "operator:ada"})
    );
    assert!(llm.requests()[0].tool_names().contains(&"ask_user".to_string()), "offered with a person present");
    let again = api.post(&format!("/api/questions/{id}/answer"), json!({"answer": "Red"})).await;
    assert_eq!(again.status, 404, "answered once: {}", again.text);
    assert_eq!(api.get("/api/questions").await.body, json!([]));

    // Nobody answers: after [ask] timeout_secs the model is told so, and the question is gone.
    llm.push_all([Scripted::call("ask_user", json!({"question": "Still there?"})), Scripted::text("Going on.")]);
    let started = std::time::Instant::now();
    let unanswered = b.submit(&page, &format!("{page}/chat"), &[("message", "And the gate?")]).await;
    assert_eq!(unanswered.status, 303, "{}", unanswered.text);
    assert!(started.elapsed() >= Duration::from_secs(3), "it waited the timeout");
    let told = tool_result(&llm, 3);
    assert_eq!(told["answered"], false, "{told}");
    assert!(told["note"].as_str().unwrap().contains("no answer within 3 s"), "{told}");
    assert_eq!(api.get("/api/questions").await.body, json!([]));
}

#[tokio::test]
async fn kennel_chat_takes_the_next_line_as_the_answer() {
    let (home, _daemon, api, llm) = crate::daemon_with_llm("openai", "").await;
    crate::agent_from(&api, json!({"name": "asker", "model": "m", "tools": ["ask_user"]})).await;
    llm.push_all([
        Scripted::call("ask_user", json!({"question": "Tea or coffee?", "choices": ["Tea", "Coffee"]})),
        Scripted::text("Coffee coming."),
    ]);
    let out = home.cli_with_stdin(&["chat", "asker"], "Make me a drink\n2\n").await;
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{shown}{}", String::from_utf8_lossy(&out.stderr));
    assert!(shown.contains("? Tea or coffee?") && shown.contains("2. Coffee"), "{shown}");
    assert!(shown.contains("asker> Coffee coming."), "{shown}");
    assert_eq!(
        tool_result(&llm, 1),
        json!({"answered": true, "answer": "2", "choice": "Coffee", "answered_by": "cli"})
    );
}

#[tokio::test]
async fn kennel_chat_on_a_terminal_asks_at_its_own_prompt_and_keeps_no_answer() {
    let (home, _daemon, api, llm) = crate::daemon_with_llm("openai", "").await;
    crate::agent_from(&api, json!({"name": "asker", "model": "m", "tools": ["ask_user"]})).await;
    llm.push_all([
        Scripted::call("ask_user", json!({"question": "Tea or coffee?", "choices": ["Tea", "Coffee"]})),
        Scripted::text("Coffee coming."),
    ]);
    let mut chat = Pty::spawn(&mut home.command(&["chat", "asker"]));
    let at = chat.expect_after(0, "you> ", Duration::from_secs(10)).await;
    chat.type_keys("Make me a drink\r");
    let at = chat.expect_after(at, "2. Coffee", Duration::from_secs(10)).await;
    let at = chat.expect_after(at, "answer> ", Duration::from_secs(10)).await;
    chat.type_keys("2\r");
    let at = chat.expect_after(at, "asker> Coffee coming.", Duration::from_secs(10)).await;
    assert_eq!(tool_result(&llm, 1)["choice"], "Coffee");
    chat.expect_after(at, "you> ", Duration::from_secs(10)).await;
    chat.type_keys("/exit\r");
    assert!(chat.wait(Duration::from_secs(10)).await.success(), "{}", chat.output());
    let kept = std::fs::read_to_string(home.path().join("chat-history")).unwrap();
    assert_eq!(
        kept.lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>(),
        ["Make me a drink", "/exit"],
        "{kept}"
    );
}

#[tokio::test]
async fn on_a_channel_the_askers_next_message_is_the_answer_not_a_turn() {
    let receiver = FakeWebhookReceiver::start(SECRET).await;
    let config = format!(
        "[channels]\nallowed_hosts = [\"127.0.0.1:*\"]\n[channels.hook]\nkind = \"webhook\"\nagent = \"asker\"\nsigning_secret_env = \"KENNEL_TEST_SECRET\"\nbase_url = \"{}\"\n",
        receiver.url()
    );
    let (_home, daemon, api, llm) =
        crate::daemon_with_llm_and_env("openai", &config, &[("KENNEL_TEST_SECRET", SECRET)]).await;
    crate::agent_from(&api, json!({"name": "asker", "model": "m", "tools": ["ask_user"]})).await;
    llm.push_all([
        Scripted::call("ask_user", json!({"question": "Which branch?", "choices": ["main", "next"]})),
        Scripted::text("Deploying next."),
    ]);
    let anonymous = daemon.anonymous();
    let post = |id: &str, user: &str, text: &str| {
        let body = json!({"id": id, "chat_id": "room", "text": text, "user": {"id": user, "name": user}}).to_string();
        let req = anonymous
            .request(reqwest::Method::POST, "/channels/hook/inbound")
            .header("content-type", "application/json")
            .headers(signed(SECRET, body.as_bytes()))
            .body(body);
        Api::send(req)
    };
    assert_eq!(post("m1", "ann", "Deploy please").await.status, 200);
    let asked = eventually(Duration::from_secs(10), || async { !receiver.posts().is_empty() }).await;
    assert!(asked, "the question was sent to the conversation");
    let question = receiver.posts()[0]["content"]["text"].as_str().unwrap().to_string();
    assert!(question.contains("Which branch?") && question.contains("2. next"), "{question}");
    let waiting = waiting(&api, 1).await;
    assert_eq!(waiting[0]["asked_in"], json!({"kind": "channel", "channel": "hook", "chat": "room"}));
    let elsewhere = api
        .post(&format!("/api/questions/{}/answer", waiting[0]["id"].as_str().unwrap()), json!({"answer": "main"}))
        .await;
    assert_eq!(elsewhere.status, 409, "answered where it was asked: {}", elsewhere.text);

    assert_eq!(post("m2", "ann", "2").await.status, 200);
    let replied = eventually(Duration::from_secs(10), || async { receiver.posts().len() == 2 }).await;
    assert!(replied, "{:?}", receiver.posts());
    assert_eq!(receiver.posts()[1]["content"]["text"], "Deploying next.");
    assert_eq!(
        tool_result(&llm, 1),
        json!({"answered": true, "answer": "2", "choice": "next", "answered_by": "channel:hook:ann"})
    );
    assert_eq!(llm.requests().len(), 2, "the answer started no turn of its own");
    let traffic = api.get("/api/channels/hook").await;
    let states: Vec<&str> =
        traffic.body["inbound"].as_array().unwrap().iter().map(|m| m["state"].as_str().unwrap()).collect();
    assert!(states.contains(&"answer") && states.contains(&"answered"), "{}", traffic.text);
}

#[tokio::test]
async fn headless_turns_are_never_offered_ask_user() {
    let (_home, _daemon, api, llm) = crate::daemon_with_llm("openai", "").await;
    let agent =
        crate::agent_from(&api, json!({"name": "asker", "model": "m", "tools": ["ask_user", "schedule.*"]})).await;
    llm.set_fallback(Scripted::text("Done."));
    let made = api.invoke(&agent, "schedule_create", json!({"when": "+1s", "prompt": "Nightly check"})).await;
    assert_eq!(made.status, 200, "{}", made.text);
    assert!(eventually(Duration::from_secs(10), || async { !llm.requests().is_empty() }).await, "the schedule fired");
    let through_api = api.post(&format!("/api/agents/{agent}/messages"), json!({"message": "From a script"})).await;
    assert_eq!(through_api.status, 200, "{}", through_api.text);
    for (turn, request) in ["the scheduled turn", "the API turn"].iter().zip(llm.requests()) {
        let offered = request.tool_names();
        assert!(
            !offered.contains(&"ask_user".to_string()) && offered.contains(&"schedule_list".to_string()),
            "{turn}: {offered:?}"
        );
    }
    // Called directly (the API has no person either), it is refused with the reason.
    let direct = api.invoke(&agent, "ask_user", json!({"question": "Anyone?"})).await;
    assert_eq!(direct.status, 503, "{}", direct.text);
    assert!(direct.text.contains("person"), "{}", direct.text);
}
