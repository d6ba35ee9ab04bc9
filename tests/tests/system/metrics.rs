//! `GET /metrics`: parsed with the official Prometheus Python client's parser
//! (`tests/peers/parse_metrics.py`), behind an API token, and its counters move with a turn,
//! a tool call and a request.

use kennel_tests::Api;
use kennel_tests::fake_llm::Scripted;
use serde_json::{Value, json};

use crate::openai_compat::run_client;
use crate::{agent_from, daemon_with_llm, free_port, say};

/// The metrics as the parser read them: families by name.
async fn scrape(api: &Api) -> Value {
    let r = Api::send(api.request(reqwest::Method::GET, "/metrics")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("content-type"), Some("text/plain; version=0.0.4; charset=utf-8"));
    run_client("parse_metrics.py", &[], &r.text).await
}

/// The value of the sample `name` whose labels include `labels` (0 when there is none yet).
fn sample(families: &Value, family: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    let Some(samples) = families[family]["samples"].as_array() else { return 0.0 };
    samples
        .iter()
        .filter(|s| s["name"] == name && labels.iter().all(|(k, v)| s["labels"][*k] == *v))
        .map(|s| s["value"].as_f64().unwrap())
        .sum()
}

#[tokio::test]
async fn metrics_parse_with_the_official_parser_and_move_with_turns_tools_and_requests() {
    let (_home, daemon, api, llm) = daemon_with_llm("openai", "").await;
    let agent = agent_from(&api, json!({"name": "clock", "model": "gpt-test", "tools": ["system_time"]})).await;

    let refused = Api::send(daemon.anonymous().request(reqwest::Method::GET, "/metrics")).await;
    assert_eq!(refused.status, 401, "{}", refused.text);
    assert!(!refused.text.contains("kennel_"), "{}", refused.text);

    // Families without a series yet (no turn so far) are left out, as the format allows.
    let before = scrape(&api).await;
    for (family, kind) in [
        ("kennel_http_requests", "counter"),
        ("kennel_http_request_duration_seconds", "histogram"),
        ("kennel_live_streams", "gauge"),
        ("kennel_provider_queue_depth", "gauge"),
        ("kennel_tasks", "gauge"),
        ("kennel_agents", "gauge"),
        ("kennel_db_connections", "gauge"),
        ("kennel_processes", "gauge"),
        ("kennel_browser_contexts", "gauge"),
        ("kennel_cluster_daemons", "gauge"),
        ("kennel_schedule_fire_lateness_seconds", "histogram"),
    ] {
        assert_eq!(before[family]["type"], kind, "{family}: {:#}", before[family]);
        assert!(!before[family]["help"].as_str().unwrap().is_empty(), "{family} has no help");
    }
    assert_eq!(sample(&before, "kennel_agents", "kennel_agents", &[("state", "running")]), 1.0);
    assert_eq!(sample(&before, "kennel_cluster_daemons", "kennel_cluster_daemons", &[("state", "alive")]), 1.0);
    let pending =
        before["kennel_tasks"]["samples"].as_array().unwrap().iter().find(|s| s["labels"]["status"] == "pending");
    assert_eq!(pending.map(|s| s["value"].as_f64()), Some(Some(0.0)), "every status is listed, empty ones as 0");

    llm.set_usage(120, 0, 30);
    llm.push_all([Scripted::call("system_time", json!({})), Scripted::text("It is noon.")]);
    let reply = say(&api, &agent, None, "What time is it?").await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let posted = api.post("/api/tasks", json!({"title": "count me"})).await;
    assert_eq!(posted.status, 201, "{}", posted.text);

    // Made-up tool names and methods do not make series of their own.
    let made_up = api.invoke(&agent, "no_such_tool_49", json!({})).await;
    assert_eq!(made_up.status, 404, "{}", made_up.text);
    let odd = reqwest::Method::from_bytes(b"FROB49").unwrap();
    let _ = Api::send(api.request(odd, "/api/templates")).await;

    let after = scrape(&api).await;
    assert!(!after.to_string().contains("no_such_tool_49") && !after.to_string().contains("FROB49"), "{after:#}");
    let unknown = [("tool", "unknown"), ("outcome", "NotFound")];
    assert_eq!(sample(&after, "kennel_tool_calls", "kennel_tool_calls_total", &unknown), 1.0);
    let other = [("route", "/api/templates"), ("method", "other")];
    assert_eq!(sample(&after, "kennel_http_requests", "kennel_http_requests_total", &other), 1.0);
    for (family, kind) in [
        ("kennel_turns", "counter"),
        ("kennel_model_calls", "counter"),
        ("kennel_model_tokens", "counter"),
        ("kennel_tool_calls", "counter"),
        ("kennel_tool_call_duration_seconds", "histogram"),
    ] {
        assert_eq!(after[family]["type"], kind, "{family}: {:#}", after[family]);
    }
    let moved = |family: &str, name: &str, labels: &[(&str, &str)]| {
        sample(&after, family, name, labels) - sample(&before, family, name, labels)
    };
    assert_eq!(moved("kennel_turns", "kennel_turns_total", &[("agent", "clock"), ("outcome", "reply")]), 1.0);
    let model = [("provider", "fake"), ("model", "gpt-test"), ("outcome", "ok")];
    assert_eq!(moved("kennel_model_calls", "kennel_model_calls_total", &model), 2.0);
    let input = [("provider", "fake"), ("model", "gpt-test"), ("kind", "input")];
    assert_eq!(moved("kennel_model_tokens", "kennel_model_tokens_total", &input), 240.0);
    let tool = [("tool", "system_time"), ("outcome", "ok")];
    assert_eq!(moved("kennel_tool_calls", "kennel_tool_calls_total", &tool), 1.0);
    let timed = [("tool", "system_time")];
    assert_eq!(moved("kennel_tool_call_duration_seconds", "kennel_tool_call_duration_seconds_count", &timed), 1.0);
    assert_eq!(
        moved(
            "kennel_tool_call_duration_seconds",
            "kennel_tool_call_duration_seconds_bucket",
            &[("tool", "system_time"), ("le", "+Inf")]
        ),
        1.0
    );
    let route = [("route", "/api/agents/{id}/messages"), ("method", "POST"), ("status", "200")];
    assert_eq!(moved("kennel_http_requests", "kennel_http_requests_total", &route), 1.0);
    let scraped = [("route", "/metrics"), ("method", "GET"), ("status", "200")];
    assert_eq!(moved("kennel_http_requests", "kennel_http_requests_total", &scraped), 1.0);
    let refusal = [("route", "/metrics"), ("method", "GET"), ("status", "401")];
    assert_eq!(sample(&after, "kennel_http_requests", "kennel_http_requests_total", &refusal), 1.0);
    assert_eq!(sample(&after, "kennel_tasks", "kennel_tasks", &[("status", "pending")]), 1.0);
    let no_ids = after["kennel_http_requests"]["samples"].as_array().unwrap();
    assert!(no_ids.iter().all(|s| !s["labels"]["route"].as_str().unwrap().contains(&agent)), "a series per id");
}

/// `[metrics] listen`: a second address that serves `GET /metrics` without a token, and
/// nothing else; the daemon's own `/metrics` still asks for one.
#[tokio::test]
async fn metrics_listen_serves_the_metrics_alone_without_a_token() {
    let port = free_port();
    let config = format!("[metrics]\nlisten = \"127.0.0.1:{port}\"\n");
    let (_home, daemon, api, _llm) = daemon_with_llm("openai", &config).await;
    let open = kennel_kernel::net::http_client().build().unwrap();
    let base = format!("http://127.0.0.1:{port}");

    let r = open.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/plain; version=0.0.4; charset=utf-8");
    let families = run_client("parse_metrics.py", &[], &r.text().await.unwrap()).await;
    assert_eq!(sample(&families, "kennel_cluster_daemons", "kennel_cluster_daemons", &[("state", "alive")]), 1.0);

    // Nothing of the daemon's but the metrics answers there, with or without a token.
    for path in ["/api/templates", "/api/agents", "/healthz", "/", "/login", "/v1/models", "/metrics/x"] {
        let r = open.get(format!("{base}{path}")).bearer_auth(api.token()).send().await.unwrap();
        assert_eq!(r.status(), 404, "{path}");
        assert_eq!(r.text().await.unwrap(), "only GET /metrics is served here\n", "{path}");
    }
    let posted = open.post(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(posted.status(), 405);

    let refused = Api::send(daemon.anonymous().request(reqwest::Method::GET, "/metrics")).await;
    assert_eq!(refused.status, 401, "the daemon's own address still asks for a token: {}", refused.text);
}

/// A `[metrics] listen` address that is taken stops start-up, saying which setting it is.
#[tokio::test]
async fn a_taken_metrics_address_is_a_clear_error() {
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = holder.local_addr().unwrap();
    let home = kennel_tests::Home::with_config(&format!("[metrics]\nlisten = \"{addr}\"\n"));
    let out = home.cli(&["start", "--bind", "127.0.0.1:0"]).await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("cannot listen on {addr} ([metrics] listen in config.toml)")), "{stderr}");
}
