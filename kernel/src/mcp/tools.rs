//! A connected server's tools in the tool list: listed, named for model APIs
//! ([`super::names`]), checked against the server's own JSON Schema, and called over the
//! connection, with the server's errors as tool errors.

use std::sync::Arc;
use std::time::Duration;

use rmcp::service::{Peer, RoleClient};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::request::ServerRequest;
use super::servers::{Mcp, Server, ServerTool, provider};
use crate::cluster::Cluster;
use crate::error::Result;
use crate::text::shorten;
use crate::tool::dynamic::DynamicRun;
use crate::tool::{BoxFuture, CallContext, Provided, ToolDef, ToolOrigin};

/// How long listing a server's tools may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest description the model is offered; a server's own may be any length.
const MAX_DESCRIPTION: usize = 2000;

/// A server's tool as it is offered, by the daemon running the server and, through
/// `mcp_offers`, by the others of a cluster.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct OfferedTool {
    name: String,
    original_name: String,
    renamed: bool,
    description: String,
    schema: Map<String, Value>,
}

/// Lists the server's tools and offers them in place of what it offered before. Returns what
/// it offered and left out (the other daemons of a cluster are told), or why listing failed.
pub(crate) async fn refresh(
    mcp: &Mcp,
    server: &Arc<Server>,
    peer: &Peer<RoleClient>,
) -> Result<(Vec<OfferedTool>, Vec<String>), String> {
    let listed = match tokio::time::timeout(LIST_TIMEOUT, peer.list_all_tools()).await {
        Err(_) => return Err(format!("tools/list did not answer within {} s", LIST_TIMEOUT.as_secs())),
        Ok(Err(e)) => return Err(format!("tools/list failed: {e}")),
        Ok(Ok(tools)) => tools,
    };
    let (mapped, left_out) = super::names::map_tools(&server.name, listed.iter().map(|t| t.name.as_ref()));
    let tools: Vec<OfferedTool> = mapped
        .into_iter()
        .map(|(name, original)| {
            let tool = listed.iter().find(|t| t.name == original).expect("mapped from the list");
            let description =
                tool.description.as_deref().map(|d| shorten(d.trim(), MAX_DESCRIPTION)).unwrap_or_default();
            OfferedTool {
                renamed: name != format!("mcp__{}__{original}", server.name),
                name,
                original_name: original.to_string(),
                description,
                schema: tool.input_schema.as_ref().clone(),
            }
        })
        .collect();
    offer(mcp, server, &tools, left_out.clone());
    Ok((tools, left_out))
}

/// Offers `tools` of `server` in place of what it offered before. Each is called through
/// [`Server::ask`]: over this daemon's connection, or forwarded to the daemon running it.
pub(crate) fn offer(mcp: &Mcp, server: &Arc<Server>, tools: &[OfferedTool], mut left_out: Vec<String>) {
    let mut offered = Vec::new();
    let mut views = Vec::new();
    for tool in tools {
        let OfferedTool { name, original_name, renamed, description, schema } = tool.clone();
        let origin = ToolOrigin {
            provider: provider(&server.name),
            original_name: renamed.then(|| original_name.clone()),
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
        def.schema = crate::tool::ArgsSchema::given(Value::Object(schema));
        let runner = McpCall { server: server.clone(), cluster: mcp.cluster.clone(), original: original_name.clone() };
        let provided = Provided::dynamic(def, Arc::new(runner));
        if let Some(why) = provided.exclusion() {
            left_out.push(format!("`{original_name}`: {why}"));
        }
        views.push(ServerTool { name, original_name, renamed, description });
        offered.push(provided);
    }
    server.set_tools(views, left_out);
    mcp.tools.provide(
        &provider(&server.name),
        offered,
        &format!("the MCP server `{}` no longer offers it", server.name),
    );
}

/// Calls one tool of one server.
struct McpCall {
    server: Arc<Server>,
    /// Carries the call to the daemon running the server, when it is another one.
    cluster: Arc<Cluster>,
    original: String,
}

impl DynamicRun for McpCall {
    fn run(self: Arc<Self>, _: CallContext, args: Value) -> BoxFuture<Result<Value>> {
        Box::pin(async move {
            let arguments = match args {
                Value::Object(map) => map,
                _ => Default::default(),
            };
            let request = ServerRequest::CallTool { tool: self.original.clone(), arguments };
            self.server.ask(&self.cluster, request).await
        })
    }
}
