//! `/api/mcp/servers`: the MCP servers of `[mcp]`, their state and tools, and reconnecting one;
//! `/api/reload`: re-reading `[mcp]` from `config.toml` (`kennel reload`, SIGHUP).

use crate::routes::api;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::Method;
use kennel_kernel::Kernel;
use kennel_kernel::mcp::Mcp;
use kennel_kernel::mcp::{McpReload, ServerView};

use super::error::ApiResult;
use crate::routes::{Action, Api};

pub fn routes() -> Api {
    Api::new()
        .route(api!(mcp_servers), &[])
        .route(api!(reconnect_mcp_server), &[(Method::POST, Action::named("mcp.reconnect"))])
        .route(api!(reload_config), &[(Method::POST, Action::named("config.reload"))])
}

/// Every configured MCP server: its state, the tools it offers (with the names the model sees
/// them by), recent errors and a stdio server's last stderr lines.
#[utoipa::path(get, path = "/api/mcp/servers", tag = "mcp",
    responses((status = 200, description = "The MCP servers, by name", body = Vec<ServerView>)))]
async fn mcp_servers(State(kernel): State<Kernel>) -> Json<Vec<ServerView>> {
    Json(kernel.service::<Mcp>().servers().iter().map(|s| s.view()).collect())
}

/// Drops the server's connection (if any) and connects again now, whatever the backoff — also
/// after it gave up.
#[utoipa::path(post, path = "/api/mcp/servers/{name}/reconnect", tag = "mcp",
    params(("name" = String, Path, description = "The server's name in [mcp.servers]")),
    responses((status = 200, description = "Reconnecting; the server as it was when asked", body = ServerView),
        (status = 404, description = "No such server")))]
async fn reconnect_mcp_server(State(kernel): State<Kernel>, Path(name): Path<String>) -> ApiResult<Json<ServerView>> {
    Ok(Json(kernel.service::<Mcp>().reconnect(&name)?))
}

/// Re-reads `[mcp]` from `config.toml`: removed servers stop, added and changed ones connect,
/// the rest stay as they are. Other sections are read at start only.
#[utoipa::path(post, path = "/api/reload", tag = "meta",
    responses((status = 200, description = "What changed", body = McpReload),
        (status = 422, description = "config.toml has an error; nothing changed")))]
async fn reload_config(State(kernel): State<Kernel>) -> ApiResult<Json<McpReload>> {
    Ok(Json(kernel.reload_config().await?))
}
