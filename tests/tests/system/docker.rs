//! `docker_exec` (spec §14) on the real daemon, through the REST invoke endpoint: its two
//! gates (the grant, `[exec_policy] docker_allowlist`) refusing before any engine request,
//! and the engine call through bollard against `FakeDocker`, a local engine speaking the
//! exec endpoints and the multiplexed stream on a Unix socket.

use std::path::Path;
use std::time::{Duration, Instant};

use kennel_tests::fake_docker::{Container, FakeDocker};
use serde_json::{Value, json};

use crate::{agent_with, daemon_with_config};

fn config(socket: &Path, allowlist: &[&str], extra: &str) -> String {
    format!(
        "[exec_policy]\ndocker_socket = {socket:?}\ndocker_allowlist = {allowlist:?}\noutput_buffer_bytes = 1024\n{extra}",
        socket = socket.display().to_string(),
    )
}

/// The engine's containers for most tests: `web` running (its id starts `abc`), `db` too.
async fn engine() -> FakeDocker {
    FakeDocker::start(vec![Container::new("abc123", "web", true), Container::new("def456", "db", true)]).await
}

#[tokio::test]
async fn docker_exec_needs_the_grant_and_the_allowlist_before_any_engine_request() {
    let fake = engine().await;
    let (_home, _d, api) = daemon_with_config(&config(fake.socket(), &["web"], "")).await;

    let ungranted = agent_with(&api, "bystander", &["system_time"]).await;
    let refused = api.invoke(&ungranted, "docker_exec", json!({"container": "web", "command": ["echo", "hi"]})).await;
    assert_eq!((refused.status, refused.error_kind()), (403, "Forbidden"), "{}", refused.text);
    assert!(refused.error_message().contains("no grant for `docker_exec`"), "{}", refused.text);

    let granted = agent_with(&api, "operator", &["docker.*"]).await;
    let unlisted = api.invoke(&granted, "docker_exec", json!({"container": "db", "command": ["echo", "hi"]})).await;
    assert_eq!((unlisted.status, unlisted.error_kind()), (403, "Forbidden"), "{}", unlisted.text);
    let message = unlisted.error_message();
    assert!(message.contains("`db`") && message.contains("[exec_policy] docker_allowlist"), "{message}");
    assert!(message.contains("`web`"), "says what is allowed: {message}");
    assert!(fake.requests().is_empty(), "a refused call reached the engine: {:?}", fake.requests());

    // The same agent, an allowlisted container: the engine is reached (so the two refusals
    // above were the gates', not a dead engine's).
    let ran = api.invoke(&granted, "docker_exec", json!({"container": "web", "command": ["echo", "hi"]})).await;
    assert_eq!(ran.status, 200, "{}", ran.text);
    assert!(!fake.requests().is_empty());
}

#[tokio::test]
async fn docker_exec_returns_stdout_stderr_and_the_exit_code_through_the_engine_api() {
    let fake = engine().await;
    let (_home, _d, api) = daemon_with_config(&config(fake.socket(), &["web"], "")).await;
    let me = agent_with(&api, "operator", &["docker.*"]).await;
    let exec = |command: Value| {
        let (api, me) = (api.clone(), me.clone());
        async move {
            let reply = api.invoke(&me, "docker_exec", json!({"container": "web", "command": command})).await;
            assert_eq!(reply.status, 200, "{}", reply.text);
            reply.body["content"].clone()
        }
    };

    let echo = exec(json!(["echo", "hello", "world"])).await;
    assert_eq!(echo["container"], "web");
    assert_eq!(
        (echo["exit_code"].clone(), echo["stdout"].clone(), echo["stderr"].clone()),
        (json!(0), json!("hello world\n"), json!(""))
    );
    assert_eq!((echo["stdout_dropped_bytes"].clone(), echo["stderr_dropped_bytes"].clone()), (json!(0), json!(0)));
    assert!(echo["duration_ms"].is_u64(), "{echo}");
    // The exec was created on the container's full id (the one inspected), attached, no TTY.
    let created = fake.requests().into_iter().find(|r| r.path.ends_with("/exec")).expect("an exec was created");
    assert_eq!(created.path, format!("/containers/{:0<64}/exec", "abc123"));
    assert_eq!(
        (&created.body["AttachStdout"], &created.body["AttachStderr"], &created.body["Tty"]),
        (&json!(true), &json!(true), &json!(false)),
        "{}",
        created.body
    );

    // Both streams kept apart, and an exit code that is not 0 is a result, not an error.
    let failed = exec(json!(["fail", "3", "boom"])).await;
    assert_eq!(
        (failed["exit_code"].clone(), failed["stdout"].clone(), failed["stderr"].clone()),
        (json!(3), json!("about to fail\n"), json!("boom\n"))
    );

    // A string is a shell command line.
    let line = exec(json!("echo from a shell")).await;
    assert_eq!(line["stdout"], "from a shell\n");
    assert_eq!(fake.commands().last(), Some(&json!(["sh", "-c", "echo from a shell"])));
    assert_eq!(fake.commands()[0], json!(["echo", "hello", "world"]), "an array is run as it is");

    let missing = exec(json!(["no-such-program"])).await;
    assert_eq!(missing["exit_code"], 127);

    // Over [exec_policy] output_buffer_bytes (1024 here): the first bytes, and the count of the rest.
    let flood = exec(json!(["flood", "100000"])).await;
    assert_eq!(flood["stdout"].as_str().map(str::len), Some(1024));
    assert!(flood["stdout"].as_str().unwrap().bytes().all(|b| b == b'x'));
    assert_eq!(flood["stdout_dropped_bytes"], 100000 - 1024);
    assert_eq!((flood["stderr"].clone(), flood["stderr_dropped_bytes"].clone()), (json!("flooded\n"), json!(0)));
    assert_eq!(flood["exit_code"], 0, "read to the end past the bound");
}

#[tokio::test]
async fn docker_exec_refuses_a_name_the_engine_resolves_to_another_container_and_a_stopped_one() {
    // `cafe` is hex: the engine finds no container named so and takes it as a prefix of
    // `db`'s id.
    let fake =
        FakeDocker::start(vec![Container::new("cafe1234", "db", true), Container::new("0123", "stopped", false)]).await;
    let (_home, _d, api) = daemon_with_config(&config(fake.socket(), &["cafe", "stopped", "gone"], "")).await;
    let me = agent_with(&api, "operator", &["docker_exec"]).await;
    let exec = |container: &'static str| {
        let (api, me) = (api.clone(), me.clone());
        async move { api.invoke(&me, "docker_exec", json!({"container": container, "command": ["echo", "hi"]})).await }
    };

    let elsewhere = exec("cafe").await;
    assert_eq!((elsewhere.status, elsewhere.error_kind()), (403, "Forbidden"), "{}", elsewhere.text);
    assert!(elsewhere.error_message().contains("resolved it to container `db`"), "{}", elsewhere.text);
    let paths: Vec<String> = fake.requests().into_iter().map(|r| format!("{} {}", r.method, r.path)).collect();
    assert_eq!(paths, ["GET /containers/cafe/json"], "looked at, never run in");

    let stopped = exec("stopped").await;
    assert_eq!((stopped.status, stopped.error_kind()), (409, "Conflict"), "{}", stopped.text);
    assert!(stopped.error_message().contains("`stopped` is not running"), "{}", stopped.text);

    let gone = exec("gone").await;
    assert_eq!((gone.status, gone.error_kind()), (404, "NotFound"), "{}", gone.text);
    assert!(gone.error_message().contains("No such container: gone"), "the engine's words: {}", gone.text);
    assert!(fake.commands().is_empty(), "no exec was created: {:?}", fake.requests());
}

#[tokio::test]
async fn docker_exec_times_out_within_its_own_timeout_and_wall_clock_secs() {
    let fake = FakeDocker::start(vec![
        Container::new("abc123", "web", true),
        Container::new("def456", "slow", true).slow_to_describe(),
    ])
    .await;
    let (_home, _d, api) = daemon_with_config(&config(fake.socket(), &["web", "slow"], "wall_clock_secs = 2\n")).await;
    let me = agent_with(&api, "operator", &["docker.*"]).await;

    let started = Instant::now();
    let own = api.invoke(&me, "docker_exec", json!({"container": "web", "command": ["hang"], "timeout_secs": 1})).await;
    let took = started.elapsed();
    assert_eq!((own.status, own.error_kind()), (504, "Timeout"), "{}", own.text);
    assert!(own.error_message().contains("within 1 s;"), "{}", own.text);
    assert!(own.error_message().contains("may still be running"), "{}", own.text);
    assert!(took >= Duration::from_secs(1) && took < Duration::from_secs(5), "{took:?}");

    let started = Instant::now();
    let capped =
        api.invoke(&me, "docker_exec", json!({"container": "web", "command": "hang", "timeout_secs": 60})).await;
    let took = started.elapsed();
    assert_eq!((capped.status, capped.error_kind()), (504, "Timeout"), "{}", capped.text);
    assert!(capped.error_message().contains("within 2 s ([exec_policy] wall_clock_secs)"), "{}", capped.text);
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(6), "{took:?}");

    // The timeout covers an engine slow to find the container, and then nothing ran.
    let started = Instant::now();
    let slow =
        api.invoke(&me, "docker_exec", json!({"container": "slow", "command": ["echo"], "timeout_secs": 1})).await;
    assert_eq!((slow.status, slow.error_kind()), (504, "Timeout"), "{}", slow.text);
    assert!(slow.error_message().contains("nothing was run"), "{}", slow.text);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(fake.commands().len(), 2, "only the two hanging commands were created: {:?}", fake.commands());
}

#[tokio::test]
async fn docker_exec_without_an_engine_is_unavailable_naming_the_socket_and_finds_one_started_later() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("docker.sock");
    let (_home, _d, api) = daemon_with_config(&config(&socket, &["web"], "")).await;
    let me = agent_with(&api, "operator", &["docker.*"]).await;
    let exec = || {
        let (api, me) = (api.clone(), me.clone());
        async move { api.invoke(&me, "docker_exec", json!({"container": "web", "command": ["echo", "up"]})).await }
    };

    let missing = exec().await;
    assert_eq!((missing.status, missing.error_kind()), (503, "Unavailable"), "{}", missing.text);
    let message = missing.error_message();
    assert!(
        message.contains(&socket.display().to_string()) && message.contains("[exec_policy] docker_socket"),
        "{message}"
    );

    // A socket file nobody listens on (an engine that stopped): refused connections.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let refused = exec().await;
    assert_eq!((refused.status, refused.error_kind()), (503, "Unavailable"), "{}", refused.text);
    assert!(refused.error_message().to_lowercase().contains("refused"), "{}", refused.text);

    // The engine comes up on that socket: the next call finds it, no restart needed.
    std::fs::remove_file(&socket).unwrap();
    let fake = FakeDocker::start_at(&socket, vec![Container::new("abc123", "web", true)]).await;
    let up = exec().await;
    assert_eq!(up.status, 200, "{}", up.text);
    assert_eq!(up.body["content"]["stdout"], "up\n");
    assert!(!fake.requests().is_empty());
}

#[tokio::test]
async fn docker_exec_arguments_are_checked_with_their_path_before_the_engine() {
    let fake = engine().await;
    let (_home, _d, api) = daemon_with_config(&config(fake.socket(), &["web"], "")).await;
    let me = agent_with(&api, "operator", &["docker.*"]).await;

    let cases = [
        (json!({"container": "web"}), "command"),
        (json!({"command": ["echo"]}), "container"),
        (json!({"container": "web", "command": 42}), "command"),
        (json!({"container": "web", "command": ["echo", 3]}), "command"),
        (json!({"container": "web", "command": []}), "command"),
        (json!({"container": "web", "command": [""]}), "command"),
        (json!({"container": "web", "command": " \n "}), "command"),
        (json!({"container": "web", "command": "echo \u{0}"}), "command"),
        (json!({"container": "web", "command": ["echo", "a\u{0}b"]}), "command[1]"),
        (json!({"container": "web", "command": ["echo"], "timeout_secs": 0}), "timeout_secs"),
        (json!({"container": "web", "command": ["echo"], "timeout_secs": 3601}), "timeout_secs"),
        (json!({"container": "web", "command": ["echo"], "timeout_secs": -1}), "timeout_secs"),
    ];
    for (args, field) in cases {
        let bad = api.invoke(&me, "docker_exec", args.clone()).await;
        assert_eq!((bad.status, bad.error_kind()), (422, "InvalidArguments"), "{args}: {}", bad.text);
        assert_eq!(bad.body["error"]["fields"][0]["field"], field, "{args}: {}", bad.text);
    }
    let unknown =
        api.invoke(&me, "docker_exec", json!({"container": "web", "command": ["echo"], "user": "root"})).await;
    assert_eq!((unknown.status, unknown.error_kind()), (422, "InvalidArguments"), "{}", unknown.text);
    assert!(unknown.error_message().contains("unknown field `user`"), "{}", unknown.text);
    assert!(fake.requests().is_empty(), "{:?}", fake.requests());

    // The schema the model sees says both forms of `command`.
    let tools = api.get("/api/tools?limit=1000").await;
    let tool = tools.body.as_array().unwrap().iter().find(|t| t["name"] == "docker_exec").expect("registered").clone();
    assert_eq!((tool["family"].clone(), tool["availability"]["state"].clone()), (json!("docker"), json!("registered")));
    let forms: Vec<&Value> =
        tool["schema"]["properties"]["command"]["anyOf"].as_array().unwrap().iter().map(|f| &f["type"]).collect();
    assert_eq!(forms, [&json!("string"), &json!("array")], "{}", tool["schema"]);
    assert_eq!(tool["schema"]["required"], json!(["container", "command"]));
}
