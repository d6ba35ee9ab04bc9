//! Memory (issue 19) through the real daemon: the tools through the pipeline (REST invoke and
//! the agent loop with the fake provider), the scopes in the agent layer, the REST views,
//! auto-recall into the prompt, auto-memorize, an embeddings provider over its wire protocol,
//! and a restart. Decay runs on a manual clock in the kernel in-process (`decay_*`).

use kennel_kernel::memory::semantic::SemanticMemory;
use std::time::Duration;

use kennel_tests::eventually;
use kennel_tests::fake_llm::Scripted;
use serde_json::{Value, json};

use crate::{agent_from, daemon_with_config, daemon_with_llm};

const BOTH: [&str; 2] = ["memory.*", "memory_semantic.*"];

/// How `name` stands in an agent's effective tool set: `status`, `layer`, `reason`.
fn tool_status<'a>(tools: &'a Value, name: &str) -> &'a Value {
    tools.as_array().unwrap().iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name} listed"))
}

#[tokio::test]
async fn key_value_memory_matches_keys_byte_for_byte_lists_names_and_survives_a_restart() {
    let (home, d, api) = daemon_with_config("").await;
    let id = agent_from(&api, json!({"name": "keeper", "tools": ["memory.*"]})).await;
    let stored = api.invoke(&id, "memory_store", json!({"key": "Deploy-Day", "value": "Thursday"})).await;
    assert_eq!(stored.body["content"]["written"], "created", "{}", stored.text);
    let again = api.invoke(&id, "memory_store", json!({"key": "Deploy-Day", "value": "Friday"})).await;
    assert_eq!(again.body["content"]["written"], "replaced");
    assert_eq!(api.invoke(&id, "memory_recall", json!({"key": "Deploy-Day"})).await.body["content"]["value"], "Friday");
    for near in ["deploy-day", "Deploy-Day ", "Deploy", "Deploy\u{2010}Day"] {
        let missed = api.invoke(&id, "memory_recall", json!({"key": near})).await;
        assert_eq!(missed.error_kind(), "NotFound", "{near:?} is another key: {}", missed.text);
    }
    api.invoke(&id, "memory_store", json!({"key": "alpha", "value": "secret value"})).await;
    let listed = api.invoke(&id, "memory_list", json!({"limit": 1, "offset": 1})).await;
    assert_eq!(listed.body["content"], json!({"keys": ["alpha"], "total": 2, "offset": 1, "more": false}));
    assert!(!listed.text.contains("secret value"), "names only");

    let long_key = api.invoke(&id, "memory_store", json!({"key": "k".repeat(257), "value": "v"})).await;
    assert_eq!(long_key.status, 422, "{}", long_key.text);
    assert!(long_key.error_message().contains("at most 256 bytes"), "{}", long_key.text);
    let big = api.invoke(&id, "memory_store", json!({"key": "big", "value": "v".repeat(65537)})).await;
    assert_eq!(big.status, 422);
    assert!(big.error_message().contains("65536"), "{}", big.text);
    assert_eq!(
        api.invoke(&id, "memory_recall", json!({"key": "big"})).await.error_kind(),
        "NotFound",
        "nothing written"
    );

    // The operator's REST view: values, one key (percent-encoded), put and delete.
    let entries = api.get(&format!("/api/agents/{id}/memory/kv")).await;
    assert_eq!(entries.header("x-total-count"), Some("2"));
    assert_eq!(entries.body[0]["key"], "Deploy-Day");
    let put = api.put(&format!("/api/agents/{id}/memory/kv/a%2Fb%20c"), json!({"value": "slashed"})).await;
    assert_eq!(put.body, json!({"key": "a/b c", "written": "created"}), "{}", put.text);
    assert_eq!(api.invoke(&id, "memory_recall", json!({"key": "a/b c"})).await.body["content"]["value"], "slashed");
    assert_eq!(api.delete(&format!("/api/agents/{id}/memory/kv/alpha")).await.body["removed"], true);
    assert_eq!(api.get(&format!("/api/agents/{id}/memory/kv/alpha")).await.status, 404);

    let token = home.token("after").await;
    d.stop().await;
    let d = home.start().await;
    let api = d.api(&token);
    let kept = api.invoke(&id, "memory_recall", json!({"key": "Deploy-Day"})).await;
    assert_eq!(kept.body["content"]["value"], "Friday", "{}", kept.text);
    let other = agent_from(&api, json!({"name": "other", "tools": ["memory.*"]})).await;
    let private = api.invoke(&other, "memory_recall", json!({"key": "Deploy-Day"})).await;
    assert_eq!(private.error_kind(), "NotFound", "another agent's keys are not this one's");
}

#[tokio::test]
async fn memory_scopes_withdraw_stores_and_limit_keys_and_categories() {
    let (_home, _d, api) = daemon_with_config("").await;
    // kv:* for reading: the semantic reads are withdrawn in the agent layer, the KV stays.
    let kv_only =
        agent_from(&api, json!({"name": "kvonly", "capabilities": {"tools": BOTH, "memory_read": ["kv:*"]}})).await;
    let tools = api.get(&format!("/api/agents/{kv_only}/tools?limit=1000")).await.body;
    let search = tool_status(&tools, "memory_semantic_search");
    assert_eq!((search["status"].as_str(), search["layer"].as_str()), (Some("excluded"), Some("agent")), "{search}");
    assert!(search["reason"].as_str().unwrap().contains("memory_read scopes (`kv:*`)"), "{search}");
    assert_eq!(tool_status(&tools, "memory_recall")["status"], "allowed");
    assert_eq!(tool_status(&tools, "memory_semantic_add")["status"], "allowed", "writes are undeclared: open");
    let refused = api.invoke(&kv_only, "memory_semantic_search", json!({"query": "anything"})).await;
    assert_eq!(refused.error_kind(), "Forbidden", "{}", refused.text);
    assert!(refused.error_message().contains("memory_read"), "{}", refused.text);
    assert_eq!(api.invoke(&kv_only, "memory_store", json!({"key": "k", "value": "v"})).await.status, 200);

    // semantic:* for writing only: the KV writes are withdrawn, its reads are open.
    let semantic_writer =
        agent_from(&api, json!({"name": "semwriter", "capabilities": {"tools": BOTH, "memory_write": ["semantic:*"]}}))
            .await;
    let store = api.invoke(&semantic_writer, "memory_store", json!({"key": "k", "value": "v"})).await;
    assert_eq!(store.error_kind(), "Forbidden", "{}", store.text);
    assert_eq!(api.invoke(&semantic_writer, "memory_list", json!({})).await.status, 200);

    // Globs within a store: keys for kv, categories for semantic.
    let narrow = json!({"name": "narrow", "capabilities": {
        "tools": BOTH,
        "memory_read": ["kv:prefs.*", "semantic:preference"],
        "memory_write": ["kv:prefs.*", "semantic:preference"],
    }});
    let narrow = agent_from(&api, narrow).await;
    assert_eq!(api.invoke(&narrow, "memory_store", json!({"key": "prefs.theme", "value": "dark"})).await.status, 200);
    let outside = api.invoke(&narrow, "memory_store", json!({"key": "secrets", "value": "x"})).await;
    assert_eq!(outside.error_kind(), "Forbidden");
    assert!(outside.error_message().contains("`secrets` is outside"), "{}", outside.text);
    let fact = api.invoke(&narrow, "memory_semantic_add", json!({"content": "The build server runs Debian 13."})).await;
    assert_eq!(fact.error_kind(), "Forbidden", "a `fact` is outside semantic:preference: {}", fact.text);
    assert!(fact.error_message().contains("nothing was written"), "{}", fact.text);
    let liked =
        api.invoke(&narrow, "memory_semantic_add", json!({"content": "Maya prefers green tea in the morning."})).await;
    assert_eq!(liked.body["content"]["written"][0]["category"], "preference", "{}", liked.text);
    // An operator's fact in another category is the agent's, but its scopes hide it.
    let added = api
        .post(
            &format!("/api/agents/{narrow}/memory/semantic"),
            json!({"content": "The tea shop closes at six in the evening."}),
        )
        .await;
    assert_eq!(added.body["written"][0]["category"], "fact", "{}", added.text);
    let hits = api.invoke(&narrow, "memory_semantic_search", json!({"query": "tea"})).await;
    let contents: Vec<&str> =
        hits.body["content"]["hits"].as_array().unwrap().iter().map(|h| h["content"].as_str().unwrap()).collect();
    assert_eq!(contents, ["Maya prefers green tea in the morning."], "only the readable category");
    let operator = api.get(&format!("/api/agents/{narrow}/memory/semantic/search?q=tea")).await;
    assert_eq!(operator.body.as_array().unwrap().len(), 2, "operators are not bound by the agent's scopes");
    let stats = api.invoke(&narrow, "memory_semantic_stats", json!({})).await;
    assert_eq!(stats.body["content"]["by_category"], json!({"preference": 1}), "{}", stats.text);
    let forget =
        api.invoke(&narrow, "memory_semantic_forget", json!({"memory_id": added.body["written"][0]["id"]})).await;
    assert_eq!(forget.error_kind(), "Forbidden", "{}", forget.text);
}

#[tokio::test]
async fn semantic_memory_writes_honestly_forgets_for_good_and_recalls_into_turns() {
    let (home, d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "noter", "model": "m", "tools": ["memory_semantic.*"]})).await;
    let fact = "The billing service stores its invoices in PostgreSQL 15 on db-prod-2.";
    llm.push(Scripted::call("memory_semantic_add", json!({"content": fact})))
        .push(Scripted::call("memory_semantic_add", json!({"content": fact})))
        .push(Scripted::text("noted twice"));
    let turn =
        api.post(&format!("/api/agents/{id}/messages"), json!({"message": "remember the billing database"})).await;
    assert_eq!(turn.status, 200, "{}", turn.text);
    let sent = llm.requests();
    let results: Vec<Value> = sent[1..]
        .iter()
        .map(|r| {
            let messages = r.body["messages"].as_array().unwrap();
            serde_json::from_str(messages.last().unwrap()["content"].as_str().unwrap()).unwrap()
        })
        .collect();
    assert_eq!(results[0]["written"][0]["action"], "added", "{}", results[0]);
    let memory_id = results[0]["written"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(results[1]["written"], json!([]), "the duplicate wrote nothing: {}", results[1]);
    assert_eq!(results[1]["rejected"][0]["existing"], memory_id.as_str());
    assert!(results[1]["summary"].as_str().unwrap().starts_with("nothing was written: redundant"), "{}", results[1]);

    // A restatement with a changed detail replaces the memory it restates, and says so.
    let changed = "The billing service stores its invoices in PostgreSQL 16 on db-prod-2.";
    let merged = api.invoke(&id, "memory_semantic_add", json!({"content": changed})).await;
    let written = &merged.body["content"]["written"][0];
    assert_eq!(written["action"], "merged", "{}", merged.text);
    assert_eq!(written["replaced"][0], json!({"id": memory_id, "content": fact}));
    let current_id = written["id"].as_str().unwrap().to_string();

    // Auto-recall: a message on the subject gets the memory before it, within the bytes.
    llm.push(Scripted::text("PostgreSQL 16"));
    let asked = api
        .post(&format!("/api/agents/{id}/messages"), json!({"message": "which database version does billing use?"}))
        .await;
    assert_eq!(asked.status, 200);
    let request = llm.requests().last().unwrap().body.clone();
    let messages = request["messages"].as_array().unwrap();
    let recall = messages[messages.len() - 2]["content"].as_str().unwrap();
    assert!(
        recall.starts_with("[Kennel memory:") && recall.contains(changed) && recall.contains(&current_id),
        "{request}"
    );
    assert!(!recall.contains("PostgreSQL 15"), "the replaced memory is not recalled");
    assert!(recall.len() <= 2048, "recall_max_bytes");
    // An unrelated message recalls nothing.
    llm.push(Scripted::text("hello"));
    api.post(&format!("/api/agents/{id}/messages"), json!({"message": "good morning"})).await;
    let quiet = llm.requests().last().unwrap().body["messages"].to_string();
    assert!(!quiet.contains("[Kennel memory:"), "{quiet}");

    // Forget: never found again, by search or by recall.
    let forgotten = api.invoke(&id, "memory_semantic_forget", json!({"memory_id": current_id})).await;
    assert_eq!(forgotten.body["content"]["forgotten"], current_id.as_str(), "{}", forgotten.text);
    let search = api.invoke(&id, "memory_semantic_search", json!({"query": "billing database PostgreSQL"})).await;
    assert_eq!(search.body["content"]["hits"], json!([]), "{}", search.text);
    llm.push(Scripted::text("no idea"));
    api.post(&format!("/api/agents/{id}/messages"), json!({"message": "which database version does billing use?"}))
        .await;
    assert!(!llm.requests().last().unwrap().body.to_string().contains("[Kennel memory:"), "not recalled after forget");
    let again = api.invoke(&id, "memory_semantic_forget", json!({"memory_id": current_id})).await;
    assert_eq!(again.error_kind(), "NotFound");

    // Stats tell an empty store from a switched-off one; everything survives a restart.
    api.invoke(&id, "memory_semantic_add", json!({"content": "Maya's standup is every Monday at nine."})).await;
    let token = home.token("after").await;
    d.stop().await;
    let d = home.start().await;
    let api = d.api(&token);
    let stats = api.invoke(&id, "memory_semantic_stats", json!({})).await.body["content"].clone();
    assert_eq!((stats["enabled"].as_bool(), stats["memories"].as_u64()), (Some(true), Some(1)), "{stats}");
    assert_eq!((stats["forgotten"].as_u64(), stats["merged"].as_u64()), (Some(1), Some(1)));
    assert_eq!(stats["by_category"], json!({"schedule": 1}));
    assert!(stats["embedder"].as_str().unwrap().starts_with("local"), "{stats}");
    assert_eq!(
        (stats["auto_recall"].as_bool(), stats["auto_memorize"].as_bool(), stats["llm_extraction"].as_bool()),
        (Some(true), Some(false), Some(false))
    );
    let hit = api.invoke(&id, "memory_semantic_search", json!({"query": "when is the standup"})).await;
    assert_eq!(hit.body["content"]["hits"][0]["content"], "Maya's standup is every Monday at nine.", "{}", hit.text);
    assert_eq!(hit.body["content"]["hits"][0]["tier"], "fresh", "first return: it was fresh");
    let listed = api.get(&format!("/api/agents/{id}/memory/semantic")).await;
    assert_eq!(listed.body[0]["tier"], "recalled", "the search refreshed it: {}", listed.text);
}

#[tokio::test]
async fn a_switched_off_store_withdraws_the_semantic_tools_and_leaves_the_key_value_store() {
    let (_home, _d, api) = daemon_with_config("[proactive_memory]\nenabled = false\n").await;
    let id = agent_from(&api, json!({"name": "plain", "tools": BOTH})).await;
    let tools = api.get(&format!("/api/agents/{id}/tools?limit=1000")).await.body;
    for name in ["memory_semantic_search", "memory_semantic_add", "memory_semantic_forget", "memory_semantic_stats"] {
        let status = tool_status(&tools, name);
        assert_eq!(
            (status["status"].as_str(), status["layer"].as_str()),
            (Some("excluded"), Some("daemon")),
            "{name}: {status}"
        );
        assert!(status["reason"].as_str().unwrap().contains("enabled = false"), "{status}");
    }
    let call = api.invoke(&id, "memory_semantic_search", json!({"query": "x"})).await;
    assert_eq!(call.error_kind(), "Unavailable", "{}", call.text);
    assert_eq!(api.invoke(&id, "memory_store", json!({"key": "k", "value": "v"})).await.status, 200);
    let stats = api.get(&format!("/api/agents/{id}/memory/semantic/stats")).await;
    assert_eq!(stats.body["enabled"], false, "{}", stats.text);
    assert_eq!(api.get(&format!("/api/agents/{id}/memory/semantic")).await.status, 503);
}

#[tokio::test]
async fn auto_memorize_keeps_what_the_person_says_of_themselves_and_recall_is_bounded() {
    let config = "[proactive_memory]\nauto_memorize = true\nrecall_max_bytes = 400\n";
    let (_home, _d, api, llm) = daemon_with_llm("openai", config).await;
    let id = agent_from(&api, json!({"name": "listener", "model": "m", "tools": ["memory_semantic.*"]})).await;
    llm.set_fallback(Scripted::text("ok"));
    let said = "My dog is called Biscuit and loves the beach. Can you book a table for tonight?";
    api.post(&format!("/api/agents/{id}/messages"), json!({"message": said})).await;
    let remembered = eventually(Duration::from_secs(5), || async {
        api.get(&format!("/api/agents/{id}/memory/semantic")).await.body.as_array().is_some_and(|m| !m.is_empty())
    })
    .await;
    assert!(remembered, "auto-memorize wrote the fact");
    let memories = api.get(&format!("/api/agents/{id}/memory/semantic")).await.body;
    assert_eq!(memories.as_array().unwrap().len(), 1, "the question is not a fact: {memories}");
    assert_eq!(memories[0]["source"], "turn");
    assert!(
        memories[0]["content"].as_str().unwrap().starts_with("token:tests said: My dog is called Biscuit"),
        "{memories}"
    );
    for n in 0..6 {
        let fact = format!("Biscuit the dog has a favourite beach toy number {n} which is a long red rubber ring.");
        api.post(&format!("/api/agents/{id}/memory/semantic"), json!({"content": fact})).await;
    }
    api.post(&format!("/api/agents/{id}/messages"), json!({"message": "what does Biscuit the dog like at the beach?"}))
        .await;
    let messages = llm.requests().last().unwrap().body["messages"].clone();
    let recall = messages.as_array().unwrap().iter().rev().nth(1).unwrap()["content"].as_str().unwrap().to_string();
    assert!(recall.starts_with("[Kennel memory:"), "{recall}");
    assert!(recall.len() <= 400, "{} bytes: {recall}", recall.len());
    assert!(recall.matches("\n- ").count() >= 1, "{recall}");
}

#[tokio::test]
async fn an_embeddings_provider_is_used_through_its_wire_protocol() {
    let config = "[proactive_memory]\nembeddings_provider = \"fake\"\nembeddings_model = \"bag-of-words\"\n";
    let (_home, _d, api, llm) = daemon_with_llm("openai", config).await;
    let id = agent_from(&api, json!({"name": "dense", "tools": ["memory_semantic.*"]})).await;
    let added = api
        .invoke(&id, "memory_semantic_add", json!({"content": "The office plants get watered on Fridays by Tomas."}))
        .await;
    assert_eq!(added.body["content"]["written"][0]["action"], "added", "{}", added.text);
    api.invoke(&id, "memory_semantic_add", json!({"content": "Quarterly taxes are filed by the accountant in April."}))
        .await;
    let hits = api.invoke(&id, "memory_semantic_search", json!({"query": "who waters the office plants"})).await;
    assert_eq!(
        hits.body["content"]["hits"][0]["content"], "The office plants get watered on Fridays by Tomas.",
        "{}",
        hits.text
    );
    let calls: Vec<Value> = llm.requests().into_iter().filter(|r| r.protocol == "embeddings").map(|r| r.body).collect();
    assert_eq!(calls.len(), 3, "one call per add and one per search");
    assert_eq!(calls[2]["model"], "bag-of-words");
    assert_eq!(calls[2]["input"], json!(["who waters the office plants"]));
    let stats = api.invoke(&id, "memory_semantic_stats", json!({})).await;
    assert_eq!(stats.body["content"]["embedder"], "provider `fake`, model `bag-of-words`", "{}", stats.text);
}

#[tokio::test]
async fn a_memory_provider_config_toml_does_not_define_stops_start_up_with_its_line() {
    let home = kennel_tests::Home::with_config("[proactive_memory]\nembeddings_provider = \"nowhere\"\n");
    let out = home.cli(&["start"]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("config.toml:2:") && err.contains("no [providers.nowhere] defines"), "{err}");
}

#[tokio::test]
async fn decay_lowers_confidence_with_time_unused_and_a_search_refreshes_it() {
    use kennel_kernel::clock::{Clock, ManualClock};
    use kennel_kernel::memory::semantic::SearchOptions;
    let start = chrono::DateTime::parse_from_rfc3339("2026-12-01T10:00:00Z").unwrap().with_timezone(&chrono::Utc);
    let clock = ManualClock::starting_at(start);
    let home = tempfile::tempdir().unwrap();
    let config = kennel_kernel::config::Config::parse(
        std::path::Path::new("config.toml"),
        "[proactive_memory]\ndecay_rate = 0.01\n",
    )
    .unwrap();
    let kernel =
        kennel_kernel::Kernel::open_with_clock(home.path(), config, Clock::Manual(clock.clone())).await.unwrap();
    let memory = kernel.optional::<SemanticMemory>().ok_or_else(kennel_kernel::memory::semantic::switched_off).unwrap();
    let agent = uuid::Uuid::now_v7();
    memory
        .add(
            agent,
            "The lighthouse keeper's cat is named Pepper.",
            "tool",
            kennel_kernel::memory::semantic::Scope::everything(),
            &kennel_kernel::memory::semantic::metered_for(
                kernel.services().need(),
                kernel.clock().clone(),
                agent,
                None,
                None,
            ),
        )
        .await
        .unwrap();
    let look = SearchOptions { refresh: false, ..SearchOptions::default() };
    let search = |options: SearchOptions| async move {
        memory.search(agent, "lighthouse cat name", &options, &|_| true).await.unwrap()
    };
    assert_eq!(search(look.clone()).await[0].confidence, 1.0);

    // 100 days unused, never returned: 1 × exp(−0.01 × 100 / 1).
    clock.advance(chrono::Duration::days(100));
    let decayed = search(look.clone()).await[0].confidence;
    assert!((decayed - (-1.0f64).exp()).abs() < 0.001, "{decayed}");
    let floor = SearchOptions { min_confidence: 0.5, refresh: false, ..SearchOptions::default() };
    assert!(search(floor.clone()).await.is_empty(), "nothing rather than noise");

    // An agent's search returns it: refreshed to its base, and one hit slows its decay.
    assert_eq!(search(SearchOptions::default()).await.len(), 1);
    assert_eq!(search(look.clone()).await[0].confidence, 1.0);
    clock.advance(chrono::Duration::days(100));
    let slower = search(look).await[0].confidence;
    // exp(−0.01 × 100 / (1 + log2(2))) = exp(−0.5)
    assert!((slower - (-0.5f64).exp()).abs() < 0.001, "{slower}");
    assert_eq!(search(floor).await.len(), 1);
}

#[tokio::test]
async fn an_llm_extractor_refines_facts_and_a_reply_that_is_not_json_writes_nothing() {
    let config = "[proactive_memory]\nextraction_provider = \"fake\"\nextraction_model = \"extractor\"\n";
    let (_home, _d, api, llm) = daemon_with_llm("openai", config).await;
    let id = agent_from(&api, json!({"name": "refined", "tools": ["memory_semantic.*"]})).await;
    let facts = json!({"facts": [
        {"content": "Maya Chen prefers oat milk in her coffee.", "category": "Preference"},
        {"content": "ok", "category": "fact"},
    ]});
    llm.push(Scripted::text(&format!("```json\n{facts}\n```")));
    let added = api.invoke(&id, "memory_semantic_add", json!({"content": "btw she likes oat milk, remember"})).await;
    let outcome = &added.body["content"];
    assert_eq!(outcome["written"][0]["content"], "Maya Chen prefers oat milk in her coffee.", "{}", added.text);
    assert_eq!(outcome["written"][0]["category"], "preference");
    assert_eq!(outcome["rejected"][0]["content"], "ok");
    assert!(outcome["extractor"].as_str().unwrap().contains("model `extractor`"), "{outcome}");
    let asked = &llm.requests()[0].body;
    assert_eq!(asked["model"], "extractor");
    assert!(asked["messages"].to_string().contains("btw she likes oat milk, remember"), "{asked}");

    llm.push(Scripted::text("Sure! Maya likes oat milk."));
    let refused = api.invoke(&id, "memory_semantic_add", json!({"content": "Tomas waters the plants."})).await;
    assert_eq!(refused.error_kind(), "Failed", "{}", refused.text);
    assert!(refused.error_message().contains("nothing was written"), "{}", refused.text);
    let stats = api.invoke(&id, "memory_semantic_stats", json!({})).await.body["content"].clone();
    assert_eq!((stats["memories"].as_u64(), stats["llm_extraction"].as_bool()), (Some(1), Some(true)), "{stats}");
}

#[tokio::test]
async fn a_new_subject_or_a_negation_is_a_new_memory_and_reads_stay_within_scope() {
    let (_home, _d, api, llm) = daemon_with_llm("openai", "").await;
    let id = agent_from(&api, json!({"name": "careful", "model": "m", "tools": ["memory_semantic.*"]})).await;
    let add = |content: &'static str| {
        let api = &api;
        let id = &id;
        async move { api.invoke(id, "memory_semantic_add", json!({"content": content})).await.body["content"].clone() }
    };
    add("Alice's birthday is on March 3.").await;
    let bob = add("Bob's birthday is on March 3.").await;
    assert_eq!(bob["written"][0]["action"], "added", "Bob's birthday does not replace Alice's: {bob}");
    add("The deploy happens on Fridays.").await;
    let not = add("The deploy never happens on Fridays.").await;
    assert_eq!(not["written"].as_array().map(Vec::len), Some(1), "a negation is news: {not}");
    assert_eq!(api.get(&format!("/api/agents/{id}/memory/semantic")).await.header("x-total-count"), Some("4"));

    // An agent that may write but not read the semantic store learns nothing of it by writing.
    let blind = json!({"name": "blind", "model": "m", "capabilities": {"tools": ["memory_semantic.*"], "memory_read": ["kv:*"]}});
    let blind = agent_from(&api, blind).await;
    let first =
        api.invoke(&blind, "memory_semantic_add", json!({"content": "The vault code is 4471 for the basement."})).await;
    let first_id = first.body["content"]["written"][0]["id"].as_str().unwrap().to_string();
    let probe =
        api.invoke(&blind, "memory_semantic_add", json!({"content": "The vault code is 9999 for the basement."})).await;
    let probe = &probe.body["content"];
    assert_eq!(probe["written"][0]["action"], "added", "no merge with what it cannot read: {probe}");
    assert!(!probe.to_string().contains("4471"), "{probe}");
    let forgotten = api.invoke(&blind, "memory_semantic_forget", json!({"memory_id": first_id})).await;
    assert!(!forgotten.text.contains("4471"), "{}", forgotten.text);

    // In one session, a forgotten memory is not sent again by a later turn.
    llm.set_fallback(Scripted::text("ok"));
    let asked = api.post(&format!("/api/agents/{id}/messages"), json!({"message": "when is Bob's birthday"})).await;
    let session = asked.body["session_id"].as_str().unwrap().to_string();
    let recalled = llm.requests().last().unwrap().body["messages"].to_string();
    assert!(recalled.contains("Bob's birthday is on March 3."), "{recalled}");
    let bob_id = bob["written"][0]["id"].as_str().unwrap();
    api.invoke(&id, "memory_semantic_forget", json!({"memory_id": bob_id})).await;
    api.post(
        &format!("/api/agents/{id}/messages"),
        json!({"message": "and when is Bob's birthday again", "session": session}),
    )
    .await;
    let later = llm.requests().last().unwrap().body["messages"].to_string();
    assert!(!later.contains("Bob's birthday is on March 3."), "{later}");
    let detail = api.get(&format!("/api/sessions/{session}")).await;
    assert!(detail.text.contains("\"kind\":\"Recalled\""), "what was recalled is noted: {}", detail.text);
}

/// The memory page edits the key/value memory as the API does: a key stored, edited and
/// removed, with the same bounds, each in the operator-action log.
#[tokio::test]
async fn an_operator_stores_edits_and_removes_keys_on_the_memory_page() {
    let (_home, _d, api, b) = crate::dashboard::signed_in_with("").await;
    let id = crate::agent_with(&api, "keeper", &["memory_*"]).await;
    let page = format!("/agents/{id}/memory");
    let stored = b.submit(&page, &format!("{page}/kv"), &[("key", "favourite tea"), ("value", "Assam")]).await;
    assert_eq!((stored.status, stored.header("location")), (303, Some(format!("{page}#kv").as_str())));
    assert!(b.get(stored.header("location").unwrap()).await.text.contains("Stored <code>favourite tea</code>."));
    let edited = b.submit(&page, &format!("{page}/kv"), &[("key", "favourite tea"), ("value", "Earl Grey")]).await;
    let shown = b.get(edited.header("location").unwrap()).await.text;
    assert!(shown.contains("Replaced <code>favourite tea</code>."), "{shown}");
    assert!(
        shown.contains("name=\"value\"") && shown.contains("\nEarl Grey</textarea>"),
        "the edit box holds the value: {shown}"
    );
    assert_eq!(api.get(&format!("/api/agents/{id}/memory/kv/favourite%20tea")).await.body["value"], "Earl Grey");

    // The same bounds as the tool and the API.
    let too_long = "k".repeat(300);
    let refused = b.submit(&page, &format!("{page}/kv"), &[("key", &too_long), ("value", "x")]).await;
    assert_eq!(refused.status, 422, "{}", refused.text);

    let removed = b.submit(&page, &format!("{page}/kv/remove"), &[("key", "favourite tea")]).await;
    assert!(b.get(removed.header("location").unwrap()).await.text.contains("Removed <code>favourite tea</code>."));
    assert_eq!(api.get(&format!("/api/agents/{id}/memory/kv/favourite%20tea")).await.status, 404);
    let again = b.submit(&page, &format!("{page}/kv/remove"), &[("key", "favourite tea")]).await;
    assert!(b.get(again.header("location").unwrap()).await.text.contains("<code>favourite tea</code> was not there."));
    let actions = api.get("/api/audit/actions?actor=operator:ada").await;
    let done: Vec<&str> = actions.body.as_array().unwrap().iter().filter_map(|a| a["action"].as_str()).collect();
    assert_eq!(done.iter().filter(|a| **a == "memory.store").count(), 3, "{done:?}");
    assert_eq!(done.iter().filter(|a| **a == "memory.remove").count(), 2, "{done:?}");
}
