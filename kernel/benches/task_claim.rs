//! `task_claim` throughput: 16 concurrent claimers drain 20,000 pending tasks, on SQLite, or on
//! PostgreSQL when `KENNEL_DATABASE_URL` names an empty database (the kernel reads it).
//! Prints claims per second and checks that no task was claimed twice.
//!
//! `cargo bench -p kennel-kernel --bench task_claim`
//! `KENNEL_DATABASE_URL=postgres://… cargo bench -p kennel-kernel --bench task_claim`

use std::collections::HashSet;
use std::time::Instant;

use kennel_kernel::Kernel;
use kennel_kernel::config::Config;
use kennel_kernel::tasks::NewTask;
use kennel_kernel::tasks::TaskBoard;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    const TASKS: usize = 20_000;
    const CLAIMERS: usize = 16;
    let dir = tempfile::tempdir().unwrap();
    let kernel = Kernel::open_with(dir.path(), Config::default()).await.unwrap();
    for i in 0..TASKS {
        let new =
            NewTask { title: format!("job {i}"), body: String::new(), assignee: None, priority: Some((i % 10) as i64) };
        kernel.service::<TaskBoard>().post(new, "bench").await.unwrap();
    }
    let started = Instant::now();
    let claimers: Vec<_> = (0..CLAIMERS)
        .map(|c| {
            let kernel = kernel.clone();
            tokio::spawn(async move {
                let me = format!("claimer-{c}");
                let mut mine = Vec::new();
                while let Some(task) = kernel.service::<TaskBoard>().claim(&me, None).await.unwrap() {
                    mine.push(task.id);
                }
                mine
            })
        })
        .collect();
    let mut all = Vec::with_capacity(TASKS);
    for c in claimers {
        all.extend(c.await.unwrap());
    }
    let elapsed = started.elapsed();
    let unique: HashSet<_> = all.iter().collect();
    assert_eq!(all.len(), TASKS);
    println!(
        "task_claim: {TASKS} tasks, {CLAIMERS} concurrent claimers: {:.2} s, {:.0} claims/s, duplicates: {}",
        elapsed.as_secs_f64(),
        TASKS as f64 / elapsed.as_secs_f64(),
        all.len() - unique.len()
    );
    kernel.close().await;
}
