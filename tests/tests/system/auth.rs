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
