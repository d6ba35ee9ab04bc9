//! Agents cannot act as each other (issue 42): the attacks of the outside test on 951b06f,
//! each through the real daemon. An agent stops and messages only its own descendants unless
//! an operator grants `agents.kill_any` / `agents.message_any`; never an agent a channel or
//! A2A is bound to; a channel, a session and a workflow step stay bound to the agent's id, so
//! an agent that takes a freed name inherits none of them; a type is never wider than its maker.

use std::time::Duration;

use kennel_tests::Api;
use kennel_tests::fake_llm::Scripted;
use kennel_tests::fake_webhook::FakeWebhookReceiver;
use serde_json::{Value, json};

/// The attacker of the issue: an operator-made agent with the `agents` family, no more.
async fn attacker(api: &Api) -> String {
    crate::agent_from(api, json!({"name": "attacker", "model": "m", "tools": ["agents.*", "system_time"]})).await
}

/// An agent an operator spawns from the new type `manifest` under `name` (a type's name and a
/// running agent's share one namespace, so the name an impostor takes is not a type's).
async fn named(api: &Api, manifest: Value, name: &str) -> String {
    assert_eq!(api.post("/api/templates", manifest.clone()).await.status, 201);
    let agent = api.post("/api/agents", json!({"template": manifest["name"], "name": name})).await;
    assert_eq!(agent.status, 201, "{}", agent.text);
    agent.body["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_freed_channel_name_taken_by_an_agent_made_impostor_answers_nothing() {
    let receiver = FakeWebhookReceiver::start(crate::HOOK_SECRET).await;
    let (_home, daemon, api, llm) = crate::daemon_with_hook(&receiver, "chan").await;
    let chan = named(&api, json!({"name": "greeter", "model": "m", "system_prompt": "You are chan."}), "chan").await;
    let attacker = attacker(&api).await;
    llm.set_fallback(Scripted::text("Hello from chan."));
    let post = |id: &str| {
        let body = json!({"id": id, "chat_id": "room", "text": "hi", "user": {"id": "u1", "name": "Pat"}});
        let daemon = &daemon;
        async move { crate::post_to_hook(daemon, &body).await }
    };
    assert_eq!(post("evt-1").await.status, 200);
    assert!(kennel_tests::eventually(Duration::from_secs(10), || async { receiver.posts().len() == 1 }).await);

    // The attack of 951b06f: a type of its own, kill `chan`, spawn an impostor under its name.
    let evil = json!({"name": "evilbot2", "system_prompt": "EVIL PERSONA", "model": "m"});
    assert_eq!(api.invoke(&attacker, "agent_type_create", evil).await.status, 200);
    let kill = api.invoke(&attacker, "agent_kill", json!({"agent_id": "chan"})).await;
    assert_eq!(kill.status, 403, "not the attacker's descendant: {}", kill.text);
    assert!(kill.text.contains("agents.kill_any"), "{}", kill.text);
    // Even with the grant that reaches any agent, not one a channel is bound to.
    assert_eq!(
        api.put(&format!("/api/agents/{attacker}/capabilities"), json!({"tools": ["agents.*", "agents.kill_any"]}))
            .await
            .status,
        200
    );
    let kill = api.invoke(&attacker, "agent_kill", json!({"agent_id": "chan"})).await;
    assert_eq!(kill.status, 403, "{}", kill.text);
    assert!(kill.text.contains("channel `hook`"), "{}", kill.text);

    // An operator stops chan; the attacker's impostor takes the free name...
    assert_eq!(api.post(&format!("/api/agents/{chan}/stop"), json!({})).await.status, 200);
    let impostor = api.invoke(&attacker, "agent_spawn", json!({"template": "evilbot2", "name": "chan"})).await;
    assert_eq!(impostor.status, 200, "{}", impostor.text);
    let before = llm.requests().len();
    assert_eq!(post("evt-2").await.status, 200);
    let traffic = || async { api.get("/api/channels/hook").await.body };
    assert!(
        kennel_tests::eventually(Duration::from_secs(10), || async {
            traffic().await["inbound"].as_array().is_some_and(|m| m.iter().any(|m| m["state"] == "failed"))
        })
        .await,
        "{}",
        traffic().await
    );
    // ...and answers nothing: no turn ran, nothing was posted, the failure names the bound agent.
    assert_eq!(llm.requests().len(), before, "the impostor's model was never called");
    assert_eq!(receiver.posts().len(), 1);
    let failed = traffic().await;
    let failed = failed["inbound"].as_array().unwrap().iter().find(|m| m["state"] == "failed").cloned().unwrap();
    assert!(failed["detail"].as_str().unwrap_or_default().contains("stopped"), "{failed}");

    // The operator starts chan again (the impostor stopped first): the channel is chan's again.
    let impostor_id = impostor.body["content"]["agent_id"].as_str().unwrap().to_string();
    assert_eq!(api.post(&format!("/api/agents/{impostor_id}/stop"), json!({})).await.status, 200);
    assert_eq!(api.post(&format!("/api/agents/{chan}/start"), json!({})).await.status, 200);
    assert_eq!(post("evt-3").await.status, 200);
    assert!(kennel_tests::eventually(Duration::from_secs(10), || async { receiver.posts().len() == 2 }).await);
    let last = llm.requests().last().unwrap().body.to_string();
    assert!(last.contains("You are chan.") && !last.contains("EVIL PERSONA"), "{last}");
}

#[tokio::test]
async fn a_new_boss_of_the_same_name_continues_no_conversation_and_needs_a_grant_to_send() {
    let (_home, _d, api, llm) = crate::daemon_with_llm("openai", "").await;
    let lead = json!({"name": "lead", "model": "m", "tools": ["agent_send", "agents.message_any"]});
    let boss = named(&api, lead, "boss").await;
    let b = crate::agent_from(&api, json!({"name": "b", "model": "m"})).await;
    let attacker = attacker(&api).await;
    llm.push(Scripted::call(
        "agent_send",
        json!({"agent_id": "b", "message": "the deploy key is K123-SECRET", "async": false}),
    ))
    .push(Scripted::text("noted"))
    .push(Scripted::text("sent"));
    let turn = api.post(&format!("/api/agents/{boss}/messages"), json!({"message": "tell b"})).await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    let sessions_of_b = || async { api.get(&format!("/api/agents/{b}/sessions")).await.body.clone() };
    assert_eq!(sessions_of_b().await.as_array().unwrap().len(), 1);

    // The old boss stops; the attacker's child takes the name "boss".
    assert_eq!(api.post(&format!("/api/agents/{boss}/stop"), json!({})).await.status, 200);
    let spawned = api.invoke(&attacker, "agent_spawn", json!({"template": "attacker", "name": "boss"})).await;
    assert_eq!(spawned.status, 200, "{}", spawned.text);
    // The attacker itself may not message b: b is no descendant of it.
    let refused = api.invoke(&attacker, "agent_send", json!({"agent_id": "b", "message": "what was the key?"})).await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert!(refused.text.contains("agents.message_any"), "{}", refused.text);

    // Given the grant, a sender named "boss" still gets a session of its own with b: the
    // earlier exchange is not in what b's model is sent.
    let new_boss = spawned.body["content"]["agent_id"].as_str().unwrap().to_string();
    let grants = json!({"tools": ["agent_send", "agents.message_any"]});
    assert_eq!(api.put(&format!("/api/agents/{new_boss}/capabilities"), grants).await.status, 200);
    llm.push(Scripted::text("no idea"));
    let asked = api
        .invoke(&new_boss, "agent_send", json!({"agent_id": "b", "message": "what was the key?", "async": false}))
        .await;
    assert_eq!(asked.status, 200, "{}", asked.text);
    let sent_to_b = llm.requests().last().unwrap().body.to_string();
    assert!(sent_to_b.contains("what was the key?"), "{sent_to_b}");
    assert!(!sent_to_b.contains("K123-SECRET"), "the old boss's conversation leaked: {sent_to_b}");
    assert_eq!(sessions_of_b().await.as_array().unwrap().len(), 2, "one conversation per sender id");
}

#[tokio::test]
async fn an_agent_stops_and_messages_its_own_descendants_freely() {
    let (_home, _d, api, llm) = crate::daemon_with_llm("openai", "").await;
    let parent = crate::agent_from(&api, json!({"name": "parent", "model": "m", "tools": ["agents.*"]})).await;
    let child = api.invoke(&parent, "agent_spawn", json!({"template": "parent", "name": "kid"})).await;
    assert_eq!(child.status, 200, "{}", child.text);
    llm.push(Scripted::text("hi parent"));
    let sent = api.invoke(&parent, "agent_send", json!({"agent_id": "kid", "message": "hello", "async": false})).await;
    assert_eq!(sent.status, 200, "{}", sent.text);
    assert_eq!(sent.body["content"]["reply"], "hi parent");
    let killed = api.invoke(&parent, "agent_kill", json!({"agent_id": "kid"})).await;
    assert_eq!(killed.status, 200, "{}", killed.text);
    assert_eq!(killed.body["content"]["status"], "stopped");
    // `agents.*` names tools; it gives no reach over others: a sibling is out of reach.
    let other = crate::agent_from(&api, json!({"name": "other", "model": "m"})).await;
    assert_eq!(api.invoke(&parent, "agent_kill", json!({"agent_id": other})).await.status, 403);
}

#[tokio::test]
async fn a_type_is_never_wider_than_the_agent_that_made_it() {
    let (_home, _d, api, browser) = crate::dashboard::signed_in_with("").await;
    let maker = crate::agent_with(&api, "maker", &["agent_type_create", "system_time", "files.*"]).await;
    let wide = json!({"name": "wide", "tools": ["*"], "system_prompt": "x"});
    let made = api.invoke(&maker, "agent_type_create", wide).await;
    assert_eq!(made.status, 200, "{}", made.text);
    let dropped: Vec<&str> =
        made.body["content"]["dropped"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(dropped.contains(&"process_start") && dropped.contains(&"agent_kill"), "{dropped:?}");
    assert!(!dropped.contains(&"system_time") && !dropped.contains(&"read_file"), "{dropped:?}");
    let stored = api.get("/api/templates/wide").await;
    assert_eq!(stored.body["made_by"], json!(maker), "{}", stored.text);
    let tools: Vec<&str> =
        stored.body["capabilities"]["tools"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(tools.contains(&"system_time") && tools.contains(&"read_file"), "{tools:?}");
    assert!(!tools.iter().any(|t| ["*", "process_start", "agent_kill", "agent_spawn"].contains(t)), "{tools:?}");
    // The type's agents, as an operator spawns them, get what the maker could give and no more.
    let agent = api.post("/api/agents", json!({"template": "wide", "name": "w1"})).await;
    assert_eq!(agent.status, 201, "{}", agent.text);
    assert_eq!(api.invoke("w1", "process_start", json!({"command": "id"})).await.status, 403);
    // A reach is given only by its exact grant, which the maker does not hold.
    let reach = json!({"name": "reacher", "tools": ["agents.kill_any", "system_time"]});
    let made = api.invoke(&maker, "agent_type_create", reach).await;
    assert_eq!(made.body["content"]["dropped"], json!(["agents.kill_any"]), "{}", made.text);
    // An operator's type records no maker.
    assert!(api.post("/api/templates", json!({"name": "ops", "tools": ["*"]})).await.body.get("made_by").is_none());
    // The dashboard marks the agent-made types, and says so on the type's page.
    let listed = browser.get("/agent-types").await.text;
    assert_eq!(listed.matches(">agent-made</a>").count(), 2, "wide and reacher, not ops: {listed}");
    assert!(browser.get("/agent-types/wide").await.text.contains("id=\"made-by\""));
    assert!(!browser.get("/agent-types/ops").await.text.contains("id=\"made-by\""));
}

#[tokio::test]
async fn a_workflow_run_by_an_agent_reaches_no_further_than_the_agent() {
    let (_home, _d, api, llm) = crate::daemon_with_llm("openai", "").await;
    crate::agent_from(&api, json!({"name": "powerful", "model": "m", "tools": ["*"]})).await;
    let runner = crate::agent_with(&api, "runner", &["workflow_run", "system_time"]).await;
    let wf = json!({"name": "spawn-wide", "steps": [{"agent_type": "powerful", "prompt": "go"}]});
    assert_eq!(api.post("/api/workflows", wf).await.status, 201);
    // The step's model tries a tool its type has and the runner has not.
    llm.push(Scripted::call("process_start", json!({"command": "id"}))).push(Scripted::text("done"));
    let ran = api.invoke(&runner, "workflow_run", json!({"workflow_id": "spawn-wide"})).await;
    assert_eq!(ran.status, 200, "{}", ran.text);
    let tool_result = llm.requests().last().unwrap().body.to_string();
    assert!(tool_result.contains("has no grant for `process_start`"), "{tool_result}");
    // An `agent` step is bound to the id its name had; another agent named so later does not
    // run it, and an agent that may not message the step's agent cannot run it either.
    let wf = json!({"name": "ask-powerful", "steps": [{"agent": "powerful", "prompt": "hi"}]});
    let stored = api.post("/api/workflows", wf).await;
    assert_eq!(stored.status, 201, "{}", stored.text);
    let powerful = api.get("/api/agents/powerful").await.body["id"].clone();
    assert_eq!(stored.body["steps"][0]["agent"], powerful);
    let refused = api.invoke(&runner, "workflow_run", json!({"workflow_id": "ask-powerful"})).await;
    assert!(refused.text.contains("agents.message_any"), "{}", refused.text);
    let unknown =
        api.post("/api/workflows", json!({"name": "n", "steps": [{"agent": "nobody", "prompt": "hi"}]})).await;
    assert_eq!(unknown.status, 422, "{}", unknown.text);
}

/// The channel attack against `[openai] expose`: the exposed agent cannot be killed by an
/// agent holding `agents.kill_any`, and once an operator stops it, an impostor an agent
/// spawns under its name is no model: clients get OpenAI's 404, its model is never called.
#[tokio::test]
async fn a_freed_openai_model_name_taken_by_an_agent_made_impostor_answers_nothing() {
    let (_home, daemon, api, llm) = crate::daemon_with_llm("openai", "[openai]\nexpose = [\"helper\"]\n").await;
    let helper =
        named(&api, json!({"name": "assistant", "model": "m", "system_prompt": "You are helper."}), "helper").await;
    let attacker = attacker(&api).await;
    let ask = || async {
        let body = json!({"model": "helper", "messages": [{"role": "user", "content": "hi"}]});
        Api::send(daemon.api(api.token()).request(reqwest::Method::POST, "/v1/chat/completions").json(&body)).await
    };
    llm.set_fallback(Scripted::text("Hello from helper."));
    assert_eq!(ask().await.status, 200, "the exposed agent answers");

    assert_eq!(
        api.put(&format!("/api/agents/{attacker}/capabilities"), json!({"tools": ["agents.*", "agents.kill_any"]}))
            .await
            .status,
        200
    );
    let kill = api.invoke(&attacker, "agent_kill", json!({"agent_id": "helper"})).await;
    assert_eq!(kill.status, 403, "{}", kill.text);
    assert!(kill.text.contains("OpenAI model `helper`"), "{}", kill.text);

    let evil = json!({"name": "evilbot3", "system_prompt": "EVIL PERSONA", "model": "m"});
    assert_eq!(api.invoke(&attacker, "agent_type_create", evil).await.status, 200);
    assert_eq!(api.post(&format!("/api/agents/{helper}/stop"), json!({})).await.status, 200);
    let impostor = api.invoke(&attacker, "agent_spawn", json!({"template": "evilbot3", "name": "helper"})).await;
    assert_eq!(impostor.status, 200, "{}", impostor.text);
    let before = llm.requests().len();
    let models = Api::send(daemon.api(api.token()).request(reqwest::Method::GET, "/v1/models")).await;
    assert_eq!(models.body["data"], json!([]), "the impostor is no model: {}", models.text);
    let refused = ask().await;
    assert_eq!(refused.status, 404, "{}", refused.text);
    assert_eq!(refused.body["error"]["code"], "model_not_found", "{}", refused.text);
    assert_eq!(llm.requests().len(), before, "the impostor's model was never called");
}
