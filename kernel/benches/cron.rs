//! Time to validate a cron expression (parse, check that some date matches) and to find its
//! next fire, over a corpus of expressions that used to be slow — `, * * * *` took ~4 s while
//! croner searched to the year 5000 — or that fire rarely, beside ordinary ones.

use chrono::{DateTime, Utc};
use criterion::{Criterion, criterion_group, criterion_main};
use kennel_kernel::schedule::cron::parse_cron;

const CORPUS: &[(&str, &str)] = &[
    ("empty minute list", ", * * * *"),
    ("empty list item", "1,,2 * * * *"),
    ("30 February", "0 0 30 2 *"),
    ("31st of short months", "0 0 31 2,4,6,9,11 *"),
    ("weekday nearest 30 February", "0 0 30W 2 *"),
    ("29 February", "0 0 29 2 *"),
    ("fifth Monday of February", "0 0 * 2 1#5"),
    ("list in a DST gap", "0,30 2 28 3 *"),
    ("every 5 minutes", "*/5 * * * *"),
    ("weekdays at 9", "0 9 * * mon-fri"),
];

fn cron(c: &mut Criterion) {
    let from: DateTime<Utc> = "2026-12-01T00:00:00Z".parse().unwrap();
    for (label, expression) in CORPUS {
        c.bench_function(&format!("validate/{label}"), |b| {
            b.iter(|| parse_cron(expression, Some("Europe/Berlin")).is_ok())
        });
        if let Ok(spec) = parse_cron(expression, Some("Europe/Berlin")) {
            c.bench_function(&format!("next_after/{label}"), |b| b.iter(|| spec.next_after(from)));
        }
    }
}

criterion_group!(benches, cron);
criterion_main!(benches);
