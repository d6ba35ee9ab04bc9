use std::sync::Arc;

use super::*;
use crate::error::{Error, ErrorKind};

fn field(e: &Error) -> Option<&str> {
    e.fields.first().map(|f| f.field.as_str())
}

async fn skills() -> (tempfile::TempDir, Arc<Skills>) {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::db::open_for_test(dir.path()).await;
    let skills = Skills::new(dir.path().join("skills"), db, Clock::System);
    (dir, Arc::new(skills))
}

fn agent(name: &str) -> Actor {
    Actor::Agent { name: name.into(), id: uuid::Uuid::now_v7() }
}

fn manifest(name: &str) -> Manifest {
    Manifest {
        name: name.into(),
        description: "Writes release notes.".into(),
        version: Some("0.1".into()),
        tags: vec![],
    }
}

const BODY: &str = "# Release notes\n\n1. Read the merged changes.\n2. Group them by area.\n3. Write one line each.\n";

#[tokio::test]
async fn every_operation_is_a_numbered_version_with_its_diff_and_rollback_restores_one() {
    let (_dir, s) = skills().await;
    let ann = agent("ann");
    assert_eq!(s.create(&ann, manifest("notes"), BODY.into()).await.unwrap().version, 1);
    let patched =
        s.patch(&ann, "notes", "2. Group them by area.", "2. Group them by area, then by size.").await.unwrap();
    assert_eq!((patched.version, patched.strategy.as_deref()), (2, Some("exact")));
    assert!(patched.diff.contains("+2. Group them by area, then by size."), "{}", patched.diff);
    let updated = s.update(&Actor::Operator("operator:olga".into()), "notes", "Just one line.\n".into()).await.unwrap();
    assert_eq!(updated.version, 3);

    // No version: one step back, to the patched body; it is itself version 4.
    let back = s.rollback(&ann, "notes", None).await.unwrap();
    assert_eq!(back.version, 4);
    assert!(s.get("notes").await.unwrap().body.contains("then by size"));
    // Back to the very first version, by number.
    s.rollback(&ann, "notes", Some(1)).await.unwrap();
    let skill = s.get("notes").await.unwrap();
    assert_eq!((skill.body.as_str(), skill.version), (BODY, 5));

    let history = s.history("notes").await.unwrap();
    let ops: Vec<(i64, &str)> = history.iter().map(|h| (h.version, h.op.as_str())).collect();
    assert_eq!(ops, [(1, "create"), (2, "patch"), (3, "update"), (4, "rollback"), (5, "rollback")]);
    assert_eq!(history[2].actor, "operator:olga");
    assert!(history[0].actor.starts_with("agent ann ("));
    assert_eq!(history[4].detail.as_deref(), Some("to version 1"));
    assert_eq!(history[0].content_hash, history[4].content_hash, "the same manifest and body hash the same");

    let refused = s.rollback(&ann, "notes", Some(5)).await.unwrap_err();
    assert_eq!(refused.kind, ErrorKind::InvalidArguments, "{}", refused.message);
}

#[tokio::test]
async fn a_patch_that_does_not_match_is_refused_with_the_drift_and_changes_nothing() {
    let (_dir, s) = skills().await;
    s.create(&agent("ann"), manifest("notes"), BODY.into()).await.unwrap();
    let e = s.patch(&agent("ann"), "notes", "2. Group them by team.\n3. Write one line each.", "x").await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArguments);
    assert!(
        e.message.contains("-2. Group them by team.") && e.message.contains("+2. Group them by area."),
        "{}",
        e.message
    );
    let skill = s.get("notes").await.unwrap();
    assert_eq!((skill.body.as_str(), skill.version), (BODY, 1), "nothing written, no version");
}

#[tokio::test]
async fn concurrent_patches_of_one_skill_both_land_one_after_the_other() {
    let (_dir, s) = skills().await;
    s.create(&agent("ann"), manifest("notes"), BODY.into()).await.unwrap();
    let (a, b) = (s.clone(), s.clone());
    let first = tokio::spawn(async move { a.patch(&agent("ann"), "notes", "1. Read", "1. Carefully read").await });
    let second = tokio::spawn(async move { b.patch(&agent("bob"), "notes", "3. Write", "3. Then write").await });
    let (first, second) = (first.await.unwrap().unwrap(), second.await.unwrap().unwrap());
    let mut versions = [first.version, second.version];
    versions.sort();
    assert_eq!(versions, [2, 3]);
    let body = s.get("notes").await.unwrap().body;
    assert!(body.contains("1. Carefully read") && body.contains("3. Then write"), "no lost update: {body}");
}

#[tokio::test]
async fn support_files_stay_in_their_four_folders() {
    let (dir, s) = skills().await;
    let ann = agent("ann");
    s.create(&ann, manifest("notes"), BODY.into()).await.unwrap();
    let written = s.write_file(&ann, "notes", "references/style.md", "Short lines.\n".into()).await.unwrap();
    assert_eq!((written.version, written.op.as_str()), (2, "write_file"));
    assert_eq!(s.read_file("notes", "references/style.md").await.unwrap(), "Short lines.\n");
    assert_eq!(s.get("notes").await.unwrap().files, ["references/style.md"]);

    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "secret").unwrap();
    std::os::unix::fs::symlink(&outside, dir.path().join("skills/notes/assets/link")).unwrap();
    std::os::unix::fs::symlink(dir.path(), dir.path().join("skills/notes/templates/up")).unwrap();
    for path in [
        "../outside.txt",
        "references/../../outside.txt",
        "/etc/passwd",
        "SKILL.md",
        "skill.toml",
        "other/x.md",
        "references",
        "references//x",
        "assets/link",
        "templates/up/outside.txt",
        "references/%2e%2e/x",
        "references/a\0b",
    ] {
        let read = s.read_file("notes", path).await;
        assert!(
            matches!(&read, Err(e) if matches!(e.kind, ErrorKind::InvalidArguments | ErrorKind::Forbidden | ErrorKind::NotFound)),
            "{path}: {read:?}"
        );
        assert!(read.is_err_and(|e| !e.message.contains("secret")));
        let write = s.write_file(&ann, "notes", path, "x".into()).await;
        assert!(write.is_err(), "{path} was written");
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret", "nothing outside was touched");

    let removed = s.remove_file(&ann, "notes", "references/style.md").await.unwrap();
    assert!(removed.diff.contains("-Short lines."), "{}", removed.diff);
    let gone = s.read_file("notes", "references/style.md").await.unwrap_err();
    assert_eq!(gone.kind, ErrorKind::NotFound);
}

#[tokio::test]
async fn a_deleted_skill_keeps_its_history_and_an_operator_restores_it_with_its_files() {
    let (_dir, s) = skills().await;
    let ann = agent("ann");
    s.create(&ann, manifest("notes"), BODY.into()).await.unwrap();
    s.write_file(&ann, "notes", "templates/t.md", "T\n".into()).await.unwrap();
    assert_eq!(s.delete(&ann, "notes").await.unwrap().version, 3);
    assert_eq!(s.get("notes").await.unwrap_err().kind, ErrorKind::NotFound);
    assert!(s.list().await.unwrap().is_empty());
    assert_eq!(s.history("notes").await.unwrap().len(), 3, "the history outlives the skill");
    let deleted = s.deleted().await.unwrap();
    assert_eq!(deleted.iter().map(|d| (d.skill.as_str(), d.version)).collect::<Vec<_>>(), [("notes", 3)]);
    assert_eq!(deleted[0].body, BODY, "the delete entry keeps what was deleted");

    let conflict = s.restore(&ann, "nothing-here").await.unwrap_err();
    assert_eq!(conflict.kind, ErrorKind::NotFound);
    assert_eq!(s.restore(&Actor::Operator("operator:olga".into()), "notes").await.unwrap().version, 4);
    let skill = s.get("notes").await.unwrap();
    assert_eq!((skill.body.as_str(), skill.files.as_slice()), (BODY, &["templates/t.md".to_string()][..]));
    assert_eq!(s.restore(&ann, "notes").await.unwrap_err().kind, ErrorKind::Conflict, "not deleted now");
    assert!(s.deleted().await.unwrap().is_empty(), "a restored skill is no longer listed as deleted");
}

#[tokio::test]
async fn an_operators_edit_changes_the_body_and_manifest_in_one_version_but_never_the_name() {
    let (_dir, s) = skills().await;
    let olga = Actor::Operator("token:olga".into());
    s.create(&agent("ann"), manifest("notes"), BODY.into()).await.unwrap();
    let mut relabelled = manifest("notes");
    relabelled.description = "Writes short release notes.".into();
    relabelled.tags = vec!["writing".into()];
    let edited = s.edit(&olga, "notes", Some(relabelled.clone()), "Short.\n".into()).await.unwrap();
    assert_eq!((edited.version, edited.op.as_str()), (2, "update"));
    assert!(edited.diff.contains("+description = \"Writes short release notes.\""), "{}", edited.diff);
    assert!(edited.diff.contains("+Short."), "{}", edited.diff);
    let skill = s.get("notes").await.unwrap();
    assert_eq!((skill.manifest, skill.body.as_str()), (relabelled, "Short.\n"));
    assert_eq!(s.history("notes").await.unwrap()[1].actor, "token:olga");

    // The body alone keeps the manifest.
    s.edit(&olga, "notes", None, "Shorter.\n".into()).await.unwrap();
    assert_eq!(s.get("notes").await.unwrap().manifest.tags, ["writing"]);

    let renamed = s.edit(&olga, "notes", Some(manifest("other")), "x".into()).await.unwrap_err();
    assert_eq!(field(&renamed), Some("manifest.name"));
    let mut blank = manifest("notes");
    blank.description = " ".into();
    let blank = s.edit(&olga, "notes", Some(blank), "x".into()).await.unwrap_err();
    assert_eq!(field(&blank), Some("manifest.description"));
    let missing = s.edit(&olga, "absent", None, "x".into()).await.unwrap_err();
    assert_eq!(missing.kind, ErrorKind::NotFound);
    assert_eq!(s.get("notes").await.unwrap().body, "Shorter.\n", "refused edits change nothing");
    assert_eq!(s.history("notes").await.unwrap().len(), 3);
}

#[tokio::test]
async fn names_manifests_and_sizes_are_checked_before_anything_is_written() {
    let (dir, s) = skills().await;
    let ann = agent("ann");
    for name in ["", "Notes", "../x", "a/b", ".x", &"n".repeat(65), "é"] {
        let e = s.create(&ann, manifest(name), BODY.into()).await.unwrap_err();
        assert_eq!((e.kind, field(&e)), (ErrorKind::InvalidArguments, Some("name")), "{name:?}");
    }
    let blank = Manifest { description: "  ".into(), ..manifest("notes") };
    let blank = s.create(&ann, blank, BODY.into()).await.unwrap_err();
    assert_eq!(field(&blank), Some("manifest.description"));
    let big = s.create(&ann, manifest("notes"), "x".repeat(MAX_BODY_BYTES + 1)).await.unwrap_err();
    assert_eq!(field(&big), Some("body"));
    assert!(!dir.path().join("skills/notes").exists(), "nothing was written");

    s.create(&ann, manifest("notes"), BODY.into()).await.unwrap();
    let again = s.create(&ann, manifest("notes"), "other".into()).await.unwrap_err();
    assert_eq!(again.kind, ErrorKind::Conflict);
    assert_eq!(s.get("notes").await.unwrap().body, BODY);
}

/// A deleted skill's folder is removed by the sweep once its delete is older than the cutoff;
/// its history stays, and restoring it then says its files are gone.
#[tokio::test]
async fn the_sweep_removes_a_deleted_skills_folder_and_keeps_its_history() {
    let (dir, s) = skills().await;
    let ann = agent("ann");
    s.create(&ann, manifest("notes"), BODY.into()).await.unwrap();
    s.delete(&ann, "notes").await.unwrap();
    let aside = dir.path().join("skills/.deleted");
    assert_eq!(std::fs::read_dir(&aside).unwrap().count(), 1);
    assert_eq!(s.sweep_deleted("2000-01-01T00:00:00.000Z").await.unwrap(), 0, "not old enough");
    assert_eq!(s.sweep_deleted("2999-01-01T00:00:00.000Z").await.unwrap(), 1);
    assert_eq!(std::fs::read_dir(&aside).unwrap().count(), 0);
    let e = s.restore(&ann, "notes").await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound, "{e}");
    assert!(e.message.contains("are gone"), "{e}");
    assert_eq!(s.deleted().await.unwrap().len(), 1, "the history stays");
}
