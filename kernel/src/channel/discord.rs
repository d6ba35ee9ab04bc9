//! STUB, to be replaced: the discord adapter.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::platform::{BoxFuture, Connection, Endpoint, Outgoing, Platform, SendError, Sink, WebhookReply, WebhookRequest};
use crate::error::Error;

pub struct Discord {
    endpoint: Endpoint,
}

impl Discord {
    pub fn new(endpoint: Endpoint) -> Discord {
        Discord { endpoint }
    }
}

impl Platform for Discord {
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
