//! The A2A 1.0 shapes (protobuf JSON), which are also how Kennel stores tasks and messages.

use serde_json::{Value, json};

use crate::a2a::task::{Task, TaskEvent};

pub fn interface(url: &str, version: &str) -> Value {
    json!({ "url": url, "protocolBinding": "JSONRPC", "protocolVersion": version })
}

/// `{ "bearer": [] }` as a 1.0 security requirement.
pub fn bearer_requirement() -> Value {
    json!({ "schemes": { "bearer": {} } })
}

/// The text a message gives the agent: its text parts, data parts as JSON, and a line naming
/// each file part (Kennel does not fetch or keep files sent over A2A).
pub fn message_text(message: &Value) -> String {
    let Some(parts) = message["parts"].as_array() else { return String::new() };
    parts.iter().filter_map(part_text).collect::<Vec<_>>().join("\n")
}

fn part_text(part: &Value) -> Option<String> {
    if let Some(text) = part["text"].as_str() {
        return Some(text.to_string());
    }
    if let Some(data) = part.get("data") {
        return Some(data.to_string());
    }
    let name = part["filename"].as_str().unwrap_or("unnamed");
    let media = part["mediaType"].as_str().unwrap_or("of unknown type");
    if let Some(url) = part["url"].as_str() {
        return Some(format!("[file {name}, {media}, at {url}]"));
    }
    part.get("raw").map(|_| format!("[file {name}, {media}, sent inline and not shown]"))
}

/// What a message sent to this daemon must have: parts, each of a kind 1.0 defines.
pub fn check_message(message: &Value) -> Result<(), String> {
    let parts = message
        .get("parts")
        .and_then(Value::as_array)
        .filter(|p| !p.is_empty())
        .ok_or("`params.message.parts` must be a non-empty array")?;
    for (i, part) in parts.iter().enumerate() {
        let kinds = ["text", "data", "url", "raw"].iter().filter(|k| part.get(**k).is_some()).count();
        if kinds != 1 {
            return Err(format!("`params.message.parts[{i}]` must have exactly one of `text`, `data`, `url`, `raw`"));
        }
    }
    Ok(())
}

pub fn agent_message(text: &str, context_id: &str, task_id: &str, message_id: &str) -> Value {
    json!({
        "messageId": message_id,
        "contextId": context_id,
        "taskId": task_id,
        "role": "ROLE_AGENT",
        "parts": [{ "text": text }],
    })
}

fn reply_artifact(task_id: &str, text: &str) -> Value {
    json!({ "artifactId": format!("{task_id}-reply"), "name": "reply", "parts": [{ "text": text }] })
}

/// A task: the reply as an artifact (and the last message of the history), an error as the
/// status message. `history`: keep at most this many of the latest messages.
pub fn task(task: &Task, history: Option<usize>, artifacts: bool) -> Value {
    let (id, context) = (task.id.to_string(), task.context_id.as_str());
    let mut status = json!({ "state": task.state.as_str(), "timestamp": task.updated_at });
    if let Some(error) = &task.error {
        status["message"] = agent_message(error, context, &id, &format!("{id}-status"));
    }
    let mut messages = vec![task.request.clone()];
    if let Some(reply) = &task.reply {
        messages.push(agent_message(reply, context, &id, &format!("{id}-reply")));
    }
    let keep = history.unwrap_or(messages.len()).min(messages.len());
    let messages = messages.split_off(messages.len() - keep);
    let mut out = json!({ "id": id, "contextId": context, "status": status, "history": messages });
    if artifacts {
        out["artifacts"] = Value::Array(task.reply.iter().map(|r| reply_artifact(&id, r)).collect());
    }
    out
}

/// A streamed update of `task` (`statusUpdate` or `artifactUpdate`).
pub fn event(task: &Task, event: &TaskEvent) -> Value {
    let (id, context) = (task.id.to_string(), task.context_id.as_str());
    match event {
        TaskEvent::Status { state, message, timestamp } => {
            let mut status = json!({ "state": state.as_str(), "timestamp": timestamp });
            if let Some(text) = message {
                status["message"] = agent_message(text, context, &id, &format!("{id}-status"));
            }
            json!({ "statusUpdate": { "taskId": id, "contextId": context, "status": status } })
        }
        TaskEvent::Artifact { text } => json!({
            "artifactUpdate": { "taskId": id, "contextId": context, "artifact": reply_artifact(&id, text), "append": false, "lastChunk": true }
        }),
        TaskEvent::ArtifactChunk { text, append } => json!({
            "artifactUpdate": { "taskId": id, "contextId": context, "artifact": reply_artifact(&id, text), "append": append, "lastChunk": false }
        }),
    }
}
