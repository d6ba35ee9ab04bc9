//! Script and extension tools (spec §15) on the real daemon: tools made from folders under
//! `$KENNEL_HOME/tools`, run in bubblewrap through the whole pipeline — the grant, the
//! manifest's JSON Schema before anything runs, the wall-clock and output limits, and a sandbox
//! that holds the agent's workspace and nothing of the daemon's (its home, its environment).
//! The folder is watched: tools come and go while the daemon runs.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use kennel_tests::{Api, Home, eventually};
use serde_json::{Value, json};

use crate::agent_with;

/// Writes `files` (path under `$KENNEL_HOME/tools`, content); `.sh` files are made executable.
fn write_tools(home: &Home, files: &[(&str, &str)]) {
    for (path, content) in files {
        let path = home.path().join("tools").join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        if path.extension().is_some_and(|e| e == "sh") {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}

const WORD_COUNT: &str = r#"description = "Counts the words of a text"
run = "count.sh"
timeout_secs = 5
[arguments]
type = "object"
required = ["text"]
additionalProperties = false
properties.text = { type = "string", minLength = 1 }
"#;

/// Reads its JSON input, notes in the workspace that it ran, answers JSON.
const COUNT_SH: &str = r#"#!/bin/sh
input=$(cat)
echo ran >> ran.log
words=$(printf '%s' "$input" | sed 's/.*"text":"\([^"]*\)".*/\1/' | wc -w)
printf '{"words": %d, "cwd": "%s"}\n' "$words" "$(pwd)"
"#;

async fn tool(api: &Api, name: &str) -> Option<Value> {
    let tools = api.get("/api/tools?limit=1000").await;
    assert_eq!(tools.status, 200, "{}", tools.text);
    tools.body.as_array().unwrap().iter().find(|t| t["name"] == name).cloned()
}

fn workspace(home: &Home, agent: &str) -> std::path::PathBuf {
    home.path().join("workspaces").join(agent)
}

#[tokio::test]
async fn a_script_tool_runs_in_the_sandbox_with_its_arguments_checked_first() {
    let home = Home::new();
    write_tools(&home, &[("script/wc/tool.toml", WORD_COUNT), ("script/wc/count.sh", COUNT_SH)]);
    let token = home.token("tests").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    let agent = agent_with(&api, "scripter", &["script_*"]).await;
    let other = agent_with(&api, "plain", &["system_time"]).await;

    assert!(eventually(Duration::from_secs(10), || async { tool(&api, "script_wc").await.is_some() }).await);
    let listed = tool(&api, "script_wc").await.unwrap();
    assert_eq!(listed["family"], "script");
    assert_eq!(listed["description"], "Counts the words of a text");
    assert_eq!(listed["origin"]["provider"], "script");
    assert!(listed["origin"].get("note").is_none(), "bubblewrap runs it: {listed}");
    assert_eq!(listed["schema"]["required"], json!(["text"]));

    let counted = api.invoke(&agent, "script_wc", json!({"text": "three small words"})).await;
    assert_eq!(counted.status, 200, "{}", counted.text);
    assert_eq!(counted.body["content"], json!({"words": 3, "cwd": "/workspace"}));
    assert_eq!(std::fs::read_to_string(workspace(&home, &agent).join("ran.log")).unwrap(), "ran\n");

    // The schema is checked before anything runs: each problem at its path, and no run.
    let bad = api.invoke(&agent, "script_wc", json!({"text": "", "extra": 1})).await;
    assert_eq!((bad.status, bad.error_kind()), (422, "InvalidArguments"), "{}", bad.text);
    let fields: Vec<&str> =
        bad.body["error"]["fields"].as_array().unwrap().iter().map(|f| f["field"].as_str().unwrap()).collect();
    assert!(fields.contains(&"text") && fields.contains(&"(arguments)"), "{}", bad.text);
    assert_eq!(std::fs::read_to_string(workspace(&home, &agent).join("ran.log")).unwrap(), "ran\n", "it did not run");

    // The next call's sandbox is made ahead for this agent and waits: the tool itself starts
    // only with the call, which gets the same answer.
    let sandbox = format!("--bind {} /workspace", workspace(&home, &agent).display());
    assert!(
        eventually(Duration::from_secs(5), || async { crate::processes::running_with(&sandbox) }).await,
        "a sandbox is made ahead of the next call"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        std::fs::read_to_string(workspace(&home, &agent).join("ran.log")).unwrap(),
        "ran\n",
        "nothing ran early"
    );
    let again = api.invoke(&agent, "script_wc", json!({"text": "and now four words"})).await;
    assert_eq!(again.body["content"], json!({"words": 4, "cwd": "/workspace"}), "{}", again.text);
    assert_eq!(std::fs::read_to_string(workspace(&home, &agent).join("ran.log")).unwrap(), "ran\nran\n");

    // The grant applies as to any tool.
    let refused = api.invoke(&other, "script_wc", json!({"text": "a"})).await;
    assert_eq!((refused.status, refused.error_kind()), (403, "Forbidden"), "{}", refused.text);

    // The audit records it like any call.
    let audit = api.get(&format!("/api/audit?agent={agent}&tool=script_wc")).await;
    assert_eq!(audit.status, 200, "{}", audit.text);
    let outcomes: Vec<&str> = audit.body.as_array().unwrap().iter().map(|e| e["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes.iter().filter(|o| **o == "ok").count(), 2, "{}", audit.text);
    assert!(outcomes.contains(&"InvalidArguments"), "{}", audit.text);
}

#[tokio::test]
async fn the_sandbox_holds_the_workspace_only_no_secrets_and_limits_time_and_output() {
    let home = Home::new();
    let home_path = home.path().display().to_string();
    // A sleep no other test starts (the process tests run `sleep 300` at the same time).
    let sleep = crate::processes::unique_sleep(300);
    let sleeper = format!("#!/bin/sh\n{sleep}\n");
    let snoop = format!(
        "#!/bin/sh\ncat {home_path}/config.toml 2>&1 || echo 'home: unreadable'\nenv\necho hello > note.txt\nls / | tr '\\n' ' '\n"
    );
    write_tools(
        &home,
        &[
            ("script/snoop/tool.toml", "description = \"Looks around\"\nrun = \"snoop.sh\"\n"),
            ("script/snoop/snoop.sh", &snoop),
            ("script/sleeper/tool.toml", "description = \"Sleeps\"\nrun = \"sleep.sh\"\ntimeout_secs = 1\n"),
            ("script/sleeper/sleep.sh", &sleeper),
            ("script/chatty/tool.toml", "description = \"Talks\"\nrun = \"talk.sh\"\nmax_output_bytes = 1000\n"),
            ("script/chatty/talk.sh", "#!/bin/sh\nyes kennel | head -c 100000\n"),
            ("script/failing/tool.toml", "description = \"Fails\"\nrun = \"fail.sh\"\n"),
            ("script/failing/fail.sh", "#!/bin/sh\necho 'the input was not what I wanted' >&2\nexit 3\n"),
        ],
    );
    std::fs::write(home.path().join("config.toml"), "# a secret: hunter2\n").unwrap();
    let token = home.token("tests").await;
    let daemon = home.start_with_env(&[("OPENAI_API_KEY", "sk-never-leaks"), ("MY_SECRET", "s3cr3t")]).await;
    let api = daemon.api(&token);
    let agent = agent_with(&api, "scripter", &["script_*"]).await;
    assert!(eventually(Duration::from_secs(10), || async { tool(&api, "script_failing").await.is_some() }).await);

    let seen = api.invoke(&agent, "script_snoop", json!({})).await;
    assert_eq!(seen.status, 200, "{}", seen.text);
    let text = seen.body["content"].as_str().unwrap().to_string();
    assert!(text.contains("home: unreadable") && !text.contains("hunter2"), "{text}");
    assert!(!text.contains("sk-never-leaks") && !text.contains("s3cr3t"), "{text}");
    assert!(text.contains("KENNEL_TOOL=script_snoop") && text.contains("HOME=/workspace"), "{text}");
    let root: Vec<&str> = text.lines().last().unwrap().split_whitespace().collect();
    assert!(
        root.contains(&"workspace") && root.contains(&"usr") && !root.contains(&"root") && !root.contains(&"work"),
        "{root:?}"
    );
    assert_eq!(std::fs::read_to_string(workspace(&home, &agent).join("note.txt")).unwrap(), "hello\n");

    let started = std::time::Instant::now();
    let slow = api.invoke(&agent, "script_sleeper", json!({})).await;
    assert_eq!((slow.status, slow.error_kind()), (504, "Timeout"), "{}", slow.text);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert!(
        eventually(Duration::from_secs(5), || async { !crate::processes::running_with(&sleep) }).await,
        "the sandbox and everything in it were killed"
    );

    let chatty = api.invoke(&agent, "script_chatty", json!({})).await;
    assert_eq!((chatty.status, chatty.error_kind()), (429, "ResourceExhausted"), "{}", chatty.text);
    assert!(chatty.error_message().contains("more than its 1000 bytes"), "{}", chatty.text);

    let failed = api.invoke(&agent, "script_failing", json!({})).await;
    assert_eq!(failed.error_kind(), "Failed", "{}", failed.text);
    assert_eq!(failed.error_message(), "`script_failing` exited with status 3: the input was not what I wanted");
}

#[tokio::test]
async fn tools_come_and_go_with_their_folders_and_a_broken_manifest_is_excluded_with_why() {
    let home = Home::new();
    let token = home.token("tests").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    let agent = agent_with(&api, "scripter", &["script_*", "ext_*"]).await;
    assert!(tool(&api, "script_wc").await.is_none());

    write_tools(&home, &[("script/wc/count.sh", COUNT_SH), ("script/wc/tool.toml", WORD_COUNT)]);
    assert!(eventually(Duration::from_secs(10), || async { tool(&api, "script_wc").await.is_some() }).await);
    let counted = api.invoke(&agent, "script_wc", json!({"text": "one two"})).await;
    assert_eq!(counted.body["content"]["words"], 2, "{}", counted.text);

    // A package of two tools, installed by copying its folder.
    let package = r#"description = "Text helpers"
[tools.upper]
description = "Upper-cases a text"
run = "bin/upper.sh"
[tools.upper.arguments]
type = "object"
properties.text = { type = "string" }
[tools.echo]
description = "Echoes its input"
run = "bin/echo.sh"
"#;
    write_tools(
        &home,
        &[
            ("ext/textkit/bin/upper.sh", "#!/bin/sh\ncat | tr a-z A-Z\n"),
            ("ext/textkit/bin/echo.sh", "#!/bin/sh\ncat\n"),
            ("ext/textkit/package.toml", package),
        ],
    );
    assert!(eventually(Duration::from_secs(10), || async { tool(&api, "ext_textkit_echo").await.is_some() }).await);
    let echoed = api.invoke(&agent, "ext_textkit_echo", json!({"a": [1, 2]})).await;
    assert_eq!(echoed.body["content"], json!({"a": [1, 2]}), "{}", echoed.text);
    let upper = api.invoke(&agent, "ext_textkit_upper", json!({"text": "loud"})).await;
    assert_eq!(upper.body["content"], json!({"TEXT": "LOUD"}), "{}", upper.text);
    assert_eq!(tool(&api, "ext_textkit_upper").await.unwrap()["origin"]["provider"], "ext:textkit");

    // A manifest broken while the daemon runs: still listed, excluded with the parse error.
    write_tools(
        &home,
        &[("script/wc/tool.toml", "description = \"Counts\"\nrun = \"count.sh\"\ntimeout_secs = \"soon\"\n")],
    );
    let excluded = |api: &Api| {
        let api = api.clone();
        async move { tool(&api, "script_wc").await.is_some_and(|t| t["availability"]["state"] == "excluded") }
    };
    assert!(eventually(Duration::from_secs(10), || excluded(&api)).await);
    let reason = tool(&api, "script_wc").await.unwrap()["availability"]["reason"].as_str().unwrap().to_string();
    assert!(
        reason.starts_with("its manifest has errors: ") && reason.contains("tools/script/wc/tool.toml:3:"),
        "{reason}"
    );
    let refused = api.invoke(&agent, "script_wc", json!({"text": "a"})).await;
    assert_eq!(refused.error_kind(), "Unavailable", "{}", refused.text);

    // Removed: gone, and a call says so; the sandboxes made ahead for it are killed.
    std::fs::remove_dir_all(home.path().join("tools/script/wc")).unwrap();
    assert!(eventually(Duration::from_secs(10), || async { tool(&api, "script_wc").await.is_none() }).await);
    let wc_folder = format!("--ro-bind {} /tool", home.path().join("tools/script/wc").display());
    assert!(
        eventually(Duration::from_secs(5), || async { !crate::processes::running_with(&wc_folder) }).await,
        "no sandbox of a removed tool is left"
    );
    let gone = api.invoke(&agent, "script_wc", json!({"text": "a"})).await;
    assert!(gone.error_message().contains("no longer available"), "{}", gone.text);
}
