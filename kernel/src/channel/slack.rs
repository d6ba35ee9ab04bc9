//! STUB, to be replaced: the slack adapter.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::platform::{BoxFuture, Connection, Endpoint, Outgoing, Platform, SendError, Sink, WebhookReply, WebhookRequest};
use crate::error::Error;

pub struct Slack {
    endpoint: Endpoint,
}

impl Slack {
    pub fn new(endpoint: Endpoint) -> Slack {
        Slack { endpoint }
    }
}

impl Platform for Slack {
    fn text_limit(&self) -> usize {
        4000
    }

    fn send<'a>(&'a self, _chat_id: &'a str, _out: &'a Outgoing) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move { Err(SendError::Failed(Error::unavailable(format!("channel {}: not built yet", self.endpoint.channel)))) })
    }

    fn direct_chat<'a>(&'a self, _user_id: &'a str) -> BoxFuture<'a, Result<String, SendError>> {
        Box::pin(async move { Err(SendError::Failed(Error::unavailable("not built yet"))) })
    }

    fn webhook<'a>(&'a self, _req: WebhookRequest<'a>) -> BoxFuture<'a, Result<WebhookReply, Error>> {
        Box::pin(async move { Err(Error::unavailable("not built yet")) })
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
