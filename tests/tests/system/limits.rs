//! Agents cannot run or store past their limits (issue 42): schedules stay inside the chain of
//! the turn that made them, and in its conversation.

use std::time::Duration;

use kennel_tests::eventually;
use kennel_tests::fake_llm::Scripted;
use kennel_tests::fake_webhook::FakeWebhookReceiver;
use serde_json::{Value, json};

/// The `n`th request's last tool result, as text.
fn tool_result(request: &kennel_tests::fake_llm::Recorded) -> String {
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    messages.iter().rev().find(|m| m["role"] == "tool").map(|m| m["content"].to_string()).unwrap_or_default()
}

#[tokio::test]
async fn a_schedule_that_keeps_making_itself_again_stops_at_the_depth_limit_with_a_note() {
    let (_home, _d, api, llm) = crate::daemon_with_llm("openai", "[kernel]\nmax_agent_call_depth = 2\n").await;
    let agent = crate::agent_from(&api, json!({"name": "looper", "model": "m", "tools": ["schedule.*"]})).await;
    // Every turn (the operator's, then each fire's) schedules itself again in a second.
    for _ in 0..6 {
        llm.push(Scripted::call("schedule_create", json!({"when": "+1s", "prompt": "do it again"})))
            .push(Scripted::text("scheduled"));
    }
    let turn = api.post(&format!("/api/agents/{agent}/messages"), json!({"message": "start"})).await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    let notes = || async { api.get("/api/inbox").await.body };
    let noted = eventually(Duration::from_secs(20), || async {
        notes().await.as_array().is_some_and(|n| n.iter().any(|n| n["source"] == "schedule"))
    })
    .await;
    assert!(noted, "{}", notes().await);
    // The operator's turn (depth 0) and the fires at depths 1 and 2 ran; the fire at depth 3
    // did not: three schedules made, the last one's fire refused naming the limit.
    let schedules = api.get(&format!("/api/schedules?agent={agent}")).await.body;
    let schedules = schedules.as_array().unwrap();
    assert_eq!(schedules.len(), 3, "{schedules:?}");
    let refused: Vec<&Value> = schedules.iter().filter(|s| s["last_fire"]["outcome"] == "failed").collect();
    assert_eq!(refused.len(), 1, "{schedules:?}");
    assert!(refused[0]["last_fire"]["detail"].as_str().unwrap().contains("max_agent_call_depth = 2"), "{refused:?}");
    let turns_before = llm.requests().len();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(llm.requests().len(), turns_before, "nothing runs after the stop");
}

#[tokio::test]
async fn a_group_turn_cannot_reach_another_room_through_a_schedule() {
    let receiver = FakeWebhookReceiver::start(crate::HOOK_SECRET).await;
    let (_home, daemon, api, llm) = crate::daemon_with_hook(&receiver, "helper").await;
    crate::agent_from(&api, json!({"name": "helper", "model": "m", "tools": ["channel.*", "schedule.*"]})).await;
    // The group turn of 951b06f: its reply and its schedule's go to another room.
    llm.push(Scripted::call(
        "schedule_create",
        json!({"when": "+1s", "channel": "hook:secret-room", "prompt": "tell the secret room"}),
    ))
    // A schedule with no channel: its fire tries channel_send to the other room itself.
    .push(Scripted::call("schedule_create", json!({"when": "+1s", "prompt": "leak"})))
    .push(Scripted::text("Noted."))
    .push(Scripted::call(
        "channel_send",
        json!({"channel": "hook", "target": "secret-room", "content": {"type": "text", "text": "leaked"}}),
    ))
    .push(Scripted::text("done"));
    let body = json!({"id": "e1", "chat_id": "room-7", "group": true, "text": "remind us", "user": {"id": "u1", "name": "Pat"}});
    assert_eq!(crate::post_to_hook(&daemon, &body).await.status, 200);
    assert!(eventually(Duration::from_secs(15), || async { llm.requests().len() >= 5 }).await);
    let requests = llm.requests();
    let refused = tool_result(&requests[1]);
    assert!(refused.contains("may only send there") && refused.contains("room-7"), "{refused}");
    let refused = tool_result(&requests[4]);
    assert!(refused.contains("may only send there"), "the fire stays in the conversation: {refused}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let posts = receiver.posts();
    assert!(posts.iter().all(|p| p["chat_id"] == "room-7"), "nothing reached another room: {posts:?}");
}

#[tokio::test]
async fn notify_owner_is_bounded_per_agent_per_hour_and_the_fan_out_per_hour() {
    const TG_TOKEN: &str = "123456:test-token";
    let tg = kennel_tests::fake_telegram::FakeTelegram::start(TG_TOKEN).await;
    let config = format!(
        "[channels]\nallowed_hosts = [\"127.0.0.1:*\"]\n[channels.tg]\nkind = \"telegram\"\nagent = \"watcher\"\ntoken_env = \"KENNEL_TEST_BOT_TOKEN\"\nbase_url = \"{}\"\nmode = \"webhook\"\nsigning_secret_env = \"KENNEL_TEST_BOT_TOKEN\"\n[notify]\ntelegram_channel = \"tg\"\ntelegram_chat = \"-1001\"\nmax_per_agent_per_hour = 3\nmax_fanout_per_hour = 2\n",
        tg.base_url()
    );
    let (_home, _daemon, api, _llm) =
        crate::daemon_with_llm_and_env("openai", &config, &[("KENNEL_TEST_BOT_TOKEN", TG_TOKEN)]).await;
    let watcher = crate::agent_with(&api, "watcher", &["notify_owner"]).await;
    let other = crate::agent_with(&api, "other", &["notify_owner"]).await;
    let note = |n: usize| json!({"reason": format!("alarm {n}"), "summary": "It burns.", "urgency": "critical"});
    // The edge: three notes are taken, the fourth is refused naming the setting.
    for n in 0..3 {
        let noted = api.invoke(&watcher, "notify_owner", note(n)).await;
        assert_eq!(noted.status, 200, "{}", noted.text);
    }
    let refused = api.invoke(&watcher, "notify_owner", note(3)).await;
    assert_eq!(refused.error_kind(), "ResourceExhausted", "{}", refused.text);
    assert!(refused.error_message().contains("[notify] max_per_agent_per_hour"), "{}", refused.text);
    // Another agent has its own count; the daemon's fan-out is spent: kept, marked, not sent.
    assert_eq!(api.invoke(&other, "notify_owner", note(4)).await.status, 200);
    let inbox = || async { api.get("/api/inbox").await.body };
    let settled = eventually(Duration::from_secs(10), || async {
        inbox().await.as_array().unwrap().iter().all(|n| !n["telegram"].is_null())
    })
    .await;
    assert!(settled, "{}", inbox().await);
    let notes = inbox().await;
    let notes = notes.as_array().unwrap();
    assert_eq!(notes.len(), 4, "the refused note is not stored: {notes:?}");
    let sent = notes.iter().filter(|n| n["telegram"] == "ok").count();
    let held: Vec<&Value> = notes.iter().filter(|n| n["telegram"] != "ok").collect();
    assert_eq!(sent, 2, "{notes:?}");
    assert_eq!(held.len(), 2);
    assert!(held.iter().all(|n| n["telegram"].as_str().unwrap().contains("[notify] max_fanout_per_hour")));
    assert_eq!(tg.calls_of("sendMessage").len(), 2);
}

#[tokio::test]
async fn an_agents_canvas_keeps_at_most_its_versions_and_bytes_dropping_the_oldest() {
    let config = "[canvas]\nmax_bytes = 2048\nmax_versions = 3\nmax_agent_bytes = 5000\n";
    let (_home, _d, api, browser) = crate::dashboard::signed_in_with(config).await;
    let painter = crate::agent_with(&api, "painter", &["canvas_present"]).await;
    let present = |bytes: usize| {
        let html = format!("<p>{}</p>", "x".repeat(bytes - 7));
        let api = api.clone();
        let painter = painter.clone();
        async move {
            let shown = api.invoke(&painter, "canvas_present", json!({ "html": html })).await;
            assert_eq!(shown.status, 200, "{}", shown.text);
            shown.body["content"].clone()
        }
    };
    let kept = || async {
        let mut kept = Vec::new();
        for version in 1..=6 {
            if browser.get(&format!("/canvas/{painter}/{version}/frame")).await.status == 200 {
                kept.push(version);
            }
        }
        kept
    };
    for _ in 0..3 {
        assert!(present(1000).await.get("dropped_versions").is_none());
    }
    // The edge of max_versions: a fourth drops the first.
    let fourth = present(1000).await;
    assert_eq!(fourth["version"], 4);
    assert_eq!(fourth["dropped_versions"], 1);
    assert!(fourth["note"].as_str().unwrap().contains("[canvas] max_versions"), "{fourth}");
    assert_eq!(kept().await, [2, 3, 4]);
    // 2,000 + 1,000 + 1,000 bytes fit max_agent_bytes = 5,000: only the count drops one.
    assert_eq!(present(2000).await["dropped_versions"], 1);
    assert_eq!(kept().await, [3, 4, 5]);
    // 2,048 + 2,000 fit, + 1,000 would not: two go.
    assert_eq!(present(2048).await["dropped_versions"], 2);
    assert_eq!(kept().await, [5, 6]);
    // Past max_bytes is refused, naming the setting, and drops nothing.
    let html = "y".repeat(2049);
    let refused = api.invoke(&painter, "canvas_present", json!({ "html": html })).await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert!(refused.error_message().contains("[canvas] max_bytes"), "{}", refused.text);
    assert_eq!(kept().await, [5, 6]);
}

/// The daemon's peak resident memory so far (`VmHWM`), in MiB.
fn peak_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib / 1024
}

#[tokio::test]
async fn parallel_reads_of_a_large_file_do_not_take_the_daemons_memory() {
    let (home, daemon, api) = crate::daemon_with_config("[workspace]\nmax_reading_mib = 64\n").await;
    let reader = crate::agent_with(&api, "reader", &["read_file", "edit_file"]).await;
    // 62 MB of text, as in the attack on 951b06f, put there by a process of the agent.
    let dir = home.path().join("workspaces").join(&reader);
    std::fs::create_dir_all(&dir).unwrap();
    let line = format!("{}\n", "a".repeat(99));
    std::fs::write(dir.join("big.txt"), line.repeat(620_000)).unwrap();
    let before = peak_mib(daemon.pid());
    // 24 read_file at once, each of a part of the file (read line by line)...
    let reads = (0..24).map(|i| {
        let (api, reader) = (api.clone(), reader.clone());
        async move {
            api.invoke(&reader, "read_file", json!({"path": "big.txt", "offset": 1 + i * 20_000, "limit": 50})).await
        }
    });
    for read in futures_util::future::join_all(reads).await {
        assert_eq!(read.status, 200, "{}", read.text);
        assert_eq!(read.body["content"]["total_lines"], 620_000);
    }
    let after_reads = peak_mib(daemon.pid());
    // ...and 8 patches at once, each of which must hold the whole file: they wait for their
    // share of max_reading_mib = 64, one at a time.
    let patches = (0..8).map(|_| {
        let (api, reader) = (api.clone(), reader.clone());
        async move {
            let patch = json!({"path": "big.txt", "mode": "patch", "old": "not in the file", "new": "x"});
            api.invoke(&reader, "edit_file", patch).await
        }
    });
    for patched in futures_util::future::join_all(patches).await {
        assert_eq!(patched.status, 422, "{}", patched.text);
    }
    let after_patches = peak_mib(daemon.pid());
    eprintln!(
        "peak resident: {before} MiB before, {after_reads} MiB after the reads, {after_patches} MiB after the patches"
    );
    assert!(after_reads < before + 64, "24 reads took the peak from {before} to {after_reads} MiB");
    assert!(after_patches < before + 400, "8 whole reads took the peak from {before} to {after_patches} MiB");
}

#[tokio::test]
async fn a_workspace_holds_at_most_max_agent_bytes_trash_included() {
    let (_home, _d, api) = crate::daemon_with_config("[workspace]\nmax_agent_bytes = 10000\n").await;
    let agent = crate::agent_with(&api, "filler", &["edit_file", "remove_file"]).await;
    let write = |path: &'static str, bytes: usize| {
        let (api, agent) = (api.clone(), agent.clone());
        async move {
            let content = "x".repeat(bytes);
            api.invoke(&agent, "edit_file", json!({"path": path, "mode": "write", "content": content})).await
        }
    };
    assert_eq!(write("a.txt", 6000).await.status, 200);
    // The edge: exactly the limit is taken, one byte more is not.
    assert_eq!(write("b.txt", 4000).await.status, 200);
    let refused = write("c.txt", 1).await;
    assert_eq!(refused.error_kind(), "ResourceExhausted", "{}", refused.text);
    assert!(refused.error_message().contains("[workspace] max_agent_bytes = 10000"), "{}", refused.text);
    // Replacing a file counts the difference.
    assert_eq!(write("a.txt", 5000).await.status, 200);
    assert_eq!(write("c.txt", 1000).await.status, 200);
    // What is removed stays in the trash, and counts: removing is no way around the limit.
    assert_eq!(api.invoke(&agent, "remove_file", json!({"path": "b.txt"})).await.status, 200);
    assert_eq!(write("d.txt", 1).await.error_kind(), "ResourceExhausted");
}

#[tokio::test]
async fn the_memory_extractors_model_calls_are_metered_against_the_agent() {
    let config =
        "[proactive_memory]\nextraction_provider = \"fake\"\nextraction_model = \"extractor\"\nauto_memorize = true\n";
    let (_home, _d, api, llm) = crate::daemon_with_llm("openai", config).await;
    let id = crate::agent_from(&api, json!({"name": "rememberer", "model": "m", "tools": ["memory_semantic.*"]})).await;
    llm.set_usage(100, 0, 20);
    let facts = json!({"facts": [{"content": "Maya Chen prefers oat milk in her coffee.", "category": "preference"}]});
    llm.push(Scripted::text(&facts.to_string()));
    let added = api.invoke(&id, "memory_semantic_add", json!({"content": "Maya likes oat milk"})).await;
    assert_eq!(added.status, 200, "{}", added.text);
    // A turn, then the auto-memorize extraction after it: two more calls.
    llm.push(Scripted::text("Noted.")).push(Scripted::text(&json!({"facts": []}).to_string()));
    assert_eq!(
        api.post(&format!("/api/agents/{id}/messages"), json!({"message": "I live in Lyon."})).await.status,
        200
    );
    let line = || async {
        let usage = api.get("/api/usage?group=agent").await.body;
        usage.as_array().unwrap().iter().find(|l| l["key"] == id.as_str()).cloned().unwrap_or(Value::Null)
    };
    let metered = eventually(Duration::from_secs(10), || async { line().await["calls"] == 3 }).await;
    assert!(metered, "the extractor's calls are in the agent's usage: {}", line().await);
    let line = line().await;
    assert_eq!((line["input_tokens"].as_u64(), line["output_tokens"].as_u64()), (Some(300), Some(60)), "{line}");
    assert_eq!(llm.requests().len(), 3);
}
