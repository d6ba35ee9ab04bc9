//! Channels over HTTP: `POST /channels/{name}/inbound`, where Telegram (webhook mode), Slack's
//! Events API and webhook channels deliver messages — open to the internet, every request
//! verified by the channel's adapter (a secret token or a signature) — and `/api/channels`
//! for operators: the channels, their conversations with rosters, and recent traffic.

use crate::routes::api;
use axum::body::Bytes;
use axum::extract::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header::CONTENT_TYPE};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use kennel_kernel::Kernel;
use kennel_kernel::agent::Name;
use kennel_kernel::channel::Channels;
use kennel_kernel::channel::platform::{WebhookReply, WebhookRequest};
use kennel_kernel::channel::{ChannelConfig, ChannelDetail, ChannelInfo, ChannelTest};
use kennel_kernel::error::Error;
use kennel_kernel::tool::Caller;
use serde_json::json;

use super::auth::Bearer;
use super::body::JsonBody;
use super::error::{ApiError, ApiResult};
use crate::routes::{Action, Api};

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
    Api::new()
        .route(api!(all_channels), &[])
        .route(
            api!(one_channel, save_channel, remove_channel),
            &[(Method::PUT, Action::named("channel.save")), (Method::DELETE, Action::named("channel.remove"))],
        )
        .route(api!(test_channel), &[(Method::POST, Action::named("channel.test"))])
}

/// Tests the channel with one call that needs its token: who the platform says its account
/// is, or what it said was wrong (`ok: false`, still 200: the test ran).
#[utoipa::path(post, path = "/api/channels/{name}/test", tag = "channels",
    params(("name" = Name, Path, description = "The channel's name")),
    responses(
        (status = 200, description = "The test ran; `ok` says how it went", body = ChannelTest),
        (status = 404, description = "No such channel"),
    ))]
async fn test_channel(State(kernel): State<Kernel>, Path(name): Path<String>) -> ApiResult<Json<ChannelTest>> {
    Ok(Json(kernel.service::<Channels>().test(&name).await?))
}

fn may_change_channels(caller: &Caller) -> Result<(), Error> {
    super::auth::cli_only(
        caller,
        "changing a channel moves where the daemon sends its bot tokens and who may talk to an agent: an operator does it on the dashboard's Channels page, or `kennel channel` on the daemon's machine; API tokens may list channels",
    )
}

/// Adds the channel or replaces its settings; it listens at once, with no restart.
#[utoipa::path(put, path = "/api/channels/{name}", tag = "channels",
    params(("name" = Name, Path, description = "The channel's name: 1-64 lowercase letters, digits, `-` or `_`")),
    request_body(content = ChannelConfig, description = "The channel's settings (secrets by the names of the variables holding them)"),
    responses(
        (status = 200, description = "Replaced", body = ChannelInfo),
        (status = 201, description = "Added", body = ChannelInfo),
        (status = 403, description = "An API token other than the CLI's"),
        (status = 422, description = "A bad setting, or a config.toml that would not load with it (nothing is written)"),
    ))]
async fn save_channel(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(name): Path<String>,
    JsonBody(settings): JsonBody<ChannelConfig>,
) -> ApiResult<Response> {
    may_change_channels(&caller)?;
    let created = kernel.save_channel(&name, settings, false).await?;
    let info = kernel.service::<Channels>().one(&name)?;
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(info)).into_response())
}

/// Removes the channel: it stops listening; its conversations and traffic stay in the store.
#[utoipa::path(delete, path = "/api/channels/{name}", tag = "channels",
    params(("name" = Name, Path, description = "The channel's name")),
    responses(
        (status = 204, description = "Removed"),
        (status = 403, description = "An API token other than the CLI's"),
        (status = 404, description = "No such channel"),
        (status = 422, description = "config.toml would not load without it (a deliver-only channel sends on to it): nothing is written"),
    ))]
async fn remove_channel(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    may_change_channels(&caller)?;
    kernel.remove_channel(&name).await?;
    Ok(StatusCode::NO_CONTENT)
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
