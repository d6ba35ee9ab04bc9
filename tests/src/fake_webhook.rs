//! A receiver for a webhook channel's outbound posts, and the signature both directions use:
//! `X-Kennel-Timestamp: UNIX_SECONDS` and `X-Kennel-Signature-256: sha256=HEX`, the
//! HMAC-SHA256 of `TIMESTAMP.BODY` with the channel's signing secret. The HMAC here is written
//! out from RFC 2104 on `sha2`, apart from the daemon's, so a test checks one against the other.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// `sha256=HEX` of the HMAC-SHA256 of `message` with `secret`.
pub fn hmac_sha256(secret: &str, message: &[u8]) -> String {
    const BLOCK: usize = 64;
    let mut key = [0u8; BLOCK];
    if secret.len() > BLOCK {
        key[..32].copy_from_slice(&Sha256::digest(secret.as_bytes()));
    } else {
        key[..secret.len()].copy_from_slice(secret.as_bytes());
    }
    let pad = |byte: u8| key.iter().map(|k| k ^ byte).collect::<Vec<u8>>();
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(message).finalize();
    let outer = Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize();
    format!("sha256={}", hex::encode(outer))
}

/// The `X-Kennel-Signature-256` value for `body` sent at `timestamp` (Unix seconds).
pub fn sign_at(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut message = format!("{timestamp}.").into_bytes();
    message.extend_from_slice(body);
    hmac_sha256(secret, &message)
}

/// Now, in Unix seconds.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("a clock after 1970").as_secs() as i64
}

/// The two headers that sign `body` with `secret` at `timestamp`.
pub fn signed_at(secret: &str, timestamp: i64, body: &[u8]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("x-kennel-timestamp", HeaderValue::from(timestamp));
    let signature = sign_at(secret, timestamp, body);
    headers.insert("x-kennel-signature-256", HeaderValue::from_str(&signature).expect("hex"));
    headers
}

/// The two headers that sign `body` with `secret` now.
pub fn signed(secret: &str, body: &[u8]) -> HeaderMap {
    signed_at(secret, unix_now(), body)
}

pub struct FakeWebhookReceiver {
    url: String,
    shared: Arc<Shared>,
}

struct Shared {
    secret: String,
    state: Mutex<Receiver>,
}

#[derive(Default)]
struct Receiver {
    posts: Vec<Value>,
    refused: usize,
    throttle: Option<u64>,
}

impl FakeWebhookReceiver {
    /// Serves on a loopback port, accepting posts signed with `secret` at any path.
    pub async fn start(secret: &str) -> FakeWebhookReceiver {
        let shared = Arc::new(Shared { secret: secret.to_string(), state: Mutex::default() });
        let app = Router::new().fallback(receive).with_state(shared.clone());
        let port = crate::serve_on_loopback(app).await;
        FakeWebhookReceiver { url: format!("http://127.0.0.1:{port}/hook"), shared }
    }

    /// Where to post: the webhook channel's `base_url`.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Every post whose signature verified, as JSON, in order.
    pub fn posts(&self) -> Vec<Value> {
        self.shared.state.lock().expect("receiver").posts.clone()
    }

    /// How many posts were refused for their signature.
    pub fn refused(&self) -> usize {
        self.shared.state.lock().expect("receiver").refused
    }

    /// The next verified post is answered `429` with `Retry-After: retry_after_secs`.
    pub fn throttle_next(&self, retry_after_secs: u64) {
        self.shared.state.lock().expect("receiver").throttle = Some(retry_after_secs);
    }
}

async fn receive(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let timestamp: i64 = header("x-kennel-timestamp").parse().unwrap_or_default();
    let fresh = (unix_now() - timestamp).abs() <= 60;
    let mut receiver = shared.state.lock().expect("receiver");
    if !fresh || header("x-kennel-signature-256") != sign_at(&shared.secret, timestamp, &body) {
        receiver.refused += 1;
        return (StatusCode::UNAUTHORIZED, "bad signature").into_response();
    }
    if let Some(seconds) = receiver.throttle.take() {
        return (StatusCode::TOO_MANY_REQUESTS, [("retry-after", seconds.to_string())], "slow down").into_response();
    }
    match serde_json::from_slice(&body) {
        Ok(post) => {
            receiver.posts.push(post);
            StatusCode::OK.into_response()
        }
        Err(e) => (StatusCode::BAD_REQUEST, format!("not JSON: {e}")).into_response(),
    }
}
