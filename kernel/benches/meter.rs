//! What metering adds to a model call on the turn's path: building the call's record and
//! queueing it for the meter's writer (the write itself happens beside the turn). Also the
//! writer's own pace: records queued and written, per record, flush included.
//!
//! `cargo bench -p kennel-kernel --bench meter`

use criterion::{Criterion, criterion_group, criterion_main};
use kennel_kernel::Kernel;
use kennel_kernel::config::Config;
use kennel_kernel::llm::Usage;
use kennel_kernel::usage::ModelCall;

fn call() -> ModelCall {
    ModelCall {
        turn: uuid::Uuid::now_v7(),
        agent: uuid::Uuid::now_v7(),
        session: uuid::Uuid::now_v7(),
        provider: "openai".into(),
        model: "gpt-4o-mini".into(),
        purpose: "reply",
        compaction: None,
        first_seq: Some(1),
        messages: 12,
        estimated_tokens: 3000,
        tokens: Usage {
            input_tokens: 2500,
            output_tokens: 300,
            cached_tokens: 1000,
            cache_write_tokens: 200,
            estimated: false,
        },
        outcome: "ok".into(),
        at: kennel_kernel::db::now(),
    }
}

fn meter(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kernel = rt.block_on(Kernel::open_with(dir.path(), Config::default())).unwrap();
    let _guard = rt.enter();
    c.bench_function("meter/record a model call (on the turn's path)", |b| {
        b.iter(|| kernel.usage().record(call()));
    });
    c.bench_function("meter/1000 records written, flush included (per batch)", |b| {
        b.to_async(&rt).iter(|| async {
            for _ in 0..1000 {
                kernel.usage().record(call());
            }
            kernel.usage().flush().await;
        });
    });
}

criterion_group!(benches, meter);
criterion_main!(benches);
