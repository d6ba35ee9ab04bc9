//! The patch matcher behind `skill_evolve_patch`, `edit_file` and `apply_patch` on a 100 KB
//! body: one `old` that only each strategy finds (exact, line-trimmed, whitespace-normalised,
//! indent-flexible, block-anchor), and the slowest path, where no strategy matches and the
//! closest region is searched and diffed. Criterion measures each; the worst case is also
//! timed 500 times for its p50 and p99 (the target is p99 ≤ 10 ms).

use std::time::Instant;

use criterion::{Criterion, criterion_group};
use kennel_kernel::patch::{MatchOptions, Strategy, replace, worst_case_body, worst_case_old};

/// `count` consecutive lines of `body` from line `from` (0-based), each ending in `\n`.
fn lines(body: &str, from: usize, count: usize) -> Vec<String> {
    body.lines().skip(from).take(count).map(|l| format!("{l}\n")).collect()
}

/// The first line of a region of 30 `let` lines inside one of [`worst_case_body`]'s 40-line
/// blocks (3 lines, then blocks of 3 head lines and 37 others): lines that occur once.
const REGION: usize = 3 + 40 * 20 + 5;

/// For each strategy, an `old` only it (and no stricter one) finds in `body`.
fn cases(body: &str) -> Vec<(Strategy, String)> {
    let region = lines(body, REGION, 6);
    let exact = region.concat();
    let trailing = region.iter().map(|l| l.replace('\n', "   \n")).collect();
    let spaced = region.iter().map(|l| l.replace(" = ", "   =\t")).collect();
    let indented = region.iter().map(|l| l.trim_start().to_string()).collect();
    let mut anchored = lines(body, REGION, 3);
    anchored.extend((0..24).map(|n| format!("        drifted_{n}();\n")));
    anchored.extend(lines(body, REGION + 27, 3));
    vec![
        (Strategy::Exact, exact),
        (Strategy::LineTrimmed, trailing),
        (Strategy::WhitespaceNormalised, spaced),
        (Strategy::IndentFlexible, indented),
        (Strategy::BlockAnchor, anchored.concat()),
    ]
}

fn matcher(c: &mut Criterion) {
    let body = worst_case_body();
    let options = MatchOptions::default();
    for (strategy, old) in cases(&body) {
        let found = replace(&body, &old, "replaced\n", &options).map(|r| r.strategy);
        assert_eq!(found.as_ref().ok(), Some(&strategy), "the {strategy} case: {found:?}");
        c.bench_function(&format!("replace/100KB/{strategy}"), |b| {
            b.iter(|| replace(&body, &old, "replaced\n", &options))
        });
    }
    let old = worst_case_old();
    assert!(replace(&body, &old, "x\n", &options).is_err(), "the worst case matches nothing");
    c.bench_function("replace/100KB/no match, closest region", |b| b.iter(|| replace(&body, &old, "x\n", &options)));
}

/// p50 and p99 of the slowest path, printed beside criterion's means.
fn worst_case_percentiles() {
    let (body, old, options) = (worst_case_body(), worst_case_old(), MatchOptions::default());
    let mut times: Vec<f64> = (0..500)
        .map(|_| {
            let started = Instant::now();
            let _ = std::hint::black_box(replace(&body, &old, "x\n", &options));
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "replace/100KB/no match, closest region: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (n = 500)",
        times[250], times[495], times[499]
    );
}

criterion_group!(benches, matcher);

fn main() {
    benches();
    worst_case_percentiles();
    Criterion::default().configure_from_args().final_summary();
}
