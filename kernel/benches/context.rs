//! Compaction of a 2,000-message session, without the model's summary time: reading the
//! session from SQLite, planning the compaction (stubs, then where to cut for a summary),
//! the transcript the summary is written from, and the messages the next call sends.
//!
//! `cargo bench -p kennel-kernel --bench context`

use criterion::{Criterion, criterion_group, criterion_main};
use kennel_kernel::Kernel;
use kennel_kernel::agent::{ManifestInput, SpawnRequest};
use kennel_kernel::config::Config;
use kennel_kernel::llm::{Message, ToolCall, ToolSpec};
use kennel_kernel::turn::context::{Entry, Plan, View, build, fixed_tokens, plan, transcript};
use serde_json::json;

/// 500 turns of four messages: a question, a tool call, a 1.5 KB result, a paragraph.
fn conversation() -> Vec<Message> {
    (0..500)
        .flat_map(|t| {
            let id = format!("call_{t}");
            [
                Message::User {
                    content: format!("Question {t}: what changed in the report since yesterday, and why?"),
                },
                Message::Assistant {
                    content: None,
                    tool_calls: vec![ToolCall {
                        id: id.clone(),
                        name: "web_fetch".into(),
                        arguments: json!({"url": format!("https://example.com/report/{t}")}),
                    }],
                },
                Message::Tool {
                    call_id: id,
                    name: "web_fetch".into(),
                    content: "report line ".repeat(125),
                    is_error: false,
                    image: None,
                },
                Message::Assistant {
                    content: Some("The report changed in three places. ".repeat(22)),
                    tool_calls: vec![],
                },
            ]
        })
        .collect()
}

fn compaction(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (kernel, session) = rt.block_on(async {
        let kernel = Kernel::open_with(dir.path(), Config::default()).await.unwrap();
        let input: ManifestInput = serde_json::from_value(json!({"name": "bench"})).unwrap();
        kernel.agents().create_type(input).await.unwrap();
        let agent =
            kernel.spawn_agent(SpawnRequest { agent_type: "bench".into(), ..Default::default() }).await.unwrap();
        let session = kernel.sessions().create(agent.id, None).await.unwrap().id;
        kernel.sessions().append(session, &conversation()).await.unwrap();
        (kernel, session)
    });
    let tools: Vec<ToolSpec> = (0..30)
        .map(|i| ToolSpec {
            name: format!("tool_{i}"),
            description: "Does one thing, described in a sentence like real tools are.".into(),
            parameters: json!({"type": "object", "properties": {"target": {"type": "string"}}}).into(),
        })
        .collect();
    let fixed = fixed_tokens(&"You are a careful analyst. ".repeat(20), &tools);
    // A 128k model: the session (about 330k tokens as estimated) must be summarised.
    let budget = 128_000 - 4_096;

    let entries = |stored: Vec<kennel_kernel::session::StoredMessage>| -> Vec<Entry> {
        stored.into_iter().map(|m| Entry { seq: m.seq, message: m.message }).collect()
    };
    let history = entries(rt.block_on(kernel.sessions().messages(session)).unwrap());
    assert_eq!(history.len(), 2000);
    let turn_start = 1997;
    assert!(matches!(plan(&history, &View::default(), turn_start, fixed, budget), Plan::Summarise { .. }));

    c.bench_function("compaction/2000 messages: read, plan, transcript, send", |b| {
        b.to_async(&rt).iter(|| async {
            let history = entries(kernel.sessions().messages(session).await.unwrap());
            let Plan::Summarise { through, stubbed_through, messages } =
                plan(&history, &View::default(), turn_start, fixed, budget)
            else {
                unreachable!("checked above")
            };
            let lines = transcript(&messages, 30_000);
            let view = View { id: None, summary: Some(lines[0].clone()), summary_through: through, stubbed_through };
            build(&history, &view).len()
        })
    });
    c.bench_function("compaction/2000 messages: plan only", |b| {
        b.iter(|| plan(&history, &View::default(), turn_start, fixed, budget))
    });
}

criterion_group!(benches, compaction);
criterion_main!(benches);
