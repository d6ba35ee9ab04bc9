//! `kennel agent …`: listing agents and changing their grants work on the store; spawning,
//! stopping, starting and removing need the running daemon (the agents run in it).

use std::path::Path;

use kennel_kernel::Kernel;
use serde::Deserialize;
use serde_json::{Value, json};

use super::daemon::Daemon;

pub fn list(kernel: &Kernel, json_out: bool) -> anyhow::Result<()> {
    let agents = kernel.agents().list();
    if json_out {
        let agents: Vec<_> = agents.iter().map(|a| &**a).collect();
        return super::print_json(&agents);
    }
    let now = kernel.clock().now_text();
    let mut rows = vec![["ID", "NAME", "TYPE", "STATUS", "GRANTS"].map(String::from).to_vec()];
    for a in agents.iter().filter(|a| !a.ephemeral) {
        let grants: Vec<_> = a.manifest.capabilities.tools.iter().map(|g| g.as_str()).collect();
        let state = a.state_at(&now).as_str();
        rows.push(vec![a.id.to_string(), a.name.clone(), a.agent_type.clone(), state.into(), grants.join(",")]);
    }
    super::print_table(&rows);
    Ok(())
}

pub async fn grant(kernel: &Kernel, agent: &str, pattern: &str) -> anyhow::Result<()> {
    let a = kernel.agents().grant(agent, pattern).await?;
    let done = format!("agent `{}` may now call `{pattern}`", a.name);
    super::record(kernel, "agent.grant", &a.id.to_string(), done.clone()).await?;
    println!("{done}");
    if let Some(warning) = kernel.tools().pattern_warning(pattern) {
        eprintln!("warning: {}", super::terminal_safe(&warning));
    }
    Ok(())
}

pub async fn revoke(kernel: &Kernel, agent: &str, pattern: &str) -> anyhow::Result<()> {
    let a = kernel.agents().revoke(agent, pattern).await?;
    let done = format!("agent `{}` no longer has `{pattern}`", a.name);
    super::record(kernel, "agent.revoke", &a.id.to_string(), done.clone()).await?;
    println!("{done}");
    Ok(())
}

/// The fields of an agent the commands print.
#[derive(Deserialize)]
struct Spawned {
    id: String,
    name: String,
    agent_type: String,
}

pub async fn spawn(
    home: &Path,
    agent_type: &str,
    name: Option<String>,
    goal: Option<String>,
    json_out: bool,
) -> anyhow::Result<()> {
    let daemon = Daemon::of(home)?;
    let mut body = json!({ "template": agent_type });
    if let Some(name) = name {
        body["name"] = name.into();
    }
    if let Some(goal) = goal {
        body["goal"] = goal.into();
    }
    let agent: Value = daemon.post("/api/agents", &body).await?;
    if json_out {
        return super::print_json(&agent);
    }
    let a: Spawned = serde_json::from_value(agent)?;
    println!("agent `{}` spawned from type `{}` ({})", a.name, a.agent_type, a.id);
    println!("talk to it: kennel chat {}", a.name);
    Ok(())
}

pub async fn stop(home: &Path, agent: &str, json_out: bool) -> anyhow::Result<()> {
    let daemon = Daemon::of(home)?;
    let stopped: Value = daemon.post(&format!("/api/agents/{}/stop", super::agent_ref(agent)?), &json!({})).await?;
    if json_out {
        return super::print_json(&stopped);
    }
    let a: Spawned = serde_json::from_value(stopped)?;
    println!("agent `{}` stopped; its sessions stay, its schedules are paused", a.name);
    Ok(())
}

pub async fn start(home: &Path, agent: &str, json_out: bool) -> anyhow::Result<()> {
    let daemon = Daemon::of(home)?;
    let started: Value = daemon.post(&format!("/api/agents/{}/start", super::agent_ref(agent)?), &json!({})).await?;
    if json_out {
        return super::print_json(&started);
    }
    let a: Spawned = serde_json::from_value(started)?;
    println!("agent `{}` runs again ({}); its schedules stay paused until resumed", a.name, a.id);
    Ok(())
}

pub async fn remove(home: &Path, agent: &str) -> anyhow::Result<()> {
    let daemon = Daemon::of(home)?;
    let removed: Value = daemon.delete(&format!("/api/agents/{}", super::agent_ref(agent)?)).await?;
    let a: Spawned = serde_json::from_value(removed)?;
    println!("agent `{}` removed ({}); its sessions and audit rows are kept", a.name, a.id);
    Ok(())
}
