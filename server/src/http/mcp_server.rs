//! `/api/agents/{id}/mcp`: Kennel as an MCP server (streamable HTTP) for one agent's tools —
//! `kernel::mcp::serve` behind the API's token check. Not in the OpenAPI document: it speaks
//! MCP's JSON-RPC, not REST.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Extension, Path, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, any};
use futures_util::StreamExt;
use kennel_kernel::Kernel;
use kennel_kernel::mcp::serve::{AgentTools, Requester};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::auth::Bearer;
use super::error::ApiError;
use crate::live::Holder;
use crate::routes::{Action, Api};

type Service = Arc<StreamableHttpService<AgentTools, LocalSessionManager>>;

/// The endpoint, which the OpenAPI document does not describe (MCP describes itself): its
/// messages are not operator actions (the tool calls among them are in the audit log).
pub fn routes(kernel: &Kernel) -> Api {
    Api::new().undocumented("/api/agents/{id}/mcp", route(kernel), Action::Logged)
}

/// The route, with the one service every session of every agent goes through.
fn route(kernel: &Kernel) -> MethodRouter<Kernel> {
    let tools = AgentTools::new(kernel.services());
    // Every request carries an API token, which a page rebinding a name to this address
    // cannot know: the SDK's Host check (for unauthenticated local servers) would only refuse
    // a daemon reached by its host name or a LAN address.
    let config = StreamableHttpServerConfig::default().disable_allowed_hosts();
    let service: Service = Arc::new(StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    ));
    any(serve).layer(Extension(service))
}

async fn serve(
    State(kernel): State<Kernel>,
    Extension(service): Extension<Service>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Extension(holder): Extension<Holder>,
    Path(id): Path<String>,
    mut request: Request,
) -> Response {
    let agent = match kernel.agents().get(&id) {
        Ok(agent) => agent,
        Err(e) => return ApiError::from(e).into_response(),
    };
    // Who asks is decided here, per request: an MCP session id proves nothing about its sender.
    request.extensions_mut().insert(Requester { agent: agent.id, via: caller });
    let response = service.handle(request).await.map(Body::new);
    // A session's event stream lives as the API's live streams do: it ends when its token is
    // revoked, the daemon stops, or it has streamed `[server] stream_max_secs`.
    let streams = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !streams {
        return response;
    }
    let ends = crate::live::stream_ends(&kernel, holder);
    response.map(|body| Body::from_stream(body.into_data_stream().take_until(ends)))
}
