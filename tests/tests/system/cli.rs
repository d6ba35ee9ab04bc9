//! The terminal as a front: agent types from files, agents spawned and stopped, a chat on a
//! real terminal (a pty) that streams, and status — the real binary against a real daemon.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use kennel_tests::Home;
use kennel_tests::fake_llm::{FakeLlm, Scripted};
use kennel_tests::pty::Pty;
use serde_json::{Value, json};

const HELPER_TOML: &str = r#"name = "helper"
description = "Tells the time"
model = "m"

[capabilities]
tools = ["system_time"]
"#;

fn write(home: &Home, file: &str, text: &str) -> String {
    let path = home.path().join(file);
    std::fs::write(&path, text).expect("write the manifest");
    path.display().to_string()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The fake provider, a home whose `helper` type was applied from a file, an API token's
/// client, the running daemon, and an agent `helper` spawned with the CLI.
async fn with_helper() -> (FakeLlm, Home, kennel_tests::Daemon, kennel_tests::Api) {
    let llm = FakeLlm::start().await;
    let home = Home::with_config(&llm.provider_config("fake", "openai"));
    home.cli_ok(&["type", "apply", &write(&home, "helper.toml", HELPER_TOML)]).await;
    let token = home.token("tests").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    home.cli_ok(&["agent", "spawn", "helper"]).await;
    (llm, home, daemon, api)
}

#[tokio::test]
async fn apply_spawn_chat_on_a_terminal_and_stop() {
    let llm = FakeLlm::start().await;
    let home = Home::with_config(&llm.provider_config("fake", "openai"));
    let file = write(&home, "helper.toml", HELPER_TOML);
    // No daemon yet: the type goes straight into the store.
    assert_eq!(home.cli_ok(&["type", "apply", &file]).await.lines().next(), Some("agent type `helper` created"));
    let token = home.token("tests").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);

    // With the daemon running, an update goes through it and is there at once.
    let file = write(&home, "helper.toml", &HELPER_TOML.replace("Tells the time", "Tells the time, politely"));
    assert!(home.cli_ok(&["type", "apply", &file]).await.starts_with("agent type `helper` updated"));
    assert_eq!(api.get("/api/templates/helper").await.body["description"], "Tells the time, politely");

    let spawned: Value = serde_json::from_str(&home.cli_ok(&["agent", "spawn", "helper", "--json"]).await).unwrap();
    assert_eq!((spawned["name"].as_str(), spawned["status"].as_str()), (Some("helper"), Some("running")));

    llm.push(Scripted::call("system_time", json!({})));
    llm.push(Scripted::SlowText { text: "It is a quarter past nine exactly.".into(), piece_millis: 300 });
    let mut chat = Pty::spawn(&mut home.command(&["chat", "helper"]));
    let at = chat.expect_after(0, "you> ", Duration::from_secs(10)).await;
    chat.type_line("What time is it?");
    let at = chat.expect_after(at, "→ system_time {}", Duration::from_secs(10)).await;
    let at = chat.expect_after(at, "← system_time ok", Duration::from_secs(10)).await;
    // Streamed: the reply's first words are on the terminal while the rest is being written.
    let at = chat.expect_after(at, "helper> It", Duration::from_secs(10)).await;
    assert!(!chat.output().contains("exactly."), "the whole reply came at once:\n{}", chat.output());
    let at = chat.expect_after(at, "exactly.", Duration::from_secs(10)).await;
    chat.expect_after(at, "you> ", Duration::from_secs(10)).await;
    chat.type_line("/exit");
    assert!(chat.wait(Duration::from_secs(10)).await.success(), "{}", chat.output());
    assert_eq!(llm.remaining(), 0);

    // The turn was the CLI's, in a session labelled as the terminal's.
    let sessions = api.get("/api/agents/helper/sessions").await;
    assert_eq!(sessions.body[0]["label"], "kennel chat");
    let audit = api.get("/api/audit?tool=system_time").await;
    assert_eq!(audit.body[0]["caller"], "cli", "{}", audit.text);

    let stopped = home.cli_ok(&["agent", "stop", "helper"]).await;
    assert!(stopped.starts_with("agent `helper` stopped"), "{stopped}");
    let actions = api.get("/api/audit/actions?actor=cli").await;
    let done: Vec<&str> = actions.body.as_array().unwrap().iter().filter_map(|a| a["action"].as_str()).collect();
    for action in ["type.create", "type.update", "agent.spawn", "agent.stop"] {
        assert!(done.contains(&action), "{action} is not in the CLI's actions: {done:?}");
    }

    // The chat on a stopped agent says so.
    let out = home.cli_with_stdin(&["chat", spawned["id"].as_str().unwrap()], "hello\n").await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("agent `helper` is stopped"), "{}", stderr(&out));
}

#[tokio::test]
async fn a_chat_from_a_script_continues_a_session_and_fails_loudly() {
    let (llm, home, _daemon, api) = with_helper().await;

    let nothing_said = home.cli_with_stdin(&["chat", "helper"], "\n/exit\n").await;
    assert!(nothing_said.status.success(), "{}", stderr(&nothing_said));
    let sessions = api.get("/api/agents/helper/sessions").await;
    assert_eq!(sessions.body, json!([]), "a chat that said nothing opened no session");

    llm.push(Scripted::text("Hello there."));
    let out = home.cli_with_stdin(&["chat", "helper"], "hi\n").await;
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(shown.contains("helper> Hello there.") && !shown.contains("you> "), "no prompt off a terminal: {shown}");
    // Banners go to stderr off a terminal: stdout holds what was said.
    assert!(!shown.contains("chatting with") && !shown.contains("(session "), "{shown}");
    let said = stderr(&out);
    let session = said.split("(session ").nth(1).and_then(|s| s.split(':').next()).expect("the session id");

    // The same session goes on: the model sees the earlier turn.
    llm.push(Scripted::text("Still here."));
    let out = home.cli_with_stdin(&["chat", "helper", "--session", session], "again\n").await;
    assert!(out.status.success(), "{}", stderr(&out));
    let sent = llm.requests();
    let messages = sent.last().unwrap().body["messages"].as_array().unwrap().clone();
    assert!(messages.iter().any(|m| m["content"] == "Hello there."), "{messages:?}");

    // What the agent writes is untrusted: no escape sequence of it reaches the terminal.
    llm.push(Scripted::text("\u{1b}]52;c;b3duZWQ=\u{7}\u{1b}[2J\rhello"));
    let out = home.cli_with_stdin(&["chat", "helper"], "paint\n").await;
    assert!(!out.stdout.contains(&0x1b) && !out.stdout.contains(&b'\r'), "{:?}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("\\u{1b}]52;c;b3duZWQ=\\u{7}\\u{1b}[2J\\u{d}hello"));

    // A provider that refuses: the turn's failure is shown and the exit status says so.
    llm.push(Scripted::error(400, r#"{"error":{"message":"model m is not served here"}}"#));
    let out = home.cli_with_stdin(&["chat", "helper"], "one more\n").await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("turn failed"), "{out:?}");
    assert!(stderr(&out).contains("1 of 1 turns failed"), "{}", stderr(&out));

    let unknown =
        home.cli_with_stdin(&["chat", "helper", "--session", "01900000-0000-7000-8000-000000000000"], "x\n").await;
    assert_eq!(unknown.status.code(), Some(1), "{}", stderr(&unknown));
    assert!(stderr(&unknown).contains("no session"), "{}", stderr(&unknown));
}

#[tokio::test]
async fn a_manifest_with_mistakes_names_each_line_and_changes_nothing() {
    let home = Home::new();
    let toml = write(
        &home,
        "bad.toml",
        "name = \"bad\"\nmodel = \"m\"\n\n[capabilities]\ntools = [\"system_time\", \"not a pattern!\"]\n\n[[cron]]\nschedule = \"61 * * * *\"\nprompt = \"x\"\n",
    );
    let out = home.cli(&["type", "apply", &toml]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains(&format!("{toml}:5:25: capabilities.tools[1]:")), "{err}");
    assert!(err.contains(&format!("{toml}:8:1: cron[0].schedule:")), "{err}");
    assert!(err.contains("2 problems; nothing was changed"), "{err}");

    let json = write(&home, "bad.json", "{\n  \"name\": \"bad\",\n  \"tool_mode\": \"eager\"\n}\n");
    let err = stderr(&home.cli(&["type", "apply", &json]).await);
    assert!(err.contains(&format!("{json}:3:3: tool_mode:")), "{err}");

    let syntax = write(&home, "broken.toml", "name = \"bad\"\ndescription = \"never closed\n");
    let err = stderr(&home.cli(&["type", "apply", &syntax]).await);
    assert!(err.contains(&format!("{syntax}:2:")) && err.contains("not valid TOML"), "{err}");

    assert_eq!(home.cli_ok(&["type", "list"]).await.lines().count(), 1, "only the heading: nothing was stored");
    let missing = home.cli(&["type", "apply", "/no/such/file.toml"]).await;
    assert!(stderr(&missing).contains("cannot read /no/such/file.toml"), "{}", stderr(&missing));
}

#[tokio::test]
async fn types_export_as_the_toml_apply_reads_back() {
    let home = Home::new();
    home.cli_ok(&["type", "apply", &write(&home, "helper.toml", HELPER_TOML)]).await;
    let exported = home.cli_ok(&["type", "export", "helper"]).await;
    assert!(exported.contains("description = \"Tells the time\""), "{exported}");
    let out = home.cli_with_stdin(&["type", "apply", "-"], &exported.replace("Tells the time", "Again")).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Value = serde_json::from_str(&home.cli_ok(&["type", "list", "--json"]).await).unwrap();
    assert_eq!(listed[0]["description"], "Again");
    let as_json: Value = serde_json::from_str(&home.cli_ok(&["type", "export", "helper", "--json"]).await).unwrap();
    assert_eq!(as_json["capabilities"]["tools"], json!(["system_time"]));
    let none = home.cli(&["type", "export", "nobody"]).await;
    assert_eq!(none.status.code(), Some(1));
    assert!(stderr(&none).contains("nobody"), "{}", stderr(&none));
}

#[tokio::test]
async fn without_a_daemon_its_commands_say_so_and_exit_3() {
    let home = Home::new();
    for args in [&["status"][..], &["agent", "spawn", "helper"], &["agent", "stop", "helper"], &["chat", "helper"]] {
        let out = home.cli(args).await;
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("no Kennel daemon is running for") && err.contains("kennel start"), "{args:?}: {err}");
    }

    // A daemon that died without cleaning up leaves its files; the CLI tells that apart.
    let daemon = home.start().await;
    assert!(home.cli(&["status"]).await.status.success());
    daemon.kill().await;
    let out = home.cli(&["status"]).await;
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("no Kennel daemon answers at http://127.0.0.1:"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("Connection refused"), "no connection error dump: {}", stderr(&out));
}

#[tokio::test]
async fn the_cli_token_is_private_new_at_each_start_and_gone_after() {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new();
    let daemon = home.start().await;
    let token_file = home.path().join("cli.token");
    assert_eq!(std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777, 0o600);
    let first = std::fs::read_to_string(&token_file).unwrap().trim().to_string();
    let described: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("daemon.json")).unwrap()).unwrap();
    assert_eq!(described["url"], daemon.base.as_str());
    assert_eq!(described["pid"], daemon.pid());
    assert_eq!(daemon.api(&first).get("/api/status").await.status, 200);

    let (code, _) = daemon.stop().await;
    assert_eq!(code, Some(0));
    assert!(!token_file.exists() && !home.path().join("daemon.json").exists(), "removed at a clean stop");

    let daemon = home.start().await;
    let second = std::fs::read_to_string(&token_file).unwrap().trim().to_string();
    assert_ne!(first, second);
    assert_eq!(daemon.api(&first).get("/api/status").await.status, 401, "the last run's token is dead");
    assert_eq!(daemon.api(&second).get("/api/status").await.status, 200);
}

#[tokio::test]
async fn status_shows_address_uptime_agents_and_use_today() {
    let llm = FakeLlm::start().await;
    let config = format!(
        "{}\n[providers.fake.models.m]\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 2.0\n",
        llm.provider_config("fake", "openai")
    );
    let home = Home::with_config(&config);
    home.cli_ok(&["type", "apply", &write(&home, "helper.toml", HELPER_TOML)]).await;
    let daemon = home.start().await;
    home.cli_ok(&["agent", "spawn", "helper"]).await;
    home.cli_ok(&["agent", "spawn", "helper", "--name", "spare"]).await;
    home.cli_ok(&["agent", "stop", "spare"]).await;
    llm.set_usage(1000, 0, 500);
    llm.push(Scripted::text("ok"));
    home.cli_with_stdin(&["chat", "helper"], "hi\n").await;

    let text = home.cli_ok(&["status"]).await;
    assert!(text.contains(&format!("daemon     {} (pid {}", daemon.base, daemon.pid())), "{text}");
    assert!(text.contains("agents     1 running, 0 paused, 1 stopped"), "{text}");
    assert!(text.contains("1 model calls, 1,000 tokens in, 500 out, $0.0020"), "{text}");
    let json: Value = serde_json::from_str(&home.cli_ok(&["status", "--json"]).await).unwrap();
    assert_eq!(json["url"], daemon.base.as_str());
    assert_eq!(json["agents"], json!({"running": 1, "paused": 0, "stopped": 1, "workflow_steps": 0}));
    assert_eq!(json["usage_today"]["calls"], 1);
    assert!(json["uptime_secs"].as_u64().is_some() && json["started_at"].as_str().is_some());
}

#[tokio::test]
async fn every_command_teaches_by_example() {
    let home = Home::new();
    let commands: &[&[&str]] = &[
        &[],
        &["start"],
        &["status"],
        &["chat"],
        &["type", "apply"],
        &["type", "export"],
        &["type", "list"],
        &["agent", "list"],
        &["agent", "spawn"],
        &["agent", "stop"],
        &["agent", "grant"],
        &["agent", "revoke"],
        &["agent", "start"],
        &["agent", "remove"],
        &["operator", "add"],
        &["operator", "list"],
        &["operator", "remove"],
        &["operator", "passwd"],
        &["token", "create"],
        &["token", "revoke"],
        &["token", "list"],
    ];
    for command in commands {
        let mut args = command.to_vec();
        args.push("--help");
        let help = home.cli_ok(&args).await;
        let examples = help.split_once("Examples:\n").map(|(_, e)| e).unwrap_or_default();
        let shown = format!("kennel {}", command.join(" "));
        assert!(examples.contains(shown.trim_end()), "`{shown}` has no examples of itself:\n{help}");
    }
}

#[tokio::test]
async fn through_a_running_daemon_types_are_created_and_its_refusals_have_lines() {
    let llm = FakeLlm::start().await;
    let home = Home::with_config(&llm.provider_config("fake", "openai"));
    let token = home.token("tests").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);

    let json = write(&home, "scout.json", "{\n  \"name\": \"scout\",\n  \"model\": \"m\"\n}\n");
    assert_eq!(home.cli_ok(&["type", "apply", &json]).await.trim(), "agent type `scout` created");
    assert_eq!(api.get("/api/templates/scout").await.status, 200, "in the daemon at once");
    // One row in the operator-action log: the creation, no refused replacement before it.
    let actions = api.get("/api/audit/actions?actor=cli").await;
    let rows: Vec<(&str, &str)> = actions
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["action"].as_str().unwrap(), a["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(rows, [("type.create", "ok"), ("token.create", "ok")], "newest first");

    // Only the daemon knows its providers: its refusal is shown at the line, once.
    let toml = write(&home, "scout.toml", "name = \"scout\"\nmodel = \"m\"\n\nprovider = \"elsewhere\"\n");
    let out = home.cli(&["type", "apply", &toml]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains(&format!("{toml}:4:1: provider: `elsewhere` is not a provider of this daemon")), "{err}");
    assert_eq!(err.matches("elsewhere").count(), 1, "{err}");
    assert_eq!(api.get("/api/templates/scout").await.body["provider"], Value::Null, "unchanged");

    // A file's own values are untrusted on the terminal too.
    let hostile = write(&home, "hostile.toml", "name = \"x\"\ntool_mode = \"\\u001b]0;owned\\u0007\"\n");
    let out = home.cli(&["type", "apply", &hostile]).await;
    assert!(!out.stderr.contains(&0x1b) && !out.stderr.contains(&0x07), "{}", stderr(&out));

    // What a person types as an agent never leaves its place in the URL.
    for bad in ["..", ".", "a/b"] {
        let out = home.cli(&["agent", "stop", bad]).await;
        assert_eq!(out.status.code(), Some(1), "{bad}");
        assert!(stderr(&out).contains("is neither an agent's name nor its id"), "{bad}: {}", stderr(&out));
    }
}

#[tokio::test]
async fn a_script_reads_only_replies_with_quiet_or_json_and_slash_commands_stay_local() {
    let (llm, home, _daemon, api) = with_helper().await;

    // Commands are the chat's own: none reaches the model, and none opens a session.
    let out = home.cli_with_stdin(&["chat", "helper"], "/help\n/session\n/bogus now\n/exit\n").await;
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("/new ") && said.contains("//text"), "the help lists the commands: {said}");
    assert!(said.contains("no session yet"), "{said}");
    assert!(said.contains("unknown command `/bogus`: /help lists them"), "{said}");
    assert!(llm.requests().is_empty(), "nothing was sent to the model");
    assert_eq!(api.get("/api/agents/helper/sessions").await.body, json!([]));

    // --quiet: the replies and nothing else; `//` sends a message that starts with `/`.
    llm.push(Scripted::call("system_time", json!({}))).push(Scripted::text("Noon."));
    llm.push(Scripted::text("A path."));
    let out = home.cli_with_stdin(&["chat", "helper", "--quiet"], "time?\n//etc/hosts is what?\n").await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Noon.\nA path.\n");
    assert_eq!(stderr(&out), "", "no banners anywhere");
    let last = llm.requests().pop().unwrap();
    let sent = last.body["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(sent, "/etc/hosts is what?");

    // /new between two messages: two sessions.
    llm.push(Scripted::text("One.")).push(Scripted::text("Two."));
    let before = api.get("/api/agents/helper/sessions").await.body.as_array().unwrap().len();
    let out = home.cli_with_stdin(&["chat", "helper", "--quiet"], "a\n/new\nb\n").await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "One.\nTwo.\n");
    assert_eq!(api.get("/api/agents/helper/sessions").await.body.as_array().unwrap().len(), before + 2);

    // --json: one object per turn, the API's result or the error, each on its line.
    llm.push(Scripted::text("Fine."));
    llm.push(Scripted::error(400, r#"{"error":{"message":"model m is not served here"}}"#));
    let out = home.cli_with_stdin(&["chat", "helper", "--json"], "how are you?\nand now?\n").await;
    assert_eq!(out.status.code(), Some(1), "a failed turn fails the script");
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["reply"], "Fine.");
    assert!(lines[0]["session_id"].is_string() && lines[0]["trace"].is_array(), "{}", lines[0]);
    assert!(lines[1]["error"].as_str().unwrap().contains("not served here"), "{}", lines[1]);
}

#[tokio::test]
async fn ctrl_c_stops_the_running_turn_and_the_chat_goes_on() {
    let (llm, home, _daemon, api) = with_helper().await;
    llm.push(Scripted::SlowText { text: "word ".repeat(80), piece_millis: 250 });
    llm.push(Scripted::text("Still here."));
    let mut chat = Pty::spawn(&mut home.command(&["chat", "helper"]));
    let at = chat.expect_after(0, "you> ", Duration::from_secs(10)).await;
    chat.type_line("talk for a long time");
    let at = chat.expect_after(at, "helper> word", Duration::from_secs(10)).await;
    chat.interrupt();
    let at = chat.expect_after(at, "(stopping the turn", Duration::from_secs(5)).await;
    let at = chat.expect_after(at, "(the turn ended: cancelled)", Duration::from_secs(5)).await;
    let at = chat.expect_after(at, "you> ", Duration::from_secs(5)).await;
    // The agent runs on, and the same chat's next message is answered.
    chat.type_line("are you there?");
    let at = chat.expect_after(at, "helper> Still here.", Duration::from_secs(10)).await;
    chat.expect_after(at, "you> ", Duration::from_secs(10)).await;
    assert_eq!(api.get("/api/agents/helper").await.body["status"], "running");
    let sessions = api.get("/api/agents/helper/sessions").await;
    let session = sessions.body[0]["id"].as_str().unwrap();
    let detail = api.get(&format!("/api/sessions/{session}")).await;
    assert_eq!(detail.body["failures"][0]["kind"], "Cancelled", "{}", detail.text);
    assert!(detail.body["failures"][0]["message"].as_str().unwrap().contains("by cli"), "{}", detail.text);

    // At the prompt, where the line editor has the terminal in raw mode, Ctrl-C is a key
    // (not a signal), and it leaves; the raw mode goes with it.
    assert!(!chat.in_line_mode(), "the prompt is not being edited");
    chat.type_keys("\x03");
    let left = chat.wait(Duration::from_secs(5)).await;
    assert_eq!(left.code(), Some(130), "{}", chat.output());
    assert!(chat.in_line_mode(), "the chat left the terminal in raw mode");
}

/// The last message the provider was sent, as the person typed it.
fn last_typed(llm: &FakeLlm) -> String {
    let requests = llm.requests();
    let messages = requests.last().expect("a request").body["messages"].as_array().cloned().unwrap_or_default();
    let user = messages.iter().rev().find(|m| m["role"] == "user").expect("a user message");
    user["content"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn a_chat_on_a_terminal_edits_lines_and_recalls_them_in_the_next_chat() {
    const UP: &str = "\x1b[A";
    const LEFT: &str = "\x1b[D";
    let (llm, home, _daemon, _api) = with_helper().await;
    llm.push_all(["One.", "Two.", "Three.", "Four."].map(Scripted::text));

    let mut chat = Pty::spawn(&mut home.command(&["chat", "helper"]));
    let at = chat.expect_after(0, "you> ", Duration::from_secs(10)).await;
    // A typo mended in the middle of the line.
    chat.type_keys(&format!("wrld{LEFT}{LEFT}{LEFT}o\r"));
    let at = chat.expect_after(at, "helper> One.", Duration::from_secs(10)).await;
    assert_eq!(last_typed(&llm), "world");
    // The arrow brings the last line back.
    let at = chat.expect_after(at, "you> ", Duration::from_secs(10)).await;
    chat.type_keys(&format!("{UP}\r"));
    let at = chat.expect_after(at, "helper> Two.", Duration::from_secs(10)).await;
    assert_eq!(last_typed(&llm), "world");
    // A line that starts with a space is sent but not kept, as in a shell.
    let at = chat.expect_after(at, "you> ", Duration::from_secs(10)).await;
    chat.type_keys(" my secret\r");
    let at = chat.expect_after(at, "helper> Three.", Duration::from_secs(10)).await;
    assert_eq!(last_typed(&llm), "my secret");
    // Tab completes the chat's own commands.
    let at = chat.expect_after(at, "you> ", Duration::from_secs(10)).await;
    chat.type_keys("/ses\t\r");
    chat.expect_after(at, "session ", Duration::from_secs(10)).await;
    chat.type_keys("/exit\r");
    assert!(chat.wait(Duration::from_secs(10)).await.success(), "{}", chat.output());
    assert!(chat.in_line_mode(), "the chat left the terminal in raw mode");

    let history = home.path().join("chat-history");
    let mode = std::fs::metadata(&history).expect("the history file").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the history holds what was typed: private to its owner");
    let kept = std::fs::read_to_string(&history).unwrap();
    assert_eq!(kept.matches("world").count(), 1, "{kept}");
    assert!(!kept.contains("secret"), "{kept}");

    // The next chat recalls what the last one typed: /exit, /session, then world.
    let mut chat = Pty::spawn(&mut home.command(&["chat", "helper"]));
    let at = chat.expect_after(0, "you> ", Duration::from_secs(10)).await;
    chat.type_keys(&format!("{UP}{UP}{UP}\r"));
    let at = chat.expect_after(at, "helper> Four.", Duration::from_secs(10)).await;
    assert_eq!(last_typed(&llm), "world");
    // Ctrl-C typed at the prompt leaves, and the terminal is as it was.
    chat.expect_after(at, "you> ", Duration::from_secs(10)).await;
    chat.type_keys("\x03");
    assert_eq!(chat.wait(Duration::from_secs(5)).await.code(), Some(130), "{}", chat.output());
    assert!(chat.in_line_mode(), "the chat left the terminal in raw mode");
}

#[tokio::test]
async fn a_daemon_with_a_chat_open_still_stops_at_once() {
    let (_llm, home, daemon, _api) = with_helper().await;
    let chat = Pty::spawn(&mut home.command(&["chat", "helper"]));
    chat.expect_after(0, "you> ", Duration::from_secs(10)).await;

    let asked = std::time::Instant::now();
    let (code, log) = daemon.stop().await;
    assert_eq!(code, Some(0), "{log}");
    assert!(asked.elapsed() < Duration::from_secs(5), "the open chat held the daemon for {:?}", asked.elapsed());
    assert!(!home.path().join("daemon.json").exists());
    drop(chat);
}

#[tokio::test]
async fn a_chat_shows_its_own_turns_not_others_in_the_same_session() {
    let (llm, home, _daemon, api) = with_helper().await;

    llm.push(Scripted::text("One."));
    let mut chat = Pty::spawn(&mut home.command(&["chat", "helper"]));
    let at = chat.expect_after(0, "you> ", Duration::from_secs(10)).await;
    chat.type_line("first");
    let at = chat.expect_after(at, "helper> One.", Duration::from_secs(10)).await;
    let at = chat.expect_after(at, "you> ", Duration::from_secs(10)).await;
    let output = chat.output();
    let session = output.split("(session ").nth(1).and_then(|s| s.split(':').next()).expect("session id");

    // Someone else speaks in the same session while the terminal waits for its person.
    llm.push(Scripted::text("Elsewhere reply."));
    let other = api.post("/api/agents/helper/messages", json!({"message": "hi", "session": session})).await;
    assert_eq!(other.status, 200, "{}", other.text);

    llm.push(Scripted::text("Two."));
    chat.type_line("second");
    let end = chat.expect_after(at, "helper> Two.", Duration::from_secs(10)).await;
    assert!(!chat.output()[at..end].contains("Elsewhere"), "another turn's text was shown:\n{}", chat.output());
}

/// One home has one daemon: a second `kennel start` on it is refused, naming the first, and
/// changes nothing of the first's.
#[tokio::test]
async fn a_second_daemon_on_one_home_is_refused() {
    let home = Home::new();
    let token = home.token("t").await;
    let first = home.start().await;
    let second = home.cli(&["start", "--bind", "127.0.0.1:0"]).await;
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{said}");
    assert!(said.contains("another Kennel daemon runs on") && said.contains(&format!("pid {}", first.pid())), "{said}");
    let api = first.api(&token);
    assert_eq!(api.get("/api/status").await.status, 200, "the first daemon still serves");
    assert!(home.cli_ok(&["status"]).await.contains("running"), "and the CLI still finds it");
}

/// After a crash another local user may take the daemon's port: the CLI asks whatever answers
/// there to prove it holds this home's token and, when it cannot, sends the token nowhere.
#[tokio::test]
async fn the_cli_sends_its_token_only_to_the_daemon_that_proves_it_holds_it() {
    use std::sync::{Arc, Mutex};
    let home = Home::new();
    let daemon = home.start().await;
    assert!(home.cli_ok(&["status"]).await.contains("running"), "the real daemon proves itself");
    let port = daemon.base.rsplit(':').next().unwrap().parse::<u16>().unwrap();
    daemon.kill().await;

    // An impostor on the same port: it answers everything, and keeps what it was sent.
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let kept = seen.clone();
    let app = axum::Router::new().fallback(move |headers: axum::http::HeaderMap| {
        let kept = kept.clone();
        async move {
            let auth = headers.get("authorization").map(|v| v.to_str().unwrap_or_default().to_string());
            kept.lock().unwrap().push(auth.unwrap_or_default());
            axum::Json(serde_json::json!({"status": "ok", "version": "0.0.0"}))
        }
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("the freed port");
    tokio::spawn(async move { axum::serve(listener, app).await });

    for args in [&["status"][..], &["reload"][..]] {
        let out = home.cli(args).await;
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {said}");
        assert!(said.contains("the token was not sent"), "{args:?}: {said}");
    }
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "the CLI did ask");
    assert!(seen.iter().all(|auth| auth.is_empty()), "no token went to the impostor: {seen:?}");
}

#[tokio::test]
async fn a_stopped_agent_is_named_started_and_removed_by_its_name() {
    let (llm, home, _daemon, api) = with_helper().await;
    home.cli_ok(&["agent", "stop", "helper"]).await;
    // Not "no agent": what it is and what to type.
    let out = home.cli_with_stdin(&["chat", "helper"], "hello\n").await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("agent `helper` is stopped: start it with `kennel agent start helper`"),
        "{}",
        stderr(&out)
    );
    let started = home.cli_ok(&["agent", "start", "helper"]).await;
    assert!(started.starts_with("agent `helper` runs again"), "{started}");
    llm.push(Scripted::text("Back again."));
    let out = home.cli_with_stdin(&["chat", "helper"], "hi\n").await;
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("Back again."), "{out:?}");

    // Two stopped agents of one name: the name is ambiguous, each id says which.
    home.cli_ok(&["agent", "stop", "helper"]).await;
    let second: Value = serde_json::from_str(&home.cli_ok(&["agent", "spawn", "helper", "--json"]).await).unwrap();
    home.cli_ok(&["agent", "stop", "helper"]).await;
    let ambiguous = home.cli(&["agent", "start", "helper"]).await;
    assert!(!ambiguous.status.success());
    let second = second["id"].as_str().unwrap();
    assert!(stderr(&ambiguous).contains("2 stopped ones have that name") && stderr(&ambiguous).contains(second));
    let removed = home.cli_ok(&["agent", "remove", second]).await;
    assert!(removed.starts_with(&format!("agent `helper` removed ({second})")), "{removed}");
    assert_eq!(api.get(&format!("/api/agents/{second}")).await.status, 404);
    // One stopped helper is left: its name finds it again.
    assert!(home.cli_ok(&["agent", "start", "helper"]).await.starts_with("agent `helper` runs again"));
    let running = home.cli_ok(&["agent", "remove", "helper"]).await;
    assert!(running.starts_with("agent `helper` removed"), "a running agent is stopped, then removed: {running}");
    let unknown = home.cli(&["agent", "start", "helper"]).await;
    assert!(stderr(&unknown).contains("no agent `helper`"), "{}", stderr(&unknown));
}

/// `kennel start`'s lines on standard output until it is stopped (SIGTERM, then what it
/// printed), as a person starting it reads them.
fn start_and_read_stdout(home: &Home) -> String {
    use std::io::{BufRead, BufReader};
    let mut child = home
        .command(&["start", "--bind", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("kennel start");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("the listening line");
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).expect("the rest of stdout");
    child.wait().expect("stopped");
    first + &rest
}

#[tokio::test]
async fn the_first_start_says_where_to_create_the_first_operator() {
    let home = Home::new();
    let printed = start_and_read_stdout(&home);
    let port = printed.split("127.0.0.1:").nth(1).and_then(|p| p.split(['\n', '/']).next()).expect("a port");
    let expected =
        format!("no operator yet: open http://127.0.0.1:{port}/setup on this machine to create the first one");
    assert!(printed.contains(&expected), "{printed}");

    let added = home.cli_with_stdin(&["operator", "add", "ada", "--password-stdin"], "correct horse\n").await;
    assert!(added.status.success());
    let printed = start_and_read_stdout(&home);
    assert_eq!(printed.lines().count(), 1, "only where it listens: {printed}");
}

#[tokio::test]
async fn a_grant_that_matches_no_tool_is_kept_with_a_warning() {
    let home = Home::new();
    let typo = write(&home, "typo.toml", "name = \"typo\"\n[capabilities]\ntools = [\"system_time\", \"memry_*\"]\n");
    let out = home.cli(&["type", "apply", &typo]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: no tool on this daemon matches the grant `memry_*`: check the spelling"),
        "{}",
        stderr(&out)
    );
    let token = home.token("tests").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    home.cli_ok(&["agent", "spawn", "typo"]).await;
    let out = home.cli(&["agent", "grant", "typo", "browsr.*"]).await;
    assert!(out.status.success());
    assert!(stderr(&out).contains("matches the grant `browsr.*`"), "{}", stderr(&out));
    let fine = home.cli(&["agent", "grant", "typo", "memory_*"]).await;
    assert!(fine.status.success() && stderr(&fine).is_empty(), "{}", stderr(&fine));
    let kept = kennel_tests::eventually(Duration::from_secs(3), || async {
        let grants = api.get("/api/agents/typo").await.body["manifest"]["capabilities"]["tools"].clone();
        grants == json!(["system_time", "memry_*", "browsr.*", "memory_*"])
    })
    .await;
    assert!(kept, "kept all the same");
    // Through the running daemon, `type apply` warns the same way (the daemon's answer says
    // so in its `kennel-warning` header), and says nothing when every grant matches.
    let out = home.cli(&["type", "apply", &typo]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: no tool on this daemon matches the grant `memry_*`: check the spelling"),
        "{}",
        stderr(&out)
    );
    let fixed =
        write(&home, "fixed.toml", "name = \"typo\"\n[capabilities]\ntools = [\"system_time\", \"memory_*\"]\n");
    let out = home.cli(&["type", "apply", &fixed]).await;
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
}
