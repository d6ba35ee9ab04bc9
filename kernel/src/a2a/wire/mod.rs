//! A2A's two wire formats: 1.0 (protobuf JSON: camelCase fields, enum names as strings,
//! `v1`) and 0.3 (`kind`-tagged objects, lower-case states and roles, `v0_3`).
//!
//! Kennel keeps tasks and messages in the 1.0 form. A 0.3 request is translated to it on
//! the way in and every answer is rendered in the caller's dialect on the way out, so the
//! task service and the store know one format.

pub(crate) mod v0_3;
pub(crate) mod v1;

use serde_json::Value;

use super::task::{Task, TaskEvent};

/// The protocol version a request speaks (and its answer is written in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    V1,
    V0_3,
}

impl Dialect {
    pub fn version(self) -> &'static str {
        match self {
            Dialect::V1 => "1.0",
            Dialect::V0_3 => "0.3",
        }
    }

    /// The methods this daemon serves in this dialect, for error messages.
    pub fn served_methods(self) -> &'static str {
        match self {
            Dialect::V1 => "SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask",
            Dialect::V0_3 => "message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe",
        }
    }

    /// What `A2A-Version` asks for: absent (the method name decides), a version this daemon
    /// speaks, or one it does not. Only major and minor count (`1.0.2` is 1.0; any 1.x is
    /// read as 1.0, as the SDK does).
    pub fn requested(header: Option<&str>) -> Result<Option<Dialect>, String> {
        let Some(text) = header.map(str::trim).filter(|t| !t.is_empty()) else { return Ok(None) };
        let mut parts = text.split('.');
        match (parts.next(), parts.next()) {
            (Some("1"), _) => Ok(Some(Dialect::V1)),
            (Some("0"), Some("3")) => Ok(Some(Dialect::V0_3)),
            _ => Err(text.to_string()),
        }
    }

    /// A task as this dialect writes it, with at most `history` messages of its history
    /// (`None`: all) and its artifacts unless left out.
    pub fn task(self, task: &Task, history: Option<usize>, artifacts: bool) -> Value {
        let canonical = v1::task(task, history, artifacts);
        match self {
            Dialect::V1 => canonical,
            Dialect::V0_3 => v0_3::task_from_v1(&canonical),
        }
    }

    /// The result of a blocking or immediate send: 1.0 wraps the task, 0.3 answers with it.
    pub fn send_result(self, task: &Task, history: Option<usize>) -> Value {
        match self {
            Dialect::V1 => serde_json::json!({ "task": self.task(task, history, true) }),
            Dialect::V0_3 => self.task(task, history, true),
        }
    }

    /// One streamed event: the task itself first, then its updates.
    pub fn stream_task(self, task: &Task) -> Value {
        match self {
            Dialect::V1 => serde_json::json!({ "task": self.task(task, None, true) }),
            Dialect::V0_3 => self.task(task, None, true),
        }
    }

    pub fn stream_event(self, task: &Task, event: &TaskEvent) -> Value {
        match self {
            Dialect::V1 => v1::event(task, event),
            Dialect::V0_3 => v0_3::event(task, event),
        }
    }

    /// The user's message from a send's `params.message`, in the 1.0 form.
    pub fn incoming_message(self, message: &Value) -> Result<Value, String> {
        match self {
            Dialect::V1 => v1::check_message(message).map(|()| message.clone()),
            Dialect::V0_3 => v0_3::message_to_v1(message),
        }
    }
}
