//! What is asked of a server, in one form whether this daemon runs the server or another
//! daemon of the cluster does: a stdio server runs once per cluster ([`super::servers`]), and
//! the other daemons' requests reach it through [`crate::cluster::ask_holder`].

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{CallToolRequestParams, CallToolResult, GetPromptRequestParams, ReadResourceRequestParams};
use rmcp::service::{Peer, RoleClient};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::servers::Server;
use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::mcp::Mcp;

/// How long a resource or prompt request may take (a tool call has the server's
/// `timeout_secs`).
const META_TIMEOUT: Duration = Duration::from_secs(60);
/// What a request forwarded to another daemon may wait beyond its own limit: a lease's worth
/// for a daemon that died to be replaced, and the new one to connect.
const FORWARD_SLACK: Duration = Duration::from_secs(15);

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum ServerRequest {
    CallTool { tool: String, arguments: Map<String, Value> },
    ListResources,
    ReadResource { uri: String },
    ListPrompts,
    GetPrompt { name: String, arguments: BTreeMap<String, String> },
}

impl ServerRequest {
    fn limit(&self, server: &Server) -> Duration {
        match self {
            ServerRequest::CallTool { .. } => Duration::from_secs(server.config.timeout_secs),
            _ => META_TIMEOUT,
        }
    }
}

impl Server {
    /// Answers `request` over this daemon's connection, or has the daemon of the cluster that
    /// runs the server answer it.
    pub(crate) async fn ask(&self, cluster: &Cluster, request: ServerRequest) -> Result<Value> {
        match self.peer() {
            Ok((peer, connection)) => self.ask_here(&peer, connection, request).await,
            Err(not_here) => match self.runs_on() {
                Some(_) => {
                    let what = format!("the MCP server `{}` (run by another daemon of the cluster)", self.name);
                    let limit = request.limit(self) + FORWARD_SLACK;
                    crate::cluster::ask_holder(cluster, &super::servers::lease(&self.name), &request, limit, &what)
                        .await
                }
                None => Err(not_here),
            },
        }
    }

    async fn ask_here(&self, peer: &Peer<RoleClient>, connection: u64, request: ServerRequest) -> Result<Value> {
        let limit = request.limit(self);
        let name = &self.name;
        let limit_from = match request {
            ServerRequest::CallTool { .. } => format!(" (timeout_secs of [mcp.servers.{name}])"),
            _ => String::new(),
        };
        let answered = match request {
            ServerRequest::CallTool { tool, arguments } => {
                let params = CallToolRequestParams::new(tool).with_arguments(arguments);
                within(limit, peer.call_tool(params)).await.map(|r| r.and_then(result_value))
            }
            ServerRequest::ListResources => within(limit, peer.list_all_resources()).await.map(|r| r.and_then(to_json)),
            ServerRequest::ReadResource { uri } => {
                within(limit, peer.read_resource(ReadResourceRequestParams::new(uri)))
                    .await
                    .map(|r| r.and_then(|r| to_json(r.contents)))
            }
            ServerRequest::ListPrompts => within(limit, peer.list_all_prompts()).await.map(|r| r.and_then(to_json)),
            ServerRequest::GetPrompt { name, arguments } => {
                let arguments = arguments.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
                within(limit, peer.get_prompt(GetPromptRequestParams::new(name).with_arguments(arguments)))
                    .await
                    .map(|r| r.and_then(to_json))
            }
        };
        match answered {
            Err(_) => Err(Error::timeout(format!(
                "the MCP server `{name}` did not answer within {} s{limit_from}",
                limit.as_secs()
            ))),
            Ok(Ok(value)) => Ok(value),
            Ok(Err(Refused::Tool(e))) => Err(e),
            Ok(Err(Refused::Service(ServiceError::McpError(e)))) => Err(Error::failed(format!(
                "the MCP server `{name}` refused the request: {} (code {})",
                e.message, e.code.0
            ))),
            Ok(Err(Refused::Service(e @ (ServiceError::TransportSend(_) | ServiceError::TransportClosed)))) => {
                self.connection_lost(connection);
                Err(Error::unavailable(format!("the MCP server `{name}` could not be reached during the call: {e}")))
            }
            Ok(Err(Refused::Service(e))) => {
                Err(Error::failed(format!("the request to the MCP server `{name}` failed: {e}")))
            }
        }
    }
}

/// Why a request got no value: the server's protocol said no, or the tool reported an error.
enum Refused {
    Service(ServiceError),
    Tool(Error),
}

async fn within<T>(
    limit: Duration,
    call: impl Future<Output = std::result::Result<T, ServiceError>>,
) -> std::result::Result<std::result::Result<T, Refused>, tokio::time::error::Elapsed> {
    tokio::time::timeout(limit, call).await.map(|r| r.map_err(Refused::Service))
}

/// A tool result as the caller gets it: the structured content when the server gives it, the
/// text of a text-only answer, else the content blocks as MCP writes them. A result the server
/// marks as an error is a failed call with its text.
fn result_value(result: CallToolResult) -> std::result::Result<Value, Refused> {
    let texts: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.as_str()).collect();
    if result.is_error == Some(true) {
        let message = match (&result.structured_content, texts.is_empty()) {
            (_, false) => texts.join("\n"),
            (Some(structured), true) => structured.to_string(),
            (None, true) => "the tool reported an error and gave no message".into(),
        };
        return Err(Refused::Tool(Error::failed(message)));
    }
    if let Some(structured) = result.structured_content {
        return Ok(structured);
    }
    if texts.len() == result.content.len() && texts.len() == 1 {
        return Ok(Value::String(texts[0].to_string()));
    }
    to_json(result.content)
}

fn to_json<T: Serialize>(value: T) -> std::result::Result<Value, Refused> {
    serde_json::to_value(value).map_err(|e| Refused::Tool(Error::internal(e)))
}

impl Mcp {
    /// Whether this daemon runs `server` and it is connected (forwarded requests for it can
    /// be answered now).
    pub(crate) fn ready_here(&self, server: &str) -> bool {
        self.server(server).is_ok_and(|s| s.peer().is_ok())
    }

    /// Answers a request another daemon forwarded to this one, which runs `server`.
    pub(crate) async fn answer_forwarded(&self, server: &str, request: &str) -> Result<Value> {
        let request: ServerRequest = serde_json::from_str(request)
            .map_err(|e| Error::internal(format_args!("a forwarded MCP request is unreadable: {e}")))?;
        let server = self.server(server)?;
        let (peer, connection) = server.peer()?;
        server.ask_here(&peer, connection, request).await
    }
}
