//! How a model call fails: the error a caller sees ([`ChatError`]) and what one attempt's
//! failure says (retry or not, a refusal for length and the sizes it names).

use std::time::Duration;

use serde_json::Value;

use crate::error::Error;

/// Why a model call failed.
#[derive(Debug)]
pub enum ChatError {
    /// The provider refused the request as longer than the model's context window; the window
    /// in tokens, when the refusal says it.
    ContextExceeded {
        limit: Option<u64>,
        /// The request's prompt tokens as the model counted them, when the refusal says.
        counted: Option<u64>,
        error: Error,
    },
    /// It kept failing in a way that may pass (429, 5xx, timeouts, dropped connections)
    /// through all its retries: another provider may do.
    GaveUp(Error),
    Other(Error),
}

impl From<ChatError> for Error {
    fn from(e: ChatError) -> Error {
        match e {
            ChatError::ContextExceeded { error, .. } | ChatError::GaveUp(error) | ChatError::Other(error) => error,
        }
    }
}

impl From<Error> for ChatError {
    fn from(e: Error) -> ChatError {
        ChatError::Other(e)
    }
}

pub(super) struct Failure {
    pub(super) error: Error,
    /// Whether trying again may help (429, 5xx, a dropped connection).
    pub(super) retryable: bool,
    /// How long the provider asked us to wait (`Retry-After`).
    pub(super) retry_after: Option<Duration>,
    /// A refusal for length, with the model's window when the refusal says it.
    pub(super) context: Option<Option<u64>>,
    /// With a refusal for length: the prompt's tokens, when the refusal says them.
    pub(super) counted: Option<u64>,
    /// A stream that brought nothing at all.
    pub(super) empty: bool,
    /// The status and body of a server's refusal (to tell a repeated one).
    pub(super) refusal: Option<(u16, String)>,
}

impl Failure {
    pub(super) fn fatal(error: Error) -> Failure {
        Failure {
            error,
            retryable: false,
            retry_after: None,
            context: None,
            counted: None,
            empty: false,
            refusal: None,
        }
    }
    pub(super) fn retry(error: Error, retry_after: Option<Duration>) -> Failure {
        Failure { retryable: true, retry_after, ..Failure::fatal(error) }
    }
}

/// A 500 that says the request does not match the server's schema (llama.cpp's Python server
/// answers a field it does not take so): the same request fails the same way every time.
pub(super) fn is_schema_refusal(status: u16, body: &str) -> bool {
    status == 500 && ["validation error", "input should be"].iter().any(|s| body.to_ascii_lowercase().contains(s))
}

/// What went wrong in one streamed event.
pub(super) enum StreamFault {
    /// The provider reported an error inside the stream.
    Provider(String),
    /// The event is not in the protocol's shape.
    Shape(String),
}

/// A refusal for length: the model's window and the prompt's tokens, as far as it says them.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct LengthRefusal {
    pub(super) window: Option<u64>,
    pub(super) counted: Option<u64>,
}

/// Whether an error body refuses a request for its length, and the window and prompt size it
/// names: OpenAI and vLLM (`maximum context length is N tokens … resulted in P tokens`, code
/// `context_length_exceeded`), Anthropic (`prompt is too long: P tokens > N maximum`),
/// llama.cpp (`exceeds the available context size`, `n_prompt_tokens`, `n_ctx`), llama.cpp's
/// Python server (`Requested tokens (P) exceed context window of N`) and others that say
/// `context length` or `context window`.
pub(super) fn context_refusal(body: &str) -> Option<LengthRefusal> {
    let text = body.to_ascii_lowercase();
    let says = [
        "context_length_exceeded",
        "maximum context length",
        "prompt is too long",
        "context size",
        "context window",
        "context length",
    ];
    if !says.iter().any(|s| text.contains(s)) {
        return None;
    }
    let number_after = |marker: &str| {
        let at = text.find(marker)? + marker.len();
        let digits: String = text[at..].trim_start().chars().take_while(|c| c.is_ascii_digit()).collect();
        digits.parse::<u64>().ok()
    };
    let anthropic = || {
        let end = text.find(" maximum")?;
        let start = text[..end].rfind('>')? + 1;
        text[start..end].trim().parse::<u64>().ok()
    };
    let window = number_after("maximum context length is")
        .or_else(anthropic)
        .or_else(|| number_after("n_ctx\":"))
        .or_else(|| number_after("n_ctx:"))
        .or_else(|| number_after("context window of"));
    let counted = number_after("requested tokens (")
        .or_else(|| number_after("n_prompt_tokens\":"))
        .or_else(|| number_after("resulted in"))
        .or_else(|| number_after("prompt is too long:"))
        .or_else(|| {
            // OpenAI: `you requested N tokens (P in the messages, C in the completion)`.
            let at = text.find(" in the messages")?;
            let start = text[..at].rfind('(')? + 1;
            text[start..at].trim().parse::<u64>().ok()
        })
        // The prompt and the reply's room together: an overcount, on the safe side.
        .or_else(|| number_after("you requested"));
    Some(LengthRefusal { window, counted })
}

/// The human part of a provider's error body (both vendors use `{"error": {"message"}}`).
pub(super) fn provider_message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().or(v["message"].as_str()).map(str::to_string));
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    text.chars().take(500).collect()
}
