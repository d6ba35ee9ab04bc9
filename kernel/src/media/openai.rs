//! OpenAI-compatible media endpoints: `POST {base_url}/audio/transcriptions` (multipart: the
//! audio file, `model`, `language`, `prompt`; answers `{"text": …}`).

use std::time::Duration;

use serde::Deserialize;

use crate::config::MediaProviderConfig;
use crate::error::{Error, ErrorKind, Result};

/// What a transcription request sends besides the audio.
pub struct Transcription<'a> {
    pub model: &'a str,
    pub language: Option<&'a str>,
    pub prompt: Option<&'a str>,
}

/// One audio file to send: its bytes, the name it goes under and its MIME type.
pub struct Audio {
    pub bytes: Vec<u8>,
    pub file_name: String,
    pub mime: String,
}

#[derive(Deserialize)]
struct TranscriptionReply {
    text: String,
}

/// Sends `audio` to provider `name` for transcription; its text.
pub async fn transcribe(
    name: &str,
    provider: &MediaProviderConfig,
    audio: Audio,
    req: &Transcription<'_>,
) -> Result<String> {
    let key = api_key(name, provider)?;
    let part = reqwest::multipart::Part::bytes(audio.bytes)
        .file_name(audio.file_name)
        .mime_str(&audio.mime)
        .map_err(|e| Error::invalid(format!("`{}` is not a MIME type: {e}", audio.mime)))?;
    let mut form = reqwest::multipart::Form::new()
        .part("file", part)
        .text("model", req.model.to_string())
        .text("response_format", "json");
    if let Some(language) = req.language {
        form = form.text("language", language.to_string());
    }
    if let Some(prompt) = req.prompt {
        form = form.text("prompt", prompt.to_string());
    }
    let url = format!("{}/audio/transcriptions", provider.base_url.trim_end_matches('/'));
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(provider.timeout_secs))
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| Error::failed(format!("cannot build an HTTP client for media provider `{name}`: {e}")))?;
    let mut request = http.post(&url).multipart(form);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.map_err(|e| sent_error(name, &url, &e))?;
    let status = response.status();
    let body = response.text().await.map_err(|e| sent_error(name, &url, &e))?;
    if !status.is_success() {
        return Err(Error::failed(format!(
            "media provider `{name}` refused the transcription ({status}): {}",
            provider_message(&body)
        )));
    }
    let reply: TranscriptionReply = serde_json::from_str(&body).map_err(|_| {
        Error::failed(format!(
            "media provider `{name}` answered without a transcription (`text`): {}",
            provider_message(&body)
        ))
    })?;
    Ok(reply.text)
}

fn api_key(name: &str, provider: &MediaProviderConfig) -> Result<Option<String>> {
    let Some(var) = provider.api_key_env.as_deref().filter(|v| !v.is_empty()) else { return Ok(None) };
    match std::env::var(var) {
        Ok(key) if !key.trim().is_empty() => Ok(Some(key.trim().to_string())),
        _ => Err(Error::unavailable(format!(
            "media provider `{name}` has no API key: set {var} in the daemon's environment (or `api_key_env = \"\"` for a server that needs none)"
        ))),
    }
}

fn sent_error(name: &str, url: &str, e: &reqwest::Error) -> Error {
    if e.is_timeout() {
        Error::new(ErrorKind::Timeout, format!("media provider `{name}` did not answer in time ({url})"))
    } else {
        Error::failed(format!("cannot reach media provider `{name}` at {url}: {e}"))
    }
}

/// The provider's own message (`{"error": {"message": …}}`), or the start of its body.
fn provider_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message =
        parsed.as_ref().and_then(|v| v["error"]["message"].as_str().or(v["error"].as_str())).map(str::to_string);
    message.unwrap_or_else(|| body.chars().take(300).collect())
}
