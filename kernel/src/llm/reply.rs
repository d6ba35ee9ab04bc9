//! A reply put together from streamed pieces, or handed on whole.

use serde_json::Value;

use super::{ChatReply, Delta, OnDelta, StreamFault, ToolCall, Usage};

/// A reply put together from its streamed pieces.
#[derive(Default)]
pub(super) struct ReplyBuilder {
    pub(super) text: String,
    /// Tool calls in the reply's order: id, name, the arguments' text so far.
    pub(super) calls: Vec<(String, String, String)>,
    pub(super) usage: Usage,
    /// The stream said the reply is complete (`[DONE]`, `message_stop`).
    pub(super) done: bool,
    /// The stream gave the reply's finish reason: complete even if its closing event is lost.
    pub(super) finished: bool,
    /// That finish reason says the reply reached `max_tokens`.
    pub(super) truncated: bool,
    /// A piece has gone to the caller.
    pub(super) shown: bool,
}

impl ReplyBuilder {
    pub(super) fn text(&mut self, piece: &str, on_delta: OnDelta<'_>) {
        if !piece.is_empty() {
            self.text.push_str(piece);
            self.shown = true;
            on_delta(Delta::Text(piece));
        }
    }

    /// A piece of tool call `index`: the next call when `index` is just past the last one.
    /// Any other index is out of the protocol's order (and must not make us allocate).
    pub(super) fn call(
        &mut self,
        index: usize,
        id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
        on_delta: OnDelta<'_>,
    ) -> Result<(), StreamFault> {
        if index > self.calls.len() {
            return Err(StreamFault::Shape(format!("tool call {index} came before call {}", self.calls.len())));
        }
        if index == self.calls.len() {
            self.calls.push((format!("call_{index}"), String::new(), String::new()));
        }
        let call = &mut self.calls[index];
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            call.0 = id.to_string();
        }
        // The name comes whole with the call's first piece; a server that repeats it must not
        // make `fnfn`.
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            call.1 = name.to_string();
        }
        call.2.push_str(arguments);
        self.shown = true;
        on_delta(Delta::ToolCall { index, id, name, arguments });
        Ok(())
    }

    pub(super) fn finish(self) -> ChatReply {
        ChatReply {
            content: (!self.text.is_empty()).then_some(self.text),
            tool_calls: self
                .calls
                .into_iter()
                .map(|(id, name, arguments)| ToolCall { id, name, arguments: parse_arguments(&arguments) })
                .collect(),
            usage: self.usage,
            truncated: self.truncated,
        }
    }

    /// Nothing came: no text, no tool call, no finish reason.
    pub(super) fn is_empty(&self) -> bool {
        self.text.is_empty() && self.calls.is_empty() && !self.finished
    }
}

/// A reply that came in one piece, handed out as the pieces a stream would have been.
pub(super) fn deliver_whole(reply: &ChatReply, on_delta: OnDelta<'_>) {
    if let Some(text) = reply.content.as_deref() {
        on_delta(Delta::Text(text));
    }
    for (index, call) in reply.tool_calls.iter().enumerate() {
        let arguments = match &call.arguments {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        };
        on_delta(Delta::ToolCall { index, id: Some(&call.id), name: Some(&call.name), arguments: &arguments });
    }
}

/// Parses a model's tool-call arguments; text that is not JSON is kept as a string so the
/// pipeline can refuse it with a clear message.
pub(super) fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}
