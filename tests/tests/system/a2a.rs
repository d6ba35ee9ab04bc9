//! A2A interop: the official Python SDK (`a2a-sdk`) as a client of Kennel and as a server for
//! Kennel's `a2a_send`, and two Kennel daemons talking both ways, all on loopback.

use std::process::Stdio;
use std::time::Duration;

use kennel_tests::fake_llm::{FakeLlm, Scripted};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::{agent_from, daemon_with_config};

fn peer_script() -> String {
    format!("{}/a2a/peer.py", env!("CARGO_MANIFEST_DIR"))
}

/// The SDK client sending one message; its printed answer, or its error output.
async fn sdk_send(url: &str, text: &str, token: Option<&str>) -> Result<String, String> {
    let mut cmd = tokio::process::Command::new("python3");
    cmd.arg(peer_script()).args(["send", url, text]);
    if let Some(t) = token {
        cmd.arg(t);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("the SDK client finishes")
        .expect("python3 runs");
    if out.status.success() {
        let answer: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
        Ok(answer["text"].as_str().unwrap_or_default().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test]
async fn the_sdk_client_sends_a_task_to_a_kennel_agent() {
    let llm = FakeLlm::start().await;
    let config = format!(
        "{}[a2a]\nexpose = [\"helper\", \"vault\"]\npublic = [\"helper\"]\n",
        llm.provider_config("fake", "openai")
    );
    let (home, d, api) = daemon_with_config(&config).await;
    agent_from(&api, json!({"name": "helper", "model": "m", "description": "Answers questions"})).await;
    agent_from(&api, json!({"name": "vault", "model": "m"})).await;

    let card = d.anonymous().get("/.well-known/agent-card.json").await;
    let skills: Vec<_> = card.body["skills"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(skills, ["helper", "vault"]);
    assert_eq!(
        d.anonymous().get("/.well-known/agent.json").await.body,
        card.body,
        "the older path serves the same card"
    );

    llm.push(Scripted::text("Hello from Kennel"));
    let answer = sdk_send(&format!("{}/a2a/helper", d.base), "hi there", None).await.expect("the SDK client succeeds");
    assert_eq!(answer, "Hello from Kennel");
    assert_eq!(llm.requests()[0].body["messages"][1]["content"], "hi there");

    // Not public: refused without a token, answered with one.
    let refused = sdk_send(&format!("{}/a2a/vault", d.base), "open up", None).await;
    assert!(refused.is_err(), "a non-public agent needs a token");
    let token = home.token("peer").await;
    tokio::time::sleep(Duration::from_millis(400)).await; // the daemon picks up the CLI's token
    llm.push(Scripted::text("vault says hi"));
    let answer = sdk_send(&format!("{}/a2a/vault", d.base), "open up", Some(&token)).await.expect("with a token");
    assert_eq!(answer, "vault says hi");
}

#[tokio::test]
async fn kennel_tasks_can_be_read_back_and_finished_ones_not_canceled() {
    let llm = FakeLlm::start().await;
    let config =
        format!("{}[a2a]\nexpose = [\"helper\"]\npublic = [\"helper\"]\n", llm.provider_config("fake", "openai"));
    let (_home, d, api) = daemon_with_config(&config).await;
    agent_from(&api, json!({"name": "helper", "model": "m"})).await;
    llm.push(Scripted::text("done"));
    let rpc = |method: &str, params: serde_json::Value| {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let api = d.anonymous();
        async move { kennel_tests::Api::send(api.request(reqwest::Method::POST, "/a2a").json(&body)).await }
    };
    let sent =
        rpc("SendMessage", json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "go"}]}}))
            .await;
    let task = &sent.body["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "done");
    let id = task["id"].as_str().unwrap();
    let got = rpc("GetTask", json!({"id": id})).await;
    assert_eq!(got.body["result"]["id"], id);
    assert_eq!(got.body["id"], 7);
    let cancel = rpc("CancelTask", json!({"id": id})).await;
    assert_eq!(cancel.body["error"]["code"], -32002);
    assert_eq!(rpc("GetTask", json!({"id": "nope"})).await.body["error"]["code"], -32001);
    assert_eq!(rpc("message/stream", json!({})).await.body["error"]["code"], -32601);
}

#[tokio::test]
async fn kennels_a2a_send_talks_to_an_sdk_server() {
    let port = free_port();
    let mut peer = tokio::process::Command::new("python3")
        .arg(peer_script())
        .args(["serve", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 runs");
    let mut lines = BufReader::new(peer.stdout.take().unwrap()).lines();
    let ready = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await.expect("the SDK server starts");
    assert!(ready.unwrap().unwrap().contains("listening"));

    let config = format!("[a2a]\nallowed_hosts = [\"127.0.0.1:{port}\"]\n");
    let (_home, _d, api) = daemon_with_config(&config).await;
    let caller = agent_from(&api, json!({"name": "caller", "tools": ["a2a.*"]})).await;
    let found = api.invoke(&caller, "a2a_discover", json!({"url": format!("http://127.0.0.1:{port}")})).await;
    assert_eq!(found.status, 200, "{}", found.text);
    assert_eq!(found.body["content"]["name"], "python-echo");
    let remote = found.body["content"]["agent_id"].as_str().unwrap();
    let sent = api.invoke(&caller, "a2a_send", json!({"agent_id": remote, "message": "ping"})).await;
    assert_eq!(sent.status, 200, "{}", sent.text);
    assert_eq!(sent.body["content"]["reply"], "echo: ping");
    assert_eq!(sent.body["content"]["state"], "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn two_kennel_daemons_talk_both_ways() {
    let (llm_a, llm_b) = (FakeLlm::start().await, FakeLlm::start().await);
    let a2a =
        |me: &str| format!("[a2a]\nexpose = [\"{me}\"]\npublic = [\"{me}\"]\nallowed_hosts = [\"127.0.0.1:*\"]\n");
    let (_ha, da, api_a) =
        daemon_with_config(&format!("{}{}", llm_a.provider_config("fake", "openai"), a2a("alice"))).await;
    let (_hb, db, api_b) =
        daemon_with_config(&format!("{}{}", llm_b.provider_config("fake", "anthropic"), a2a("bob"))).await;
    let alice = agent_from(&api_a, json!({"name": "alice", "model": "m", "tools": ["a2a.*"]})).await;
    let bob = agent_from(&api_b, json!({"name": "bob", "model": "m", "tools": ["a2a.*"]})).await;

    for (api, me, other, other_llm, text) in
        [(&api_a, &alice, &db, &llm_b, "bob here"), (&api_b, &bob, &da, &llm_a, "alice here")]
    {
        let found = api.invoke(me, "a2a_discover", json!({"url": other.base})).await;
        assert_eq!(found.status, 200, "{}", found.text);
        other_llm.push(Scripted::text(text));
        let sent = api
            .invoke(me, "a2a_send", json!({"agent_id": found.body["content"]["agent_id"], "message": "hello"}))
            .await;
        assert_eq!(sent.status, 200, "{}", sent.text);
        assert_eq!(sent.body["content"]["reply"], text);
    }
    let audit = api_b.get(&format!("/api/audit?agent={bob}&tool=a2a_send")).await;
    assert_eq!(audit.body[0]["outcome"], "ok");
}

#[tokio::test]
async fn model_chosen_urls_cannot_reach_private_or_unlisted_hosts() {
    let (_home, d, api) = daemon_with_config("").await;
    let agent = agent_from(&api, json!({"name": "curious", "tools": ["a2a.*"]})).await;
    for url in [d.base.clone(), "http://localhost:1".to_string(), "http://10.1.2.3/".into(), "http://[::1]:9/".into()] {
        let refused = api.invoke(&agent, "a2a_discover", json!({"url": url})).await;
        assert_eq!(refused.status, 403, "{url}: {}", refused.text);
        assert!(refused.error_message().contains("only an IP or CIDR entry"), "{}", refused.text);
    }
    assert_eq!(api.invoke(&agent, "a2a_discover", json!({"url": "file:///etc/passwd"})).await.status, 422);

    let (_home, d2, api2) = daemon_with_config("[a2a]\nallowed_hosts = [\"agents.example.org:443\"]\n").await;
    let agent = agent_from(&api2, json!({"name": "curious", "tools": ["a2a.*"]})).await;
    let unlisted = api2.invoke(&agent, "a2a_discover", json!({"url": d2.base})).await;
    assert_eq!(unlisted.status, 403);
    assert!(unlisted.error_message().contains("not in [a2a] allowed_hosts"));
    let unknown = api2.invoke(&agent, "a2a_send", json!({"agent_id": "nope", "message": "x"})).await;
    assert_eq!(unknown.status, 404);
}

/// Issue 10 §4: a listed host name used to skip the private-address check and match every
/// port, so `allowed_hosts = ["localhost"]` reached the daemon's own API.
#[tokio::test]
async fn a_listed_name_never_opens_loopback_and_an_ip_entry_opens_only_its_port() {
    let peer = FakeLlm::start().await; // any local HTTP server: the peer that is allowed
    let peer_port: u16 = peer.base_url().trim_end_matches("/v1").rsplit(':').next().unwrap().parse().unwrap();
    let config = format!("[a2a]\nallowed_hosts = [\"localhost:*\", \"127.0.0.1:{peer_port}\"]\n");
    let (_home, d, api) = daemon_with_config(&config).await;
    let agent = agent_from(&api, json!({"name": "curious", "tools": ["a2a.*"]})).await;
    let own_port = d.base.rsplit(':').next().unwrap();
    let url = format!("http://localhost:{own_port}");
    let refused = api.invoke(&agent, "a2a_discover", json!({"url": url})).await;
    assert_eq!(refused.status, 403, "{url}: {}", refused.text);
    assert!(refused.error_message().contains("only an IP or CIDR entry"), "{}", refused.text);
    let own = api.invoke(&agent, "a2a_discover", json!({"url": d.base})).await;
    assert_eq!(own.status, 403, "the daemon's own port is not listed: {}", own.text);
    assert!(own.error_message().contains("not in [a2a] allowed_hosts"), "{}", own.text);
    // The listed address and port is reached (the fake provider has no agent card: a 404).
    let reached = api.invoke(&agent, "a2a_discover", json!({"url": format!("http://127.0.0.1:{peer_port}")})).await;
    assert_eq!(reached.error_kind(), "Failed", "{}", reached.text);
    assert!(reached.error_message().contains("answered 404"), "{}", reached.text);
}

#[tokio::test]
async fn a_remote_task_that_outlives_the_ttl_is_a_timeout() {
    let llm = FakeLlm::start().await;
    let remote = format!("{}[a2a]\nexpose = [\"slow\"]\npublic = [\"slow\"]\n", llm.provider_config("fake", "openai"));
    let (_hb, db, api_b) = daemon_with_config(&remote).await;
    agent_from(&api_b, json!({"name": "slow", "model": "m"})).await;
    let (_ha, _da, api_a) = daemon_with_config("[a2a]\nallowed_hosts = [\"127.0.0.1:*\"]\ntask_ttl_secs = 1\n").await;
    let me = agent_from(&api_a, json!({"name": "impatient", "tools": ["a2a.*"]})).await;
    let found = api_a.invoke(&me, "a2a_discover", json!({"url": db.base})).await;
    llm.push(Scripted::Delay { millis: 3000 }).push(Scripted::text("too late"));
    let started = std::time::Instant::now();
    let sent =
        api_a.invoke(&me, "a2a_send", json!({"agent_id": found.body["content"]["agent_id"], "message": "hurry"})).await;
    assert_eq!(sent.status, 504, "{}", sent.text);
    assert_eq!(sent.error_kind(), "Timeout");
    assert!(started.elapsed() < Duration::from_millis(2500));
}
