//! `kennel migrate-to-postgres`: a SQLite home with history moves to PostgreSQL and the
//! daemon goes on there with nothing lost. Needs a PostgreSQL server
//! (`KENNEL_TEST_DATABASE_URL`; `./scripts/test` starts one).

use std::time::Duration;

use kennel_tests::fake_llm::{FakeLlm, Scripted};
use kennel_tests::postgres::Database;
use kennel_tests::{Home, eventually};
use serde_json::{Value, json};

#[tokio::test]
async fn a_sqlite_home_with_history_moves_to_postgres_and_goes_on_there() {
    let Some(target) = Database::empty("a_sqlite_home_with_history_moves_to_postgres_and_goes_on_there") else {
        return;
    };
    let llm = FakeLlm::start().await;
    let home = Home::on_sqlite(&llm.provider_config("fake", "openai"));
    let token = home.token("tests").await;
    let daemon = home.start().await;
    let api = daemon.api(&token);

    // History of every kind: a chat, tasks with their events, a schedule, memories, the audit.
    let tools = [
        "task_post",
        "task_claim",
        "cron_create",
        "memory_store",
        "memory_recall",
        "memory_semantic_add",
        "memory_semantic_search",
    ];
    let made = api.post("/api/templates", json!({"name": "keeper", "model": "m", "tools": tools})).await;
    assert_eq!(made.status, 201, "{}", made.text);
    let spawned = api.post("/api/agents", json!({"template": "keeper"})).await;
    assert_eq!(spawned.status, 201, "{}", spawned.text);
    let id = spawned.body["id"].as_str().unwrap().to_string();
    llm.push(Scripted::text("Noted: the launch is on Thursday."));
    let chat = api.post(&format!("/api/agents/{id}/messages"), json!({"message": "The launch is on Thursday."})).await;
    assert_eq!(chat.status, 200, "{}", chat.text);
    let session = chat.body["session_id"].as_str().unwrap().to_string();
    for title in ["write the notes", "book the room"] {
        assert_eq!(
            api.invoke(&id, "task_post", json!({"title": title, "body": "before the launch"})).await.status,
            200
        );
    }
    assert_eq!(api.invoke(&id, "task_claim", json!({})).await.status, 200);
    let cron = api.invoke(&id, "cron_create", json!({"expression": "0 9 * * 1", "prompt": "weekly review"})).await;
    assert_eq!(cron.status, 200, "{}", cron.text);
    assert_eq!(api.invoke(&id, "memory_store", json!({"key": "launch", "value": "Thursday"})).await.status, 200);
    let fact = api.invoke(&id, "memory_semantic_add", json!({"content": "The launch venue is the old library."})).await;
    assert_eq!(fact.status, 200, "{}", fact.text);
    let before = snapshot(&api, &id, &session).await;

    // Refused while the daemon runs, and for a URL that is not PostgreSQL's.
    let running = home.cli(&["migrate-to-postgres", &target.url]).await;
    assert!(!running.status.success());
    assert!(String::from_utf8_lossy(&running.stderr).contains("stop it first"), "{running:?}");
    let not_postgres = home.cli(&["migrate-to-postgres", "mysql://root@localhost/kennel"]).await;
    assert!(String::from_utf8_lossy(&not_postgres.stderr).contains("not a postgres:// URL"), "{not_postgres:?}");
    assert!(!target.has_schema(), "nothing was written by a refused run");

    let (code, _) = daemon.stop().await;
    assert_eq!(code, Some(0));
    let moved = home.cli_ok(&["migrate-to-postgres", &target.url]).await;
    assert!(moved.contains("the counts match"), "{moved}");
    for table in ["agents", "session_messages", "tasks", "task_events", "schedules", "memory_kv", "memories", "audit"] {
        let line = moved
            .lines()
            .find(|l| l.split_whitespace().next() == Some(table))
            .unwrap_or_else(|| panic!("{table}: {moved}"));
        let printed: i64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(printed > 0, "{line}");
        assert_eq!(target.scalar(&format!("SELECT count(*) FROM {table}")), printed.to_string(), "{table}");
    }
    // Task history came from SQLite, not from PostgreSQL's triggers firing again on the copy.
    assert_eq!(target.scalar("SELECT count(*) FROM task_events"), "3", "two posts and a claim");

    // A second run finds the database taken and changes nothing; so does a database holding
    // another application's table.
    let again = home.cli(&["migrate-to-postgres", &target.url]).await;
    assert!(String::from_utf8_lossy(&again.stderr).contains("` has rows)"), "{again:?}");
    let Some(other) = Database::empty("another application's database") else { return };
    other.scalar("CREATE TABLE invoices (id BIGINT)");
    let foreign = home.cli(&["migrate-to-postgres", &other.url]).await;
    assert!(String::from_utf8_lossy(&foreign.stderr).contains("it has the table `invoices`"), "{foreign:?}");
    assert!(!other.has_schema(), "nothing of Kennel's was created next to it");

    // The daemon on PostgreSQL: everything as it was, and new rows take new ids.
    let daemon = home.start_with_env(&[("KENNEL_DATABASE_URL", &target.url)]).await;
    let api = daemon.api(&token);
    assert_eq!(snapshot(&api, &id, &session).await, before);
    let audit_before: i64 = target.scalar("SELECT max(id) FROM audit").parse().unwrap();
    assert_eq!(api.invoke(&id, "task_post", json!({"title": "after the move", "body": ""})).await.status, 200);
    let found = api.invoke(&id, "memory_semantic_search", json!({"query": "where is the launch venue"})).await;
    assert!(found.text.contains("old library"), "{}", found.text);
    assert!(
        eventually(Duration::from_secs(5), || async {
            target.scalar("SELECT max(id) FROM audit").parse::<i64>().unwrap() > audit_before
        })
        .await,
        "the audit goes on past the copied ids"
    );
    let (code, _) = daemon.stop().await;
    assert_eq!(code, Some(0));
}

/// What an operator sees of the agent's history through the API.
async fn snapshot(api: &kennel_tests::Api, agent: &str, session: &str) -> Vec<Value> {
    let messages = api.get(&format!("/api/sessions/{session}/messages?limit=1000")).await;
    let tasks = api.get("/api/tasks").await;
    let schedules = api.get("/api/schedules").await;
    let recalled = api.invoke(agent, "memory_recall", json!({"key": "launch"})).await;
    vec![messages.body, tasks.body, schedules.body, recalled.body["content"]["value"].clone()]
}
