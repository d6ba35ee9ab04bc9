//! OpenAI-compatible chat completions with tool calling (OpenAI, Ollama, vLLM, llama.cpp
//! server, OpenRouter, Groq, DeepSeek).

use serde_json::{Value, json};

use super::sse::SseEvent;
use super::{ChatReply, ChatRequest, Message, OnDelta, ReplyBuilder, StreamFault, ToolCall, Usage, parse_arguments};

pub(super) fn request_body(req: &ChatRequest<'_>, stream: bool) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    for m in req.messages {
        messages.push(match m {
            Message::User { content } => json!({"role": "user", "content": content}),
            Message::Assistant { content, tool_calls } => {
                let mut msg = json!({"role": "assistant", "content": content});
                if !tool_calls.is_empty() {
                    msg["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            let arguments = match &c.arguments {
                                Value::String(raw) => raw.clone(),
                                other => other.to_string(),
                            };
                            json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments}})
                        })
                        .collect();
                }
                msg
            }
            Message::Tool { call_id, content, .. } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
        });
    }
    let mut body = json!({
        "model": req.model,
        "messages": messages,
        "max_tokens": req.max_tokens,
    });
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
        body["tool_choice"] = json!("auto");
    }
    if stream {
        // The usage comes in a last chunk of its own only when asked for.
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

/// One streamed chunk: `choices[0].delta` with text and tool-call pieces, the usage chunk,
/// an error object, or `[DONE]`.
pub(super) fn stream_event(
    event: &SseEvent,
    reply: &mut ReplyBuilder,
    on_delta: OnDelta<'_>,
) -> Result<(), StreamFault> {
    if event.data.trim() == "[DONE]" {
        reply.done = true;
        return Ok(());
    }
    let chunk: Value =
        serde_json::from_str(&event.data).map_err(|e| StreamFault::Shape(format!("a chunk that is not JSON: {e}")))?;
    if let Some(error) = chunk.get("error") {
        let message = error["message"].as_str().map_or_else(|| error.to_string(), str::to_string);
        return Err(StreamFault::Provider(message));
    }
    if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
        reply.usage = usage_of(usage);
    }
    let Some(choice) = chunk["choices"].get(0) else { return Ok(()) };
    if choice["finish_reason"].is_string() {
        reply.finished = true;
    }
    let delta = &choice["delta"];
    if let Some(text) = delta["content"].as_str() {
        reply.text(text, on_delta);
    }
    for call in delta["tool_calls"].as_array().into_iter().flatten() {
        let index = call["index"].as_u64().map_or(reply.calls.len().saturating_sub(1), |i| i as usize);
        let function = &call["function"];
        reply.call(
            index,
            call["id"].as_str(),
            function["name"].as_str(),
            function["arguments"].as_str().unwrap_or_default(),
            on_delta,
        )?;
    }
    Ok(())
}

fn usage_of(usage: &Value) -> Usage {
    Usage {
        input_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
        output_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
        cached_tokens: usage["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap_or(0),
    }
}

pub(super) fn parse_reply(body: &Value) -> Result<ChatReply, String> {
    let message = body["choices"].get(0).map(|c| &c["message"]).ok_or("no `choices[0].message`")?;
    let content = message["content"].as_str().filter(|s| !s.is_empty()).map(str::to_string);
    let mut tool_calls = Vec::new();
    if let Some(calls) = message["tool_calls"].as_array() {
        for (i, call) in calls.iter().enumerate() {
            let name = call["function"]["name"].as_str().ok_or("a tool call without `function.name`")?;
            let arguments = match &call["function"]["arguments"] {
                Value::String(raw) => parse_arguments(raw),
                Value::Null => Value::Object(Default::default()),
                other => other.clone(),
            };
            let id = call["id"].as_str().map(str::to_string).unwrap_or_else(|| format!("call_{i}"));
            tool_calls.push(ToolCall { id, name: name.to_string(), arguments });
        }
    }
    Ok(ChatReply { content, tool_calls, usage: usage_of(&body["usage"]) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;

    #[test]
    fn history_and_tools_translate_to_the_wire_format() {
        let messages = vec![
            Message::User { content: "hi".into() },
            Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall { id: "c1".into(), name: "system_time".into(), arguments: json!({}) }],
            },
            Message::Tool {
                call_id: "c1".into(),
                name: "system_time".into(),
                content: "{\"utc\":\"x\"}".into(),
                is_error: false,
            },
        ];
        let tools = vec![ToolSpec {
            name: "system_time".into(),
            description: "clock".into(),
            parameters: json!({"type": "object"}).into(),
        }];
        let body = request_body(
            &ChatRequest {
                model: "m",
                system: "be brief",
                messages: &messages,
                tools: &tools,
                max_tokens: 100,
                cache_prefix: false,
            },
            false,
        );
        assert_eq!(body["messages"][0], json!({"role": "system", "content": "be brief"}));
        assert_eq!(body["messages"][2]["tool_calls"][0]["function"]["arguments"], "{}");
        assert_eq!(body["messages"][3], json!({"role": "tool", "tool_call_id": "c1", "content": "{\"utc\":\"x\"}"}));
        assert_eq!(body["tools"][0]["function"]["name"], "system_time");
    }

    #[test]
    fn replies_parse_with_bad_arguments_kept_as_text() {
        let reply = parse_reply(&json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "t", "arguments": "{\"x\": 1}"}},
            {"id": "b", "type": "function", "function": {"name": "t", "arguments": "{oops"}}
        ]}}], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}))
        .unwrap();
        assert_eq!(reply.tool_calls[0].arguments, json!({"x": 1}));
        assert_eq!(reply.tool_calls[1].arguments, json!("{oops"));
        assert_eq!(reply.usage.input_tokens, 5);
        assert!(parse_reply(&json!({"nope": 1})).is_err());
    }

    #[test]
    fn a_stream_of_text_and_tool_call_pieces_makes_the_reply() {
        let chunks = [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"lo"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"system_time","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"tz\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"UTC\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":4}}}"#,
            "[DONE]",
        ];
        let pieces = std::sync::Mutex::new(Vec::new());
        let on_delta = |d: crate::llm::Delta<'_>| pieces.lock().unwrap().push(format!("{d:?}"));
        let mut reply = ReplyBuilder::default();
        for data in chunks {
            stream_event(&SseEvent { event: String::new(), data: data.into() }, &mut reply, &on_delta).ok().unwrap();
        }
        assert!(reply.done);
        let reply = reply.finish();
        assert_eq!(reply.content.as_deref(), Some("Hello"));
        assert_eq!(
            reply.tool_calls,
            vec![ToolCall { id: "call_a".into(), name: "system_time".into(), arguments: json!({"tz": "UTC"}) }]
        );
        assert_eq!(reply.usage, Usage { input_tokens: 12, output_tokens: 7, cached_tokens: 4 });
        assert_eq!(pieces.lock().unwrap().len(), 5, "two text pieces, three tool-call pieces");
        let out_of_order = SseEvent {
            event: String::new(),
            data: r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1000000000000,"function":{"arguments":"x"}}]}}]}"#.into(),
        };
        assert!(matches!(
            stream_event(&out_of_order, &mut ReplyBuilder::default(), &on_delta),
            Err(StreamFault::Shape(_))
        ));
        let mut failed = ReplyBuilder::default();
        let error = SseEvent { event: String::new(), data: r#"{"error":{"message":"overloaded"}}"#.into() };
        assert!(
            matches!(stream_event(&error, &mut failed, &on_delta), Err(StreamFault::Provider(m)) if m == "overloaded")
        );
    }
}
