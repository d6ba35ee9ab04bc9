//! `kennel backup` and `kennel restore`: a backup taken while the daemon writes restores to
//! a daemon with the same data, and restoring never overwrites a home.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use kennel_tests::Home;
use kennel_tests::fake_llm::{FakeLlm, Scripted};
use serde_json::json;

use crate::{agent_from, say};

#[tokio::test]
async fn a_backup_taken_during_a_burst_of_writes_restores_to_a_daemon_with_the_same_data() {
    let llm = FakeLlm::start().await;
    let home = Home::on_sqlite(&llm.provider_config("fake", "openai"));
    let token = home.token("tests").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);
    let agent =
        agent_from(&api, json!({"name": "keeper", "model": "gpt-test", "tools": ["edit_file", "read_file"]})).await;
    llm.push_all([Scripted::text("First answer."), Scripted::text("Second answer.")]);
    let first = say(&api, &agent, None, "hello").await;
    assert_eq!(first.status, 200, "{}", first.text);
    let session = first.body["session_id"].as_str().unwrap().to_string();
    assert_eq!(say(&api, &agent, Some(&session), "again").await.status, 200);
    let wrote =
        api.invoke(&agent, "edit_file", json!({"path": "notes/plan.md", "mode": "write", "content": "the plan"})).await;
    assert_eq!(wrote.status, 200, "{}", wrote.text);

    // Tasks are posted one after another, without a pause, all through the backup.
    let posted = Arc::new(AtomicU64::new(0));
    let burst = {
        let (api, posted) = (daemon.api(&token), posted.clone());
        tokio::spawn(async move {
            loop {
                let n = posted.load(Ordering::SeqCst);
                let r = api.post("/api/tasks", json!({"title": format!("task {n}")})).await;
                assert_eq!(r.status, 201, "{}", r.text);
                posted.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    while posted.load(Ordering::SeqCst) < 20 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("kennel.tar.gz");
    let before = posted.load(Ordering::SeqCst);
    let said = home.cli_ok(&["backup", archive.to_str().unwrap()]).await;
    let after = posted.load(Ordering::SeqCst);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    burst.abort();
    let last = posted.load(Ordering::SeqCst);
    assert!(said.contains("backed up"), "{said}");
    assert!(after > before, "writes went on during the backup ({before} then {after})");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&archive).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "the archive holds the database");
    let stale: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(stale.len(), 1, "nothing but the archive is left beside it: {stale:?}");

    let restored = Home::empty_on_sqlite();
    let said = restored.cli_ok(&["restore", archive.to_str().unwrap()]).await;
    assert!(said.contains("restored"), "{said}");
    let again = restored.cli(&["restore", archive.to_str().unwrap()]).await;
    assert!(!again.status.success(), "a restore into a home that is not empty is refused");
    assert!(String::from_utf8_lossy(&again.stderr).contains("is not empty"), "{again:?}");

    let copy = restored.start().await;
    let copied = copy.api(&token);
    let tasks = copied.get("/api/tasks?limit=1").await;
    assert_eq!(tasks.status, 200, "the token is in the restored database: {}", tasks.text);
    let count: u64 = tasks.header("x-total-count").unwrap().parse().unwrap();
    assert!(
        (before..=after + 1).contains(&count),
        "the backup holds the tasks of one moment during it: {count}, not in {before}..={}",
        after + 1
    );
    assert!(count < last, "tasks posted after the backup are not in it ({count} of {last})");
    let original = api.get(&format!("/api/sessions/{session}/messages")).await;
    let restored_chat = copied.get(&format!("/api/sessions/{session}/messages")).await;
    assert_eq!(restored_chat.status, 200, "{}", restored_chat.text);
    assert_eq!(restored_chat.body, original.body, "the chat's history is the same");
    assert!(restored_chat.text.contains("Second answer."), "{}", restored_chat.text);
    let agents = |api: &kennel_tests::Api| {
        let api = api.clone();
        async move { api.get("/api/agents").await.body }
    };
    assert_eq!(agents(&copied).await, agents(&api).await);
    let read = copied.invoke(&agent, "read_file", json!({"path": "notes/plan.md"})).await;
    assert_eq!(read.status, 200, "{}", read.text);
    assert!(read.text.contains("the plan"), "the workspace came back: {}", read.text);
}

/// A folder an agent made read-only (`chmod 555`, as Go's module cache does) comes back with
/// its files and then its mode, for a restore run by an unprivileged user (under root, CI,
/// `nobody`: root writes into any folder whatever its mode, so it would not see the bug).
#[tokio::test]
async fn a_read_only_folder_restores_with_its_files_for_an_unprivileged_user() {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::on_sqlite("");
    let daemon = home.start().await;
    let folder = home.path().join("workspaces/builder/pkg/mod");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("go.mod"), "module example.com/m\n").unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555)).unwrap();

    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let archive = dir.path().join("kennel.tar.gz");
    home.cli_ok(&["backup", archive.to_str().unwrap()]).await;
    drop(daemon);
    let target = dir.path().join("restored");
    std::fs::create_dir(&target).unwrap();
    let mut restore = tokio::process::Command::new(kennel_tests::kennel_bin());
    if kennel_tests::is_root() {
        for path in [&archive, &target] {
            std::os::unix::fs::chown(path, Some(65534), Some(65534)).unwrap();
        }
        restore = tokio::process::Command::new("setpriv");
        restore.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(kennel_tests::kennel_bin());
    }
    let out = restore.arg("--home").arg(&target).arg("restore").arg(&archive).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let restored = target.join("workspaces/builder/pkg/mod");
    assert_eq!(std::fs::read_to_string(restored.join("go.mod")).unwrap(), "module example.com/m\n");
    let mode = std::fs::metadata(&restored).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o555, "the folder's own mode, set once its files were in");
    std::fs::set_permissions(&restored, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
}
