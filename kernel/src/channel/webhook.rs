//! Kennel's generic webhook channel, for systems that are not a chat platform.
//!
//! Inbound, a system posts to `/channels/NAME/inbound`:
//! `{"id", "chat_id", "text", "user": {"id", "name", "username"?}, "group"?, "title"?}`.
//! Outbound, Kennel posts to the channel's `base_url`:
//! `{"channel", "chat_id", "content": {"type": "text" | "image" | "file" | "poll", …}}`.
//! Both ways the request is signed: `X-Kennel-Timestamp: UNIX_SECONDS` and
//! `X-Kennel-Signature-256: sha256=HEX`, the HMAC-SHA256 of `TIMESTAMP.BODY` (the timestamp, a
//! dot, the exact body) with the channel's signing secret. A request whose timestamp is more
//! than five minutes from now is refused: a captured request cannot be replayed later.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use tokio_util::sync::CancellationToken;

use super::platform::{
    BoxFuture, Connection, Endpoint, FileSource, Inbound, Member, Outgoing, Platform, SendError, Sink, WebhookReply,
    WebhookRequest,
};
use crate::error::Error;

const SIGNATURE_HEADER: &str = "x-kennel-signature-256";
const TIMESTAMP_HEADER: &str = "x-kennel-timestamp";
/// What a refusal tells the sender to do.
const HOW_TO_SIGN: &str = "X-Kennel-Timestamp: Unix seconds, and X-Kennel-Signature-256: sha256=HEX of the \
     HMAC-SHA256 of `TIMESTAMP.BODY` with the channel's signing secret";
const SEND_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Webhook {
    endpoint: Endpoint,
}

impl Webhook {
    pub fn new(endpoint: Endpoint) -> Webhook {
        Webhook { endpoint }
    }

    fn secret(&self) -> Result<&str, Error> {
        self.endpoint.signing_secret.as_deref().filter(|s| !s.is_empty()).ok_or_else(|| {
            Error::forbidden(format!(
                "channel `{}` has no signing secret: set signing_secret_env to the variable holding it",
                self.endpoint.channel
            ))
        })
    }
}

impl Platform for Webhook {
    fn text_limit(&self) -> usize {
        65536
    }

    fn account(&self) -> BoxFuture<'_, Result<Option<String>, SendError>> {
        Box::pin(async { Ok(None) })
    }

    fn send<'a>(&'a self, chat_id: &'a str, out: &'a Outgoing) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let channel = &self.endpoint.channel;
            if self.endpoint.base_url.is_empty() {
                return Err(Error::unavailable(format!("channel `{channel}` has no base_url to post to")).into());
            }
            let body = serde_json::to_vec(&Post { channel, chat_id, content: Content::of(out) })
                .map_err(|e| Error::internal(format!("encoding a webhook post: {e}")))?;
            let timestamp = super::platform::unix_now().to_string();
            let signed = mac(self.secret()?, &timestamp, &body).finalize().into_bytes();
            let signature = format!("sha256={}", hex::encode(signed));
            let (url, client) = self.endpoint.client(&self.endpoint.base_url, SEND_TIMEOUT).await?;
            let response = client
                .post(url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(TIMESTAMP_HEADER, timestamp)
                .header(SIGNATURE_HEADER, signature)
                .body(body)
                .send()
                .await
                .map_err(|e| {
                    Error::failed(format!("channel `{channel}`: cannot post to base_url: {}", e.without_url()))
                })?;
            let status = response.status();
            if status.is_success() {
                return Ok(());
            }
            if status.as_u16() == 429 {
                let seconds = response
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .unwrap_or(1);
                return Err(SendError::RetryAfter(Duration::from_secs(seconds)));
            }
            let text = response.text().await.unwrap_or_default();
            Err(Error::failed(format!(
                "channel `{channel}`: base_url answered {status}: {}",
                crate::channel::excerpt(&text)
            ))
            .into())
        })
    }

    fn direct_chat<'a>(&'a self, user_id: &'a str) -> BoxFuture<'a, Result<String, SendError>> {
        Box::pin(async move { Ok(user_id.to_string()) })
    }

    fn webhook<'a>(&'a self, req: WebhookRequest<'a>) -> BoxFuture<'a, Result<WebhookReply, Error>> {
        Box::pin(async move {
            let channel = &self.endpoint.channel;
            let header = |name: &str| req.headers.get(name).and_then(|v| v.to_str().ok());
            let (Some(timestamp), Some(presented)) = (header(TIMESTAMP_HEADER), header(SIGNATURE_HEADER)) else {
                return Err(Error::forbidden(format!(
                    "channel `{channel}`: the request is not signed: send {HOW_TO_SIGN}"
                )));
            };
            super::platform::check_fresh(channel, "X-Kennel-Timestamp", timestamp)?;
            let mac = mac(self.secret()?, timestamp, req.body);
            // `verify_slice` compares in constant time.
            let verified = presented
                .strip_prefix("sha256=")
                .and_then(|v| hex::decode(v.trim()).ok())
                .is_some_and(|given| mac.verify_slice(&given).is_ok());
            if !verified {
                return Err(Error::forbidden(format!(
                    "channel `{channel}`: X-Kennel-Signature-256 does not match the timestamp and body: send {HOW_TO_SIGN}"
                )));
            }
            let post: InboundPost = serde_json::from_slice(req.body)
                .map_err(|e| Error::invalid(format!("channel `{channel}`: not a webhook message: {e}")))?;
            Ok(WebhookReply::Messages(vec![Inbound {
                message_id: post.id,
                chat_id: post.chat_id,
                chat_title: post.title,
                is_group: post.group,
                from: Member { user_id: post.user.id, display_name: post.user.name, username: post.user.username },
                text: post.text,
            }]))
        })
    }

    fn listen(
        self: Arc<Self>,
        _sink: Sink,
        _state: Arc<dyn Fn(Connection) + Send + Sync>,
        _cancel: CancellationToken,
    ) -> Option<BoxFuture<'static, ()>> {
        None
    }
}

/// The HMAC-SHA256 both ways sign with: of `TIMESTAMP.BODY`, keyed by the signing secret.
fn mac(secret: &str, timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

#[derive(Deserialize)]
struct InboundPost {
    id: String,
    chat_id: String,
    text: String,
    user: InboundUser,
    #[serde(default)]
    group: bool,
    title: Option<String>,
}

#[derive(Deserialize)]
struct InboundUser {
    id: String,
    name: String,
    username: Option<String>,
}

#[derive(Serialize)]
struct Post<'a> {
    channel: &'a str,
    chat_id: &'a str,
    content: Content<'a>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Content<'a> {
    Text { text: &'a str },
    Image(Attachment<'a>),
    File(Attachment<'a>),
    Poll { question: &'a str, options: &'a [String] },
}

/// An image or file: a URL, or the bytes in base64 with their name and type.
#[derive(Serialize)]
struct Attachment<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    file_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data_base64: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    caption: Option<&'a str>,
}

impl<'a> Content<'a> {
    fn of(out: &'a Outgoing) -> Content<'a> {
        match out {
            Outgoing::Text(text) => Content::Text { text },
            Outgoing::Image { media, caption } => Content::Image(Attachment::of(media, caption)),
            Outgoing::File { media, caption } => Content::File(Attachment::of(media, caption)),
            Outgoing::Poll { question, options } => Content::Poll { question, options },
        }
    }
}

impl<'a> Attachment<'a> {
    fn of(media: &'a FileSource, caption: &'a Option<String>) -> Attachment<'a> {
        let caption = caption.as_deref();
        match media {
            FileSource::Url(url) => {
                Attachment { url: Some(url), file_name: None, mime: None, data_base64: None, caption }
            }
            FileSource::Bytes { file_name, mime, bytes } => Attachment {
                url: None,
                file_name: Some(file_name),
                mime: Some(mime),
                data_base64: Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
                caption,
            },
        }
    }
}
