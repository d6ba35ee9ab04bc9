//! Every dashboard response carries the security headers (issue 10 §1): one strict
//! Content-Security-Policy (no inline script or style, nothing from elsewhere, no framing),
//! `nosniff`, `Referrer-Policy: same-origin`, and `Cache-Control: no-store` on pages (the
//! new-token page and every signed-in page above all).

use kennel_tests::Reply;
use serde_json::json;

use crate::{agent_with, daemon};

/// The headers every dashboard page must have; `what` names the page in failures.
pub fn assert_headers(what: &str, reply: &Reply) {
    let csp: Vec<_> = reply.headers.get_all("content-security-policy").iter().collect();
    assert_eq!(csp.len(), 1, "{what}: one CSP header, not {csp:?}");
    let csp = csp[0].to_str().unwrap();
    let directives: Vec<&str> = csp.split(';').map(str::trim).collect();
    for wanted in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ] {
        assert!(directives.contains(&wanted), "{what}: CSP lacks `{wanted}`: {csp}");
    }
    assert!(!csp.contains("unsafe-"), "{what}: {csp}");
    assert_eq!(reply.header("x-content-type-options"), Some("nosniff"), "{what}");
    assert_eq!(reply.header("referrer-policy"), Some("same-origin"), "{what}");
}

fn assert_page_headers(what: &str, reply: &Reply) {
    assert_headers(what, reply);
    assert_eq!(reply.header("cache-control"), Some("no-store"), "{what}");
}

/// No page uses what the CSP forbids: inline script, inline event handlers, inline styles.
fn assert_csp_clean(what: &str, html: &str) {
    let lower = html.to_lowercase();
    assert_eq!(lower.matches("<script").count(), 1, "{what}: only live.js");
    assert!(lower.contains(r#"<script src="/public/live.js" defer></script>"#), "{what}");
    for inline in [" style=", "<style", "javascript:", " onclick=", " onsubmit=", " onload=", " onchange="] {
        assert!(!lower.contains(inline), "{what} uses `{inline}`, which the CSP blocks");
    }
}

#[tokio::test]
async fn every_dashboard_response_has_the_security_headers_and_pages_need_no_inline_script() {
    let (_home, d, api) = daemon().await;
    let b = d.browser();
    // Before sign-in: the redirect, the setup page, the assets.
    let first = b.get("/agents").await;
    assert_eq!(first.status, 303);
    assert_page_headers("the redirect to /setup", &first);
    let setup = b.get("/setup").await;
    assert_page_headers("/setup", &setup);
    assert_csp_clean("/setup", &setup.text);
    for asset in ["/public/live.js", "/style/kennel.css", "/public/favicon.svg", "/favicon.ico"] {
        let r = b.get(asset).await;
        assert_eq!(r.status, 200);
        assert_headers(asset, &r);
    }
    assert_eq!(b.get("/favicon.ico").await.header("content-type"), Some("image/svg+xml"));
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);
    let login = d.browser().get("/login").await;
    assert_page_headers("/login", &login);
    assert_csp_clean("/login", &login.text);

    // Every signed-in page.
    let id = agent_with(&api, "helper", &["schedule.*"]).await;
    let task = api.post("/api/tasks", json!({"title": "t"})).await.body["id"].as_str().unwrap().to_string();
    let schedule = api.invoke(&id, "schedule_create", json!({"when": "+1h", "prompt": "p"})).await;
    let schedule = schedule.body["content"]["id"].as_str().unwrap().to_string();
    for path in [
        "/".to_string(),
        "/agents".into(),
        format!("/agents/{id}"),
        "/agent-types".into(),
        "/agent-types/helper".into(),
        "/tools".into(),
        format!("/tools?agent={id}"),
        "/tasks".into(),
        format!("/tasks/{task}"),
        "/schedules".into(),
        format!("/schedules/{schedule}"),
        format!("/schedules/{schedule}/delete"),
        "/audit".into(),
        "/usage".into(),
        "/settings".into(),
    ] {
        let r = b.get(&path).await;
        assert_eq!(r.status, 200, "{path}");
        assert_page_headers(&path, &r);
        assert_csp_clean(&path, &r.text);
    }
    // An error page, a form's refusal, a form's redirect, and the page that shows a new token.
    let missing = b.get("/agents/nobody").await;
    assert_eq!(missing.status, 404);
    assert_page_headers("an error page", &missing);
    assert_csp_clean("an error page", &missing.text);
    let forged = b.post("/agent-types", &[("name", "x")]).await;
    assert_eq!(forged.status, 403);
    assert_page_headers("a CSRF refusal", &forged);
    let redirect = b.submit("/agent-types", "/agent-types", &[("name", "made")]).await;
    assert_eq!(redirect.status, 303);
    assert_page_headers("a form's redirect", &redirect);
    let posted = b.submit("/settings", "/settings/tokens", &[("name", "deploy")]).await;
    assert_eq!(posted.status, 303);
    let token = b.get(posted.header("location").unwrap()).await;
    assert_eq!(token.status, 200);
    assert!(token.text.contains("kn_"));
    assert_page_headers("the new-token page", &token);
}
