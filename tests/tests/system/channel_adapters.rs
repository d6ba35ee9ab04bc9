//! The channel adapters, each against a fake of its platform speaking the real wire protocol.

/// Telegram's Bot API adapter and the generic webhook channel, against fakes that speak their
/// wire protocols.
mod telegram_and_webhook {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use kennel_kernel::ErrorKind;
    use kennel_kernel::channel::ChannelMode;
    use kennel_kernel::channel::platform::{
        Connection, Endpoint, FileSource, Inbound, Member, Outgoing, Platform, SendError, Sink, WebhookReply,
        WebhookRequest,
    };
    use kennel_kernel::channel::telegram::Telegram;
    use kennel_kernel::channel::webhook::Webhook;
    use kennel_kernel::net::guard::AllowedHosts;
    use kennel_tests::fake_telegram::FakeTelegram;
    use kennel_tests::fake_webhook::{FakeWebhookReceiver, hmac_sha256, signed, signed_at, unix_now};
    use reqwest::header::{HeaderMap, HeaderValue};
    use serde_json::{Value, json};
    use tokio::sync::mpsc;
    use tokio_util::sync::CancellationToken;

    const TOKEN: &str = "123456:test-token";

    fn endpoint(channel: &str, base_url: &str, token: Option<&str>, secret: Option<&str>) -> Endpoint {
        Endpoint::new(
            channel,
            base_url,
            token.map(str::to_string),
            secret.map(str::to_string),
            AllowedHosts::parse(&["127.0.0.1:*"]).expect("a host rule"),
        )
    }

    fn telegram(fake: &FakeTelegram) -> Telegram {
        Telegram::new(endpoint("tg", &fake.base_url(), Some(TOKEN), None), ChannelMode::Poll)
    }

    fn failed(result: Result<(), SendError>) -> kennel_kernel::Error {
        match result {
            Err(SendError::Failed(e)) => e,
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).expect("a header value"));
        }
        map
    }

    #[tokio::test]
    async fn telegram_sends_text_photos_documents_and_polls_as_the_bot_api_takes_them() {
        let fake = FakeTelegram::start(TOKEN).await;
        let tg = telegram(&fake);
        assert_eq!(tg.text_limit(), 4096);
        let group = "-1001234";

        tg.send(group, &Outgoing::Text("hello, group".into())).await.expect("text sent");
        let photo_url = Outgoing::Image {
            media: FileSource::Url("https://example.com/cat.png".into()),
            caption: Some("a cat".into()),
        };
        tg.send(group, &photo_url).await.expect("photo by URL sent");
        let photo_bytes = Outgoing::Image {
            media: FileSource::Bytes { file_name: "dog.png".into(), mime: "image/png".into(), bytes: vec![7; 300] },
            caption: None,
        };
        tg.send(group, &photo_bytes).await.expect("photo upload sent");
        let document = Outgoing::File {
            media: FileSource::Bytes {
                file_name: "report.pdf".into(),
                mime: "application/pdf".into(),
                bytes: vec![1; 1234],
            },
            caption: Some("the report".into()),
        };
        tg.send(group, &document).await.expect("document sent");
        let document_url = Outgoing::File { media: FileSource::Url("https://example.com/a.txt".into()), caption: None };
        tg.send(group, &document_url).await.expect("document by URL sent");
        let poll = Outgoing::Poll { question: "Lunch?".into(), options: vec!["pizza".into(), "soup".into()] };
        tg.send(group, &poll).await.expect("poll sent");

        assert_eq!(
            fake.calls(),
            vec![
                ("sendMessage".to_string(), json!({ "chat_id": -1001234, "text": "hello, group" })),
                (
                    "sendPhoto".to_string(),
                    json!({ "chat_id": -1001234, "photo": "https://example.com/cat.png", "caption": "a cat" })
                ),
                (
                    "sendPhoto".to_string(),
                    json!({
                        "chat_id": "-1001234",
                        "photo": { "file_name": "dog.png", "bytes_len": 300, "content_type": "image/png" },
                    })
                ),
                (
                    "sendDocument".to_string(),
                    json!({
                        "chat_id": "-1001234",
                        "caption": "the report",
                        "document": { "file_name": "report.pdf", "bytes_len": 1234, "content_type": "application/pdf" },
                    })
                ),
                ("sendDocument".to_string(), json!({ "chat_id": -1001234, "document": "https://example.com/a.txt" })),
                (
                    "sendPoll".to_string(),
                    json!({ "chat_id": -1001234, "question": "Lunch?", "options": [{ "text": "pizza" }, { "text": "soup" }] })
                ),
            ]
        );
    }

    #[tokio::test]
    async fn telegram_429_is_retry_after_its_retry_after() {
        let fake = FakeTelegram::start(TOKEN).await;
        let tg = telegram(&fake);
        fake.throttle_next("sendMessage", 7);
        match tg.send("-42", &Outgoing::Text("one".into())).await {
            Err(SendError::RetryAfter(after)) => assert_eq!(after, Duration::from_secs(7)),
            other => panic!("expected RetryAfter, got {other:?}"),
        }
        tg.send("-42", &Outgoing::Text("one".into())).await.expect("the retry goes through");
        assert_eq!(fake.calls_of("sendMessage").len(), 2);
    }

    #[tokio::test]
    async fn telegram_cannot_message_a_stranger_first_and_says_so() {
        let fake = FakeTelegram::start(TOKEN).await;
        let tg = telegram(&fake);
        let chat = tg.direct_chat("555").await.expect("a direct chat");
        assert_eq!(chat, "555");

        let e = failed(tg.send(&chat, &Outgoing::Text("hi".into())).await);
        assert_eq!(e.kind, ErrorKind::Failed);
        assert_eq!(
            e.message,
            "channel `tg`: Telegram refused sendMessage: Forbidden: bot can't initiate conversation with a user \
             (a bot can only message someone who has messaged it first)"
        );

        fake.private_message(555, "Ann", "hello bot");
        tg.send(&chat, &Outgoing::Text("hi".into())).await.expect("once they wrote, the bot may answer");
    }

    #[tokio::test]
    async fn telegram_with_a_wrong_token_says_which_channel_and_keeps_the_token_out() {
        let fake = FakeTelegram::start(TOKEN).await;
        let tg = Telegram::new(endpoint("tg", &fake.base_url(), Some("999:wrong"), None), ChannelMode::Poll);
        let e = failed(tg.send("-1", &Outgoing::Text("hi".into())).await);
        assert!(e.message.starts_with("channel `tg`: Telegram refused sendMessage: Unauthorized"), "{}", e.message);
        assert!(e.message.contains("token_env"), "{}", e.message);
        assert!(!e.message.contains("999:wrong"), "{}", e.message);
        assert!(fake.calls().is_empty(), "a call with a wrong token is not recorded");
    }

    #[tokio::test]
    async fn telegram_goes_only_where_allowed_hosts_lets_it() {
        let fake = FakeTelegram::start(TOKEN).await;
        let mut closed = endpoint("tg", &fake.base_url(), Some(TOKEN), None);
        closed.allowed_hosts = AllowedHosts::parse::<&str>(&[]).expect("an empty list");
        let e = failed(Telegram::new(closed, ChannelMode::Poll).send("-1", &Outgoing::Text("hi".into())).await);
        assert_eq!(e.kind, ErrorKind::Forbidden, "{}", e.message);
        assert!(e.message.contains("[channels] allowed_hosts"), "{}", e.message);
        assert!(!e.message.contains(TOKEN), "{}", e.message);
        assert!(fake.calls().is_empty());
    }

    /// A sink that forwards to a channel, and a state recorder.
    fn sink_and_state() -> (Sink, mpsc::UnboundedReceiver<Inbound>, Arc<Mutex<Vec<Connection>>>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let sink: Sink = Arc::new(move |inbound| {
            let tx = tx.clone();
            Box::pin(async move {
                let _ = tx.send(inbound);
            })
        });
        (sink, rx, Arc::new(Mutex::new(Vec::new())))
    }

    async fn next(rx: &mut mpsc::UnboundedReceiver<Inbound>) -> Inbound {
        tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.expect("a message in time").expect("a message")
    }

    #[tokio::test]
    async fn telegram_polling_hands_people_s_messages_to_the_sink_and_stops_on_cancel() {
        let fake = FakeTelegram::start(TOKEN).await;
        let tg = Arc::new(telegram(&fake));
        let (sink, mut rx, states) = sink_and_state();
        let recorded = states.clone();
        let state = Arc::new(move |c: Connection| recorded.lock().unwrap().push(c));
        let cancel = CancellationToken::new();
        let listening = tokio::spawn(tg.listen(sink, state, cancel.clone()).expect("poll mode listens"));

        let group_message = fake.group_message(-100777, "Team", 42, "Bob", Some("bob"), "hello all");
        assert_eq!(
            next(&mut rx).await,
            Inbound {
                message_id: format!("-100777:{group_message}"),
                chat_id: "-100777".into(),
                chat_title: Some("Team".into()),
                is_group: true,
                from: Member { user_id: "42".into(), display_name: "Bob".into(), username: Some("bob".into()) },
                text: "hello all".into(),
            }
        );

        // A bot's message, a channel post and a photo without caption are not heard; the
        // private message after them is.
        fake.push_update(json!({ "message": {
            "message_id": 900, "date": 1, "chat": { "id": -100777, "type": "supergroup", "title": "Team" },
            "from": { "id": 7, "is_bot": true, "first_name": "OtherBot" }, "text": "beep" } }));
        fake.push_update(json!({ "message": {
            "message_id": 901, "date": 1, "chat": { "id": -100888, "type": "channel", "title": "News" },
            "from": { "id": 43, "is_bot": false, "first_name": "Cat" }, "text": "news" } }));
        fake.push_update(json!({ "message": {
            "message_id": 902, "date": 1, "chat": { "id": -100777, "type": "supergroup", "title": "Team" },
            "from": { "id": 42, "is_bot": false, "first_name": "Bob" }, "photo": [] } }));
        fake.push_update(json!({ "message": {
            "message_id": 903, "date": 1, "chat": { "id": 44, "type": "private", "first_name": "Dee" },
            "from": { "id": 44, "is_bot": false, "first_name": "Dee", "last_name": "Lee" }, "text": "psst" } }));
        let last = fake.push_update(json!({ "message": {
            "message_id": 904, "date": 1, "chat": { "id": -100777, "type": "group", "title": "Team" },
            "from": { "id": 42, "is_bot": false, "first_name": "Bob" }, "photo": [], "caption": "look" } }));
        assert_eq!(
            next(&mut rx).await,
            Inbound {
                message_id: "44:903".into(),
                chat_id: "44".into(),
                chat_title: None,
                is_group: false,
                from: Member { user_id: "44".into(), display_name: "Dee Lee".into(), username: None },
                text: "psst".into(),
            }
        );
        let captioned = next(&mut rx).await;
        assert_eq!(
            (captioned.message_id.as_str(), captioned.text.as_str(), captioned.is_group),
            ("-100777:904", "look", true)
        );

        // Each delivered update is confirmed: the next poll asks from after it, long polling.
        let confirmed = kennel_tests::eventually(Duration::from_secs(5), || async {
            fake.calls_of("getUpdates").iter().any(|p| p["offset"] == json!(last + 1) && p["timeout"] == json!(25))
        })
        .await;
        assert!(confirmed, "getUpdates calls: {:?}", fake.calls_of("getUpdates"));
        assert_eq!(fake.calls_of("getUpdates")[0]["allowed_updates"], json!(["message"]));
        assert_eq!(states.lock().unwrap().clone(), vec![Connection::Connected]);

        // Mid long poll, cancelling ends the listener at once.
        cancel.cancel();
        tokio::time::timeout(Duration::from_secs(2), listening).await.expect("stops promptly").expect("no panic");
        assert!(rx.try_recv().is_err(), "nothing else was delivered: {:?}", rx.try_recv());
    }

    #[tokio::test]
    async fn telegram_polling_reports_failure_and_stops_on_cancel_while_backing_off() {
        let fake = FakeTelegram::start(TOKEN).await;
        let tg = Arc::new(Telegram::new(endpoint("tg", &fake.base_url(), Some("1:revoked"), None), ChannelMode::Poll));
        let (sink, _rx, states) = sink_and_state();
        let recorded = states.clone();
        let state = Arc::new(move |c: Connection| recorded.lock().unwrap().push(c));
        let cancel = CancellationToken::new();
        let listening = tokio::spawn(tg.listen(sink, state, cancel.clone()).expect("poll mode listens"));

        let failing = kennel_tests::eventually(Duration::from_secs(5), || async {
            states.lock().unwrap().iter().any(|c| matches!(c, Connection::Failing(m) if m.contains("Unauthorized")))
        })
        .await;
        assert!(failing, "states: {:?}", states.lock().unwrap());
        cancel.cancel();
        tokio::time::timeout(Duration::from_secs(2), listening).await.expect("stops promptly").expect("no panic");
    }

    #[tokio::test]
    async fn telegram_in_webhook_mode_does_not_poll() {
        let fake = FakeTelegram::start(TOKEN).await;
        let tg = Arc::new(Telegram::new(endpoint("tg", &fake.base_url(), Some(TOKEN), None), ChannelMode::Webhook));
        let (sink, _rx, _states) = sink_and_state();
        assert!(tg.listen(sink, Arc::new(|_| {}), CancellationToken::new()).is_none());
    }

    #[tokio::test]
    async fn telegram_webhook_takes_only_requests_with_the_secret_token() {
        let update = json!({ "update_id": 5, "message": {
            "message_id": 9, "date": 1, "chat": { "id": -1005, "type": "supergroup", "title": "Ops" },
            "from": { "id": 42, "is_bot": false, "first_name": "Bob", "username": "bob" }, "text": "deploy?" } });
        let body = serde_json::to_vec(&update).unwrap();

        let unset = Telegram::new(endpoint("tg", "http://127.0.0.1:1", Some(TOKEN), None), ChannelMode::Webhook);
        let right = headers(&[("x-telegram-bot-api-secret-token", "s3cret")]);
        let e = unset.webhook(WebhookRequest { headers: &right, body: &body }).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Forbidden);
        assert!(e.message.contains("signing_secret_env"), "{}", e.message);

        let tg = Telegram::new(endpoint("tg", "http://127.0.0.1:1", Some(TOKEN), Some("s3cret")), ChannelMode::Webhook);
        for wrong in [headers(&[]), headers(&[("x-telegram-bot-api-secret-token", "s3cre")])] {
            let e = tg.webhook(WebhookRequest { headers: &wrong, body: &body }).await.unwrap_err();
            assert_eq!(e.kind, ErrorKind::Forbidden);
            assert!(e.message.contains("X-Telegram-Bot-Api-Secret-Token"), "{}", e.message);
        }

        let reply = tg.webhook(WebhookRequest { headers: &right, body: &body }).await.expect("verified");
        assert_eq!(
            reply,
            WebhookReply::Messages(vec![Inbound {
                message_id: "-1005:9".into(),
                chat_id: "-1005".into(),
                chat_title: Some("Ops".into()),
                is_group: true,
                from: Member { user_id: "42".into(), display_name: "Bob".into(), username: Some("bob".into()) },
                text: "deploy?".into(),
            }])
        );

        let edited = serde_json::to_vec(&json!({ "update_id": 6, "edited_message": update["message"] })).unwrap();
        let reply = tg.webhook(WebhookRequest { headers: &right, body: &edited }).await.expect("verified");
        assert_eq!(reply, WebhookReply::Messages(vec![]));

        let e = tg.webhook(WebhookRequest { headers: &right, body: b"{not json" }).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArguments, "{}", e.message);
    }

    #[tokio::test]
    async fn the_fake_webhook_signature_is_rfc_4231_hmac_sha256() {
        // RFC 4231, test case 2.
        assert_eq!(
            hmac_sha256("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[tokio::test]
    async fn a_webhook_channel_takes_only_signed_posts() {
        let hook = Webhook::new(endpoint("hooks", "", None, Some("k3y")));
        let body = serde_json::to_vec(&json!({
            "id": "evt-1", "chat_id": "room-9", "text": "ping",
            "user": { "id": "u-1", "name": "Ann Smith", "username": "ann" }, "group": true, "title": "Room 9",
        }))
        .unwrap();

        let missing = hook.webhook(WebhookRequest { headers: &headers(&[]), body: &body }).await.unwrap_err();
        assert_eq!(missing.kind, ErrorKind::Forbidden);
        assert!(missing.message.contains("X-Kennel-Signature-256"), "{}", missing.message);
        let forged = signed("not-the-key", &body);
        let e = hook.webhook(WebhookRequest { headers: &forged, body: &body }).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Forbidden);
        assert!(e.message.contains("X-Kennel-Signature-256"), "{}", e.message);
        let signed_other_body = signed("k3y", b"{}");
        let e = hook.webhook(WebhookRequest { headers: &signed_other_body, body: &body }).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Forbidden);
        let stale = signed_at("k3y", unix_now() - 301, &body);
        let e = hook.webhook(WebhookRequest { headers: &stale, body: &body }).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Forbidden, "{}", e.message);

        let signed_now = signed("k3y", &body);
        let reply = hook.webhook(WebhookRequest { headers: &signed_now, body: &body }).await.expect("verified");
        assert_eq!(
            reply,
            WebhookReply::Messages(vec![Inbound {
                message_id: "evt-1".into(),
                chat_id: "room-9".into(),
                chat_title: Some("Room 9".into()),
                is_group: true,
                from: Member { user_id: "u-1".into(), display_name: "Ann Smith".into(), username: Some("ann".into()) },
                text: "ping".into(),
            }])
        );

        let minimal = br#"{"id":"2","chat_id":"c","text":"t","user":{"id":"u","name":"U"}}"#;
        let WebhookReply::Messages(messages) =
            hook.webhook(WebhookRequest { headers: &signed("k3y", minimal), body: minimal }).await.expect("verified")
        else {
            panic!("messages expected")
        };
        assert_eq!((messages[0].is_group, messages[0].chat_title.clone()), (false, None));

        let no_text = br#"{"id":"3","chat_id":"c","user":{"id":"u","name":"U"}}"#;
        let e = hook.webhook(WebhookRequest { headers: &signed("k3y", no_text), body: no_text }).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArguments);
        assert!(e.message.contains("missing field `text`"), "{}", e.message);
    }

    #[tokio::test]
    async fn a_webhook_channel_posts_signed_json_to_its_base_url() {
        let receiver = FakeWebhookReceiver::start("k3y").await;
        let hook = Webhook::new(endpoint("hooks", &receiver.url(), None, Some("k3y")));
        assert_eq!(hook.text_limit(), 65536);
        assert_eq!(hook.direct_chat("u-1").await.expect("a direct chat"), "u-1");

        hook.send("room-9", &Outgoing::Text("hello".into())).await.expect("text posted");
        let image = Outgoing::Image {
            media: FileSource::Bytes { file_name: "a.png".into(), mime: "image/png".into(), bytes: b"PNG!".to_vec() },
            caption: Some("look".into()),
        };
        hook.send("room-9", &image).await.expect("image posted");
        let file = Outgoing::File { media: FileSource::Url("https://example.com/r.pdf".into()), caption: None };
        hook.send("room-9", &file).await.expect("file posted");
        let poll = Outgoing::Poll { question: "Ship?".into(), options: vec!["yes".into(), "no".into()] };
        hook.send("room-9", &poll).await.expect("poll posted");

        let content = |c: Value| json!({ "channel": "hooks", "chat_id": "room-9", "content": c });
        assert_eq!(
            receiver.posts(),
            vec![
                content(json!({ "type": "text", "text": "hello" })),
                content(json!({
                    "type": "image", "file_name": "a.png", "mime": "image/png", "data_base64": "UE5HIQ==", "caption": "look",
                })),
                content(json!({ "type": "file", "url": "https://example.com/r.pdf" })),
                content(json!({ "type": "poll", "question": "Ship?", "options": ["yes", "no"] })),
            ]
        );
        assert_eq!(receiver.refused(), 0);

        receiver.throttle_next(9);
        match hook.send("room-9", &Outgoing::Text("again".into())).await {
            Err(SendError::RetryAfter(after)) => assert_eq!(after, Duration::from_secs(9)),
            other => panic!("expected RetryAfter, got {other:?}"),
        }

        let wrong_key = Webhook::new(endpoint("hooks", &receiver.url(), None, Some("other")));
        let e = failed(wrong_key.send("room-9", &Outgoing::Text("hi".into())).await);
        assert_eq!(e.kind, ErrorKind::Failed);
        assert!(e.message.starts_with("channel `hooks`: base_url answered 401"), "{}", e.message);
        assert!(e.message.contains("bad signature"), "{}", e.message);
        assert_eq!(receiver.refused(), 1);
        assert_eq!(receiver.posts().len(), 4);

        let nowhere = Webhook::new(endpoint("hooks", "", None, Some("k3y")));
        let e = failed(nowhere.send("room-9", &Outgoing::Text("hi".into())).await);
        assert_eq!(e.kind, ErrorKind::Unavailable);
        assert_eq!(e.message, "channel `hooks` has no base_url to post to");
    }
}

/// Slack's Web and Events APIs and Discord's REST API and gateway, against fakes that speak
/// their wire protocols.
mod slack_and_discord {
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use kennel_kernel::ErrorKind;
    use kennel_kernel::channel::discord::Discord;
    use kennel_kernel::channel::platform::{
        Connection, Endpoint, FileSource, Inbound, Member, Outgoing, Platform, SendError, Sink, WebhookReply,
        WebhookRequest,
    };
    use kennel_kernel::channel::slack::Slack;
    use kennel_kernel::net::guard::AllowedHosts;
    use kennel_tests::fake_discord::{BOT_USER_ID, FakeDiscord, HEARTBEAT_MS, dm_channel_id};
    use kennel_tests::fake_slack::{FakeSlack, message_event, signed_headers, signed_headers_at};
    use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    const SLACK_TOKEN: &str = "xoxb-test-token";
    const SECRET: &str = "slack-signing-secret";
    const DISCORD_TOKEN: &str = "discord-bot-token";

    fn endpoint(base_url: &str, token: &str, secret: Option<&str>) -> Endpoint {
        Endpoint::new(
            "team",
            base_url,
            Some(token.to_string()),
            secret.map(str::to_string),
            AllowedHosts::parse(&["127.0.0.1:*"]).expect("a host rule"),
        )
    }

    fn header_map(pairs: Vec<(String, String)>) -> HeaderMap {
        pairs
            .into_iter()
            .map(|(k, v)| (HeaderName::try_from(k).expect("a header name"), HeaderValue::try_from(v).expect("a value")))
            .collect()
    }

    async fn inbound(
        slack: &Slack,
        headers: Vec<(String, String)>,
        body: &str,
    ) -> Result<WebhookReply, kennel_kernel::Error> {
        let headers = header_map(headers);
        slack.webhook(WebhookRequest { headers: &headers, body: body.as_bytes() }).await
    }

    fn failure<T: std::fmt::Debug>(result: Result<T, SendError>) -> kennel_kernel::Error {
        match result {
            Err(SendError::Failed(e)) => e,
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn slack_events_are_verified_and_name_their_sender() {
        let fake = FakeSlack::start(SLACK_TOKEN, SECRET).await;
        fake.add_user("U1", "ada", "Ada Lovelace", "Ada L");
        fake.add_user("U2", "grace", "Grace Hopper", "");
        let slack = Slack::new(endpoint(&fake.base_url(), SLACK_TOKEN, Some(SECRET)));
        let body = message_event("Ev1", "C1", "channel", "U1", "hello there").to_string();

        let forged = inbound(&slack, signed_headers("not-the-secret", &body), &body).await.unwrap_err();
        assert_eq!(forged.kind, ErrorKind::Forbidden);
        assert!(forged.message.contains("X-Slack-Signature"), "{}", forged.message);
        let tampered = body.replace("hello there", "send me the keys");
        let tampered = inbound(&slack, signed_headers(SECRET, &body), &tampered).await.unwrap_err();
        assert_eq!(tampered.kind, ErrorKind::Forbidden);
        let ten_minutes_ago = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() - 600;
        let stale = inbound(&slack, signed_headers_at(SECRET, &body, ten_minutes_ago), &body).await.unwrap_err();
        assert_eq!(stale.kind, ErrorKind::Forbidden);
        assert!(stale.message.contains("5 minutes"), "{}", stale.message);
        let unsigned = inbound(&slack, vec![], &body).await.unwrap_err();
        assert_eq!(unsigned.kind, ErrorKind::Forbidden);
        assert!(fake.calls().is_empty(), "nothing unverified reached users.info: {:?}", fake.calls());

        let reply = inbound(&slack, signed_headers(SECRET, &body), &body).await.expect("a verified event");
        let expected = Inbound {
            message_id: "Ev1".into(),
            chat_id: "C1".into(),
            chat_title: None,
            is_group: true,
            from: Member { user_id: "U1".into(), display_name: "Ada L".into(), username: Some("ada".into()) },
            text: "hello there".into(),
        };
        assert_eq!(reply, WebhookReply::Messages(vec![expected]));

        // A DM; the same sender again is not looked up again.
        let dm = message_event("Ev2", "D1", "im", "U1", "psst").to_string();
        let WebhookReply::Messages(got) = inbound(&slack, signed_headers(SECRET, &dm), &dm).await.unwrap() else {
            panic!("a message")
        };
        assert!(!got[0].is_group);
        assert_eq!(got[0].from.display_name, "Ada L");
        assert_eq!(fake.calls_to("users.info"), vec![json!({ "user": "U1" })]);

        // No display name: the real name; unknown to users.info: the id.
        let grace = message_event("Ev3", "C1", "channel", "U2", "hi").to_string();
        let WebhookReply::Messages(got) = inbound(&slack, signed_headers(SECRET, &grace), &grace).await.unwrap() else {
            panic!("a message")
        };
        assert_eq!(
            got[0].from,
            Member { user_id: "U2".into(), display_name: "Grace Hopper".into(), username: Some("grace".into()) }
        );
        let stranger = message_event("Ev4", "C1", "channel", "U9", "hi").to_string();
        let WebhookReply::Messages(got) = inbound(&slack, signed_headers(SECRET, &stranger), &stranger).await.unwrap()
        else {
            panic!("a message")
        };
        assert_eq!(got[0].from, Member { user_id: "U9".into(), display_name: "U9".into(), username: None });

        // An edit (a subtype) and a bot's post are not messages to answer.
        let mut edit = message_event("Ev5", "C1", "channel", "U1", "edited");
        edit["event"]["subtype"] = json!("message_changed");
        let mut bot = message_event("Ev6", "C1", "channel", "U1", "from a bot");
        bot["event"]["bot_id"] = json!("B1");
        for event in [edit, bot] {
            let body = event.to_string();
            assert_eq!(
                inbound(&slack, signed_headers(SECRET, &body), &body).await.unwrap(),
                WebhookReply::Messages(vec![])
            );
        }

        let challenge = json!({ "token": "t", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification" }).to_string();
        assert_eq!(
            inbound(&slack, signed_headers(SECRET, &challenge), &challenge).await.unwrap(),
            WebhookReply::Challenge("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P".into())
        );
        let junk = "not json";
        assert_eq!(
            inbound(&slack, signed_headers(SECRET, junk), junk).await.unwrap_err().kind,
            ErrorKind::InvalidArguments
        );
    }

    #[tokio::test]
    async fn slack_sends_text_images_uploads_and_polls() {
        let fake = FakeSlack::start(SLACK_TOKEN, SECRET).await;
        let slack = Slack::new(endpoint(&fake.base_url(), SLACK_TOKEN, Some(SECRET)));
        assert_eq!(slack.text_limit(), 4000);
        assert!(
            Arc::new(Slack::new(endpoint(&fake.base_url(), SLACK_TOKEN, Some(SECRET))))
                .listen(Arc::new(|_| Box::pin(async {})), Arc::new(|_| {}), CancellationToken::new())
                .is_none()
        );

        slack.send("C1", &Outgoing::Text("hello".into())).await.expect("text sent");
        let image_url = "https://example.com/cat.png";
        let image = Outgoing::Image { media: FileSource::Url(image_url.into()), caption: Some("a cat".into()) };
        slack.send("C1", &image).await.expect("image sent");
        let poll = Outgoing::Poll { question: "Lunch?".into(), options: vec!["pizza".into(), "soup".into()] };
        slack.send("C1", &poll).await.expect("poll sent");
        assert_eq!(
            fake.calls_to("chat.postMessage"),
            vec![
                json!({ "channel": "C1", "text": "hello" }),
                json!({ "channel": "C1", "text": "a cat", "blocks": [{ "type": "image", "image_url": image_url, "alt_text": "a cat" }] }),
                json!({ "channel": "C1", "text": "📊 Lunch?\n1. pizza\n2. soup" }),
            ]
        );

        let bytes = b"\x89PNG not really".to_vec();
        let png = FileSource::Bytes { file_name: "chart.png".into(), mime: "image/png".into(), bytes: bytes.clone() };
        slack.send("C2", &Outgoing::Image { media: png, caption: Some("this week".into()) }).await.expect("upload");
        let uploads = fake.uploads();
        assert_eq!(uploads.len(), 1);
        assert_eq!((uploads[0].file_name.as_str(), &uploads[0].bytes), ("chart.png", &bytes));
        assert_eq!(
            fake.calls_to("files.getUploadURLExternal"),
            vec![json!({ "filename": "chart.png", "length": bytes.len().to_string() })]
        );
        assert_eq!(
            fake.calls_to("files.completeUploadExternal"),
            vec![
                json!({ "files": [{ "id": uploads[0].file_id, "title": "chart.png" }], "channel_id": "C2", "initial_comment": "this week" })
            ]
        );
    }

    #[tokio::test]
    async fn slack_throttling_and_refusals_come_back_as_slack_gave_them() {
        let fake = FakeSlack::start(SLACK_TOKEN, SECRET).await;
        let slack = Slack::new(endpoint(&fake.base_url(), SLACK_TOKEN, Some(SECRET)));
        fake.throttle_next("chat.postMessage", 7);
        match slack.send("C1", &Outgoing::Text("hi".into())).await {
            Err(SendError::RetryAfter(wait)) => assert_eq!(wait, Duration::from_secs(7)),
            other => panic!("expected RetryAfter, got {other:?}"),
        }
        slack.send("C1", &Outgoing::Text("hi".into())).await.expect("the next try goes through");

        fake.forget_channel("C404");
        let missing = failure(slack.send("C404", &Outgoing::Text("hi".into())).await);
        assert_eq!(missing.kind, ErrorKind::Failed);
        assert_eq!(missing.message, "channel `team`: Slack refused chat.postMessage: channel_not_found");

        let impostor = Slack::new(endpoint(&fake.base_url(), "xoxb-wrong", Some(SECRET)));
        let refused = failure(impostor.send("C1", &Outgoing::Text("hi".into())).await);
        assert!(refused.message.ends_with("invalid_auth"), "{}", refused.message);
    }

    #[tokio::test]
    async fn slack_opens_a_direct_conversation_with_any_member() {
        let fake = FakeSlack::start(SLACK_TOKEN, SECRET).await;
        fake.add_user("U1", "ada", "Ada Lovelace", "Ada L");
        let slack = Slack::new(endpoint(&fake.base_url(), SLACK_TOKEN, Some(SECRET)));
        assert_eq!(slack.direct_chat("U1").await.expect("a DM"), "DU1");
        assert_eq!(fake.calls_to("conversations.open"), vec![json!({ "users": "U1" })]);
        let nobody = failure(slack.direct_chat("U404").await);
        assert!(nobody.message.contains("conversations.open: user_not_found"), "{}", nobody.message);
    }

    type Heard = Arc<Mutex<Vec<Inbound>>>;
    type States = Arc<Mutex<Vec<Connection>>>;

    /// Starts `discord` listening; returns what it hears, its states, its cancel and its task.
    fn listen(discord: Discord) -> (Heard, States, CancellationToken, tokio::task::JoinHandle<()>) {
        let heard: Heard = Default::default();
        let states: States = Default::default();
        let cancel = CancellationToken::new();
        let into = heard.clone();
        let sink: Sink = Arc::new(move |m| {
            into.lock().unwrap().push(m);
            Box::pin(async {})
        });
        let reported = states.clone();
        let task = Arc::new(discord)
            .listen(sink, Arc::new(move |s| reported.lock().unwrap().push(s)), cancel.clone())
            .expect("Discord listens to its gateway");
        (heard, states, cancel, tokio::spawn(task))
    }

    async fn heard_count(heard: &Heard, n: usize) -> bool {
        kennel_tests::eventually(Duration::from_secs(5), || async { heard.lock().unwrap().len() >= n }).await
    }

    #[tokio::test]
    async fn discord_gateway_delivers_guild_and_direct_messages_until_cancelled() {
        let fake = FakeDiscord::start(DISCORD_TOKEN).await;
        let (heard, states, cancel, task) = listen(Discord::new(endpoint(&fake.base_url(), DISCORD_TOKEN, None)));
        assert!(fake.wait_connected(true, Duration::from_secs(5)).await, "the adapter identified");
        let identify = &fake.identifies()[0];
        assert_eq!(identify["token"], DISCORD_TOKEN);
        assert_eq!(identify["intents"], (1 << 9) | (1 << 12) | (1 << 15));
        assert_eq!(identify["properties"]["browser"], "kennel");
        assert!(
            kennel_tests::eventually(Duration::from_secs(5), || async {
                states.lock().unwrap().contains(&Connection::Connected)
            })
            .await
        );

        // A bot's message and the adapter's own are not heard.
        fake.dispatch(
            "MESSAGE_CREATE",
            json!({ "id": "1", "channel_id": "500", "guild_id": "400", "content": "beep", "author": { "id": "77", "username": "otherbot", "bot": true } }),
        );
        fake.dispatch_message("500", Some("400"), BOT_USER_ID, "kennel-bot", "my own echo");
        let in_guild = fake.dispatch_message("500", Some("400"), "42", "ada", "hello guild");
        let in_dm = fake.dispatch_message("600", None, "43", "grace", "hello bot");
        assert!(heard_count(&heard, 2).await, "two messages heard: {:?}", heard.lock().unwrap());
        assert_eq!(
            *heard.lock().unwrap(),
            vec![
                Inbound {
                    message_id: in_guild,
                    chat_id: "500".into(),
                    chat_title: None,
                    is_group: true,
                    from: Member { user_id: "42".into(), display_name: "ada".into(), username: Some("ada".into()) },
                    text: "hello guild".into(),
                },
                Inbound {
                    message_id: in_dm,
                    chat_id: "600".into(),
                    chat_title: None,
                    is_group: false,
                    from: Member { user_id: "43".into(), display_name: "grace".into(), username: Some("grace".into()) },
                    text: "hello bot".into(),
                },
            ]
        );
        assert!(
            kennel_tests::eventually(Duration::from_millis(HEARTBEAT_MS * 5), || async { fake.heartbeats() >= 2 })
                .await,
            "heartbeats every heartbeat_interval"
        );
        assert!(fake.connected(), "acknowledged heartbeats keep the session");

        cancel.cancel();
        tokio::time::timeout(Duration::from_secs(2), task).await.expect("listen stops promptly").expect("no panic");
        assert!(fake.wait_connected(false, Duration::from_secs(2)).await, "the socket is closed");
    }

    /// Waits until `heard` holds exactly `ids`, in order.
    async fn heard_exactly(heard: &Heard, ids: &[String]) -> bool {
        kennel_tests::eventually(Duration::from_secs(10), || async {
            heard.lock().unwrap().iter().map(|m| m.message_id.clone()).collect::<Vec<_>>() == ids
        })
        .await
    }

    #[tokio::test]
    async fn discord_resumes_its_session_and_hears_what_was_sent_while_it_was_away() {
        let fake = FakeDiscord::start(DISCORD_TOKEN).await;
        let (heard, states, cancel, task) = listen(Discord::new(endpoint(&fake.base_url(), DISCORD_TOKEN, None)));
        assert!(fake.wait_connected(true, Duration::from_secs(5)).await);
        let first = fake.dispatch_message("500", Some("400"), "42", "ada", "before");
        assert!(heard_exactly(&heard, std::slice::from_ref(&first)).await);

        // The network drops; two messages are sent before the adapter is back.
        fake.drop_connections();
        let while_away = fake.dispatch_message("500", Some("400"), "42", "ada", "while away");
        let in_dm = fake.dispatch_message("600", None, "43", "grace", "also while away");
        assert!(
            heard_exactly(&heard, &[first.clone(), while_away.clone(), in_dm.clone()]).await,
            "{:?}",
            heard.lock().unwrap()
        );
        // READY is sequence 1 and the first message 2: the resume names the session and the
        // last sequence seen, on READY's resume URL, and nothing identified afresh.
        assert_eq!(fake.resumes(), vec![json!({ "token": DISCORD_TOKEN, "session_id": "session-1", "seq": 2 })]);
        assert_eq!(fake.identifies().len(), 1);
        assert_eq!(fake.connection_paths(), vec!["/", "/resume/"]);
        assert!(
            kennel_tests::eventually(Duration::from_secs(5), || async {
                states.lock().unwrap().last() == Some(&Connection::Connected)
            })
            .await,
            "RESUMED reports the channel connected again: {:?}",
            states.lock().unwrap()
        );

        // Op 7 (Reconnect) resumes as well, with the sequence the replay brought.
        fake.request_reconnect();
        let after_reconnect = fake.dispatch_message("500", Some("400"), "42", "ada", "after op 7");
        assert!(heard_exactly(&heard, &[first, while_away, in_dm, after_reconnect]).await);
        let resumes = fake.resumes();
        assert_eq!(resumes.len(), 2, "{resumes:?}");
        assert_eq!(resumes[1]["session_id"], "session-1");
        assert!(resumes[1]["seq"].as_u64() >= Some(5), "the replayed and RESUMED sequences count: {resumes:?}");
        assert_eq!(fake.identifies().len(), 1);
        assert!(
            states.lock().unwrap().iter().any(|s| matches!(s, Connection::Failing(m) if m.contains("reconnect"))),
            "{:?}",
            states.lock().unwrap()
        );
        cancel.cancel();
        tokio::time::timeout(Duration::from_secs(2), task).await.expect("listen stops").expect("no panic");
    }

    #[tokio::test]
    async fn discord_identifies_afresh_when_its_session_cannot_be_resumed() {
        let fake = FakeDiscord::start(DISCORD_TOKEN).await;
        let (heard, states, cancel, task) = listen(Discord::new(endpoint(&fake.base_url(), DISCORD_TOKEN, None)));
        assert!(fake.wait_connected(true, Duration::from_secs(5)).await);
        fake.invalidate_sessions();
        fake.drop_connections();
        // The resume is refused with Invalid Session (false); the adapter identifies again
        // through GET /gateway/bot, not the old session's resume URL.
        assert!(
            kennel_tests::eventually(Duration::from_secs(10), || async {
                fake.identifies().len() == 2 && fake.connected()
            })
            .await,
            "identified afresh: {:?} {:?}",
            fake.resumes(),
            states.lock().unwrap()
        );
        assert_eq!(fake.resumes().len(), 1);
        assert_eq!(fake.connection_paths(), vec!["/", "/resume/", "/"]);
        assert!(
            states.lock().unwrap().iter().any(|s| matches!(s, Connection::Failing(m) if m.contains("invalidated"))),
            "{:?}",
            states.lock().unwrap()
        );
        let id = fake.dispatch_message("500", Some("400"), "42", "ada", "new session");
        assert!(heard_exactly(&heard, &[id]).await, "{:?}", heard.lock().unwrap());
        cancel.cancel();
        tokio::time::timeout(Duration::from_secs(2), task).await.expect("listen stops").expect("no panic");
    }

    #[tokio::test]
    async fn discord_identifies_afresh_when_its_resume_url_cannot_be_reached() {
        let fake = FakeDiscord::start(DISCORD_TOKEN).await;
        let (heard, _states, cancel, task) = listen(Discord::new(endpoint(&fake.base_url(), DISCORD_TOKEN, None)));
        assert!(fake.wait_connected(true, Duration::from_secs(5)).await);
        fake.refuse_resumes();
        fake.drop_connections();
        // One try at the resume URL, then a new session through GET /gateway/bot.
        assert!(
            kennel_tests::eventually(Duration::from_secs(10), || async {
                fake.identifies().len() == 2 && fake.connected()
            })
            .await,
            "identified afresh: {:?}",
            fake.connection_paths()
        );
        assert_eq!(fake.connection_paths(), vec!["/", "/resume/", "/"]);
        let id = fake.dispatch_message("500", Some("400"), "42", "ada", "back");
        assert!(heard_exactly(&heard, &[id]).await, "{:?}", heard.lock().unwrap());
        cancel.cancel();
        tokio::time::timeout(Duration::from_secs(2), task).await.expect("listen stops").expect("no panic");
    }

    #[tokio::test]
    async fn discord_with_a_wrong_token_reports_failing_and_never_identifies() {
        let fake = FakeDiscord::start(DISCORD_TOKEN).await;
        let (_heard, states, cancel, task) = listen(Discord::new(endpoint(&fake.base_url(), "wrong", None)));
        assert!(
            kennel_tests::eventually(Duration::from_secs(5), || async {
                states.lock().unwrap().iter().any(|s| matches!(s, Connection::Failing(m) if m.contains("401")))
            })
            .await,
            "{:?}",
            states.lock().unwrap()
        );
        assert!(fake.identifies().is_empty());
        cancel.cancel();
        tokio::time::timeout(Duration::from_secs(2), task)
            .await
            .expect("cancel interrupts the backoff")
            .expect("no panic");
    }

    #[tokio::test]
    async fn discord_sends_text_embeds_polls_and_attachments() {
        let fake = FakeDiscord::start(DISCORD_TOKEN).await;
        let discord = Discord::new(endpoint(&fake.base_url(), DISCORD_TOKEN, None));
        assert_eq!(discord.text_limit(), 2000);
        discord.send("500", &Outgoing::Text("hello".into())).await.expect("text");
        let image = Outgoing::Image {
            media: FileSource::Url("https://example.com/cat.png".into()),
            caption: Some("cat".into()),
        };
        discord.send("500", &image).await.expect("image by URL");
        let poll = Outgoing::Poll { question: "Lunch?".into(), options: vec!["pizza".into(), "soup".into()] };
        discord.send("500", &poll).await.expect("poll");
        let file = FileSource::Bytes {
            file_name: "notes.txt".into(),
            mime: "text/plain".into(),
            bytes: b"line one\n".to_vec(),
        };
        discord.send("500", &Outgoing::File { media: file, caption: Some("notes".into()) }).await.expect("upload");

        let calls = fake.calls();
        assert!(calls.iter().all(|(route, _)| route == "POST /channels/500/messages"), "{calls:?}");
        let bodies: Vec<_> = calls.into_iter().map(|(_, body)| body).collect();
        assert_eq!(bodies[0], json!({ "content": "hello" }));
        assert_eq!(
            bodies[1],
            json!({ "content": "cat", "embeds": [{ "image": { "url": "https://example.com/cat.png" } }] })
        );
        assert_eq!(
            bodies[2],
            json!({ "poll": { "question": { "text": "Lunch?" }, "answers": [{ "poll_media": { "text": "pizza" } }, { "poll_media": { "text": "soup" } }], "duration": 24 } })
        );
        assert_eq!(bodies[3]["content"], "notes");
        assert_eq!(
            bodies[3]["files"],
            json!([{ "field": "files[0]", "filename": "notes.txt", "content_type": "text/plain", "base64": "bGluZSBvbmUK" }])
        );
        let webhook = discord.webhook(WebhookRequest { headers: &HeaderMap::new(), body: b"{}" }).await.unwrap_err();
        assert_eq!(webhook.kind, ErrorKind::InvalidArguments);
    }

    #[tokio::test]
    async fn discord_direct_messages_refused_or_throttled_say_so() {
        let fake = FakeDiscord::start(DISCORD_TOKEN).await;
        let discord = Discord::new(endpoint(&fake.base_url(), DISCORD_TOKEN, None));
        let dm = discord.direct_chat("42").await.expect("a DM channel");
        assert_eq!(dm, dm_channel_id("42"));
        assert_eq!(fake.calls()[0], ("POST /users/@me/channels".to_string(), json!({ "recipient_id": "42" })));
        discord.send(&dm, &Outgoing::Text("hi".into())).await.expect("an open DM takes messages");

        fake.close_dms("42");
        let closed = failure(discord.send(&dm, &Outgoing::Text("hi again".into())).await);
        assert_eq!(closed.kind, ErrorKind::Failed);
        assert!(closed.message.starts_with("channel `team`: Discord will not deliver"), "{}", closed.message);
        assert!(closed.message.contains("50007") && closed.message.contains("shares a server"), "{}", closed.message);

        fake.throttle_next("/messages", 2.5);
        match discord.send("500", &Outgoing::Text("hi".into())).await {
            Err(SendError::RetryAfter(wait)) => assert_eq!(wait, Duration::from_millis(2500)),
            other => panic!("expected RetryAfter, got {other:?}"),
        }
        let impostor = Discord::new(endpoint(&fake.base_url(), "wrong", None));
        let refused = failure(impostor.send("500", &Outgoing::Text("hi".into())).await);
        assert!(refused.message.contains("401"), "{}", refused.message);
    }
}
