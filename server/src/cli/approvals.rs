//! `kennel approvals list|approve|deny`: the calls waiting for a person, decided from the
//! daemon's machine (the CLI's token is readable by the home's owner alone; API tokens read
//! approvals and never decide them).

use std::path::Path;

use kennel_kernel::approval::Approval;
use serde_json::json;

use super::daemon::Daemon;

pub async fn list(home: &Path, all: bool, json_out: bool) -> anyhow::Result<()> {
    let daemon = Daemon::of(home)?;
    let path = if all { "/api/approvals" } else { "/api/approvals?status=pending" };
    let approvals: Vec<Approval> = daemon.get(path).await?;
    if json_out {
        return super::print_json(&approvals);
    }
    if approvals.is_empty() && !all {
        println!("no call is waiting for approval");
        return Ok(());
    }
    let mut rows = vec![["ID", "AGENT", "TOOL", "STATE", "WHY", "ARGUMENTS"].map(String::from).to_vec()];
    for a in approvals {
        let state = match &a.decided_by {
            Some(by) => format!("{} by {by}", a.status.as_str()),
            None => format!("{} until {}", a.status.as_str(), a.expires_at),
        };
        // Whole: what is approved is all of it, not a prefix that hides `&& curl …|sh`.
        let arguments = a.arguments.to_string();
        rows.push(vec![a.id.to_string(), a.agent, a.tool, state, a.reason, arguments]);
    }
    super::print_table(&rows);
    Ok(())
}

/// Approves (`approve`) or denies one approval; `for_minutes` lets calls like it through too.
pub async fn decide(
    home: &Path,
    id: &str,
    approve: bool,
    for_minutes: Option<u32>,
    note: Option<String>,
) -> anyhow::Result<()> {
    let daemon = Daemon::of(home)?;
    let (path, body) = match approve {
        true => (format!("/api/approvals/{id}/approve"), json!({ "for_minutes": for_minutes, "note": note })),
        false => (format!("/api/approvals/{id}/deny"), json!({ "note": note })),
    };
    let decided: Approval = daemon.post(&path, &body).await?;
    let verb = if approve { "approved" } else { "denied" };
    let until = decided.allow_until.map(|u| format!("; calls like it until {u}")).unwrap_or_default();
    println!(
        "{verb}: `{}` of agent `{}`{until}",
        super::terminal_safe(&decided.tool),
        super::terminal_safe(&decided.agent)
    );
    Ok(())
}
