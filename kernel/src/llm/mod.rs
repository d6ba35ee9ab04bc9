//! LLM providers: one provider-neutral conversation model and a driver per wire protocol
//! (OpenAI-compatible chat completions, Anthropic Messages), spoken over `reqwest`.
//!
//! The drivers translate; [`Provider::chat`] owns what is common: the API key, timeouts,
//! retries with backoff on 429 and 5xx, and errors a person can act on.

mod anthropic;
mod openai;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::config::{ProviderConfig, ProviderKind};
use crate::error::{Error, ErrorKind, Result};

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
    },
}

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
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache, where it reports them.
    pub cached_tokens: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatReply {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
}

/// A configured provider, ready to call.
pub struct Provider {
    name: String,
    config: ProviderConfig,
    http: reqwest::Client,
    /// The last model call's failure (when, what), cleared by the next success: what an
    /// operator sees of a provider that is down.
    last_error: std::sync::Mutex<Option<(String, String)>>,
}

const MAX_BACKOFF: Duration = Duration::from_secs(30);

impl Provider {
    pub fn new(name: &str, config: ProviderConfig) -> Result<Provider> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(config.timeout_secs))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| Error::failed(format!("cannot build an HTTP client for provider `{name}`: {e}")))?;
        Ok(Provider { name: name.to_string(), config, http, last_error: Default::default() })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn kind(&self) -> ProviderKind {
        self.config.kind
    }

    /// The provider's last failed call (RFC 3339 time, message), if the calls since all failed.
    pub fn last_error(&self) -> Option<(String, String)> {
        self.last_error.lock().expect("last error lock").clone()
    }

    /// Where its requests go.
    pub fn base_url(&self) -> &str {
        let default = match self.config.kind {
            ProviderKind::Openai => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com/v1",
        };
        self.config.base_url.as_deref().unwrap_or(default).trim_end_matches('/')
    }

    /// The variable the API key is read from; `None` for a provider that needs no key.
    pub fn api_key_env(&self) -> Option<&str> {
        let default = match self.config.kind {
            ProviderKind::Openai => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        };
        match self.config.api_key_env.as_deref() {
            Some("") => None,
            Some(var) => Some(var),
            None => Some(default),
        }
    }

    /// Whether the key this provider needs is set (for the dashboard's status view).
    pub fn has_key(&self) -> bool {
        self.api_key().is_ok()
    }

    fn api_key(&self) -> Result<Option<String>> {
        let Some(var) = self.api_key_env() else { return Ok(None) };
        match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => Ok(Some(key.trim().to_string())),
            _ => Err(Error::unavailable(format!(
                "provider `{}` has no API key: set {var} in the daemon's environment (or `api_key_env = \"\"` in [providers.{}] for a server that needs none)",
                self.name, self.name
            ))),
        }
    }

    /// One model call, retried with backoff on 429, 5xx and connection failures.
    pub async fn chat(&self, req: &ChatRequest<'_>) -> Result<ChatReply> {
        let reply = self.chat_with_retries(req).await;
        *self.last_error.lock().expect("last error lock") =
            reply.as_ref().err().map(|e| (crate::db::now(), e.message.clone()));
        reply
    }

    async fn chat_with_retries(&self, req: &ChatRequest<'_>) -> Result<ChatReply> {
        let key = self.api_key()?;
        let (url, body) = match self.config.kind {
            ProviderKind::Openai => (format!("{}/chat/completions", self.base_url()), openai::request_body(req)),
            ProviderKind::Anthropic => (format!("{}/messages", self.base_url()), anthropic::request_body(req)),
        };
        let mut attempt = 0;
        loop {
            let mut builder = self.http.post(&url).json(&body);
            builder = match (self.config.kind, &key) {
                (ProviderKind::Openai, Some(key)) => builder.bearer_auth(key),
                (ProviderKind::Anthropic, Some(key)) => builder.header("x-api-key", key),
                (_, None) => builder,
            };
            if self.config.kind == ProviderKind::Anthropic {
                builder = builder.header("anthropic-version", anthropic::API_VERSION);
            }
            let outcome = match builder.send().await {
                Ok(res) => self.read(res).await,
                Err(e) => Err(Failure::retry(self.transport_error(e), None)),
            };
            match outcome {
                Ok(value) => {
                    return match self.config.kind {
                        ProviderKind::Openai => openai::parse_reply(&value),
                        ProviderKind::Anthropic => anthropic::parse_reply(&value),
                    }
                    .map_err(|e| {
                        Error::failed(format!("provider `{}` answered in an unexpected shape: {e}", self.name))
                    });
                }
                Err(Failure { error, retryable, retry_after }) => {
                    if !retryable || attempt >= self.config.max_retries {
                        return Err(error);
                    }
                    // The provider's Retry-After if it sent one, else 0.5 s doubling.
                    let backoff =
                        retry_after.unwrap_or(Duration::from_millis(500) * 2u32.pow(attempt as u32)).min(MAX_BACKOFF);
                    tracing::warn!(provider = %self.name, attempt, error = %error.message, ?backoff, "retrying model call");
                    tokio::time::sleep(backoff).await;
                    attempt += 1;
                }
            }
        }
    }

    async fn read(&self, res: reqwest::Response) -> Result<Value, Failure> {
        let status = res.status();
        let retry_after = res
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(|secs| Duration::from_secs_f64(secs.clamp(0.0, MAX_BACKOFF.as_secs_f64())));
        let text = res.text().await.map_err(|e| Failure::retry(self.transport_error(e), None))?;
        if status.is_success() {
            return serde_json::from_str(&text).map_err(|e| {
                Failure::fatal(Error::failed(format!("provider `{}` sent a body that is not JSON: {e}", self.name)))
            });
        }
        let detail = provider_message(&text);
        let error = match status.as_u16() {
            401 | 403 => Error::new(
                ErrorKind::Unavailable,
                format!("provider `{}` refused the API key ({status}): {detail}", self.name),
            ),
            404 => Error::failed(format!(
                "provider `{}` answered 404 at {}: check base_url and the model name ({detail})",
                self.name,
                self.base_url()
            )),
            429 => Error::new(
                ErrorKind::ResourceExhausted,
                format!("provider `{}` is rate-limiting ({status}): {detail}", self.name),
            ),
            _ => Error::failed(format!("provider `{}` answered {status}: {detail}", self.name)),
        };
        if status.as_u16() == 429 || status.is_server_error() {
            Err(Failure::retry(error, retry_after))
        } else {
            Err(Failure::fatal(error))
        }
    }

    fn transport_error(&self, e: reqwest::Error) -> Error {
        if e.is_timeout() {
            Error::new(
                ErrorKind::Timeout,
                format!("provider `{}` did not answer within {} s", self.name, self.config.timeout_secs),
            )
        } else {
            Error::failed(format!("cannot reach provider `{}` at {}: {e}", self.name, self.base_url()))
        }
    }
}

struct Failure {
    error: Error,
    /// Whether trying again may help (429, 5xx, a dropped connection).
    retryable: bool,
    /// How long the provider asked us to wait (`Retry-After`).
    retry_after: Option<Duration>,
}

impl Failure {
    fn fatal(error: Error) -> Failure {
        Failure { error, retryable: false, retry_after: None }
    }
    fn retry(error: Error, retry_after: Option<Duration>) -> Failure {
        Failure { error, retryable: true, retry_after }
    }
}

/// The human part of a provider's error body (both vendors use `{"error": {"message"}}`).
fn provider_message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().or(v["message"].as_str()).map(str::to_string));
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    text.chars().take(500).collect()
}

/// Parses a model's tool-call arguments; text that is not JSON is kept as a string so the
/// pipeline can refuse it with a clear message.
fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}
