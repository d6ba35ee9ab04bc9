//! Channels over HTTP: `POST /channels/{name}/inbound`, where Telegram (webhook mode), Slack's
//! Events API and webhook channels deliver messages — open to the internet, every request
//! verified by the channel's adapter (a secret token or a signature) — and `/api/channels`
//! for operators: the channels, their conversations with rosters, and recent traffic.

use crate::routes::api;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header::CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use kennel_kernel::Kernel;
use kennel_kernel::agent::Name;
use kennel_kernel::channel::Channels;
use kennel_kernel::channel::platform::{WebhookReply, WebhookRequest};
use kennel_kernel::channel::{ChannelDetail, ChannelInfo};
use serde_json::json;

use super::error::{ApiError, ApiResult};
use crate::routes::Api;

/// Messages shown per channel as recent traffic, each way.
const TRAFFIC: i64 = 50;

/// The platforms' door: no API token (they have none), the adapter's check instead.
pub fn inbound_router() -> Router<Kernel> {
    Router::new().route("/channels/{name}/inbound", post(inbound))
}

async fn inbound(
    State(kernel): State<Kernel>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req = WebhookRequest { headers: &headers, body: &body };
    Ok(match kernel.services().need::<Channels>().receive_webhook(&name, req).await? {
        WebhookReply::Challenge(challenge) => ([(CONTENT_TYPE, "text/plain")], challenge).into_response(),
        WebhookReply::Messages(_) => Json(json!({ "ok": true })).into_response(),
    })
}

pub fn routes() -> Api {
    Api::new().route(api!(all_channels), &[]).route(api!(one_channel), &[])
}

/// Every configured channel and how it is connected.
#[utoipa::path(get, path = "/api/channels", tag = "channels",
    responses((status = 200, description = "The channels, by name", body = Vec<ChannelInfo>)))]
async fn all_channels(State(kernel): State<Kernel>) -> Json<Vec<ChannelInfo>> {
    Json(kernel.service::<Channels>().list())
}

/// A channel with its conversations, rosters and recent traffic.
#[utoipa::path(get, path = "/api/channels/{name}", tag = "channels",
    params(("name" = Name, Path, description = "The channel's name")),
    responses((status = 200, description = "The channel", body = ChannelDetail),
        (status = 404, description = "No such channel")))]
async fn one_channel(State(kernel): State<Kernel>, Path(name): Path<String>) -> ApiResult<Json<ChannelDetail>> {
    Ok(Json(kernel.service::<Channels>().detail(&name, TRAFFIC).await?))
}
