//! `apply_patch`: a multi-file patch applied all-or-nothing to one agent's workspace.
//!
//! Two phases. [`plan`] checks every operation against the workspace as it is before the
//! patch (paths through the workspace service, an added file must not exist, a deleted or
//! updated one must, a move's target must not, every update's hunks applied in memory) and
//! writes nothing. [`write`] then carries the plan out in the patch's order, keeping what it
//! needs to undo each step (the originals are in memory); if a step fails, the steps already
//! taken are undone in reverse order and the error says so. Folders made on the way stay.

use serde::Serialize;
use uuid::Uuid;

use crate::error::{Error, ErrorKind, Result};
use crate::patch::{self, FileOp};
use crate::workspace::{Workspaces, check_relative};

/// The largest patch text, in bytes.
pub(crate) const MAX_PATCH_BYTES: usize = 1 << 20;
/// The most files one patch may touch.
pub(crate) const MAX_FILES: usize = 100;
/// The most bytes of original and new content one patch holds in memory.
const MAX_HELD_BYTES: u64 = 256 << 20;

/// One checked operation, with everything needed to carry it out and to undo it.
#[derive(Debug)]
pub(crate) enum Step {
    Add { path: String, content: String },
    Delete { path: String, original: Vec<u8> },
    Update { path: String, original: Vec<u8>, new: Vec<u8>, move_to: Option<String> },
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Outcome {
    pub path: String,
    /// `added`, `updated`, `moved` or `deleted`.
    pub action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub move_to: Option<String>,
    pub added_lines: usize,
    pub removed_lines: usize,
}

/// Parses and checks `text`; nothing is written.
pub(crate) async fn plan(ws: &Workspaces, agent: Uuid, text: &str) -> Result<Vec<Step>> {
    if text.len() > MAX_PATCH_BYTES {
        return Err(Error::invalid(format!(
            "the patch is {} bytes; at most {MAX_PATCH_BYTES} per call: split it into several patches",
            text.len()
        ))
        .with_field("patch"));
    }
    let parsed =
        patch::parse(text).map_err(|e| Error::invalid(format!("{e}; nothing was changed")).with_field("patch"))?;
    if parsed.ops.len() > MAX_FILES {
        return Err(Error::invalid(format!(
            "the patch touches {} files; at most {MAX_FILES} per call: split it into several patches",
            parsed.ops.len()
        ))
        .with_field("patch"));
    }
    let mut seen = std::collections::HashSet::new();
    for op in &parsed.ops {
        let targets = match op {
            FileOp::Update { path, move_to: Some(to), .. } => vec![path, to],
            op => vec![match op {
                FileOp::Add { path, .. } | FileOp::Delete { path } | FileOp::Update { path, .. } => path,
            }],
        };
        for path in targets {
            let normal = check_relative(path).map_err(|e| e.with_field("patch"))?.join("/");
            if !seen.insert(normal) {
                return Err(Error::invalid(format!(
                    "`{path}` is named by two operations of the patch; each file may be touched once per patch"
                ))
                .with_field("patch"));
            }
        }
    }

    let max = ws.max_file_bytes();
    let mut held = 0u64;
    let mut hold = |bytes: usize| {
        held += bytes as u64;
        if held > MAX_HELD_BYTES {
            return Err(Error::exhausted(format!(
                "the patch's files come to more than {MAX_HELD_BYTES} bytes; split it into several patches"
            )));
        }
        Ok(())
    };
    let too_big = |path: &str, bytes: usize| {
        Error::invalid(format!(
            "`{path}` would be {bytes} bytes; a workspace takes files of at most {max} bytes ([workspace] max_file_bytes)"
        ))
        .with_field("patch")
    };
    let mut steps = Vec::with_capacity(parsed.ops.len());
    for op in parsed.ops {
        match op {
            FileOp::Add { path, content } => {
                if ws.exists(agent, &path).await? {
                    return Err(Error::conflict(format!(
                        "`{path}` already exists, so it cannot be added; use `*** Update File:` to change it. Nothing was changed."
                    )));
                }
                if content.len() as u64 > max {
                    return Err(too_big(&path, content.len()));
                }
                hold(content.len())?;
                steps.push(Step::Add { path, content });
            }
            FileOp::Delete { path } => {
                let (original, _) = ws.read(agent, &path).await.map_err(|e| nothing_changed(e, &path))?;
                hold(original.len())?;
                steps.push(Step::Delete { path, original });
            }
            FileOp::Update { path, move_to, hunks } => {
                let (original, _) = ws.read(agent, &path).await.map_err(|e| nothing_changed(e, &path))?;
                if let Some(to) = &move_to
                    && ws.exists(agent, to).await?
                {
                    return Err(Error::conflict(format!(
                        "`{path}` cannot be moved to `{to}`: a file is already there. Nothing was changed."
                    )));
                }
                let new = if hunks.is_empty() {
                    original.clone()
                } else {
                    let text = std::str::from_utf8(&original).map_err(|_| {
                        Error::invalid(format!("`{path}` is not UTF-8 text, so hunks cannot be applied to it"))
                            .with_field("patch")
                    })?;
                    patch::apply_hunks(text, &hunks)
                        .map_err(|e| {
                            Error::invalid(format!(
                                "`{path}`: {e}\nNothing was changed: no file of the patch was written."
                            ))
                            .with_field("patch")
                        })?
                        .into_bytes()
                };
                if new.len() as u64 > max {
                    return Err(too_big(&path, new.len()));
                }
                hold(original.len() + new.len())?;
                steps.push(Step::Update { path, original, new, move_to });
            }
        }
    }
    Ok(steps)
}

/// Carries out a checked plan; on a failure, undoes what was done.
pub(crate) async fn write(ws: &Workspaces, agent: Uuid, steps: Vec<Step>) -> Result<Vec<Outcome>> {
    let mut done: Vec<&Step> = Vec::with_capacity(steps.len());
    let mut outcomes = Vec::with_capacity(steps.len());
    for step in &steps {
        match carry_out(ws, agent, step).await {
            Ok(outcome) => {
                done.push(step);
                outcomes.push(outcome);
            }
            Err(e) => {
                let failed = step_path(step);
                let mut not_undone = Vec::new();
                for step in done.iter().rev() {
                    if let Err(undo_error) = undo(ws, agent, step).await {
                        not_undone.push(format!("`{}` ({})", step_path(step), undo_error.message));
                    }
                }
                let message = if not_undone.is_empty() {
                    format!(
                        "writing `{failed}` failed: {}. The {} file(s) already written were rolled back; \
                         the workspace is as it was before the patch.",
                        e.message,
                        done.len()
                    )
                } else {
                    format!(
                        "writing `{failed}` failed: {}. Rolling back failed for {}; check those files.",
                        e.message,
                        not_undone.join(", ")
                    )
                };
                let kind = if e.kind == ErrorKind::Internal { ErrorKind::Failed } else { e.kind };
                return Err(Error::new(kind, message));
            }
        }
    }
    Ok(outcomes)
}

async fn carry_out(ws: &Workspaces, agent: Uuid, step: &Step) -> Result<Outcome> {
    Ok(match step {
        Step::Add { path, content } => {
            ws.create(agent, path, content.clone().into_bytes()).await?;
            outcome(path, "added", None, b"", content.as_bytes())
        }
        Step::Delete { path, original } => {
            ws.delete(agent, path).await?;
            outcome(path, "deleted", None, original, b"")
        }
        Step::Update { path, original, new, move_to: None } => {
            ws.write(agent, path, new.clone()).await?;
            outcome(path, "updated", None, original, new)
        }
        Step::Update { path, original, new, move_to: Some(to) } => {
            ws.rename(agent, path, to, new.clone()).await?;
            outcome(path, "moved", Some(to), original, new)
        }
    })
}

async fn undo(ws: &Workspaces, agent: Uuid, step: &Step) -> Result<()> {
    match step {
        Step::Add { path, .. } => ws.delete(agent, path).await,
        Step::Delete { path, original } => ws.create(agent, path, original.clone()).await.map(drop),
        Step::Update { path, original, move_to: None, .. } => ws.write(agent, path, original.clone()).await.map(drop),
        Step::Update { path, original, move_to: Some(to), .. } => {
            ws.rename(agent, to, path, original.clone()).await.map(drop)
        }
    }
}

fn step_path(step: &Step) -> &str {
    match step {
        Step::Add { path, .. } | Step::Delete { path, .. } | Step::Update { path, .. } => path,
    }
}

fn nothing_changed(e: Error, path: &str) -> Error {
    let message = match e.kind {
        ErrorKind::NotFound => format!("no file `{path}` in the workspace to change. Nothing was changed."),
        _ => format!("{} Nothing was changed.", e.message),
    };
    Error::new(e.kind, message)
}

fn outcome(path: &str, action: &'static str, move_to: Option<&String>, old: &[u8], new: &[u8]) -> Outcome {
    let (added_lines, removed_lines) = line_changes(old, new);
    Outcome { path: path.to_string(), action, move_to: move_to.cloned(), added_lines, removed_lines }
}

/// Lines added and removed from `old` to `new` (0 and 0 for content that is not text).
fn line_changes(old: &[u8], new: &[u8]) -> (usize, usize) {
    let (Ok(old), Ok(new)) = (std::str::from_utf8(old), std::str::from_utf8(new)) else { return (0, 0) };
    let diff = similar::TextDiff::configure().timeout(std::time::Duration::from_millis(200)).diff_lines(old, new);
    diff.iter_all_changes().fold((0, 0), |(added, removed), change| match change.tag() {
        similar::ChangeTag::Insert => (added + 1, removed),
        similar::ChangeTag::Delete => (added, removed + 1),
        similar::ChangeTag::Equal => (added, removed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspaces, Uuid, std::path::PathBuf) {
        let home = tempfile::tempdir().unwrap();
        let ws = Workspaces::new(
            home.path().join("workspaces"),
            crate::workspace::WorkspaceConfig { max_file_bytes: 1 << 20, ..Default::default() },
        );
        let agent = Uuid::now_v7();
        let dir = home.path().join("workspaces").join(agent.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        (home, ws, agent, dir)
    }

    async fn apply(ws: &Workspaces, agent: Uuid, text: &str) -> Result<Vec<Outcome>> {
        let steps = plan(ws, agent, text).await?;
        write(ws, agent, steps).await
    }

    fn read(dir: &std::path::Path, path: &str) -> Option<String> {
        std::fs::read_to_string(dir.join(path)).ok()
    }

    #[tokio::test]
    async fn files_apply_adds_updates_deletes_moves_and_renames_in_one_patch() {
        let (_home, ws, agent, dir) = workspace();
        std::fs::write(dir.join("a.txt"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(dir.join("gone.txt"), "bye\n").unwrap();
        std::fs::write(dir.join("old.txt"), "x\ny\n").unwrap();
        std::fs::write(dir.join("same.bin"), [0u8, 159, 146, 150]).unwrap();
        let patch = "*** Begin Patch\n\
                     *** Add File: new/b.txt\n+hello\n+world\n\
                     *** Update File: a.txt\n@@\n one\n-two\n+TWO\n+2\n three\n\
                     *** Delete File: gone.txt\n\
                     *** Update File: old.txt\n*** Move to: moved/new.txt\n@@\n x\n-y\n+z\n\
                     *** Update File: same.bin\n*** Move to: renamed.bin\n\
                     *** End Patch\n";
        let outcomes = apply(&ws, agent, patch).await.unwrap();
        let summary: Vec<_> =
            outcomes.iter().map(|o| (o.path.as_str(), o.action, o.added_lines, o.removed_lines)).collect();
        assert_eq!(
            summary,
            [
                ("new/b.txt", "added", 2, 0),
                ("a.txt", "updated", 2, 1),
                ("gone.txt", "deleted", 0, 1),
                ("old.txt", "moved", 1, 1),
                ("same.bin", "moved", 0, 0),
            ]
        );
        assert_eq!(read(&dir, "new/b.txt").unwrap(), "hello\nworld\n");
        assert_eq!(read(&dir, "a.txt").unwrap(), "one\nTWO\n2\nthree\n");
        assert!(!dir.join("gone.txt").exists() && !dir.join("old.txt").exists() && !dir.join("same.bin").exists());
        assert_eq!(read(&dir, "moved/new.txt").unwrap(), "x\nz\n");
        assert_eq!(std::fs::read(dir.join("renamed.bin")).unwrap(), [0u8, 159, 146, 150], "a pure rename keeps bytes");
    }

    #[tokio::test]
    async fn files_apply_checks_every_file_before_writing_any() {
        let (_home, ws, agent, dir) = workspace();
        std::fs::write(dir.join("first.txt"), "keep\n").unwrap();
        std::fs::write(dir.join("second.txt"), "alpha\nbeta\n").unwrap();
        std::fs::write(dir.join("taken.txt"), "here\n").unwrap();
        let hunk_fails = "*** Begin Patch\n*** Update File: first.txt\n@@\n-keep\n+changed\n\
                          *** Update File: second.txt\n@@\n-gamma\n+delta\n*** End Patch";
        let e = apply(&ws, agent, hunk_fails).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArguments);
        assert!(
            e.message.contains("`second.txt`: hunk 1") && e.message.contains("Nothing was changed"),
            "{}",
            e.message
        );
        let cases = [
            ("*** Add File: taken.txt\n+x\n", ErrorKind::Conflict),
            ("*** Delete File: missing.txt\n", ErrorKind::NotFound),
            ("*** Update File: missing.txt\n@@\n-a\n+b\n", ErrorKind::NotFound),
            ("*** Update File: second.txt\n*** Move to: taken.txt\n", ErrorKind::Conflict),
            ("*** Add File: ../escape.txt\n+x\n", ErrorKind::InvalidArguments),
            ("*** Delete File: first.txt\n", ErrorKind::InvalidArguments), // twice in one patch
        ];
        for (second, kind) in cases {
            let patch = format!("*** Begin Patch\n*** Delete File: first.txt\n{second}*** End Patch");
            assert_eq!(apply(&ws, agent, &patch).await.unwrap_err().kind, kind, "{second}");
        }
        assert_eq!(read(&dir, "first.txt").unwrap(), "keep\n", "nothing was written");
        assert_eq!(read(&dir, "second.txt").unwrap(), "alpha\nbeta\n");
        assert!(!dir.parent().unwrap().join("escape.txt").exists());
    }

    #[tokio::test]
    async fn files_apply_parse_errors_name_the_line_and_limits_hold() {
        let (_home, ws, agent, _dir) = workspace();
        let e = apply(&ws, agent, "*** Begin Patch\n*** Add File: a.txt\n+x\n*** Frobnicate: b\n*** End Patch")
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArguments);
        assert!(e.message.contains("patch line 4"), "{}", e.message);
        let many: String = (0..=MAX_FILES).map(|i| format!("*** Add File: f{i}.txt\n+x\n")).collect();
        let e = apply(&ws, agent, &format!("*** Begin Patch\n{many}*** End Patch")).await.unwrap_err();
        assert!(e.message.contains("at most 100"), "{}", e.message);
        let huge =
            format!("*** Begin Patch\n*** Add File: big.txt\n{}*** End Patch", "+x\n".repeat(MAX_PATCH_BYTES / 3 + 1));
        assert!(apply(&ws, agent, &huge).await.unwrap_err().message.contains("1048576"));
    }

    #[tokio::test]
    async fn files_apply_a_write_failing_midway_rolls_back_what_was_written() {
        let (_home, ws, agent, dir) = workspace();
        std::fs::write(dir.join("notes.txt"), "before\n").unwrap();
        std::fs::write(dir.join("old.txt"), "old\n").unwrap();
        std::fs::write(dir.join("from.txt"), "moving\n").unwrap();
        // `made.txt/inner.txt` passes the check (nothing is there), but by the time it is
        // written `made.txt` is a file the patch itself added, so the write fails.
        let patch = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-before\n+after\n\
                     *** Delete File: old.txt\n*** Update File: from.txt\n*** Move to: to.txt\n\
                     *** Add File: made.txt\n+x\n*** Add File: made.txt/inner.txt\n+y\n*** End Patch";
        let e = apply(&ws, agent, patch).await.unwrap_err();
        assert!(e.message.contains("rolled back"), "{}", e.message);
        assert_eq!(read(&dir, "notes.txt").unwrap(), "before\n");
        assert_eq!(read(&dir, "old.txt").unwrap(), "old\n");
        assert_eq!(read(&dir, "from.txt").unwrap(), "moving\n");
        assert!(!dir.join("to.txt").exists() && !dir.join("made.txt").exists());
    }
}
