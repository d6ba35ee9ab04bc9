//! Kennel as an MCP server: one agent's usable tools offered to any MCP client, each call
//! through the one pipeline as that agent (its grants and every gate apply), audited with the
//! MCP client as the caller (`mcp:CLIENT (token:NAME)`). The HTTP front mounts it at
//! `/api/agents/{id}/mcp` (streamable HTTP, an API token); `kennel mcp --agent` bridges a
//! client's stdio to that endpoint, since the agent's browser, processes and sessions live in
//! the daemon.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;
use uuid::Uuid;

use crate::agent::{Agent, Agents};
use crate::family::Services;
use crate::runtime::Runtime;
use crate::tool::{CallContext, Caller, Tools, TurnScope};

/// Who asks, for one request: the agent whose tools are used, and who the HTTP front let in.
/// The front puts it in the request's extensions; sessions are not trusted to carry it.
#[derive(Debug, Clone)]
pub struct Requester {
    pub agent: Uuid,
    pub via: Caller,
}

/// The MCP server over the agents' tools.
#[derive(Clone)]
pub struct AgentTools {
    agents: Arc<Agents>,
    tools: Arc<Tools>,
    /// Runs each call through the pipeline.
    runtime: Runtime,
}

impl AgentTools {
    pub fn new(services: &Services) -> AgentTools {
        AgentTools { agents: services.need(), tools: services.need(), runtime: services.get::<Runtime>().clone() }
    }

    fn requester(&self, cx: &RequestContext<RoleServer>) -> Result<(Requester, Arc<Agent>), ErrorData> {
        let requester = cx
            .extensions
            .get::<hyper::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Requester>())
            .cloned()
            .ok_or_else(|| ErrorData::internal_error("the request carries no agent", None))?;
        let agent = self
            .agents
            .get_by_id(requester.agent)
            .ok_or_else(|| ErrorData::invalid_params("the agent no longer exists", None))?;
        Ok((requester, agent))
    }
}

/// MCP clients are headless: no person answers `ask_user` in their calls, no conversation.
const SCOPE: TurnScope = TurnScope { person: false, conversation: false };

impl ServerHandler for AgentTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("kennel", env!("CARGO_PKG_VERSION")))
            .with_instructions("The tools this Kennel agent may use. Every call runs as the agent, under its grants.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (_, agent) = self.requester(&cx)?;
        let registry = self.tools.snapshot();
        let tools = registry
            .usable_by(&agent, Some(SCOPE))
            .map(|def| {
                let schema = match &*def.schema {
                    Value::Object(map) => map.clone(),
                    _ => Default::default(),
                };
                Tool::new(def.name.clone(), def.description.clone(), Arc::new(schema))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (requester, agent) = self.requester(&cx)?;
        let client = cx.peer.peer_info().map(|info| info.client_info.name.clone()).unwrap_or_else(|| "unnamed".into());
        let mut ctx = CallContext::new(agent, Caller::Mcp { client, via: Box::new(requester.via) });
        ctx.cancel = cx.ct.clone();
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let result = match self.runtime.call_tool(ctx, &request.name, args).await {
            Ok(output) => answer(output.content),
            // Refusals and failures are the tool's answer, which the client's model reads.
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.model_text())]),
        };
        Ok(result.into())
    }
}

/// A result as MCP content: text as it is; anything else as its JSON text, and as structured
/// content when it is an object.
fn answer(content: Value) -> CallToolResult {
    match content {
        Value::String(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Value::Object(_) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(content.to_string())]);
            result.structured_content = Some(content);
            result
        }
        other => CallToolResult::success(vec![ContentBlock::text(other.to_string())]),
    }
}
