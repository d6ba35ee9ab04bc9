//! The A2A 1.0 JSON shapes (protobuf JSON: camelCase fields, enum names as strings).

use serde_json::{Value, json};

use crate::agent::Agent;
use crate::error::{Error, ErrorKind};

pub const WORKING: &str = "TASK_STATE_WORKING";
pub const COMPLETED: &str = "TASK_STATE_COMPLETED";
pub const FAILED: &str = "TASK_STATE_FAILED";
pub const CANCELED: &str = "TASK_STATE_CANCELED";

/// States after which a task changes no more.
pub fn is_terminal(state: &str) -> bool {
    matches!(state, COMPLETED | FAILED | CANCELED | "TASK_STATE_REJECTED")
}

pub fn interface(url: &str) -> Value {
    json!({ "url": url, "protocolBinding": "JSONRPC", "protocolVersion": super::PROTOCOL_VERSION })
}

pub fn skill(agent: &Agent) -> Value {
    let description = if agent.manifest.description.is_empty() {
        format!("Kennel agent {}", agent.name)
    } else {
        agent.manifest.description.clone()
    };
    json!({ "id": agent.name, "name": agent.name, "description": description, "tags": [agent.agent_type] })
}

/// The text of a message: its text parts, and data parts as JSON, one per line.
pub fn message_text(message: &Value) -> String {
    message["parts"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["text"].as_str().map(str::to_string).or_else(|| p.get("data").map(Value::to_string)))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

pub fn agent_message(text: &str, context_id: &str, task_id: &str) -> Value {
    json!({
        "messageId": uuid::Uuid::now_v7().to_string(),
        "contextId": context_id,
        "taskId": task_id,
        "role": "ROLE_AGENT",
        "parts": [{ "text": text }],
    })
}

/// A task as A2A clients read it: the reply as an artifact, an error as the status message.
pub fn task(
    id: String,
    context_id: String,
    state: String,
    timestamp: &str,
    request: Value,
    reply: Option<String>,
    error: Option<String>,
) -> Value {
    let mut status = json!({ "state": state, "timestamp": timestamp });
    if let Some(e) = &error {
        status["message"] = agent_message(e, &context_id, &id);
    }
    let mut history = vec![request];
    let mut artifacts = Vec::new();
    if let Some(r) = &reply {
        history.push(agent_message(r, &context_id, &id));
        artifacts.push(json!({ "artifactId": format!("{id}-reply"), "name": "reply", "parts": [{ "text": r }] }));
    }
    json!({ "id": id, "contextId": context_id, "status": status, "artifacts": artifacts, "history": history })
}

pub fn rpc_error(id: &Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// A2A's error codes for our error kinds (-32001 task not found, -32002 not cancelable).
pub fn error_code(e: &Error) -> i64 {
    match e.kind {
        ErrorKind::NotFound => -32001,
        ErrorKind::Conflict => -32002,
        ErrorKind::InvalidArguments => -32602,
        _ => -32603,
    }
}
