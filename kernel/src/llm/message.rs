//! What a model call sends and gets back, the same for every provider: messages, tool
//! calls and specs, the request, the reply and its streamed pieces.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// One message of a conversation, as stored in a session and sent to any provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    User {
        content: String,
    },
    Assistant {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// A tool's result exactly as the model saw it (a spill placeholder included).
    Tool {
        call_id: String,
        name: String,
        content: String,
        #[serde(default)]
        is_error: bool,
        /// The image the result names in the agent's workspace (a tool marked
        /// `returns_image`). Each model call reads it anew ([`LoadedImage`]); sessions stored
        /// before images were sent have none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        image: Option<ToolImage>,
    },
}

/// An image a tool wrote to the calling agent's workspace, as its result names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolImage {
    /// Relative to the agent's workspace.
    pub path: String,
    /// `image/png`, `image/jpeg`, …
    pub media_type: String,
}

/// A tool result's image read from the workspace for one model call.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedImage {
    pub media_type: String,
    /// The file's bytes, base64 (standard alphabet, padded), as both wire protocols take them.
    pub base64: String,
}

/// The images one model call sends, by the `call_id` of the tool result each goes with.
pub type LoadedImages = std::collections::HashMap<String, LoadedImage>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model sent them. Not valid JSON → the raw text as a string.
    #[schema(value_type = Object)]
    pub arguments: Value,
}

/// A tool as the model is shown it. The schema is shared with the registry, not copied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: std::sync::Arc<Value>,
}

pub struct ChatRequest<'a> {
    pub model: &'a str,
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    pub max_tokens: u32,
    /// Mark the tools and system prompt as a cacheable prefix (Anthropic `cache_control`).
    pub cache_prefix: bool,
    /// Whether the model is sent images ([`ProviderConfig::accepts_images`]).
    pub accepts_images: bool,
    /// The images sent with tool results (read by the caller: translating does no I/O). A
    /// result whose image is not here goes as text with [`image_note`].
    pub images: &'a LoadedImages,
}

impl ChatRequest<'_> {
    /// The text a tool result is sent as: its content, and when its image does not go with
    /// it, a line saying where the image is.
    pub(super) fn tool_text<'m>(
        &self,
        call_id: &str,
        content: &'m str,
        image: Option<&ToolImage>,
    ) -> std::borrow::Cow<'m, str> {
        match image {
            Some(image) if !self.images.contains_key(call_id) => {
                format!("{content}\n{}", image_note(&image.path, self.accepts_images)).into()
            }
            _ => content.into(),
        }
    }
}

/// The line a tool result's image becomes when it is not sent: the model does not take images
/// (`accepted = false`), or this one was left out (older than the last few, too large, gone).
pub fn image_note(path: &str, accepted: bool) -> String {
    if accepted {
        format!("[image saved at {path} in your workspace]")
    } else {
        format!("[image saved at {path} in your workspace; this model is not sent images]")
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize, ToSchema)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache, where it reports them.
    pub cached_tokens: u64,
    /// Input tokens written into the provider's prompt cache (Anthropic reports them; they
    /// cost more than plain input).
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// The provider reported no usage (llama.cpp's server streams none): these are Kennel's
    /// estimate, counted by budgets as if reported.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatReply {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    /// The reply stopped at `max_tokens` (OpenAI's finish reason `length`, Anthropic's stop
    /// reason `max_tokens`): it is cut, not finished.
    pub truncated: bool,
}

/// A piece of a reply as the provider streams it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delta<'a> {
    Text(&'a str),
    /// A piece of the reply's `index`th tool call; its id and name come with its first piece.
    ToolCall {
        index: usize,
        id: Option<&'a str>,
        name: Option<&'a str>,
        arguments: &'a str,
    },
    /// The stream broke and the call is made again: forget the pieces so far.
    Reset,
    /// Not a piece: the call waits for one of the provider's `max_in_flight` places.
    Queued,
}

/// Where a model call hands the pieces of its reply.
pub type OnDelta<'a> = &'a (dyn Fn(Delta<'_>) + Sync);
