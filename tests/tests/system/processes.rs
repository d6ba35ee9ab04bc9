//! The process family (spec §10) on the real daemon with real children: every tool through the
//! pipeline, polls that return only what is new (stdout and stderr apart), stdin, kill
//! escalation to the whole group, the wall-clock budget, the output bound, the environment a
//! child gets, and that no process of a child's group outlives its agent, the daemon's
//! `kill -9`, or (through the reaper) a supervisor that could not act.

use std::time::Duration;

use kennel_tests::{Api, Home, eventually};
use serde_json::{Value, json};

use crate::{agent_with, daemon_with_config};

/// Whether any live process is in group `pgid` (read from /proc, as the kernel sees it).
fn group_alive(pgid: i64) -> bool {
    std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()).any(|pid| {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        fields[0] != "Z" && fields[2].parse::<i64>().ok() == Some(pgid)
    })
}

/// Whether a live process runs with `needle` in its command line (for processes that left the
/// group with `setsid`, which no group id finds).
pub(crate) fn running_with(needle: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()).any(|pid| {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = state.rfind(')').is_some_and(|i| state[i + 2..].starts_with('Z'));
        !zombie && String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(needle)
    })
}

/// A `sleep` no other test starts: `sleep 3000.PID` (GNU sleep takes fractions).
pub fn unique_sleep(n: u32) -> String {
    format!("sleep {n}.{}", std::process::id())
}

async fn start(api: &Api, agent: &str, command: &str) -> Value {
    let started = api.invoke(agent, "process_start", json!({ "command": command })).await;
    assert_eq!(started.status, 200, "{}", started.text);
    started.body["content"].clone()
}

async fn poll(api: &Api, agent: &str, id: i64) -> Value {
    let polled = api.invoke(agent, "process_poll", json!({ "process_id": id })).await;
    assert_eq!(polled.status, 200, "{}", polled.text);
    polled.body["content"].clone()
}

/// Polls until `until` holds of everything read so far (stdout, stderr), failing the test
/// with what was read after 10 s; returns what was read and the last poll.
async fn read_until(
    api: &Api,
    agent: &str,
    id: i64,
    until: impl Fn(&str, &str, &Value) -> bool,
) -> (String, String, Value) {
    let (mut out, mut err) = (String::new(), String::new());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let p = poll(api, agent, id).await;
        out.push_str(p["stdout"].as_str().unwrap());
        err.push_str(p["stderr"].as_str().unwrap());
        if until(&out, &err, &p) {
            return (out, err, p);
        }
        assert!(tokio::time::Instant::now() < deadline, "not there within 10 s: stdout {out:?}, stderr {err:?}, {p}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn id_of(started: &Value) -> i64 {
    started["process_id"].as_i64().expect("process_id")
}

#[tokio::test]
async fn polls_return_only_new_output_with_the_streams_apart_and_then_the_exit() {
    let (_home, _d, api) = daemon_with_config("").await;
    let agent = agent_with(&api, "runner", &["process.*"]).await;
    let p = start(&api, &agent, "echo one; echo oops >&2; read go; echo two; exit 7").await;
    let id = id_of(&p);
    let (out, err, last) = read_until(&api, &agent, id, |o, e, _| o == "one\n" && e == "oops\n").await;
    assert_eq!((out.as_str(), err.as_str()), ("one\n", "oops\n"), "{last}");
    // Nothing new: the next poll is empty, and the child still runs (it waits for input).
    let again = poll(&api, &agent, id).await;
    assert_eq!(
        (again["stdout"].as_str(), again["stderr"].as_str(), again["running"].as_bool()),
        (Some(""), Some(""), Some(true))
    );

    let wrote = api.invoke(&agent, "process_write", json!({ "process_id": id, "data": "go\n" })).await;
    assert_eq!(wrote.body["content"]["written_bytes"], 3, "{}", wrote.text);
    let (out, _, last) = read_until(&api, &agent, id, |_, _, p| p["running"] == false).await;
    assert_eq!(out, "two\n");
    assert_eq!(last["exit"]["code"], 7, "{last}");
    assert_eq!(last["exit"]["reason"], "exited");

    let listed = api.invoke(&agent, "process_list", json!({})).await;
    let processes = listed.body["content"]["processes"].as_array().unwrap().clone();
    assert_eq!(processes.len(), 1);
    assert_eq!((processes[0]["running"].as_bool(), processes[0]["exit"]["code"].as_i64()), (Some(false), Some(7)));
    // An ended child's input is closed for good.
    let late = api.invoke(&agent, "process_write", json!({ "process_id": id, "data": "x" })).await;
    assert_eq!(late.error_kind(), "Conflict", "{}", late.text);
}

#[tokio::test]
async fn stdin_round_trips_and_closing_it_ends_a_reader() {
    let (_home, _d, api) = daemon_with_config("").await;
    let agent = agent_with(&api, "feeder", &["process_*"]).await;
    let id = id_of(&start(&api, &agent, "while read line; do echo \"got: $line\"; done; echo bye").await);
    for line in ["first", "ünïcödé"] {
        let w = api.invoke(&agent, "process_write", json!({ "process_id": id, "data": format!("{line}\n") })).await;
        assert_eq!(w.status, 200, "{}", w.text);
    }
    let closed =
        api.invoke(&agent, "process_write", json!({ "process_id": id, "data": "last\n", "close": true })).await;
    assert_eq!(closed.body["content"]["input_closed"], true);
    let (out, _, last) = read_until(&api, &agent, id, |_, _, p| p["running"] == false).await;
    assert_eq!(out, "got: first\ngot: ünïcödé\ngot: last\nbye\n", "{last}");
    assert_eq!(last["exit"]["code"], 0);
}

#[tokio::test]
async fn kill_escalates_to_sigkill_for_the_whole_group_of_a_child_that_ignores_sigterm() {
    let (_home, _d, api) = daemon_with_config("[exec_policy]\nkill_grace_secs = 1\n").await;
    let agent = agent_with(&api, "stubborn", &["process.*"]).await;
    // The shell ignores TERM and so does what it starts; `sleep` in the background is in the group.
    let p = start(&api, &agent, "trap '' TERM; sleep 300 & echo ready; while true; do sleep 1; done").await;
    let (id, pgid) = (id_of(&p), p["pgid"].as_i64().unwrap());
    read_until(&api, &agent, id, |o, _, _| o.contains("ready")).await;
    assert!(group_alive(pgid));

    let started = std::time::Instant::now();
    let killed = api.invoke(&agent, "process_kill", json!({ "process_id": id })).await;
    let waited = started.elapsed();
    assert_eq!(killed.status, 200, "{}", killed.text);
    assert_eq!(killed.body["content"]["exit"]["signal"], "KILL", "{}", killed.text);
    assert_eq!(killed.body["content"]["exit"]["reason"], "killed");
    assert!(waited >= Duration::from_millis(900), "SIGKILL came only after the grace period ({waited:?})");
    assert!(eventually(Duration::from_secs(2), || async { !group_alive(pgid) }).await, "group {pgid} is gone");

    // A signal that is a message is only sent; one Kennel does not send is refused.
    let id = id_of(&start(&api, &agent, "trap 'echo hup' HUP; echo ready; while true; do sleep 0.05; done").await);
    read_until(&api, &agent, id, |o, _, _| o.contains("ready")).await;
    let hup = api.invoke(&agent, "process_kill", json!({ "process_id": id, "signal": "SIGHUP" })).await;
    assert_eq!(hup.body["content"]["running"], true, "{}", hup.text);
    let (out, _, _) = read_until(&api, &agent, id, |o, _, _| o.contains("hup")).await;
    assert!(out.contains("hup"), "{out}");
    let bad = api.invoke(&agent, "process_kill", json!({ "process_id": id, "signal": "STOP" })).await;
    assert_eq!(bad.error_kind(), "InvalidArguments", "{}", bad.text);
}

#[tokio::test]
async fn the_wall_clock_budget_stops_a_child_and_output_past_the_bound_is_dropped_and_counted() {
    let config = "[exec_policy]\nwall_clock_secs = 1\nkill_grace_secs = 1\noutput_buffer_bytes = 1024\n";
    let (_home, _d, api) = daemon_with_config(config).await;
    let agent = agent_with(&api, "bounded", &["process.*"]).await;
    let p = start(&api, &agent, "head -c 5000 /dev/zero | tr '\\0' x; sleep 30").await;
    let id = id_of(&p);
    let stopped = eventually(Duration::from_secs(5), || async {
        let view = api.get(&format!("/api/agents/{agent}/processes/{id}")).await;
        view.body["running"] == false
    })
    .await;
    assert!(stopped, "the budget stopped it");
    let p = poll(&api, &agent, id).await;
    assert_eq!(p["exit"]["reason"], "wall_clock", "{p}");
    assert_eq!(p["exit"]["signal"], "TERM", "{p}");
    assert_eq!(p["stdout"].as_str().unwrap(), "x".repeat(1024));
    assert_eq!(p["stdout_dropped_bytes"], 5000 - 1024);
}

#[tokio::test]
async fn a_child_gets_a_minimal_environment_without_the_daemons_secrets() {
    let home = Home::with_config(
        "[exec_policy]\npass_env = [\"HANDED_ON\"]\n[providers.llm]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9\"\napi_key_env = \"PROVIDER_KEY_VAR\"\n",
    );
    let token = home.token("tests").await;
    let env = [
        ("PROVIDER_KEY_VAR", "sk-provider-secret"),
        ("GITHUB_TOKEN", "ghp-secret"),
        ("UNRELATED_VAR", "daemon-only"),
        ("HANDED_ON", "visible"),
    ];
    let daemon = home.start_with_env(&env).await;
    let api = daemon.api(&token);
    let agent = agent_with(&api, "envy", &["process.*"]).await;
    // A child can read the environment of its user's processes, unless the daemon refuses it
    // (it is not dumpable). Root reads everything, so only a daemon run unprivileged is tried.
    let root = std::process::Command::new("id").arg("-u").output().unwrap().stdout.starts_with(b"0\n");
    let snoop = if root { String::new() } else { format!("tr '\\0' '\\n' < /proc/{}/environ; ", daemon.pid()) };
    let command = format!("{snoop}env; pwd");
    let p = api.invoke(&agent, "process_start", json!({ "command": command, "env": { "GREETING": "hello" } })).await;
    let id = p.body["content"]["process_id"].as_i64().expect(&p.text);
    let (out, err, _) = read_until(&api, &agent, id, |_, _, p| p["running"] == false).await;
    if !root {
        assert!(err.contains("Permission denied"), "the daemon's environment is not readable: {err}");
    }
    for secret in ["sk-provider-secret", "ghp-secret", "daemon-only", "PROVIDER_KEY_VAR", "GITHUB_TOKEN"] {
        assert!(!out.contains(secret), "{secret} reached the child:\n{out}");
    }
    // HOME is the sandbox's own empty folder, not the workspace: nothing the agent writes there
    // (a `.gitconfig`) configures what it runs.
    for expected in ["HANDED_ON=visible", "GREETING=hello", "TERM=dumb", "HOME=/home/agent", "TMPDIR=/tmp"] {
        assert!(out.lines().any(|l| l == expected), "{expected} missing:\n{out}");
    }
    assert!(out.lines().any(|l| l.starts_with("PATH=")), "{out}");
    assert_eq!(out.lines().last(), Some("/workspace"), "it starts in the workspace");

    // Naming a secret in the call is refused before anything runs.
    let named = api.invoke(&agent, "process_start", json!({ "command": "env", "env": { "GITHUB_TOKEN": "x" } })).await;
    assert_eq!(named.error_kind(), "Forbidden", "{}", named.text);
}

#[tokio::test]
async fn the_gates_refuse_before_anything_runs() {
    let config = "[exec_policy]\nmax_children = 1\nallowed_commands = [\"sleep\", \"echo\"]\n";
    let (home, _d, api) = daemon_with_config(config).await;
    let none = agent_with(&api, "ungranted", &["system_time"]).await;
    let refused = api.invoke(&none, "process_start", json!({ "command": "echo hi" })).await;
    assert_eq!(refused.error_kind(), "Forbidden", "{}", refused.text);

    let agent = agent_with(&api, "gated", &["process.*"]).await;
    let marker = home.path().join("ran");
    let line = format!("echo hi > {}", marker.display());
    for (command, kind) in [(line.as_str(), "Forbidden"), ("touch x", "Forbidden"), ("", "InvalidArguments")] {
        let r = api.invoke(&agent, "process_start", json!({ "command": command })).await;
        assert_eq!(r.error_kind(), kind, "{command}: {}", r.text);
    }
    assert!(!marker.exists(), "a refused command never ran");
    let outside = api.invoke(&agent, "process_start", json!({ "command": "echo hi", "cwd": "../.." })).await;
    assert_eq!(outside.error_kind(), "InvalidArguments", "{}", outside.text);
    let missing = api.invoke(&agent, "process_start", json!({ "command": "echo hi", "cwd": "no/such" })).await;
    assert_eq!(missing.error_kind(), "NotFound", "{}", missing.text);
    for path in ["processes/9223372036854775808", "processes/one"] {
        let r = api.get(&format!("/api/agents/{agent}/{path}")).await;
        assert_eq!((r.status, r.error_kind()), (422, "InvalidArguments"), "{path}: {}", r.text);
    }
    let typed = api.invoke(&agent, "process_poll", json!({ "process_id": "one" })).await;
    assert_eq!(typed.error_kind(), "InvalidArguments", "{}", typed.text);

    let id = id_of(&start(&api, &agent, "sleep 30").await);
    let second = api.invoke(&agent, "process_start", json!({ "command": "sleep 30" })).await;
    assert_eq!(second.error_kind(), "ResourceExhausted", "{}", second.text);
    assert!(second.error_message().contains("max_children"), "{}", second.text);
    // Another agent's process is not found, as a missing one is.
    let other = agent_with(&api, "other", &["process.*"]).await;
    for tool in ["process_poll", "process_kill"] {
        let r = api.invoke(&other, tool, json!({ "process_id": id })).await;
        assert_eq!(r.error_kind(), "NotFound", "{tool}: {}", r.text);
    }
}

#[tokio::test]
async fn no_process_of_a_childs_group_outlives_its_agent_or_the_daemons_kill_9() {
    let (home, daemon, api) = daemon_with_config("[exec_policy]\nkill_grace_secs = 1\n").await;
    let agent = agent_with(&api, "mortal", &["process.*"]).await;
    let p = start(&api, &agent, "trap '' TERM; sleep 300 & sleep 300").await;
    let pgid = p["pgid"].as_i64().unwrap();
    assert!(eventually(Duration::from_secs(2), || async { group_alive(pgid) }).await);
    let stopped = api.post(&format!("/api/agents/{agent}/stop"), json!({})).await;
    assert_eq!(stopped.status, 200, "{}", stopped.text);
    assert!(eventually(Duration::from_secs(4), || async { !group_alive(pgid) }).await, "gone with its agent");
    // The group dies first; its end is recorded once its output is read to the end.
    let recorded = eventually(Duration::from_secs(2), || async {
        api.get(&format!("/api/agents/{agent}/processes")).await.body[0]["exit"]["reason"] == "agent_stopped"
    })
    .await;
    assert!(recorded, "{}", api.get(&format!("/api/agents/{agent}/processes")).await.text);

    let agent = agent_with(&api, "orphan-maker", &["process.*"]).await;
    let groups: Vec<i64> =
        [start(&api, &agent, "sleep 300 & sleep 300").await, start(&api, &agent, "(sleep 300 &); sleep 300").await]
            .iter()
            .map(|p| p["pgid"].as_i64().unwrap())
            .collect();
    assert!(eventually(Duration::from_secs(2), || async { groups.iter().all(|g| group_alive(*g)) }).await);
    daemon.kill().await;
    let killed_at = std::time::Instant::now();
    assert!(
        eventually(Duration::from_secs(2), || async { groups.iter().all(|g| !group_alive(*g)) }).await,
        "within 2 s of kill -9 no process of any child's group remains"
    );
    eprintln!("groups gone {:?} after kill -9", killed_at.elapsed());
    drop(home);
}

#[tokio::test]
async fn the_reaper_kills_at_start_a_group_whose_supervisor_could_not_act() {
    // Unsandboxed: in the sandbox the supervisor's death takes the whole namespace with it
    // (`sandboxed_children_die_with_their_supervisor`), so nothing is left to reap.
    let (home, daemon, api) = daemon_with_config("[exec_policy]\nsandbox = false\n").await;
    let agent = agent_with(&api, "abandoned", &["process.*"]).await;
    let p = start(&api, &agent, "echo ready; sleep 300").await;
    let pgid = p["pgid"].as_i64().unwrap();
    // The command runs (not only its supervisor, which is killed below).
    read_until(&api, &agent, id_of(&p), |o, _, _| o.contains("ready")).await;
    // The supervisor dies while the daemon cannot act (stopped), then the daemon dies: no one
    // is left to kill the group...
    let signal = |sig: &str, pid: String| {
        assert!(std::process::Command::new("kill").args([sig, &pid]).status().unwrap().success());
    };
    signal("-STOP", daemon.pid().to_string());
    signal("-KILL", pgid.to_string());
    daemon.kill().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(group_alive(pgid), "the abandoned group is still there");
    // ...until the next start, whose reaper finds it recorded and kills it.
    let _again = home.start().await;
    assert!(eventually(Duration::from_secs(2), || async { !group_alive(pgid) }).await, "reaped at start");
}

#[tokio::test]
async fn what_a_child_moved_out_of_its_group_dies_with_it_too() {
    let (_home, daemon, api) = daemon_with_config("[exec_policy]\nkill_grace_secs = 1\n").await;
    let agent = agent_with(&api, "escaper", &["process.*"]).await;
    // The command ends by itself, leaving a process in a session of its own.
    let (exits, killed, crashed) = (unique_sleep(3001), unique_sleep(3002), unique_sleep(3003));
    let id = id_of(&start(&api, &agent, &format!("setsid {exits} & sleep 0.2; echo done")).await);
    read_until(&api, &agent, id, |_, _, p| p["running"] == false).await;
    assert!(
        eventually(Duration::from_secs(1), || async { !running_with(&exits) }).await,
        "gone when its command ended"
    );
    // Killed, past the grace period of a group that ignores SIGTERM.
    let id = id_of(
        &start(&api, &agent, &format!("trap '' TERM; setsid {killed} & echo ready; while true; do sleep 1; done"))
            .await,
    );
    read_until(&api, &agent, id, |o, _, _| o.contains("ready")).await;
    assert!(eventually(Duration::from_secs(2), || async { running_with(&killed) }).await);
    let k = api.invoke(&agent, "process_kill", json!({ "process_id": id })).await;
    assert_eq!(k.body["content"]["running"], false, "{}", k.text);
    assert!(eventually(Duration::from_secs(1), || async { !running_with(&killed) }).await, "gone with the kill");
    // The daemon killed with SIGKILL.
    start(&api, &agent, &format!("setsid {crashed} & sleep 300")).await;
    assert!(eventually(Duration::from_secs(2), || async { running_with(&crashed) }).await);
    daemon.kill().await;
    assert!(eventually(Duration::from_secs(2), || async { !running_with(&crashed) }).await, "gone with the daemon");
}
