//! Bytes of tool schemas sent per model call in each tool mode, with every tool granted, and
//! the time to build each offer. The sizes are printed before the timings.

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use kennel_kernel::tool::TurnScope;
use kennel_kernel::tool::modes::offer;

/// An API turn: no person, no channel conversation.
const HEADLESS: TurnScope = TurnScope { person: false, conversation: false };

fn tool_modes(c: &mut Criterion) {
    for (label, registry) in
        [("built-in registry", common::builtin_registry()), ("built-in + 150 synthetic", common::full_registry())]
    {
        let sizes: Vec<(&str, usize, usize)> = ["all", "lazy", "stable"]
            .iter()
            .map(|mode| {
                let agent = common::agent_granted(&["*"], mode);
                let o = offer(&registry, &agent, &[], HEADLESS);
                let bytes = serde_json::to_string(&o.specs).unwrap().len() + o.context_line.map_or(0, |l| l.len());
                (*mode, o.specs.len(), bytes)
            })
            .collect();
        let all = sizes[0].2 as f64;
        println!("\ntool schemas per model call, {label} ({} tools, all granted):", registry.len());
        for (mode, count, bytes) in &sizes {
            println!("  {mode:6} {count:4} tools {bytes:8} bytes  {:5.1} % of all", *bytes as f64 / all * 100.0);
        }
    }
    let registry = common::full_registry();
    let tools = registry.len();
    for mode in ["all", "lazy", "stable"] {
        let agent = common::agent_granted(&["*"], mode);
        c.bench_function(&format!("offer/{mode}_{tools}_tools"), |b| {
            b.iter(|| offer(&registry, &agent, &[], HEADLESS).specs.len())
        });
    }
}

criterion_group!(benches, tool_modes);
criterion_main!(benches);
