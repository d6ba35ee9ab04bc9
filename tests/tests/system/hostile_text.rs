//! Hostile text never comes back as markup (issue 10 §1). A corpus of payloads goes into every
//! stored field a dashboard page shows, through the API, agents' tools, the model's replies and
//! the dashboard's own forms; then every page is read the way a browser tokenizes it
//! (html5gum, switching to raw-text states after `textarea`, `title`, `script`, `style`) and
//! must hold only the dashboard's own elements and attributes, while the payloads are there as
//! text. Fields that refuse such text (names) are checked for the refusal.
//!
//! This test grows with every page that later shows stored text (the cluster page's daemon
//! rows, written by other daemons, are checked in `cluster.rs`, which shares a database). Workflows are stored but no
//! page shows them yet. Elements only the dashboard makes (a canvas's sandboxed frame, a
//! workspace file's image or player) are allowed only as it makes them.

use std::collections::BTreeMap;
use std::time::Duration;

use html5gum::{Token, Tokenizer};
use kennel_tests::fake_llm::Scripted;
use kennel_tests::{Browser, Reply, eventually};
use serde_json::{Value, json};

use kennel_tests::fake_webhook::{FakeWebhookReceiver, signed};

use crate::{agent_from, daemon_with_llm_and_env};

const CHANNEL_SECRET: &str = "hostile-channel-secret";

/// Closing tags of the elements browsers read as raw text, attribute breakers, script URLs,
/// comments, text that is already escaped, and Unicode look-alikes and controls.
const PAYLOADS: &[&str] = &[
    "</textarea><script>alert('textarea')</script>",
    "</title><script>alert('title')</script>",
    "</script><script>alert('script')</script>",
    "</style><img src=x onerror=alert('style')>",
    "</noscript><svg onload=alert('noscript')>",
    "\"><img src=x onerror=alert('double-quote')>",
    "' autofocus onfocus='alert(\"single-quote\")",
    "javascript:alert('url')",
    "<a href=\"javascript:alert('href')\">click</a>",
    "<iframe src=\"/settings\"></iframe>",
    "<!-- <script>alert('comment')</script> -->",
    "<ScRiPt>alert('case')</sCrIpT>",
    "&lt;b&gt;already escaped&lt;/b&gt; &amp; &#60;i&#62;",
    "\u{FF1C}script\u{FF1E}alert('fullwidth')\u{FF1C}/script\u{FF1E}",
    "\u{202E}gnp.exe \u{2028}line\u{2029}para \u{200B}zero\u{FEFF}width",
];

/// Text that Markdown could make markup of: links, images and autolinks to script or data
/// addresses, raw HTML blocks and inline tags, an attribute breaker in an address, and code
/// holding tags; then the elements a reply may really use, which must be rendered.
const MARKDOWN: &str = "[link](javascript:alert('md-link')) [case](JaVaScRiPt:alert('md-case')) \
[tab](<java\tscript:alert('md-tab')>) [data](data:text/html;base64,PHNjcmlwdD4=) \
[proto](//evil.example/md-proto) ![img](javascript:alert('md-img')) <javascript:alert('md-autolink')> \
[quote](https://example.com/\"onmouseover=\"alert('md-attr')) [ref][r] `<script>alert('md-code')</script>` \
<b onclick=alert('md-inline')>bold</b>\n\n\
[r]: javascript:alert('md-ref')\n\n\
<div onclick=alert('md-block')>\n\n\
```html\n<script>alert('md-fence')</script>\n```\n\n\
# A heading\n\n| col | umn |\n|---|---|\n| *one* | **two** |\n\n- [x] done\n\n> quoted [the docs](https://example.com/docs)\n";

/// What [`MARKDOWN`] must show as text, rendered.
const MARKDOWN_SHOWN: &[&str] = &[
    "<script>alert('md-code')</script>",
    "<script>alert('md-fence')</script>",
    "<div onclick=alert('md-block')>",
    "<b onclick=alert('md-inline')>",
    "javascript:alert('md-autolink')",
];

/// The payloads a title takes: all but the last, whose right-to-left override every title
/// refuses (it would show an operator other words than the title holds).
const TITLES: &[&str] = PAYLOADS.split_last().expect("payloads").1;

/// A page on loopback whose title and text are `corpus`, served escaped (the browser decodes
/// it, so the tab's title and the page's text are the payloads themselves).
async fn hostile_site(corpus: &str) -> reqwest::Url {
    let escaped = corpus.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let html =
        format!("<!doctype html><html><head><title>{escaped}</title></head><body><p>{escaped}</p></body></html>");
    let port = kennel_tests::serve_html(html).await;
    reqwest::Url::parse(&format!("http://127.0.0.1:{port}/hostile")).unwrap()
}

/// A payload as a file name: `/` cannot be in one.
fn file_name(payload: &str) -> String {
    payload.replace('/', "\u{2215}")
}

/// Every payload in one text.
pub(crate) fn corpus() -> String {
    PAYLOADS.join(" ")
}

/// The elements the dashboard's pages are made of (with those Markdown renders); any other is
/// injected.
const ELEMENTS: &[&str] = &[
    "fieldset",
    "legend",
    "em",
    "del",
    "blockquote",
    "hr",
    "h4",
    "h5",
    "h6",
    "br",
    "a",
    "article",
    "audio",
    "body",
    "button",
    "code",
    "datalist",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "form",
    "h1",
    "h2",
    "h3",
    "head",
    "header",
    "html",
    "iframe",
    "img",
    "input",
    "label",
    "li",
    "link",
    "main",
    "meta",
    "nav",
    "ol",
    "option",
    "p",
    "pre",
    "script",
    "section",
    "select",
    "span",
    "strong",
    "summary",
    "table",
    "tbody",
    "td",
    "textarea",
    "th",
    "thead",
    "title",
    "tr",
    "ul",
    "video",
    "figure",
    "svg",
    "g",
    "rect",
    "text",
    "caption",
    "defs",
    "marker",
    "path",
    "line",
    "circle",
];

/// A page as a browser's tokenizer reads it.
pub(crate) struct Page {
    /// Start tags: name and attributes (entities decoded).
    tags: Vec<(String, BTreeMap<String, String>)>,
    /// Every text run and attribute value, decoded, separated by U+0001.
    text: String,
    comments: Vec<String>,
    /// Each textarea's decoded text by its `name`.
    textareas: BTreeMap<String, String>,
}

fn utf8(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn read(html: &str) -> Page {
    let mut emitter = html5gum::DefaultEmitter::default();
    // What a browser's tree builder does after these start tags (textarea, title: RCDATA;
    // script, style, noscript…: raw text): exactly where a missing escape lets text out.
    emitter.naively_switch_states(true);
    let mut page = Page { tags: Vec::new(), text: String::new(), comments: Vec::new(), textareas: BTreeMap::new() };
    let mut open_textarea: Option<String> = None;
    for token in Tokenizer::new_with_emitter(html, emitter).flatten() {
        match token {
            Token::StartTag(tag) => {
                let name = utf8(&tag.name);
                let attrs: BTreeMap<String, String> =
                    tag.attributes.iter().map(|(k, v)| (utf8(k), utf8(&v.value))).collect();
                page.text.push('\u{1}');
                for value in attrs.values() {
                    page.text.push_str(value);
                    page.text.push('\u{1}');
                }
                if name == "textarea" {
                    let field = attrs.get("name").cloned().unwrap_or_default();
                    page.textareas.insert(field.clone(), String::new());
                    open_textarea = Some(field);
                }
                page.tags.push((name, attrs));
            }
            Token::EndTag(_) => {
                page.text.push('\u{1}');
                open_textarea = None;
            }
            Token::String(s) => {
                let s = utf8(&s.value);
                if let Some(field) = &open_textarea {
                    page.textareas.get_mut(field).expect("opened").push_str(&s);
                }
                page.text.push_str(&s);
            }
            Token::Comment(c) => {
                page.comments.push(utf8(&c.value));
                page.text.push('\u{1}');
            }
            Token::Doctype(_) | Token::Error(_) => {}
        }
    }
    // The parser drops one newline right after `<textarea>`.
    for text in page.textareas.values_mut() {
        if text.starts_with('\n') {
            text.remove(0);
        }
    }
    page
}

/// Only the dashboard's own markup: known elements, one script (`live.js`), no event handler
/// or style attributes, links and forms only to this site's paths, no comments but tachys's
/// empty `<!>` markers.
fn assert_no_markup(what: &str, html: &str) -> Page {
    let page = read(html);
    for (name, attrs) in &page.tags {
        assert!(ELEMENTS.contains(&name.as_str()), "{what}: injected element <{name} {attrs:?}>");
        for (attr, value) in attrs {
            assert!(!attr.starts_with("on"), "{what}: event handler {attr}={value:?} on <{name}>");
            assert!(!["style", "srcdoc", "formaction"].contains(&attr.as_str()), "{what}: {attr} on <{name}>");
            // `data-preview`: the address live.js reads the tool picker from.
            if ["href", "src", "action", "data-preview"].contains(&attr.as_str()) {
                let site_path = value.starts_with('/') && !value.starts_with("//");
                // A fragment (`#family-tasks`) moves within the page: it can neither leave nor run.
                let fragment = attr == "href" && value.starts_with('#');
                // A Markdown link may leave the site, to the web or mail, without the opener.
                let web = ["https://", "http://", "mailto:"].iter().any(|s| value.starts_with(s))
                    && name == "a"
                    && attr == "href"
                    && attrs.get("rel").map(String::as_str) == Some("noopener noreferrer");
                assert!(
                    site_path || fragment || web,
                    "{what}: <{name} {attr}={value:?}> leaves the site or runs script"
                );
            }
        }
        if name == "script" {
            assert_eq!(attrs.get("src").map(String::as_str), Some("/public/live.js"), "{what}: a script");
        }
        if name == "iframe" {
            assert_canvas_frame(what, attrs);
        }
        if ["img", "audio", "video"].contains(&name.as_str()) {
            let src = attrs.get("src").map(String::as_str).unwrap_or_default();
            assert!(src.contains("/files/raw?path="), "{what}: <{name}> not of a workspace file: {attrs:?}");
        }
    }
    let scripts = page.tags.iter().filter(|(n, _)| n == "script").count();
    assert!(scripts <= 1, "{what}: {scripts} scripts");
    assert!(page.comments.iter().all(String::is_empty), "{what}: comments {:?}", page.comments);
    page
}

/// The only frame a page may hold: a canvas version's route, sandboxed without
/// `allow-same-origin` (its scripts get an origin of their own).
fn assert_canvas_frame(what: &str, attrs: &BTreeMap<String, String>) {
    assert_eq!(attrs.get("sandbox").map(String::as_str), Some("allow-scripts"), "{what}: a frame {attrs:?}");
    let src = attrs.get("src").map(String::as_str).unwrap_or_default();
    let parts: Vec<&str> = src.split('/').collect();
    let canvas_route = parts.len() == 5
        && parts[..2] == ["", "canvas"]
        && parts[2].len() == 36
        && parts[3].bytes().all(|b| b.is_ascii_digit())
        && parts[4] == "frame";
    assert!(canvas_route, "{what}: a frame of {src:?}");
}

/// Which payloads a page must show as text (so the test sees them stored and shown, and cannot
/// pass on a page that simply dropped them).
#[derive(Clone, Copy)]
pub(crate) enum Shows {
    /// Every one: the page shows a field that holds the whole corpus verbatim.
    All,
    /// Every payload a title takes ([`TITLES`]): a page of titles.
    Titles,
    /// The first (it survives TOML and JSON quoting unchanged).
    First,
    /// None: the page shows no stored text, it must only stay clean.
    Nothing,
}

/// The page at `path`: 200, clean, with the security headers, and showing `shows`.
pub(crate) async fn check(b: &Browser, path: &str, shows: Shows) -> Page {
    let reply = b.get(path).await;
    assert_eq!(reply.status, 200, "{path}: {}", reply.text);
    check_reply(path, &reply, shows)
}

fn check_reply(what: &str, reply: &Reply, shows: Shows) -> Page {
    crate::security_headers::assert_headers(what, reply);
    let page = assert_no_markup(what, &reply.text);
    let wanted = match shows {
        Shows::All => PAYLOADS,
        Shows::Titles => TITLES,
        Shows::First => &PAYLOADS[..1],
        Shows::Nothing => &[],
    };
    for payload in wanted {
        assert!(page.text.contains(payload), "{what} does not show {payload:?} as text:\n{}", reply.text);
    }
    page
}

/// A page showing [`MARKDOWN`] rendered: clean, its tags as text, its heading, table and
/// emphasis made, its one safe link written with `rel`, no other address out of the site.
async fn check_markdown(b: &Browser, path: &str) {
    let page = check(b, path, Shows::Nothing).await;
    for shown in MARKDOWN_SHOWN {
        assert!(page.text.contains(shown), "{path} does not show {shown:?} as text");
    }
    let has = |tag: &str| page.tags.iter().any(|(t, _)| t == tag);
    for tag in ["h3", "table", "em", "strong", "blockquote"] {
        assert!(has(tag), "{path}: Markdown's <{tag}> rendered");
    }
    let out: Vec<&String> = page
        .tags
        .iter()
        .filter_map(|(t, a)| (t == "a").then(|| a.get("href")).flatten())
        .filter(|href| !href.starts_with('/') && !href.starts_with('#'))
        .collect();
    // The address with quotes in it stays one attribute's value (no handler was added above).
    let expected = ["https://example.com/\"onmouseover=\"alert('md-attr')", "https://example.com/docs"];
    assert_eq!(out, expected, "{path}: the only links out are to the web");
}

/// An agent's page opened at its newest session (without one it opens the operator's own).
async fn newest_chat(api: &kennel_tests::Api, agent: &str) -> String {
    let sessions = api.get(&format!("/api/agents/{agent}/sessions")).await;
    format!("/agents/{agent}?session={}", sessions.body[0]["id"].as_str().expect("a session"))
}

/// `path` with `?name=value` (or `&`), the value percent-encoded.
fn with_query(path: &str, name: &str, value: &str) -> String {
    let url = reqwest::Url::parse_with_params("http://x/", &[(name, value)]).expect("a URL");
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}{}", url.query().unwrap_or_default())
}

fn content_id(reply: &Reply, pointer: &str) -> String {
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.body["content"].pointer(pointer).and_then(Value::as_str).expect("an id").to_string()
}

#[tokio::test]
async fn hostile_text_in_every_stored_field_comes_back_as_text_on_every_page() {
    let corpus = corpus();
    let site = hostile_site(&corpus).await;
    // A webhook channel, whose strangers' messages and the agent's replies its page shows.
    let receiver = FakeWebhookReceiver::start(CHANNEL_SECRET).await;
    let config = format!(
        "[task_board]\nwake_assignee = false\n[a2a]\nexpose = [\"frontdesk\"]\npublic = [\"frontdesk\"]\n[providers.fake.models.tiny]\ncontext_tokens = 800\n[browser]\nexecutable = \"/usr/bin/chromium\"\nallowed_hosts = [\"{}\"]\n[channels]\nallowed_hosts = [\"127.0.0.1:*\"]\n[channels.hostile]\nkind = \"webhook\"\nagent = \"listener\"\nsigning_secret_env = \"KENNEL_TEST_CHANNEL_SECRET\"\nbase_url = \"{}\"\n",
        site.authority(),
        receiver.url()
    );
    let (home, d, api, llm) =
        daemon_with_llm_and_env("openai", &config, &[("KENNEL_TEST_CHANNEL_SECRET", CHANNEL_SECRET)]).await;
    let b = d.browser();

    // Operator names are names: refused, and the refusal shows the text as text.
    let refused = b.set_up(&corpus, "correct horse").await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    check_reply("/setup refusing a hostile name", &refused, Shows::All);
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);

    // Canvases: titles and HTML from the agent (one version through a turn, so the chat shows
    // its card), each payload a title; the HTML only ever in the sandboxed frame.
    let painter = agent_from(&api, json!({"name": "painter", "model": "m", "tools": ["canvas_present"]})).await;
    llm.push(Scripted::call("canvas_present", json!({"html": corpus, "title": PAYLOADS[0]})))
        .push(Scripted::text("shown"));
    let painted =
        b.submit(&format!("/agents/{painter}"), &format!("/agents/{painter}/chat"), &[("message", "draw")]).await;
    let canvas_chat = painted.header("location").unwrap().split('#').next().unwrap().to_string();
    // The audit links the turn's call to the chat it was made in.
    let audit = b.get(&format!("/audit?agent={painter}&tool=canvas_*")).await.text;
    assert!(audit.contains(&format!("href=\"/agents/{painter}?session=")), "{audit}");
    for title in &TITLES[1..] {
        let shown = api.invoke(&painter, "canvas_present", json!({"html": corpus, "title": title})).await;
        assert_eq!(shown.status, 200, "{}", shown.text);
    }
    let overridden = api.invoke(&painter, "canvas_present", json!({"html": corpus, "title": PAYLOADS.last()})).await;
    assert!(overridden.text.contains("bidirectional"), "{}", overridden.text);

    // A failed turn: the provider's error body is stored with the session and shown in it.
    let failing = agent_from(&api, json!({"name": "failing", "model": "m"})).await;
    llm.push(Scripted::Error { status: 400, body: corpus.clone(), retry_after: None });
    let failed =
        b.submit(&format!("/agents/{failing}"), &format!("/agents/{failing}/chat"), &[("message", &corpus)]).await;
    check_reply("a refused chat, its draft kept", &failed, Shows::All);
    let overview = check(&b, "/", Shows::Nothing).await;
    assert!(overview.text.contains(PAYLOADS[0]), "the provider's last failure, as text");
    let provider = check(&b, "/providers/fake", Shows::Nothing).await;
    assert!(provider.text.contains(PAYLOADS[0]), "the provider's page: its last failure, as text");
    // A provider test: the model's answer (its start) is quoted in the notice the page shows.
    llm.push(Scripted::text(&corpus));
    let tested = b.submit("/providers/fake", "/providers/fake/test", &[("model", ""), ("back", "page")]).await;
    assert_eq!(tested.status, 303, "{}", tested.text);
    check(&b, "/providers/fake", Shows::First).await;

    // Workspace files: names from an agent (written to its folder as a tool would), one per
    // payload (a name holds no `/`), and a text file holding the corpus.
    let keeper = agent_from(&api, json!({"name": "keeper", "model": "m"})).await;
    let folder = home.path().join("workspaces").join(&keeper);
    std::fs::create_dir_all(folder.join(file_name(PAYLOADS[1]))).unwrap();
    std::fs::write(folder.join(file_name(PAYLOADS[1])).join("inner.txt"), &corpus).unwrap();
    for payload in PAYLOADS {
        std::fs::write(folder.join(format!("{}.txt", file_name(payload))), &corpus).unwrap();
    }

    // A knowledge graph: every name, type, attribute key and value and relation type is the
    // agent's text (the picture's labels are SVG text, its links carry names in their query).
    let scholar = agent_from(&api, json!({"name": "scholar", "model": "m", "tools": ["knowledge.*"]})).await;
    for (i, payload) in TITLES.iter().enumerate() {
        // The override no title takes is an attribute's value (shown in the entity table).
        let attributes = json!({ *payload: corpus, "plain": payload, "override": PAYLOADS.last() });
        let added = api
            .invoke(
                &scholar,
                "knowledge_add_entity",
                json!({"name": payload, "type": payload, "attributes": attributes}),
            )
            .await;
        assert_eq!(added.status, 200, "{}", added.text);
        if i > 0 {
            let args = json!({"from": TITLES[i - 1], "to": payload, "type": payload});
            assert_eq!(api.invoke(&scholar, "knowledge_add_relation", args).await.status, 200);
        }
    }

    // Channels: strangers name themselves and their groups and write the messages; the agent's
    // replies go back out. Two conversations, each a turn (answered before the script goes on).
    agent_from(&api, json!({"name": "listener", "model": "m"})).await;
    for (i, chat) in [PAYLOADS[0], PAYLOADS[5]].into_iter().enumerate() {
        llm.push(Scripted::text(&corpus));
        let body = json!({"id": format!("m{i}"), "chat_id": chat, "title": corpus, "group": true, "text": corpus,
            "user": {"id": chat, "name": corpus, "username": corpus}})
        .to_string();
        let req = d
            .anonymous()
            .request(reqwest::Method::POST, "/channels/hostile/inbound")
            .headers(signed(CHANNEL_SECRET, body.as_bytes()))
            .body(body);
        assert_eq!(kennel_tests::Api::send(req).await.status, 200);
        assert!(
            eventually(Duration::from_secs(10), || async { receiver.posts().len() > i }).await,
            "the reply to conversation {i} was sent"
        );
    }

    // The owner inbox: each payload a note's reason, the corpus its summary.
    let herald = agent_from(&api, json!({"name": "herald", "model": "m", "tools": ["notify_owner"]})).await;
    for payload in TITLES {
        let noted = api.invoke(&herald, "notify_owner", json!({"reason": payload, "summary": corpus})).await;
        assert_eq!(noted.status, 200, "{}", noted.text);
    }

    // A question from `ask_user` waiting in a chat: its text and choices (button values) are
    // the model's; the agent page shows it while the turn waits.
    let inquirer = agent_from(&api, json!({"name": "inquirer", "model": "m", "tools": ["ask_user"]})).await;
    llm.push(Scripted::call("ask_user", json!({"question": corpus, "choices": PAYLOADS[..10]})))
        .push(Scripted::text("answered"));
    let asking = std::sync::Arc::new(d.browser());
    assert_eq!(asking.sign_in("ada", "correct horse").await.status, 303);
    let inquirer_page = format!("/agents/{inquirer}");
    let waiting_chat = {
        let (asking, page) = (asking.clone(), inquirer_page.clone());
        tokio::spawn(async move { asking.submit(&page, &format!("{page}/chat"), &[("message", "ask me")]).await })
    };
    let asked = eventually(Duration::from_secs(10), || async {
        api.get("/api/questions").await.body.as_array().is_some_and(|q| !q.is_empty())
    })
    .await;
    assert!(asked, "the question waits");
    let question_page = check(&b, &inquirer_page, Shows::All).await;
    assert!(
        question_page
            .tags
            .iter()
            .any(|(t, a)| t == "button" && a.get("value").map(String::as_str) == Some(PAYLOADS[5]))
    );
    let question = api.get("/api/questions").await.body[0]["id"].as_str().unwrap().to_string();
    let answered = api.post(&format!("/api/questions/{question}/answer"), json!({"answer": corpus})).await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    assert_eq!(waiting_chat.await.unwrap().status, 303);

    // A skill: its description, tags, label, body, support file names and history diffs are
    // all an agent's text.
    let sage = agent_from(&api, json!({"name": "sage", "model": "m", "tools": ["skills.*"]})).await;
    let manifest = json!({"description": corpus, "version": PAYLOADS[0], "tags": PAYLOADS});
    let created = api
        .invoke(&sage, "skill_evolve_create", json!({"name": "hostile", "manifest": manifest, "body": corpus}))
        .await;
    assert_eq!(created.status, 200, "{}", created.text);
    let patched =
        api.invoke(&sage, "skill_evolve_patch", json!({"name": "hostile", "old": PAYLOADS[2], "new": corpus})).await;
    assert_eq!(patched.status, 200, "{}", patched.text);
    for payload in PAYLOADS {
        let path = format!("references/{}.md", file_name(payload));
        let written = api
            .invoke(&sage, "skill_evolve_write_file", json!({"skill": "hostile", "path": path, "body": corpus}))
            .await;
        assert_eq!(written.status, 200, "{}", written.text);
    }
    // Another agent's change to it is a proposal: its reason and diff show on both skill pages.
    let rival = agent_from(&api, json!({"name": "rival", "model": "m", "tools": ["skills.*"]})).await;
    let proposed = api
        .invoke(&rival, "skill_evolve_update", json!({"name": "hostile", "body": format!("{corpus}proposed")}))
        .await;
    assert_eq!(proposed.body["content"]["proposed"], true, "{}", proposed.text);

    // An agent with agents.*, tasks.* and schedule.* stores text through its tools, as in the
    // issue: agent_type_create with a system prompt that closes the textarea.
    let maker =
        agent_from(&api, json!({"name": "maker", "model": "m", "tools": ["agents.*", "tasks.*", "schedule.*"]})).await;
    // (A model name is at most 200 bytes: one payload.)
    let spec = json!({"name": "evil", "description": corpus, "system_prompt": corpus, "model": PAYLOADS[0]});
    assert_eq!(api.invoke(&maker, "agent_type_create", spec).await.status, 200);
    let bad_skill = api.invoke(&maker, "agent_type_create", json!({"name": "evil2", "skills": [corpus]})).await;
    assert_eq!(bad_skill.error_kind(), "InvalidArguments", "skills are names: {}", bad_skill.text);
    // Manifest blocks through the API.
    let blocks = json!({
        "name": "blocks", "description": corpus, "model": "m",
        "cron": [{"schedule": "0 3 * * *", "prompt": corpus}],
        "trigger": [{"event": "inbox.*", "prompt": corpus}],
    });
    let blocks_agent = agent_from(&api, blocks).await;
    // Through the dashboard's forms: the seven fields, the TOML, and a refused form that
    // shows back what was typed.
    let formed = b
        .submit(
            "/agent-types",
            "/agent-types",
            &[("name", "formed"), ("description", &corpus), ("system_prompt", &corpus)],
        )
        .await;
    assert_eq!(formed.status, 303, "{}", formed.text);
    let typed_back = b
        .submit(
            "/agent-types",
            "/agent-types",
            &[("name", &corpus), ("description", &corpus), ("system_prompt", &corpus), ("tools", &corpus)],
        )
        .await;
    assert_eq!(typed_back.status, 422);
    let typed_back = check_reply("/agent-types typing a hostile form back", &typed_back, Shows::All);
    assert_eq!(typed_back.textareas["system_prompt"], corpus, "the textarea holds exactly what was typed");
    let toml = format!(
        "name = \"tomled\"\ndescription = {0}\nsystem_prompt = {0}\n[[cron]]\nschedule = \"0 4 * * *\"\nprompt = {0}\n",
        serde_json::to_string(&corpus).unwrap()
    );
    let created = b.submit("/agent-types", "/agent-types", &[("name", "tomled")]).await;
    assert_eq!(created.status, 303);
    let replaced = b.submit("/agent-types/tomled", "/agent-types/tomled/toml", &[("toml", &toml)]).await;
    assert_eq!(replaced.status, 303, "{}", replaced.text);

    // A refused channel form shows back what was typed, the tool picker's typed grants too.
    let channel_fields: Vec<(&str, &str)> =
        ["name", "agent", "base_url", "token_env", "signing_secret_env", "default_target", "trusted_users"]
            .into_iter()
            .map(|field| (field, corpus.as_str()))
            .chain([("kind", "webhook")])
            .collect();
    let refused_channel = b.submit("/channels", "/channels", &channel_fields).await;
    assert_eq!(refused_channel.status, 422, "{}", refused_channel.text);
    check_reply("/channels typing a hostile form back", &refused_channel, Shows::All);

    // Agents: names are refused, goals are free text (API, form and goal_update).
    let bad_name = api.post("/api/agents", json!({"template": "evil", "name": corpus})).await;
    assert_eq!(bad_name.status, 422, "{}", bad_name.text);
    let bad_form = b.submit("/agents", "/agents", &[("template", "evil"), ("name", &corpus), ("goal", &corpus)]).await;
    assert_eq!(bad_form.status, 422);
    check_reply("/agents refusing a hostile name", &bad_form, Shows::All);
    let evil = api.post("/api/agents", json!({"template": "evil", "goal": corpus})).await;
    let evil = evil.body["id"].as_str().expect("spawned").to_string();
    let spawned = b.submit("/agents", "/agents", &[("template", "formed"), ("goal", &corpus)]).await;
    assert_eq!(spawned.status, 303);
    assert_eq!(api.invoke(&maker, "goal_update", json!({"goal": corpus})).await.status, 200);

    // Tasks: titles (at most 200 bytes: one payload each), bodies and results; from the API,
    // a tool and the board's form.
    let mut tasks = Vec::new();
    for payload in TITLES {
        let t = api.post("/api/tasks", json!({"title": payload, "body": corpus})).await;
        assert_eq!(t.status, 201, "{}", t.text);
        tasks.push(t.body["id"].as_str().unwrap().to_string());
    }
    let posted = api.invoke(&maker, "task_post", json!({"title": PAYLOADS[1], "body": corpus})).await;
    let by_tool = content_id(&posted, "/id");
    let claimed = api.invoke(&maker, "task_claim", json!({})).await;
    let done = content_id(&claimed, "/claimed/id");
    let completed = api.invoke(&maker, "task_complete", json!({"task_id": done, "result": corpus})).await;
    assert_eq!(completed.status, 200, "{}", completed.text);
    assert_eq!(b.submit("/tasks", "/tasks", &[("title", PAYLOADS[0]), ("body", &corpus)]).await.status, 303);
    // A refused task keeps the form as sent (every payload in the title is over its 200
    // characters), the problem shown next to the field.
    let long_title = corpus.repeat(2);
    let refused =
        b.submit("/tasks", "/tasks", &[("title", &long_title), ("body", &corpus), ("assignee", PAYLOADS[3])]).await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    check_reply("/tasks refusing a hostile task", &refused, Shows::All);
    // A refused grant on the inspector: the pattern is shown back next to the tool.
    let grant = b
        .submit(
            &format!("/tools?agent={maker}"),
            &format!("/agents/{maker}/grant"),
            &[("pattern", &corpus), ("back", &format!("/tools?agent={maker}&open=task_post"))],
        )
        .await;
    assert_eq!(grant.status, 422, "{}", grant.text);
    check_reply("/tools refusing a hostile grant", &grant, Shows::Nothing);

    // Schedules: a prompt from a tool, and a fire whose reply (the model's text) is hostile.
    let later = api.invoke(&maker, "schedule_create", json!({"when": "+1h", "prompt": corpus})).await;
    let later = content_id(&later, "/id");

    // Memory: keys and values of the key/value store, facts of the semantic store (each
    // payload in a sentence the extractor keeps), recalled into a turn shown in the chat.
    let rememberer =
        agent_from(&api, json!({"name": "rememberer", "model": "m", "tools": ["memory.*", "memory_semantic.*"]})).await;
    for payload in PAYLOADS {
        let key = api.invoke(&rememberer, "memory_store", json!({"key": payload, "value": corpus})).await;
        assert_eq!(key.status, 200, "{}", key.text);
        let fact = format!("The attacker typed {payload} into the shared memory notebook");
        let added = api.invoke(&rememberer, "memory_semantic_add", json!({"content": fact})).await;
        assert_eq!(added.status, 200, "{}", added.text);
    }
    llm.push(Scripted::text("noted"));
    let recalled = b
        .submit(
            &format!("/agents/{rememberer}"),
            &format!("/agents/{rememberer}/chat"),
            &[("message", "what did the attacker type into the notebook")],
        )
        .await;
    let recall_chat = recalled.header("location").unwrap().split('#').next().unwrap().to_string();
    // The turn runs after the redirect: its note of what it recalled comes a moment later.
    let noted = eventually(Duration::from_secs(10), || async {
        b.get(&recall_chat).await.text.contains("Recalled from long-term memory")
    })
    .await;
    assert!(noted, "the recall is noted in the chat");
    let chat = check(&b, &recall_chat, Shows::Nothing).await;

    // The browser: a page whose title and text are the corpus, read in a turn (the chat shows
    // the result) and listed with a screenshot on the agent's browser page.
    let surfer = agent_from(&api, json!({"name": "surfer", "model": "m", "tools": ["browser.*"]})).await;
    llm.push(Scripted::call("browser_navigate", json!({"url": site.as_str()})))
        .push(Scripted::calls(&[("browser_read_page", json!({})), ("browser_screenshot", json!({}))]))
        .push(Scripted::text("read"));
    let browsed = api.post(&format!("/api/agents/{surfer}/messages"), json!({"message": "read it"})).await;
    assert_eq!(browsed.status, 200, "{}", browsed.text);
    // The results are JSON in the chat (quotes escaped), so the first payload is the one to find.
    let surfer_chat = check(&b, &newest_chat(&api, &surfer).await, Shows::First).await;
    assert!(surfer_chat.tags.iter().any(|(t, a)| t == "img" && a.get("src").is_some_and(|s| s.contains("files/raw"))));
    check(&b, &format!("/agents/{surfer}/browser"), Shows::All).await;

    // Processes: a child that prints the corpus to both streams (the agent chose the command,
    // the program chose the output); its page shows both tails, then the kill's notice.
    let runner = agent_from(&api, json!({"name": "runner", "model": "m", "tools": ["process.*"]})).await;
    // The command itself carries the first payload too (in a comment, so the shell ignores it).
    let command = format!("printf '%s' \"$CORPUS\"; printf '%s' \"$CORPUS\" >&2; sleep 60 # {}", PAYLOADS[0]);
    let started = api.invoke(&runner, "process_start", json!({"command": command, "env": {"CORPUS": corpus}})).await;
    let process = started.body["content"]["process_id"].as_i64().expect(&started.text);
    let printed = kennel_tests::eventually(std::time::Duration::from_secs(5), || async {
        let view = api.get(&format!("/api/agents/{runner}/processes/{process}")).await;
        view.body["stderr_tail"].as_str().is_some_and(|t| t.len() >= corpus.len())
    })
    .await;
    assert!(printed, "the child printed the corpus");
    let processes = check(&b, &format!("/agents/{runner}/processes"), Shows::All).await;
    assert!(processes.text.contains("Kill"), "a running child has its kill button");
    let killed = b
        .submit(&format!("/agents/{runner}/processes"), &format!("/agents/{runner}/processes/{process}/kill"), &[])
        .await;
    assert_eq!(killed.status, 303, "{}", killed.text);
    let location = killed.header("location").expect("back to the processes page").to_string();
    let after = check(&b, &location, Shows::All).await;
    assert!(after.text.contains("Process ") && !after.text.contains("Kill"), "ended, with its output kept");
    assert!(chat.text.contains("The attacker typed"), "recalled, as text");
    let memory_page = check(&b, &format!("/agents/{rememberer}/memory"), Shows::All).await;
    assert!(memory_page.text.contains("The attacker typed"), "the facts, as text");
    check(&b, &with_query(&format!("/agents/{rememberer}/memory"), "q", &corpus), Shows::All).await;

    // Markdown: a reply and an inbox note written in it, rendered without any of its attacks.
    let writer = agent_from(&api, json!({"name": "writer", "model": "m", "tools": ["notify_owner"]})).await;
    llm.push(Scripted::text(MARKDOWN));
    let written = api.post(&format!("/api/agents/{writer}/messages"), json!({"message": "write"})).await;
    assert_eq!(written.status, 200, "{}", written.text);
    let writer_session = written.body["session_id"].as_str().expect("a session").to_string();
    let noted = api.invoke(&writer, "notify_owner", json!({"reason": "markdown", "summary": MARKDOWN})).await;
    assert_eq!(noted.status, 200, "{}", noted.text);

    // Chat: the operator's message, the model's text and tool calls (one to a tool whose name
    // is hostile), the tool results; all stored in the session.
    let chatty = agent_from(&api, json!({"name": "chatty", "model": "m", "tools": ["tasks.*"]})).await;
    llm.push(Scripted::ToolCalls {
        calls: vec![
            ("task_post".into(), json!({"title": PAYLOADS[2], "body": corpus})),
            (PAYLOADS[0].into(), json!({"x": corpus})),
        ],
        text: Some(corpus.clone()),
    })
    .push(Scripted::text(&corpus));
    let page = format!("/agents/{chatty}");
    let sent = b.submit(&page, &format!("/agents/{chatty}/chat"), &[("message", &corpus)]).await;
    assert_eq!(sent.status, 303, "{}", sent.text);
    let session = sent.header("location").unwrap().split('#').next().unwrap().to_string();

    llm.set_fallback(Scripted::text(&corpus));
    // A model named with hostile text: its calls are metered under that name.
    let odd_model = agent_from(&api, json!({"name": "oddmodel", "model": PAYLOADS[0]})).await;
    let metered = api.post(&format!("/api/agents/{odd_model}/messages"), json!({"message": "hi"})).await;
    assert_eq!(metered.status, 200, "{}", metered.text);
    // A compaction: the model's summary (hostile like every reply here) shown with its marker.
    let compactor = agent_from(&api, json!({"name": "compactor", "model": "tiny"})).await;
    let first =
        b.submit(&format!("/agents/{compactor}"), &format!("/agents/{compactor}/chat"), &[("message", &corpus)]).await;
    let compacted_chat = first.header("location").unwrap().split('#').next().unwrap().to_string();
    let compacted_session = compacted_chat.split("session=").nth(1).unwrap().split('&').next().unwrap().to_string();
    for _ in 0..2 {
        let more = api
            .post(
                &format!("/api/agents/{compactor}/messages"),
                json!({"message": corpus, "session": compacted_session}),
            )
            .await;
        assert_eq!(more.status, 200, "{}", more.text);
    }
    let detail = api.get(&format!("/api/sessions/{compacted_session}")).await;
    assert!(detail.body["compactions"][0]["summary"].as_str().unwrap().starts_with(PAYLOADS[0]), "{}", detail.text);
    let soon = api.invoke(&maker, "schedule_create", json!({"when": "+1s", "prompt": corpus})).await;
    let soon = content_id(&soon, "/id");
    let fired = eventually(Duration::from_secs(10), || async {
        let s = api.get(&format!("/api/schedules/{soon}")).await;
        s.body["fires"][0]["outcome"].as_str().is_some_and(|o| o != "running")
    })
    .await;
    assert!(fired, "the schedule fired");

    // Workflow steps: no page lists workflows yet, but a step's prompt (inputs filled in) and
    // its reply are the step agent's session, which that agent's page shows.
    api.post("/api/templates", json!({"name": "stepper", "model": "m"})).await;
    let step = json!({"agent_type": "stepper", "prompt": format!("{corpus} {{{{inputs.topic}}}}")});
    let wf = api.post("/api/workflows", json!({"name": "hostile", "description": corpus, "steps": [step]})).await;
    assert_eq!(wf.status, 201, "{}", wf.text);
    let runs = format!("/api/workflows/{}/runs", wf.body["id"].as_str().unwrap());
    let run = api.post(&runs, json!({"inputs": {"topic": corpus}})).await;
    assert_eq!(run.body["status"], "succeeded", "{}", run.text);
    let agents = api.get("/api/agents?ephemeral=true").await;
    let stepper = agents.body.as_array().unwrap().iter().find(|a| a["agent_type"] == "stepper").expect("step agent");
    let stepper = stepper["id"].as_str().unwrap().to_string();
    let step_session = api.get(&format!("/api/agents/{stepper}/sessions")).await.body[0]["id"].clone();
    let step_page = format!("/agents/{stepper}?session={}", step_session.as_str().expect("a session"));

    // A2A: a remote client's message and context id (the session's label), and the reply. A
    // caller with a token names its own contexts (one without continues only the agent's).
    let frontdesk = agent_from(&api, json!({"name": "frontdesk", "model": "m"})).await;
    let message = json!({ "message": { "messageId": "m", "role": "ROLE_USER", "contextId": PAYLOADS[0], "parts": [{ "text": corpus }] } });
    let sent = api.rpc("/a2a/frontdesk", "SendMessage", message, Some("1.0")).await;
    assert_eq!(sent.body["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{}", sent.text);
    let a2a_session = api.get(&format!("/api/agents/{frontdesk}/sessions")).await.body[0]["id"].clone();
    let a2a_page = format!("/agents/{frontdesk}?session={}", a2a_session.as_str().expect("a session"));
    check(&b, &newest_chat(&api, &frontdesk).await, Shows::First).await;
    // An API client's session key (the session's label), on another agent's page.
    let keyholder = agent_from(&api, json!({"name": "keyholder", "model": "m"})).await;
    let keyed = json!({"message": corpus, "session": PAYLOADS[0]});
    let keyed = api.post(&format!("/api/agents/{keyholder}/messages"), keyed).await;
    assert_eq!(keyed.status, 200, "{}", keyed.text);
    check(&b, &newest_chat(&api, &keyholder).await, Shows::First).await;

    // Canvases and workspace files.
    check(&b, &format!("/canvas/{painter}/1"), Shows::Titles).await;
    check(&b, &canvas_chat, Shows::First).await;
    let canvases = check(&b, "/canvas", Shows::Nothing).await;
    assert!(canvases.text.contains(TITLES[TITLES.len() - 1]), "the latest title, as text");
    let painter_page = check(&b, &format!("/agents/{painter}"), Shows::Nothing).await;
    assert!(painter_page.text.contains(TITLES[TITLES.len() - 1]), "the version list, as text");
    let frame = b.get(&format!("/canvas/{painter}/1/frame")).await;
    let (prelude, served) = frame.text.split_once("</script>").expect("the canvas prelude comes first");
    assert!(prelude.starts_with("<script>(() =>"), "{prelude}");
    assert_eq!(served, corpus, "after its prelude, the frame serves the agent's HTML as it is, in its sandbox");
    assert!(frame.header("content-security-policy").unwrap().starts_with("sandbox allow-scripts;"));
    // The knowledge graph: the whole of it, each entity's neighbourhood, and a name that is not there.
    let graph = format!("/agents/{scholar}/knowledge");
    let whole = check(&b, &graph, Shows::All).await;
    assert_eq!(whole.tags.iter().filter(|(n, _)| n == "circle").count(), TITLES.len(), "every entity drawn");
    for payload in TITLES {
        check(&b, &with_query(&graph, "entity", payload), Shows::All).await;
    }
    let missing = b.get(&with_query(&graph, "entity", &corpus)).await;
    assert_eq!(missing.status, 404, "{}", missing.text);
    check_reply("a knowledge graph without that entity", &missing, Shows::All);

    // Usage: a model's name is free text (printable), shown per model on the Usage page.
    check(&b, "/inbox", Shows::All).await;
    check(&b, "/channels", Shows::Nothing).await;
    check(&b, "/channels/hostile", Shows::All).await;
    check(&b, "/skills", Shows::All).await;
    let skill = check(&b, "/skills/hostile", Shows::All).await;
    assert!(skill.text.contains("by agent rival"), "the proposal is listed: {}", skill.text);
    for payload in PAYLOADS {
        assert!(skill.text.contains(&file_name(payload)), "the support file named {payload:?} is listed as text");
    }
    // The cluster page: this daemon, the agents it holds by name (a hostile host name a
    // daemon writes into the shared database: `cluster::…hostile…`).
    check(&b, "/cluster", Shows::Nothing).await;
    let usage = check(&b, "/usage", Shows::Nothing).await;
    assert!(usage.text.contains(&format!("fake / {}", PAYLOADS[0])), "the model's name, as text");
    check(&b, "/", Shows::Nothing).await;
    let compacted = check(&b, &compacted_chat, Shows::All).await;
    assert!(compacted.text.contains("Compacted to fit the context window"), "the marker shows");
    let failure = check(&b, &format!("/agents/{failing}"), Shows::All).await;
    assert!(failure.textareas["message"].is_empty(), "reopened: the failure shows, the box is empty");
    let files = check(&b, &format!("/agents/{keeper}"), Shows::Nothing).await;
    for payload in PAYLOADS {
        assert!(files.text.contains(&format!("{}.txt", file_name(payload))), "{payload:?} listed as text");
    }
    let inner = format!("{}/inner.txt", file_name(PAYLOADS[1]));
    for path in [inner.as_str(), &format!("{}.txt", file_name(PAYLOADS[0]))] {
        check(&b, &with_query(&format!("/agents/{keeper}/files/view"), "path", path), Shows::All).await;
    }

    // Token names are names: refused on the settings page, which shows the text as text.
    let token = b.submit("/settings", "/settings/tokens", &[("name", &corpus)]).await;
    assert_eq!(token.status, 422, "{}", token.text);
    check_reply("/settings refusing a hostile token name", &token, Shows::All);

    // Applying a type: the preview shows an agent's hostile prompt and grants before the
    // type's new ones.
    let drift = json!({"name": "drift", "model": "m", "system_prompt": corpus, "description": corpus});
    agent_from(&api, drift).await;
    let replaced =
        api.put("/api/templates/drift", json!({"name": "drift", "model": PAYLOADS[1], "system_prompt": "plain"})).await;
    assert_eq!(replaced.status, 200, "{}", replaced.text);
    check(&b, "/agent-types/drift/apply", Shows::All).await;
    check(&b, "/agent-types/drift", Shows::Nothing).await;

    // Operator actions: a stop of an agent named by each payload is refused, and the log
    // keeps the name it was asked for and the refusal's message.
    for payload in PAYLOADS {
        let mut url = reqwest::Url::parse("http://x/agents").expect("a URL");
        url.path_segments_mut().expect("a path").push(payload).push("stop");
        assert_eq!(b.submit("/agents", url.path(), &[]).await.status, 404, "{payload:?}");
    }
    check(&b, "/audit/actions", Shows::All).await;
    check(&b, &with_query("/audit/actions", "actor", &corpus), Shows::All).await;

    // Every page.
    let evil_type = check(&b, "/agent-types/evil", Shows::All).await;
    assert_eq!(evil_type.textareas["system_prompt"], corpus, "the agent's prompt, exactly, as text");
    assert!(evil_type.textareas["toml"].contains(PAYLOADS[0]), "{}", evil_type.textareas["toml"]);
    for path in ["/agent-types", "/agent-types/formed", "/agent-types/tomled", "/agent-types/blocks"] {
        check(&b, path, Shows::All).await;
    }
    let chat = check(&b, &session, Shows::All).await;
    check_markdown(&b, &format!("/agents/{writer}?session={writer_session}")).await;
    check_markdown(&b, "/inbox").await;
    assert!(chat.textareas.contains_key("message"), "the chat form is there");
    check(&b, &format!("/agents/{blocks_agent}"), Shows::First).await;
    check(&b, &format!("/tools?agent={chatty}"), Shows::Nothing).await;
    check(&b, "/", Shows::First).await;
    check(&b, "/audit", Shows::First).await;
    for path in [
        "/agents".to_string(),
        format!("/agents/{evil}"),
        format!("/agents/{maker}"),
        format!("/tasks/{by_tool}"),
        format!("/tasks/{done}"),
        "/schedules".into(),
        format!("/schedules/{later}"),
        format!("/schedules/{later}/delete"),
        format!("/schedules/{soon}"),
        step_page,
        a2a_page,
    ] {
        check(&b, &path, Shows::All).await;
    }
    check(&b, "/tasks", Shows::Titles).await;
    for id in &tasks {
        check(&b, &format!("/tasks/{id}"), Shows::All).await;
    }
    // A tool's result on the inspector's "try it": stored titles, as JSON.
    let tried =
        b.submit("/tools", "/tools/task_list/try", &[("agent", &chatty), ("args", r#"{"status": "pending"}"#)]).await;
    assert_eq!(tried.status, 200, "{}", tried.text);
    assert!(tried.text.contains("id=\"try-result\""));
    check_reply("a try-it result", &tried, Shows::First);
    // Text from the request itself: filters, an unknown id on an error page. A `?notice=`
    // shows nothing (notices come only from this session's own redirects).
    for path in ["/", "/agents", "/agent-types", "/tools", "/tasks", "/schedules", "/usage", "/audit", "/settings"] {
        check(&b, &with_query(path, "notice", &corpus), Shows::Nothing).await;
    }
    check(&b, &with_query("/tools", "q", &corpus), Shows::All).await;
    check(&b, &with_query("/audit", "tool", &corpus), Shows::All).await;
    check(&b, &with_query("/audit/actions", "action", &corpus), Shows::All).await;
    check(&b, &with_query("/tasks", "text", &corpus), Shows::All).await;
    let missing = b.get(&format!("/agents/{}", with_query("", "x", PAYLOADS[0]).trim_start_matches("?x="))).await;
    assert_eq!(missing.status, 404, "{}", missing.text);
    check_reply("an error page naming a hostile id", &missing, Shows::First);
}

/// An approval shows a stranger's and a model's words: the stranger's id in the turn's
/// provenance, the arguments the model wrote, a decider's note. The Approvals page and the
/// Inbox's link to it show them as text, waiting and decided.
#[tokio::test]
async fn hostile_text_in_an_approval_comes_back_as_text() {
    let receiver = FakeWebhookReceiver::start(CHANNEL_SECRET).await;
    let config = format!(
        "[channels]\nallowed_hosts = [\"127.0.0.1:*\"]\n[channels.hook]\nkind = \"webhook\"\nagent = \"poster\"\n\
         signing_secret_env = \"KENNEL_TEST_SECRET\"\nbase_url = \"{}\"\n[[approvals.rule]]\ntools = [\"task_post\"]\n",
        receiver.url()
    );
    let (_home, d, api, llm) =
        daemon_with_llm_and_env("openai", &config, &[("KENNEL_TEST_SECRET", CHANNEL_SECRET)]).await;
    agent_from(&api, json!({"name": "poster", "model": "m", "tools": ["task_post"]})).await;
    let b = d.browser();
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);
    let corpus = corpus();
    llm.push_all([Scripted::call("task_post", json!({"title": "t", "body": corpus})), Scripted::text("ok")]);
    let body = json!({"id": "h1", "chat_id": "room", "text": corpus, "user": {"id": PAYLOADS[0], "name": PAYLOADS[1]}});
    let body = body.to_string();
    let req = d
        .anonymous()
        .request(reqwest::Method::POST, "/channels/hook/inbound")
        .header("content-type", "application/json")
        .headers(signed(CHANNEL_SECRET, body.as_bytes()))
        .body(body);
    assert_eq!(kennel_tests::Api::send(req).await.status, 200);
    let waiting = eventually(Duration::from_secs(10), || async {
        api.get("/api/approvals?status=pending").await.body.as_array().is_some_and(|a| a.len() == 1)
    })
    .await;
    assert!(waiting, "the call waits for approval");
    // The arguments are JSON (quotes escaped), so the first payload is the one shown whole.
    check(&b, "/approvals", Shows::First).await;
    check(&b, "/inbox", Shows::Nothing).await;
    let id = api.get("/api/approvals").await.body[0]["id"].as_str().unwrap().to_string();
    let note = PAYLOADS[..6].join(" ");
    let denied = b.submit("/approvals", &format!("/approvals/{id}/deny"), &[("note", &note)]).await;
    assert_eq!(denied.status, 303, "{}", denied.text);
    let page = check(&b, "/approvals?status=denied", Shows::First).await;
    for payload in &PAYLOADS[..6] {
        assert!(page.text.contains(payload), "the note shows {payload:?} as text");
    }
}

/// What MCP servers and script manifests bring (tool names, descriptions, stderr, errors) is
/// outside text too: the MCP page and the Tools inspector show it as text.
#[tokio::test]
async fn hostile_text_from_an_mcp_server_and_a_script_manifest_comes_back_as_text() {
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/python_server.py");
    // A second server whose command is the corpus: it cannot start, and its error, which
    // quotes the command, lands in the page's "Recent errors".
    let config = format!(
        "[mcp.servers.hostile]\ncommand = \"{}\"\nargs = [\"{}\"]\nenv = {{ KENNEL_PEER_HOSTILE = {}, KENNEL_PEER_NAME = {} }}\n\
         [mcp.servers.unstartable]\ncommand = {}\n",
        crate::mcp::python(),
        script.display(),
        toml_string(&serde_json::to_string(PAYLOADS).unwrap()),
        toml_string(&corpus()),
        toml_string(&corpus())
    );
    let home = kennel_tests::Home::with_config(&config);
    let tools = home.path().join("tools/script/hostile");
    std::fs::create_dir_all(&tools).unwrap();
    let manifest = format!("description = {}\nrun = \"run.sh\"\n", toml_string(&corpus()));
    std::fs::write(tools.join("tool.toml"), manifest).unwrap();
    std::fs::write(tools.join("run.sh"), "#!/bin/sh\ncat\n").unwrap();
    std::fs::set_permissions(tools.join("run.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let d = home.start().await;
    let b = d.browser();
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);
    let connected =
        eventually(Duration::from_secs(30), || async { b.get("/mcp").await.text.contains("data-state=\"connected\"") })
            .await;
    assert!(connected, "{}", b.get("/mcp").await.text);
    let failed =
        eventually(Duration::from_secs(10), || async { b.get("/mcp").await.text.contains("cannot start") }).await;
    assert!(failed, "{}", b.get("/mcp").await.text);
    let mcp_page = check(&b, "/mcp", Shows::All).await;
    assert!(mcp_page.text.contains(&format!("cannot start `{}`", corpus())), "the error is shown as text");
    for payload in PAYLOADS {
        // Every tool's description, the server's name from its handshake, its tool's own
        // name, and its line on stderr.
        let shown = mcp_page.text.matches(payload).count();
        assert!(shown >= PAYLOADS.len() + 3, "{payload:?} shown {shown} times");
    }
    // The tool left out for taking the first one's mapped name: the reason names both.
    assert!(mcp_page.text.contains(&format!("tools `{}` and `", PAYLOADS[0])), "the clash is listed as text");
    assert!(
        eventually(Duration::from_secs(10), || async { b.get("/tools").await.text.contains("script_hostile") }).await
    );
    check(&b, "/tools", Shows::All).await;
    // The agent-type editor's tool picker lists the same tools with their descriptions.
    check(&b, "/agent-types", Shows::All).await;
}

/// `text` as a TOML basic string: JSON's string escapes are TOML's.
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}
