//! Anthropic Messages API with `tool_use`, and `cache_control` on the stable prefix.

use serde_json::{Value, json};

use super::{ChatReply, ChatRequest, Message, ToolCall, Usage};

pub(super) const API_VERSION: &str = "2023-06-01";

pub(super) fn request_body(req: &ChatRequest<'_>) -> Value {
    let cache = json!({"type": "ephemeral"});
    // Consecutive tool results travel together in one user message.
    let mut messages: Vec<Value> = Vec::with_capacity(req.messages.len());
    for m in req.messages {
        match m {
            Message::User { content } => {
                messages.push(json!({"role": "user", "content": [{"type": "text", "text": content}]}));
            }
            Message::Assistant { content, tool_calls } => {
                let mut blocks = Vec::new();
                if let Some(text) = content.as_ref().filter(|t| !t.is_empty()) {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for c in tool_calls {
                    let input = if c.arguments.is_object() { c.arguments.clone() } else { json!({}) };
                    blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
                }
                messages.push(json!({"role": "assistant", "content": blocks}));
            }
            Message::Tool { call_id, content, is_error, .. } => {
                let block =
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error});
                let joins_previous = messages
                    .last()
                    .is_some_and(|last| last["role"] == "user" && last["content"][0]["type"] == "tool_result");
                if joins_previous {
                    messages.last_mut().expect("checked")["content"].as_array_mut().expect("blocks").push(block);
                } else {
                    messages.push(json!({"role": "user", "content": [block]}));
                }
            }
        }
    }
    let mut body = json!({
        "model": req.model,
        "max_tokens": req.max_tokens,
        "messages": messages,
    });
    if !req.system.is_empty() {
        let mut system = json!({"type": "text", "text": req.system});
        if req.cache_prefix {
            system["cache_control"] = cache.clone();
        }
        body["system"] = json!([system]);
    }
    if !req.tools.is_empty() {
        let mut tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        if req.cache_prefix
            && let Some(last) = tools.last_mut()
        {
            last["cache_control"] = cache;
        }
        body["tools"] = Value::Array(tools);
    }
    body
}

pub(super) fn parse_reply(body: &Value) -> Result<ChatReply, String> {
    let blocks = body["content"].as_array().ok_or("no `content` array")?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in blocks {
        match block["type"].as_str() {
            Some("text") => text.push_str(block["text"].as_str().unwrap_or_default()),
            Some("tool_use") => tool_calls.push(ToolCall {
                id: block["id"].as_str().ok_or("a tool_use block without `id`")?.to_string(),
                name: block["name"].as_str().ok_or("a tool_use block without `name`")?.to_string(),
                arguments: block["input"].clone(),
            }),
            _ => {}
        }
    }
    let usage = &body["usage"];
    Ok(ChatReply {
        content: (!text.is_empty()).then_some(text),
        tool_calls,
        usage: Usage {
            input_tokens: usage["input_tokens"].as_u64().unwrap_or(0),
            output_tokens: usage["output_tokens"].as_u64().unwrap_or(0),
            cached_tokens: usage["cache_read_input_tokens"].as_u64().unwrap_or(0),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;

    #[test]
    fn tool_results_group_and_the_prefix_is_cached() {
        let call = |id: &str| ToolCall { id: id.into(), name: "t".into(), arguments: json!({"a": 1}) };
        let messages = vec![
            Message::User { content: "go".into() },
            Message::Assistant { content: Some("calling".into()), tool_calls: vec![call("x"), call("y")] },
            Message::Tool { call_id: "x".into(), name: "t".into(), content: "1".into(), is_error: false },
            Message::Tool { call_id: "y".into(), name: "t".into(), content: "2".into(), is_error: true },
        ];
        let tools = vec![
            ToolSpec { name: "a".into(), description: "".into(), parameters: json!({"type": "object"}).into() },
            ToolSpec { name: "b".into(), description: "".into(), parameters: json!({"type": "object"}).into() },
        ];
        let body = request_body(&ChatRequest {
            model: "m",
            system: "sys",
            messages: &messages,
            tools: &tools,
            max_tokens: 10,
            cache_prefix: true,
        });
        assert_eq!(body["messages"].as_array().unwrap().len(), 3);
        assert_eq!(body["messages"][2]["content"][1]["tool_use_id"], "y");
        assert_eq!(body["messages"][2]["content"][1]["is_error"], true);
        assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    }

    #[test]
    fn replies_parse() {
        let reply = parse_reply(&json!({"content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "system_time", "input": {}}
        ], "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 3, "cache_read_input_tokens": 8}}))
        .unwrap();
        assert_eq!(reply.content.as_deref(), Some("Let me check."));
        assert_eq!(reply.tool_calls[0].name, "system_time");
        assert_eq!(reply.usage.cached_tokens, 8);
    }
}
