//! A2A interop with the official Python SDK (`a2a-sdk`): its 1.3.0 clients (polling and
//! streaming) and a 0.3 client (0.3.26, in its own virtual environment) against Kennel, and
//! Kennel's `a2a_send` against SDK servers of both versions. All on loopback.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use kennel_tests::fake_llm::Scripted;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

use crate::a2a_server::exposing_with_token as exposing;
use crate::{agent_from, daemon_with_config, free_port};

fn script(name: &str) -> String {
    format!("{}/a2a/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The Python of the 0.3 SDK's virtual environment (`./scripts/test` makes it).
fn python_0_3() -> PathBuf {
    let python = std::env::var_os("KENNEL_A2A_0_3_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/a2a-0.3-venv/bin/python"));
    assert!(
        python.exists(),
        "{} is missing: ./scripts/test makes the a2a-sdk 0.3 environment (or set KENNEL_A2A_0_3_PYTHON)",
        python.display()
    );
    python
}

/// Runs one client command of a peer script; its JSON answer, or its JSON error.
async fn run(python: impl AsRef<std::ffi::OsStr>, peer: &str, args: &[&str]) -> Result<Value, Value> {
    let mut command = tokio::process::Command::new(python);
    command.arg(script(peer)).args(args);
    let out = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("the SDK client finishes")
        .expect("python runs");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(
        |_| json!({ "error": String::from_utf8_lossy(&out.stderr), "stdout": String::from_utf8_lossy(&out.stdout) }),
    );
    if out.status.success() { Ok(answer) } else { Err(answer) }
}

/// The 1.3.0 SDK client.
async fn sdk(args: &[&str]) -> Result<Value, Value> {
    run("python3", "peer.py", args).await
}

/// The 0.3 SDK client.
async fn sdk_0_3(args: &[&str]) -> Result<Value, Value> {
    run(python_0_3(), "peer03.py", args).await
}

/// Starts an SDK server (`serve PORT`) and waits until it listens.
async fn sdk_server(python: impl AsRef<std::ffi::OsStr>, peer: &str, port: u16) -> Child {
    let mut child = tokio::process::Command::new(python)
        .arg(script(peer))
        .args(["serve", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("python runs");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await.expect("the SDK server starts");
    assert!(ready.unwrap().unwrap().contains("listening"));
    child
}

#[tokio::test]
async fn the_sdk_client_sends_a_task_to_a_kennel_agent() {
    let (_home, d, _api, llm, token) = exposing().await;
    llm.push(Scripted::text("Hello from Kennel"));
    let helper = format!("{}/a2a/helper", d.base);
    let answer = sdk(&["send", &helper, "hi there"]).await.expect("the SDK client succeeds");
    assert_eq!(
        (answer["state"].as_str(), answer["text"].as_str()),
        (Some("TASK_STATE_COMPLETED"), Some("Hello from Kennel"))
    );
    assert_eq!(llm.requests()[0].body["messages"][1]["content"], "hi there");

    let vault = format!("{}/a2a/vault", d.base);
    let refused = sdk(&["send", &vault, "open up"]).await.expect_err("a non-public agent needs a token");
    assert!(refused["error"].as_str().unwrap().contains("401"), "{refused}");
    llm.push(Scripted::text("vault says hi"));
    let answer = sdk(&["send", &vault, "open up", "--token", &token]).await.expect("with a token");
    assert_eq!(answer["text"], "vault says hi");
}

#[tokio::test]
async fn the_sdk_streaming_client_gets_status_updates_and_the_final_artifact() {
    let (_home, d, _api, llm, _token) = exposing().await;
    llm.push(Scripted::call("system_time", json!({}))).push(Scripted::text("It is now."));
    let helper = format!("{}/a2a/helper", d.base);
    let streamed = sdk(&["send", &helper, "what time is it?", "--stream"]).await.expect("the stream is read");
    assert_eq!(
        streamed["kinds"],
        json!([
            "task",
            "status_update",
            "status_update",
            "artifact_update",
            "artifact_update",
            "artifact_update",
            "artifact_update",
            "status_update"
        ]),
        "the task, its tool call starting and ending, the reply as the model streams it (three pieces), the whole reply, the end: {streamed}"
    );
    assert_eq!(streamed["pieces"], json!(["It ", "is ", "now."]), "{streamed}");
    assert_eq!(
        (streamed["state"].as_str(), streamed["text"].as_str()),
        (Some("TASK_STATE_COMPLETED"), Some("It is now."))
    );
}

#[tokio::test]
async fn the_sdk_polls_a_task_that_returned_immediately() {
    let (_home, d, _api, llm, _token) = exposing().await;
    llm.push(Scripted::Delay { millis: 700 }).push(Scripted::text("after a while"));
    let helper = format!("{}/a2a/helper", d.base);
    let polled = sdk(&["poll", &helper, "take a while"]).await.expect("polling succeeds");
    assert_eq!(polled["states"], json!(["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]), "{polled}");
    assert_eq!(polled["text"], "after a while");
}

#[tokio::test]
async fn the_sdk_lists_cancels_and_subscribes_to_tasks() {
    let (_home, d, _api, llm, token) = exposing().await;
    let vault = format!("{}/a2a/vault", d.base);
    llm.set_fallback(Scripted::text("done"));
    let mut sent = Vec::new();
    for text in ["one", "two", "three"] {
        sent.push(
            sdk(&["send", &vault, text, "--token", &token]).await.unwrap()["task_id"].as_str().unwrap().to_string(),
        );
    }
    let first = sdk(&["list", &vault, "--token", &token, "--page-size", "2"]).await.expect("ListTasks");
    assert_eq!((first["totalSize"].as_u64(), first["tasks"].as_array().map(Vec::len)), (Some(3), Some(2)), "{first}");
    assert_eq!(first["tasks"][0]["id"], sent[2].as_str());
    let next = first["nextPageToken"].as_str().unwrap();
    let second = sdk(&["list", &vault, "--token", &token, "--page-size", "2", "--page-token", next]).await.unwrap();
    assert_eq!(second["tasks"][0]["id"], sent[0].as_str());
    assert_eq!(second["nextPageToken"], "");

    // A slow task: the SDK subscribes to it from another process, then cancels it.
    llm.push(Scripted::Delay { millis: 5000 });
    let params = json!({ "message": { "messageId": "s", "role": "ROLE_USER", "parts": [{ "text": "slow" }] }, "configuration": { "returnImmediately": true } });
    let slow = d.api(&token).rpc("/a2a/vault", "SendMessage", params, Some("1.0")).await;
    let id = slow.body["result"]["task"]["id"].as_str().unwrap().to_string();
    let subscriber = tokio::spawn({
        let (vault, token, id) = (vault.clone(), token.clone(), id.clone());
        async move { sdk(&["subscribe", &vault, &id, "--token", &token]).await }
    });
    tokio::time::sleep(Duration::from_millis(1500)).await; // the subscriber is connected
    let canceled = sdk(&["cancel", &vault, &id, "--token", &token]).await.expect("CancelTask");
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED", "{canceled}");
    let followed = subscriber.await.unwrap().expect("the subscription ends cleanly");
    assert_eq!(followed["kinds"][0], "task");
    assert_eq!(followed["state"], "TASK_STATE_CANCELED", "{followed}");
    let again = sdk(&["cancel", &vault, &id, "--token", &token]).await.expect_err("an ended task");
    assert_eq!(again["type"], "TaskNotCancelableError", "{again}");
    assert!(again["error"].as_str().unwrap().contains("already ended"), "{again}");
}

#[tokio::test]
async fn a_0_3_sdk_client_sends_streams_reads_cancels_and_resubscribes() {
    let (_home, d, _api, llm, token) = exposing().await;
    let helper = format!("{}/a2a/helper", d.base);
    llm.push(Scripted::text("polled answer"));
    let blocking = sdk_0_3(&["send", &helper, "hello"]).await.expect("message/send");
    assert_eq!((blocking["state"].as_str(), blocking["text"].as_str()), (Some("completed"), Some("polled answer")));

    llm.push(Scripted::call("system_time", json!({}))).push(Scripted::text("streamed answer"));
    let streamed = sdk_0_3(&["send", &helper, "hello", "--stream"]).await.expect("message/stream");
    assert_eq!(
        streamed["kinds"],
        json!([
            "task",
            "status-update",
            "status-update",
            "artifact-update",
            "artifact-update",
            "artifact-update",
            "status-update"
        ]),
        "the reply in two streamed pieces, then whole: {streamed}"
    );
    // The SDK's task manager put the pieces together and the whole reply replaced them.
    assert_eq!(streamed["text"], "streamed answer");
    let got = sdk_0_3(&["get", &helper, streamed["task_id"].as_str().unwrap()]).await.expect("tasks/get");
    assert_eq!((got["kind"].as_str(), got["status"]["state"].as_str()), (Some("task"), Some("completed")));
    assert_eq!(got["history"][0]["role"], "user");

    // A 0.3 client on a token-only agent, a task it does not wait for, resubscribed and canceled.
    let vault = format!("{}/a2a/vault", d.base);
    llm.push(Scripted::Delay { millis: 5000 });
    let started = sdk_0_3(&["send", &vault, "slow", "--no-wait", "--token", &token]).await.expect("blocking: false");
    assert_eq!(started["state"], "working", "{started}");
    let id = started["task_id"].as_str().unwrap().to_string();
    let subscriber = tokio::spawn({
        let (vault, token, id) = (vault.clone(), token.clone(), id.clone());
        async move { sdk_0_3(&["resubscribe", &vault, &id, "--token", &token]).await }
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let canceled = sdk_0_3(&["cancel", &vault, &id, "--token", &token]).await.expect("tasks/cancel");
    assert_eq!(canceled["status"]["state"], "canceled");
    let followed = subscriber.await.unwrap().expect("the resubscription ends cleanly");
    assert_eq!(followed["state"], "canceled", "{followed}");
}

#[tokio::test]
async fn kennels_a2a_send_talks_to_sdk_servers_of_both_versions() {
    let (port, port_0_3) = (free_port(), free_port());
    let _server = sdk_server("python3", "peer.py", port).await;
    let _server_0_3 = sdk_server(python_0_3(), "peer03.py", port_0_3).await;

    let config = format!("[a2a]\nallowed_hosts = [\"127.0.0.1:{port}\", \"127.0.0.1:{port_0_3}\"]\n");
    let (_home, _d, api) = daemon_with_config(&config).await;
    let caller = agent_from(&api, json!({"name": "caller", "tools": ["a2a.*"]})).await;
    for (port, name, protocol, state) in [
        (port, "python-echo", "1.0", "TASK_STATE_COMPLETED"),
        (port_0_3, "python-echo-0.3", "0.3", "TASK_STATE_COMPLETED"),
    ] {
        let found = api.invoke(&caller, "a2a_discover", json!({"url": format!("http://127.0.0.1:{port}")})).await;
        assert_eq!(found.status, 200, "{}", found.text);
        assert_eq!(found.body["content"]["name"], name);
        let remote = found.body["content"]["agent_id"].as_str().unwrap();
        let sent = api.invoke(&caller, "a2a_send", json!({"agent_id": remote, "message": "ping"})).await;
        assert_eq!(sent.status, 200, "{name}: {}", sent.text);
        assert_eq!(sent.body["content"]["reply"], "echo: ping");
        assert_eq!(sent.body["content"]["protocol"], protocol, "{}", sent.text);
        assert_eq!(sent.body["content"]["state"], state);
    }
}
