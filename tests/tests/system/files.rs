//! The `files` family (spec §14, §15) through the real daemon: `apply_patch` all-or-nothing
//! with atomic moves and rollback, `read_file`, `edit_file`, `find_files`, `remove_file` and
//! `restore_file`, a traversal corpus against every path-taking tool, and the grants that gate
//! them. Every outcome is checked on disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use kennel_tests::{Api, Home};
use serde_json::{Value, json};

use crate::{agent_with, daemon_with_config};

async fn files_agent(config: &str) -> (Home, kennel_tests::Daemon, Api, String, PathBuf) {
    let (home, daemon, api) = daemon_with_config(config).await;
    let agent = agent_with(&api, "filer", &["files.*"]).await;
    let dir = home.path().join("workspaces").join(&agent);
    std::fs::create_dir_all(&dir).unwrap();
    (home, daemon, api, agent, dir)
}

async fn ok(api: &Api, agent: &str, tool: &str, args: Value) -> Value {
    let r = api.invoke(agent, tool, args).await;
    assert_eq!(r.status, 200, "{tool}: {}", r.text);
    r.body["content"].clone()
}

/// Every file and folder under `dir`, relative, without following links.
fn tree(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for item in std::fs::read_dir(dir).unwrap() {
            let item = item.unwrap();
            out.push(item.path().strip_prefix(root).unwrap().to_string_lossy().into_owned());
            if item.file_type().unwrap().is_dir() {
                walk(root, &item.path(), out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[tokio::test]
async fn apply_patch_adds_updates_deletes_and_moves_in_one_patch_or_changes_nothing() {
    let (_home, _d, api, agent, dir) = files_agent("").await;
    std::fs::write(dir.join("main.rs"), "fn main() {\n    println!(\"hi\");\n}\n").unwrap();
    std::fs::write(dir.join("old.md"), "# Old\n").unwrap();
    std::fs::write(dir.join("draft.txt"), "a\nb\n").unwrap();
    std::fs::write(dir.join("keep.txt"), "same\n").unwrap();

    let patch = "*** Begin Patch\n\
                 *** Add File: docs/new.md\n+# New\n+text\n\
                 *** Update File: main.rs\n@@ fn main() {\n-    println!(\"hi\");\n+    println!(\"hello\");\n\
                 *** Delete File: old.md\n\
                 *** Update File: draft.txt\n*** Move to: final/done.txt\n@@\n a\n-b\n+c\n\
                 *** Update File: keep.txt\n*** Move to: kept.txt\n\
                 *** End Patch";
    let done = ok(&api, &agent, "apply_patch", json!({ "patch": patch })).await;
    let actions: Vec<_> = done["files"].as_array().unwrap().iter().map(|f| f["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["added", "updated", "deleted", "moved", "moved"], "{done}");
    assert_eq!(done["files"][1]["added_lines"], 1);
    assert_eq!(done["files"][1]["removed_lines"], 1);
    assert_eq!(std::fs::read_to_string(dir.join("docs/new.md")).unwrap(), "# New\ntext\n");
    assert_eq!(std::fs::read_to_string(dir.join("main.rs")).unwrap(), "fn main() {\n    println!(\"hello\");\n}\n");
    assert!(!dir.join("old.md").exists() && !dir.join("draft.txt").exists() && !dir.join("keep.txt").exists());
    assert_eq!(std::fs::read_to_string(dir.join("final/done.txt")).unwrap(), "a\nc\n");
    assert_eq!(std::fs::read_to_string(dir.join("kept.txt")).unwrap(), "same\n", "a pure rename");

    // A second file that fails its check: the first is not touched.
    let before = tree(&dir);
    let fails = "*** Begin Patch\n*** Update File: main.rs\n@@\n-fn main() {\n+fn start() {\n\
                 *** Update File: kept.txt\n@@\n-not in the file\n+x\n*** End Patch";
    let r = api.invoke(&agent, "apply_patch", json!({ "patch": fails })).await;
    assert_eq!(r.error_kind(), "InvalidArguments", "{}", r.text);
    assert!(r.error_message().contains("`kept.txt`: hunk 1"), "names the file and hunk: {}", r.text);
    assert!(r.error_message().contains("not found"), "shows the refusal: {}", r.text);
    assert!(std::fs::read_to_string(dir.join("main.rs")).unwrap().starts_with("fn main()"), "first file untouched");
    assert_eq!(tree(&dir), before);

    let r = api
        .invoke(
            &agent,
            "apply_patch",
            json!({ "patch": "*** Begin Patch\n*** Add File: x.txt\n+x\nnot a line\n*** End Patch" }),
        )
        .await;
    assert_eq!(r.error_kind(), "InvalidArguments", "{}", r.text);
    assert!(r.error_message().contains("patch line 4"), "names the line: {}", r.text);
    let onto = "*** Begin Patch\n*** Update File: kept.txt\n*** Move to: main.rs\n*** End Patch";
    assert_eq!(api.invoke(&agent, "apply_patch", json!({ "patch": onto })).await.error_kind(), "Conflict");
    let add_existing = "*** Begin Patch\n*** Add File: main.rs\n+x\n*** End Patch";
    assert_eq!(api.invoke(&agent, "apply_patch", json!({ "patch": add_existing })).await.error_kind(), "Conflict");
    let delete_missing = "*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch";
    assert_eq!(api.invoke(&agent, "apply_patch", json!({ "patch": delete_missing })).await.error_kind(), "NotFound");
    assert_eq!(tree(&dir), before, "no refused patch wrote anything");
}

#[tokio::test]
async fn a_write_failing_midway_rolls_back_the_files_already_written() {
    let (_home, _d, api, agent, dir) = files_agent("").await;
    std::fs::write(dir.join("notes.txt"), "before\n").unwrap();
    std::fs::write(dir.join("old.txt"), "old\n").unwrap();
    std::fs::write(dir.join("from.txt"), "moving\n").unwrap();
    let before = tree(&dir);
    // `made.txt/inner.txt` passes the check (nothing is there yet), but when it is written
    // `made.txt` is the file this patch has just added, so that write fails after four others.
    let patch = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-before\n+after\n\
                 *** Delete File: old.txt\n*** Update File: from.txt\n*** Move to: to.txt\n\
                 *** Add File: made.txt\n+x\n*** Add File: made.txt/inner.txt\n+y\n*** End Patch";
    let r = api.invoke(&agent, "apply_patch", json!({ "patch": patch })).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(
        r.error_message().contains("made.txt/inner.txt") && r.error_message().contains("rolled back"),
        "{}",
        r.text
    );
    assert_eq!(std::fs::read_to_string(dir.join("notes.txt")).unwrap(), "before\n");
    assert_eq!(std::fs::read_to_string(dir.join("old.txt")).unwrap(), "old\n", "a deleted file comes back");
    assert_eq!(std::fs::read_to_string(dir.join("from.txt")).unwrap(), "moving\n", "a moved file moves back");
    assert_eq!(tree(&dir), before, "added files are gone, nothing else is left");
}

#[tokio::test]
async fn a_reader_polling_the_new_path_during_a_move_never_sees_old_content() {
    let (_home, _d, api, agent, dir) = files_agent("").await;
    let body: String = (0..200_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.join("big-0.txt"), format!("version 0\n{body}")).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(AtomicUsize::new(0));
    let reader = {
        let (dir, stop, seen) = (dir.clone(), stop.clone(), seen.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for round in 1..=3 {
                    // Only absent or the new content: never the old first line, never partial.
                    if let Ok(text) = std::fs::read_to_string(dir.join(format!("big-{round}.txt"))) {
                        assert!(text.starts_with(&format!("version {round}\n")), "old content at big-{round}.txt");
                        assert!(text.ends_with("line 199999\n"), "partial content at big-{round}.txt");
                        seen.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        })
    };
    for round in 1..=3 {
        let patch = format!(
            "*** Begin Patch\n*** Update File: big-{}.txt\n*** Move to: big-{round}.txt\n@@\n-version {}\n+version {round}\n*** End Patch",
            round - 1,
            round - 1
        );
        ok(&api, &agent, "apply_patch", json!({ "patch": patch })).await;
        assert!(!dir.join(format!("big-{}.txt", round - 1)).exists());
    }
    stop.store(true, Ordering::Relaxed);
    reader.join().expect("the reader never saw old or partial content");
    assert!(seen.load(Ordering::Relaxed) > 0, "the reader saw the moved file");
    assert_eq!(std::fs::read_to_string(dir.join("big-3.txt")).unwrap(), format!("version 3\n{body}"));
}

#[tokio::test]
async fn read_edit_and_find_files_work_on_text_in_the_workspace() {
    let (_home, _d, api, agent, dir) = files_agent("").await;
    let written =
        ok(&api, &agent, "edit_file", json!({"path": "src/lib.rs", "mode": "write", "content": "one\ntwo\nthree\n"}))
            .await;
    assert_eq!(written["created"], true, "{written}");
    assert_eq!(std::fs::read_to_string(dir.join("src/lib.rs")).unwrap(), "one\ntwo\nthree\n");

    let read = ok(&api, &agent, "read_file", json!({"path": "src/lib.rs", "offset": 2, "limit": 1})).await;
    assert_eq!(read["content"], "     2\ttwo");
    assert_eq!((read["total_lines"].as_u64(), read["truncated"].as_bool()), (Some(3), Some(true)), "{read}");
    let whole = ok(&api, &agent, "read_file", json!({"path": "src/lib.rs"})).await;
    assert_eq!(whole["content"], "     1\tone\n     2\ttwo\n     3\tthree");
    assert_eq!(whole["truncated"], false);
    std::fs::write(dir.join("blob.bin"), [0x89, b'P', b'N', b'G', 0, 0, 1]).unwrap();
    let binary = api.invoke(&agent, "read_file", json!({"path": "blob.bin"})).await;
    assert_eq!(binary.error_kind(), "InvalidArguments", "{}", binary.text);
    assert!(binary.error_message().contains("not a text file"), "{}", binary.text);

    let patched =
        ok(&api, &agent, "edit_file", json!({"path": "src/lib.rs", "mode": "patch", "old": "two\n", "new": "2\n2b\n"}))
            .await;
    assert_eq!(patched["strategy"], "exact", "{patched}");
    assert_eq!(patched["replaced_lines"], json!({"start": 2, "end": 2}));
    assert_eq!(patched["new_lines"], json!({"start": 2, "count": 2}));
    assert_eq!(std::fs::read_to_string(dir.join("src/lib.rs")).unwrap(), "one\n2\n2b\nthree\n");

    std::fs::write(dir.join("dup.txt"), "x = 1\ny\nx = 1\n").unwrap();
    let ambiguous = api
        .invoke(&agent, "edit_file", json!({"path": "dup.txt", "mode": "patch", "old": "x = 1", "new": "x = 2"}))
        .await;
    assert_eq!(ambiguous.error_kind(), "InvalidArguments", "{}", ambiguous.text);
    let m = ambiguous.error_message();
    assert!(m.contains("matches 2 places") && m.contains("line 1") && m.contains("line 3"), "lists locations: {m}");
    let drifted = api
        .invoke(
            &agent,
            "edit_file",
            json!({"path": "src/lib.rs", "mode": "patch", "old": "one\n2\n2c\n", "new": "z\n"}),
        )
        .await;
    assert_eq!(drifted.error_kind(), "InvalidArguments", "{}", drifted.text);
    let m = drifted.error_message();
    assert!(
        m.contains("closest text is at lines 1-3") && m.contains("-2c") && m.contains("+2b"),
        "closest and diff: {m}"
    );
    assert_eq!(std::fs::read_to_string(dir.join("dup.txt")).unwrap(), "x = 1\ny\nx = 1\n", "refusals change nothing");
    let wrong = api.invoke(&agent, "edit_file", json!({"path": "dup.txt", "mode": "write"})).await;
    assert_eq!(wrong.error_kind(), "InvalidArguments", "write needs content: {}", wrong.text);

    std::fs::write(dir.join("src/notes.md"), "TODO: ship\n").unwrap();
    std::fs::write(dir.join("readme.md"), "nothing\nTODO later\n").unwrap();
    let listed = ok(&api, &agent, "find_files", json!({"mode": "list"})).await;
    let names: Vec<_> = listed["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(names, ["blob.bin", "dup.txt", "readme.md"]);
    assert_eq!(listed["folders"], json!(["src"]));
    let globbed = ok(&api, &agent, "find_files", json!({"mode": "glob", "pattern": "**/*.md"})).await;
    let names: Vec<_> = globbed["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(names, ["readme.md", "src/notes.md"]);
    let in_src = ok(&api, &agent, "find_files", json!({"mode": "glob", "path": "src", "pattern": "*.rs"})).await;
    assert_eq!(in_src["files"][0]["path"], "src/lib.rs", "{in_src}");
    let found = ok(&api, &agent, "find_files", json!({"mode": "search", "pattern": "^TODO"})).await;
    assert_eq!(
        found["hits"],
        json!([{"path": "readme.md", "line": 2, "text": "TODO later"}, {"path": "src/notes.md", "line": 1, "text": "TODO: ship"}])
    );
    assert_eq!(found["binary_files_skipped"], 1, "{found}");
    let one = ok(&api, &agent, "find_files", json!({"mode": "search", "pattern": "TODO", "max_results": 1})).await;
    assert_eq!((one["hits"].as_array().unwrap().len(), one["truncated"].as_bool()), (1, Some(true)));
    let bad = api.invoke(&agent, "find_files", json!({"mode": "search", "pattern": "("})).await;
    assert_eq!(bad.error_kind(), "InvalidArguments", "{}", bad.text);
}

#[tokio::test]
async fn removed_files_go_to_the_trash_and_come_back_byte_identical() {
    let (home, _d, api, agent, dir) = files_agent("").await;
    let bytes: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/table.bin"), &bytes).unwrap();

    let removed = ok(&api, &agent, "remove_file", json!({"path": "data/table.bin"})).await;
    assert_eq!(removed["bytes"], 5000, "{removed}");
    assert!(!dir.join("data/table.bin").exists());
    assert!(home.path().join("workspaces/.trash").join(&agent).is_dir(), "the trash is beside the workspace");
    assert!(!tree(&dir).iter().any(|p| p.contains("trash")), "not inside it");
    let listed = ok(&api, &agent, "find_files", json!({"mode": "list", "recursive": true})).await;
    assert_eq!(listed["files"], json!([]));
    assert_eq!(api.invoke(&agent, "read_file", json!({"path": "data/table.bin"})).await.error_kind(), "NotFound");

    ok(&api, &agent, "restore_file", json!({"path": "data/table.bin"})).await;
    assert_eq!(std::fs::read(dir.join("data/table.bin")).unwrap(), bytes, "byte-identical");
    ok(&api, &agent, "remove_file", json!({"path": "data/table.bin"})).await;
    std::fs::write(dir.join("data/table.bin"), "new").unwrap();
    let taken = api.invoke(&agent, "restore_file", json!({"path": "data/table.bin"})).await;
    assert_eq!(taken.error_kind(), "Conflict", "{}", taken.text);
    assert_eq!(std::fs::read_to_string(dir.join("data/table.bin")).unwrap(), "new", "not replaced");
    assert_eq!(api.invoke(&agent, "restore_file", json!({"path": "never.txt"})).await.error_kind(), "NotFound");
}

#[tokio::test]
async fn grants_gate_each_tool_and_destructive_ones_apart() {
    let (home, _d, api) = daemon_with_config("").await;
    let none = agent_with(&api, "none", &["system_time"]).await;
    let reader = agent_with(&api, "reader", &["read_file"]).await;
    for agent in [&none, &reader] {
        let dir = home.path().join("workspaces").join(agent);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.txt"), "a\n").unwrap();
    }
    for (tool, args) in [
        ("apply_patch", json!({"patch": "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch"})),
        ("read_file", json!({"path": "a.txt"})),
        ("edit_file", json!({"path": "a.txt", "mode": "write", "content": "b"})),
        ("find_files", json!({"mode": "list"})),
        ("remove_file", json!({"path": "a.txt"})),
        ("restore_file", json!({"path": "a.txt"})),
    ] {
        let r = api.invoke(&none, tool, args.clone()).await;
        assert_eq!((r.status, r.error_kind()), (403, "Forbidden"), "{tool}: {}", r.text);
        if tool != "read_file" {
            let r = api.invoke(&reader, tool, args).await;
            assert_eq!(r.error_kind(), "Forbidden", "read_file alone grants only reading: {tool}: {}", r.text);
        }
    }
    assert_eq!(ok(&api, &reader, "read_file", json!({"path": "a.txt"})).await["content"], "     1\ta");
    for agent in [&none, &reader] {
        assert_eq!(std::fs::read_to_string(home.path().join("workspaces").join(agent).join("a.txt")).unwrap(), "a\n");
    }
}

#[tokio::test]
async fn no_path_taking_tool_leaves_the_workspace() {
    let (home, _d, api, agent, dir) = files_agent("").await;
    let outside = home.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "the secret\n").unwrap();
    std::fs::write(dir.join("inside.txt"), "inside\n").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), dir.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("linkdir")).unwrap();
    let passwd = std::fs::read("/etc/passwd").unwrap_or_default();
    let (home_before, ws_before, outside_before) = (tree(home.path()), tree(&dir), tree(&outside));

    let long = "a/".repeat(600) + "x";
    let corpus = [
        "../x",
        "/etc/passwd",
        "a/../../x",
        "%2e%2e/x",
        "..%2fx",
        "a//b",
        "link.txt",
        "linkdir/secret.txt",
        "linkdir/new.txt",
        "a\0b",
        "a\nb",
        "a\u{1b}b",
        &long,
        &"n".repeat(300),
    ];
    for path in corpus {
        let patch_line = |body: &str| json!({ "patch": format!("*** Begin Patch\n{body}*** End Patch") });
        let calls = [
            ("read_file", json!({ "path": path })),
            ("edit_file", json!({ "path": path, "mode": "write", "content": "pwned\n" })),
            ("edit_file", json!({ "path": path, "mode": "patch", "old": "the secret", "new": "pwned" })),
            ("find_files", json!({ "mode": "list", "path": path })),
            ("find_files", json!({ "mode": "glob", "path": path, "pattern": "**" })),
            ("find_files", json!({ "mode": "search", "path": path, "pattern": "secret" })),
            ("remove_file", json!({ "path": path })),
            ("restore_file", json!({ "path": path })),
            ("apply_patch", patch_line(&format!("*** Add File: {path}\n+pwned\n"))),
            ("apply_patch", patch_line(&format!("*** Delete File: {path}\n"))),
            ("apply_patch", patch_line(&format!("*** Update File: {path}\n@@\n-the secret\n+pwned\n"))),
            ("apply_patch", patch_line(&format!("*** Update File: inside.txt\n*** Move to: {path}\n"))),
        ];
        for (tool, args) in calls {
            let r = api.invoke(&agent, tool, args).await;
            assert!([403, 404, 422].contains(&r.status), "{tool} {path:?} was not refused: {}", r.text);
            assert!(!r.text.contains("the secret") && !r.text.contains("root:"), "{tool} {path:?} leaked: {}", r.text);
        }
    }
    assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), "the secret\n");
    assert_eq!(std::fs::read("/etc/passwd").unwrap_or_default(), passwd);
    assert_eq!(tree(&outside), outside_before, "nothing made outside");
    assert_eq!(tree(&dir), ws_before, "nothing made inside either");
    let home_after: Vec<_> = tree(home.path()).into_iter().filter(|p| !p.starts_with("kennel.db")).collect();
    let home_before: Vec<_> = home_before.into_iter().filter(|p| !p.starts_with("kennel.db")).collect();
    assert_eq!(home_after.iter().filter(|p| !home_before.contains(p)).collect::<Vec<_>>(), Vec::<&String>::new());
    assert_eq!(std::fs::read_to_string(dir.join("inside.txt")).unwrap(), "inside\n");
}

/// A name may be as long as the file system takes (255 bytes): every tool handles one, the
/// temporary and trash names it makes beside it included; a longer one is refused plainly.
#[tokio::test]
async fn names_up_to_255_bytes_work_in_every_tool_and_longer_ones_are_refused_plainly() {
    let (_home, _d, api, agent, dir) = files_agent("").await;
    // 251 bytes of two-byte letters and ASCII, then `.txt`: 255 bytes.
    let long = format!("{}{}.txt", "é".repeat(120), "x".repeat(11));
    assert_eq!(long.len(), 255);
    let moved = format!("{}.md", &long[..long.len() - 4]);
    let written = ok(&api, &agent, "edit_file", json!({"path": long, "mode": "write", "content": "one\n"})).await;
    assert_eq!(written["created"], true, "{written}");
    ok(&api, &agent, "edit_file", json!({"path": long, "mode": "patch", "old": "one", "new": "two"})).await;
    assert_eq!(ok(&api, &agent, "read_file", json!({"path": long})).await["total_lines"], 1);
    let found = ok(&api, &agent, "find_files", json!({"mode": "search", "pattern": "two"})).await;
    assert_eq!(found["hits"][0]["path"], long.as_str());
    let patch =
        format!("*** Begin Patch\n*** Update File: {long}\n*** Move to: {moved}\n@@\n-two\n+three\n*** End Patch");
    ok(&api, &agent, "apply_patch", json!({ "patch": patch })).await;
    assert_eq!(std::fs::read_to_string(dir.join(&moved)).unwrap(), "three\n");
    ok(&api, &agent, "remove_file", json!({"path": moved})).await;
    ok(&api, &agent, "restore_file", json!({"path": moved})).await;
    assert_eq!(std::fs::read_to_string(dir.join(&moved)).unwrap(), "three\n", "back from the trash");

    let longer = format!("{}.txt", "x".repeat(253));
    for (tool, args) in [
        ("edit_file", json!({"path": longer, "mode": "write", "content": "x"})),
        ("read_file", json!({"path": longer})),
        ("remove_file", json!({"path": longer})),
    ] {
        let refused = api.invoke(&agent, tool, args).await;
        assert_eq!(refused.error_kind(), "InvalidArguments", "{tool}: {}", refused.text);
        assert!(refused.error_message().contains("at most 255 bytes"), "{tool}: {}", refused.text);
    }
}
