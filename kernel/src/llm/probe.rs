//! "Test connection": one tiny model call to a configured provider, so an operator learns
//! whether its address, key and model work before an agent depends on them. The answer, or
//! the provider's own error, is what they see; the call goes through `Provider::chat` like a
//! turn's, so a failure (or a success) shows as the provider's last call on the overview.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{ChatError, ChatRequest, LoadedImages, Message, Provider};
use crate::error::{Error, Result};

/// What a test call asks: a short, fixed answer, so the test costs a few tokens.
const PROMPT: &str = "Reply with the single word: ok";
/// Enough for the word, and for a reasoning model's preamble to be cut rather than run on.
const MAX_TOKENS: u32 = 32;
/// How much of the answer is shown.
const SHOWN_CHARS: usize = 200;

/// How a provider answered a test call.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ProviderTest {
    pub provider: String,
    /// The model the call named.
    pub model: String,
    /// The start of what the model answered (empty when it answered with no text).
    pub reply: String,
    /// From the request to the whole answer, retries included.
    pub millis: u64,
    /// Tokens the call used, as the provider reported them.
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Provider {
    /// Sends `model` one tiny message and says how it answered. The provider's refusal
    /// comes back as the error, in its own words.
    pub async fn probe(&self, model: &str) -> Result<ProviderTest> {
        let messages = [Message::User { content: PROMPT.into() }];
        let images = LoadedImages::new();
        let request = ChatRequest {
            model,
            system: "",
            messages: &messages,
            tools: &[],
            max_tokens: MAX_TOKENS,
            cache_prefix: false,
            accepts_images: false,
            images: &images,
        };
        let started = Instant::now();
        let reply = self.chat(&request, &|_| {}).await.map_err(|e| {
            let (ChatError::ContextExceeded { error, .. } | ChatError::GaveUp(error) | ChatError::Other(error)) = e;
            error
        })?;
        Ok(ProviderTest {
            provider: self.name().to_string(),
            model: model.to_string(),
            reply: crate::text::shorten(reply.content.as_deref().unwrap_or_default().trim(), SHOWN_CHARS),
            millis: started.elapsed().as_millis() as u64,
            input_tokens: reply.usage.input_tokens,
            output_tokens: reply.usage.output_tokens,
        })
    }

    /// The model a test call names when none is given: the first `[providers.NAME.models.*]`.
    pub fn probe_model(&self, given: Option<&str>) -> Result<String> {
        if let Some(model) = given.map(str::trim).filter(|m| !m.is_empty()) {
            return Ok(model.to_string());
        }
        self.configured_models().next().map(str::to_string).ok_or_else(|| {
            Error::invalid(format!(
                "name a model to test `{}` with: config.toml describes none of its models ([providers.{}.models.MODEL])",
                self.name(),
                self.name()
            ))
        })
    }
}
