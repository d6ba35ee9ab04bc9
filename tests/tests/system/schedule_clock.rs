//! Cron fires on a controllable clock: the kernel in-process on a `ManualClock`, tools called
//! through the pipeline, turns answered by the fake provider over HTTP. Moving the clock
//! across a minute boundary fires a job at once instead of waiting for the real minute.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use kennel_kernel::Kernel;
use kennel_kernel::agent::{ManifestInput, SpawnRequest};
use kennel_kernel::clock::{Clock, ManualClock};
use kennel_kernel::config::Config;
use kennel_kernel::schedule::{Fire, FireOutcome, Schedules};
use kennel_kernel::tool::{CallContext, Caller};
use kennel_tests::eventually;
use kennel_tests::fake_llm::{FakeLlm, Scripted};
use serde_json::{Value, json};

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

async fn open(home: &Path, llm: &FakeLlm, clock: &Arc<ManualClock>) -> Kernel {
    let config = Config::parse(Path::new("config.toml"), &llm.provider_config("fake", "openai")).unwrap();
    let kernel = Kernel::open_with_clock(home, config, Clock::Manual(clock.clone())).await.unwrap();
    kernel.start_background("in-process").await.unwrap();
    kernel
}

async fn spawn_clockwork(kernel: &Kernel) -> String {
    let manifest: ManifestInput =
        kennel_kernel::error::from_value(json!({"name": "clockwork", "model": "m", "tools": ["schedule.*"]})).unwrap();
    kernel.agents().create_type(manifest).await.unwrap();
    kernel
        .spawn_agent(SpawnRequest { agent_type: "clockwork".into(), ..Default::default() })
        .await
        .unwrap()
        .id
        .to_string()
}

async fn call(kernel: &Kernel, agent: &str, tool: &str, args: Value) -> Value {
    let agent = kernel.agents().get(agent).unwrap();
    let ctx = CallContext::new(agent, Caller::Operator("test".into()));
    kernel.call_tool(ctx, tool, args).await.unwrap_or_else(|e| panic!("{tool}: {}", e.message)).content
}

async fn fires(kernel: &Kernel, id: &str) -> Vec<Fire> {
    kernel.service::<Schedules>().fires(id, 100).await.unwrap()
}

/// Waits until `id` has `n` finished fires; returns them, newest first.
async fn finished(kernel: &Kernel, id: &str, n: usize) -> Vec<Fire> {
    let done = eventually(Duration::from_secs(10), || async {
        let f = fires(kernel, id).await;
        f.len() >= n && f.iter().all(|f| f.outcome != FireOutcome::Running)
    })
    .await;
    let f = fires(kernel, id).await;
    assert!(done, "{n} finished fires expected: {f:?}");
    f
}

#[tokio::test]
async fn cron_jobs_fire_when_the_clock_reaches_their_time_and_not_while_paused() {
    let llm = FakeLlm::start().await;
    llm.set_fallback(Scripted::text("tock"));
    let home = tempfile::tempdir().unwrap();
    let clock = ManualClock::starting_at(at("2026-12-01T10:00:30Z"));
    let kernel = open(home.path(), &llm, &clock).await;
    let agent = spawn_clockwork(&kernel).await;

    let job = call(&kernel, &agent, "cron_create", json!({"expression": "* * * * *", "prompt": "tick"})).await;
    let id = job["id"].as_str().unwrap().to_string();
    assert_eq!(job["next_fire"], "2026-12-01T10:01:00.000Z");
    let once = call(&kernel, &agent, "schedule_create", json!({"when": "+10m", "prompt": "once"})).await;
    let once_id = once["id"].as_str().unwrap().to_string();
    assert_eq!(once["run_at"], "2026-12-01T10:10:30.000Z");

    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(fires(&kernel, &id).await.is_empty(), "nothing is due yet");

    clock.set(at("2026-12-01T10:01:00.200Z"));
    let f = finished(&kernel, &id, 1).await;
    assert_eq!((f[0].outcome.as_str(), f[0].due_at.as_str()), ("ok", "2026-12-01T10:01:00.000Z"));
    assert_eq!(f[0].fired_at, "2026-12-01T10:01:00.200Z", "fired 200 ms after its time on this clock");
    assert_eq!(f[0].detail.as_deref(), Some("tock"));
    assert!(llm.requests().iter().any(|r| r.body.to_string().contains("tick")));
    assert_eq!(
        kernel.service::<Schedules>().get(&id).await.unwrap().next_fire.as_deref(),
        Some("2026-12-01T10:02:00.000Z")
    );

    call(&kernel, &agent, "cron_cancel", json!({"cron_id": id})).await;
    clock.set(at("2026-12-01T10:03:30Z"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(fires(&kernel, &id).await.len(), 1, "a paused job does not fire");

    let enabled = call(&kernel, &agent, "cron_enable", json!({"cron_id": id})).await;
    assert_eq!(enabled["next_fire"], "2026-12-01T10:04:00.000Z", "no catch-up for time spent paused");
    clock.set(at("2026-12-01T10:04:00Z"));
    assert_eq!(finished(&kernel, &id, 2).await.len(), 2);

    clock.set(at("2026-12-01T10:10:30Z"));
    let f = finished(&kernel, &once_id, 1).await;
    assert_eq!(f[0].outcome, FireOutcome::Ok);
    assert_eq!(kernel.service::<Schedules>().get(&once_id).await.unwrap().state, kennel_kernel::schedule::State::Done);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(fires(&kernel, &once_id).await.len(), 1, "a one-shot schedule fires once");
    kernel.close().await;
}

#[tokio::test]
async fn a_job_missed_while_the_daemon_was_down_fires_once_on_start_and_says_so() {
    let llm = FakeLlm::start().await;
    llm.set_fallback(Scripted::text("caught up"));
    let home = tempfile::tempdir().unwrap();
    let clock = ManualClock::starting_at(at("2026-12-01T10:00:30Z"));
    let kernel = open(home.path(), &llm, &clock).await;
    let agent = spawn_clockwork(&kernel).await;
    let minutely = call(&kernel, &agent, "cron_create", json!({"expression": "* * * * *", "prompt": "tick"})).await;
    let minutely = minutely["id"].as_str().unwrap().to_string();
    let once = call(&kernel, &agent, "schedule_create", json!({"when": "+5m", "prompt": "once"})).await;
    let once = once["id"].as_str().unwrap().to_string();
    kernel.close().await;
    drop(kernel);

    // Three hours pass with the daemon down: 180 minutely slots and the one-shot's time.
    clock.set(at("2026-12-01T13:00:30Z"));
    let kernel = open(home.path(), &llm, &clock).await;
    let f = finished(&kernel, &minutely, 1).await;
    assert_eq!(f.len(), 1, "one fire, not one per missed slot: {f:?}");
    assert_eq!(f[0].outcome, FireOutcome::Ok);
    assert_eq!(f[0].due_at, "2026-12-01T10:01:00.000Z");
    assert_eq!(f[0].missed_slots, 180, "10:01 to 13:00 were missed");
    let o = finished(&kernel, &once, 1).await;
    assert_eq!((o[0].outcome.as_str(), o[0].missed_slots), ("ok", 1));
    assert_eq!(
        kernel.service::<Schedules>().get(&minutely).await.unwrap().next_fire.as_deref(),
        Some("2026-12-01T13:01:00.000Z")
    );

    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(fires(&kernel, &minutely).await.len(), 1, "and no more until the next slot");
    clock.set(at("2026-12-01T13:01:00Z"));
    let f = finished(&kernel, &minutely, 2).await;
    assert_eq!(f[0].missed_slots, 0, "back on time");
    kernel.close().await;
}

#[tokio::test]
async fn a_fire_interrupted_by_a_stop_is_marked_and_not_repeated() {
    let llm = FakeLlm::start().await;
    // The model never answers in time: the daemon stops mid-turn.
    llm.push(Scripted::Delay { millis: 30_000 });
    llm.push(Scripted::text("late"));
    let home = tempfile::tempdir().unwrap();
    let clock = ManualClock::starting_at(at("2026-12-01T10:00:30Z"));
    let kernel = open(home.path(), &llm, &clock).await;
    let agent = spawn_clockwork(&kernel).await;
    let once = call(&kernel, &agent, "schedule_create", json!({"when": "+1m", "prompt": "slow"})).await;
    let once = once["id"].as_str().unwrap().to_string();
    clock.set(at("2026-12-01T10:01:30Z"));
    let running = eventually(Duration::from_secs(5), || async { !fires(&kernel, &once).await.is_empty() }).await;
    assert!(running);
    kernel.close().await;
    drop(kernel);

    let kernel = open(home.path(), &llm, &clock).await;
    let marked = eventually(Duration::from_secs(5), || async {
        fires(&kernel, &once).await.first().is_some_and(|f| f.outcome == FireOutcome::Interrupted)
    })
    .await;
    assert!(marked, "{:?}", fires(&kernel, &once).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(fires(&kernel, &once).await.len(), 1, "the slot was taken before the turn: it is not fired again");
    kernel.close().await;
}

#[tokio::test]
async fn a_cron_job_due_for_an_agent_that_stopped_is_skipped_once_then_paused() {
    let llm = FakeLlm::start().await;
    let home = tempfile::tempdir().unwrap();
    let clock = ManualClock::starting_at(at("2026-12-01T10:00:30Z"));
    let kernel = open(home.path(), &llm, &clock).await;
    let agent = spawn_clockwork(&kernel).await;
    let job = call(&kernel, &agent, "cron_create", json!({"expression": "*/5 * * * *", "prompt": "tick"})).await;
    let id = job["id"].as_str().unwrap().to_string();
    // Stopped behind the kernel's back (as an older daemon could leave it): the job is still
    // active when its time comes.
    kernel.agents().stop(&agent).await.unwrap();
    assert_eq!(kernel.service::<Schedules>().get(&id).await.unwrap().state, kennel_kernel::schedule::State::Active);

    clock.set(at("2026-12-01T10:05:00Z"));
    let f = finished(&kernel, &id, 1).await;
    assert_eq!(f[0].outcome, FireOutcome::Skipped);
    assert!(f[0].detail.as_deref().unwrap_or_default().contains("stopped"), "{f:?}");
    let paused = eventually(Duration::from_secs(5), || async {
        kernel.service::<Schedules>().get(&id).await.unwrap().state == kennel_kernel::schedule::State::Paused
    })
    .await;
    assert!(paused, "paused, not fired into the void at every slot");
    clock.set(at("2026-12-01T10:30:00Z"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(fires(&kernel, &id).await.len(), 1);
    assert!(llm.requests().is_empty(), "no turn ran");
    kernel.close().await;
}

#[tokio::test]
async fn only_a_live_operator_session_with_its_csrf_token_and_the_typed_short_id_deletes() {
    let llm = FakeLlm::start().await;
    let home = tempfile::tempdir().unwrap();
    let clock = ManualClock::starting_at(at("2026-12-01T10:00:30Z"));
    let kernel = open(home.path(), &llm, &clock).await;
    let agent = spawn_clockwork(&kernel).await;
    let job = call(&kernel, &agent, "cron_create", json!({"expression": "0 * * * *", "prompt": "hourly"})).await;
    let id = job["id"].as_str().unwrap().to_string();
    let short = kernel.service::<Schedules>().get(&id).await.unwrap().short_id();
    kernel.auth().add_operator("ada", "correct horse").await.unwrap();
    let (cookie, session) = kernel.auth().open_session("ada").await.unwrap();

    let refused = |r: Result<kennel_kernel::auth::HumanApproval, kennel_kernel::Error>| r.unwrap_err().kind;
    assert_eq!(
        refused(kernel.auth().human_approval("not-a-session", &session.csrf)),
        kennel_kernel::ErrorKind::Forbidden
    );
    assert_eq!(refused(kernel.auth().human_approval(&cookie, "wrong-token")), kennel_kernel::ErrorKind::Forbidden);
    let approval = kernel.auth().human_approval(&cookie, &session.csrf).unwrap();
    assert_eq!(approval.operator(), "ada");

    let e = kernel.service::<Schedules>().delete_permanently(&id, "hourly", &approval).await.unwrap_err();
    assert_eq!(e.fields[0].field, "confirm");
    assert!(kernel.service::<Schedules>().get(&id).await.is_ok(), "a wrong confirmation deletes nothing");
    kernel.service::<Schedules>().delete_permanently(&id, &short, &approval).await.unwrap();
    assert_eq!(kernel.service::<Schedules>().get(&id).await.unwrap_err().kind, kennel_kernel::ErrorKind::NotFound);
    assert!(fires(&kernel, &id).await.is_empty());

    kernel.auth().close_session(&cookie).await.unwrap();
    assert_eq!(refused(kernel.auth().human_approval(&cookie, &session.csrf)), kennel_kernel::ErrorKind::Forbidden);
    kernel.close().await;
}

/// Europe/Berlin skips 02:00-03:00 on 28 March 2027 (01:00 UTC). A job at fixed times given as
/// a list or a range still runs that night, right after the jump, as Vixie cron does; croner
/// alone dropped `0,30 2` for the whole day and the 02:30 slot of `30 2-3`.
#[tokio::test]
async fn fixed_time_lists_and_ranges_run_right_after_a_spring_forward_gap() {
    let llm = FakeLlm::start().await;
    llm.set_fallback(Scripted::text("ran"));
    let home = tempfile::tempdir().unwrap();
    let clock = ManualClock::starting_at(at("2027-03-28T00:50:00Z"));
    let kernel = open(home.path(), &llm, &clock).await;
    let agent = spawn_clockwork(&kernel).await;
    let create =
        |expression: &str| json!({"expression": expression, "prompt": "night shift", "timezone": "Europe/Berlin"});
    let list = call(&kernel, &agent, "cron_create", create("0,30 2 28 3 *")).await;
    let range = call(&kernel, &agent, "cron_create", create("30 2-3 28 3 *")).await;
    assert_eq!(list["next_fire"], "2027-03-28T01:00:00.000Z", "03:00 CEST, right after the gap");
    assert_eq!(range["next_fire"], "2027-03-28T01:00:00.000Z");
    let (list, range) = (list["id"].as_str().unwrap().to_string(), range["id"].as_str().unwrap().to_string());

    clock.set(at("2027-03-28T01:00:00Z"));
    assert_eq!(finished(&kernel, &list, 1).await[0].due_at, "2027-03-28T01:00:00.000Z");
    assert_eq!(finished(&kernel, &range, 1).await[0].missed_slots, 0);
    let next = |id: String| {
        let kernel = kernel.clone();
        async move { kernel.service::<Schedules>().get(&id).await.unwrap().next_fire }
    };
    assert_eq!(next(list.clone()).await.as_deref(), Some("2028-03-28T00:00:00.000Z"), "both gap slots ran once");
    assert_eq!(next(range.clone()).await.as_deref(), Some("2027-03-28T01:30:00.000Z"), "then 03:30 as usual");
    clock.set(at("2027-03-28T01:30:00Z"));
    assert_eq!(finished(&kernel, &range, 2).await.len(), 2);
    kernel.close().await;
}
