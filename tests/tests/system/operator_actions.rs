//! The operator-action log: every change made from the dashboard or with an API token is
//! recorded with who made it, what it was done to and how it ended, and both the API and the
//! dashboard page through it.

use crate::dashboard::signed_in_with;

#[tokio::test]
async fn every_change_an_operator_or_a_token_makes_is_recorded_with_who_and_how_it_ended() {
    let (_home, _d, api, b) = signed_in_with("").await;
    let id = crate::agent_with(&api, "scout", &[]).await;
    assert_eq!(b.submit("/agents", &format!("/agents/{id}/grant"), &[("pattern", "system_time")]).await.status, 303);
    assert_eq!(b.submit("/agents", &format!("/agents/{id}/stop"), &[]).await.status, 303);
    let refused = b.submit("/agents", "/agents/nobody/stop", &[]).await;
    assert_eq!(refused.status, 404);
    assert_eq!(b.submit("/settings", "/settings/tokens", &[("name", "deploy")]).await.status, 303);
    // Reading is not an action, and neither is a chat message (its session records it).
    b.get("/agents").await;

    let log = api.get("/api/audit/actions").await;
    assert_eq!(log.status, 200, "{}", log.text);
    let got: Vec<(String, String, Option<String>, String)> = log
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let text = |k: &str| r[k].as_str().map(str::to_string);
            (text("actor").unwrap(), text("action").unwrap(), text("subject"), text("outcome").unwrap())
        })
        .collect();
    let ada = "operator:ada".to_string();
    let tests = "token:tests".to_string();
    let expected = vec![
        (ada.clone(), "token.create".into(), None, "ok".into()),
        (ada.clone(), "agent.stop".into(), Some("nobody".into()), "NotFound".into()),
        (ada.clone(), "agent.stop".into(), Some(id.clone()), "ok".into()),
        (ada.clone(), "agent.grant".into(), Some(id.clone()), "ok".into()),
        (tests.clone(), "agent.spawn".into(), Some(id.clone()), "ok".into()),
        (tests.clone(), "type.create".into(), Some("scout".into()), "ok".into()),
        ("cli".into(), "token.create".into(), Some("tests".into()), "ok".into()),
    ];
    assert_eq!(got, expected, "{}", log.text);
    let records = log.body.as_array().unwrap();
    assert_eq!(records[0]["detail"].as_str().map(|d| d.contains("deploy")), Some(true), "the notice: {}", log.text);
    assert!(records[1]["detail"].as_str().unwrap().contains("nobody"), "the refusal's message");
    assert_eq!(records[3]["detail"], "`system_time` granted to scout.");

    // Filtered, and paged by the API's cursor and the dashboard's `?before=`.
    let stops = api.get("/api/audit/actions?action=agent.stop&limit=1").await;
    assert_eq!((stops.body.as_array().unwrap().len(), stops.header("x-total-count")), (1, Some("2")));
    let first_id = records[0]["id"].as_i64().unwrap();
    let page = b.get(&format!("/audit/actions?before={first_id}")).await;
    assert_eq!(page.status, 200);
    let older =
        page.text.contains("6 of 7") && page.text.contains("agent.stop") && !page.text.contains("<code>deploy</code>");
    assert!(older, "the six older ones: {}", page.text);
    let mine = b.get("/audit/actions?actor=token:tests").await.text;
    let two = mine.contains("agent.spawn") && mine.contains("type.create") && !mine.contains("class=\"pager");
    assert!(two && !mine.contains("agent.grant"), "{mine}");
    let none = b.get("/audit/actions?action=nothing.such").await.text;
    assert!(none.contains("Clear filters"), "{none}");
}
