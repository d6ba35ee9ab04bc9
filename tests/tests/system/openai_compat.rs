//! The OpenAI-compatible endpoint (`/v1/chat/completions`, `/v1/models`) against the official
//! `openai` packages as real clients, Python's (`tests/peers/openai_client.py`) and npm's
//! (`tests/peers/openai_client.mjs`): an exposed agent answers streamed and not, runs its own
//! tools inside the turn, keeps a resent conversation in one session, and everything else is
//! refused in OpenAI's shape.

use std::path::PathBuf;

use kennel_tests::fake_llm::Scripted;
use serde_json::{Value, json};

use crate::{agent_from, daemon_with_llm};

/// The Python with the `openai` and `prometheus_client` packages (`./scripts/test` makes it).
pub(crate) fn clients_python() -> String {
    crate::venv_python("KENNEL_CLIENTS_PYTHON", "clients-venv")
}

/// Runs a Python script of `tests/peers` with the clients' Python, `stdin` as its input; its
/// one line of JSON.
pub(crate) async fn run_client(script: &str, args: &[&str], stdin: &str) -> Value {
    run_peer(&clients_python(), script, args, stdin).await
}

/// Runs the script `script` of `tests/peers` with `program`, `stdin` as its input; its one
/// line of JSON.
async fn run_peer(program: &str, script: &str, args: &[&str], stdin: &str) -> Value {
    use tokio::io::AsyncWriteExt;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers").join(script);
    let mut child = tokio::process::Command::new(program)
        .arg(path)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} did not start: {e}"));
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    let output = child.wait_with_output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{script} failed: {stderr}\n{stdout}");
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{script} printed no JSON ({e}): {stdout}\n{stderr}"))
}

#[tokio::test]
async fn the_python_openai_client_talks_to_an_exposed_agent_and_is_refused_the_rest_in_openais_shape() {
    talks_to_an_exposed_agent(&clients_python(), "openai_client.py").await;
}

#[tokio::test]
async fn the_npm_openai_client_talks_to_an_exposed_agent_and_is_refused_the_rest_in_openais_shape() {
    let package = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/node_modules/openai");
    assert!(package.exists(), "{} is missing: ./scripts/test installs tests/peers with npm", package.display());
    talks_to_an_exposed_agent("node", "openai_client.mjs").await;
}

/// The client script `script` (run by `program`) lists the models, asks an exposed agent
/// unstreamed, streamed and again in the first conversation, and is refused the rest; each
/// client prints what it made of the answers in the same JSON shape.
async fn talks_to_an_exposed_agent(program: &str, script: &str) {
    let (_home, daemon, api, llm) = daemon_with_llm("openai", "[openai]\nexpose = [\"helper\"]\n").await;
    for name in ["helper", "secret"] {
        agent_from(&api, json!({"name": name, "model": "gpt-test", "tools": ["system_time"]})).await;
    }
    llm.push_all([
        // The first conversation: the agent runs its tool inside the turn.
        Scripted::call("system_time", json!({})),
        Scripted::text("It is noon."),
        // The streamed one: text before a tool call, then the answer a word at a time.
        Scripted::ToolCalls { calls: vec![("system_time".into(), json!({}))], text: Some("Let me check.".into()) },
        Scripted::SlowText { text: "Once upon a time it was noon.".into(), piece_millis: 20 },
        // The first conversation again, resent with a new question.
        Scripted::text("Tomorrow too."),
    ]);
    let base = format!("{}/v1", daemon.base);
    let out = run_peer(program, script, &[&base, api.token(), "helper", "secret"], "").await;

    assert_eq!(out["models"], json!(["helper"]), "only exposed agents are models: {out:#}");

    let plain = &out["plain"];
    assert_eq!(plain["object"], "chat.completion");
    assert_eq!((plain["model"].as_str(), plain["role"].as_str()), (Some("helper"), Some("assistant")));
    assert_eq!(plain["content"], "It is noon.");
    assert_eq!(plain["finish_reason"], "stop");
    let usage = &plain["usage"];
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 0, "{usage}");
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
    );

    let streamed = &out["streamed"];
    assert_eq!(streamed["content"], "Let me check.\n\nOnce upon a time it was noon.", "{streamed:#}");
    assert!(streamed["pieces"].as_u64().unwrap() >= 5, "streamed as written, not at once: {streamed:#}");
    let roles = streamed["roles"].as_array().unwrap();
    assert_eq!(roles[0], "assistant", "the role comes first: {streamed:#}");
    assert!(roles[1..].iter().all(Value::is_null), "{streamed:#}");
    let reasons = streamed["finish_reasons"].as_array().unwrap();
    assert_eq!(reasons.last().unwrap(), "stop", "{streamed:#}");
    assert!(reasons[..reasons.len() - 1].iter().all(Value::is_null), "{streamed:#}");
    assert_eq!(streamed["usage"].as_array().unwrap().len(), 1, "one usage chunk at the end: {streamed:#}");
    assert_eq!(streamed["objects"], json!(["chat.completion.chunk"]));
    assert_eq!(streamed["ids"].as_array().unwrap().len(), 1, "one id for every chunk: {streamed:#}");

    // The resent conversation continues the first one's session, and the model is shown the
    // new question once, after the session's own history.
    let session = plain["session"].as_str().expect("the session header");
    assert_eq!(out["continued"]["session"].as_str(), Some(session));
    assert_eq!(out["continued"]["content"], "Tomorrow too.");
    let requests = llm.requests();
    assert_eq!(requests.len(), 5, "no model call for a refused request");
    let last = requests.last().unwrap().body["messages"].to_string();
    assert_eq!(last.matches("And tomorrow?").count(), 1, "{last}");
    assert_eq!(last.matches("What time is it?").count(), 1, "{last}");
    assert!(!last.contains("You are a helpful assistant."), "the client's system message is not sent: {last}");
    let stored = api.get(&format!("/api/sessions/{session}/messages")).await;
    assert_eq!(stored.status, 200, "{}", stored.text);
    let stored = stored.text;
    assert!(stored.contains("system_time") && stored.contains("Tomorrow too."), "{stored}");

    for refused in ["hidden", "hidden_model"] {
        let e = &out[refused];
        assert_eq!((e["class"].as_str(), e["status"].as_u64()), (Some("NotFoundError"), Some(404)), "{e:#}");
        assert_eq!(e["code"], "model_not_found", "{e:#}");
        assert!(e["message"].as_str().unwrap().contains("`secret` does not exist"), "{e:#}");
    }
    let e = &out["wrong_key"];
    assert_eq!((e["class"].as_str(), e["status"].as_u64()), (Some("AuthenticationError"), Some(401)), "{e:#}");
    assert_eq!(e["code"], "invalid_api_key", "{e:#}");
    let e = &out["no_user_message"];
    assert_eq!((e["class"].as_str(), e["status"].as_u64()), (Some("BadRequestError"), Some(400)), "{e:#}");
    assert_eq!(e["type"], "invalid_request_error", "{e:#}");
}

/// A turn that cannot start is an HTTP error before any chunk, and a streamed turn whose
/// client goes away is cancelled.
#[tokio::test]
async fn a_streamed_turn_fails_as_an_http_error_and_stops_when_its_client_leaves() {
    let (_home, _daemon, api, llm) = daemon_with_llm("openai", "[openai]\nexpose = [\"helper\", \"lonely\"]\n").await;
    agent_from(&api, json!({"name": "helper", "model": "gpt-test"})).await;
    agent_from(&api, json!({"name": "lonely"})).await;
    let ask = |model: &str, stream: bool| {
        api.request(reqwest::Method::POST, "/v1/chat/completions")
            .json(&json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]}))
    };
    // A failed turn tells the SDKs not to retry it: they would send its message again.
    for stream in [true, false] {
        let refused = ask("lonely", stream).send().await.unwrap();
        let (status, retry) = (refused.status(), refused.headers().get("x-should-retry").cloned());
        let body: Value = refused.json().await.unwrap();
        assert_eq!(status, 503, "{body:#}");
        assert_eq!(retry.as_ref().and_then(|v| v.to_str().ok()), Some("false"), "stream {stream}");
        assert_eq!(body["error"]["type"], "server_error", "{body:#}");
        assert!(body["error"]["message"].as_str().unwrap().contains("has no model"), "{body:#}");
    }

    let elsewhere = kennel_tests::Api::send(api.request(reqwest::Method::POST, "/v1/embeddings")).await;
    assert_eq!(elsewhere.status, 404, "{}", elsewhere.text);
    assert_eq!(elsewhere.body["error"]["type"], "invalid_request_error", "{}", elsewhere.text);

    llm.push(Scripted::SlowText {
        text: "one two three four five six seven eight nine ten".repeat(20),
        piece_millis: 50,
    });
    let mut answer = ask("helper", true).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert!(answer.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let first = answer.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("\"role\":\"assistant\""), "{first:?}");
    drop(answer);
    let cancelled =
        kennel_tests::eventually(std::time::Duration::from_secs(10), || async { llm.cut_streams() == 1 }).await;
    assert!(cancelled, "the turn goes on without its client");
}

/// A turn whose client leaves before its answer (the model is still thinking) is cancelled,
/// streamed or not: it shows in the metrics as `cancelled`, never as a reply.
#[tokio::test]
async fn a_client_that_leaves_before_the_answer_cancels_its_turn_streamed_or_not() {
    for stream in [true, false] {
        let (_home, _daemon, api, llm) = daemon_with_llm("openai", "[openai]\nexpose = [\"helper\"]\n").await;
        agent_from(&api, json!({"name": "helper", "model": "gpt-test"})).await;
        llm.push_all([Scripted::Delay { millis: 3000 }, Scripted::text("Too late.")]);
        let ask = api.request(reqwest::Method::POST, "/v1/chat/completions").json(&json!({
            "model": "helper", "stream": stream, "messages": [{"role": "user", "content": "think hard"}]
        }));
        let waited = tokio::time::timeout(std::time::Duration::from_millis(500), ask.send()).await;
        assert!(waited.is_err(), "stream {stream}: no answer starts before the first text");
        let turns = |outcome: &'static str| {
            let api = api.clone();
            async move {
                let text = kennel_tests::Api::send(api.request(reqwest::Method::GET, "/metrics")).await.text;
                text.lines()
                    .any(|l| l.starts_with("kennel_turns_total") && l.contains(&format!("outcome=\"{outcome}\"")))
            }
        };
        // Cancelled within 10 s, while the model would answer after 3 s: a turn that went on
        // would have ended `reply` instead (a turn ends once).
        let cancelled = kennel_tests::eventually(std::time::Duration::from_secs(10), || turns("cancelled")).await;
        assert!(cancelled, "stream {stream}: the turn went on without its client");
        assert!(!turns("reply").await, "stream {stream}: the turn ended as a reply");
    }
}

/// A front end that shares one token and sends no `user`: two people open with the same
/// word. Each conversation opens its own session, goes on in it once answered (streamed or
/// not), and neither's model call ever holds the other's words.
#[tokio::test]
async fn conversations_that_open_alike_stay_apart_and_each_goes_on_in_its_own_session() {
    let (_home, _daemon, api, llm) = daemon_with_llm("openai", "[openai]\nexpose = [\"helper\"]\n").await;
    agent_from(&api, json!({"name": "helper", "model": "gpt-test"})).await;
    let chat = |messages: Value, stream: bool| {
        let api = api.clone();
        async move {
            let body = json!({"model": "helper", "messages": messages, "stream": stream});
            let r =
                kennel_tests::Api::send(api.request(reqwest::Method::POST, "/v1/chat/completions").json(&body)).await;
            assert_eq!(r.status, 200, "{}", r.text);
            let session = r.header("x-kennel-session").unwrap().to_string();
            let content = if stream {
                r.text
                    .lines()
                    .filter_map(|line| line.strip_prefix("data: "))
                    .filter_map(|data| serde_json::from_str::<Value>(data).ok())
                    .filter_map(|chunk| chunk["choices"][0]["delta"]["content"].as_str().map(str::to_string))
                    .collect::<String>()
            } else {
                r.body["choices"][0]["message"]["content"].as_str().unwrap().to_string()
            };
            (session, content)
        }
    };
    let (user, assistant) =
        (|t: &str| json!({"role": "user", "content": t}), |t: &str| json!({"role": "assistant", "content": t}));
    llm.push_all([
        Scripted::text("Hello, first."),
        Scripted::text("Hello, second."),
        Scripted::text("Noted."),
        Scripted::text("You asked nothing yet."),
        Scripted::text("You are welcome."),
    ]);

    let (ann, hello_ann) = chat(json!([user("hi")]), false).await;
    let (bob, hello_bob) = chat(json!([user("hi")]), false).await;
    assert_ne!(ann, bob, "a conversation that starts here opens a session of its own");

    let (ann_again, _) = chat(json!([user("hi"), assistant(&hello_ann), user("my code is 1234")]), true).await;
    assert_eq!(ann_again, ann, "the first conversation goes on in its session (streamed)");
    let (bob_again, said) = chat(json!([user("hi"), assistant(&hello_bob), user("what did I say?")]), false).await;
    assert_eq!(bob_again, bob, "the second goes on in its own");
    assert_eq!(said, "You asked nothing yet.");
    let to_bob = llm.requests().last().unwrap().body["messages"].to_string();
    assert!(!to_bob.contains("1234") && !to_bob.contains("Hello, first."), "{to_bob}");

    // The streamed answer keyed the first session too: resending it with the next question
    // finds it.
    let (ann_last, _) = chat(
        json!([user("hi"), assistant(&hello_ann), user("my code is 1234"), assistant("Noted."), user("thanks")]),
        false,
    )
    .await;
    assert_eq!(ann_last, ann);
    let to_ann = llm.requests().last().unwrap().body["messages"].to_string();
    assert_eq!(to_ann.matches("my code is 1234").count(), 1, "sent once, from the session: {to_ann}");

    // Two people greeted alike come to the same words: neither session keeps them, so
    // neither person goes on in a session the other can reach.
    llm.push_all([
        Scripted::text("Hello!"),
        Scripted::text("Hello!"),
        Scripted::text("Noted, Carol."),
        Scripted::text("I do not know yet."),
    ]);
    let (carol, _) = chat(json!([user("hey")]), false).await;
    let (dan, _) = chat(json!([user("hey")]), true).await;
    let (carol_again, _) = chat(json!([user("hey"), assistant("Hello!"), user("I am Carol, code 777")]), false).await;
    let (dan_again, said) = chat(json!([user("hey"), assistant("Hello!"), user("who am I?")]), false).await;
    assert_eq!(said, "I do not know yet.");
    let sessions = [&carol, &dan, &carol_again, &dan_again];
    for (i, a) in sessions.iter().enumerate() {
        assert!(sessions[i + 1..].iter().all(|b| a != b), "four sessions: {sessions:?}");
    }
    let to_dan = llm.requests().last().unwrap().body["messages"].to_string();
    assert!(!to_dan.contains("777") && !to_dan.contains("Carol"), "{to_dan}");
}

/// The key is checked before the body is read: a client without one that announces a body
/// of megabytes and sends none is refused at once, never held waiting for it; a body over
/// the limit from a client with a key is an OpenAI-shaped 400.
#[tokio::test]
async fn a_request_without_a_key_is_refused_before_its_body_is_read() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (_home, daemon, api, _llm) = daemon_with_llm("openai", "[openai]\nexpose = [\"helper\"]\n").await;
    agent_from(&api, json!({"name": "helper", "model": "gpt-test"})).await;
    let addr = daemon.base.strip_prefix("http://").unwrap().to_string();
    let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: 4000000\r\n\r\n"
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0; 512];
    let read = tokio::time::timeout(std::time::Duration::from_secs(5), tcp.read(&mut answer)).await;
    let n = read.expect("answered without the body").unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");

    let huge = json!({"model": "helper", "messages": [{"role": "user", "content": "x".repeat(5 * 1024 * 1024)}]});
    let refused = kennel_tests::Api::send(api.request(reqwest::Method::POST, "/v1/chat/completions").json(&huge)).await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert_eq!(refused.body["error"]["type"], "invalid_request_error", "{}", refused.text);
    assert!(refused.body["error"]["message"].as_str().unwrap().contains("at most 4194304 bytes"), "{}", refused.text);
}
