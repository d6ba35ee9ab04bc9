//! Issue 41's attacks on what agents run, each through the real path (the registry, the grant,
//! the tool, bubblewrap, the supervisor): a child reading the daemon's home and the CLI token,
//! a `setsid` chain 150 deep that outlived every way of stopping it, a fork bomb past
//! `max_children`, `allowed_commands` bypassed by git's own options, and a second process in
//! the workspace swapping a folder for a link to the home while the file tools run.

use std::time::Duration;

use kennel_tests::{Api, eventually};
use serde_json::{Value, json};

use crate::{agent_with, daemon_with_config};

async fn start(api: &Api, agent: &str, command: &str) -> i64 {
    let started = api.invoke(agent, "process_start", json!({ "command": command })).await;
    assert_eq!(started.status, 200, "{}", started.text);
    started.body["content"]["process_id"].as_i64().expect("process_id")
}

/// Polls until the child ended; what it wrote to stdout and stderr, and its exit.
async fn finish(api: &Api, agent: &str, id: i64) -> (String, String, Value) {
    let (mut out, mut err) = (String::new(), String::new());
    for _ in 0..500 {
        let p = api.invoke(agent, "process_poll", json!({ "process_id": id })).await.body["content"].clone();
        out.push_str(p["stdout"].as_str().unwrap_or_default());
        err.push_str(p["stderr"].as_str().unwrap_or_default());
        if p["running"] == false && p["more"] == false {
            return (out, err, p["exit"].clone());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("process {id} did not end: {out} {err}");
}

/// How many live processes run a command line that starts with `needle` (the sleepers
/// themselves, not the shells or sandboxes whose arguments name them).
fn count_running(needle: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat.rfind(')').is_some_and(|i| stat[i + 2..].starts_with('Z'));
            !zombie && String::from_utf8_lossy(&cmdline).replace('\0', " ").starts_with(needle)
        })
        .count()
}

use kennel_tests::is_root;

#[tokio::test]
async fn a_child_sees_neither_the_home_nor_another_workspace_nor_the_daemon() {
    let (home, daemon, api) = daemon_with_config("").await;
    let other = agent_with(&api, "neighbour", &["process.*"]).await;
    start(&api, &other, "echo neighbour-secret > mine.txt").await;
    let agent = agent_with(&api, "prisoner", &["process.*"]).await;
    let h = home.path().display();
    let port = daemon.base.rsplit(':').next().unwrap().trim_end_matches('/').to_string();
    let command = format!(
        "cat {h}/cli.token {h}/daemon.json {h}/workspaces/{other}/mine.txt; ls {h} /home /workspace; \
         python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\" || echo no-network"
    );
    let id = start(&api, &agent, &command).await;
    let (out, err, _) = finish(&api, &agent, id).await;
    let token = std::fs::read_to_string(home.path().join("cli.token")).unwrap();
    for secret in [token.trim(), "neighbour-secret", "kennel.db", "\"pid\""] {
        assert!(!out.contains(secret) && !err.contains(secret), "{secret} reached the child:\n{out}\n{err}");
    }
    assert!(err.contains("No such file"), "the home does not exist in the sandbox: {err}");
    assert!(out.contains("no-network"), "not even the daemon's own port: {out}\n{err}");
}

/// A script in the workspace that starts a chain of `depth` processes, each in a session of
/// its own (`setsid`), each then sleeping `tag`: what escaped the old supervisor's kill rounds.
fn plant_chain(home: &std::path::Path, agent: &str) {
    let dir = home.join("workspaces").join(agent);
    std::fs::create_dir_all(&dir).unwrap();
    let script = "d=$1\nif [ \"$d\" -gt 0 ]; then setsid sh ./chain.sh $((d - 1)) $2 & fi\nexec sleep $2\n";
    std::fs::write(dir.join("chain.sh"), script).unwrap();
}

/// Starts the chain and waits until all `depth + 1` sleepers run.
async fn chain(api: &Api, agent: &str, depth: usize, tag: &str) -> i64 {
    let id = start(api, agent, &format!("sh ./chain.sh {depth} {tag}")).await;
    let all = eventually(Duration::from_secs(30), || async { count_running(&format!("sleep {tag}")) > depth }).await;
    assert!(all, "the chain of {depth} started: {} running", count_running(&format!("sleep {tag}")));
    id
}

async fn none_left(tag: &str, within: Duration) {
    let needle = format!("sleep {tag}");
    let gone = eventually(within, || async { count_running(&needle) == 0 }).await;
    assert!(gone, "{} of the chain still run", count_running(&needle));
}

#[tokio::test]
async fn a_setsid_chain_150_deep_ends_with_kill_wall_clock_agent_stop_and_the_daemons_kill_9() {
    const DEPTH: usize = 150;
    let tag = |n: u32| format!("{n}.{}", std::process::id());
    let (home, daemon, api) = daemon_with_config("[exec_policy]\nkill_grace_secs = 1\n").await;

    let agent = agent_with(&api, "chained", &["process.*"]).await;
    plant_chain(home.path(), &agent);
    let id = chain(&api, &agent, DEPTH, &tag(4101)).await;
    let killed = api.invoke(&agent, "process_kill", json!({ "process_id": id })).await;
    assert_eq!(killed.body["content"]["exit"]["reason"], "killed", "{}", killed.text);
    none_left(&tag(4101), Duration::from_secs(5)).await;

    chain(&api, &agent, DEPTH, &tag(4102)).await;
    let stopped = api.post(&format!("/api/agents/{agent}/stop"), json!({})).await;
    assert_eq!(stopped.status, 200, "{}", stopped.text);
    none_left(&tag(4102), Duration::from_secs(5)).await;

    let agent = agent_with(&api, "chained-again", &["process.*"]).await;
    plant_chain(home.path(), &agent);
    chain(&api, &agent, DEPTH, &tag(4103)).await;
    daemon.kill().await;
    none_left(&tag(4103), Duration::from_secs(5)).await;

    let (home, _daemon, api) = daemon_with_config("[exec_policy]\nwall_clock_secs = 4\nkill_grace_secs = 1\n").await;
    let agent = agent_with(&api, "chained-late", &["process.*"]).await;
    plant_chain(home.path(), &agent);
    let id = chain(&api, &agent, DEPTH, &tag(4104)).await;
    none_left(&tag(4104), Duration::from_secs(15)).await;
    let (_, _, exit) = finish(&api, &agent, id).await;
    assert_eq!(exit["reason"], "wall_clock", "{exit}");
}

#[tokio::test]
async fn sandboxed_children_die_with_their_supervisor() {
    let (_home, daemon, api) = daemon_with_config("").await;
    let agent = agent_with(&api, "orphaned", &["process.*"]).await;
    let tag = format!("4105.{}", std::process::id());
    let started = api.invoke(&agent, "process_start", json!({ "command": format!("sleep {tag}") })).await;
    let supervisor = started.body["content"]["pgid"].as_i64().expect(&started.text);
    assert!(eventually(Duration::from_secs(5), || async { count_running(&format!("sleep {tag}")) == 1 }).await);
    // The daemon cannot act (stopped) when the supervisor is killed: the sandbox goes anyway.
    let signal = |sig: &str, pid: String| {
        assert!(std::process::Command::new("kill").args([sig, &pid]).status().unwrap().success());
    };
    signal("-STOP", daemon.pid().to_string());
    signal("-KILL", supervisor.to_string());
    none_left(&tag, Duration::from_secs(5)).await;
    signal("-CONT", daemon.pid().to_string());
}

#[tokio::test]
async fn a_childs_tree_cannot_fork_past_max_processes() {
    if !is_root() {
        // Unprivileged, a daemon makes control groups only where its cgroup was delegated to it
        // (README, Processes); the test run's CI is root, where this always holds.
        eprintln!("skipped: not root, so no control group can be made here");
        return;
    }
    let (_home, _d, api) = daemon_with_config("[exec_policy]\nmax_children = 8\nmax_processes = 64\n").await;
    let agent = agent_with(&api, "forker", &["process.*"]).await;
    let tag = format!("fork-bomb-{}", std::process::id());
    // 400 forks, each child sleeping; a fork the limit refuses is counted, not fatal.
    let bomb = format!(
        "python3 -c 'import os, time  # {tag}\nmade = 0\nfor _ in range(400):\n    try:\n        pid = os.fork()\n    except OSError:\n        continue\n    if pid == 0:\n        time.sleep(60)\n        os._exit(0)\n    made += 1\nprint(\"forked\", made, flush=True)\ntime.sleep(60)'"
    );
    let id = start(&api, &agent, &bomb).await;
    let mut out = String::new();
    for _ in 0..300 {
        let p = api.invoke(&agent, "process_poll", json!({ "process_id": id })).await;
        out.push_str(p.body["content"]["stdout"].as_str().unwrap_or_default());
        if out.contains("forked") || p.body["content"]["running"] == false {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let made: usize =
        out.trim().strip_prefix("forked ").and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{out}"));
    let running = count_running(&tag);
    assert!(made > 8 && made < 64, "{made} forks succeeded (max_processes = 64)");
    assert!(running <= 64, "{running} processes of one child run (max_processes = 64)");
    api.invoke(&agent, "process_kill", json!({ "process_id": id, "signal": "KILL" })).await;
    let gone = eventually(Duration::from_secs(5), || async { count_running(&tag) == 0 }).await;
    assert!(gone, "{} still run", count_running(&tag));
}

#[tokio::test]
async fn allowed_commands_narrow_the_programs_and_the_sandbox_holds_what_they_do() {
    let (home, _d, api) = daemon_with_config("[exec_policy]\nallowed_commands = [\"git\"]\n").await;
    let agent = agent_with(&api, "gitter", &["process.*"]).await;
    let token_path = home.path().join("cli.token");
    let token = std::fs::read_to_string(&token_path).unwrap();
    // git runs any command through an alias: that command runs in the sandbox too.
    let line = format!("git -c 'alias.x=!cat {} /proc/1/environ' x", token_path.display());
    let id = start(&api, &agent, &line).await;
    let (out, err, _) = finish(&api, &agent, id).await;
    assert!(!out.contains(token.trim()) && !err.contains(token.trim()), "{out}\n{err}");
    assert!(err.contains("No such file"), "{err}");
    // Git's configuration through the environment is refused before anything runs.
    let env = json!({ "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "alias.x", "GIT_CONFIG_VALUE_0": "!id" });
    let refused = api.invoke(&agent, "process_start", json!({ "command": "git x", "env": env })).await;
    assert_eq!(refused.error_kind(), "Forbidden", "{}", refused.text);
}

/// The file-tool race of issue 41 end to end: a sandboxed process of the agent swaps the
/// folder `d` for a link to `$KENNEL_HOME` as fast as it can while the agent writes and
/// removes files in `d`. Against 951b06f 9 of 1,200 writes landed in the home and
/// `decoy.conf` was overwritten at once.
#[tokio::test]
async fn a_second_process_swapping_a_folder_for_a_link_never_lets_a_file_tool_out() {
    let (home, _d, api) = daemon_with_config("").await;
    std::fs::write(home.path().join("decoy.conf"), "decoy").unwrap();
    let agent = agent_with(&api, "racer", &["process.*", "files.*"]).await;
    let h = home.path().display();
    let swapper = format!("mkdir -p d; while true; do mv d d.real; ln -s {h} d; rm d; mv d.real d; done");
    let id = start(&api, &agent, &swapper).await;
    for i in 0..1200 {
        let path = if i % 2 == 0 { "d/x" } else { "d/decoy.conf" };
        api.invoke(&agent, "edit_file", json!({ "path": path, "mode": "write", "content": "agent wrote this" })).await;
        if i % 10 == 0 {
            api.invoke(&agent, "remove_file", json!({ "path": "d/decoy.conf" })).await;
        }
    }
    api.invoke(&agent, "process_kill", json!({ "process_id": id, "signal": "KILL" })).await;
    assert_eq!(std::fs::read_to_string(home.path().join("decoy.conf")).unwrap(), "decoy", "untouched");
    assert!(!home.path().join("x").exists(), "no file was written into the home");
    // Where the writes that ran landed depends on how the swaps fell (`mv` into a folder
    // that exists, `ln -s` inside one): anywhere in the workspace, never outside it.
    let ws = home.path().join("workspaces").join(&agent);
    let written = files_named(&ws, "x");
    assert!(
        written.iter().any(|f| std::fs::read_to_string(f).is_ok_and(|t| t == "agent wrote this")),
        "the writes that ran went into the workspace: {written:?}"
    );
}

/// The regular files called `name` under `dir`, links not followed.
fn files_named(dir: &std::path::Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for item in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(kind) = item.file_type() else { continue };
        if kind.is_dir() {
            found.extend(files_named(&item.path(), name));
        } else if kind.is_file() && item.file_name() == name {
            found.push(item.path());
        }
    }
    found
}

/// Attack 6 of issue 41: a sandbox with a network had the host's, so it reached the daemon's
/// API and private loopback servers. Now its only way out is the address guard's proxy.
#[tokio::test]
async fn with_a_network_a_child_reaches_out_only_through_the_address_guard() {
    let open = kennel_tests::serve_html("<p>allowed page</p>".into()).await;
    let private = kennel_tests::serve_html("<p>private page</p>".into()).await;
    let config = format!("[exec_policy]\nnetwork = true\nallowed_hosts = [\"127.0.0.1:{open}\"]\n");
    let (_home, daemon, api) = daemon_with_config(&config).await;
    let agent = agent_with(&api, "surfer", &["process.*"]).await;
    let api_port = daemon.base.rsplit(':').next().unwrap().trim_end_matches('/').to_string();
    let script = format!(
        "import socket, urllib.request\n\
         def get(url):\n    try:\n        return urllib.request.urlopen(url, timeout=5).read().decode()\n    except Exception as e:\n        return 'refused ' + str(e)\n\
         print('proxied:', get('http://127.0.0.1:{open}/'))\n\
         print('private:', get('http://127.0.0.1:{private}/'))\n\
         print('daemon:', get('http://127.0.0.1:{api_port}/healthz'))\n\
         try:\n    socket.create_connection(('127.0.0.1', {open}), 2)\n    print('direct: open')\nexcept OSError:\n    print('direct: refused')\n"
    );
    std::fs::create_dir_all(_home.path().join("workspaces").join(&agent)).unwrap();
    std::fs::write(_home.path().join("workspaces").join(&agent).join("net.py"), script).unwrap();
    let id = start(&api, &agent, "python3 net.py").await;
    let (out, err, _) = finish(&api, &agent, id).await;
    assert!(
        out.contains("proxied: <p>allowed page</p>"),
        "an allowed host is reached through the proxy:\n{out}\n{err}"
    );
    assert!(out.contains("private: refused") && !out.contains("private page"), "{out}");
    assert!(out.contains("daemon: refused"), "the daemon's own API never: {out}");
    assert!(out.contains("direct: refused"), "nothing but the proxy: {out}");
}

/// The same for a script tool whose manifest asks for a network: the proxy, not the host's.
#[tokio::test]
async fn a_script_tool_with_a_network_goes_through_the_address_guard_too() {
    let open = kennel_tests::serve_html("<p>allowed page</p>".into()).await;
    let home = kennel_tests::Home::with_config(&format!("[exec_policy]\nallowed_hosts = [\"127.0.0.1:{open}\"]\n"));
    let folder = home.path().join("tools/script/fetch");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("tool.toml"), "description = \"Fetches\"\nrun = \"fetch.py\"\nnetwork = true\n")
        .unwrap();
    let fetch = format!(
        "#!/usr/bin/env python3\nimport socket, urllib.request\n\
         print(urllib.request.urlopen('http://127.0.0.1:{open}/', timeout=5).read().decode())\n\
         try:\n    socket.create_connection(('127.0.0.1', {open}), 2)\n    print('direct: open')\n\
         except OSError:\n    print('direct: refused')\n"
    );
    std::fs::write(folder.join("fetch.py"), fetch).unwrap();
    std::fs::set_permissions(folder.join("fetch.py"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let token = home.token("tests").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    let agent = agent_with(&api, "fetcher", &["script_*"]).await;
    let offered = eventually(Duration::from_secs(10), || async {
        api.get("/api/tools?limit=1000").await.text.contains("\"script_fetch\"")
    })
    .await;
    assert!(offered, "the tool is offered");
    let fetched = api.invoke(&agent, "script_fetch", json!({})).await;
    assert_eq!(fetched.status, 200, "{}", fetched.text);
    let text = fetched.body["content"].as_str().unwrap_or_default();
    assert!(text.contains("<p>allowed page</p>") && text.contains("direct: refused"), "{text}");
}

/// The same attacks on a daemon run as an unprivileged user, as the README asks deployments
/// to: bubblewrap makes its namespaces without privileges, no control group can be made
/// (the address-space limit stands in for memory), and the sandbox holds all the same.
#[tokio::test]
async fn as_an_unprivileged_daemon_the_sandbox_holds_the_same() {
    let home = kennel_tests::Home::with_config("[exec_policy]\nkill_grace_secs = 1\n");
    let token = home.token("tests").await;
    let daemon = home.start_unprivileged().await;
    let api = daemon.api(&token);
    let agent = agent_with(&api, "nobody-agent", &["process.*"]).await;
    let h = home.path().display();
    let id = start(&api, &agent, &format!("cat {h}/cli.token; id -u; ls /workspace")).await;
    let (out, err, _) = finish(&api, &agent, id).await;
    let token_text = std::fs::read_to_string(home.path().join("cli.token")).unwrap();
    assert!(!out.contains(token_text.trim()) && err.contains("No such file"), "{out}\n{err}");

    plant_chain(home.path(), &agent);
    if is_root() {
        let chowned = std::process::Command::new("chown").args(["-R", "65534:65534"]).arg(home.path()).status();
        assert!(chowned.unwrap().success());
    }
    let tag = format!("4107.{}", std::process::id());
    let id = chain(&api, &agent, 150, &tag).await;
    api.invoke(&agent, "process_kill", json!({ "process_id": id })).await;
    none_left(&tag, Duration::from_secs(5)).await;
}

/// Attack 1's last step: a hard link to `cli.token` planted in the workspace (by anything
/// that could once see the home) read back through `read_file` returned the token. A file
/// with another name is not opened now, by any tool.
#[tokio::test]
async fn a_planted_hard_link_to_the_cli_token_is_not_read() {
    let (home, _d, api) = daemon_with_config("").await;
    let agent = agent_with(&api, "linker", &["files.*"]).await;
    let ws = home.path().join("workspaces").join(&agent);
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::hard_link(home.path().join("cli.token"), ws.join("notes.txt")).unwrap();
    let token = std::fs::read_to_string(home.path().join("cli.token")).unwrap();
    for (tool, args) in [
        ("read_file", json!({ "path": "notes.txt" })),
        ("find_files", json!({ "mode": "search", "pattern": "." })),
        ("remove_file", json!({ "path": "notes.txt" })),
    ] {
        let r = api.invoke(&agent, tool, args).await;
        assert!(!r.text.contains(token.trim()), "{tool} returned the token: {}", r.text);
    }
    let read = api.invoke(&agent, "read_file", json!({ "path": "notes.txt" })).await;
    assert_eq!(read.error_kind(), "Forbidden", "{}", read.text);
    assert!(read.error_message().contains("hard links"), "{}", read.text);
}
