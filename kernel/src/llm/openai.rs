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
    // Tool messages carry no images: those of a run of tool results follow it in one user
    // message.
    let mut images: Vec<Value> = Vec::new();
    for m in req.messages {
        if !matches!(m, Message::Tool { .. }) && !images.is_empty() {
            messages.push(images_message(std::mem::take(&mut images)));
        }
        messages.push(match m {
            Message::User { content } => json!({"role": "user", "content": content}),
            Message::Assistant { content, tool_calls } => {
                // `""`, never `null`, for a message of tool calls alone: OpenAI takes either,
                // but servers that check the schema strictly (llama.cpp's Python server)
                // refuse `null` with a 500, and the stored message would break every later
                // turn of the session.
                let mut msg = json!({"role": "assistant", "content": content.as_deref().unwrap_or_default()});
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
            Message::Tool { call_id, content, image, .. } => {
                if let (Some(image), Some(loaded)) = (image, req.images.get(call_id)) {
                    images.push(json!({"type": "text", "text": format!("call {call_id} ({}):", image.path)}));
                    let url = format!("data:{};base64,{}", loaded.media_type, loaded.base64);
                    images.push(json!({"type": "image_url", "image_url": {"url": url}}));
                }
                json!({"role": "tool", "tool_call_id": call_id, "content": req.tool_text(call_id, content, image.as_ref())})
            }
        });
    }
    if !images.is_empty() {
        messages.push(images_message(images));
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

/// The user message that carries the images of the tool results just before it.
fn images_message(parts: Vec<Value>) -> Value {
    let mut content = vec![json!({"type": "text", "text": "Images from the tool results above:"})];
    content.extend(parts);
    json!({"role": "user", "content": content})
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
    if let Some(reason) = choice["finish_reason"].as_str() {
        reply.finished = true;
        reply.truncated = reason == "length";
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
        cache_write_tokens: 0,
        estimated: false,
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
    let truncated = body["choices"][0]["finish_reason"] == "length";
    Ok(ChatReply { content, tool_calls, usage: usage_of(&body["usage"]), truncated })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{LoadedImage, LoadedImages, ToolImage, ToolSpec};

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
                image: None,
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
                accepts_images: false,
                images: &Default::default(),
            },
            false,
        );
        assert_eq!(body["messages"][0], json!({"role": "system", "content": "be brief"}));
        assert_eq!(body["messages"][2]["tool_calls"][0]["function"]["arguments"], "{}");
        assert_eq!(body["messages"][2]["content"], "", "a message of tool calls alone carries empty content, not null");
        assert_eq!(body["messages"][3], json!({"role": "tool", "tool_call_id": "c1", "content": "{\"utc\":\"x\"}"}));
        assert_eq!(body["tools"][0]["function"]["name"], "system_time");
    }

    #[test]
    fn the_images_of_a_run_of_tool_results_follow_it_in_one_user_message() {
        let image = |path: &str| Some(ToolImage { path: path.into(), media_type: "image/png".into() });
        let result = |id: &str, image| Message::Tool {
            call_id: id.into(),
            name: "shot".into(),
            content: format!("r{id}"),
            is_error: false,
            image,
        };
        let calls = |ids: &[&str]| Message::Assistant {
            content: None,
            tool_calls: ids
                .iter()
                .map(|id| ToolCall { id: (*id).into(), name: "shot".into(), arguments: json!({}) })
                .collect(),
        };
        let messages = vec![
            calls(&["a", "b", "c"]),
            result("a", image("s/a.png")),
            result("b", None),
            result("c", image("s/c.png")),
            calls(&["d"]),
            result("d", image("s/d.png")),
            Message::Assistant { content: Some("done".into()), tool_calls: vec![] },
        ];
        let loaded = |b64: &str| LoadedImage { media_type: "image/png".into(), base64: b64.into() };
        let images: LoadedImages = [("a".to_string(), loaded("QQ==")), ("c".to_string(), loaded("Qw=="))].into();
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
        let sent = body["messages"].as_array().unwrap();
        assert_eq!(sent.len(), 8, "{sent:#?}");
        assert_eq!(sent[1], json!({"role": "tool", "tool_call_id": "a", "content": "ra"}));
        assert_eq!(sent[2], json!({"role": "tool", "tool_call_id": "b", "content": "rb"}));
        assert_eq!(sent[3], json!({"role": "tool", "tool_call_id": "c", "content": "rc"}));
        assert_eq!(
            sent[4],
            json!({"role": "user", "content": [
                {"type": "text", "text": "Images from the tool results above:"},
                {"type": "text", "text": "call a (s/a.png):"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QQ=="}},
                {"type": "text", "text": "call c (s/c.png):"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,Qw=="}}
            ]})
        );
        assert_eq!(sent[5]["role"], "assistant");
        assert_eq!(
            sent[6],
            json!({"role": "tool", "tool_call_id": "d", "content": "rd\n[image saved at s/d.png in your workspace]"}),
            "an image not loaded goes as its path, and its run gets no images message"
        );
        assert_eq!(sent[7]["role"], "assistant");

        let body = request_body(&req(false, &LoadedImages::new()), false);
        let sent = body["messages"].as_array().unwrap();
        assert_eq!(sent.len(), 7, "no images message");
        assert_eq!(sent[1]["content"], "ra\n[image saved at s/a.png in your workspace; this model is not sent images]");
        assert!(!body.to_string().contains("image_url"));
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
        assert_eq!(
            reply.usage,
            Usage { input_tokens: 12, output_tokens: 7, cached_tokens: 4, cache_write_tokens: 0, estimated: false }
        );
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
