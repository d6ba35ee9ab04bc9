//! Two tools for what MCP servers offer besides tools, offered while a connected server has
//! them: `mcp_resources` lists a server's resources or reads one, `mcp_prompts` lists its
//! prompts or gets one filled in. An agent reaches a server's resources and prompts only if it
//! may call at least one of that server's tools: the grant for `mcp__github__*` is what
//! admits it to `github`.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::Kernel;
use crate::error::{Error, Result};
use crate::tool::{CallContext, Needs, Provided, Tool, ToolDef};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Offers the two tools as far as a connected server has resources or prompts.
pub(crate) fn offer(kernel: &Kernel) {
    let servers = kernel.mcp().servers();
    let mut tools = Vec::new();
    if servers.iter().any(|s| s.offers(true)) {
        tools.push(Provided::typed(McpResources, &Needs::nothing()));
    }
    if servers.iter().any(|s| s.offers(false)) {
        tools.push(Provided::typed(McpPrompts, &Needs::nothing()));
    }
    kernel.tool_list().provide("mcp", tools, "no connected MCP server offers it now");
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourcesArgs {
    /// The MCP server, by its name in `[mcp.servers]` (the SERVER of `mcp__SERVER__TOOL`).
    pub server: String,
    /// A resource's URI, to read it; without one, the server's resources are listed.
    pub uri: Option<String>,
}

pub struct McpResources;

impl Tool for McpResources {
    type Args = ResourcesArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("mcp_resources", "mcp", "List an MCP server's resources, or read one by its URI")
            .tags(&["mcp", "resources", "read"])
            .read_only()
    }

    async fn run(&self, ctx: CallContext, args: ResourcesArgs) -> Result<Value> {
        let peer = admitted(&ctx, &args.server)?;
        let value = match args.uri {
            None => within(peer.list_all_resources()).await.and_then(|r| to_json(&r))?,
            Some(uri) => within(peer.read_resource(ReadResourceRequestParams::new(uri)))
                .await
                .and_then(|r| to_json(&r.contents))?,
        };
        Ok(value)
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

pub struct McpPrompts;

impl Tool for McpPrompts {
    type Args = PromptsArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("mcp_prompts", "mcp", "List an MCP server's prompts, or get one with its arguments filled in")
            .tags(&["mcp", "prompts", "read"])
            .read_only()
    }

    async fn run(&self, ctx: CallContext, args: PromptsArgs) -> Result<Value> {
        let peer = admitted(&ctx, &args.server)?;
        match args.name {
            None => within(peer.list_all_prompts()).await.and_then(|p| to_json(&p)),
            Some(name) => {
                let arguments = args.arguments.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
                within(peer.get_prompt(GetPromptRequestParams::new(name).with_arguments(arguments)))
                    .await
                    .and_then(|p| to_json(&p))
            }
        }
    }
}

/// The server's connection, if the agent may use one of its tools.
fn admitted(ctx: &CallContext, server: &str) -> Result<rmcp::service::Peer<rmcp::service::RoleClient>> {
    let found = ctx.kernel.mcp().server(server).map_err(|e| e.on_field("server"))?;
    let prefix = format!("mcp__{server}__");
    let registry = ctx.kernel.tools();
    if !registry.usable_by(&ctx.agent, None).any(|d| d.name.starts_with(&prefix)) {
        return Err(Error::forbidden(format!(
            "`{}` may call none of the MCP server `{server}`'s tools (grant `{prefix}*` or one of them), so not its resources or prompts either",
            ctx.agent.name
        )));
    }
    found.peer().map(|(peer, _)| peer)
}

async fn within<T>(call: impl Future<Output = std::result::Result<T, rmcp::ServiceError>>) -> Result<T> {
    match tokio::time::timeout(TIMEOUT, call).await {
        Err(_) => Err(Error::timeout(format!("the MCP server did not answer within {} s", TIMEOUT.as_secs()))),
        Ok(Err(rmcp::ServiceError::McpError(e))) => {
            Err(Error::failed(format!("the MCP server refused: {} (code {})", e.message, e.code.0)))
        }
        Ok(Err(e)) => Err(Error::failed(format!("the MCP server could not answer: {e}"))),
        Ok(Ok(value)) => Ok(value),
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value> {
    serde_json::to_value(value).map_err(Error::internal)
}
