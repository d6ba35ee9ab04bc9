//! Kennel as an A2A client: two Kennel daemons talking both ways, the address guard on
//! model-chosen URLs, and the task TTL, all on loopback. (The official SDK as client and
//! server: `a2a_sdk.rs`; the server's protocol: `a2a_server.rs`.)

use std::time::Duration;

use kennel_tests::fake_llm::{FakeLlm, Scripted};
use serde_json::json;

use crate::{agent_from, daemon_with_config};

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
