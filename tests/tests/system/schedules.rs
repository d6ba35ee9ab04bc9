//! Schedules on the real daemon: the tools through the pipeline, a real fire through the fake
//! provider, REST pause/resume, restart persistence and the three deletion paths.
//! (Fires on a controllable clock, and missed fires, are in `schedule_clock.rs`.)

use std::time::Duration;

use kennel_tests::{Api, csrf_in, eventually};
use serde_json::{Value, json};

use crate::{agent_from, daemon, daemon_with_llm};

async fn schedule(api: &Api, id: &str) -> Value {
    let r = api.get(&format!("/api/schedules/{id}")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

fn id_of(reply: &kennel_tests::Reply) -> String {
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.body["content"]["id"].as_str().expect("schedule id").to_string()
}

#[tokio::test]
async fn agents_create_list_pause_and_resume_only_their_own_schedules() {
    let (_home, _d, api) = daemon().await;
    let alice = agent_from(&api, json!({"name": "alice", "tools": ["schedule.*"]})).await;
    let bob = agent_from(&api, json!({"name": "bob", "tools": ["schedule.*"]})).await;

    let once = id_of(&api.invoke(&alice, "schedule_create", json!({"when": "+1h", "prompt": "stretch"})).await);
    let cron = api
        .invoke(
            &alice,
            "cron_create",
            json!({"expression": "0 9 * * mon-fri", "prompt": "standup notes", "timezone": "Europe/Berlin"}),
        )
        .await;
    let cron_id = id_of(&cron);
    assert_eq!(cron.body["content"]["state"], "active");
    assert_eq!(cron.body["content"]["origin"], "runtime");
    let next = cron.body["content"]["next_fire"].as_str().unwrap();
    assert!(next.ends_with(":00:00.000Z") && (next.contains("T07:") || next.contains("T08:")), "09:00 Berlin: {next}");

    // Bad input: a clear InvalidArguments naming the field, and nothing stored.
    for (tool, args, field, words) in [
        ("schedule_create", json!({"when": "2020-01-01T00:00:00Z", "prompt": "p"}), "when", "in the past"),
        ("schedule_create", json!({"when": "+15x", "prompt": "p"}), "when", "units"),
        ("cron_create", json!({"expression": "0 */5 * * * *", "prompt": "p"}), "expression", "no seconds"),
        ("cron_create", json!({"expression": "61 * * * *", "prompt": "p"}), "expression", "minute field"),
        ("cron_create", json!({"expression": "* * * * *", "prompt": "p", "timezone": "Mars/Base"}), "timezone", "IANA"),
        ("cron_create", json!({"expression": "* * * * *", "prompt": " "}), "prompt", "prompt"),
    ] {
        let r = api.invoke(&alice, tool, args).await;
        assert_eq!(r.error_kind(), "InvalidArguments", "{tool}: {}", r.text);
        assert!(r.text.contains(field) && r.error_message().contains(words), "{tool}: {}", r.text);
    }
    assert_eq!(api.get("/api/schedules").await.body.as_array().unwrap().len(), 2);

    let listed = api.invoke(&alice, "schedule_list", json!({})).await;
    let ids: Vec<&str> =
        listed.body["content"]["schedules"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [once.as_str()], "schedule_list shows one-shot schedules");
    let crons = api.invoke(&alice, "cron_list", json!({})).await;
    assert_eq!(crons.body["content"]["cron_jobs"][0]["id"], cron_id.as_str());
    assert_eq!(api.invoke(&bob, "cron_list", json!({})).await.body["content"]["cron_jobs"], json!([]));

    // Someone else's id reads as not found, and changes nothing.
    for (tool, args) in [
        ("schedule_delete", json!({"schedule_id": once})),
        ("schedule_resume", json!({"schedule_id": once})),
        ("cron_cancel", json!({"cron_id": cron_id})),
        ("cron_enable", json!({"cron_id": cron_id})),
    ] {
        let r = api.invoke(&bob, tool, args).await;
        assert_eq!(r.error_kind(), "NotFound", "{tool}: {}", r.text);
    }
    assert_eq!(schedule(&api, &once).await["schedule"]["state"], "active");
    // The wrong family's tool does not reach it either.
    let r = api.invoke(&alice, "schedule_delete", json!({"schedule_id": cron_id})).await;
    assert_eq!(r.error_kind(), "NotFound");

    // "Delete" pauses: the configuration is kept, and resume brings it back.
    let paused = api.invoke(&alice, "schedule_delete", json!({"schedule_id": once})).await;
    assert_eq!(paused.body["content"]["paused"]["state"], "paused", "{}", paused.text);
    assert!(paused.body["content"]["note"].as_str().unwrap().contains("not deleted"));
    let kept = schedule(&api, &once).await;
    assert_eq!(kept["schedule"]["state"], "paused");
    assert_eq!(kept["schedule"]["prompt"], "stretch");
    assert!(kept["schedule"]["next_fire"].is_null());
    let resumed = api.invoke(&alice, "schedule_resume", json!({"schedule_id": once})).await;
    assert_eq!(resumed.body["content"]["state"], "active");
    assert!(resumed.body["content"]["next_fire"].is_string());

    let cancelled = api.invoke(&alice, "cron_cancel", json!({"cron_id": cron_id})).await;
    assert_eq!(cancelled.body["content"]["paused"]["state"], "paused");
    let enabled = api.invoke(&alice, "cron_enable", json!({"cron_id": cron_id})).await;
    assert_eq!(enabled.body["content"]["state"], "active");
    assert_eq!(enabled.body["content"]["next_fire"].as_str(), Some(next), "re-enabled: the same next match");

    // Without the grant, the gate refuses before anything runs.
    let outsider = agent_from(&api, json!({"name": "outsider", "tools": ["system_time"]})).await;
    let r = api.invoke(&outsider, "cron_create", json!({"expression": "* * * * *", "prompt": "p"})).await;
    assert_eq!(r.error_kind(), "Forbidden");
}

#[tokio::test]
async fn manifest_cron_jobs_are_in_the_same_store_and_only_operators_switch_them() {
    let (_home, _d, api) = daemon().await;
    let reporter = agent_from(
        &api,
        json!({"name": "reporter", "tools": ["schedule.*"],
               "cron": [{"schedule": "30 6 * * *", "prompt": "morning report", "timezone": "Asia/Tokyo"}]}),
    )
    .await;
    let listed = api.get("/api/schedules?agent=reporter").await;
    let job = &listed.body[0];
    assert_eq!(job["origin"], "manifest", "{}", listed.text);
    assert_eq!(job["agent"], "reporter");
    assert_eq!(job["expression"], "30 6 * * *");
    assert_eq!(job["created_by"], "type:reporter");
    let id = job["id"].as_str().unwrap();
    let mine = api.invoke(&reporter, "cron_list", json!({})).await;
    assert_eq!(mine.body["content"]["cron_jobs"][0]["id"], id);
    let r = api.invoke(&reporter, "cron_cancel", json!({"cron_id": id})).await;
    assert_eq!(r.error_kind(), "Forbidden", "{}", r.text);
    assert!(r.error_message().contains("operator"));

    let paused = api.post(&format!("/api/schedules/{id}/pause"), json!({})).await;
    assert_eq!(paused.body["state"], "paused", "{}", paused.text);
    let resumed = api.post(&format!("/api/schedules/{id}/resume"), json!({})).await;
    assert_eq!(resumed.body["state"], "active");
    assert_eq!(api.post("/api/schedules/nope/pause", json!({})).await.status, 404);

    // A manifest with a bad [[cron]] is refused with the field named.
    let bad =
        api.post("/api/templates", json!({"name": "bad", "cron": [{"schedule": "* * * * * *", "prompt": "p"}]})).await;
    assert_eq!(bad.status, 422);
    assert!(bad.text.contains("cron[0].schedule") && bad.text.contains("6 fields"), "{}", bad.text);
}

#[tokio::test]
async fn a_fire_runs_a_headless_turn_and_is_recorded_with_outcome_and_duration() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    llm.set_fallback(kennel_tests::fake_llm::Scripted::text("The oven is off."));
    let cook = agent_from(&api, json!({"name": "cook", "model": "m", "tools": ["schedule.*"]})).await;
    let id = id_of(&api.invoke(&cook, "schedule_create", json!({"when": "+1s", "prompt": "check the oven"})).await);

    let fired = eventually(Duration::from_secs(10), || async {
        schedule(&api, &id).await["fires"][0]["outcome"].as_str().is_some_and(|o| o != "running")
    })
    .await;
    assert!(fired, "the schedule fired within 10 s");
    let detail = schedule(&api, &id).await;
    let fire = &detail["fires"][0];
    assert_eq!(fire["outcome"], "ok", "{detail}");
    assert_eq!(fire["detail"], "The oven is off.");
    assert_eq!(fire["missed_slots"], 0);
    assert!(fire["duration_ms"].as_i64().is_some());
    assert_eq!(detail["schedule"]["state"], "done");
    assert_eq!(detail["schedule"]["last_fire"]["id"], fire["id"]);
    let asked = llm.requests().iter().any(|r| r.body.to_string().contains("check the oven"));
    assert!(asked, "the model was given the prompt");
    // The fire points at the session the turn ran in.
    let session = fire["session_id"].as_str().unwrap();
    let sessions = api.get(&format!("/api/agents/{cook}/sessions")).await;
    assert!(sessions.text.contains(session), "{}", sessions.text);
    let short = &id.replace('-', "")[24..];
    assert!(sessions.text.contains(&format!("schedule {short}")), "the session says which schedule: {}", sessions.text);
    // A fired one-shot schedule cannot be resumed.
    let r = api.invoke(&cook, "schedule_resume", json!({"schedule_id": id})).await;
    assert_eq!(r.error_kind(), "Conflict");
}

/// Issue 47: "run now" fires a schedule once outside its times, from the API and the
/// dashboard, recorded in its history; a paused one stays paused, a stopped agent's is refused.
#[tokio::test]
async fn run_now_fires_a_schedule_once_and_leaves_its_state_and_times_alone() {
    let (_home, d, api, llm) = daemon_with_llm("openai", "").await;
    llm.set_fallback(kennel_tests::fake_llm::Scripted::text("Watered."));
    let gardener = agent_from(&api, json!({"name": "gardener", "model": "m", "tools": ["schedule.*"]})).await;
    let cron = id_of(
        &api.invoke(&gardener, "cron_create", json!({"expression": "0 6 1 1 *", "prompt": "water the plants"})).await,
    );
    let next = schedule(&api, &cron).await["schedule"]["next_fire"].clone();
    let ran = api.post(&format!("/api/schedules/{cron}/run"), json!({})).await;
    assert_eq!(ran.status, 202, "{}", ran.text);
    let fire_id = ran.body["fire_id"].as_i64().expect("the fire's id");
    let finished = eventually(Duration::from_secs(10), || async {
        schedule(&api, &cron).await["fires"][0]["outcome"].as_str().is_some_and(|o| o != "running")
    })
    .await;
    let detail = schedule(&api, &cron).await;
    assert!(finished, "{detail}");
    assert_eq!(
        (detail["fires"][0]["id"].as_i64(), detail["fires"][0]["outcome"].as_str()),
        (Some(fire_id), Some("ok"))
    );
    assert_eq!(detail["fires"][0]["detail"], "Watered.");
    assert_eq!(
        (detail["schedule"]["state"].as_str(), &detail["schedule"]["next_fire"]),
        (Some("active"), &next),
        "{detail}"
    );

    // Paused, it runs from the dashboard's button and stays paused.
    api.post(&format!("/api/schedules/{cron}/pause"), json!({})).await;
    let b = d.browser();
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);
    let page = b.get(&format!("/schedules/{cron}")).await.text;
    assert!(page.contains(&format!("action=\"/schedules/{cron}/run\"")), "{page}");
    let clicked = b.submit(&format!("/schedules/{cron}"), &format!("/schedules/{cron}/run"), &[]).await;
    assert_eq!((clicked.status, clicked.header("location")), (303, Some(format!("/schedules/{cron}").as_str())));
    let twice = eventually(Duration::from_secs(10), || async {
        let fires = schedule(&api, &cron).await["fires"].clone();
        fires.as_array().is_some_and(|f| f.len() == 2) && fires[0]["outcome"] == "ok"
    })
    .await;
    let detail = schedule(&api, &cron).await;
    assert!(twice && detail["schedule"]["state"] == "paused", "{detail}");

    // One at a time: while its fire runs, another "run now" is refused.
    llm.set_fallback(kennel_tests::fake_llm::Scripted::SlowText {
        text: "one two three four".into(),
        piece_millis: 400,
    });
    assert_eq!(api.post(&format!("/api/schedules/{cron}/run"), json!({})).await.status, 202);
    let again = api.post(&format!("/api/schedules/{cron}/run"), json!({})).await;
    assert_eq!(again.status, 409, "{}", again.text);
    assert!(again.text.contains("is running now"), "{}", again.text);
    let ended = eventually(Duration::from_secs(10), || async {
        schedule(&api, &cron).await["fires"][0]["outcome"].as_str().is_some_and(|o| o != "running")
    })
    .await;
    assert!(ended, "{}", schedule(&api, &cron).await);

    // Refused: a stopped agent's schedule, and one that does not exist.
    api.post(&format!("/api/agents/{gardener}/stop"), json!({})).await;
    let refused = api.post(&format!("/api/schedules/{cron}/run"), json!({})).await;
    assert_eq!(refused.status, 409, "{}", refused.text);
    assert!(refused.text.contains("agent `gardener` is stopped"), "{}", refused.text);
    assert_eq!(schedule(&api, &cron).await["fires"].as_array().map(Vec::len), Some(3), "nothing recorded");
    assert_eq!(api.post("/api/schedules/00000000/run", json!({})).await.status, 404);
    let logged = api.get("/api/audit/actions?action=schedule.run").await;
    assert_eq!(logged.body.as_array().map(Vec::len), Some(6), "{}", logged.text);
}

#[tokio::test]
async fn stopping_an_agent_pauses_its_schedules_and_the_cli_never_fires_them() {
    let home = kennel_tests::Home::new();
    let token = home.token("ops").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    let sleeper = agent_from(&api, json!({"name": "sleeper", "tools": ["schedule.*"]})).await;
    let once = id_of(&api.invoke(&sleeper, "schedule_create", json!({"when": "+2s", "prompt": "wake up"})).await);
    let cron = id_of(&api.invoke(&sleeper, "cron_create", json!({"expression": "* * * * *", "prompt": "tick"})).await);
    api.post(&format!("/api/agents/{sleeper}/stop"), json!({})).await;
    for id in [&once, &cron] {
        let s = schedule(&api, id).await;
        assert_eq!(s["schedule"]["state"], "paused", "kept, paused: {s}");
    }
    // A CLI command on the same home while the daemon runs: it must not run a scheduler.
    home.cli_ok(&["token", "list"]).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let paused = schedule(&api, &once).await;
    assert_eq!(paused["fires"], json!([]), "a paused schedule does not fire: {paused}");
    let resumed = api.post(&format!("/api/schedules/{once}/resume"), json!({})).await;
    assert_eq!(resumed.body["state"], "active", "{}", resumed.text);
    let skipped = eventually(Duration::from_secs(10), || async {
        schedule(&api, &once).await["fires"][0]["outcome"] == "skipped"
    })
    .await;
    let detail = schedule(&api, &once).await;
    assert!(skipped, "resumed for a stopped agent, it fires and is recorded as skipped: {detail}");
    assert!(detail["fires"][0]["detail"].as_str().unwrap_or_default().contains("stopped"), "{detail}");
    assert_eq!(detail["schedule"]["state"], "done", "{detail}");
}

#[tokio::test]
async fn schedules_and_their_states_survive_a_restart() {
    let home = kennel_tests::Home::new();
    let token = home.token("ops").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    let agent = agent_from(&api, json!({"name": "keeper", "tools": ["schedule.*"]})).await;
    let once = id_of(&api.invoke(&agent, "schedule_create", json!({"when": "+2h", "prompt": "later"})).await);
    let cron = id_of(&api.invoke(&agent, "cron_create", json!({"expression": "*/10 * * * *", "prompt": "poll"})).await);
    api.invoke(&agent, "cron_cancel", json!({"cron_id": cron})).await;
    let before = api.get("/api/schedules").await.body;
    assert_eq!(before.as_array().unwrap().len(), 2);

    let (code, stderr) = daemon.stop().await;
    assert_eq!(code, Some(0), "{stderr}");
    let daemon = home.start().await;
    let api = daemon.api(&token);
    assert_eq!(api.get("/api/schedules").await.body, before);
    assert_eq!(schedule(&api, &once).await["schedule"]["state"], "active");
    assert_eq!(schedule(&api, &cron).await["schedule"]["state"], "paused");
}

#[tokio::test]
async fn permanent_deletion_is_human_only() {
    let (_home, d, api) = daemon().await;
    let agent = agent_from(&api, json!({"name": "owner", "tools": ["*"]})).await;
    let id = id_of(&api.invoke(&agent, "cron_create", json!({"expression": "0 * * * *", "prompt": "hourly"})).await);

    // 1. An API token: refused, and the schedule is still there.
    let refused = api.delete(&format!("/api/schedules/{id}")).await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert!(refused.error_message().contains("human-only"));
    assert_eq!(schedule(&api, &id).await["schedule"]["state"], "active");

    // 2. No tool: an agent granted every tool has none that deletes; the pausing ones keep it.
    let tools = api.get(&format!("/api/agents/{agent}/tools")).await;
    let names: Vec<String> =
        tools.body.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().into()).collect();
    let schedule_tools: Vec<&str> =
        names.iter().map(String::as_str).filter(|n| n.starts_with("schedule_") || n.starts_with("cron_")).collect();
    assert_eq!(schedule_tools.len(), 8, "{schedule_tools:?}");
    api.invoke(&agent, "cron_cancel", json!({"cron_id": id})).await;
    assert_eq!(schedule(&api, &id).await["schedule"]["state"], "paused", "cron_cancel pauses");
    let r = api.invoke(&agent, "schedule_delete", json!({"schedule_id": id})).await;
    assert_eq!(r.error_kind(), "NotFound", "schedule_delete does not reach cron jobs");
    assert_eq!(api.get("/api/schedules").await.body.as_array().unwrap().len(), 1);

    // 3. The dashboard: an operator's session, the CSRF token and the typed short id.
    let b = d.browser();
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);
    let short = &id.replace('-', "")[24..];
    let list = b.get("/schedules").await;
    assert!(list.text.contains(short) && list.text.contains("hourly"), "{}", list.text);
    let confirm = b.get(&format!("/schedules/{id}/delete")).await;
    assert_eq!(confirm.status, 200);
    assert!(confirm.text.contains(&format!("Type {short} to confirm")) && confirm.text.contains("0 * * * *"));
    let csrf = csrf_in(&confirm.text).unwrap();
    let action = format!("/schedules/{id}/delete");

    let no_csrf = b.post(&action, &[("confirm", short)]).await;
    assert_eq!(no_csrf.status, 403);
    let mistyped = b.post(&action, &[("csrf", &csrf), ("confirm", "hourly")]).await;
    assert_eq!(mistyped.status, 422);
    assert!(mistyped.text.contains(&format!("type {short}")), "{}", mistyped.text);
    let anonymous = d.browser().post(&action, &[("csrf", &csrf), ("confirm", short)]).await;
    assert_eq!(anonymous.status, 403, "no session, no deletion");
    assert_eq!(schedule(&api, &id).await["schedule"]["id"], id.as_str(), "still there");

    let deleted = b.post(&action, &[("csrf", &csrf), ("confirm", short)]).await;
    assert_eq!(deleted.status, 303, "{}", deleted.text);
    assert_eq!(api.get(&format!("/api/schedules/{id}")).await.status, 404);
    // The operator acted, not a tool: the deletion is an operator action, and no tool call
    // (it was once audited as the agent calling `schedule_delete_permanently`).
    let logged = api.get("/api/audit/actions?action=schedule.delete").await;
    let record = &logged.body[0];
    let by_ada = (record["actor"].as_str(), record["subject"].as_str(), record["outcome"].as_str());
    assert_eq!(by_ada, (Some("operator:ada"), Some(id.as_str()), Some("ok")), "{}", logged.text);
    let calls = api.get("/api/audit?tool=schedule_delete_permanently").await;
    assert_eq!(calls.body.as_array().map(Vec::len), Some(0), "{}", calls.text);
}

#[tokio::test]
async fn a_one_shot_schedule_due_while_the_daemon_was_down_fires_once_at_start() {
    let llm = kennel_tests::fake_llm::FakeLlm::start().await;
    llm.set_fallback(kennel_tests::fake_llm::Scripted::text("Better late than never."));
    let home = kennel_tests::Home::with_config(&llm.provider_config("fake", "openai"));
    let token = home.token("ops").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    let agent = agent_from(&api, json!({"name": "napper", "model": "m", "tools": ["schedule.*"]})).await;
    let id = id_of(&api.invoke(&agent, "schedule_create", json!({"when": "+3s", "prompt": "wake me"})).await);
    let (code, stderr) = daemon.stop().await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(llm.requests().is_empty(), "stopped before its time");
    tokio::time::sleep(Duration::from_secs(4)).await;

    let daemon = home.start().await;
    let api = daemon.api(&token);
    let fired =
        eventually(Duration::from_secs(10), || async { schedule(&api, &id).await["fires"][0]["outcome"] == "ok" })
            .await;
    let detail = schedule(&api, &id).await;
    assert!(fired, "{detail}");
    assert_eq!(detail["fires"].as_array().unwrap().len(), 1);
    assert_eq!(detail["fires"][0]["missed_slots"], 1, "recorded as missed while down");
    assert_eq!(detail["schedule"]["state"], "done");
}

#[tokio::test]
async fn the_manager_filters_by_agent_and_an_agents_page_lists_its_schedules() {
    let (_home, d, api) = daemon().await;
    let ann = agent_from(&api, json!({"name": "ann", "tools": ["schedule.*"]})).await;
    let ben = agent_from(&api, json!({"name": "ben", "tools": ["schedule.*"]})).await;
    api.invoke(&ann, "cron_create", json!({"expression": "15 * * * *", "prompt": "ann's hourly"})).await;
    api.invoke(&ben, "schedule_create", json!({"when": "+3h", "prompt": "ben's reminder"})).await;
    let b = d.browser();
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);

    let all = b.get("/schedules").await;
    assert!(all.text.contains("ann&#x27;s hourly") || all.text.contains("ann's hourly"), "{}", all.text);
    assert!(all.text.contains("ben&#x27;s reminder") || all.text.contains("ben's reminder"));
    let anns = b.get("/schedules?agent=ann").await;
    assert!(anns.text.contains("<code>15 * * * *</code>"), "{}", anns.text);
    assert!(!anns.text.contains("reminder"), "only ann's");
    assert_eq!(b.get("/schedules?agent=nobody").await.status, 404);

    let page = b.get(&format!("/agents/{ann}")).await;
    assert!(page.text.contains("<code>15 * * * *</code>") && page.text.contains("/schedules?agent="), "{}", page.text);
}

/// Cron validation is bounded and runs off the daemon's async workers. `, * * * *` once took
/// ~4 s to refuse in a release build (two minutes in a debug one) while croner searched to the
/// year 5000, on a worker thread: four at once made /healthz wait 8 s. Now a burst of such
/// expressions is settled at once and /healthz answers throughout.
#[tokio::test]
async fn slow_cron_expressions_are_settled_at_once_and_health_stays_responsive() {
    let (_home, daemon, api) = daemon().await;
    let agent = agent_from(&api, json!({"name": "clockwork", "tools": ["schedule.*"]})).await;
    let corpus: [&str; 5] = [", * * * *", "0 0 30 2 *", "0 0 31 2,4,6,9,11 *", "0 0 30W 2 *", "1,,2 * * * *"];
    let mut creates = tokio::task::JoinSet::new();
    for &expression in corpus.iter().cycle().take(12) {
        let (api, agent) = (api.clone(), agent.clone());
        creates.spawn(async move {
            let reply = api.invoke(&agent, "cron_create", json!({"expression": expression, "prompt": "p"})).await;
            (expression, reply)
        });
    }
    let health = daemon.anonymous();
    let mut slowest = Duration::ZERO;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !creates.is_empty() && tokio::time::Instant::now() < deadline {
        let started = tokio::time::Instant::now();
        let reply = tokio::time::timeout(Duration::from_secs(5), health.get("/healthz")).await;
        slowest = slowest.max(started.elapsed());
        assert!(reply.is_ok_and(|r| r.status == 200), "/healthz did not answer within 5 s");
        while let Some(done) = creates.try_join_next() {
            let (expression, reply) = done.unwrap();
            assert_eq!(reply.error_kind(), "InvalidArguments", "{expression}: {}", reply.text);
            assert!(reply.text.contains("expression"), "{expression}: {}", reply.text);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(creates.is_empty(), "{} cron_create calls still running after 20 s", creates.len());
    assert!(slowest < Duration::from_millis(500), "/healthz took {slowest:?} beside the cron_create calls");
}

/// Malformed cron text is refused with the field named, through the tool and in a manifest;
/// the standard nicknames are taken, `@reboot` is refused with the list of what is.
#[tokio::test]
async fn malformed_cron_text_is_refused_naming_the_field() {
    let (_home, _d, api) = daemon().await;
    let agent = agent_from(&api, json!({"name": "strict", "tools": ["schedule.*"]})).await;
    for (expression, words) in [
        ("0 0 1, * *", "day-of-month field: empty list item"),
        ("1,,2 * * * *", "minute field: empty list item"),
        ("0\u{a0}0 * * *", "non-breaking space"),
        ("0 9 * * monday", "sun mon tue wed thu fri sat"),
        ("@reboot", "@yearly @annually @monthly @weekly @daily @midnight @hourly"),
    ] {
        let r = api.invoke(&agent, "cron_create", json!({"expression": expression, "prompt": "p"})).await;
        assert_eq!(r.error_kind(), "InvalidArguments", "{expression}: {}", r.text);
        assert!(r.error_message().contains(words), "{expression}: {}", r.text);
    }
    assert_eq!(api.get("/api/schedules").await.body, json!([]), "nothing stored");
    let midnight = api.invoke(&agent, "cron_create", json!({"expression": "@midnight", "prompt": "p"})).await;
    assert!(midnight.body["content"]["next_fire"].as_str().unwrap().ends_with("T00:00:00.000Z"), "{}", midnight.text);

    let bad =
        api.post("/api/templates", json!({"name": "bad", "cron": [{"schedule": "0 0 1, * *", "prompt": "p"}]})).await;
    assert_eq!(bad.status, 422);
    assert!(bad.text.contains("cron[0].schedule") && bad.text.contains("empty list item"), "{}", bad.text);
}
