//! Channels through the real daemon, each platform replaced by a local server speaking its
//! API (`kennel_tests::fake_telegram`, `fake_slack`, `fake_discord`, `fake_webhook`): inbound
//! messages start turns whose replies go back, rosters feed `channel_members`, `channel_dm`
//! reaches only roster members, the cross-conversation guard, deduplicated webhooks, schedule
//! delivery, deliver-only webhooks and platform 429s.

use std::time::Duration;

use kennel_tests::fake_discord::FakeDiscord;
use kennel_tests::fake_llm::{FakeLlm, Scripted};
use kennel_tests::fake_slack::{FakeSlack, message_event, signed_headers};
use kennel_tests::fake_telegram::FakeTelegram;
use kennel_tests::fake_webhook::{FakeWebhookReceiver, hmac_sha256, signed, signed_at, unix_now};
use kennel_tests::{Api, Daemon, Home, eventually};
use serde_json::{Value, json};

const TG_TOKEN: &str = "123456:test-token";
const SECRET: &str = "shared-secret";
const SLACK_TOKEN: &str = "xoxb-test";
const DISCORD_TOKEN: &str = "discord-token";

/// A daemon with the fake provider and `channels` (TOML), the secrets they name in its
/// environment.
async fn daemon_with_channels(channels: &str) -> (Home, Daemon, Api, FakeLlm) {
    let config = format!(
        "[channels]
allowed_hosts = [\"127.0.0.1:*\"]
{channels}"
    );
    let env = [
        ("KENNEL_TEST_BOT_TOKEN", TG_TOKEN),
        ("KENNEL_TEST_SECRET", SECRET),
        ("KENNEL_TEST_SLACK", SLACK_TOKEN),
        ("KENNEL_TEST_DISCORD", DISCORD_TOKEN),
    ];
    crate::daemon_with_llm_and_env("openai", &config, &env).await
}

/// The agent `helper` answering the channels, granted the channel family.
async fn helper(api: &Api) -> String {
    crate::agent_from(api, json!({"name": "helper", "model": "m", "tools": ["channel.*", "schedule.*"]})).await
}

/// The tool result the model was given for its `n`th request (0-based), as text.
fn tool_result(llm: &FakeLlm, n: usize) -> String {
    let request = &llm.requests()[n];
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    messages.iter().rev().find(|m| m["role"] == "tool").map(|m| m["content"].to_string()).unwrap_or_default()
}

async fn until(what: &str, check: impl Fn() -> bool) {
    assert!(eventually(Duration::from_secs(10), || async { check() }).await, "timed out waiting for {what}");
}

/// Waits for the channel's first inbound message to reach `state`: a reply is sent before its
/// message is marked, so a test that saw the reply may not see the mark yet. Returns the channel.
async fn first_inbound_becomes(api: &Api, channel: &str, state: &str) -> Value {
    let path = format!("/api/channels/{channel}");
    let reached =
        eventually(Duration::from_secs(10), || async { api.get(&path).await.body["inbound"][0]["state"] == state })
            .await;
    let now = api.get(&path).await;
    assert!(reached, "the first inbound message never became {state}: {}", now.text);
    now.body
}

fn telegram_channel(base_url: &str, extra: &str) -> String {
    format!(
        "[channels.tg]\nkind = \"telegram\"\nagent = \"helper\"\ntoken_env = \"KENNEL_TEST_BOT_TOKEN\"\nbase_url = \"{base_url}\"\n{extra}"
    )
}

#[tokio::test]
async fn a_group_message_builds_the_roster_and_channel_dm_reaches_only_members_who_can_be_reached() {
    let tg = FakeTelegram::start(TG_TOKEN).await;
    // Reach, not approval, is this test's subject: a first DM to a member would wait for a
    // person under the shipped rules (approvals.rs tests that).
    let config = format!("{}[approvals]\ndefaults = false\n", telegram_channel(&tg.base_url(), ""));
    let (_home, _daemon, api, llm) = daemon_with_channels(&config).await;
    helper(&api).await;

    // Ann speaks in the group; the turn lists the members and answers the group.
    llm.push_all([Scripted::call("channel_members", json!({})), Scripted::text("Hello, team.")]);
    tg.group_message(-1001, "Team", 42, "Ann", Some("ann"), "hi all");
    until("the reply in the group", || tg.calls_of("sendMessage").iter().any(|c| c["text"] == "Hello, team.")).await;
    let reply = &tg.calls_of("sendMessage")[0];
    assert_eq!(reply["chat_id"].to_string().trim_matches('"'), "-1001", "the reply goes back to the group");
    let members = tool_result(&llm, 1);
    assert!(members.contains("\\\"user_id\\\":\\\"42\\\"") && members.contains("ann"), "{members}");
    let first = llm.requests()[0].body["messages"].to_string();
    assert!(first.contains("from Ann (@ann, user_id 42)") && first.contains("hi all"), "who spoke and where: {first}");

    // In the next group turn: a DM to a stranger is refused, to Bob (on the roster, but never
    // wrote to the bot) fails without reaching the group, to Ann (who did) lands privately,
    // and channel_send elsewhere is refused.
    llm.push(Scripted::text("Hello, Ann."));
    tg.private_message(42, "Ann", "hello bot");
    until("the private reply", || tg.calls_of("sendMessage").iter().any(|c| c["text"] == "Hello, Ann.")).await;
    llm.push_all([
        Scripted::call("channel_dm", json!({"user_id": "999", "message": "psst"})),
        Scripted::call("channel_dm", json!({"user_id": "43", "message": "psst"})),
        Scripted::call("channel_dm", json!({"user_id": "42", "message": "your parcel is here"})),
        Scripted::call(
            "channel_send",
            json!({"channel": "tg", "target": "-2002", "content": {"type": "text", "text": "leak"}}),
        ),
        Scripted::call("channel_members", json!({"chat_id": "-2002"})),
        Scripted::text("Done."),
    ]);
    let sent_before = tg.calls_of("sendMessage").len();
    tg.group_message(-1001, "Team", 43, "Bob", None, "tell Ann privately her parcel is here");
    until("the second group reply", || tg.calls_of("sendMessage").iter().any(|c| c["text"] == "Done.")).await;
    let n = llm.requests().len();
    let results: Vec<String> = (n - 5..n).map(|i| tool_result(&llm, i)).collect();
    assert!(results[0].contains("not on the roster"), "a stranger: {}", results[0]);
    assert!(results[1].contains("can't initiate conversation"), "Bob never wrote to the bot: {}", results[1]);
    assert!(results[2].contains("\\\"sent\\\":true"), "Ann is reachable: {}", results[2]);
    assert!(results[3].contains("may only send there"), "cross-conversation send: {}", results[3]);
    assert!(results[4].contains("cannot list another"), "another group's roster: {}", results[4]);
    let sent: Vec<Value> = tg.calls_of("sendMessage")[sent_before..].to_vec();
    let to_group: Vec<&Value> = sent.iter().filter(|c| c["chat_id"].to_string().trim_matches('"') == "-1001").collect();
    assert_eq!(to_group.len(), 1, "only the reply reached the group, no fallback DM: {sent:?}");
    assert!(
        sent.iter().any(|c| c["chat_id"].to_string().trim_matches('"') == "42" && c["text"] == "your parcel is here")
    );
    // The fake records refused calls too: the platform was asked to DM Bob (and refused), never
    // the stranger, and the other group was never written to.
    let psst: Vec<String> = sent.iter().filter(|c| c["text"] == "psst").map(|c| c["chat_id"].to_string()).collect();
    assert_eq!(psst, ["43"], "{sent:?}");
    assert!(!sent.iter().any(|c| c["text"] == "leak"), "{sent:?}");

    // The roster, as operators see it.
    let channel = api.get("/api/channels/tg").await;
    assert_eq!(channel.status, 200, "{}", channel.text);
    let group =
        channel.body["conversations"].as_array().unwrap().iter().find(|c| c["chat_id"] == "-1001").unwrap().clone();
    let names: Vec<&str> =
        group["roster"].as_array().unwrap().iter().map(|m| m["display_name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Ann", "Bob"]);
    let private =
        channel.body["conversations"].as_array().unwrap().iter().find(|c| c["chat_id"] == "42").unwrap().clone();
    assert_eq!(private["roster"], json!([]), "a direct conversation has no roster");
}

#[tokio::test]
async fn a_redelivered_webhook_runs_one_turn_and_a_forged_one_none() {
    let receiver = FakeWebhookReceiver::start(SECRET).await;
    let channel = format!(
        "[channels.hook]\nkind = \"webhook\"\nagent = \"helper\"\nsigning_secret_env = \"KENNEL_TEST_SECRET\"\nbase_url = \"{}\"\n",
        receiver.url()
    );
    let (_home, daemon, api, llm) = daemon_with_channels(&channel).await;
    helper(&api).await;
    llm.set_fallback(Scripted::text("Got it."));
    let body =
        json!({"id": "evt-1", "chat_id": "room-7", "text": "deploy finished", "user": {"id": "u1", "name": "CI"}})
            .to_string();
    let anonymous = daemon.anonymous();
    let post = |headers: reqwest::header::HeaderMap| {
        let req = anonymous
            .request(reqwest::Method::POST, "/channels/hook/inbound")
            .header("content-type", "application/json")
            .headers(headers)
            .body(body.clone());
        Api::send(req)
    };
    let forged = post(signed("wrong-secret", body.as_bytes())).await;
    assert_eq!(forged.status, 403, "{}", forged.text);
    // A request signed without its timestamp (the body alone), or captured and replayed more
    // than five minutes later (or sent from a clock that far ahead), is refused.
    let mut unstamped = reqwest::header::HeaderMap::new();
    unstamped.insert("x-kennel-signature-256", hmac_sha256(SECRET, body.as_bytes()).parse().unwrap());
    let refused = post(unstamped).await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert!(refused.text.contains("X-Kennel-Timestamp"), "the refusal says how to sign: {}", refused.text);
    for skew in [-6 * 60, 6 * 60] {
        let replayed = post(signed_at(SECRET, unix_now() + skew, body.as_bytes())).await;
        assert_eq!(replayed.status, 403, "{}", replayed.text);
        assert!(replayed.text.contains("more than 5 minutes"), "{}", replayed.text);
    }
    let restamped = signed_at(SECRET, unix_now() - 10, body.as_bytes());
    let mut moved = restamped.clone();
    moved.insert("x-kennel-timestamp", (unix_now() - 5).into());
    assert_eq!(post(moved).await.status, 403, "the timestamp is signed with the body");
    for _ in 0..3 {
        assert_eq!(post(signed(SECRET, body.as_bytes())).await.status, 200, "a redelivery is acknowledged");
    }
    until("the reply posted back", || !receiver.posts().is_empty()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(llm.requests().len(), 1, "three deliveries of one message, one turn");
    let posts = receiver.posts();
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert_eq!((posts[0]["chat_id"].as_str(), posts[0]["content"]["text"].as_str()), (Some("room-7"), Some("Got it.")));
    let traffic = first_inbound_becomes(&api, "hook", "answered").await;
    assert_eq!(traffic["outbound"][0]["sent_by"], "reply");
}

#[tokio::test]
async fn a_scheduled_turn_delivers_its_reply_to_its_channel_and_has_no_channel_dm() {
    let receiver = FakeWebhookReceiver::start(SECRET).await;
    let channel = format!(
        "[channels.alerts]\nkind = \"webhook\"\nagent = \"helper\"\nsigning_secret_env = \"KENNEL_TEST_SECRET\"\nbase_url = \"{}\"\ndefault_target = \"ops\"\n",
        receiver.url()
    );
    let (_home, _daemon, api, llm) = daemon_with_channels(&channel).await;
    let agent = helper(&api).await;
    let unknown =
        api.invoke(&agent, "schedule_create", json!({"when": "+1s", "prompt": "x", "channel": "nowhere"})).await;
    assert_eq!(unknown.status, 422, "a channel is checked when the schedule is made: {}", unknown.text);
    assert!(unknown.text.contains("no channel `nowhere`"), "{}", unknown.text);

    llm.push_all([
        Scripted::call("channel_dm", json!({"user_id": "1", "message": "x"})),
        Scripted::text("Backups are green."),
    ]);
    let made = api
        .invoke(&agent, "schedule_create", json!({"when": "+1s", "prompt": "Check the backups.", "channel": "alerts"}))
        .await;
    assert_eq!(made.status, 200, "{}", made.text);
    until("the scheduled reply", || !receiver.posts().is_empty()).await;
    let post = &receiver.posts()[0];
    assert_eq!((post["chat_id"].as_str(), post["content"]["text"].as_str()), (Some("ops"), Some("Backups are green.")));
    let offered = llm.requests()[0].tool_names();
    assert!(
        offered.contains(&"channel_send".to_string()) && !offered.contains(&"channel_dm".to_string()),
        "{offered:?}"
    );
    assert!(tool_result(&llm, 1).contains("channel conversation"), "{}", tool_result(&llm, 1));
}

#[tokio::test]
async fn a_deliver_only_webhook_is_sent_on_without_a_turn_and_a_429_is_waited_out() {
    let tg = FakeTelegram::start(TG_TOKEN).await;
    let channels = format!(
        "{}[channels.ci]\nkind = \"webhook\"\nsigning_secret_env = \"KENNEL_TEST_SECRET\"\ndeliver_only = true\ndefault_target = \"tg:-1001\"\n",
        telegram_channel(&tg.base_url(), "")
    );
    let (_home, daemon, _api, llm) = daemon_with_channels(&channels).await;
    tg.throttle_next("sendMessage", 1);
    let body = json!({"id": "build-9", "chat_id": "ci", "text": "build 9 failed", "user": {"id": "ci", "name": "CI"}})
        .to_string();
    let req = daemon
        .anonymous()
        .request(reqwest::Method::POST, "/channels/ci/inbound")
        .headers(signed(SECRET, body.as_bytes()))
        .body(body.clone());
    let started = std::time::Instant::now();
    assert_eq!(Api::send(req).await.status, 200);
    // The fake records the refused call too: the alert is sent twice, the second time after
    // the wait.
    let sends = || tg.calls_of("sendMessage").iter().filter(|c| c["text"] == "build 9 failed").count();
    until("the alert sent again after the 429", || sends() == 2).await;
    assert!(started.elapsed() >= Duration::from_millis(900), "the 429's retry_after (1 s) was waited out");
    assert!(llm.requests().is_empty(), "no turn ran");
}

#[tokio::test]
async fn slack_events_are_verified_and_answered_in_their_channel() {
    let slack = FakeSlack::start(SLACK_TOKEN, SECRET).await;
    slack.add_user("U1", "ann", "Ann Example", "Ann");
    let channel = format!(
        "[channels.sl]\nkind = \"slack\"\nagent = \"helper\"\ntoken_env = \"KENNEL_TEST_SLACK\"\nsigning_secret_env = \"KENNEL_TEST_SECRET\"\nbase_url = \"{}\"\n",
        slack.base_url()
    );
    let (_home, daemon, api, llm) = daemon_with_channels(&channel).await;
    // "Test connection": Slack's `auth.test`, with the channel's token.
    let tested = api.post("/api/channels/sl/test", json!({})).await;
    assert_eq!((tested.status, tested.body["ok"].as_bool()), (200, Some(true)), "{}", tested.text);
    assert!(tested.body["answer"].as_str().unwrap().contains("kennelbot (U0BOT) in Kennel Test"), "{}", tested.text);
    helper(&api).await;
    llm.set_fallback(Scripted::text("Hi Ann."));
    let body = message_event("Ev1", "C1", "channel", "U1", "hello").to_string();
    let send = |headers: Vec<(String, String)>| {
        let mut req = daemon.anonymous().request(reqwest::Method::POST, "/channels/sl/inbound").body(body.clone());
        for (k, v) in headers {
            req = req.header(k, v);
        }
        Api::send(req)
    };
    assert_eq!(send(signed_headers("not-the-secret", &body)).await.status, 403, "a forged request is refused");
    assert!(llm.requests().is_empty());
    assert_eq!(send(signed_headers(SECRET, &body)).await.status, 200);
    until("the reply in C1", || {
        slack.calls_to("chat.postMessage").iter().any(|c| c["channel"] == "C1" && c["text"] == "Hi Ann.")
    })
    .await;
    let first = llm.requests()[0].body["messages"].to_string();
    assert!(first.contains("from Ann (@ann, user_id U1)"), "{first}");
}

#[tokio::test]
async fn discord_gateway_messages_are_answered_over_rest() {
    let discord = FakeDiscord::start(DISCORD_TOKEN).await;
    let channel = format!(
        "[channels.dc]\nkind = \"discord\"\nagent = \"helper\"\ntoken_env = \"KENNEL_TEST_DISCORD\"\nbase_url = \"{}\"\n",
        discord.base_url()
    );
    let (_home, _daemon, api, llm) = daemon_with_channels(&channel).await;
    // "Test connection": Discord's `GET /users/@me`, with the channel's token.
    let tested = api.post("/api/channels/dc/test", json!({})).await;
    assert_eq!(tested.body["ok"], true, "{}", tested.text);
    assert!(
        tested.body["answer"].as_str().unwrap().contains("kennel-test-bot (bot 900000000000000001)"),
        "{}",
        tested.text
    );
    helper(&api).await;
    assert!(discord.wait_connected(true, Duration::from_secs(10)).await, "the daemon identified on the gateway");
    let state = api.get("/api/channels").await;
    assert_eq!(state.body[0]["state"], "connected", "{}", state.text);
    llm.set_fallback(Scripted::text("Pong."));
    discord.dispatch_message("500", Some("900"), "77", "ann", "ping");
    until("the reply in channel 500", || {
        discord.calls().iter().any(|(route, body)| route == "POST /channels/500/messages" && body["content"] == "Pong.")
    })
    .await;
    let roster = api.get("/api/channels/dc").await;
    assert_eq!(roster.body["conversations"][0]["roster"][0]["user_id"], "77", "{}", roster.text);
}

#[tokio::test]
async fn a_message_stored_but_not_answered_when_the_daemon_dies_is_answered_after_the_restart() {
    let receiver = FakeWebhookReceiver::start(SECRET).await;
    let channel = format!(
        "[channels.hook]\nkind = \"webhook\"\nagent = \"helper\"\nsigning_secret_env = \"KENNEL_TEST_SECRET\"\nbase_url = \"{}\"\n",
        receiver.url()
    );
    let (home, daemon, api, llm) = daemon_with_channels(&channel).await;
    helper(&api).await;
    // The model is slow to answer the first time; the daemon is killed meanwhile.
    llm.push(Scripted::Delay { millis: 3_000 });
    llm.set_fallback(Scripted::text("Answered after the restart."));
    let body =
        json!({"id": "m-1", "chat_id": "room", "text": "still there?", "user": {"id": "u", "name": "U"}}).to_string();
    let req = daemon
        .anonymous()
        .request(reqwest::Method::POST, "/channels/hook/inbound")
        .headers(signed(SECRET, body.as_bytes()))
        .body(body);
    assert_eq!(Api::send(req).await.status, 200, "acknowledged once stored");
    until("the model asked", || llm.requests().len() == 1).await;
    daemon.kill().await;
    assert!(receiver.posts().is_empty());

    let token = home.token("again").await;
    let daemon = home.start_with_env(&[("KENNEL_TEST_SECRET", SECRET)]).await;
    until("the reply after the restart", || !receiver.posts().is_empty()).await;
    assert_eq!(receiver.posts()[0]["content"]["text"], "Answered after the restart.");
    let api = daemon.api(&token);
    first_inbound_becomes(&api, "hook", "answered").await;
    let sessions = api.get("/api/agents/helper/sessions").await;
    let session = sessions.body[0]["id"].as_str().unwrap().to_string();
    let messages = api.get(&format!("/api/sessions/{session}/messages")).await;
    let asked = messages.text.matches("still there?").count();
    assert_eq!(asked, 1, "the message is in the conversation once: {}", messages.text);
}

/// Issue 47: channels added, edited and removed while the daemon runs, from the API (the CLI's
/// token), the CLI and the dashboard, written to config.toml, and listening at once.
#[tokio::test]
async fn channels_are_added_edited_and_removed_while_the_daemon_runs() {
    let (first, second) = (FakeWebhookReceiver::start(SECRET).await, FakeWebhookReceiver::start(SECRET).await);
    let tg = FakeTelegram::start(TG_TOKEN).await;
    let (home, daemon, api, llm) = daemon_with_channels("").await;
    let id = helper(&api).await;
    llm.set_fallback(Scripted::text("Heard."));
    let standing = |tools: &Value| tools.as_array().unwrap().iter().find(|t| t["name"] == "channel_send").cloned();
    let before = api.get(&format!("/api/agents/{id}/tools?limit=1000")).await.body;
    assert_eq!(standing(&before).unwrap()["status"], "excluded", "no channel yet: {before}");

    // An API token may list channels, not change them; the CLI's token may.
    let hook = json!({"kind": "webhook", "agent": "helper", "signing_secret_env": "KENNEL_TEST_SECRET", "base_url": first.url()});
    assert_eq!(api.put("/api/channels/hook", hook.clone()).await.status, 403);
    let cli = daemon.api(std::fs::read_to_string(home.path().join("cli.token")).unwrap().trim());
    let added = cli.put("/api/channels/hook", hook).await;
    assert_eq!((added.status, added.body["state"].as_str()), (201, Some("idle")), "{}", added.text);
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(config.contains("[channels.hook]") && config.contains("KENNEL_TEST_SECRET"), "{config}");
    let after = api.get(&format!("/api/agents/{id}/tools?limit=1000")).await.body;
    assert_eq!(standing(&after).unwrap()["status"], "allowed", "the family is there at once: {after}");

    let anonymous = daemon.anonymous();
    let say = |id: &str, text: &str| {
        let body =
            json!({"id": id, "chat_id": "room-1", "text": text, "user": {"id": "u1", "name": "Ann"}}).to_string();
        let req = anonymous
            .request(reqwest::Method::POST, "/channels/hook/inbound")
            .header("content-type", "application/json")
            .headers(signed(SECRET, body.as_bytes()))
            .body(body);
        Api::send(req)
    };
    assert_eq!(say("m1", "first").await.status, 200, "it takes messages with no restart");
    until("the reply to the first address", || first.posts().len() == 1).await;

    // Edited: the replies go to the new address from the next message.
    let moved = json!({"kind": "webhook", "agent": "helper", "signing_secret_env": "KENNEL_TEST_SECRET", "base_url": second.url()});
    assert_eq!(cli.put("/api/channels/hook", moved).await.status, 200);
    assert_eq!(say("m2", "second").await.status, 200);
    until("the reply to the second address", || second.posts().len() == 1).await;
    assert_eq!(first.posts().len(), 1, "nothing more to the old address");

    // What would not load is refused whole, and nothing is written; a secret's variable set
    // from a front must name a secret.
    let before = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    let no_reply = cli
        .put(
            "/api/channels/quiet",
            json!({"kind": "webhook", "agent": "helper", "signing_secret_env": "KENNEL_TEST_SECRET"}),
        )
        .await;
    assert_eq!(no_reply.status, 422, "{}", no_reply.text);
    assert!(no_reply.text.contains("posts its agent's replies to base_url"), "{}", no_reply.text);
    let leak =
        json!({"kind": "telegram", "agent": "helper", "token_env": "KENNEL_DATABASE_URL", "base_url": tg.base_url()});
    let leaked = cli.put("/api/channels/tg", leak).await;
    assert_eq!(leaked.status, 422, "{}", leaked.text);
    assert!(leaked.text.contains("must end in _TOKEN, _SECRET or _KEY"), "{}", leaked.text);
    assert_eq!(std::fs::read_to_string(home.path().join("config.toml")).unwrap(), before);

    // A polling channel starts polling when added and stops when removed, from the CLI.
    home.cli_ok(&[
        "channel",
        "set",
        "tg",
        "--kind",
        "telegram",
        "--agent",
        "helper",
        "--token-env",
        "KENNEL_TEST_BOT_TOKEN",
        "--base-url",
        &tg.base_url(),
    ])
    .await;
    until("the new channel polls", || !tg.calls_of("getUpdates").is_empty()).await;
    // "Test connection": Telegram's `getMe` with the channel's token, from the CLI and for an
    // API token; a webhook channel has no account to ask; a wrong token is the platform's own
    // refusal, and the CLI exits 1.
    let tested = home.cli_ok(&["channel", "test", "tg"]).await;
    assert!(tested.contains("@kennel_test_bot (bot 123456)"), "{tested}");
    let hook_test = api.post("/api/channels/hook/test", json!({})).await;
    assert_eq!(hook_test.body["ok"], true, "{}", hook_test.text);
    assert!(hook_test.body["answer"].as_str().unwrap().contains("no account to ask"), "{}", hook_test.text);
    home.cli_ok(&[
        "channel",
        "set",
        "wrong",
        "--kind",
        "telegram",
        "--agent",
        "helper",
        "--token-env",
        "KENNEL_TEST_SECRET",
        "--base-url",
        &tg.base_url(),
        "--mode",
        "webhook",
        "--signing-secret-env",
        "KENNEL_TEST_SECRET",
    ])
    .await;
    let failed = home.cli(&["channel", "test", "wrong"]).await;
    assert_eq!(failed.status.code(), Some(1), "{failed:?}");
    assert!(String::from_utf8_lossy(&failed.stderr).contains("Unauthorized"), "{failed:?}");
    assert_eq!(api.post("/api/channels/nobody/test", json!({})).await.status, 404);
    home.cli_ok(&["channel", "remove", "wrong"]).await;
    let listed = home.cli_ok(&["channel", "list"]).await;
    assert!(listed.contains("tg") && listed.contains("telegram") && listed.contains("hook"), "{listed}");
    // Edited, the channel is read by one listener: the old one stopped. Each listener waiting
    // on getUpdates takes the pushed message and asks again, so the calls after it count them.
    home.cli_ok(&["channel", "set", "tg", "--default-target", "42"]).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    let polls = tg.calls_of("getUpdates").len();
    tg.private_message(42, "Ann", "hello after the edit");
    until("the message answered on the edited channel", || !tg.calls_of("sendMessage").is_empty()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(tg.calls_of("getUpdates").len() - polls, 1, "one listener after the edit, not two");
    home.cli_ok(&["channel", "remove", "tg"]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let polls = tg.calls_of("getUpdates").len();
    tg.private_message(42, "Ann", "anyone there?");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(tg.calls_of("getUpdates").len(), polls, "a removed channel takes no message");
    assert_eq!(tg.calls_of("sendMessage").len(), 1, "and answers none");

    // Removed: its address takes nothing; its conversation stays for a channel of its name.
    assert_eq!(cli.delete("/api/channels/hook").await.status, 204);
    assert_eq!(say("m3", "third").await.status, 404);
    assert_eq!(cli.delete("/api/channels/hook").await.status, 404);
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(!config.contains("[channels.hook]") && config.contains("allowed_hosts"), "{config}");
    let gone = api.get(&format!("/api/agents/{id}/tools?limit=1000")).await.body;
    assert_eq!(standing(&gone).unwrap()["status"], "excluded", "{gone}");
}
