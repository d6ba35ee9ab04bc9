//! The owner inbox through the daemon: `notify_owner` notes, never a chat message, read state
//! per reader, filters, the fan-out to a Telegram channel by urgency, and the dashboard's
//! Inbox page with its unread count.

use std::time::Duration;

use kennel_tests::eventually;
use kennel_tests::fake_smtp::FakeSmtp;
use kennel_tests::fake_telegram::FakeTelegram;
use serde_json::json;

use crate::dashboard::signed_in_with;

const TG_TOKEN: &str = "123456:test-token";

#[tokio::test]
async fn notes_are_stored_apart_from_chats_with_each_readers_own_read_marks() {
    let (home, daemon, api) = crate::daemon_with_config("").await;
    let watcher = crate::agent_with(&api, "watcher", &["notify_owner"]).await;
    let other = crate::agent_with(&api, "other", &["notify_owner"]).await;
    let noted = api
        .invoke(
            &watcher,
            "notify_owner",
            json!({"reason": "Disk almost full", "summary": "/var is at 97%.", "urgency": "high"}),
        )
        .await;
    assert_eq!(noted.status, 200, "{}", noted.text);
    api.invoke(&other, "notify_owner", json!({"reason": "Weekly digest", "summary": "All quiet."})).await;
    for bad in [json!({"reason": " ", "summary": "x"}), json!({"reason": "x", "summary": "y", "urgency": "panic"})] {
        let refused = api.invoke(&watcher, "notify_owner", bad).await;
        assert_eq!(refused.status, 422, "{}", refused.text);
    }

    let notes = api.get("/api/inbox").await;
    assert_eq!(notes.status, 200, "{}", notes.text);
    let reasons: Vec<&str> = notes.body.as_array().unwrap().iter().map(|n| n["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons, ["Weekly digest", "Disk almost full"], "newest first");
    assert_eq!(notes.body[1]["urgency"], "high");
    assert_eq!(notes.body[1]["agent_name"], "watcher");
    assert_eq!(api.get("/api/agents/watcher/sessions").await.body, json!([]), "no chat holds the note");
    let high = api.get("/api/inbox?urgency=high").await;
    assert_eq!(high.body.as_array().unwrap().len(), 1);
    let of_other = api.get("/api/inbox?agent=other").await;
    assert_eq!(of_other.body[0]["reason"], "Weekly digest");
    assert_eq!(api.get("/api/inbox?agent=nobody").await.status, 422);

    // Read marks are the reader's own.
    let id = notes.body[1]["id"].as_i64().unwrap();
    let marked = api.post("/api/inbox/read", json!({"ids": [id]})).await;
    assert_eq!(marked.body["marked"], 1, "{}", marked.text);
    assert_eq!(api.get("/api/inbox/unread").await.body["unread"], 1);
    let unread = api.get("/api/inbox?unread=true").await;
    assert_eq!(unread.body[0]["reason"], "Weekly digest");
    let second = daemon.api(&home.token("second").await);
    // A token made by the CLI reaches the running daemon within its change poll.
    assert!(eventually(Duration::from_secs(5), || async { second.get("/api/inbox/unread").await.status == 200 }).await);
    assert_eq!(second.get("/api/inbox/unread").await.body["unread"], 2, "another reader has read nothing");
    assert_eq!(second.post("/api/inbox/read", json!(null)).await.body["marked"], 2, "no body: every note");
    assert_eq!(second.get("/api/inbox/unread").await.body["unread"], 0);
    assert_eq!(api.get("/api/inbox/unread").await.body["unread"], 1, "the first reader's marks are unchanged");
}

#[tokio::test]
async fn urgent_notes_also_reach_the_configured_telegram_chat() {
    let tg = FakeTelegram::start(TG_TOKEN).await;
    let config = format!(
        "[channels]\nallowed_hosts = [\"127.0.0.1:*\"]\n[channels.tg]\nkind = \"telegram\"\nagent = \"watcher\"\ntoken_env = \"KENNEL_TEST_BOT_TOKEN\"\nbase_url = \"{}\"\nmode = \"webhook\"\nsigning_secret_env = \"KENNEL_TEST_BOT_TOKEN\"\n[notify]\ntelegram_channel = \"tg\"\ntelegram_chat = \"-1001\"\nmin_urgency_telegram = \"high\"\n",
        tg.base_url()
    );
    let (_home, _daemon, api, _llm) =
        crate::daemon_with_llm_and_env("openai", &config, &[("KENNEL_TEST_BOT_TOKEN", TG_TOKEN)]).await;
    let watcher = crate::agent_with(&api, "watcher", &["notify_owner"]).await;
    api.invoke(&watcher, "notify_owner", json!({"reason": "FYI", "summary": "Backups ran.", "urgency": "normal"}))
        .await;
    api.invoke(
        &watcher,
        "notify_owner",
        json!({"reason": "Backups failed", "summary": "Twice in a row.", "urgency": "critical"}),
    )
    .await;
    let sent =
        eventually(Duration::from_secs(10), || async { api.get("/api/inbox").await.body[0]["telegram"] == "ok" }).await;
    assert!(sent, "the critical note's fan-out is recorded: {}", api.get("/api/inbox").await.text);
    let messages = tg.calls_of("sendMessage");
    assert_eq!(messages.len(), 1, "only the note at or above high: {messages:?}");
    assert_eq!(messages[0]["chat_id"].to_string().trim_matches('"'), "-1001");
    let text = messages[0]["text"].as_str().unwrap();
    assert!(text.contains("CRITICAL") && text.contains("Backups failed") && text.contains("Twice in a row."), "{text}");
    assert!(api.get("/api/inbox").await.body[1]["telegram"].is_null(), "the normal note was not sent");
}

#[tokio::test]
async fn urgent_notes_are_emailed_through_the_smtp_server_signed_in_with_the_secret() {
    let smtp = FakeSmtp::start().await;
    let config = format!(
        "[notify]\nemail_to = [\"owner@example.com\", \"deputy@example.com\"]\nemail_from = \"Kennel <kennel@example.com>\"\nsmtp_url = \"smtp://kennel%40example.com@127.0.0.1:{}\"\nsmtp_password_env = \"KENNEL_TEST_SMTP_PASSWORD\"\nmin_urgency_email = \"high\"\n",
        smtp.port()
    );
    let (_home, _daemon, api, _llm) =
        crate::daemon_with_llm_and_env("openai", &config, &[("KENNEL_TEST_SMTP_PASSWORD", "s3cret pass")]).await;
    let watcher = crate::agent_with(&api, "watcher", &["notify_owner"]).await;
    for (reason, urgency) in [("Weekly digest", "normal"), ("Backups failed\nBcc: x@evil.example", "critical")] {
        let noted = api
            .invoke(
                &watcher,
                "notify_owner",
                json!({"reason": reason, "summary": "Twice in a row.", "urgency": urgency}),
            )
            .await;
        assert_eq!(noted.status, 200, "{}", noted.text);
    }
    let sent =
        eventually(Duration::from_secs(10), || async { api.get("/api/inbox").await.body[0]["email"] == "ok" }).await;
    let notes = api.get("/api/inbox").await.body;
    assert!(sent, "the critical note's email went out: {notes}");
    assert!(notes[1]["email"].is_null(), "the normal note was not emailed: {notes}");
    let mails = smtp.received();
    assert_eq!(mails.len(), 1, "{mails:?}");
    let mail = &mails[0];
    assert_eq!(mail.auth, Some(("kennel@example.com".to_string(), "s3cret pass".to_string())));
    assert_eq!(
        (mail.from.as_str(), mail.to.clone()),
        ("kennel@example.com", vec!["owner@example.com".to_string(), "deputy@example.com".to_string()])
    );
    assert!(mail.data.contains("Subject: [Kennel] CRITICAL: Backups failed Bcc: x@evil.example\r\n"), "{}", mail.data);
    assert!(!mail.data.contains("\r\nBcc:") && mail.data.contains("Twice in a row."), "{}", mail.data);
}

/// A mail server that says "later" (451) is tried again, backing off; one that refuses (550)
/// is not, and the note says why.
#[tokio::test]
async fn an_email_the_server_defers_is_sent_again_and_one_it_refuses_is_not() {
    let smtp = FakeSmtp::start().await;
    let config = format!(
        "[notify]\nemail_to = [\"owner@example.com\"]\nsmtp_url = \"smtp://127.0.0.1:{}\"\nmin_urgency_email = \"high\"\n",
        smtp.port()
    );
    let (_home, _daemon, api, _llm) = crate::daemon_with_llm_and_env("openai", &config, &[]).await;
    let watcher = crate::agent_with(&api, "watcher", &["notify_owner"]).await;
    let note = |reason: &'static str| {
        let (api, watcher) = (api.clone(), watcher.clone());
        async move {
            let args = json!({"reason": reason, "summary": "Twice in a row.", "urgency": "critical"});
            assert_eq!(api.invoke(&watcher, "notify_owner", args).await.status, 200);
        }
    };
    let emailed = || async { !api.get("/api/inbox").await.body[0]["email"].is_null() };

    smtp.defer_next();
    smtp.defer_next();
    note("Backups failed").await;
    assert!(eventually(Duration::from_secs(10), emailed).await, "the email's outcome is recorded");
    assert_eq!(api.get("/api/inbox").await.body[0]["email"], "ok");
    assert_eq!((smtp.mail_commands(), smtp.received().len()), (3, 1), "deferred twice, then sent once");

    smtp.reject_next();
    note("Disk full").await;
    assert!(eventually(Duration::from_secs(10), emailed).await, "the email's outcome is recorded");
    let outcome = api.get("/api/inbox").await.body[0]["email"].clone();
    assert!(outcome.as_str().is_some_and(|o| o.contains("sender refused")), "{outcome}");
    assert_eq!((smtp.mail_commands(), smtp.received().len()), (4, 1), "a refusal is not tried again");
}

#[tokio::test]
async fn the_inbox_page_shows_the_unread_count_and_marks_notes_read_for_its_operator() {
    let (_home, _d, api, b) = signed_in_with("").await;
    let watcher = crate::agent_with(&api, "watcher", &["notify_owner"]).await;
    for reason in ["First", "Second"] {
        api.invoke(&watcher, "notify_owner", json!({"reason": reason, "summary": "details"})).await;
    }
    let page = b.get("/inbox").await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.text.contains("id=\"unread-count\" aria-label=\"2 unread\""), "the badge in the navigation");
    assert!(b.get("/tasks").await.text.contains("aria-label=\"2 unread\""), "on every page");
    let id = api.get("/api/inbox").await.body[0]["id"].as_i64().unwrap().to_string();
    assert_eq!(b.submit("/inbox", "/inbox/read", &[("id", &id)]).await.status, 303);
    assert!(b.get("/inbox").await.text.contains("aria-label=\"1 unread\""));
    assert_eq!(api.get("/api/inbox/unread").await.body["unread"], 2, "the token's marks are its own");
    assert_eq!(b.submit("/inbox", "/inbox/read", &[]).await.status, 303);
    let after = b.get("/inbox").await;
    assert!(after.text.contains("id=\"unread-count\" aria-label=\"0 unread\" hidden"), "hidden once all are read");
    assert_eq!(b.get("/inbox/unread").await.body, json!({"unread": 0}));

    // Live: a new note is signalled on the inbox topic, and the count is read again.
    let mut changes = b.events("/live/changes?topics=inbox").await;
    api.invoke(&watcher, "notify_owner", json!({"reason": "Third", "summary": "details"})).await;
    let heard = tokio::time::timeout(Duration::from_secs(5), changes.next()).await.expect("a change event");
    assert_eq!(heard, Some(json!(["inbox"])));
    assert_eq!(b.get("/inbox/unread").await.body, json!({"unread": 1}));
    let actions = api.get("/api/audit/actions?action=inbox.read").await;
    assert_eq!(actions.body.as_array().map(Vec::len), Some(2), "{}", actions.text);
}
