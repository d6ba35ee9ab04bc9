//! OpenAI-compatible media endpoints: `POST {base_url}/audio/transcriptions` (multipart: the
//! audio file, `model`, `language`, `prompt`; answers `{"text": …}`), `/audio/speech` (JSON
//! in, audio bytes out) and `/images/generations` (JSON in, `data[0].b64_json` out).

use std::time::Duration;

use serde::Deserialize;

use super::MediaProviderConfig;
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
    let url = endpoint(provider, "audio/transcriptions");
    let http = client(name, provider)?;
    // A multipart body is a stream, sent once: each attempt builds its own.
    let request = || {
        let part = reqwest::multipart::Part::bytes(audio.bytes.clone())
            .file_name(audio.file_name.clone())
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
        Ok(http.post(&url).multipart(form))
    };
    let call = Call {
        name,
        url: &url,
        key,
        what: "the transcription",
        max_bytes: MAX_JSON_REPLY,
        retries: provider.max_retries,
    };
    let body = send(&call, request).await?;
    let body = String::from_utf8_lossy(&body);
    let reply: TranscriptionReply = serde_json::from_str(&body).map_err(|_| {
        Error::failed(format!(
            "media provider `{name}` answered without a transcription (`text`): {}",
            provider_message(&body)
        ))
    })?;
    Ok(reply.text)
}

/// The largest JSON answer read (a transcription, an image as base64).
pub(super) const MAX_JSON_REPLY: u64 = 64 * 1024 * 1024;

/// Synthesised speech for `input`: the audio bytes, in `format` (`mp3`, `wav`, …).
pub async fn speech(
    name: &str,
    provider: &MediaProviderConfig,
    model: &str,
    input: &str,
    voice: &str,
    format: &str,
    max_bytes: u64,
) -> Result<Vec<u8>> {
    let key = api_key(name, provider)?;
    let url = endpoint(provider, "audio/speech");
    let body = serde_json::json!({ "model": model, "input": input, "voice": voice, "response_format": format });
    let http = client(name, provider)?;
    let call = Call { name, url: &url, key, what: "the speech", max_bytes, retries: provider.max_retries };
    send(&call, || Ok(http.post(&url).json(&body))).await
}

#[derive(Deserialize)]
struct ImageReply {
    data: Vec<ImageData>,
}

#[derive(Deserialize)]
struct ImageData {
    b64_json: Option<String>,
    revised_prompt: Option<String>,
}

/// One generated image: its bytes, and the prompt as the provider rewrote it, if it did.
pub async fn image(
    name: &str,
    provider: &MediaProviderConfig,
    model: &str,
    prompt: &str,
    size: &str,
    style: Option<&str>,
) -> Result<(Vec<u8>, Option<String>)> {
    use base64::Engine;
    let key = api_key(name, provider)?;
    let url = endpoint(provider, "images/generations");
    let mut body =
        serde_json::json!({ "model": model, "prompt": prompt, "size": size, "n": 1, "response_format": "b64_json" });
    if let Some(style) = style {
        body["style"] = serde_json::Value::from(style);
    }
    let http = client(name, provider)?;
    let call =
        Call { name, url: &url, key, what: "the image", max_bytes: MAX_JSON_REPLY, retries: provider.max_retries };
    let reply = send(&call, || Ok(http.post(&url).json(&body))).await?;
    let no_image = || Error::failed(format!("media provider `{name}` answered without an image (`data[0].b64_json`)"));
    let reply: ImageReply = serde_json::from_slice(&reply).map_err(|_| no_image())?;
    let first = reply.data.into_iter().next().ok_or_else(no_image)?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(first.b64_json.ok_or_else(no_image)?)
        .map_err(|_| no_image())?;
    Ok((bytes, first.revised_prompt))
}

/// A vision question: `question` about `images` (bytes and MIME type each), answered by a
/// chat model that takes image input. The answer's text.
pub async fn vision(
    name: &str,
    provider: &MediaProviderConfig,
    model: &str,
    question: &str,
    images: &[(Vec<u8>, &str)],
) -> Result<String> {
    use base64::Engine;
    let key = api_key(name, provider)?;
    let url = endpoint(provider, "chat/completions");
    let mut content = vec![serde_json::json!({ "type": "text", "text": question })];
    for (bytes, mime) in images {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        content.push(
            serde_json::json!({ "type": "image_url", "image_url": { "url": format!("data:{mime};base64,{data}") } }),
        );
    }
    let body =
        serde_json::json!({ "model": model, "messages": [{ "role": "user", "content": content }], "max_tokens": 1000 });
    let http = client(name, provider)?;
    let what = "the image question";
    let call = Call { name, url: &url, key, what, max_bytes: MAX_JSON_REPLY, retries: provider.max_retries };
    let reply = send(&call, || Ok(http.post(&url).json(&body))).await?;
    let reply: serde_json::Value = serde_json::from_slice(&reply).unwrap_or_default();
    reply["choices"][0]["message"]["content"].as_str().map(str::to_string).ok_or_else(|| {
        Error::failed(format!("media provider `{name}` answered without text (`choices[0].message.content`)"))
    })
}

pub(super) fn endpoint(provider: &MediaProviderConfig, path: &str) -> String {
    format!("{}/{path}", provider.base_url.trim_end_matches('/'))
}

pub(super) fn client(name: &str, provider: &MediaProviderConfig) -> Result<reqwest::Client> {
    crate::net::http_client()
        .timeout(Duration::from_secs(provider.timeout_secs))
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| Error::failed(format!("cannot build an HTTP client for media provider `{name}`: {e}")))
}

/// One call to a media provider: who and where, the key, what is asked for (named in
/// refusals), the most bytes its answer may have, and how many times a "later" is retried.
pub(super) struct Call<'a> {
    pub name: &'a str,
    pub url: &'a str,
    pub key: Option<String>,
    pub what: &'a str,
    pub max_bytes: u64,
    pub retries: u64,
}

/// An attempt that failed, and whether (and after how long) another may succeed.
struct Failed {
    error: Error,
    transient: bool,
    retry_after: Option<std::time::Duration>,
}

/// Sends the request `make` builds and reads its answer, at most `max_bytes` of it; a 429, a
/// 5xx or a dropped connection is tried again (`call.retries` times, waiting as the provider's
/// `Retry-After` says or backing off). A refusal carries the provider's own message.
pub(super) async fn send(call: &Call<'_>, make: impl Fn() -> Result<reqwest::RequestBuilder>) -> Result<Vec<u8>> {
    let mut attempt = 0;
    loop {
        let request = match &call.key {
            Some(key) => make()?.bearer_auth(key),
            None => make()?,
        };
        match send_once(call, request).await {
            Ok(body) => return Ok(body),
            Err(Failed { error, transient, retry_after }) => {
                if !transient || attempt >= call.retries {
                    return Err(error);
                }
                let backoff = crate::net::retry::backoff(attempt, retry_after);
                tracing::warn!(provider = %call.name, attempt, error = %error.message, ?backoff, "retrying a media call");
                tokio::time::sleep(backoff).await;
                attempt += 1;
            }
        }
    }
}

async fn send_once(call: &Call<'_>, request: reqwest::RequestBuilder) -> std::result::Result<Vec<u8>, Failed> {
    let Call { name, url, what, max_bytes, .. } = *call;
    let dropped =
        |e: reqwest::Error| Failed { error: sent_error(name, url, &e), transient: !e.is_timeout(), retry_after: None };
    let too_large = || Failed {
        error: Error::failed(format!("media provider `{name}` sent more than {max_bytes} bytes for {what}")),
        transient: false,
        retry_after: None,
    };
    let mut response = request.send().await.map_err(dropped)?;
    let status = response.status();
    let retry_after = crate::net::retry::retry_after(response.headers());
    if response.content_length().is_some_and(|n| n > max_bytes) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(dropped)? {
        body.extend_from_slice(&chunk);
        if body.len() as u64 > max_bytes {
            return Err(too_large());
        }
    }
    if !status.is_success() {
        let message = provider_message(&String::from_utf8_lossy(&body));
        return Err(Failed {
            error: Error::failed(format!("media provider `{name}` refused {what} ({status}): {message}")),
            transient: crate::net::retry::is_transient(status),
            retry_after,
        });
    }
    Ok(body)
}

pub(super) fn api_key(name: &str, provider: &MediaProviderConfig) -> Result<Option<String>> {
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
