//! Several daemons on one PostgreSQL database (issue 27): claims from three daemons at once,
//! cron jobs fired exactly once across three kernels on one test clock, an agent's turns
//! moving to another daemon when its holder is killed with `kill -9` (a fire it was running
//! left `interrupted`), and an agent-type change on one daemon used by a turn on another.
//! Needs a PostgreSQL server (`KENNEL_TEST_DATABASE_URL`; `./scripts/test` starts one).
//! They run in the suite's first pass only: the second pass (`KENNEL_TEST_BACKEND=postgres`)
//! would run them again unchanged.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use kennel_kernel::Kernel;
use kennel_kernel::agent::{ManifestInput, SpawnRequest};
use kennel_kernel::ask::Questions;
use kennel_kernel::canvas::Canvases;
use kennel_kernel::clock::{Clock, ManualClock};
use kennel_kernel::config::Config;
use kennel_kernel::tool::{CallContext, Caller};
use kennel_kernel::turn::{TurnEnd, TurnRequest};
use kennel_tests::fake_llm::{FakeLlm, Scripted};
use kennel_tests::postgres::{Database, on_postgres};
use kennel_tests::{Api, Daemon, Home, eventually};
use serde_json::json;

/// A database for a cluster test, in the first pass only.
fn cluster_database(test: &str) -> Option<Database> {
    if on_postgres() {
        eprintln!("{test}: runs in the first pass (its daemons are on PostgreSQL either way)");
        return None;
    }
    Database::empty(test)
}

/// Homes sharing `database`, each with `config`, a token valid on all of them, and their
/// daemons started.
async fn start_cluster(database: &Database, n: usize, config: &str) -> (Vec<Home>, Vec<Daemon>, String) {
    let homes: Vec<Home> = (0..n).map(|_| Home::sharing(&database.url, config)).collect();
    let token = homes[0].token("tests").await;
    let mut daemons = Vec::new();
    for home in &homes {
        daemons.push(home.start().await);
    }
    (homes, daemons, token)
}

/// The daemon id (`GET /api/cluster`'s) holding `lease`, if any.
async fn holder(api: &Api, lease: &str) -> Option<String> {
    let cluster = api.get("/api/cluster").await;
    assert_eq!(cluster.status, 200, "{}", cluster.text);
    cluster.body["daemons"].as_array()?.iter().find_map(|d| {
        d["leases"].as_array()?.iter().any(|l| l["name"] == lease).then(|| d["id"].as_str().unwrap().to_string())
    })
}

// 48 claimers' requests and answers: on the two cores, not one thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_daemons_claim_6_000_tasks_without_a_duplicate_or_a_loss() {
    // At 100,000 tasks this took three minutes of the test run; the load itself (a board of
    // 400,000, every answer a different task) is scripts/bench-cluster's `claims`.
    const TASKS: usize = 6_000;
    const CLAIMERS_PER_DAEMON: usize = 16;
    let Some(database) = cluster_database("three_daemons_claim_6_000_tasks_without_a_duplicate_or_a_loss") else {
        return;
    };
    let (_homes, daemons, token) = start_cluster(&database, 3, "").await;
    let first = daemons[0].api(&token);
    let made = first.post("/api/templates", json!({"name": "worker", "tools": ["tasks.*"]})).await;
    assert_eq!(made.status, 201, "{}", made.text);
    let mut workers = Vec::new();
    for i in 0..daemons.len() {
        let a = first.post("/api/agents", json!({"template": "worker", "name": format!("w{i}")})).await;
        assert_eq!(a.status, 201, "{}", a.text);
        workers.push(a.body["id"].as_str().unwrap().to_string());
    }
    // The board filled in one statement (posting thousands through the API is not what this
    // tests); ids are UUIDs as the store writes them.
    database.scalar(&format!(
        "INSERT INTO tasks (id, title, body, priority, status, posted_by, created_at, updated_at)
         SELECT md5(i::text)::uuid::text, 'task ' || i, 'body', i % 10, 'pending', 'tests',
                '2026-12-03T00:00:00.000Z', '2026-12-03T00:00:00.000Z'
         FROM generate_series(1, {TASKS}) AS i"
    ));
    let started = Instant::now();
    let mut claimers = Vec::new();
    for (daemon, worker) in daemons.iter().zip(&workers) {
        for _ in 0..CLAIMERS_PER_DAEMON {
            let (api, worker) = (daemon.api(&token), worker.clone());
            claimers.push(tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let r = api.invoke(&worker, "task_claim", json!({})).await;
                    assert_eq!(r.status, 200, "{}", r.text);
                    match r.body["content"]["claimed"]["id"].as_str() {
                        Some(id) => mine.push(id.to_string()),
                        None => return mine,
                    }
                }
            }));
        }
    }
    let mut all = Vec::new();
    let mut per_daemon = Vec::new();
    for (i, c) in claimers.into_iter().enumerate() {
        let mine = c.await.unwrap();
        if i % CLAIMERS_PER_DAEMON == 0 {
            per_daemon.push(0);
        }
        *per_daemon.last_mut().unwrap() += mine.len();
        all.extend(mine);
    }
    eprintln!("{TASKS} claims in {:?}, by daemon {per_daemon:?}", started.elapsed());
    let unique: HashSet<_> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "no task claimed twice");
    assert_eq!(all.len(), TASKS, "none lost");
    assert!(per_daemon.iter().all(|n| *n > 0), "every daemon claimed some: {per_daemon:?}");
    assert_eq!(database.scalar("SELECT count(*) FROM tasks WHERE status = 'claimed'"), TASKS.to_string());
}

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// A kernel of the cluster in this process, on the shared test clock, started as a daemon.
async fn open_member(home: &Path, database: &Database, llm: &FakeLlm, clock: &Arc<ManualClock>) -> Kernel {
    let config = format!(
        "{}\n[database]\nurl = \"{}\"\n[cluster]\nlease_ms = 3000\n[schedules]\nmax_concurrent_fires = 64\n",
        llm.provider_config("fake", "openai"),
        database.url
    );
    let config = Config::parse(Path::new("config.toml"), &config).unwrap();
    let kernel = Kernel::open_with_clock(home, config, Clock::Manual(clock.clone())).await.unwrap();
    kernel.start_background("in-process").await.unwrap();
    kernel
}

/// `n` kernels of one cluster in this process, each in a home of its own (kept while the
/// homes are).
async fn open_members(
    n: usize,
    database: &Database,
    llm: &FakeLlm,
    clock: &Arc<ManualClock>,
) -> (Vec<tempfile::TempDir>, Vec<Kernel>) {
    let homes: Vec<tempfile::TempDir> = (0..n).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut kernels = Vec::new();
    for home in &homes {
        kernels.push(open_member(home.path(), database, llm, clock).await);
    }
    (homes, kernels)
}

// Three kernels and their fires in this process: on the two cores, not one thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_hundred_cron_jobs_fire_exactly_once_across_three_kernels_at_each_due_instant() {
    // More than one scheduler batch (500), so the kernels share the fires; at 1,000 jobs this
    // took over a minute of the test run. 10,000 on three daemons, with their lateness, are
    // scripts/bench-cluster's `cron`.
    const JOBS: usize = 600;
    let Some(database) =
        cluster_database("six_hundred_cron_jobs_fire_exactly_once_across_three_kernels_at_each_due_instant")
    else {
        return;
    };
    let llm = FakeLlm::start().await;
    llm.set_fallback(Scripted::text("tick"));
    let clock = ManualClock::starting_at(at("2031-05-01T08:00:30Z"));
    let (_homes, kernels) = open_members(3, &database, &llm, &clock).await;
    let made = Instant::now();
    // Ten agents, sixty jobs each, made on the first kernel: every minute, all due at
    // once on every kernel.
    let first = &kernels[0];
    let manifest: ManifestInput =
        kennel_kernel::error::from_value(json!({"name": "clockwork", "model": "m", "tools": ["schedule.*"]})).unwrap();
    first.agents().create_type(manifest).await.unwrap();
    for a in 0..10 {
        let agent = first
            .spawn_agent(SpawnRequest {
                agent_type: "clockwork".into(),
                name: Some(format!("c{a}")),
                ..Default::default()
            })
            .await
            .unwrap();
        for j in 0..JOBS / 10 {
            let ctx = CallContext::new(agent.clone(), Caller::Operator("test".into()));
            let args = json!({"expression": "* * * * *", "prompt": format!("job {a}-{j}")});
            first.call_tool(ctx, "cron_create", args).await.unwrap_or_else(|e| panic!("cron_create: {}", e.message));
        }
    }
    eprintln!("{JOBS} jobs made in {:?}", made.elapsed());
    for minute in ["2031-05-01T08:01:00Z", "2031-05-01T08:02:00Z", "2031-05-01T08:03:00Z"] {
        clock.set(at(minute));
        let fired = Instant::now();
        let due = minute.replace('Z', ".000Z");
        let all_done = eventually(Duration::from_secs(120), || async {
            database
                .scalar(&format!("SELECT count(*) FROM schedule_fires WHERE due_at = '{due}' AND outcome <> 'running'"))
                == JOBS.to_string()
        })
        .await;
        assert!(
            all_done,
            "every job fired and finished at {minute}: {}",
            database.scalar(&format!(
                "SELECT count(*) || ' ' || string_agg(DISTINCT outcome, ',') FROM schedule_fires WHERE due_at = '{due}'"
            ))
        );
        eprintln!("{minute}: {JOBS} fires taken and finished in {:?}", fired.elapsed());
    }
    assert_eq!(database.scalar("SELECT count(*) FROM schedule_fires"), (3 * JOBS).to_string(), "each due fire once");
    assert_eq!(
        database.scalar("SELECT count(*) FROM (SELECT DISTINCT schedule_id, due_at FROM schedule_fires) AS f"),
        (3 * JOBS).to_string(),
        "no (job, instant) fired twice"
    );
    assert_eq!(
        database.scalar("SELECT count(*) FROM schedule_fires WHERE outcome <> 'ok'"),
        "0",
        "{}",
        database.scalar("SELECT string_agg(DISTINCT outcome || ': ' || coalesce(detail, ''), '; ') FROM schedule_fires WHERE outcome <> 'ok'")
    );
    let takers: usize = database.scalar("SELECT count(DISTINCT daemon_id) FROM schedule_fires").parse().unwrap();
    assert!(takers >= 2, "the kernels shared the fires ({takers} took any)");
    eprintln!(
        "fires taken per kernel: {}",
        database.scalar(
            "SELECT string_agg(n::text, ' ') FROM (SELECT count(*) AS n FROM schedule_fires GROUP BY daemon_id) AS d"
        )
    );
    for kernel in kernels {
        kernel.close().await;
    }
}

/// The daemon of `daemons` whose cluster id is `id`.
async fn daemon_index(daemons: &[Option<Daemon>], token: &str, id: &str) -> usize {
    for (i, d) in daemons.iter().enumerate() {
        if let Some(d) = d
            && d.api(token).get("/api/cluster").await.body["this_daemon"] == id
        {
            return i;
        }
    }
    panic!("no daemon is {id}");
}

#[tokio::test]
async fn when_an_agents_daemon_is_killed_another_answers_it_and_a_fire_cut_off_is_interrupted() {
    let Some(database) =
        cluster_database("when_an_agents_daemon_is_killed_another_answers_it_and_a_fire_cut_off_is_interrupted")
    else {
        return;
    };
    let llm = FakeLlm::start().await;
    let config = format!("{}\n[cluster]\nlease_ms = 1500\n", llm.provider_config("fake", "openai"));
    let (_homes, daemons, token) = start_cluster(&database, 3, &config).await;
    let mut daemons: Vec<Option<Daemon>> = daemons.into_iter().map(Some).collect();
    let api = |i: usize, daemons: &[Option<Daemon>]| daemons[i].as_ref().unwrap().api(&token);
    let first = api(0, &daemons);
    let made =
        first.post("/api/templates", json!({"name": "steady", "model": "m", "tools": ["schedule_create"]})).await;
    assert_eq!(made.status, 201, "{}", made.text);
    let spawned = first.post("/api/agents", json!({"template": "steady"})).await;
    let agent = spawned.body["id"].as_str().unwrap().to_string();
    // The other daemons learn of a new agent when their copy reloads after the notification.
    let known = eventually(Duration::from_secs(5), || async {
        api(1, &daemons).get(&format!("/api/agents/{agent}")).await.status == 200
    })
    .await;
    assert!(known, "the second daemon knows the agent within 5 s");

    // A first exchange, asked of the second daemon: the agent's holder answers it.
    llm.push(Scripted::text("Remembered: the code word is heron."));
    let message = json!({"message": "The code word is heron."});
    let chat = api(1, &daemons).post(&format!("/api/agents/{agent}/messages"), message).await;
    assert_eq!(chat.status, 200, "{}", chat.text);
    let session = chat.body["session_id"].as_str().unwrap().to_string();
    let lease = format!("agent:{agent}");
    let owner_id = holder(&first, &lease).await.expect("the agent is held by a daemon");
    let owner = daemon_index(&daemons, &token, &owner_id).await;

    // Its holder killed outright: the next message, sent to another daemon, waits for the
    // lease to run out and is answered by whoever takes the agent, in the same session.
    daemons[owner].take().unwrap().kill().await;
    let killed = Instant::now();
    let other = (0..3).find(|i| daemons[*i].is_some()).unwrap();
    llm.push(Scripted::text("The code word was heron."));
    let question = json!({"message": "What was the code word?", "session": session});
    let answered = api(other, &daemons).post(&format!("/api/agents/{agent}/messages"), question).await;
    let failover = killed.elapsed();
    eprintln!("from kill -9 of the agent's daemon to the next answer: {failover:?}");
    assert_eq!(answered.status, 200, "{}", answered.text);
    assert_eq!(answered.body["reply"], "The code word was heron.");
    assert!(failover < Duration::from_secs(10), "answered soon after the lease ran out: {failover:?}");
    let last = llm.requests().last().unwrap().body.to_string();
    assert!(last.contains("The code word is heron."), "the session's history went with it: {last}");
    assert!(
        last.contains("another daemon runs you now"),
        "the agent is told its tabs and processes stayed behind: {last}"
    );
    let new_owner = holder(&api(other, &daemons), &lease).await.expect("the agent is held again");
    assert_ne!(new_owner, owner_id, "another daemon holds the agent");
    let cluster = api(other, &daemons).get("/api/cluster").await;
    let listed = cluster.body["daemons"].as_array().unwrap().iter().find(|d| d["id"] == owner_id.as_str()).cloned();
    let dead = listed.expect("the killed daemon is still listed");
    assert_eq!(dead["alive"], false);
    let reaped = eventually(Duration::from_secs(5), || async {
        api(other, &daemons).get("/api/cluster").await.body["daemons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["id"] == owner_id.as_str() && d["reaped_at"].is_string() && d["state"] == "died")
    })
    .await;
    assert!(reaped, "a live daemon took the killed one's work over, and the killed one shows died");
    let states: Vec<String> = api(other, &daemons).get("/api/cluster").await.body["daemons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["alive"] == true)
        .map(|d| d["state"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(!states.is_empty() && states.iter().all(|s| s == "alive"), "live daemons of a shared home: {states:?}");

    // A one-shot fire whose turn hangs at the provider, and the daemon that took the fire
    // killed: the fire ends `interrupted`, and no daemon fires it again.
    llm.push(Scripted::Delay { millis: 60_000 });
    let args = json!({"when": "+1s", "prompt": "the slow report"});
    let made = api(other, &daemons).invoke(&agent, "schedule_create", args).await;
    assert_eq!(made.status, 200, "{}", made.text);
    let requests_before = llm.requests().len();
    let in_flight = eventually(Duration::from_secs(10), || async { llm.requests().len() > requests_before }).await;
    assert!(in_flight, "the fire's turn reached the provider");
    let taker_id = database.scalar("SELECT daemon_id FROM schedule_fires");
    assert_eq!(database.scalar("SELECT outcome FROM schedule_fires"), "running");
    let taker = daemon_index(&daemons, &token, &taker_id).await;
    daemons[taker].take().unwrap().kill().await;
    let interrupted = eventually(Duration::from_secs(10), || async {
        database.scalar("SELECT outcome FROM schedule_fires") == "interrupted"
    })
    .await;
    assert!(interrupted, "the fire the killed daemon took is interrupted");
    assert_eq!(database.scalar("SELECT count(*) FROM schedule_fires"), "1", "not fired again");
}

/// Issue 48: a call parked by a headless turn outlives the daemon holding its agent. That
/// daemon is killed; the approval is decided on another, which takes the agent over, runs
/// the call once and goes on in the session.
#[tokio::test]
async fn a_parked_call_is_resumed_by_the_daemon_that_takes_its_agent_over() {
    let Some(database) = cluster_database("a_parked_call_is_resumed_by_the_daemon_that_takes_its_agent_over") else {
        return;
    };
    let llm = FakeLlm::start().await;
    let config = format!(
        "{}\n[cluster]\nlease_ms = 1500\n[[approvals.rule]]\nname = \"every task post\"\ntools = [\"task_post\"]\nwhen = \"always\"\n",
        llm.provider_config("fake", "openai")
    );
    let (homes, daemons, token) = start_cluster(&database, 2, &config).await;
    let mut daemons: Vec<Option<Daemon>> = daemons.into_iter().map(Some).collect();
    let first = daemons[0].as_ref().unwrap().api(&token);
    let made = first.post("/api/templates", json!({"name": "poster", "model": "m", "tools": ["task_post"]})).await;
    assert_eq!(made.status, 201, "{}", made.text);
    let agent = first.post("/api/agents", json!({"template": "poster"})).await.body["id"].as_str().unwrap().to_string();
    llm.push_all([Scripted::call("task_post", json!({"title": "failover", "body": ""})), Scripted::text("Posted.")]);
    let sent = first.post(&format!("/api/agents/{agent}/messages"), json!({"message": "post it"})).await;
    assert_eq!(sent.body["ended"], "parked", "{}", sent.text);
    let approval = first.get("/api/approvals").await.body[0]["id"].as_str().unwrap().to_string();

    let owner_id = holder(&first, &format!("agent:{agent}")).await.expect("the agent is held");
    let owner = daemon_index(&daemons, &token, &owner_id).await;
    daemons[owner].take().unwrap().kill().await;
    let survivor = 1 - owner;
    let api = daemons[survivor].as_ref().unwrap().api(&token);
    homes[survivor].cli_ok(&["approvals", "approve", &approval]).await;
    let resumed = eventually(Duration::from_secs(15), || async {
        api.get(&format!("/api/approvals/{approval}")).await.body["resumed_at"].is_string()
    })
    .await;
    assert!(resumed, "{}", api.get(&format!("/api/approvals/{approval}")).await.text);
    let tasks = api.get("/api/tasks").await.body;
    assert_eq!(tasks.as_array().map(Vec::len), Some(1), "the call ran once: {tasks}");
    // The approval counts as resumed once its outcome is in the session, before the turn
    // that tells the model runs: that turn's request comes after.
    let told = eventually(Duration::from_secs(10), || async {
        llm.requests().last().is_some_and(|r| r.body.to_string().contains("approved your parked call of `task_post`"))
    })
    .await;
    assert!(told, "{}", llm.requests().last().unwrap().body);
}

#[tokio::test]
async fn a_type_changed_on_one_daemon_is_used_on_another_within_a_second_and_turn_events_cross() {
    let Some(database) =
        cluster_database("a_type_changed_on_one_daemon_is_used_on_another_within_a_second_and_turn_events_cross")
    else {
        return;
    };
    let llm = FakeLlm::start().await;
    let (_homes, daemons, token) = start_cluster(&database, 2, &llm.provider_config("fake", "openai")).await;
    let (a, b) = (daemons[0].api(&token), daemons[1].api(&token));
    let made =
        a.post("/api/templates", json!({"name": "herald", "model": "m", "system_prompt": "Speak plainly."})).await;
    assert_eq!(made.status, 201, "{}", made.text);
    let changed = a
        .put("/api/templates/herald", json!({"name": "herald", "model": "m", "system_prompt": "Speak in verse."}))
        .await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    let since = Instant::now();
    let seen = eventually(Duration::from_secs(1), || async {
        b.get("/api/templates/herald").await.body["system_prompt"] == "Speak in verse."
    })
    .await;
    assert!(seen, "daemon B saw the change within a second ({:?})", since.elapsed());
    let spawned = b.post("/api/agents", json!({"template": "herald"})).await;
    assert_eq!(spawned.status, 201, "{}", spawned.text);
    let id = spawned.body["id"].as_str().unwrap();
    llm.push(Scripted::text("In verse I speak."));
    let reply = b.post(&format!("/api/agents/{id}/messages"), json!({"message": "Hello"})).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let system = llm.requests().last().unwrap().system();
    assert!(system.contains("Speak in verse."), "the turn used the changed type: {system}");

    // The agent's turns run on B (it took the agent); a stream of its events open on A
    // follows them as they happen.
    let lease = format!("agent:{id}");
    let b_id = b.get("/api/cluster").await.body["this_daemon"].as_str().unwrap().to_string();
    assert_eq!(holder(&a, &lease).await.as_deref(), Some(b_id.as_str()), "B holds the agent it ran");
    let mut events = a.request(reqwest::Method::GET, &format!("/api/agents/{id}/events")).send().await.unwrap();
    assert_eq!(events.status(), 200);
    llm.push(Scripted::text("A second verse."));
    let second = b.post(&format!("/api/agents/{id}/messages"), json!({"message": "Again"})).await;
    assert_eq!(second.status, 200, "{}", second.text);
    let mut text = String::new();
    while !text.contains("event: turn_ended") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), events.chunk()).await.expect("events arrive on A");
        text.push_str(&String::from_utf8_lossy(&chunk.unwrap().expect("stream open")));
    }
    let mut names: Vec<_> = text.lines().filter_map(|l| l.strip_prefix("event: ")).collect();
    names.dedup(); // the reply streams in pieces
    assert_eq!(names, ["turn_started", "model_call", "text_delta", "reply", "turn_ended"], "{text}");
    assert!(text.contains("A second verse."), "{text}");

    // A Stop sent to A reaches the turn B runs: B holds the agent, and A asks it.
    let session = second.body["session_id"].as_str().unwrap().to_string();
    llm.push(Scripted::SlowText { text: "verse ".repeat(80), piece_millis: 250 });
    let running = {
        let (b, id, session) = (b.clone(), id.to_string(), session.clone());
        tokio::spawn(async move {
            b.post(&format!("/api/agents/{id}/messages"), json!({"message": "A long one", "session": session})).await
        })
    };
    let streaming = eventually(Duration::from_secs(5), || async { llm.requests().len() == 3 }).await;
    assert!(streaming, "the third turn reached the model");
    let cancelled = a.post(&format!("/api/agents/{id}/sessions/{session}/cancel"), json!({})).await;
    assert_eq!((cancelled.status, &cancelled.body["cancelled"]), (200, &json!(1)), "{}", cancelled.text);
    let ended = tokio::time::timeout(Duration::from_secs(5), running).await.expect("the turn ends at once").unwrap();
    assert_eq!(ended.body["ended"], "cancelled", "{}", ended.text);
    let note = &a.get(&format!("/api/sessions/{session}")).await.body["failures"][0];
    assert_eq!(note["kind"], "Cancelled");
    assert!(note["message"].as_str().unwrap().contains("by token:tests"), "{note}");
}

#[tokio::test]
async fn a_daemon_row_with_hostile_text_comes_back_as_text_on_the_cluster_page() {
    use crate::hostile_text::{Shows, check, corpus};
    let Some(database) = cluster_database("a_daemon_row_with_hostile_text_comes_back_as_text_on_the_cluster_page")
    else {
        return;
    };
    let (_homes, daemons, token) = start_cluster(&database, 1, "").await;
    let api = daemons[0].api(&token);
    let made = api.post("/api/templates", json!({"name": "plain", "model": "m"})).await;
    assert_eq!(made.status, 201, "{}", made.text);
    // Whatever shares the database can write the daemons' table: another daemon's host,
    // address and version are stored text like any other.
    let text = corpus().replace('\'', "''");
    database.scalar(&format!(
        "INSERT INTO daemons (id, host, pid, listen, version, started_at, heartbeat_at)
         VALUES ('{text}', '{text}', 1, '{text}', '{text}', '2026-12-03T00:00:00.000Z', '2026-12-03T00:00:00.000Z')"
    ));
    database.scalar(&format!(
        "INSERT INTO leases (name, holder, acquired_at, expires_at)
         VALUES ('{text}', '{text}', '2026-12-03T00:00:00.000Z', '2026-12-03T00:00:00.000Z')"
    ));
    let b = daemons[0].browser();
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);
    check(&b, "/cluster", Shows::All).await;
}

#[tokio::test]
async fn a_stdio_mcp_server_runs_once_per_cluster_answers_every_daemon_and_moves_when_its_daemon_dies() {
    let Some(database) = cluster_database(
        "a_stdio_mcp_server_runs_once_per_cluster_answers_every_daemon_and_moves_when_its_daemon_dies",
    ) else {
        return;
    };
    let config = format!("{}[cluster]\nlease_ms = 1500\n", crate::mcp::stdio_server("everything"));
    let (homes, daemons, token) = start_cluster(&database, 3, &config).await;
    let mut daemons: Vec<Option<Daemon>> = daemons.into_iter().map(Some).collect();
    let api = |i: usize, daemons: &[Option<Daemon>]| daemons[i].as_ref().unwrap().api(&token);
    let agent = crate::agent_with(&api(0, &daemons), "user", &["mcp__everything__*", "mcp_resources"]).await;
    // One server process in the whole cluster, on the lease's holder; the others offer its
    // tools as run elsewhere.
    let settled = eventually(Duration::from_secs(30), || async {
        let mut states = Vec::new();
        for i in 0..3 {
            states.push(crate::mcp::server(&api(i, &daemons), "everything").await["state"].clone());
        }
        states.iter().filter(|s| **s == "connected").count() == 1
            && states.iter().filter(|s| **s == "elsewhere").count() == 2
    })
    .await;
    assert!(settled, "one daemon runs the server, two follow it");
    let running: Vec<i32> = homes.iter().flat_map(|h| crate::mcp::processes_in(h.path())).collect();
    assert_eq!(running.len(), 1, "one server process in the cluster: {running:?}");
    let holder_id = holder(&api(0, &daemons), "mcp:everything").await.expect("the server's lease is held");
    let runner = daemon_index(&daemons, &token, &holder_id).await;
    assert_eq!(crate::mcp::processes_in(homes[runner].path()).len(), 1, "it runs on the lease's holder");
    let follower = (runner + 1) % 3;
    let followed = crate::mcp::server(&api(follower, &daemons), "everything").await;
    assert_eq!(followed["runs_on"], holder_id.as_str(), "{followed:#}");

    // Every daemon's calls reach it: tools, and resources through `mcp_resources`.
    for i in 0..3 {
        let echoed =
            api(i, &daemons).invoke(&agent, "mcp__everything__echo", json!({"message": format!("from {i}")})).await;
        assert_eq!(echoed.status, 200, "{}", echoed.text);
        assert_eq!(echoed.body["content"], format!("Echo: from {i}"));
    }
    let bad = api(follower, &daemons).invoke(&agent, "mcp__everything__get-sum", json!({"a": "two", "b": 1})).await;
    assert_eq!((bad.status, bad.error_kind()), (422, "InvalidArguments"), "checked where it was asked: {}", bad.text);
    let resources = api(follower, &daemons).invoke(&agent, "mcp_resources", json!({"server": "everything"})).await;
    assert_eq!(resources.status, 200, "{}", resources.text);
    assert!(resources.text.contains("uri"), "the resources listed by the server: {}", resources.text);
    let still: Vec<i32> = homes.iter().flat_map(|h| crate::mcp::processes_in(h.path())).collect();
    assert_eq!(still, running, "no daemon started a server of its own to answer");

    // Its daemon killed: another takes the lease within the lease time, starts the server,
    // and the calls of the survivors reach the new one.
    daemons[runner].take().unwrap().kill().await;
    let killed = std::time::Instant::now();
    let survivor = (runner + 1) % 3;
    let moved =
        eventually(Duration::from_secs(30), || async {
            holder(&api(survivor, &daemons), "mcp:everything").await.is_some_and(|h| h != holder_id)
                && api(survivor, &daemons)
                    .invoke(&agent, "mcp__everything__echo", json!({"message": "again"}))
                    .await
                    .body["content"]
                    == "Echo: again"
        })
        .await;
    assert!(moved, "a survivor runs the server and answers");
    eprintln!("from kill -9 of the MCP server's daemon to a call answered again: {:?}", killed.elapsed());
    for i in (0..3).filter(|i| *i != runner) {
        let echoed = api(i, &daemons).invoke(&agent, "mcp__everything__echo", json!({"message": "after"})).await;
        assert_eq!(echoed.body["content"], "Echo: after", "{}", echoed.text);
    }
    let survivors: Vec<i32> =
        (0..3).filter(|i| *i != runner).flat_map(|i| crate::mcp::processes_in(homes[i].path())).collect();
    assert_eq!(survivors.len(), 1, "one server process among the survivors: {survivors:?}");
    // The killed daemon's server lost its stdin with it; whatever is left of it goes now.
    for pid in crate::mcp::processes_in(homes[runner].path()) {
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

#[tokio::test]
async fn what_another_daemon_says_its_mcp_server_offers_comes_back_as_text_on_the_mcp_page() {
    use crate::hostile_text::{Shows, check, corpus};
    let Some(database) =
        cluster_database("what_another_daemon_says_its_mcp_server_offers_comes_back_as_text_on_the_mcp_page")
    else {
        return;
    };
    // A server this daemon would run (`false` never connects) but another daemon, alive and
    // holding its lease, runs: this one follows what that daemon wrote to `mcp_offers`.
    let (_homes, daemons, token) = start_cluster(&database, 1, "[mcp.servers.x]\ncommand = \"false\"\n").await;
    let api = daemons[0].api(&token);
    let text = corpus();
    let offer = json!({
        "server_info": text,
        "offers_resources": false,
        "offers_prompts": false,
        "tools": [{"name": "mcp__x__t", "original_name": text, "renamed": true, "description": text,
                   "schema": {"type": "object"}}],
        "left_out": [text],
    });
    let (text, offer) = (text.replace('\'', "''"), offer.to_string().replace('\'', "''"));
    database.scalar(&format!(
        "INSERT INTO daemons (id, host, pid, listen, version, started_at, heartbeat_at)
         VALUES ('{text}', 'h', 1, 'l', 'v', '2026-12-03T00:00:00.000Z', '2099-01-01T00:00:00.000Z')"
    ));
    database.scalar(&format!(
        "INSERT INTO leases (name, holder, acquired_at, expires_at)
         VALUES ('mcp:x', '{text}', '2026-12-03T00:00:00.000Z', '2099-01-01T00:00:00.000Z')
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at"
    ));
    database.scalar(&format!(
        "INSERT INTO mcp_offers (server, daemon_id, offer, updated_at)
         VALUES ('x', '{text}', '{offer}', '2026-12-03T00:00:00.000Z')"
    ));
    let followed =
        eventually(Duration::from_secs(15), || async { crate::mcp::server(&api, "x").await["state"] == "elsewhere" })
            .await;
    assert!(followed, "{:#}", crate::mcp::server(&api, "x").await);
    let b = daemons[0].browser();
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);
    check(&b, "/mcp", Shows::All).await;
}

// Three kernels numbering one key at once: on the two cores, not one thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_kernels_numbering_one_session_and_one_canvas_at_once_take_every_number_once() {
    const ROUNDS: usize = 15;
    let Some(database) =
        cluster_database("three_kernels_numbering_one_session_and_one_canvas_at_once_take_every_number_once")
    else {
        return;
    };
    let llm = FakeLlm::start().await;
    let clock = ManualClock::starting_at(at("2031-05-01T08:00:00Z"));
    let (_homes, kernels) = open_members(3, &database, &llm, &clock).await;
    let manifest: ManifestInput =
        kennel_kernel::error::from_value(json!({"name": "scribe", "model": "m", "tools": []})).unwrap();
    kernels[0].agents().create_type(manifest).await.unwrap();
    let agent = kernels[0]
        .spawn_agent(SpawnRequest { agent_type: "scribe".into(), name: Some("scribe".into()), ..Default::default() })
        .await
        .unwrap();
    let session = kernels[0].sessions().create(agent.id, None).await.unwrap();

    // Each kernel appends pairs of messages to the one session and presents canvases for the
    // one agent, all at once: every append and version takes the next number under the key's
    // lock, so none is taken twice (a duplicate would fail its primary key) and none skipped.
    let writers = kernels.iter().enumerate().map(|(k, kernel)| {
        let (kernel, agent) = (kernel.clone(), agent.id);
        tokio::spawn(async move {
            for round in 0..ROUNDS {
                let pair = [
                    kennel_kernel::llm::Message::User { content: format!("k{k} r{round} a") },
                    kennel_kernel::llm::Message::User { content: format!("k{k} r{round} b") },
                ];
                kernel.sessions().append(session.id, &pair).await.expect("append");
                let html = format!("<p>k{k} r{round}</p>");
                kernel.service::<Canvases>().present(agent, &html, Some("race")).await.expect("present");
            }
        })
    });
    for writer in futures_util::future::join_all(writers).await {
        writer.expect("no writer panicked");
    }

    let messages = kernels[1].sessions().messages(session.id).await.unwrap();
    let seqs: Vec<i64> = messages.iter().map(|m| m.seq).collect();
    assert_eq!(seqs, (1..=(3 * ROUNDS * 2) as i64).collect::<Vec<_>>(), "one place per message, none skipped");
    // A pair appended together stays together: no other kernel's message lands between.
    for pair in messages.chunks(2) {
        let text = |m: &kennel_kernel::session::StoredMessage| match &m.message {
            kennel_kernel::llm::Message::User { content } => content.clone(),
            other => panic!("only user messages were appended: {other:?}"),
        };
        let (a, b) = (text(&pair[0]), text(&pair[1]));
        assert_eq!(a.strip_suffix(" a"), b.strip_suffix(" b"), "a pair split: {a} / {b}");
    }
    let versions = database.scalar(&format!(
        "SELECT count(*) || ' ' || count(DISTINCT version) || ' ' || max(version) FROM canvases WHERE agent_id = '{}'",
        agent.id
    ));
    let presented = 3 * ROUNDS;
    assert_eq!(versions, format!("{presented} {presented} {presented}"), "versions 1..={presented}, each once");
    for kernel in kernels {
        kernel.close().await;
    }
}

// Two kernels and a turn crossing between them: on the two cores, not one thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_run_by_another_kernel_asks_and_is_answered_here_streams_its_long_reply_here_and_stops_with_the_askers_token()
 {
    let Some(database) = cluster_database(
        "a_turn_run_by_another_kernel_asks_and_is_answered_here_streams_its_long_reply_here_and_stops_with_the_askers_token",
    ) else {
        return;
    };
    let llm = FakeLlm::start().await;
    let clock = ManualClock::starting_at(at("2031-05-01T08:00:00Z"));
    let (_homes, kernels) = open_members(2, &database, &llm, &clock).await;
    let [runner, asker] = <[Kernel; 2]>::try_from(kernels).ok().unwrap();
    let manifest: ManifestInput =
        kennel_kernel::error::from_value(json!({"name": "painter", "model": "m", "tools": ["ask_user"]})).unwrap();
    runner.agents().create_type(manifest).await.unwrap();
    let agent = runner
        .spawn_agent(SpawnRequest { agent_type: "painter".into(), name: Some("painter".into()), ..Default::default() })
        .await
        .unwrap();
    let id = agent.id.to_string();
    let ada = || Caller::Operator("ada".into());
    // A first turn on the runner: it takes the agent's lease, so the asker forwards to it.
    llm.push(Scripted::text("Ready."));
    let first = runner.send_message(&id, TurnRequest::headless("Hello", ada())).await.unwrap();
    assert_eq!(
        database.scalar(&format!("SELECT holder FROM leases WHERE name = 'agent:{id}'")),
        runner.cluster().id(),
        "the runner holds the agent"
    );
    let known = eventually(Duration::from_secs(5), || async { asker.agents().get_by_id(agent.id).is_some() }).await;
    assert!(known, "the asker knows the agent");
    // The runner relays its events once a heartbeat (every third of the 3 s lease) has seen
    // the asker alive.
    let relaying = eventually(Duration::from_secs(10), || async { runner.cluster().sees_others() }).await;
    assert!(relaying, "the runner saw the asker within 10 s");

    // The turn, asked here with a person present, runs on the runner and asks a question: it is
    // listed here and answered here, and the turn goes on there with the answer.
    let long_reply = "A verse for the fence. ".repeat(1_000);
    llm.push_all([
        Scripted::call("ask_user", json!({"question": "Which colour?", "choices": ["Red", "Blue"]})),
        Scripted::text(&long_reply),
    ]);
    let mut events = asker.turns().subscribe();
    let session = first.session_id;
    let turn = {
        let (asker, id) = (asker.clone(), id.clone());
        let req = TurnRequest { session: Some(session), ..TurnRequest::new("Paint the fence", ada()) };
        tokio::spawn(async move { asker.send_message(&id, req).await })
    };
    let listed = eventually(Duration::from_secs(10), || async {
        asker.service::<Questions>().waiting(Some(agent.id)).await.unwrap().len() == 1
    })
    .await;
    assert!(listed, "the question is listed on the daemon that did not ask it");
    let question = asker.service::<Questions>().waiting(None).await.unwrap().remove(0);
    assert_eq!(question.question, "Which colour?");
    assert_eq!(question.asked_in, kennel_kernel::ask::AskedIn::Chat);
    asker.service::<Questions>().answer(&question.id.to_string(), "blue", "operator:ada").await.unwrap();
    let done = tokio::time::timeout(Duration::from_secs(10), turn).await.expect("the turn went on").unwrap().unwrap();
    assert_eq!(done.reply, long_reply);
    let told = llm.requests()[2].body["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    let told: serde_json::Value = serde_json::from_str(told.as_str().unwrap()).unwrap();
    assert_eq!(told, json!({"answered": true, "answer": "blue", "choice": "Blue", "answered_by": "operator:ada"}));
    assert_eq!(database.scalar("SELECT count(*) FROM questions"), "0", "the question is off the list");

    // Followers here saw the turn as it ran there: the question, and the reply of over
    // 8,000 bytes (a notification's limit) whole.
    let mut seen = Vec::new();
    let ended = |e: &kennel_kernel::turn::AgentEvent| {
        e.turn_id == done.turn_id && matches!(e.kind, kennel_kernel::turn::EventKind::TurnEnded { .. })
    };
    while !seen.iter().any(ended) {
        let next = tokio::time::timeout(Duration::from_secs(10), events.recv()).await;
        let names: Vec<&str> = seen.iter().map(|e| e.kind.name()).collect();
        seen.push(next.unwrap_or_else(|_| panic!("the turn's events cross within 10 s: {names:?}")).unwrap());
    }
    let asked = seen.iter().any(|e| {
        matches!(&e.kind, kennel_kernel::turn::EventKind::Question { question_id, .. } if *question_id == question.id)
    });
    assert!(asked, "the question event crossed: {seen:?}");
    let whole_reply =
        seen.iter().any(|e| matches!(&e.kind, kennel_kernel::turn::EventKind::Reply { text } if *text == long_reply));
    assert!(whole_reply, "the {}-byte reply crossed whole", long_reply.len());

    // A turn asked here with a cancel token of its own (as an A2A task's): cancelling it stops
    // the turn there, mid-call.
    llm.push(Scripted::Delay { millis: 60_000 });
    let cancel = tokio_util::sync::CancellationToken::new();
    let before = llm.requests().len();
    let slow = {
        let (asker, id) = (asker.clone(), id.clone());
        let req = TurnRequest {
            session: Some(session),
            cancel: Some(cancel.clone()),
            ..TurnRequest::headless("Slowly", ada())
        };
        tokio::spawn(async move { asker.send_message(&id, req).await })
    };
    let calling = eventually(Duration::from_secs(10), || async { llm.requests().len() > before }).await;
    assert!(calling, "the slow turn reached the provider");
    let cancelled_at = Instant::now();
    cancel.cancel();
    let stopped =
        tokio::time::timeout(Duration::from_secs(10), slow).await.expect("the turn stopped").unwrap().unwrap();
    assert_eq!(stopped.ended, TurnEnd::Cancelled);
    eprintln!("from the asker's cancel to the forwarded turn's end: {:?}", cancelled_at.elapsed());
    for kernel in [runner, asker] {
        kernel.close().await;
    }
}

#[tokio::test]
async fn one_kernel_of_a_cluster_sweeps_the_database() {
    let Some(database) = cluster_database("one_kernel_of_a_cluster_sweeps_the_database") else {
        return;
    };
    let llm = FakeLlm::start().await;
    let clock = ManualClock::starting_at(at("2031-05-01T08:00:00Z"));
    let (_homes, kernels) = open_members(2, &database, &llm, &clock).await;
    let [first, second] = <[Kernel; 2]>::try_from(kernels).ok().unwrap();
    let sent_long_ago = "INSERT INTO channel_outbound (channel, chat_id, kind, summary, sent_by, at, outcome)
                         VALUES ('c', 'chat', 'text', 's', 'reply', '2031-01-01T00:00:00.000Z', 'ok')";
    database.scalar(sent_long_ago);
    let now = at("2031-05-01T08:00:00Z");
    let swept = kennel_kernel::retention::sweep(&second, now).await.unwrap();
    assert_eq!(swept.channel_outbound, 1, "the first to sweep takes the database's part");
    database.scalar(sent_long_ago);
    assert_eq!(kennel_kernel::retention::sweep(&first, now).await.unwrap().channel_outbound, 0, "the other leaves it");
    assert_eq!(
        kennel_kernel::retention::sweep(&second, now).await.unwrap().channel_outbound,
        1,
        "the sweeper keeps its lease"
    );
    for kernel in [first, second] {
        kernel.close().await;
    }
}

#[tokio::test]
async fn a_sign_in_made_on_one_daemon_works_on_another_and_signing_out_ends_its_streams_there() {
    let Some(database) =
        cluster_database("a_sign_in_made_on_one_daemon_works_on_another_and_signing_out_ends_its_streams_there")
    else {
        return;
    };
    let (_homes, daemons, _token) = start_cluster(&database, 2, "").await;
    let on_a = daemons[0].browser();
    assert_eq!(on_a.set_up("ada", "correct horse").await.status, 303);
    // The same person sent to the other daemon: it knows the sign-in once it has read it.
    let on_b = on_a.on(&daemons[1]);
    let known = eventually(Duration::from_secs(5), || async { on_b.get("/tasks").await.status == 200 }).await;
    assert!(known, "the other daemon knows the sign-in");
    let mut stream = on_b.events("/live/changes?topics=tasks").await;
    assert_eq!(stream.status(), 200);

    assert_eq!(on_a.submit("/", "/logout", &[]).await.status, 303);
    let ended = tokio::time::timeout(Duration::from_secs(5), stream.rest()).await;
    assert!(ended.is_ok(), "signing out on one daemon ends the session's streams on the other");
    assert_ne!(on_b.get("/tasks").await.status, 200, "and the other daemon no longer takes it");
}
