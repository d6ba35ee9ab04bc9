//! Agent workspaces and canvases, through the real daemon: `canvas_present` through the
//! registry and the capability gate, its versions and limit, the canvas routes' sandbox, the
//! agent page's live feed; workspace uploads, downloads and their headers, and paths that try
//! to leave the workspace.

use std::time::Duration;

use kennel_tests::fake_llm::{FakeLlm, Scripted};
use serde_json::json;

use crate::dashboard::signed_in_with;
use crate::{agent_from, agent_with};

const CANVAS_CSP: &str = "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline'; \
                          style-src 'unsafe-inline'; img-src data:; form-action 'none'; base-uri 'none'; \
                          frame-ancestors 'self'; webrtc 'block'";

#[tokio::test]
async fn canvas_present_needs_its_grant_keeps_every_version_and_refuses_a_canvas_too_large() {
    let (_home, _d, api, b) = signed_in_with("[canvas]\nmax_bytes = 2048\n").await;
    let painter = agent_with(&api, "painter", &["canvas_present"]).await;
    let other = agent_with(&api, "plain", &["system_time"]).await;

    let refused = api.invoke(&other, "canvas_present", json!({"html": "<p>hi</p>"})).await;
    assert_eq!(refused.status, 403, "not granted: {}", refused.text);
    // The family people guess (the dashboard says Canvases) grants it, as the spec's `media.*` does.
    for family in ["canvas.*", "media.*"] {
        let by_family = agent_with(&api, &format!("by-{}", &family[..5]), &[family]).await;
        let shown = api.invoke(&by_family, "canvas_present", json!({"html": "<p>hi</p>"})).await;
        assert_eq!(shown.status, 200, "{family}: {}", shown.text);
    }
    let empty = api.invoke(&painter, "canvas_present", json!({"html": "  "})).await;
    assert_eq!(empty.status, 422, "{}", empty.text);
    let big = api.invoke(&painter, "canvas_present", json!({"html": "x".repeat(2049)})).await;
    assert_eq!(big.status, 422, "{}", big.text);
    assert!(big.text.contains("[canvas] max_bytes is 2048"), "the limit is named: {}", big.text);
    let no_field = api.invoke(&painter, "canvas_present", json!({"title": "t"})).await;
    assert_eq!(no_field.status, 422, "html is required: {}", no_field.text);

    let first = api.invoke(&painter, "canvas_present", json!({"html": "<p>first</p>", "title": "Draft"})).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.body["content"]["version"], 1, "{}", first.text);
    let second = api.invoke(&painter, "canvas_present", json!({"html": "<p>second</p>"})).await;
    assert_eq!(second.body["content"]["version"], 2, "{}", second.text);
    assert_eq!(second.body["content"]["title"], "Canvas", "a default title");
    assert_eq!(second.body["content"]["url"], format!("/canvas/{painter}/2"));

    // Both versions stay: each has its page and its frame.
    let old = b.get(&format!("/canvas/{painter}/1/frame")).await;
    assert_eq!(old.status, 200);
    assert!(old.text.starts_with("<script>") && old.text.ends_with("</script><p>first</p>"), "{}", old.text);
    assert_eq!(old.headers["x-dns-prefetch-control"], "off");
    assert_eq!(old.headers["content-security-policy"], CANVAS_CSP);
    assert!(old.headers["content-type"].to_str().unwrap().starts_with("text/html"));
    let page = b.get(&format!("/canvas/{painter}/1")).await;
    assert_eq!(page.status, 200);
    let frame_tag =
        format!("<iframe sandbox=\"allow-scripts\" referrerpolicy=\"no-referrer\" src=\"/canvas/{painter}/1/frame\"");
    assert!(page.text.contains(&frame_tag), "framed in the sandbox: {}", page.text);
    assert!(!page.text.contains("allow-same-origin"));
    assert!(page.text.contains(&format!("href=\"/canvas/{painter}/2\"")), "the other versions are listed");
    assert!(!page.text.contains("<p>first</p>"), "the HTML is never inline on a dashboard page");
    let list = b.get("/canvas").await;
    assert!(
        list.text.contains(&format!("src=\"/canvas/{painter}/2/frame\"")),
        "the latest of each agent: {}",
        list.text
    );
    assert!(!list.text.contains(&format!("/canvas/{painter}/1/frame")));
    assert_eq!(b.get(&format!("/canvas/{painter}/3")).await.status, 404);
    assert_eq!(b.get(&format!("/canvas/{painter}/x/frame")).await.status, 404);
    assert_eq!(b.get(&format!("/canvas/{other}/1/frame")).await.status, 404, "versions are per agent");

    // Not signed in: no canvas for anyone.
    let stranger = _d.browser();
    assert_eq!(stranger.get(&format!("/canvas/{painter}/1/frame")).await.status, 303);
}

#[tokio::test]
async fn a_type_with_canvas_network_gets_https_and_agents_cannot_give_it_to_themselves() {
    let (_home, _d, api, b) = signed_in_with("").await;
    let t =
        api.post("/api/templates", json!({"name": "web", "tools": ["canvas_present"], "canvas_network": true})).await;
    assert_eq!(t.status, 201, "{}", t.text);
    let web = api.post("/api/agents", json!({"template": "web"})).await.body["id"].as_str().unwrap().to_string();
    api.invoke(&web, "canvas_present", json!({"html": "<p>net</p>"})).await;
    let frame = b.get(&format!("/canvas/{web}/1/frame")).await;
    let csp = frame.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.starts_with("sandbox allow-scripts;") && csp.contains("connect-src https:"), "{csp}");

    let maker = agent_with(&api, "maker", &["agent_type_create"]).await;
    let made = api.invoke(&maker, "agent_type_create", json!({"name": "sneaky", "canvas_network": true})).await;
    assert_eq!(made.status, 422, "not one of the seven fields an agent may set: {}", made.text);
}

#[tokio::test]
async fn an_open_agent_page_hears_of_each_new_version_and_the_chat_links_to_it() {
    let llm = FakeLlm::start().await;
    let (_home, _d, api, b) = signed_in_with(&llm.provider_config("fake", "openai")).await;
    let painter = agent_from(&api, json!({"name": "painter", "model": "m", "tools": ["canvas_present"]})).await;
    let page = b.get(&format!("/agents/{painter}")).await;
    assert!(page.text.contains(&format!("data-canvas-live=\"/agents/{painter}/canvas/live\"")));
    assert!(page.text.contains("No canvas yet"));

    let mut events = b.events(&format!("/agents/{painter}/canvas/live")).await;
    assert_eq!(events.status(), 200);
    tokio::time::sleep(Duration::from_millis(100)).await; // the stream is subscribed
    llm.push(Scripted::call("canvas_present", json!({"html": "<b>live</b>", "title": "Live <i>one</i>"})))
        .push(Scripted::text("Look at the canvas."));
    let turn = api.post(&format!("/api/agents/{painter}/messages"), json!({"message": "show me"})).await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    let event = tokio::time::timeout(Duration::from_secs(5), events.next()).await.expect("in time").expect("an event");
    assert_eq!(event["version"], 1);
    assert_eq!(event["title"], "Live <i>one</i>");
    assert_eq!(event["frame"], format!("/canvas/{painter}/1/frame"));

    let page = b.get(&format!("/agents/{painter}")).await;
    assert!(page.text.contains(&format!("src=\"/canvas/{painter}/1/frame\"")), "the latest shows on reload");
    assert!(page.text.contains("v1 · Live &lt;i&gt;one&lt;/i&gt;"), "the title is text");
    let session = turn.body["session_id"].as_str().expect("a session");
    let chat = b.get(&format!("/agents/{painter}?session={session}")).await;
    let card = format!(
        "<div class=\"msg tool canvas-call\"><span class=\"who\">Canvas</span><a href=\"/canvas/{painter}/1\">"
    );
    assert!(chat.text.contains(&card), "the call is a card linking to its version: {}", chat.text);
}

#[tokio::test]
async fn operators_upload_list_view_and_download_workspace_files_with_safe_headers() {
    let (home, _d, api, b) = signed_in_with("[workspace]\nmax_file_bytes = 4096\n").await;
    let agent = agent_with(&api, "keeper", &[]).await;
    let page = format!("/agents/{agent}");
    let action = format!("/agents/{agent}/files");

    let png = b"\x89PNG\r\n\x1a\n not really a png";
    let uploaded = b.upload(&page, &action, &[("folder", "shots")], ("screen.png", png)).await;
    assert_eq!(uploaded.status, 303, "{}", uploaded.text);
    let html_file = b"<script>alert(document.cookie)</script>";
    assert_eq!(b.upload(&page, &action, &[], ("page.html", html_file)).await.status, 303);
    assert_eq!(b.upload(&page, &action, &[], ("notes.txt", b"plain <b>text</b>")).await.status, 303);
    assert_eq!(b.upload(&page, &action, &[], ("logo.svg", b"<svg onload=alert(1)></svg>")).await.status, 303);
    let on_disk = home.path().join("workspaces").join(&agent).join("shots/screen.png");
    assert_eq!(std::fs::read(&on_disk).unwrap(), png, "stored in the agent's own folder");

    let listed = b.get(&page).await.text;
    for name in ["shots/screen.png", "page.html", "notes.txt", "logo.svg"] {
        assert!(listed.contains(&format!(">{name}</a>")), "{name} is listed: {listed}");
    }

    let raw = |path: &str| format!("/agents/{agent}/files/raw?path={path}");
    let image = b.get(&raw("shots/screen.png")).await;
    assert_eq!(image.headers["content-type"], "image/png");
    assert_eq!(image.headers["x-content-type-options"], "nosniff");
    assert!(image.headers["content-disposition"].to_str().unwrap().starts_with("inline;"));
    assert_eq!(image.text, String::from_utf8_lossy(png), "the bytes as stored");
    assert_eq!(image.headers["content-length"], png.len().to_string().as_str());
    for hostile in ["page.html", "logo.svg"] {
        let served = b.get(&raw(hostile)).await;
        assert_eq!(served.status, 200);
        assert_eq!(served.headers["content-type"], "application/octet-stream", "{hostile}");
        assert!(served.headers["content-disposition"].to_str().unwrap().starts_with("attachment;"), "{hostile}");
        assert_eq!(served.headers["x-content-type-options"], "nosniff");
    }
    let download = b.get(&format!("{}&download=1", raw("notes.txt"))).await;
    assert!(
        download.headers["content-disposition"].to_str().unwrap().starts_with("attachment; filename=\"notes.txt\"")
    );
    let text_page = b.get(&format!("/agents/{agent}/files/view?path=notes.txt")).await;
    assert!(text_page.text.contains("plain &lt;b&gt;text&lt;/b&gt;"), "text shown as text: {}", text_page.text);
    let html_page = b.get(&format!("/agents/{agent}/files/view?path=page.html")).await;
    assert!(!html_page.text.contains("<script>alert"), "never inline");
    assert!(html_page.text.contains("download it"));

    // Refused uploads say why at the form and store nothing.
    let big = b.upload(&page, &action, &[], ("big.bin", &[0u8; 5000])).await;
    assert_eq!(big.status, 422, "{}", big.text);
    assert!(big.text.contains("max_file_bytes"), "{}", big.text);
    let escape = b.upload(&page, &action, &[("folder", "../..")], ("x.txt", b"x")).await;
    assert_eq!(escape.status, 422, "{}", escape.text);
    assert!(escape.text.contains("not a workspace path"), "{}", escape.text);
    assert!(!home.path().join("x.txt").exists() && !home.path().join("workspaces/x.txt").exists());
    let forged = b.post_multipart(&action, &[("csrf", "not-the-token")], ("forged.txt", b"x")).await;
    assert_eq!(forged.status, 403, "an upload needs the session's token too");
    assert!(!home.path().join("workspaces").join(&agent).join("forged.txt").exists());

    // The token is the form's first field, never in a URL (where logs and history keep it).
    let shown = b.get(&page).await.text;
    assert!(shown.contains(&format!("action=\"{action}\"")), "the upload form's action has no query: {shown}");
    let csrf = kennel_tests::csrf_in(&shown).expect("a CSRF token");
    let in_url = b.post_multipart(&format!("{action}?csrf={csrf}"), &[], ("in-url.txt", b"x")).await;
    assert_eq!(in_url.status, 403, "a token in the URL is not taken: {}", in_url.text);
    let after_file = b.post_multipart(&action, &[("folder", "f"), ("csrf", &csrf)], ("late.txt", b"x")).await;
    assert_eq!(after_file.status, 403, "a token after other fields is not taken: {}", after_file.text);
    // Only an upload route takes multipart: another form sent so runs nothing.
    let stop = b.post_multipart(&format!("/agents/{agent}/stop?csrf={csrf}"), &[("csrf", &csrf)], ("x", b"x")).await;
    assert_eq!(stop.status, 415, "{}", stop.text);
    assert_eq!(api.get(&format!("/api/agents/{agent}")).await.body["status"], "running", "the agent was not stopped");
    let workspace = home.path().join("workspaces").join(&agent);
    assert!(!workspace.join("in-url.txt").exists() && !workspace.join("f/late.txt").exists());
}

#[tokio::test]
async fn paths_and_links_that_lead_outside_the_workspace_are_refused() {
    let (home, _d, api, b) = signed_in_with("").await;
    let agent = agent_with(&api, "keeper", &[]).await;
    let page = format!("/agents/{agent}");
    assert_eq!(b.upload(&page, &format!("/agents/{agent}/files"), &[], ("ok.txt", b"ok")).await.status, 303);
    let dir = home.path().join("workspaces").join(&agent);
    std::os::unix::fs::symlink(home.path().join("config.toml"), dir.join("config-link.txt")).unwrap();
    std::os::unix::fs::symlink(home.path(), dir.join("home")).unwrap();

    for (path, status) in [
        ("config-link.txt", 403),
        ("home/config.toml", 403),
        ("../../config.toml", 422),
        ("%2Fetc%2Fpasswd", 422),
        ("missing.txt", 404),
    ] {
        let served = b.get(&format!("/agents/{agent}/files/raw?path={path}")).await;
        assert_eq!(served.status, status, "{path}: {}", served.text);
        assert!(!served.text.contains("[server]") && !served.text.contains("root:"), "{path} leaked");
    }
    let listed = b.get(&page).await.text;
    assert!(listed.contains(">ok.txt</a>") && !listed.contains("config-link.txt"), "links are not listed");
}
