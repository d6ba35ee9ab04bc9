//! `kennel mcp --agent NAME`: an MCP server on standard input and output that bridges to the
//! running daemon's `/api/agents/{id}/mcp` with this home's CLI token. The agent's tools run
//! in the daemon, where its browser, processes and sessions live; the audit names the MCP
//! client (`mcp:CLIENT (cli)`). Nothing but MCP messages goes to standard output.

use std::path::Path;

use anyhow::Context;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde::Deserialize;
use tokio::sync::OnceCell;

use super::daemon::Daemon;

#[derive(Deserialize)]
struct AgentInfo {
    id: uuid::Uuid,
}

pub async fn serve(home: &Path, agent: &str) -> anyhow::Result<()> {
    let daemon = Daemon::of(home)?;
    let found: AgentInfo = daemon.get(&format!("/api/agents/{}", super::agent_ref(agent)?)).await?;
    let bridge = Bridge {
        url: format!("{}/api/agents/{}/mcp", daemon.file.url, found.id),
        token: daemon.token().to_string(),
        upstream: OnceCell::new(),
    };
    let running = bridge.serve(rmcp::transport::stdio()).await.context("the MCP client's handshake failed")?;
    running.waiting().await.context("the MCP session ended abnormally")?;
    Ok(())
}

/// The stdio server: each request passed on to the daemon over one MCP session, opened at
/// the first request with the client's own name (so the audit names it).
struct Bridge {
    url: String,
    token: String,
    upstream: OnceCell<RunningService<RoleClient, ClientConfig>>,
}

impl Bridge {
    async fn upstream(&self, cx: &RequestContext<RoleServer>) -> Result<Peer<RoleClient>, ErrorData> {
        let client = cx.peer.peer_info().map(|i| i.client_info.name.clone()).unwrap_or_else(|| "unnamed".into());
        let running = self
            .upstream
            .get_or_try_init(|| async {
                let http = kennel_kernel::net::http_client()
                    .no_proxy()
                    .build()
                    .map_err(|e| ErrorData::internal_error(format!("cannot make an HTTP client: {e}"), None))?;
                let config =
                    StreamableHttpClientTransportConfig::with_uri(self.url.clone()).auth_header(self.token.clone());
                let info = ClientConfig::new(
                    ClientCapabilities::default(),
                    Implementation::new(client, env!("CARGO_PKG_VERSION")),
                )
                .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
                info.serve(StreamableHttpClientTransport::with_client(http, config)).await.map_err(|e| {
                    ErrorData::internal_error(format!("cannot reach the Kennel daemon at {}: {e}", self.url), None)
                })
            })
            .await?;
        Ok(running.peer().clone())
    }
}

fn passed_on(e: rmcp::ServiceError) -> ErrorData {
    match e {
        rmcp::ServiceError::McpError(e) => e,
        other => ErrorData::internal_error(format!("the Kennel daemon did not answer: {other}"), None),
    }
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("kennel", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.upstream(&cx).await?.list_tools(request).await.map_err(passed_on)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = self.upstream(&cx).await?.call_tool(request).await.map_err(passed_on)?;
        Ok(result.into())
    }
}
