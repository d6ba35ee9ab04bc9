//! A2A (spec §2), protocol version 1.0 as the official SDK speaks it: Kennel as a server
//! (agent cards and JSON-RPC `SendMessage`, `GetTask`, `CancelTask` for the agents an
//! operator exposes) and as a client (`a2a_discover`, `a2a_send`, in `client.rs`).

mod client;
mod store;
mod wire;

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::Kernel;
use crate::agent::Agent;
use crate::config::Config;
use crate::db::Db;
use crate::error::{Error, ErrorKind, Result};
use crate::tool::{Caller, Registry};

pub(crate) fn register(r: &mut Registry, _: &Config) {
    r.add(client::A2aDiscover);
    r.add(client::A2aSend);
}
use crate::turn::{TurnEnd, TurnRequest};

pub const PROTOCOL_VERSION: &str = "1.0";

/// Who is calling the A2A endpoint.
#[derive(Debug, Clone)]
pub enum Inbound {
    /// A valid API token with this name.
    Token(String),
    Anonymous,
}

/// Why an A2A request is refused before JSON-RPC is even read.
#[derive(Debug)]
pub enum Refusal {
    /// The agent is exposed, but not publicly, and no valid token came.
    Unauthorized,
}

/// Tasks other clients sent this daemon's agents, and the cancel handle of running ones.
pub struct A2aTasks {
    db: Db,
    running: Mutex<HashMap<Uuid, CancellationToken>>,
}

impl A2aTasks {
    pub(crate) fn new(db: Db) -> A2aTasks {
        A2aTasks { db, running: Mutex::default() }
    }
}

fn exposed(kernel: &Kernel) -> Vec<std::sync::Arc<Agent>> {
    let config = &kernel.config().a2a;
    config.expose.iter().filter_map(|name| kernel.agents().get(name).ok()).filter(|a| a.is_running()).collect()
}

/// The agent a request is for: the one in the path, else the only exposed one.
fn target(kernel: &Kernel, path_agent: Option<&str>) -> Result<std::sync::Arc<Agent>> {
    let exposed = exposed(kernel);
    match path_agent {
        Some(name) => exposed
            .into_iter()
            .find(|a| a.name == name)
            .ok_or_else(|| Error::not_found(format!("no exposed agent `{name}` on this daemon"))),
        None if exposed.len() == 1 => Ok(exposed.into_iter().next().expect("one")),
        None => {
            Err(Error::not_found(format!("this daemon exposes {} agents: address one at /a2a/NAME", exposed.len())))
        }
    }
}

/// The daemon's card: every exposed agent is a skill, and has an interface of its own.
pub fn daemon_card(kernel: &Kernel, base_url: &str) -> Value {
    let agents = exposed(kernel);
    // With one exposed agent, `/a2a` reaches it too; it comes first for clients that take
    // the first interface.
    let shared = (agents.len() == 1).then(|| wire::interface(&format!("{base_url}/a2a")));
    let interfaces: Vec<Value> = shared
        .into_iter()
        .chain(agents.iter().map(|a| wire::interface(&format!("{base_url}/a2a/{}", a.name))))
        .collect();
    let skills: Vec<Value> = agents.iter().map(|a| wire::skill(a)).collect();
    json!({
        "name": "kennel",
        "description": "A Kennel agent daemon. Each skill is an agent you can send tasks to.",
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": interfaces,
        "capabilities": {"streaming": false, "pushNotifications": false},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": skills,
    })
}

/// One exposed agent's own card (served under `/a2a/NAME/.well-known/agent-card.json`).
pub fn agent_card(kernel: &Kernel, name: &str, base_url: &str) -> Result<Value> {
    let agent = target(kernel, Some(name))?;
    Ok(json!({
        "name": agent.name,
        "description": if agent.manifest.description.is_empty() { format!("Kennel agent {}", agent.name) } else { agent.manifest.description.clone() },
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": [wire::interface(&format!("{base_url}/a2a/{}", agent.name))],
        "capabilities": {"streaming": false, "pushNotifications": false},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [wire::skill(&agent)],
    }))
}

/// Handles one JSON-RPC request for `/a2a` or `/a2a/{agent}`; the answer is always a
/// JSON-RPC response (errors included), unless the caller may not reach the agent at all.
pub async fn handle(kernel: &Kernel, path_agent: Option<&str>, inbound: Inbound, body: &str) -> Result<Value, Refusal> {
    let request: Value = match serde_json::from_str(body) {
        Ok(v) => v,
        Err(e) => return Ok(wire::rpc_error(&Value::Null, -32700, &format!("parse error: {e}"))),
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let agent = match target(kernel, path_agent) {
        Ok(a) => a,
        Err(e) => return Ok(wire::rpc_error(&id, -32001, &e.message)),
    };
    let public = kernel.config().a2a.public.iter().any(|p| *p == agent.name);
    if !public && matches!(inbound, Inbound::Anonymous) {
        return Err(Refusal::Unauthorized);
    }
    if request["jsonrpc"] != "2.0" {
        return Ok(wire::rpc_error(&id, -32600, "invalid request: `jsonrpc` must be \"2.0\""));
    }
    let params = &request["params"];
    let result = match request["method"].as_str().unwrap_or_default() {
        "SendMessage" => send_message(kernel, &agent, params, &inbound).await.map(|task| json!({ "task": task })),
        "GetTask" => get_task(kernel, &agent, params).await,
        "CancelTask" => cancel_task(kernel, &agent, params).await,
        other => {
            return Ok(wire::rpc_error(
                &id,
                -32601,
                &format!(
                    "method `{other}` is not supported (A2A {PROTOCOL_VERSION}: SendMessage, GetTask, CancelTask)"
                ),
            ));
        }
    };
    Ok(match result {
        Ok(value) => json!({ "jsonrpc": "2.0", "id": id, "result": value }),
        Err(e) => wire::rpc_error(&id, wire::error_code(&e), &e.message),
    })
}

async fn send_message(
    kernel: &Kernel,
    agent: &std::sync::Arc<Agent>,
    params: &Value,
    inbound: &Inbound,
) -> Result<Value> {
    let message = &params["message"];
    let text = wire::message_text(message);
    if text.trim().is_empty() {
        return Err(Error::invalid("the message has no text or data parts"));
    }
    let context_id = message["contextId"].as_str().map(str::to_string).unwrap_or_else(|| Uuid::now_v7().to_string());
    let session = kernel.sessions().labelled(agent.id, &format!("a2a:{context_id}")).await?;
    let task_id = Uuid::now_v7();
    store::insert_task(&kernel.a2a().db, task_id, agent.id, &context_id, wire::WORKING, &message.to_string()).await?;
    let cancel = CancellationToken::new();
    kernel.a2a().running.lock().expect("a2a tasks").insert(task_id, cancel.clone());
    let caller = match inbound {
        Inbound::Token(name) => Caller::Token(name.clone()),
        Inbound::Anonymous => Caller::A2a("public".into()),
    };
    let req = TurnRequest { session: Some(session.id), cancel: Some(cancel), ..TurnRequest::headless(text, caller) };
    let outcome = crate::turn::run(kernel, agent.clone(), req).await;
    kernel.a2a().running.lock().expect("a2a tasks").remove(&task_id);
    let (state, reply, error) = match outcome {
        Ok(turn) if turn.ended == TurnEnd::Cancelled => (wire::CANCELED, None, None),
        Ok(turn) => (wire::COMPLETED, Some(turn.reply), None),
        Err(e) => (wire::FAILED, None, Some(e.model_text())),
    };
    store::finish_task(&kernel.a2a().db, task_id, state, reply.as_deref(), error.as_deref()).await?;
    load_task(kernel, agent, &task_id.to_string()).await
}

async fn load_task(kernel: &Kernel, agent: &Agent, id: &str) -> Result<Value> {
    let task = store::task(&kernel.a2a().db, agent.id, id)
        .await?
        .ok_or_else(|| Error::not_found(format!("task `{id}` not found")))?;
    Ok(wire::task(
        task.id,
        task.context_id,
        task.state,
        &task.updated_at,
        serde_json::from_str(&task.request).unwrap_or(Value::Null),
        task.reply,
        task.error,
    ))
}

async fn get_task(kernel: &Kernel, agent: &Agent, params: &Value) -> Result<Value> {
    let id = params["id"].as_str().ok_or_else(|| Error::invalid("`params.id` is required"))?;
    load_task(kernel, agent, id).await
}

async fn cancel_task(kernel: &Kernel, agent: &Agent, params: &Value) -> Result<Value> {
    let id = params["id"].as_str().ok_or_else(|| Error::invalid("`params.id` is required"))?;
    let task = load_task(kernel, agent, id).await?;
    let running =
        Uuid::parse_str(id).ok().and_then(|u| kernel.a2a().running.lock().expect("a2a tasks").get(&u).cloned());
    match running {
        Some(token) => {
            token.cancel();
            store::set_state(&kernel.a2a().db, id, wire::CANCELED).await?;
            load_task(kernel, agent, id).await
        }
        None => Err(Error::new(
            ErrorKind::Conflict,
            format!("task `{id}` cannot be canceled: it is {}", task["status"]["state"].as_str().unwrap_or("finished")),
        )),
    }
}
