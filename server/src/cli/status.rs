//! `kennel status`: the running daemon's address, uptime, agents by state and use today.

use std::path::Path;

use kennel_kernel::mcp::McpReload;
use kennel_kernel::status::DaemonStatus;
use kennel_kernel::text::{dollars, thousands};
use serde::Serialize;

use super::daemon::Daemon;

/// `--json`: where the daemon is (from daemon.json) and what it says of itself.
#[derive(Serialize)]
struct Report<'a> {
    url: &'a str,
    pid: u32,
    #[serde(flatten)]
    status: &'a DaemonStatus,
}

pub async fn status(home: &Path, json_out: bool) -> anyhow::Result<()> {
    let daemon = Daemon::of(home)?;
    let status: DaemonStatus = daemon.get("/api/status").await?;
    if json_out {
        return super::print_json(&Report { url: &daemon.file.url, pid: daemon.file.pid, status: &status });
    }
    let f = &daemon.file;
    let a = &status.agents;
    let mut agents = format!("{} running, {} paused, {} stopped", a.running, a.paused, a.stopped);
    if a.workflow_steps > 0 {
        agents.push_str(&format!(" (and {} running workflow steps)", a.workflow_steps));
    }
    let rows = [
        ("daemon", format!("{} (pid {}, version {})", f.url, f.pid, status.version)),
        ("up", format!("{} (since {})", uptime(status.uptime_secs), status.started_at)),
        ("agents", agents),
        ("catalogue", format!("{} agent types, {} tools", status.agent_types, status.tools)),
        ("today", today(&status)),
    ];
    for (what, value) in rows {
        println!("{what:<10} {value}");
    }
    Ok(())
}

/// `kennel reload`: the daemon re-reads `[mcp]`; prints what changed.
pub async fn reload(home: &Path, json_out: bool) -> anyhow::Result<()> {
    let daemon = Daemon::of(home)?;
    let report: McpReload = daemon.post("/api/reload", &serde_json::json!({})).await?;
    if json_out {
        return super::print_json(&report);
    }
    let list = |names: &[String]| if names.is_empty() { "none".to_string() } else { names.join(", ") };
    println!("[mcp] reloaded");
    for (what, names) in [
        ("added", &report.added),
        ("removed", &report.removed),
        ("changed", &report.changed),
        ("unchanged", &report.unchanged),
    ] {
        println!("{what:<10} {}", super::terminal_safe(&list(names)));
    }
    Ok(())
}

fn today(status: &DaemonStatus) -> String {
    let u = &status.usage_today;
    if u.calls == 0 {
        return format!("no model calls yet (the day began {})", u.since);
    }
    let mut line = format!(
        "{} model calls, {} tokens in, {} out",
        thousands(u.calls),
        thousands(u.input_tokens),
        thousands(u.output_tokens)
    );
    if u.unpriced_calls < u.calls {
        line.push_str(&format!(", {}", dollars(u.cost_usd)));
    }
    if u.unpriced_calls > 0 {
        line.push_str(&format!(" ({} calls of models without prices)", thousands(u.unpriced_calls)));
    }
    line
}

/// `3d 4h`, `2h 5m`, `7m 12s`: the two largest units.
fn uptime(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

/// `kennel provider test NAME`: one tiny call from the daemon, its answer or the provider's
/// error (a failed test is the command's error, so its exit status says so).
pub async fn test_provider(home: &Path, name: &str, model: Option<&str>, json_out: bool) -> anyhow::Result<()> {
    super::providers::check_name(name)?;
    let daemon = Daemon::of(home)?;
    let body = serde_json::json!({ "model": model });
    let test: kennel_kernel::llm::ProviderTest = daemon.post(&format!("/api/providers/{name}/test"), &body).await?;
    if json_out {
        return super::print_json(&test);
    }
    let reply = if test.reply.is_empty() { "(no text)".to_string() } else { test.reply.clone() };
    println!(
        "`{}` answered in {} ms with model `{}` ({} tokens in, {} out): {}",
        test.provider,
        test.millis,
        test.model,
        test.input_tokens,
        test.output_tokens,
        super::terminal_safe(&reply)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn uptime_reads_in_its_two_largest_units() {
        assert_eq!(super::uptime(9), "9s");
        assert_eq!(super::uptime(7 * 60 + 12), "7m 12s");
        assert_eq!(super::uptime(2 * 3600 + 5 * 60 + 59), "2h 5m");
        assert_eq!(super::uptime(3 * 86_400 + 4 * 3600 + 1), "3d 4h");
    }
}
