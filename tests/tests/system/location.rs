//! `location_get` through the daemon: an agent type's own location wins; otherwise a local
//! server speaking ip-api.com's JSON answers, once per `cache_secs`; with neither, a plain
//! `Unavailable`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::routing::get;
use serde_json::json;

#[tokio::test]
async fn an_agent_types_location_wins_and_without_one_or_a_provider_it_is_unavailable() {
    let (_home, _daemon, api) = crate::daemon_with_config("").await;
    let placed = json!({"name": "placed", "tools": ["location_get"],
        "location": {"latitude": 52.52, "longitude": 13.405, "place": "Berlin", "timezone": "Europe/Berlin"}});
    let placed = crate::agent_from(&api, placed).await;
    let here = api.invoke(&placed, "location_get", json!({})).await;
    assert_eq!(here.status, 200, "{}", here.text);
    assert_eq!(
        here.body["content"],
        json!({"latitude": 52.52, "longitude": 13.405, "place": "Berlin", "timezone": "Europe/Berlin", "source": "agent type"})
    );
    let nowhere = crate::agent_with(&api, "nowhere", &["location_get"]).await;
    let unknown = api.invoke(&nowhere, "location_get", json!({})).await;
    assert_eq!((unknown.status, unknown.error_kind()), (503, "Unavailable"), "{}", unknown.text);
    assert!(unknown.error_message().contains("[location] provider_url"), "{}", unknown.text);

    let bad = api
        .post(
            "/api/templates",
            json!({"name": "lost", "location": {"latitude": 91.0, "longitude": 0.0, "timezone": "Mars/Olympus"}}),
        )
        .await;
    assert_eq!(bad.status, 422, "{}", bad.text);
    let fields: Vec<&str> =
        bad.body["error"]["fields"].as_array().unwrap().iter().map(|f| f["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["location.latitude", "location.timezone"]);
}

#[tokio::test]
async fn without_its_own_location_an_agent_asks_the_ip_provider_once_per_cache_period() {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let app = axum::Router::new().route(
        "/json",
        get(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            async {
                axum::Json(
                    json!({"status": "success", "country": "Germany", "regionName": "Hamburg", "city": "Hamburg",
                    "lat": 53.55, "lon": 9.99, "timezone": "Europe/Berlin", "query": "203.0.113.7"}),
                )
            }
        }),
    );
    let port = kennel_tests::serve_on_loopback(app).await;
    let config = format!(
        "[location]\nprovider_url = \"http://127.0.0.1:{port}/json\"\nallowed_hosts = [\"127.0.0.1:{port}\"]\ncache_secs = 3600\n"
    );
    let (_home, _daemon, api) = crate::daemon_with_config(&config).await;
    let agent = crate::agent_with(&api, "roamer", &["location_get"]).await;
    for _ in 0..2 {
        let here = api.invoke(&agent, "location_get", json!({})).await;
        assert_eq!(here.status, 200, "{}", here.text);
        assert_eq!(here.body["content"]["place"], "Hamburg, Hamburg, Germany");
        assert_eq!(
            (here.body["content"]["latitude"].as_f64(), here.body["content"]["source"].as_str()),
            (Some(53.55), Some("ip"))
        );
    }
    assert_eq!(asked.load(Ordering::SeqCst), 1, "the second answer came from the cache");
}
