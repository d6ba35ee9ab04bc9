//! A2A over HTTP: agent cards under `/.well-known/` and JSON-RPC at `/a2a` and `/a2a/{agent}`
//! (one JSON answer, or server-sent events for the streaming methods). Outside `/api`: a
//! public agent needs no token; any other exposed agent needs an API token.

use std::convert::Infallible;

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use kennel_kernel::Kernel;
use kennel_kernel::a2a::{A2aServer, AccessRefusal, Answer, Inbound};
use kennel_kernel::error::Error;

use super::error::ApiError;
use crate::live::Holder;

/// How often a quiet stream gets a comment: under the 5 s a default-built SDK client waits
/// for the next bytes before it gives up.
const STREAM_KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(2);

pub fn router() -> Router<Kernel> {
    Router::new()
        .route("/.well-known/agent-card.json", get(daemon_card))
        .route("/.well-known/agent.json", get(daemon_card))
        .route("/a2a/{agent}/.well-known/agent-card.json", get(agent_card))
        .route("/a2a/{agent}/.well-known/agent.json", get(agent_card))
        .route("/a2a", post(rpc_default))
        .route("/a2a/{agent}", post(rpc_agent))
}

/// `http://host:port` as the client reached us, for the URLs in cards.
fn base_url(headers: &HeaderMap) -> String {
    let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or("127.0.0.1");
    let tls = headers.get("x-forwarded-proto").is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"https"));
    format!("{}://{host}", if tls { "https" } else { "http" })
}

/// The caller: anonymous without a token, named by a valid one; a token that is not valid is
/// refused rather than read as no token.
fn inbound(kernel: &Kernel, headers: &HeaderMap) -> Result<Inbound, ApiError> {
    caller_and_holder(kernel, headers).map(|(caller, _)| caller)
}

/// The caller, and the credential a stream it opens lives by.
fn caller_and_holder(kernel: &Kernel, headers: &HeaderMap) -> Result<(Inbound, Holder), ApiError> {
    let presented =
        headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).map(str::trim);
    match presented {
        None => Ok((Inbound::Anonymous, Holder::Anonymous)),
        Some(token) => kernel
            .auth()
            .verify_token(token)
            .map(|token| (Inbound::Token(token.name.clone()), Holder::Token(token)))
            .ok_or(ApiError::Unauthorized("the API token is not valid or has been revoked")),
    }
}

fn refused(refusal: AccessRefusal) -> Response {
    match refusal {
        AccessRefusal::NotFound(message) => ApiError::Kernel(Error::not_found(message)).into_response(),
        AccessRefusal::Unauthorized => {
            ApiError::Unauthorized("this agent needs an API token: `Authorization: Bearer TOKEN`").into_response()
        }
    }
}

async fn daemon_card(State(kernel): State<Kernel>, headers: HeaderMap) -> Response {
    match inbound(&kernel, &headers) {
        Ok(caller) => Json(kernel.service::<A2aServer>().daemon_card(&base_url(&headers), &caller)).into_response(),
        Err(refused) => refused.into_response(),
    }
}

async fn agent_card(State(kernel): State<Kernel>, headers: HeaderMap, Path(agent): Path<String>) -> Response {
    let caller = match inbound(&kernel, &headers) {
        Ok(caller) => caller,
        Err(refused) => return refused.into_response(),
    };
    match kernel.service::<A2aServer>().agent_card(&agent, &base_url(&headers), &caller) {
        Ok(card) => Json(card).into_response(),
        Err(refusal) => refused(refusal),
    }
}

async fn rpc_default(State(kernel): State<Kernel>, headers: HeaderMap, body: String) -> Response {
    rpc(&kernel, None, &headers, &body).await
}

async fn rpc_agent(
    State(kernel): State<Kernel>,
    headers: HeaderMap,
    Path(agent): Path<String>,
    body: String,
) -> Response {
    rpc(&kernel, Some(&agent), &headers, &body).await
}

async fn rpc(kernel: &Kernel, agent: Option<&str>, headers: &HeaderMap, body: &str) -> Response {
    let (caller, holder) = match caller_and_holder(kernel, headers) {
        Ok(found) => found,
        Err(refused) => return refused.into_response(),
    };
    let version = headers.get("a2a-version").and_then(|v| v.to_str().ok());
    match kernel.service::<A2aServer>().handle(agent, caller, version, body).await {
        Ok(Answer::Json(answer)) => (StatusCode::OK, Json(answer)).into_response(),
        Ok(Answer::Stream(updates)) => {
            let events = updates
                .map(|update| Ok::<_, Infallible>(Event::default().data(update.to_string())))
                .take_until(crate::live::stream_ends(kernel, holder));
            Sse::new(events).keep_alive(KeepAlive::new().interval(STREAM_KEEP_ALIVE)).into_response()
        }
        Err(refusal) => refused(refusal),
    }
}
