//! The skills family through the real daemon: the eight tools behind the `skills.*` grant,
//! the history every change leaves (`GET /api/skills/{name}`), patches refused with the
//! drift, support files kept inside their folders, and two agents patching one skill at once.

use serde_json::{Value, json};

use crate::{agent_with, daemon_with_config};

const BODY: &str = "# Release notes\n\n1. Read the merged changes.\n2. Group them by area.\n3. Write one line each.\n";

async fn call(api: &kennel_tests::Api, agent: &str, tool: &str, args: Value) -> Value {
    let r = api.invoke(agent, tool, args).await;
    assert_eq!(r.status, 200, "{tool}: {}", r.text);
    r.body["content"].clone()
}

#[tokio::test]
async fn an_agent_evolves_a_skill_and_every_step_is_in_its_history() {
    let (home, _daemon, api) = daemon_with_config("").await;
    let ann = agent_with(&api, "ann", &["skills.*"]).await;
    let manifest = json!({ "description": "Writes release notes.", "version": "0.1", "tags": ["writing"] });
    let created =
        call(&api, &ann, "skill_evolve_create", json!({ "name": "notes", "manifest": manifest, "body": BODY })).await;
    assert_eq!((created["version"].as_i64(), created["op"].as_str()), (Some(1), Some("create")));
    assert!(
        home.path().join("skills/notes/SKILL.md").is_file() && home.path().join("skills/notes/references").is_dir()
    );

    // Trailing spaces and CRLF in `old` still find the line (the second strategy).
    let patched = call(
        &api,
        &ann,
        "skill_evolve_patch",
        json!({ "name": "notes", "old": "2. Group them by area.   \r\n", "new": "2. Group them by area, then size.\n" }),
    )
    .await;
    assert_eq!((patched["version"].as_i64(), patched["strategy"].as_str()), (Some(2), Some("line-trimmed")));
    let drift = api
        .invoke(&ann, "skill_evolve_patch", json!({ "name": "notes", "old": "1. Read the open issues.\n2. Group them by area, then size.\n", "new": "x" }))
        .await;
    assert_eq!((drift.status, drift.error_kind()), (422, "InvalidArguments"), "{}", drift.text);
    assert!(
        drift.error_message().contains("+1. Read the merged changes."),
        "the refusal shows the drift: {}",
        drift.text
    );

    call(
        &api,
        &ann,
        "skill_evolve_write_file",
        json!({ "skill": "notes", "path": "templates/entry.md", "body": "- AREA: CHANGE\n" }),
    )
    .await;
    let read = call(&api, &ann, "skill_read_file", json!({ "skill": "notes", "file": "templates/entry.md" })).await;
    assert_eq!(read["content"], "- AREA: CHANGE\n");
    for path in ["../../kennel.db", "SKILL.md", "templates/../../x", "/etc/passwd", "notes/x"] {
        let r =
            api.invoke(&ann, "skill_evolve_write_file", json!({ "skill": "notes", "path": path, "body": "x" })).await;
        assert_eq!(r.status, 422, "{path}: {}", r.text);
        let r = api.invoke(&ann, "skill_read_file", json!({ "skill": "notes", "file": path })).await;
        assert_ne!(r.status, 200, "{path}: {}", r.text);
    }
    call(
        &api,
        &ann,
        "skill_evolve_patch",
        json!({ "name": "notes", "old": "3. Write one line each.", "new": "3. Write." }),
    )
    .await;
    let back = call(&api, &ann, "skill_evolve_rollback", json!({ "name": "notes", "version": 3 })).await;
    assert_eq!(back["version"], 5, "a rollback is a version too");
    call(&api, &ann, "skill_evolve_remove_file", json!({ "skill": "notes", "path": "templates/entry.md" })).await;

    let skill = api.get("/api/skills/notes").await;
    assert_eq!(skill.status, 200, "{}", skill.text);
    assert_eq!(skill.body["manifest"]["description"], "Writes release notes.");
    assert_eq!(skill.body["version"], 6);
    assert!(skill.body["body"].as_str().unwrap().contains("3. Write one line each."), "{}", skill.text);
    let ops: Vec<&str> = skill.body["history"].as_array().unwrap().iter().map(|h| h["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["create", "patch", "write_file", "patch", "rollback", "remove_file"]);
    assert!(skill.body["history"][0]["actor"].as_str().unwrap().starts_with("agent ann ("), "{}", skill.text);
    let list = api.get("/api/skills").await;
    assert_eq!(list.body[0]["name"], "notes", "{}", list.text);

    call(&api, &ann, "skill_evolve_delete", json!({ "name": "notes" })).await;
    assert_eq!(api.get("/api/skills/notes").await.status, 404);
    assert_eq!(api.get("/api/skills/Not%20a%20name").await.status, 422);
}

#[tokio::test]
async fn the_tools_need_the_grant_and_two_agents_patching_at_once_both_land() {
    let (_home, _daemon, api) = daemon_with_config("").await;
    let ann = agent_with(&api, "ann", &["skills.*"]).await;
    let bob = agent_with(&api, "bob", &["skills.*"]).await;
    let reader = agent_with(&api, "reader", &["skill_read_file"]).await;
    let manifest = json!({ "description": "Writes release notes." });
    call(&api, &ann, "skill_evolve_create", json!({ "name": "notes", "manifest": manifest, "body": BODY })).await;

    let denied = api.invoke(&reader, "skill_evolve_update", json!({ "name": "notes", "body": "gone" })).await;
    assert_eq!((denied.status, denied.error_kind()), (403, "Forbidden"), "{}", denied.text);
    assert_eq!(
        api.invoke(&reader, "skill_read_file", json!({ "skill": "notes", "file": "references/none.md" })).await.status,
        404
    );

    let (a, b) = tokio::join!(
        api.invoke(
            &ann,
            "skill_evolve_patch",
            json!({ "name": "notes", "old": "1. Read", "new": "1. Carefully read" })
        ),
        api.invoke(&bob, "skill_evolve_patch", json!({ "name": "notes", "old": "3. Write", "new": "3. Then write" })),
    );
    assert_eq!((a.status, b.status), (200, 200), "{} / {}", a.text, b.text);
    let skill = api.get("/api/skills/notes").await;
    let body = skill.body["body"].as_str().unwrap();
    assert!(body.contains("1. Carefully read") && body.contains("3. Then write"), "no lost update: {body}");
    assert_eq!(skill.body["version"], 3);
}

#[tokio::test]
async fn an_agent_types_skills_ride_in_its_system_prompt_cut_at_the_configured_size() {
    let (_home, _daemon, api, llm) = crate::daemon_with_llm("openai", "[skills]\nprompt_max_bytes = 400\n").await;
    let writer = agent_with(&api, "writer", &["skills.*"]).await;
    let manifest = json!({ "description": "Writes release notes." });
    call(&api, &writer, "skill_evolve_create", json!({ "name": "notes", "manifest": manifest, "body": BODY })).await;
    let long = format!("{}THE END\n", "Keep every line short. ".repeat(40));
    let manifest = json!({ "description": "House style." });
    call(&api, &writer, "skill_evolve_create", json!({ "name": "style", "manifest": manifest, "body": long })).await;

    let agent = crate::agent_from(
        &api,
        json!({"name": "noter", "system_prompt": "You write notes.", "model": "m", "skills": ["notes", "missing", "style"]}),
    )
    .await;
    llm.push(kennel_tests::fake_llm::Scripted::text("Done."));
    let turn = api.post(&format!("/api/agents/{agent}/messages"), json!({ "message": "Write the notes." })).await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    let system = llm.requests()[0].system();
    assert!(system.starts_with("You write notes.\n\n## Your skills"), "{system}");
    assert!(
        system.contains("### notes: Writes release notes.\n\n# Release notes\n\n1. Read the merged changes."),
        "{system}"
    );
    assert!(system.contains("Skill `missing` is listed by your agent type but cannot be read"), "{system}");
    assert!(system.contains("### style: House style.") && !system.contains("THE END"), "{system}");
    assert!(system.contains("is cut here") && system.contains("prompt_max_bytes = 400"), "{system}");

    // An evolve shows in the next turn's prompt.
    call(
        &api,
        &writer,
        "skill_evolve_patch",
        json!({ "name": "notes", "old": "1. Read the merged changes.", "new": "1. Read the release branch." }),
    )
    .await;
    llm.push(kennel_tests::fake_llm::Scripted::text("Again."));
    let again = api.post(&format!("/api/agents/{agent}/messages"), json!({ "message": "Again." })).await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert!(llm.requests()[1].system().contains("1. Read the release branch."));
}

#[tokio::test]
async fn an_operator_edits_rolls_back_deletes_and_restores_a_skill_through_the_api() {
    let (_home, _daemon, api) = daemon_with_config("").await;
    let manifest = json!({ "name": "notes", "description": "Writes release notes.", "tags": ["writing"] });
    let created = api.post("/api/skills", json!({ "manifest": manifest, "body": BODY })).await;
    assert_eq!((created.status, created.header("location")), (201, Some("/api/skills/notes")), "{}", created.text);
    assert_eq!(api.post("/api/skills", json!({ "manifest": manifest })).await.status, 409, "never an overwrite");
    let t = api.post("/api/templates", json!({ "name": "scribe", "skills": ["notes"] })).await;
    assert_eq!(t.status, 201, "{}", t.text);

    let relabelled = json!({ "name": "notes", "description": "Short notes.", "version": "2.0" });
    let edited = api.put("/api/skills/notes", json!({ "manifest": relabelled, "body": "Be brief.\n" })).await;
    assert_eq!((edited.status, edited.body["version"].as_i64()), (200, Some(2)), "{}", edited.text);
    let renamed =
        api.put("/api/skills/notes", json!({ "manifest": { "name": "other", "description": "x" }, "body": "" })).await;
    assert_eq!(
        (renamed.status, renamed.body["error"]["fields"][0]["field"].as_str()),
        (422, Some("manifest.name")),
        "{}",
        renamed.text
    );

    let file =
        api.put("/api/skills/notes/files", json!({ "path": "templates/entry.md", "text": "- AREA: CHANGE\n" })).await;
    assert_eq!(file.status, 200, "{}", file.text);
    let read = api.get("/api/skills/notes/files?path=templates/entry.md").await;
    assert_eq!((read.status, read.text.as_str()), (200, "- AREA: CHANGE\n"));
    let escape = api.put("/api/skills/notes/files", json!({ "path": "../../kennel.db", "text": "x" })).await;
    assert_eq!(escape.status, 422, "{}", escape.text);

    let back = api.post("/api/skills/notes/rollback", json!({ "version": 1 })).await;
    assert_eq!((back.status, back.body["op"].as_str()), (200, Some("rollback")), "{}", back.text);
    let skill = api.get("/api/skills/notes").await;
    assert_eq!((skill.body["body"].as_str(), skill.body["version"].as_i64()), (Some(BODY), Some(4)));
    assert_eq!(skill.body["manifest"]["description"], "Writes release notes.", "a rollback restores the manifest too");
    assert_eq!(skill.body["used_by"], json!(["scribe"]));
    let actors: Vec<&str> =
        skill.body["history"].as_array().unwrap().iter().map(|h| h["actor"].as_str().unwrap()).collect();
    assert_eq!(actors, ["token:tests"; 4], "each change names the token that made it");
    assert_eq!(api.post("/api/skills/notes/rollback", json!({ "version": 9 })).await.status, 422);

    assert_eq!(api.delete("/api/skills/notes").await.status, 200);
    assert_eq!(api.get("/api/skills/notes").await.status, 404);
    let deleted = api.get("/api/deleted-skills").await;
    assert_eq!(
        (deleted.body[0]["skill"].as_str(), deleted.body[0]["version"].as_i64()),
        (Some("notes"), Some(5)),
        "{}",
        deleted.text
    );
    assert_eq!(
        api.get("/api/skills/notes/history").await.body.as_array().map(Vec::len),
        Some(5),
        "the history outlives the skill"
    );
    let restored = api.post("/api/skills/notes/restore", json!(null)).await;
    assert_eq!((restored.status, restored.body["version"].as_i64()), (200, Some(6)), "{}", restored.text);
    assert_eq!(api.post("/api/skills/notes/restore", json!(null)).await.status, 409, "not deleted now");
    assert_eq!(api.get("/api/skills/notes").await.body["files"], json!(["templates/entry.md"]));

    let log = api.get("/api/audit/actions?actor=token:tests").await;
    let actions: Vec<&str> = log.body.as_array().unwrap().iter().map(|a| a["action"].as_str().unwrap()).collect();
    for action in
        ["skill.create", "skill.update", "skill.write_file", "skill.rollback", "skill.delete", "skill.restore"]
    {
        assert!(actions.contains(&action), "{action} is in the operator-action log: {actions:?}");
    }
}

#[tokio::test]
async fn the_skill_page_edits_rolls_back_and_restores_as_the_signed_in_operator() {
    let (_home, _d, api, b) = crate::dashboard::signed_in_with("").await;
    let manifest = json!({ "name": "notes", "description": "Writes release notes." });
    assert_eq!(api.post("/api/skills", json!({ "manifest": manifest, "body": BODY })).await.status, 201);
    api.post("/api/templates", json!({ "name": "scribe", "skills": ["notes"] })).await;
    let page = b.get("/skills/notes").await;
    assert!(page.text.contains("href=\"/agent-types/scribe\""), "the types that use it are linked");

    // A refused edit comes back with what was typed and the reason next to the field.
    let typed = "A body the operator typed.\n";
    let refused = b
        .submit("/skills/notes", "/skills/notes", &[("description", " "), ("tags", ""), ("label", ""), ("body", typed)])
        .await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert!(refused.text.contains("id=\"manifest-description-error\""), "{}", refused.text);
    assert!(refused.text.contains(typed.trim()), "nothing typed is lost");
    assert_eq!(api.get("/api/skills/notes").await.body["version"], 1, "nothing was saved");

    let saved = b
        .submit(
            "/skills/notes",
            "/skills/notes",
            &[("description", "Short."), ("tags", "a, b"), ("label", "2"), ("body", typed)],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    let skill = api.get("/api/skills/notes").await;
    assert_eq!((skill.body["body"].as_str(), skill.body["manifest"]["tags"].clone()), (Some(typed), json!(["a", "b"])));
    assert_eq!(skill.body["history"][1]["actor"], "operator:ada");

    let page = b.get("/skills/notes").await;
    assert!(page.text.contains("Roll back to version 1"), "earlier versions offer a rollback");
    assert_eq!(b.submit("/skills/notes", "/skills/notes/rollback", &[("version", "1")]).await.status, 303);
    assert_eq!(api.get("/api/skills/notes").await.body["body"], BODY);

    assert_eq!(b.submit("/skills/notes", "/skills/notes/delete", &[]).await.status, 303);
    let list = b.get("/skills").await;
    assert!(list.text.contains("id=\"deleted-skills\"") && list.text.contains("Restore notes"), "{}", list.text);
    assert_eq!(b.submit("/skills", "/skills/notes/restore", &[]).await.status, 303);
    assert_eq!(api.get("/api/skills/notes").await.body["body"], BODY);
    let actions = api.get("/api/audit/actions?actor=operator:ada").await;
    assert!(actions.text.contains("skill.restore") && actions.text.contains("skill.rollback"), "{}", actions.text);
}
