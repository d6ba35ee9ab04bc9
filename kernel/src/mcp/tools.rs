//! A connected server's tools in the tool list: listed, named for model APIs
//! ([`super::names`]), checked against the server's own JSON Schema, and called over the
//! connection, with the server's errors as tool errors.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{Peer, RoleClient};
use serde_json::Value;

use super::servers::{Server, ServerTool, provider};
use crate::Kernel;
use crate::error::{Error, Result};
use crate::text::shorten;
use crate::tool::dynamic::DynamicRun;
use crate::tool::{BoxFuture, CallContext, Provided, ToolDef, ToolOrigin};

/// How long listing a server's tools may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest description the model is offered; a server's own may be any length.
const MAX_DESCRIPTION: usize = 2000;

/// Lists the server's tools and offers them in place of what it offered before.
pub(crate) async fn refresh(kernel: &Kernel, server: &Arc<Server>, peer: &Peer<RoleClient>) -> Result<(), String> {
    let listed = match tokio::time::timeout(LIST_TIMEOUT, peer.list_all_tools()).await {
        Err(_) => return Err(format!("tools/list did not answer within {} s", LIST_TIMEOUT.as_secs())),
        Ok(Err(e)) => return Err(format!("tools/list failed: {e}")),
        Ok(Ok(tools)) => tools,
    };
    let (mapped, mut left_out) = super::names::map_tools(&server.name, listed.iter().map(|t| t.name.as_ref()));
    let mut offered = Vec::new();
    let mut views = Vec::new();
    for (name, original) in mapped {
        let tool = listed.iter().find(|t| t.name == original).expect("mapped from the list");
        let description = tool.description.as_deref().map(|d| shorten(d.trim(), MAX_DESCRIPTION)).unwrap_or_default();
        let renamed = name != format!("mcp__{}__{original}", server.name);
        let origin = ToolOrigin {
            provider: provider(&server.name),
            original_name: renamed.then(|| original.to_string()),
            note: None,
        };
        let mut def = ToolDef::new(
            &name,
            "mcp",
            if description.is_empty() { "(the server gives no description)" } else { &description },
        )
        .tags(&["mcp"])
        .origin(origin);
        def.tags.push(server.name.clone());
        def.schema = Arc::new(Value::Object(tool.input_schema.as_ref().clone()));
        let runner = McpCall { server: server.clone(), original: original.to_string() };
        let provided = Provided::dynamic(def, Arc::new(runner));
        if let Some(why) = provided.exclusion() {
            left_out.push(format!("`{original}`: {why}"));
        }
        views.push(ServerTool { name, original_name: original.to_string(), renamed, description });
        offered.push(provided);
    }
    server.set_tools(views, left_out);
    kernel.tool_list().provide(
        &provider(&server.name),
        offered,
        &format!("the MCP server `{}` no longer offers it", server.name),
    );
    Ok(())
}

/// Calls one tool of one server.
struct McpCall {
    server: Arc<Server>,
    original: String,
}

impl DynamicRun for McpCall {
    fn run(self: Arc<Self>, _ctx: CallContext, args: Value) -> BoxFuture<Result<Value>> {
        Box::pin(async move {
            let (peer, connection) = self.server.peer()?;
            let arguments = match args {
                Value::Object(map) => map,
                _ => Default::default(),
            };
            let params = CallToolRequestParams::new(self.original.clone()).with_arguments(arguments);
            let limit = Duration::from_secs(self.server.config.timeout_secs);
            let name = &self.server.name;
            match tokio::time::timeout(limit, peer.call_tool(params)).await {
                Err(_) => Err(Error::timeout(format!(
                    "the MCP server `{name}` did not answer within {} s (timeout_secs of [mcp.servers.{name}])",
                    limit.as_secs()
                ))),
                Ok(Ok(result)) => result_value(result),
                Ok(Err(ServiceError::McpError(e))) => Err(Error::failed(format!(
                    "the MCP server `{name}` refused the call: {} (code {})",
                    e.message, e.code.0
                ))),
                Ok(Err(e @ (ServiceError::TransportSend(_) | ServiceError::TransportClosed))) => {
                    self.server.connection_lost(connection);
                    Err(Error::unavailable(format!(
                        "the MCP server `{name}` could not be reached during the call: {e}"
                    )))
                }
                Ok(Err(e)) => Err(Error::failed(format!("the call to the MCP server `{name}` failed: {e}"))),
            }
        })
    }
}

/// A tool result as the caller gets it: the structured content when the server gives it, the
/// text of a text-only answer, else the content blocks as MCP writes them. A result the server
/// marks as an error is a failed call with its text.
fn result_value(result: CallToolResult) -> Result<Value> {
    let texts: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.as_str()).collect();
    if result.is_error == Some(true) {
        let message = match (&result.structured_content, texts.is_empty()) {
            (_, false) => texts.join("\n"),
            (Some(structured), true) => structured.to_string(),
            (None, true) => "the tool reported an error and gave no message".into(),
        };
        return Err(Error::failed(message));
    }
    if let Some(structured) = result.structured_content {
        return Ok(structured);
    }
    if texts.len() == result.content.len() && texts.len() == 1 {
        return Ok(Value::String(texts[0].to_string()));
    }
    serde_json::to_value(&result.content).map_err(Error::internal)
}
