//! One connection to one MCP server, over a child's stdio or streamable HTTP, with the
//! handler that hears the server's notifications.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};
use tokio::io::AsyncBufReadExt;
use tokio::sync::Notify;

use super::config::{McpServerConfig, Transport};
use crate::net::guard::AllowedHosts;

/// What the client tells the server, and what it hears back.
#[derive(Clone)]
pub(crate) struct Listener {
    /// Raised on `notifications/tools/list_changed` (and the resource and prompt lists').
    pub changed: Arc<Notify>,
}

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    async fn on_resource_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    async fn on_prompt_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        // The newest version with the `initialize` handshake every server still speaks.
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("kennel", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

/// A live connection: the running client, and for a stdio server its process group (killed
/// whole when the connection ends: `npx` leaves its `node` behind otherwise).
pub(crate) struct Connection {
    pub client: RunningService<RoleClient, Listener>,
    pub group: Option<u32>,
}

/// Ends a connection: the client first, then whatever of the server's process group is left.
pub(crate) fn end(client: rmcp::service::RunningServiceCancellationToken, group: Option<u32>) {
    client.cancel();
    kill_group(group);
}

pub(crate) fn kill_group(group: Option<u32>) {
    if let Some(pgid) = group {
        crate::process::kill_group(pgid);
    }
}

/// Connects and completes the handshake. `stderr` gets each line a stdio server writes there.
pub(crate) async fn connect(
    config: &McpServerConfig,
    allowed_hosts: &AllowedHosts,
    home: &std::path::Path,
    listener: Listener,
    stderr: impl Fn(String) + Send + 'static,
) -> Result<Connection, String> {
    match config.transport() {
        Transport::Stdio { command } => {
            let mut child = tokio::process::Command::new(command);
            child.args(&config.args).env_clear().current_dir(config.cwd.as_deref().unwrap_or(home)).process_group(0);
            for key in ["PATH", "HOME", "LANG"] {
                if let Some(value) = std::env::var_os(key) {
                    child.env(key, value);
                }
            }
            for key in &config.pass_env {
                if let Some(value) = std::env::var_os(key) {
                    child.env(key, value);
                }
            }
            child.envs(&config.env);
            child.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
            let mut child = child.spawn().map_err(|e| format!("cannot start `{command}`: {e}"))?;
            let group = child.id();
            let stdin = child.stdin.take().expect("stdin is piped");
            let stdout = child.stdout.take().expect("stdout is piped");
            let err = child.stderr.take().expect("stderr is piped");
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(err).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    stderr(line);
                }
            });
            // Reaped when it exits; the connection sees its stdout close.
            tokio::spawn(async move {
                let _ = child.wait().await;
            });
            match listener.serve((stdout, stdin)).await {
                Ok(client) => Ok(Connection { client, group }),
                Err(e) => {
                    kill_group(group);
                    Err(format!("the handshake with `{command}` failed: {e}"))
                }
            }
        }
        Transport::Http { url } => {
            let parsed = reqwest::Url::parse(url).map_err(|e| format!("`{url}`: {e}"))?;
            let addr = crate::net::guard::resolve(&parsed, allowed_hosts, "[mcp] allowed_hosts")
                .await
                .map_err(|e| e.message)?;
            let http = crate::net::pinned_builder(&parsed, addr)
                .and_then(|b| b.build().map_err(|e| crate::Error::failed(e.to_string())))
                .map_err(|e| e.message)?;
            let mut headers = HashMap::new();
            for (header, value) in &config.headers {
                headers.insert(header_name(header)?, header_value(header, value)?);
            }
            for (header, variable) in &config.header_env {
                let value = std::env::var(variable).map_err(|_| {
                    format!("header `{header}` comes from ${variable}, which is not set in the daemon's environment")
                })?;
                headers.insert(header_name(header)?, header_value(header, &value)?);
            }
            let transport = StreamableHttpClientTransport::with_client(
                http,
                StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(headers),
            );
            let client =
                listener.serve(transport).await.map_err(|e| format!("the handshake with {url} failed: {e}"))?;
            Ok(Connection { client, group: None })
        }
    }
}

fn header_name(header: &str) -> Result<reqwest::header::HeaderName, String> {
    reqwest::header::HeaderName::from_bytes(header.as_bytes()).map_err(|_| format!("`{header}` is not a header name"))
}

fn header_value(header: &str, value: &str) -> Result<reqwest::header::HeaderValue, String> {
    reqwest::header::HeaderValue::from_str(value)
        .map_err(|_| format!("the value of header `{header}` is not a valid header value"))
}
