//! The A2A 0.3 shapes, translated to and from the 1.0 form Kennel keeps: objects tagged with
//! `kind` (`message`, `task`, `status-update`, `artifact-update`; parts `text`, `data`,
//! `file`), lower-case roles (`user`, `agent`) and kebab-case states (`input-required`).

use serde_json::{Map, Value, json};

use crate::a2a::task::{Task, TaskEvent, TaskState};

pub fn state(state: TaskState) -> &'static str {
    match state {
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Canceled => "canceled",
        TaskState::Rejected => "rejected",
        TaskState::InputRequired => "input-required",
        TaskState::AuthRequired => "auth-required",
    }
}

/// A 0.3 state's 1.0 name (`unknown` and anything else: `TASK_STATE_UNSPECIFIED`).
fn state_to_v1(name: &str) -> &'static str {
    TaskState::ALL.iter().find(|s| state(**s) == name).map_or("TASK_STATE_UNSPECIFIED", |s| s.as_str())
}

fn state_from_v1(name: &str) -> &'static str {
    TaskState::ALL.iter().find(|s| s.as_str() == name).map_or("unknown", |s| state(*s))
}

fn role_to_v1(role: &Value) -> Value {
    Value::from(if role == "agent" { "ROLE_AGENT" } else { "ROLE_USER" })
}

fn role_from_v1(role: &Value) -> Value {
    Value::from(if role == "ROLE_AGENT" { "agent" } else { "user" })
}

/// Copies the fields both versions spell alike.
fn copy(from: &Value, to: &mut Map<String, Value>, fields: &[&str]) {
    for field in fields {
        if let Some(v) = from.get(*field) {
            to.insert((*field).to_string(), v.clone());
        }
    }
}

const MESSAGE_FIELDS: [&str; 6] = ["messageId", "contextId", "taskId", "metadata", "extensions", "referenceTaskIds"];

/// A 0.3 message (`params.message` of `message/send`) in the 1.0 form.
pub fn message_to_v1(message: &Value) -> Result<Value, String> {
    let parts = message
        .get("parts")
        .and_then(Value::as_array)
        .filter(|p| !p.is_empty())
        .ok_or("`params.message.parts` must be a non-empty array")?;
    let parts = parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            part_to_v1(p).ok_or_else(|| format!("`params.message.parts[{i}]` is not a text, data or file part"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Map::new();
    copy(message, &mut out, &MESSAGE_FIELDS);
    out.insert("role".into(), role_to_v1(&message["role"]));
    out.insert("parts".into(), Value::Array(parts));
    Ok(Value::Object(out))
}

pub fn message_from_v1(message: &Value) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), "message".into());
    copy(message, &mut out, &MESSAGE_FIELDS);
    out.insert("role".into(), role_from_v1(&message["role"]));
    let parts = message["parts"].as_array().map(|p| p.iter().map(part_from_v1).collect()).unwrap_or_default();
    out.insert("parts".into(), Value::Array(parts));
    Value::Object(out)
}

fn part_to_v1(part: &Value) -> Option<Value> {
    let mut out = Map::new();
    copy(part, &mut out, &["metadata"]);
    // The 0.3 SDK reads a part without `kind` by the fields it has; so does this.
    let kind =
        part["kind"].as_str().or_else(|| ["text", "data", "file"].into_iter().find(|k| part.get(*k).is_some()))?;
    match kind {
        "text" => {
            out.insert("text".into(), part.get("text").filter(|t| t.is_string())?.clone());
        }
        "data" => {
            out.insert("data".into(), part.get("data")?.clone());
        }
        "file" => {
            let file = part.get("file").filter(|f| f.is_object())?;
            if let Some(uri) = file.get("uri") {
                out.insert("url".into(), uri.clone());
            } else {
                out.insert("raw".into(), file.get("bytes")?.clone());
            }
            if let Some(mime) = file.get("mimeType") {
                out.insert("mediaType".into(), mime.clone());
            }
            if let Some(name) = file.get("name") {
                out.insert("filename".into(), name.clone());
            }
        }
        _ => return None,
    }
    Some(Value::Object(out))
}

fn part_from_v1(part: &Value) -> Value {
    let mut out = Map::new();
    copy(part, &mut out, &["metadata"]);
    if let Some(text) = part.get("text") {
        out.insert("kind".into(), "text".into());
        out.insert("text".into(), text.clone());
    } else if let Some(data) = part.get("data") {
        out.insert("kind".into(), "data".into());
        // 0.3's data part holds an object; 1.0's any JSON value.
        let data = if data.is_object() { data.clone() } else { json!({ "value": data }) };
        out.insert("data".into(), data);
    } else {
        let mut file = Map::new();
        if let Some(url) = part.get("url") {
            file.insert("uri".into(), url.clone());
        }
        if let Some(raw) = part.get("raw") {
            file.insert("bytes".into(), raw.clone());
        }
        if let Some(media) = part.get("mediaType") {
            file.insert("mimeType".into(), media.clone());
        }
        if let Some(name) = part.get("filename") {
            file.insert("name".into(), name.clone());
        }
        out.insert("kind".into(), "file".into());
        out.insert("file".into(), Value::Object(file));
    }
    Value::Object(out)
}

fn artifact_from_v1(artifact: &Value) -> Value {
    let mut out = Map::new();
    copy(artifact, &mut out, &["artifactId", "name", "description", "metadata", "extensions"]);
    let parts = artifact["parts"].as_array().map(|p| p.iter().map(part_from_v1).collect()).unwrap_or_default();
    out.insert("parts".into(), Value::Array(parts));
    Value::Object(out)
}

fn artifact_to_v1(artifact: &Value) -> Value {
    let mut out = Map::new();
    copy(artifact, &mut out, &["artifactId", "name", "description", "metadata", "extensions"]);
    let parts = artifact["parts"].as_array().map(|p| p.iter().filter_map(part_to_v1).collect()).unwrap_or_default();
    out.insert("parts".into(), Value::Array(parts));
    Value::Object(out)
}

fn status_from_v1(status: &Value) -> Value {
    let mut out = json!({ "state": state_from_v1(status["state"].as_str().unwrap_or_default()) });
    if let Some(t) = status.get("timestamp") {
        out["timestamp"] = t.clone();
    }
    if let Some(m) = status.get("message") {
        out["message"] = message_from_v1(m);
    }
    out
}

fn status_to_v1(status: &Value) -> Value {
    let mut out = json!({ "state": state_to_v1(status["state"].as_str().unwrap_or_default()) });
    if let Some(t) = status.get("timestamp") {
        out["timestamp"] = t.clone();
    }
    if let Some(m) = status.get("message").and_then(|m| message_to_v1(m).ok()) {
        out["message"] = m;
    }
    out
}

/// A task in the 1.0 form (as [`super::v1::task`] writes it) as 0.3 writes it.
pub fn task_from_v1(task: &Value) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), "task".into());
    copy(task, &mut out, &["id", "contextId", "metadata"]);
    out.insert("status".into(), status_from_v1(&task["status"]));
    let map = |field: &str, f: fn(&Value) -> Value| task[field].as_array().map(|a| a.iter().map(f).collect::<Vec<_>>());
    if let Some(history) = map("history", message_from_v1) {
        out.insert("history".into(), Value::Array(history));
    }
    if let Some(artifacts) = map("artifacts", artifact_from_v1) {
        out.insert("artifacts".into(), Value::Array(artifacts));
    }
    Value::Object(out)
}

/// A task a 0.3 server sent, in the 1.0 form (for Kennel's client).
pub fn task_to_v1(task: &Value) -> Value {
    let mut out = Map::new();
    copy(task, &mut out, &["id", "contextId", "metadata"]);
    out.insert("status".into(), status_to_v1(&task["status"]));
    let history = task["history"].as_array().map(|a| a.iter().filter_map(|m| message_to_v1(m).ok()).collect());
    out.insert("history".into(), Value::Array(history.unwrap_or_default()));
    let artifacts = task["artifacts"].as_array().map(|a| a.iter().map(artifact_to_v1).collect());
    out.insert("artifacts".into(), Value::Array(artifacts.unwrap_or_default()));
    Value::Object(out)
}

/// A streamed update as 0.3 writes it: `status-update` (with `final` on the last) or
/// `artifact-update`.
pub fn event(task: &Task, event: &TaskEvent) -> Value {
    let canonical = super::v1::event(task, event);
    match event {
        TaskEvent::Status { state, .. } => {
            let update = &canonical["statusUpdate"];
            json!({
                "kind": "status-update",
                "taskId": update["taskId"],
                "contextId": update["contextId"],
                "status": status_from_v1(&update["status"]),
                "final": state.is_terminal(),
            })
        }
        TaskEvent::Artifact { .. } | TaskEvent::ArtifactChunk { .. } => {
            let update = &canonical["artifactUpdate"];
            json!({
                "kind": "artifact-update",
                "taskId": update["taskId"],
                "contextId": update["contextId"],
                "artifact": artifact_from_v1(&update["artifact"]),
                "append": update["append"],
                "lastChunk": update["lastChunk"],
            })
        }
    }
}

/// A JSON-RPC result a 0.3 server sent for `message/send` or `tasks/get`, in the 1.0
/// `SendMessageResponse` form: `{ "task": … }` or `{ "message": … }`.
pub fn result_to_v1(result: &Value) -> Value {
    match result["kind"].as_str() {
        Some("message") => json!({ "message": message_to_v1(result).unwrap_or(Value::Null) }),
        _ => json!({ "task": task_to_v1(result) }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_their_parts_survive_the_round_trip() {
        let sent = json!({
            "kind": "message", "messageId": "m1", "role": "user", "contextId": "c1",
            "parts": [
                { "kind": "text", "text": "hi" },
                { "kind": "data", "data": { "n": 1 } },
                { "kind": "file", "file": { "uri": "https://x/y.png", "mimeType": "image/png", "name": "y.png" } },
            ],
        });
        let v1 = message_to_v1(&sent).unwrap();
        assert_eq!(v1["role"], "ROLE_USER");
        assert_eq!(v1["parts"][0], json!({ "text": "hi" }));
        assert_eq!(v1["parts"][2], json!({ "url": "https://x/y.png", "mediaType": "image/png", "filename": "y.png" }));
        assert_eq!(message_from_v1(&v1), sent);
    }

    #[test]
    fn a_part_of_no_known_kind_is_refused_by_position() {
        let sent = json!({ "role": "user", "parts": [{ "kind": "text", "text": "a" }, { "kind": "video" }] });
        assert_eq!(message_to_v1(&sent).unwrap_err(), "`params.message.parts[1]` is not a text, data or file part");
        assert!(message_to_v1(&json!({ "role": "user", "parts": [] })).is_err());
        let untagged = message_to_v1(&json!({ "role": "user", "parts": [{ "text": "no kind" }] })).unwrap();
        assert_eq!(untagged["parts"][0], json!({ "text": "no kind" }), "a part is read by its fields, as the SDK does");
    }

    #[test]
    fn states_are_spelled_as_each_version_spells_them() {
        assert_eq!(state(TaskState::InputRequired), "input-required");
        assert_eq!(state_to_v1("canceled"), "TASK_STATE_CANCELED");
        assert_eq!(state_to_v1("unknown"), "TASK_STATE_UNSPECIFIED");
        assert_eq!(state_from_v1("TASK_STATE_AUTH_REQUIRED"), "auth-required");
    }
}
