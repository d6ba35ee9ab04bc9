//! The knowledge graph (spec §12) on the real daemon: its tools through the pipeline (the
//! REST invoke endpoint and a model's turn), the REST API operators read it with, and the
//! dashboard's picture.

use kennel_tests::Home;
use kennel_tests::fake_llm::Scripted;
use serde_json::{Value, json};

use crate::{agent_from, agent_with, daemon, daemon_with_llm};

/// Names of the nodes a `knowledge_query` result reached, with their distances.
fn reached(content: &Value) -> Vec<(String, u64)> {
    content["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| (n["name"].as_str().unwrap().to_string(), n["distance"].as_u64().unwrap()))
        .collect()
}

fn pairs(list: &[(&str, u64)]) -> Vec<(String, u64)> {
    list.iter().map(|(n, d)| (n.to_string(), *d)).collect()
}

#[tokio::test]
async fn entities_upsert_relations_need_their_ends_and_a_walk_handles_cycles_filters_and_its_cap() {
    let (_home, _d, api) = daemon().await;
    let me = agent_with(&api, "librarian", &["knowledge.*"]).await;
    let add = |name: &'static str, kind: &'static str, attributes: Value| {
        let api = api.clone();
        let me = me.clone();
        async move {
            api.invoke(&me, "knowledge_add_entity", json!({"name": name, "type": kind, "attributes": attributes})).await
        }
    };

    let first = add("kennel", "project", json!({"lang": "rust", "stars": 3})).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.body["content"]["created"], true);
    let again = add("kennel", "product", json!({"stars": 4, "lang": null, "license": "Apache-2.0"})).await;
    assert_eq!(again.body["content"]["created"], false, "the same name is the same entity");
    assert_eq!(again.body["content"]["entity"]["type"], "product", "the type is replaced");
    assert_eq!(again.body["content"]["entity"]["attributes"], json!({"stars": 4, "license": "Apache-2.0"}), "merged");
    for (name, kind) in [("sqlx", "library"), ("tokio", "library"), ("axum", "library"), ("hyper", "library")] {
        assert_eq!(add(name, kind, json!({})).await.status, 200);
    }

    // No auto-create: an unknown end is NotFound, naming it and the tool that adds it.
    let ghost =
        api.invoke(&me, "knowledge_add_relation", json!({"from": "kennel", "to": "leptos", "type": "uses"})).await;
    assert_eq!((ghost.status, ghost.error_kind()), (404, "NotFound"), "{}", ghost.text);
    assert!(ghost.error_message().contains("`leptos`") && ghost.error_message().contains("knowledge_add_entity"));

    let relate = |from: &'static str, to: &'static str, kind: &'static str, weight: Option<f64>| {
        let api = api.clone();
        let me = me.clone();
        async move {
            let mut args = json!({"from": from, "to": to, "type": kind});
            if let Some(w) = weight {
                args["weight"] = json!(w);
            }
            let r = api.invoke(&me, "knowledge_add_relation", args).await;
            assert_eq!(r.status, 200, "{}", r.text);
            r.body["content"].clone()
        }
    };
    assert_eq!(relate("kennel", "sqlx", "uses", None).await["created"], true);
    assert_eq!(relate("kennel", "axum", "uses", None).await["relation"]["weight"], 1.0);
    let reweighed = relate("kennel", "axum", "uses", Some(0.25)).await;
    assert_eq!((reweighed["created"].clone(), reweighed["relation"]["weight"].clone()), (json!(false), json!(0.25)));
    // A cycle: axum → hyper → tokio → axum; and sqlx uses tokio.
    relate("axum", "hyper", "depends_on", None).await;
    relate("hyper", "tokio", "depends_on", None).await;
    relate("tokio", "axum", "depends_on", None).await;
    relate("sqlx", "tokio", "depends_on", None).await;

    let query = |args: Value| {
        let api = api.clone();
        let me = me.clone();
        async move { api.invoke(&me, "knowledge_query", args).await }
    };
    let around = query(json!({"start": "kennel", "depth": 4})).await;
    assert_eq!(around.status, 200, "{}", around.text);
    let c = &around.body["content"];
    assert_eq!(reached(c), pairs(&[("kennel", 0), ("sqlx", 1), ("axum", 1), ("hyper", 2), ("tokio", 2)]));
    assert_eq!(c["edges"].as_array().unwrap().len(), 6, "each relation once, the cycle ended: {c}");
    assert_eq!(c["truncated"], false);
    assert_eq!(c["nodes"][0]["attributes"]["license"], "Apache-2.0");

    // Which projects use axum: relations into it, of one type.
    let users = query(json!({"start": "axum", "direction": "in", "relation_filter": ["uses"]})).await;
    assert_eq!(reached(&users.body["content"]), pairs(&[("axum", 0), ("kennel", 1)]));
    let deps = query(json!({"start": "axum", "depth": 1, "relation_filter": ["depends_on"]})).await;
    assert_eq!(reached(&deps.body["content"]), pairs(&[("axum", 0), ("hyper", 1), ("tokio", 1)]));
    let default_depth = query(json!({"start": "hyper", "direction": "out"})).await;
    assert_eq!(default_depth.body["content"]["depth"], 2);
    assert_eq!(reached(&default_depth.body["content"]), pairs(&[("hyper", 0), ("tokio", 1), ("axum", 2)]));

    // Bounds, each refused before anything is stored.
    let deep = query(json!({"start": "kennel", "depth": 5})).await;
    assert_eq!((deep.status, deep.body["error"]["fields"][0]["field"].as_str()), (422, Some("depth")), "{}", deep.text);
    let nowhere = query(json!({"start": "Kennel"})).await;
    assert_eq!(nowhere.status, 404, "names are matched exactly: {}", nowhere.text);
    let long_name = "n".repeat(201);
    let cases = [
        (json!({"name": long_name, "type": "t"}), "name"),
        (json!({"name": "x", "type": "t".repeat(65)}), "type"),
        (json!({"name": "two\nlines", "type": "t"}), "name"),
        (json!({"name": "x", "type": "t", "attributes": {"blob": "b".repeat(8 * 1024)}}), "attributes"),
    ];
    for (args, field) in cases {
        let refused = api.invoke(&me, "knowledge_add_entity", args).await;
        assert_eq!(refused.status, 422, "{}", refused.text);
        assert_eq!(refused.body["error"]["fields"][0]["field"], field, "{}", refused.text);
    }
    let not_an_object =
        api.invoke(&me, "knowledge_add_entity", json!({"name": "x", "type": "t", "attributes": [1]})).await;
    assert_eq!(not_an_object.status, 422, "{}", not_an_object.text);
    let listed = api.get(&format!("/api/agents/{me}/knowledge/entities")).await;
    assert_eq!(listed.header("x-total-count"), Some("5"), "nothing refused was stored");
}

#[tokio::test]
async fn graphs_are_private_to_their_agent_need_the_grant_and_survive_a_restart() {
    let home = Home::new();
    let token = home.token("tests").await;
    let d = home.start().await;
    let api = d.api(&token);
    let ada = agent_with(&api, "ada", &["knowledge.*"]).await;
    let bob = agent_with(&api, "bob", &["knowledge_*"]).await;
    let none = agent_with(&api, "nobody", &["system_time"]).await;
    let added = api
        .invoke(&ada, "knowledge_add_entity", json!({"name": "secret", "type": "plan", "attributes": {"code": 42}}))
        .await;
    assert_eq!(added.status, 200, "{}", added.text);

    // Bob has a graph of his own: ada's entity is not in it, and his is not in hers.
    let peek = api.invoke(&bob, "knowledge_query", json!({"start": "secret"})).await;
    assert_eq!(peek.status, 404, "{}", peek.text);
    let link =
        api.invoke(&bob, "knowledge_add_relation", json!({"from": "secret", "to": "secret", "type": "is"})).await;
    assert_eq!(link.status, 404, "{}", link.text);
    let own = api.invoke(&bob, "knowledge_add_entity", json!({"name": "secret", "type": "other"})).await;
    assert_eq!(own.body["content"]["created"], true, "the same name is another entity for another agent");
    assert_eq!(api.get(&format!("/api/agents/{bob}/knowledge/entities")).await.body[0]["type"], "other");

    // Without a grant nothing runs.
    for (tool, args) in [
        ("knowledge_add_entity", json!({"name": "x", "type": "t"})),
        ("knowledge_add_relation", json!({"from": "x", "to": "x", "type": "t"})),
        ("knowledge_query", json!({"start": "secret"})),
    ] {
        let refused = api.invoke(&none, tool, args).await;
        assert_eq!((refused.status, refused.error_kind()), (403, "Forbidden"), "{tool}: {}", refused.text);
    }
    assert_eq!(api.get(&format!("/api/agents/{none}/knowledge/entities")).await.header("x-total-count"), Some("0"));

    let (code, stderr) = d.stop().await;
    assert_eq!(code, Some(0), "{stderr}");
    let d = home.start().await;
    let api = d.api(&token);
    let after = api.invoke(&ada, "knowledge_query", json!({"start": "secret", "depth": 0})).await;
    assert_eq!(after.status, 200, "{}", after.text);
    assert_eq!(after.body["content"]["nodes"][0]["attributes"], json!({"code": 42}), "kept through the restart");
    let audit = api.get(&format!("/api/audit?agent={ada}&tool=knowledge_add_entity")).await;
    assert_eq!(audit.body.as_array().unwrap().len(), 1, "{}", audit.text);
}

#[tokio::test]
async fn a_model_builds_and_recalls_its_graph_in_a_turn() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "rememberer", "model": "m", "tools": ["knowledge.*"]})).await;
    llm.push(Scripted::calls(&[
        ("knowledge_add_entity", json!({"name": "kennel", "type": "project"})),
        ("knowledge_add_entity", json!({"name": "sqlx", "type": "library"})),
    ]))
    .push(Scripted::call("knowledge_add_relation", json!({"from": "kennel", "to": "sqlx", "type": "uses"})))
    .push(Scripted::call("knowledge_query", json!({"start": "sqlx", "direction": "in"})))
    .push(Scripted::text("kennel uses sqlx."));
    let turn = api.post(&format!("/api/agents/{id}/messages"), json!({"message": "remember and recall"})).await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    let outcomes: Vec<&str> =
        turn.body["trace"].as_array().unwrap().iter().map(|t| t["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["ok", "ok", "ok", "ok"], "{}", turn.text);
    let sent = llm.requests();
    assert!(sent[0].tool_names().contains(&"knowledge_query".to_string()), "offered to the model");
    let last = sent.last().unwrap().body["messages"].as_array().unwrap().last().unwrap().clone();
    let result: Value = serde_json::from_str(last["content"].as_str().unwrap()).unwrap();
    assert_eq!(reached(&result), pairs(&[("sqlx", 0), ("kennel", 1)]), "the model got the walk");
}

#[tokio::test]
async fn operators_page_through_the_graph_and_walk_it_over_rest() {
    let (_home, _d, api) = daemon().await;
    let me = agent_with(&api, "mapper", &["knowledge.*"]).await;
    for name in ["a", "b", "c"] {
        api.invoke(&me, "knowledge_add_entity", json!({"name": name, "type": "node"})).await;
    }
    for (from, to, kind) in [("a", "b", "next"), ("b", "c", "next"), ("a", "c", "skip")] {
        api.invoke(&me, "knowledge_add_relation", json!({"from": from, "to": to, "type": kind})).await;
    }

    let first = api.get(&format!("/api/agents/{me}/knowledge/entities?limit=2")).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.header("x-total-count"), Some("3"));
    let names: Vec<&str> = first.body.as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b"]);
    let next = first.header("link").unwrap().trim_start_matches('<').split('>').next().unwrap().to_string();
    let rest = api.get(&next).await;
    assert_eq!(rest.body[0]["name"], "c");
    assert!(rest.header("link").is_none());
    // By name too, like every agent route.
    let relations = api.get("/api/agents/mapper/knowledge/relations").await;
    assert_eq!(relations.header("x-total-count"), Some("3"));
    assert_eq!(
        relations.body[2],
        json!({"from": "a", "to": "c", "type": "skip", "weight": 1.0,
        "created_at": relations.body[2]["created_at"], "updated_at": relations.body[2]["updated_at"]})
    );

    let walk =
        api.get(&format!("/api/agents/{me}/knowledge/query?start=a&depth=1&relation=next&relation=nothing")).await;
    assert_eq!(walk.status, 200, "{}", walk.text);
    assert_eq!(reached(&walk.body), pairs(&[("a", 0), ("b", 1)]));
    let all = api.get(&format!("/api/agents/{me}/knowledge/query?start=c&direction=in")).await;
    assert_eq!(reached(&all.body), pairs(&[("c", 0), ("b", 1), ("a", 1)]));
    let same_as_the_tool = api.invoke(&me, "knowledge_query", json!({"start": "c", "direction": "in"})).await;
    assert_eq!(same_as_the_tool.body["content"], all.body, "one service for both");

    for (path, status) in [
        ("/api/agents/ghost/knowledge/entities".to_string(), 404),
        ("/api/agents/ghost/knowledge/query?start=a".into(), 404),
        (format!("/api/agents/{me}/knowledge/query?start=zz"), 404),
        (format!("/api/agents/{me}/knowledge/query"), 422),
        (format!("/api/agents/{me}/knowledge/query?start=a&depth=9"), 422),
        (format!("/api/agents/{me}/knowledge/query?start=a&depth=deep"), 422),
        (format!("/api/agents/{me}/knowledge/query?start=a&direction=sideways"), 422),
        (format!("/api/agents/{me}/knowledge/entities?cursor=abc"), 422),
    ] {
        let r = api.get(&path).await;
        assert_eq!(r.status, status, "{path}: {}", r.text);
        assert!(r.body["error"]["kind"].is_string(), "{path}: {}", r.text);
    }
    let many: String = (0..33).map(|i| format!("&relation=r{i}")).collect();
    let refused = api.get(&format!("/api/agents/{me}/knowledge/query?start=a{many}")).await;
    assert_eq!((refused.status, refused.body["error"]["fields"][0]["field"].as_str()), (422, Some("relation")));
}

#[tokio::test]
async fn the_dashboard_draws_the_graph_and_each_entitys_neighbourhood() {
    let (_home, d, api) = daemon().await;
    let me = agent_with(&api, "drawer", &["knowledge.*"]).await;
    let b = d.browser();
    assert_eq!(b.set_up("ada", "correct horse").await.status, 303);
    let agent_page = b.get(&format!("/agents/{me}")).await;
    assert!(agent_page.text.contains(&format!("href=\"/agents/{me}/knowledge\"")), "linked from the agent page");
    let empty = b.get(&format!("/agents/{me}/knowledge")).await;
    assert_eq!(empty.status, 200, "{}", empty.text);
    assert!(empty.text.contains("id=\"knowledge-empty\"") && !empty.text.contains("<svg"), "{}", empty.text);

    for i in 0..50 {
        let kind = ["project", "library", "person"][i % 3];
        let added = api
            .invoke(&me, "knowledge_add_entity", json!({"name": format!("e{i}"), "type": kind, "attributes": {"n": i}}))
            .await;
        assert_eq!(added.status, 200);
    }
    for i in 0..50 {
        let args = json!({"from": format!("e{i}"), "to": format!("e{}", (i + 1) % 50), "type": "next"});
        assert_eq!(api.invoke(&me, "knowledge_add_relation", args).await.status, 200);
    }
    let whole = b.get(&format!("/agents/{me}/knowledge")).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    assert_eq!(whole.text.matches("<circle").count(), 50, "every node drawn");
    assert_eq!(whole.text.matches("<line").count(), 50, "every relation drawn");
    assert!(whole.text.contains(&format!("href=\"/agents/{me}/knowledge?entity=e7\"")), "nodes link to themselves");
    assert!(whole.text.contains(">project</li>"), "a legend of the types");
    // The entity table shows each attribute with its value, a long value cut short.
    let long = "word ".repeat(100);
    let noted = json!({"name": "e1", "type": "project", "attributes": {"n": 1, "status": "shipped", "notes": long}});
    assert_eq!(api.invoke(&me, "knowledge_add_entity", noted).await.status, 200);
    let table = b.get(&format!("/agents/{me}/knowledge")).await.text;
    assert!(table.contains("<li><strong>status</strong>: shipped</li>"), "{table}");
    assert!(table.contains("<li><strong>n</strong>: 1</li>"), "a number as JSON: {table}");
    assert!(table.contains(&format!("<li><strong>notes</strong>: {}…</li>", &long[..120])), "{table}");

    let one = b.get(&format!("/agents/{me}/knowledge?entity=e7")).await;
    assert_eq!(one.status, 200, "{}", one.text);
    assert_eq!(one.text.matches("<circle").count(), 3, "e7 and its two neighbours");
    assert!(one.text.contains("id=\"knowledge-attributes\"") && one.text.contains("<td>7</td>"), "its attributes");
    assert!(one.text.contains("kg-centre"));
    let two = b.get(&format!("/agents/{me}/knowledge?entity=e7&depth=2")).await;
    assert_eq!(two.text.matches("<circle").count(), 5);
    let missing = b.get(&format!("/agents/{me}/knowledge?entity=nope")).await;
    assert_eq!(missing.status, 404, "{}", missing.text);
    assert!(missing.text.contains("role=\"alert\"") && missing.text.contains("<svg"), "the whole graph, saying so");
    assert_eq!(b.get("/agents/ghost/knowledge").await.status, 404);
}
