//! Two tools for what MCP servers offer besides tools, offered while a connected server has
//! them: `mcp_resources` lists a server's resources or reads one, `mcp_prompts` lists its
//! prompts or gets one filled in. An agent reaches a server's resources and prompts only if it
//! may call at least one of that server's tools: the grant for `mcp__github__*` is what
//! admits it to `github`.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::request::ServerRequest;
use super::servers::Server;
use crate::error::{Error, Result};
use crate::mcp::Mcp;
use crate::tool::{CallContext, Needs, Provided, Tool, ToolDef};

/// Offers the two tools as far as a connected server has resources or prompts.
pub(crate) fn offer(mcp: &Arc<Mcp>) {
    let servers = mcp.servers();
    let mut tools = Vec::new();
    if servers.iter().any(|s| s.offers(true)) {
        tools.push(Provided::typed(McpResources(Arc::downgrade(mcp)), &Needs::nothing()));
    }
    if servers.iter().any(|s| s.offers(false)) {
        tools.push(Provided::typed(McpPrompts(Arc::downgrade(mcp)), &Needs::nothing()));
    }
    mcp.tools.provide("mcp", tools, "no connected MCP server offers it now");
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourcesArgs {
    /// The MCP server, by its name in `[mcp.servers]` (the SERVER of `mcp__SERVER__TOOL`).
    pub server: String,
    /// A resource's URI, to read it; without one, the server's resources are listed.
    pub uri: Option<String>,
}

/// Holds the servers weakly: the tool list holds the tool, and [`Mcp`] the tool list.
pub struct McpResources(Weak<Mcp>);

impl Tool for McpResources {
    type Args = ResourcesArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("mcp_resources", "mcp", "List an MCP server's resources, or read one by its URI")
            .tags(&["mcp", "resources", "read"])
            .read_only()
    }

    async fn run(&self, ctx: CallContext, args: ResourcesArgs) -> Result<Value> {
        let (mcp, server) = admitted(&self.0, &ctx, &args.server)?;
        let request = match args.uri {
            None => ServerRequest::ListResources,
            Some(uri) => ServerRequest::ReadResource { uri },
        };
        server.ask(&mcp.cluster, request).await
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptsArgs {
    /// The MCP server, by its name in `[mcp.servers]`.
    pub server: String,
    /// A prompt's name, to get it; without one, the server's prompts are listed.
    pub name: Option<String>,
    /// The prompt's arguments, by name.
    #[serde(default)]
    pub arguments: BTreeMap<String, String>,
}

/// Holds the servers weakly, as [`McpResources`] does.
pub struct McpPrompts(Weak<Mcp>);

impl Tool for McpPrompts {
    type Args = PromptsArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("mcp_prompts", "mcp", "List an MCP server's prompts, or get one with its arguments filled in")
            .tags(&["mcp", "prompts", "read"])
            .read_only()
    }

    async fn run(&self, ctx: CallContext, args: PromptsArgs) -> Result<Value> {
        let (mcp, server) = admitted(&self.0, &ctx, &args.server)?;
        let request = match args.name {
            None => ServerRequest::ListPrompts,
            Some(name) => ServerRequest::GetPrompt { name, arguments: args.arguments },
        };
        server.ask(&mcp.cluster, request).await
    }
}

/// The server (and the MCP clients it is one of), if the agent may use one of its tools.
fn admitted(mcp: &Weak<Mcp>, ctx: &CallContext, server: &str) -> Result<(Arc<Mcp>, Arc<Server>)> {
    let mcp = mcp.upgrade().ok_or_else(crate::runtime::not_running)?;
    let found = mcp.server(server).map_err(|e| e.on_field("server"))?;
    let prefix = format!("mcp__{server}__");
    let registry = mcp.tools.snapshot();
    if !registry.usable_by(&ctx.agent, None).any(|d| d.name.starts_with(&prefix)) {
        return Err(Error::forbidden(format!(
            "`{}` may call none of the MCP server `{server}`'s tools (grant `{prefix}*` or one of them), so not its resources or prompts either",
            ctx.agent.name
        )));
    }
    Ok((mcp, found))
}
