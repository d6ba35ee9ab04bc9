//! A Replicate-style predictions API: `POST {base_url}/models/{owner}/{name}/predictions`
//! with `{"input": …}` creates one (`{"id", "status", …}`), `GET {base_url}/predictions/{id}`
//! reads it; a finished one has `status: "succeeded"` and its `output` (a URL, or a list of
//! them). The output is downloaded through the address guard (`[media] allowed_hosts`).

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::MediaProviderConfig;
use super::openai::{Call, MAX_JSON_REPLY, api_key, client, endpoint, send};
use crate::error::{Error, Result};
use crate::net::guard::AllowedHosts;

/// How many times a finished output's download is tried again after a 429, 5xx or drop.
const DOWNLOAD_RETRIES: u64 = 3;

#[derive(Debug, Deserialize)]
pub struct Prediction {
    pub id: String,
    pub status: String,
    #[serde(default)]
    pub output: Value,
    #[serde(default)]
    pub error: Option<Value>,
}

impl Prediction {
    pub fn is_done(&self) -> bool {
        matches!(self.status.as_str(), "succeeded" | "failed" | "canceled")
    }

    /// The first output URL.
    pub fn output_url(&self) -> Option<&str> {
        match &self.output {
            Value::String(url) => Some(url),
            Value::Array(items) => items.iter().find_map(Value::as_str),
            _ => None,
        }
    }

    pub fn error_text(&self) -> Option<String> {
        self.error
            .as_ref()
            .filter(|e| !e.is_null())
            .map(|e| e.as_str().map(str::to_string).unwrap_or_else(|| e.to_string()))
    }
}

fn parsed(name: &str, body: &[u8]) -> Result<Prediction> {
    serde_json::from_slice(body)
        .map_err(|_| Error::failed(format!("media provider `{name}` answered without a prediction (`id`, `status`)")))
}

/// Starts a prediction of `model` (`owner/name`) with `input`.
pub async fn create(name: &str, provider: &MediaProviderConfig, model: &str, input: Value) -> Result<Prediction> {
    let Some((owner, model_name)) =
        model.split_once('/').filter(|(o, m)| !o.is_empty() && !m.is_empty() && !m.contains('/'))
    else {
        return Err(Error::unavailable(format!("[media.models] names `{model}`: a Replicate model is `owner/name`")));
    };
    let url = endpoint(provider, &format!("models/{owner}/{model_name}/predictions"));
    let (http, body) = (client(name, provider)?, serde_json::json!({ "input": input }));
    let key = api_key(name, provider)?;
    let call =
        Call { name, url: &url, key, what: "the prediction", max_bytes: MAX_JSON_REPLY, retries: provider.max_retries };
    let body = send(&call, || Ok(http.post(&url).json(&body))).await?;
    parsed(name, &body)
}

/// Reads prediction `id` as it is now.
pub async fn get(name: &str, provider: &MediaProviderConfig, id: &str) -> Result<Prediction> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(Error::failed(format!(
            "media provider `{name}` gave a prediction id that cannot be read back: `{id}`"
        )));
    }
    let url = endpoint(provider, &format!("predictions/{id}"));
    let (http, key) = (client(name, provider)?, api_key(name, provider)?);
    let call =
        Call { name, url: &url, key, what: "the prediction", max_bytes: MAX_JSON_REPLY, retries: provider.max_retries };
    let body = send(&call, || Ok(http.get(&url))).await?;
    parsed(name, &body)
}

/// Downloads an output `url` the provider gave, through the address guard, at most
/// `max_bytes`.
pub async fn download(name: &str, url: &str, allowed: &AllowedHosts, max_bytes: u64) -> Result<Vec<u8>> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|_| Error::failed(format!("media provider `{name}` gave an output that is not a URL: `{url}`")))?;
    let addr = crate::net::guard::resolve(&parsed, allowed, "[media] allowed_hosts").await?;
    let http = crate::net::pinned_client(&parsed, addr, Duration::from_secs(300))?;
    // An output URL is the provider's storage, not its API: fetched again on a "later" too.
    let call = Call { name, url, key: None, what: "the output", max_bytes, retries: DOWNLOAD_RETRIES };
    send(&call, || Ok(http.get(parsed.clone()))).await
}
