//! The browser family against Debian's Chromium and a 50 KB page on loopback, through the
//! kernel's pipeline (in-process, release build). Prints p50 and p95:
//! - `browser_navigate` + `browser_read_page` of the page in a warm tab (Chromium running,
//!   the agent's context and tab open);
//! - the first tab of a new agent: a new browser context, a new tab and the same navigation;
//! - Chromium's memory (RSS of all its processes) per open tab, from 1 to 8 tabs.
//!
//! `cargo bench -p kennel-tests --bench browser [N]`

use std::time::Instant;

use kennel_kernel::Kernel;
use kennel_kernel::agent::{ManifestInput, SpawnRequest};
use kennel_kernel::config::Config;
use kennel_kernel::tool::{CallContext, Caller};
use serde_json::json;

fn report(label: &str, mut micros: Vec<u128>) {
    micros.sort_unstable();
    let at = |p: f64| micros[((micros.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "{label:52} p50 {:6.1} ms   p95 {:6.1} ms   (n = {})",
        at(0.5) as f64 / 1e3,
        at(0.95) as f64 / 1e3,
        micros.len()
    );
}

/// A page of about 50 KB: headings, paragraphs, links and a form.
fn page() -> String {
    let mut html = String::from(
        "<!doctype html><html><head><title>Fifty kilobytes</title></head><body><form><input name=q></form>",
    );
    let mut i = 0;
    while html.len() < 50_000 {
        html.push_str(&format!(
            "<h2>Section {i}</h2><p>Paragraph {i} of the benchmark page, with some words to read and a <a href=\"/p/{i}\">link {i}</a>.</p>"
        ));
        i += 1;
    }
    html.push_str("</body></html>");
    html
}

/// Resident memory of every process whose command line names `marker`, in KiB.
fn rss_kib(marker: &str) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        if !String::from_utf8_lossy(&cmdline).contains(marker) {
            continue;
        }
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        total += status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    total
}

async fn agent(kernel: &Kernel, name: &str) -> CallContext {
    let manifest: ManifestInput =
        kennel_kernel::error::from_value(json!({"name": name, "model": "m", "tools": ["browser.*"]})).unwrap();
    kernel.agents().create_type(manifest).await.unwrap();
    let agent = kernel.spawn_agent(SpawnRequest { agent_type: name.into(), ..Default::default() }).await.unwrap();
    CallContext::new(kernel.clone(), agent, Caller::Agent)
}

async fn call(kernel: &Kernel, ctx: &CallContext, tool: &str, args: serde_json::Value) {
    kernel.call_tool(ctx.clone(), tool, args).await.unwrap_or_else(|e| panic!("{tool}: {e}"));
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = std::env::args().filter_map(|a| a.parse().ok()).next().unwrap_or(100);
    let html = page();
    let port = kennel_tests::serve_html(html).await;
    let url = format!("http://127.0.0.1:{port}/page");

    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[browser]\nexecutable = \"/usr/bin/chromium\"\nallowed_hosts = [\"127.0.0.1:{port}\"]\ntabs_per_agent = 4\n"
    );
    let kernel = Kernel::open_with(dir.path(), Config::parse(std::path::Path::new("bench.toml"), &config).unwrap())
        .await
        .unwrap();
    let marker = format!("--user-data-dir={}", dir.path().join("browser").display());

    let started = Instant::now();
    let warm = agent(&kernel, "warm").await;
    call(&kernel, &warm, "browser_navigate", json!({"url": url})).await;
    println!("Chromium's start and the first navigation: {:.0} ms", started.elapsed().as_secs_f64() * 1e3);
    let one_tab = rss_kib(&marker);

    let mut warm_times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        call(&kernel, &warm, "browser_navigate", json!({"url": url})).await;
        call(&kernel, &warm, "browser_read_page", json!({})).await;
        warm_times.push(t.elapsed().as_micros());
    }
    report("navigate + read_page, 50 KB page, warm tab", warm_times);

    let mut first_tab = Vec::new();
    for i in 0..(n / 5).max(5) {
        let ctx = agent(&kernel, &format!("new-{i}")).await;
        let t = Instant::now();
        call(&kernel, &ctx, "browser_navigate", json!({"url": url})).await;
        first_tab.push(t.elapsed().as_micros());
        kernel.stop_agent(&ctx.agent.id.to_string()).await.unwrap();
    }
    report("first tab of a new agent (new context) + navigate", first_tab);

    // Eight tabs: the warm agent's four and another agent's four.
    let other = agent(&kernel, "other").await;
    for ctx in [&warm, &other] {
        let open = if std::ptr::eq(ctx, &warm) { 3 } else { 4 };
        for _ in 0..open {
            call(&kernel, ctx, "browser_navigate", json!({"url": url, "new_tab": true})).await;
        }
    }
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let eight = rss_kib(&marker);
    println!(
        "Chromium RSS: {:.0} MiB with 1 tab, {:.0} MiB with 8 tabs in 2 contexts: {:.1} MiB per further tab",
        one_tab as f64 / 1024.0,
        eight as f64 / 1024.0,
        (eight.saturating_sub(one_tab)) as f64 / 7.0 / 1024.0
    );
    kernel.close().await;
}
