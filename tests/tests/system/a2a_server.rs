//! Kennel's A2A server, spoken to over raw JSON-RPC: cards, the spec's errors, versions,
//! sending without waiting, history lengths, follow-ups, ListTasks, cancelling, streaming,
//! and tasks that outlive their client or their daemon, or end with their agent. (The official
//! SDK clients are in `a2a_sdk.rs`.)

use std::time::{Duration, Instant};

use kennel_tests::fake_llm::{FakeLlm, Scripted};
use kennel_tests::{Api, Daemon, Home, Reply};
use serde_json::{Value, json};

use crate::agent_from;

/// A daemon exposing `helper` (public, may call `system_time`) and `vault` (token only), both
/// on the fake provider; and the API token it was started with.
pub(crate) async fn exposing_with_token() -> (Home, Daemon, Api, FakeLlm, String) {
    let llm = FakeLlm::start().await;
    let config = format!(
        "{}[a2a]\nexpose = [\"helper\", \"vault\"]\npublic = [\"helper\"]\n",
        llm.provider_config("fake", "openai")
    );
    let home = Home::with_config(&config);
    let token = home.token("peer").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    let helper = json!({"name": "helper", "model": "m", "description": "Answers questions", "tools": ["system_time"]});
    agent_from(&api, helper).await;
    agent_from(&api, json!({"name": "vault", "model": "m"})).await;
    (home, daemon, api, llm, token)
}

async fn exposing() -> (Home, Daemon, Api, FakeLlm) {
    let (home, daemon, api, llm, _) = exposing_with_token().await;
    (home, daemon, api, llm)
}

fn message(text: &str) -> Value {
    json!({ "message": { "messageId": "m1", "role": "ROLE_USER", "parts": [{ "text": text }] } })
}

fn error_code(reply: &Reply) -> i64 {
    reply.body["error"]["code"].as_i64().unwrap_or_else(|| panic!("no JSON-RPC error in {}", reply.text))
}

async fn send(api: &Api, path: &str, text: &str) -> Value {
    let sent = api.rpc(path, "SendMessage", message(text), Some("1.0")).await;
    assert_eq!(sent.status, 200, "{}", sent.text);
    sent.body["result"]["task"].clone()
}

#[tokio::test]
async fn cards_show_each_caller_the_agents_it_may_reach_and_how() {
    let (_home, d, api, _llm) = exposing().await;
    let anonymous = d.anonymous().get("/.well-known/agent-card.json").await.body;
    let skills = |card: &Value| card["skills"].as_array().unwrap().iter().map(|s| s["id"].clone()).collect::<Vec<_>>();
    assert_eq!(skills(&anonymous), [json!("helper")], "a non-public agent is not shown to anonymous callers");
    assert!(anonymous.get("securitySchemes").is_none(), "{anonymous}");
    assert_eq!(anonymous["capabilities"]["streaming"], true);
    // Both versions' readers find what they need.
    assert_eq!(anonymous["url"], format!("{}/a2a/helper", d.base));
    assert_eq!(anonymous["protocolVersion"], "0.3.0");
    let versions: Vec<_> =
        anonymous["supportedInterfaces"].as_array().unwrap().iter().map(|i| i["protocolVersion"].clone()).collect();
    assert_eq!(versions, [json!("1.0"), json!("0.3")]);

    let with_token = api.get("/.well-known/agent-card.json").await.body;
    assert_eq!(skills(&with_token), [json!("helper"), json!("vault")]);
    assert_eq!(with_token["skills"][1]["securityRequirements"], json!([{ "schemes": { "bearer": {} } }]));
    assert_eq!(with_token["skills"][1]["security"], json!([{ "bearer": [] }]));
    assert!(with_token["skills"][0].get("security").is_none(), "helper is public");
    assert!(with_token.get("security").is_none(), "not every agent of this card needs a token");
    assert_eq!(with_token["securitySchemes"]["bearer"]["type"], "http");
    assert_eq!(with_token["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "bearer");

    let vault = d.anonymous().get("/a2a/vault/.well-known/agent-card.json").await;
    assert_eq!(vault.status, 401, "{}", vault.text);
    assert_eq!(vault.header("www-authenticate"), Some("Bearer"));
    let vault = api.get("/a2a/vault/.well-known/agent-card.json").await.body;
    assert_eq!(vault["security"], json!([{ "bearer": [] }]));
    assert_eq!(vault["securityRequirements"], json!([{ "schemes": { "bearer": {} } }]));

    assert_eq!(d.anonymous().get("/a2a/nobody/.well-known/agent-card.json").await.status, 404);
    let unknown = d.anonymous().rpc("/a2a/nobody", "SendMessage", message("hi"), None).await;
    assert_eq!(unknown.status, 404, "{}", unknown.text);
    assert!(unknown.error_message().contains("no exposed agent `nobody`"), "{}", unknown.text);
    let ambiguous = d.anonymous().rpc("/a2a", "GetTask", json!({"id": "x"}), None).await;
    assert_eq!(ambiguous.status, 404, "two agents are exposed: {}", ambiguous.text);
    let refused = d.anonymous().rpc("/a2a/vault", "GetTask", json!({"id": "x"}), None).await;
    assert_eq!(refused.status, 401);
}

#[tokio::test]
async fn unsupported_operations_versions_and_bad_requests_get_the_specs_errors() {
    let (_home, d, _api, _llm) = exposing().await;
    let helper = d.anonymous();
    let call = |method: &'static str, params: Value, version: Option<&'static str>| {
        let helper = helper.clone();
        async move { helper.rpc("/a2a/helper", method, params, version).await }
    };
    for push in
        ["CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "tasks/pushNotificationConfig/set"]
    {
        assert_eq!(error_code(&call(push, json!({"taskId": "x"}), None).await), -32003, "{push}");
    }
    let with_push = json!({ "message": message("hi")["message"], "configuration": { "taskPushNotificationConfig": { "url": "https://x" } } });
    assert_eq!(error_code(&call("SendMessage", with_push, None).await), -32003);
    for card in ["GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard"] {
        let refused = call(card, json!({}), None).await;
        assert_eq!(error_code(&refused), -32004, "{card}: {}", refused.text);
    }
    let unknown = call("DoSomething", json!({}), None).await;
    assert_eq!(error_code(&unknown), -32601);
    assert!(
        unknown.body["error"]["message"].as_str().unwrap().contains("SendMessage, SendStreamingMessage"),
        "{}",
        unknown.text
    );

    let future = call("GetTask", json!({"id": "x"}), Some("9.9")).await;
    assert_eq!(error_code(&future), -32009, "{}", future.text);
    assert!(future.body["error"]["message"].as_str().unwrap().contains("speaks 1.0 and 0.3"));
    let mixed = call("SendMessage", message("hi"), Some("0.3")).await;
    assert_eq!(error_code(&mixed), -32009, "a 1.0 method under A2A-Version 0.3: {}", mixed.text);
    assert_eq!(error_code(&call("GetTask", json!({"id": "x"}), Some("1.0.2")).await), -32001, "a patch version is 1.0");
    assert_eq!(error_code(&call("tasks/get", json!({"id": "x"}), Some("0.3")).await), -32001);

    let raw = |body: &'static str| {
        let helper = helper.clone();
        async move {
            Api::send(
                helper
                    .request(reqwest::Method::POST, "/a2a/helper")
                    .header("content-type", "application/json")
                    .body(body),
            )
            .await
        }
    };
    assert_eq!(error_code(&raw("{not json").await), -32700);
    assert_eq!(error_code(&raw(r#"{"id": 1, "method": "GetTask"}"#).await), -32600, "no jsonrpc");
    assert_eq!(error_code(&raw(r#"[{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}]"#).await), -32600, "a batch");
    assert_eq!(error_code(&call("GetTask", json!({}), None).await), -32602, "no id");
    assert_eq!(error_code(&call("ListTasks", json!({"pageSize": 500}), None).await), -32602);
    let no_text = json!({ "message": { "role": "ROLE_USER", "parts": [{ "video": "x" }] } });
    assert_eq!(error_code(&call("SendMessage", no_text, None).await), -32602);
    let long_context =
        json!({ "message": { "role": "ROLE_USER", "contextId": "c".repeat(129), "parts": [{ "text": "x" }] } });
    assert_eq!(error_code(&call("SendMessage", long_context, None).await), -32602);
    let images_only =
        json!({ "message": message("hi")["message"], "configuration": { "acceptedOutputModes": ["image/png"] } });
    assert_eq!(error_code(&call("SendMessage", images_only, None).await), -32005);

    // A client that asked for a stream gets its error as the one event of a stream.
    let mut stream = helper.rpc_stream("/a2a/helper", "SubscribeToTask", json!({"id": "nope"}), Some("1.0")).await;
    assert!(stream.content_type().starts_with("text/event-stream"), "{}", stream.content_type());
    let events = stream.rest().await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["error"]["code"], -32001);
}

#[tokio::test]
async fn a_send_that_returns_immediately_answers_working_and_history_length_is_honoured() {
    let (_home, d, _api, llm) = exposing().await;
    let helper = d.anonymous();
    llm.push(Scripted::Delay { millis: 800 }).push(Scripted::text("done thinking"));
    let started = Instant::now();
    let params = json!({ "message": message("think")["message"], "configuration": { "returnImmediately": true } });
    let sent = helper.rpc("/a2a/helper", "SendMessage", params, Some("1.0")).await;
    assert!(started.elapsed() < Duration::from_millis(600), "answered before the turn ended");
    let task = &sent.body["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{}", sent.text);
    let id = task["id"].as_str().unwrap().to_string();

    let ended = kennel_tests::eventually(Duration::from_secs(10), || {
        let (helper, id) = (helper.clone(), id.clone());
        async move {
            helper.rpc("/a2a/helper", "GetTask", json!({"id": id}), None).await.body["result"]["status"]["state"]
                == "TASK_STATE_COMPLETED"
        }
    })
    .await;
    assert!(ended);
    let history = |n: Option<u64>, method: &'static str| {
        let (helper, id) = (helper.clone(), id.clone());
        async move {
            let mut params = json!({ "id": id });
            if let Some(n) = n {
                params["historyLength"] = json!(n);
            }
            helper.rpc("/a2a/helper", method, params, None).await.body["result"]["history"].clone()
        }
    };
    let all = history(None, "GetTask").await;
    assert_eq!(all.as_array().unwrap().len(), 2, "{all}");
    assert_eq!(all[0]["parts"][0]["text"], "think");
    assert_eq!(all[0]["taskId"], id.as_str(), "the stored request names its task");
    assert_eq!(all[1]["role"], "ROLE_AGENT");
    assert_eq!(history(Some(1), "GetTask").await, json!([all[1]]));
    assert_eq!(history(Some(0), "GetTask").await, json!([]), "in 1.0, 0 means none");
    // 0.3 spelling of the same task, where 0 means all (as its SDK reads it).
    let v03 = history(Some(1), "tasks/get").await;
    assert_eq!(v03[0]["role"], "agent");
    assert_eq!(v03[0]["kind"], "message");
    assert_eq!(history(Some(0), "tasks/get").await.as_array().unwrap().len(), 2);
    let v03_task = helper.rpc("/a2a/helper", "tasks/get", json!({"id": id}), None).await.body;
    assert_eq!(v03_task["result"]["kind"], "task");
    assert_eq!(v03_task["result"]["status"]["state"], "completed");
    assert_eq!(v03_task["result"]["artifacts"][0]["parts"][0], json!({"kind": "text", "text": "done thinking"}));
}

#[tokio::test]
async fn a_finished_task_takes_no_more_messages_but_its_context_continues() {
    let (_home, d, _api, llm) = exposing().await;
    let helper = d.anonymous();
    llm.push(Scripted::text("first answer"));
    let task = send(&helper, "/a2a/helper", "first question").await;
    let (id, context) = (task["id"].as_str().unwrap(), task["contextId"].as_str().unwrap());

    let follow_up =
        json!({ "message": { "messageId": "m2", "role": "ROLE_USER", "taskId": id, "parts": [{ "text": "more" }] } });
    let refused = helper.rpc("/a2a/helper", "SendMessage", follow_up, None).await;
    assert_eq!(error_code(&refused), -32004, "{}", refused.text);
    assert!(
        refused.body["error"]["message"].as_str().unwrap().contains(&format!("contextId `{context}`")),
        "{}",
        refused.text
    );
    let elsewhere = json!({ "message": { "messageId": "m3", "role": "ROLE_USER", "taskId": id, "contextId": "other", "parts": [{ "text": "x" }] } });
    assert_eq!(error_code(&helper.rpc("/a2a/helper", "SendMessage", elsewhere, None).await), -32602);
    let unknown = json!({ "message": { "messageId": "m4", "role": "ROLE_USER", "taskId": "0190e0e0-0000-7000-8000-000000000000", "parts": [{ "text": "x" }] } });
    assert_eq!(error_code(&helper.rpc("/a2a/helper", "SendMessage", unknown, None).await), -32001);

    llm.push(Scripted::text("second answer"));
    let again = json!({ "message": { "messageId": "m5", "role": "ROLE_USER", "contextId": context, "parts": [{ "text": "second question" }] } });
    let second = helper.rpc("/a2a/helper", "SendMessage", again, None).await;
    assert_eq!(second.body["result"]["task"]["contextId"], context);
    assert_ne!(second.body["result"]["task"]["id"], id, "a new task in the same context");
    let seen = llm.requests()[1].body["messages"].to_string();
    assert!(seen.contains("first question") && seen.contains("first answer"), "the context is one session: {seen}");
}

#[tokio::test]
async fn list_tasks_pages_filters_and_keeps_each_callers_tasks_its_own() {
    let (home, d, api, llm) = exposing().await;
    llm.set_fallback(Scripted::text("ok"));
    let other = d.api(&home.token("other").await);
    tokio::time::sleep(Duration::from_millis(400)).await; // the daemon picks up the CLI's token
    let in_context = |text: &str, context: &str| json!({ "message": { "messageId": text, "role": "ROLE_USER", "contextId": context, "parts": [{ "text": text }] } });
    let mut mine = Vec::new();
    for (text, context) in [("a", "c1"), ("b", "c1"), ("c", "c2")] {
        let sent = api.rpc("/a2a/vault", "SendMessage", in_context(text, context), None).await;
        mine.push(sent.body["result"]["task"]["id"].as_str().unwrap().to_string());
    }
    let theirs = send(&other, "/a2a/vault", "d").await;

    let list = |api: &Api, params: Value| {
        let api = api.clone();
        async move { api.rpc("/a2a/vault", "ListTasks", params, Some("1.0")).await }
    };
    let first = list(&api, json!({"pageSize": 2})).await.body["result"].clone();
    let ids = |page: &Value| {
        page["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    assert_eq!(ids(&first), [mine[2].clone(), mine[1].clone()], "most recently updated first: {first}");
    assert_eq!((first["totalSize"].as_u64(), first["pageSize"].as_u64()), (Some(3), Some(2)));
    assert!(first["tasks"][0].get("artifacts").is_none(), "artifacts only when asked for");
    let token = first["nextPageToken"].as_str().unwrap();
    assert!(!token.is_empty());
    let second = list(&api, json!({"pageSize": 2, "pageToken": token})).await.body["result"].clone();
    assert_eq!(ids(&second), [mine[0].clone()]);
    assert_eq!(second["nextPageToken"], "");

    let c1 = list(&api, json!({"contextId": "c1", "includeArtifacts": true, "historyLength": 1})).await.body["result"]
        .clone();
    assert_eq!(ids(&c1), [mine[1].clone(), mine[0].clone()]);
    assert_eq!(c1["tasks"][0]["artifacts"][0]["parts"][0]["text"], "ok");
    assert_eq!(c1["tasks"][0]["history"].as_array().unwrap().len(), 1);
    assert_eq!(list(&api, json!({"status": "TASK_STATE_COMPLETED"})).await.body["result"]["totalSize"], 3);
    assert_eq!(list(&api, json!({"status": "TASK_STATE_WORKING"})).await.body["result"]["totalSize"], 0);
    let later = list(&api, json!({"statusTimestampAfter": "2999-01-01T00:00:00Z"})).await;
    assert_eq!(later.body["result"]["totalSize"], 0, "{}", later.text);
    assert_eq!(error_code(&list(&api, json!({"pageToken": "zz"})).await), -32602);
    assert_eq!(error_code(&list(&api, json!({"status": "TASK_STATE_SLEEPING"})).await), -32602);

    // Another token's tasks are neither listed nor readable.
    assert_eq!(ids(&list(&other, json!({})).await.body["result"]), [theirs["id"].as_str().unwrap().to_string()]);
    let foreign = other.rpc("/a2a/vault", "GetTask", json!({"id": mine[0]}), None).await;
    assert_eq!(error_code(&foreign), -32001);
    let cancel = other.rpc("/a2a/vault", "CancelTask", json!({"id": mine[0]}), None).await;
    assert_eq!(error_code(&cancel), -32001);
    // Anonymous callers have no tasks to list.
    let anonymous = d.anonymous().rpc("/a2a/helper", "ListTasks", json!({}), None).await;
    assert_eq!(error_code(&anonymous), -32004, "{}", anonymous.text);
}

#[tokio::test]
async fn a_streamed_task_can_be_canceled_and_its_stream_ends() {
    let (_home, _d, api, llm) = exposing().await;
    llm.push(Scripted::Delay { millis: 5000 }).push(Scripted::text("never seen"));
    let mut stream = api.rpc_stream("/a2a/vault", "SendStreamingMessage", message("slow"), Some("1.0")).await;
    assert_eq!(stream.status(), 200);
    let first = stream.next().await.expect("the task comes first");
    let task = &first["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{first}");
    let id = task["id"].as_str().unwrap().to_string();

    let mut watcher = api.rpc_stream("/a2a/vault", "SubscribeToTask", json!({"id": id}), Some("1.0")).await;
    assert_eq!(watcher.next().await.unwrap()["result"]["task"]["id"], id.as_str());

    let started = Instant::now();
    let canceled = api.rpc("/a2a/vault", "CancelTask", json!({"id": id}), None).await;
    assert_eq!(canceled.body["result"]["status"]["state"], "TASK_STATE_CANCELED", "{}", canceled.text);
    for stream in [&mut stream, &mut watcher] {
        let rest = stream.rest().await;
        let last = rest.last().expect("a final status");
        assert_eq!(last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELED", "{rest:?}");
    }
    assert!(started.elapsed() < Duration::from_secs(3), "the turn stopped, not waited out");
    assert_eq!(error_code(&api.rpc("/a2a/vault", "CancelTask", json!({"id": id}), None).await), -32002);
    let mut late = api.rpc_stream("/a2a/vault", "SubscribeToTask", json!({"id": id}), Some("1.0")).await;
    assert_eq!(late.rest().await[0]["error"]["code"], -32004, "an ended task has nothing to stream");
}

#[tokio::test]
async fn a_stream_opened_with_a_token_ends_when_the_token_is_revoked() {
    let (home, daemon, _api, llm, _) = exposing_with_token().await;
    let streamer = daemon.api(&home.token("streamer").await);
    // A token made from the command line is live once the daemon has read it.
    let live =
        kennel_tests::eventually(Duration::from_secs(5), || async { streamer.get("/api/agents").await.status == 200 })
            .await;
    assert!(live);
    llm.push(Scripted::Delay { millis: 30_000 }).push(Scripted::text("never seen"));
    let mut stream = streamer.rpc_stream("/a2a/vault", "SendStreamingMessage", message("slow"), Some("1.0")).await;
    assert_eq!(stream.status(), 200);
    let first = stream.next().await.expect("the task comes first");
    assert_eq!(first["result"]["task"]["status"]["state"], "TASK_STATE_WORKING", "{first}");

    let revoked = Instant::now();
    home.cli_ok(&["token", "revoke", "streamer"]).await;
    let rest = tokio::time::timeout(Duration::from_secs(10), stream.rest()).await;
    assert!(rest.is_ok(), "the revoked token's stream ended");
    eprintln!("from the revocation to the stream's end: {:?}", revoked.elapsed());
}

#[tokio::test]
async fn a_task_outlives_the_client_that_sent_it() {
    let (home, d, api, llm) = exposing().await;
    llm.push(Scripted::Delay { millis: 1500 }).push(Scripted::text("worth the wait"));
    let impatient = kennel_kernel::net::http_client().timeout(Duration::from_millis(300)).build().unwrap();
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message("take your time") });
    let token = home.token("impatient").await;
    tokio::time::sleep(Duration::from_millis(400)).await; // the daemon picks up the CLI's token
    let gave_up = impatient.post(format!("{}/a2a/vault", d.base)).bearer_auth(&token).json(&body).send().await;
    assert!(gave_up.is_err_and(|e| e.is_timeout()), "the client disconnected mid-turn");

    let owner = d.api(&token);
    let listed = owner.rpc("/a2a/vault", "ListTasks", json!({}), None).await;
    let task = &listed.body["result"]["tasks"][0];
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "still running after its client left: {}", listed.text);
    let id = task["id"].as_str().unwrap().to_string();
    let finished = kennel_tests::eventually(Duration::from_secs(10), || {
        let (owner, id) = (owner.clone(), id.clone());
        async move {
            let task = owner.rpc("/a2a/vault", "GetTask", json!({"id": id}), None).await.body;
            task["result"]["artifacts"][0]["parts"][0]["text"] == "worth the wait"
        }
    })
    .await;
    assert!(finished, "the turn ran to its end and its reply is stored for GetTask");
    let _ = api;
}

#[tokio::test]
async fn stopping_the_agent_cancels_its_running_task() {
    let (_home, _d, api, llm) = exposing().await;
    llm.push(Scripted::Delay { millis: 20_000 }).push(Scripted::text("too late"));
    let mut stream = api.rpc_stream("/a2a/vault", "SendStreamingMessage", message("slow"), Some("1.0")).await;
    let first = stream.next().await.expect("the task comes first");
    let id = first["result"]["task"]["id"].as_str().expect("a task").to_string();
    let agents = api.get("/api/agents").await.body;
    let vault = agents.as_array().unwrap().iter().find(|a| a["name"] == "vault").expect("vault is listed");
    tokio::time::sleep(Duration::from_millis(200)).await; // the turn is in its model call

    let started = Instant::now();
    let stopped = api.post(&format!("/api/agents/{}/stop", vault["id"].as_str().unwrap()), json!({})).await;
    assert_eq!(stopped.status, 200, "{}", stopped.text);
    let rest = stream.rest().await;
    let last = rest.last().expect("a final status");
    assert_eq!(last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELED", "{rest:?}");
    assert!(started.elapsed() < Duration::from_secs(3), "the turn stopped, not waited out");
    // A stopped agent is no longer served (its name is free for a new agent): its path is gone.
    let gone = api.rpc("/a2a/vault", "GetTask", json!({"id": id}), None).await;
    assert_eq!(gone.status, 404, "{}", gone.text);
}

#[tokio::test]
async fn tasks_left_working_by_a_killed_daemon_end_failed_at_the_next_start() {
    let (home, d, _api, llm) = exposing().await;
    let token = home.token("long").await;
    tokio::time::sleep(Duration::from_millis(400)).await; // the daemon picks up the CLI's token
    llm.push(Scripted::Delay { millis: 30_000 });
    let params = json!({ "message": message("long job")["message"], "configuration": { "returnImmediately": true } });
    let sent = d.api(&token).rpc("/a2a/vault", "SendMessage", params, None).await;
    assert_eq!(sent.body["result"]["task"]["status"]["state"], "TASK_STATE_WORKING", "{}", sent.text);
    let id = sent.body["result"]["task"]["id"].as_str().unwrap().to_string();
    d.kill().await;

    let d = home.start().await;
    let api = d.api(&token);
    let failed = kennel_tests::eventually(Duration::from_secs(5), || {
        let (api, id) = (api.clone(), id.clone());
        async move {
            let task = api.rpc("/a2a/vault", "GetTask", json!({"id": id}), None).await.body;
            task["result"]["status"]["state"] == "TASK_STATE_FAILED"
        }
    })
    .await;
    assert!(failed, "no turn runs for it any more");
    let task = api.rpc("/a2a/vault", "GetTask", json!({"id": id}), None).await.body;
    let why = task["result"]["status"]["message"]["parts"][0]["text"].as_str().unwrap_or_default();
    assert!(why.contains("the daemon stopped while this task ran"), "{task}");
}

/// Issue 43: callers without a token share one owner, so on 951b06f any of them who sent a
/// contextId of its choosing ("support") joined whoever else had used it, history and all.
/// Now an anonymous caller continues only a context the agent gave it, and its tasks' ids
/// carry no time.
#[tokio::test]
async fn an_anonymous_caller_continues_only_a_context_the_agent_gave_it() {
    let (_home, d, _api, llm) = exposing().await;
    llm.set_fallback(Scripted::text("ok"));
    let chosen = |text: &str| json!({ "message": { "messageId": text, "role": "ROLE_USER", "contextId": "support", "parts": [{ "text": text }] } });
    let first = d.anonymous().rpc("/a2a/helper", "SendMessage", chosen("my card number is 4111"), Some("1.0")).await;
    assert_eq!(error_code(&first), -32602, "{}", first.text);
    assert!(first.body["error"]["message"].as_str().unwrap().contains("leave contextId out"), "{}", first.text);
    let second = d.anonymous().rpc("/a2a/helper", "SendMessage", chosen("what did they say?"), Some("1.0")).await;
    assert_eq!(error_code(&second), -32602, "{}", second.text);
    assert!(llm.requests().is_empty(), "no turn ran in a shared context");

    let task = send(&d.anonymous(), "/a2a/helper", "hello").await;
    let (id, context) = (task["id"].as_str().unwrap(), task["contextId"].as_str().unwrap());
    for given in [id, context] {
        assert_eq!(uuid::Uuid::parse_str(given).unwrap().get_version_num(), 4, "random, no time in it: {given}");
    }
    let again = json!({ "message": { "messageId": "m2", "role": "ROLE_USER", "contextId": context, "parts": [{ "text": "more" }] } });
    let continued = d.anonymous().rpc("/a2a/helper", "SendMessage", again, Some("1.0")).await;
    assert_eq!(continued.body["result"]["task"]["contextId"], context, "{}", continued.text);
}
