//! `POST {base_url}/embeddings`, the OpenAI wire protocol for embeddings (what the semantic
//! memory's `embeddings_provider` speaks): the same key, timeouts and retries as chat.

use serde_json::{Value, json};

use super::ProviderKind;
use super::{Failure, Provider};
use crate::error::{Error, Result};

/// Texts per request: providers cap a request's inputs (OpenAI at 2048).
const BATCH: usize = 256;

impl Provider {
    /// The embeddings of `texts` by `model`, in order.
    pub async fn embed(&self, model: &str, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if self.config.kind != ProviderKind::Openai {
            return Err(Error::unavailable(format!(
                "provider `{}` is kind = \"anthropic\", which offers no embeddings endpoint",
                self.name
            )));
        }
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            vectors.extend(self.embed_batch(model, batch).await?);
        }
        Ok(vectors)
    }

    async fn embed_batch(&self, model: &str, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let key = self.api_key()?;
        let url = format!("{}/embeddings", self.base_url());
        let body = json!({ "model": model, "input": texts, "encoding_format": "float" });
        let mut attempt = 0;
        loop {
            let mut builder = self.http.post(&url).json(&body);
            if let Some(key) = &key {
                builder = builder.bearer_auth(key);
            }
            let outcome = match builder.send().await {
                Ok(res) => match self.accepted(res).await {
                    Ok(res) => match res.text().await {
                        Ok(text) => self.parse_embeddings(&text, texts.len()).map_err(Failure::fatal),
                        Err(e) => Err(Failure::retry(self.transport_error(e), None)),
                    },
                    Err(failure) => Err(failure),
                },
                Err(e) => Err(Failure::retry(self.transport_error(e), None)),
            };
            match outcome {
                Ok(vectors) => return Ok(vectors),
                Err(Failure { error, retryable, retry_after, .. }) => {
                    if !retryable || attempt >= self.config.max_retries {
                        return Err(error);
                    }
                    let backoff = crate::net::retry::backoff(attempt, retry_after);
                    tracing::warn!(provider = %self.name, attempt, error = %error.message, ?backoff, "retrying an embeddings call");
                    tokio::time::sleep(backoff).await;
                    attempt += 1;
                }
            }
        }
    }

    /// `{"data": [{"index", "embedding": [..]}]}`, put back in input order.
    fn parse_embeddings(&self, text: &str, expected: usize) -> Result<Vec<Vec<f32>>> {
        let shape = |what: &str| {
            Error::failed(format!("provider `{}` answered embeddings in an unexpected shape: {what}", self.name))
        };
        let value: Value = serde_json::from_str(text).map_err(|e| shape(&format!("not JSON ({e})")))?;
        let data = value.get("data").and_then(Value::as_array).ok_or_else(|| shape("no `data` array"))?;
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; expected];
        for (position, item) in data.iter().enumerate() {
            let index = item.get("index").and_then(Value::as_u64).map_or(position, |i| i as usize);
            let embedding = item
                .get("embedding")
                .and_then(Value::as_array)
                .ok_or_else(|| shape("an item without an `embedding` array"))?
                .iter()
                .map(|x| x.as_f64().map(|x| x as f32))
                .collect::<Option<Vec<f32>>>()
                .ok_or_else(|| shape("an embedding that is not all numbers"))?;
            let slot = vectors.get_mut(index).ok_or_else(|| shape("an index beyond the inputs"))?;
            *slot = Some(embedding);
        }
        let vectors: Vec<Vec<f32>> =
            vectors.into_iter().collect::<Option<_>>().ok_or_else(|| shape("fewer embeddings than inputs"))?;
        let dims = vectors.first().map_or(0, Vec::len);
        if dims == 0 || vectors.iter().any(|v| v.len() != dims) {
            return Err(shape("embeddings of different or no dimensions"));
        }
        Ok(vectors)
    }
}
