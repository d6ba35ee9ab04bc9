//! Issue 17: usage metering and budgets. Tokens come from the providers' own usage fields
//! (streamed and whole), prices from config.toml with cached input priced apart, reports
//! grouped and paged; a daily budget pauses its agent and resets, on a manual clock.

use std::path::Path;

use chrono::{DateTime, Utc};
use kennel_kernel::Kernel;
use kennel_kernel::agent::{ManifestInput, SpawnRequest};
use kennel_kernel::clock::{Clock, ManualClock};
use kennel_kernel::config::Config;
use kennel_kernel::error::ErrorKind;
use kennel_kernel::notify::Inbox;
use kennel_kernel::tool::Caller;
use kennel_kernel::turn::TurnRequest;
use serde_json::json;

use crate::agent_from;
use kennel_tests::Home;
use kennel_tests::fake_llm::{FakeLlm, Scripted};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[tokio::test]
async fn every_call_is_metered_from_the_provider_s_usage_and_priced_with_its_cached_tokens() {
    let (oa, an) = (FakeLlm::start().await, FakeLlm::start().await);
    let config = format!(
        "{}{}[providers.oa.models.gpt-x]\ninput_usd_per_mtok = 2.0\ncached_input_usd_per_mtok = 0.5\noutput_usd_per_mtok = 8.0\n\
         {}stream = false\n[providers.an.models.claude-x]\ninput_usd_per_mtok = 3.0\noutput_usd_per_mtok = 15.0\n",
        kennel_tests::fake_llm::default_provider("oa"),
        oa.provider_config("oa", "openai"),
        an.provider_config("an", "anthropic")
    );
    let home = Home::with_config(&config);
    let token = home.token("t").await;
    let d = home.start().await;
    let api = d.api(&token);
    for fake in [&oa, &an] {
        fake.set_usage(1000, 400, 200);
        fake.set_fallback(Scripted::text("ok"));
    }
    // Anthropic also wrote 100 of the input tokens into its prompt cache.
    an.set_cache_writes(100);
    let streamed = agent_from(&api, json!({"name": "streamed", "provider": "oa", "model": "gpt-x"})).await;
    let whole = agent_from(&api, json!({"name": "whole", "provider": "an", "model": "claude-x"})).await;
    let unpriced = agent_from(&api, json!({"name": "unpriced", "provider": "oa", "model": "mystery"})).await;
    for (agent, turns) in [(&streamed, 2), (&whole, 1), (&unpriced, 1)] {
        for _ in 0..turns {
            let reply = api.post(&format!("/api/agents/{agent}/messages"), json!({"message": "hi"})).await;
            assert_eq!(reply.status, 200, "{}", reply.text);
        }
    }

    let by_agent = api.get("/api/usage?group=agent").await;
    assert_eq!(by_agent.status, 200, "{}", by_agent.text);
    let line = |id: &str| by_agent.body.as_array().unwrap().iter().find(|l| l["key"] == id).unwrap().clone();
    let s = line(&streamed);
    assert_eq!(s["name"], "streamed");
    assert_eq!(
        (s["calls"].as_u64(), s["input_tokens"].as_u64(), s["cached_tokens"].as_u64(), s["output_tokens"].as_u64()),
        (Some(2), Some(2000), Some(800), Some(400))
    );
    // 600 fresh at $2, 400 cached at $0.50, 200 out at $8, per million, twice.
    assert!(close(s["cost_usd"].as_f64().unwrap(), 2.0 * (600.0 * 2.0 + 400.0 * 0.5 + 200.0 * 8.0) / 1e6), "{s}");
    let w = line(&whole);
    assert_eq!(w["input_tokens"], 1000, "Anthropic's cache reads and writes count as input too: {w}");
    assert_eq!((w["cached_tokens"].as_u64(), w["cache_write_tokens"].as_u64()), (Some(400), Some(100)), "{w}");
    // No cache prices given: Anthropic's own, a read at a tenth of the input price and a write
    // at 1.25 × it: 500 fresh at $3, 400 read at $0.30, 100 written at $3.75, 200 out at $15.
    let anthropic = (500.0 * 3.0 + 400.0 * 0.3 + 100.0 * 3.75 + 200.0 * 15.0) / 1e6;
    assert!(close(w["cost_usd"].as_f64().unwrap(), anthropic), "{w}");
    let u = line(&unpriced);
    assert_eq!((u["unpriced_calls"].as_u64(), u["cost_usd"].as_f64()), (Some(1), Some(0.0)));

    let by_model = api.get("/api/usage?group=model").await;
    let keys: Vec<&str> = by_model.body.as_array().unwrap().iter().map(|l| l["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["an / claude-x", "oa / gpt-x", "oa / mystery"]);
    let by_day = api.get("/api/usage?group=day").await;
    assert_eq!(by_day.body[0]["calls"], 4);
    assert_eq!(by_day.body[0]["key"].as_str().unwrap().len(), 10, "YYYY-MM-DD");
    let first = api.get("/api/usage?group=provider&limit=1").await;
    assert_eq!(first.body[0]["key"], "an");
    let next = first.header("link").expect("a next page").to_string();
    let url = next.trim_start_matches('<').split('>').next().unwrap();
    let second = api.get(url).await;
    assert_eq!(second.body[0]["key"], "oa");
    assert_eq!(second.body[0]["calls"], 3);
    let later = api.get("/api/usage?since=2999-01-01T00:00:00Z").await;
    assert_eq!(later.body, json!([]));
    let bad = api.get("/api/usage?since=yesterday").await;
    assert_eq!(bad.status, 422, "{}", bad.text);
    for limits in [json!({"max_tokens_per_day": 9223372036854775808_u64}), json!({"max_usd_per_day": 0.0})] {
        let refused = api.post("/api/templates", json!({"name": "lavish", "limits": limits})).await;
        assert_eq!(refused.status, 422, "{limits}: {}", refused.text);
        assert!(
            refused.body["error"]["fields"][0]["field"].as_str().unwrap().starts_with("limits.max_"),
            "{}",
            refused.text
        );
    }
}

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

async fn say(kernel: &Kernel, agent: &str) -> kennel_kernel::Result<kennel_kernel::turn::TurnResult> {
    kernel.send_message(agent, TurnRequest::headless("note this", Caller::Operator("ada".into()))).await
}

#[tokio::test]
async fn a_daily_budget_pauses_its_agent_once_and_resets_at_its_hour() {
    let llm = FakeLlm::start().await;
    llm.set_usage(1000, 0, 200);
    llm.set_fallback(Scripted::text("noted"));
    let text =
        format!("{}[budgets]\nreset_hour = 6\ntimezone = \"Europe/Berlin\"\n", llm.provider_config("fake", "openai"));
    let config = Config::parse(Path::new("config.toml"), &text).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // 11:00 in Berlin: the budget's day began at 06:00 (05:00 UTC) and ends tomorrow then.
    let clock = ManualClock::starting_at(at("2026-12-01T10:00:00Z"));
    let kernel = Kernel::open_with_clock(dir.path(), config, Clock::Manual(clock.clone())).await.unwrap();
    let manifest: ManifestInput = kennel_kernel::error::from_value(
        json!({"name": "thrifty", "model": "m", "limits": {"max_tokens_per_day": 2500}}),
    )
    .unwrap();
    kernel.agents().create_type(manifest).await.unwrap();
    let agent = kernel.spawn_agent(SpawnRequest { agent_type: "thrifty".into(), ..Default::default() }).await.unwrap();
    let id = agent.id.to_string();

    // 1,200 tokens a turn: the third starts under 2,500 and ends over it; the fourth is refused.
    for _ in 0..3 {
        say(&kernel, &id).await.expect("under the budget");
    }
    let refused = say(&kernel, &id).await.expect_err("over the budget");
    assert_eq!(refused.kind, ErrorKind::ResourceExhausted);
    assert!(refused.message.contains("agent type `thrifty`'s daily budget of 2500 tokens"), "{}", refused.message);
    assert!(refused.message.contains("paused until 2026-12-02T05:00:00.000Z"), "{}", refused.message);
    let paused = kernel.agents().get(&id).unwrap();
    assert_eq!(paused.paused.as_ref().unwrap().until, "2026-12-02T05:00:00.000Z");
    let again = say(&kernel, &id).await.expect_err("still paused");
    assert!(again.message.contains("is paused until"), "{}", again.message);
    assert_eq!(llm.requests().len(), 3, "refused turns send nothing");
    let audit = kernel.audit().list(&Default::default(), &kennel_kernel::page::PageRequest::first(100)).await.unwrap();
    assert_eq!(audit.items.iter().filter(|e| e.tool == "budget").count(), 1, "the operators are told once");
    let page = kennel_kernel::page::PageRequest::first(100);
    let notes = kernel.service::<Inbox>().list("operator:ada", &Default::default(), &page).await.unwrap();
    assert_eq!(notes.items.len(), 1, "one note in the owner inbox");
    let note = &notes.items[0];
    assert_eq!((note.source.as_str(), note.agent_name.as_deref()), ("budget", Some("thrifty")));
    assert!(note.summary.contains("paused until 2026-12-02T05:00:00.000Z") && !note.read, "{note:?}");
    let sessions = kernel.sessions().list(agent.id, &kennel_kernel::page::PageRequest::first(100)).await.unwrap();
    assert_eq!(sessions.total, 3, "the refused turns opened no session; the history is untouched");

    // An operator lifts the pause: the budget counts from then, so three more turns fit.
    clock.advance(chrono::Duration::minutes(1));
    kernel.lift_pause(&id).await.unwrap();
    assert!(kernel.agents().get(&id).unwrap().paused.is_none());
    for _ in 0..3 {
        say(&kernel, &id).await.expect("counted since the lift");
    }
    say(&kernel, &id).await.expect_err("over again: 3,600 since the lift");
    // The reset: at 06:00 in Berlin the pause ends and a new day's budget begins.
    clock.set(at("2026-12-02T05:00:01Z"));
    say(&kernel, &id).await.expect("a new day");
}
