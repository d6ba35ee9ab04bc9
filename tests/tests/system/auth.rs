use std::time::Duration;

use kennel_tests::{Home, eventually};

#[tokio::test]
async fn api_routes_need_a_live_token_and_health_does_not() {
    let home = Home::new();
    let token = home.token("script").await;
    let daemon = home.start().await;

    assert_eq!(daemon.anonymous().get("/healthz").await.status, 200);

    for path in ["/api/templates", "/api/agents", "/api/tools", "/api/audit", "/api/openapi.json"] {
        let none = daemon.anonymous().get(path).await;
        assert_eq!(none.status, 401, "{path}");
        assert_eq!(none.error_kind(), "Unauthorized");
        assert_eq!(none.header("www-authenticate"), Some("Bearer"));
    }
    assert_eq!(daemon.api("kn_not-a-real-token").get("/api/templates").await.status, 401);
    // The same token with one character changed.
    let mut forged = token.clone();
    forged.pop();
    forged.push(if token.ends_with('0') { '1' } else { '0' });
    assert_eq!(daemon.api(&forged).get("/api/templates").await.status, 401);

    let api = daemon.api(&token);
    assert_eq!(api.get("/api/templates").await.status, 200);

    // Revoked with the CLI while the daemon runs: refused from then on.
    home.cli_ok(&["token", "revoke", "script"]).await;
    let refused = eventually(Duration::from_secs(3), || async { api.get("/api/templates").await.status == 401 }).await;
    assert!(refused, "a revoked token must stop working");
    assert!(api.get("/api/templates").await.error_message().contains("revoked"));
}

#[tokio::test]
async fn tokens_are_shown_once_and_stored_only_as_hashes() {
    let home = Home::new();
    let token = home.token("ci").await;
    assert!(token.starts_with("kn_") && token.len() == 67, "{token}");
    let list = home.cli_ok(&["token", "list"]).await;
    assert!(list.starts_with("ci\t"), "{list}");
    assert!(!list.contains(&token));
    let stored = home.stored_bytes();
    let secret = token.as_bytes();
    // Its hash is there (so the search below searched the tokens' rows), the token is not.
    use sha2::Digest;
    let hash = hex::encode(sha2::Sha256::digest(secret));
    assert!(stored.windows(hash.len()).any(|w| w == hash.as_bytes()), "the token's hash is stored");
    assert!(!stored.windows(secret.len()).any(|w| w == secret));

    let dup = home.cli(&["token", "create", "ci"]).await;
    assert!(!dup.status.success());
    assert!(String::from_utf8_lossy(&dup.stderr).contains("exists"));
    let missing = home.cli(&["token", "revoke", "nope"]).await;
    assert!(!missing.status.success());
}

#[tokio::test]
async fn operators_are_added_with_a_password_from_stdin() {
    let home = Home::new();
    let ok = home.cli_with_stdin(&["operator", "add", "ada", "--password-stdin"], "correct horse battery\n").await;
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));

    let short = home.cli_with_stdin(&["operator", "add", "bob", "--password-stdin"], "short\n").await;
    assert!(!short.status.success());
    assert!(String::from_utf8_lossy(&short.stderr).contains("at least 8"));

    let dup = home.cli_with_stdin(&["operator", "add", "ada", "--password-stdin"], "another password\n").await;
    assert!(!dup.status.success());

    let no_flag = home.cli(&["operator", "add", "cy"]).await;
    assert!(String::from_utf8_lossy(&no_flag.stderr).contains("--password-stdin"));

    let hay = home.stored_bytes();
    assert!(!hay.windows(21).any(|w| w == b"correct horse battery"), "the password is never stored");
    assert!(hay.windows(9).any(|w| w == b"$argon2id"), "an argon2id hash is stored");
}

#[tokio::test]
async fn operators_are_listed_a_forgotten_password_reset_and_one_removed_signing_them_out() {
    let home = Home::new();
    for (name, password) in [("ada", "correct horse battery"), ("bob", "bob's old password")] {
        let added = home.cli_with_stdin(&["operator", "add", name, "--password-stdin"], &format!("{password}\n")).await;
        assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    }
    let token = home.token("audit").await;
    let daemon = home.start().await;
    let bob = daemon.browser();
    assert_eq!(bob.sign_in("bob", "bob's old password").await.status, 303);
    assert_eq!(bob.get("/agents").await.status, 200);

    let listed: serde_json::Value = serde_json::from_str(&home.cli_ok(&["operator", "list", "--json"]).await).unwrap();
    let names: Vec<(&str, i64)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["name"].as_str().unwrap(), o["sessions"].as_i64().unwrap()))
        .collect();
    assert_eq!(names, [("ada", 0), ("bob", 1)], "by name, with the sessions open");
    let table = home.cli_ok(&["operator", "list"]).await;
    assert!(table.starts_with("NAME") && table.contains("bob"), "{table}");

    // Forgotten: reset from the machine. Bob's open session ends in the running daemon, the old
    // password stops working and the new one works.
    let reset = home.cli_with_stdin(&["operator", "passwd", "bob", "--password-stdin"], "bob's new password\n").await;
    assert!(reset.status.success(), "{}", String::from_utf8_lossy(&reset.stderr));
    let signed_out = eventually(Duration::from_secs(3), || async {
        bob.get("/agents").await.header("location").is_some_and(|l| l.starts_with("/login"))
    })
    .await;
    assert!(signed_out, "the session opened with the old password ended");
    assert_eq!(bob.sign_in("bob", "bob's old password").await.status, 401);
    assert_eq!(bob.sign_in("bob", "bob's new password").await.status, 303);
    let short = home.cli_with_stdin(&["operator", "passwd", "bob", "--password-stdin"], "short\n").await;
    assert!(String::from_utf8_lossy(&short.stderr).contains("at least 8"));
    let nobody = home.cli_with_stdin(&["operator", "passwd", "cy", "--password-stdin"], "a long password\n").await;
    assert!(String::from_utf8_lossy(&nobody.stderr).contains("no operator named `cy`"));

    // Removed: signed out at once and unknown from then on; the last operator stays.
    assert!(home.cli_ok(&["operator", "remove", "bob"]).await.contains("removed and signed out"));
    let gone = eventually(Duration::from_secs(3), || async {
        bob.get("/agents").await.header("location").is_some_and(|l| l.starts_with("/login"))
    })
    .await;
    assert!(gone, "the removed operator's session ended");
    assert_eq!(bob.sign_in("bob", "bob's new password").await.status, 401);
    let last = home.cli(&["operator", "remove", "ada"]).await;
    assert!(!last.status.success());
    assert!(String::from_utf8_lossy(&last.stderr).contains("`ada` is the only operator"), "{last:?}");
    assert_eq!(daemon.browser().sign_in("ada", "correct horse battery").await.status, 303);

    // Each change is in the operator-action log, as the CLI's.
    let actions = daemon.api(&token).get("/api/audit/actions?actor=cli").await;
    let done: Vec<&str> = actions.body.as_array().unwrap().iter().filter_map(|a| a["action"].as_str()).collect();
    for action in ["operator.add", "operator.passwd", "operator.remove"] {
        assert!(done.contains(&action), "{action} in {done:?}");
    }
    // Tokens for scripts: names and dates, never a secret.
    let tokens: serde_json::Value = serde_json::from_str(&home.cli_ok(&["token", "list", "--json"]).await).unwrap();
    assert_eq!(tokens[0]["name"], "audit");
    assert!(tokens[0]["created_at"].as_str().is_some() && !tokens.to_string().contains(&token));
}
