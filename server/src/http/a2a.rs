//! A2A over HTTP: agent cards under `/.well-known/` and JSON-RPC at `/a2a` and `/a2a/{agent}`.
//! Outside `/api`: a public agent needs no token; any other exposed agent needs an API token.

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use kennel_kernel::Kernel;
use kennel_kernel::a2a::{self, Inbound, Refusal};

use super::error::ApiError;

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

async fn daemon_card(State(kernel): State<Kernel>, headers: HeaderMap) -> Json<serde_json::Value> {
    Json(a2a::daemon_card(&kernel, &base_url(&headers)))
}

async fn agent_card(
    State(kernel): State<Kernel>,
    headers: HeaderMap,
    Path(agent): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    Ok(Json(a2a::agent_card(&kernel, &agent, &base_url(&headers))?))
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
    let presented =
        headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).map(str::trim);
    let inbound = match presented {
        None => Inbound::Anonymous,
        Some(token) => match kernel.auth().verify_token(token) {
            Some(name) => Inbound::Token(name),
            None => return ApiError::Unauthorized("the API token is not valid or has been revoked").into_response(),
        },
    };
    match a2a::handle(kernel, agent, inbound, body).await {
        Ok(answer) => (StatusCode::OK, Json(answer)).into_response(),
        Err(Refusal::Unauthorized) => {
            ApiError::Unauthorized("this agent needs an API token: `Authorization: Bearer TOKEN`").into_response()
        }
    }
}
