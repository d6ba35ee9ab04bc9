//! Anthropic Messages API with `tool_use`, and `cache_control` on the stable prefix.

use serde_json::{Value, json};

use super::sse::SseEvent;
use super::{ChatReply, ChatRequest, Message, OnDelta, ReplyBuilder, StreamFault, ToolCall, Usage};

pub(super) const API_VERSION: &str = "2023-06-01";

pub(super) fn request_body(req: &ChatRequest<'_>, stream: bool) -> Value {
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
            Message::Tool { call_id, content, is_error, image, .. } => {
                let text = req.tool_text(call_id, content, image.as_ref());
                let content = match req.images.get(call_id) {
                    Some(loaded) => json!([
                        {"type": "text", "text": text},
                        {"type": "image", "source": {"type": "base64", "media_type": loaded.media_type, "data": loaded.base64}},
                    ]),
                    None => json!(text),
                };
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
    if stream {
        body["stream"] = json!(true);
    }
    body
}

/// Which of a streamed message's content blocks are tool calls, and which call each is.
#[derive(Default)]
pub(super) struct Blocks(std::collections::HashMap<u64, usize>);

/// One streamed event: `message_start` (input usage), `content_block_start` (a text block or
/// a `tool_use` with its id and name), `content_block_delta` (`text_delta`,
/// `input_json_delta`), `message_delta` (output usage), `message_stop`, `error`; `ping` and
/// the rest carry nothing for the reply.
pub(super) fn stream_event(
    event: &SseEvent,
    blocks: &mut Blocks,
    reply: &mut ReplyBuilder,
    on_delta: OnDelta<'_>,
) -> Result<(), StreamFault> {
    let data: Value =
        serde_json::from_str(&event.data).map_err(|e| StreamFault::Shape(format!("an event that is not JSON: {e}")))?;
    let kind = if event.event.is_empty() { data["type"].as_str().unwrap_or_default() } else { event.event.as_str() };
    let index = data["index"].as_u64().unwrap_or(0);
    match kind {
        "message_start" => {
            reply.usage = usage_of(&data["message"]["usage"]);
        }
        "content_block_start" => {
            let block = &data["content_block"];
            match block["type"].as_str() {
                Some("tool_use") => {
                    let call = reply.calls.len();
                    blocks.0.insert(index, call);
                    let id = block["id"].as_str().ok_or(StreamFault::Shape("a tool_use block without `id`".into()))?;
                    let name =
                        block["name"].as_str().ok_or(StreamFault::Shape("a tool_use block without `name`".into()))?;
                    reply.call(call, Some(id), Some(name), "", on_delta)?;
                }
                Some("text") => reply.text(block["text"].as_str().unwrap_or_default(), on_delta),
                _ => {}
            }
        }
        "content_block_delta" => {
            let delta = &data["delta"];
            match delta["type"].as_str() {
                Some("text_delta") => reply.text(delta["text"].as_str().unwrap_or_default(), on_delta),
                Some("input_json_delta") => {
                    let call = *blocks
                        .0
                        .get(&index)
                        .ok_or(StreamFault::Shape(format!("input for block {index}, which is not a tool_use")))?;
                    reply.call(call, None, None, delta["partial_json"].as_str().unwrap_or_default(), on_delta)?;
                }
                _ => {}
            }
        }
        "message_delta" => {
            if let Some(reason) = data["delta"]["stop_reason"].as_str() {
                reply.finished = true;
                reply.truncated = reason == "max_tokens";
            }
            if let Some(output) = data["usage"]["output_tokens"].as_u64() {
                reply.usage.output_tokens = output;
            }
        }
        "message_stop" => reply.done = true,
        "error" => {
            let message = data["error"]["message"].as_str().map_or_else(|| data.to_string(), str::to_string);
            return Err(StreamFault::Provider(message));
        }
        _ => {}
    }
    Ok(())
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
    let truncated = body["stop_reason"] == "max_tokens";
    Ok(ChatReply {
        content: (!text.is_empty()).then_some(text),
        tool_calls,
        usage: usage_of(&body["usage"]),
        truncated,
    })
}

/// Anthropic counts cache reads and writes apart from `input_tokens`; ours counts every input
/// token (as OpenAI's `prompt_tokens` does), the cached ones among them.
fn usage_of(usage: &Value) -> Usage {
    let n = |k: &str| usage[k].as_u64().unwrap_or(0);
    let (cached, written) = (n("cache_read_input_tokens"), n("cache_creation_input_tokens"));
    Usage {
        input_tokens: n("input_tokens") + cached + written,
        output_tokens: n("output_tokens"),
        cached_tokens: cached,
        cache_write_tokens: written,
        estimated: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{LoadedImage, LoadedImages, ToolImage, ToolSpec};

    #[test]
    fn tool_results_group_and_the_prefix_is_cached() {
        let call = |id: &str| ToolCall { id: id.into(), name: "t".into(), arguments: json!({"a": 1}) };
        let messages = vec![
            Message::User { content: "go".into() },
            Message::Assistant { content: Some("calling".into()), tool_calls: vec![call("x"), call("y")] },
            Message::Tool { call_id: "x".into(), name: "t".into(), content: "1".into(), is_error: false, image: None },
            Message::Tool { call_id: "y".into(), name: "t".into(), content: "2".into(), is_error: true, image: None },
        ];
        let tools = vec![
            ToolSpec { name: "a".into(), description: "".into(), parameters: json!({"type": "object"}).into() },
            ToolSpec { name: "b".into(), description: "".into(), parameters: json!({"type": "object"}).into() },
        ];
        let body = request_body(
            &ChatRequest {
                model: "m",
                system: "sys",
                messages: &messages,
                tools: &tools,
                max_tokens: 10,
                cache_prefix: true,
                accepts_images: true,
                images: &Default::default(),
            },
            false,
        );
        assert_eq!(body["messages"].as_array().unwrap().len(), 3);
        assert_eq!(body["messages"][2]["content"][1]["tool_use_id"], "y");
        assert_eq!(body["messages"][2]["content"][1]["is_error"], true);
        assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    }

    #[test]
    fn a_loaded_image_goes_in_its_tool_result_and_the_others_as_their_path() {
        let image = |path: &str| Some(ToolImage { path: path.into(), media_type: "image/png".into() });
        let result = |id: &str, path: &str| Message::Tool {
            call_id: id.into(),
            name: "shot".into(),
            content: format!("{{\"path\":\"{path}\"}}"),
            is_error: false,
            image: image(path),
        };
        let messages = vec![
            Message::Assistant {
                content: None,
                tool_calls: vec![
                    ToolCall { id: "a".into(), name: "shot".into(), arguments: json!({}) },
                    ToolCall { id: "b".into(), name: "shot".into(), arguments: json!({}) },
                ],
            },
            result("a", "s/a.png"),
            result("b", "s/b.png"),
        ];
        let images: LoadedImages =
            [("b".to_string(), LoadedImage { media_type: "image/png".into(), base64: "QkFTRTY0".into() })].into();
        let req = |accepts_images, images| ChatRequest {
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
            max_tokens: 10,
            cache_prefix: false,
            accepts_images,
            images,
        };
        let body = request_body(&req(true, &images), false);
        let results = &body["messages"][1]["content"];
        assert_eq!(
            results[0],
            json!({"type": "tool_result", "tool_use_id": "a", "is_error": false,
                "content": "{\"path\":\"s/a.png\"}\n[image saved at s/a.png in your workspace]"})
        );
        assert_eq!(
            results[1]["content"],
            json!([
                {"type": "text", "text": "{\"path\":\"s/b.png\"}"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QkFTRTY0"}}
            ])
        );
        let body = request_body(&req(false, &LoadedImages::new()), false);
        assert_eq!(
            body["messages"][1]["content"][1]["content"],
            "{\"path\":\"s/b.png\"}\n[image saved at s/b.png in your workspace; this model is not sent images]"
        );
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
        assert_eq!(reply.usage.input_tokens, 18, "cache reads are input tokens too");
    }

    #[test]
    fn a_stream_of_events_makes_the_reply() {
        let events = [
            (
                "message_start",
                r#"{"type":"message_start","message":{"usage":{"input_tokens":20,"cache_read_input_tokens":5,"cache_creation_input_tokens":7,"output_tokens":1}}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            ("ping", r#"{"type":"ping"}"#),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking"}}"#,
            ),
            ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"system_time","input":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"tz\": "}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"UTC\"}"}}"#,
            ),
            ("content_block_stop", r#"{"type":"content_block_stop","index":1}"#),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ];
        let on_delta = |_: crate::llm::Delta<'_>| {};
        let (mut blocks, mut reply) = (Blocks::default(), ReplyBuilder::default());
        for (event, data) in events {
            let event = SseEvent { event: event.into(), data: data.into() };
            assert!(stream_event(&event, &mut blocks, &mut reply, &on_delta).is_ok());
        }
        assert!(reply.done);
        let reply = reply.finish();
        assert_eq!(reply.content.as_deref(), Some("Checking"));
        assert_eq!(reply.tool_calls[0].id, "toolu_1");
        assert_eq!(reply.tool_calls[0].arguments, json!({"tz": "UTC"}));
        let usage =
            Usage { input_tokens: 32, output_tokens: 9, cached_tokens: 5, cache_write_tokens: 7, estimated: false };
        assert_eq!(reply.usage, usage, "cache writes count as input and apart");
        let error = SseEvent {
            event: "error".into(),
            data: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.into(),
        };
        assert!(
            matches!(stream_event(&error, &mut blocks, &mut ReplyBuilder::default(), &on_delta), Err(StreamFault::Provider(m)) if m == "Overloaded")
        );
    }
}
