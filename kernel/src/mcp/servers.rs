//! The configured MCP servers while the daemon runs: each has a supervisor task that connects
//! in the background (start is never delayed), offers the server's tools, refreshes them on
//! `list_changed`, and on a lost connection withdraws them with the reason and reconnects
//! with backoff — giving up after [`CRASH_LOOP`] failures within [`CRASH_WINDOW`] until an
//! operator asks again (the MCP page, `kennel reload`).

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use rmcp::service::{Peer, RoleClient};
use serde::Serialize;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use super::config::{McpConfig, McpServerConfig, Transport};
use super::connect::{self, Connection, Listener};
use crate::clock::Clock;
use crate::cluster::Cluster;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::family::{Home, Services};
use crate::net::guard::AllowedHosts;
use crate::tool::Tools;

/// Failures within [`CRASH_WINDOW`] after which a server is not restarted by itself.
pub const CRASH_LOOP: usize = 5;
pub const CRASH_WINDOW: Duration = Duration::from_secs(120);
/// The first wait before reconnecting; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long connecting and the `initialize` handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// How many errors and stderr lines each server keeps for its page.
const KEPT: usize = 20;

/// Where a server stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ServerState {
    Connecting,
    Connected,
    /// Lost or never made; reconnecting after a wait.
    Disconnected,
    /// Failed too often in a row: waits for an operator's reconnect.
    GaveUp,
    /// A stdio server that another daemon of the cluster runs (`runs_on`): its tools are
    /// offered here and their calls forwarded to it.
    Elsewhere,
}

impl ServerState {
    pub fn as_str(self) -> &'static str {
        match self {
            ServerState::Connecting => "connecting",
            ServerState::Connected => "connected",
            ServerState::Disconnected => "disconnected",
            ServerState::GaveUp => "gave_up",
            ServerState::Elsewhere => "elsewhere",
        }
    }

    /// The state as a person reads it.
    pub fn words(self) -> &'static str {
        match self {
            ServerState::Connecting => "connecting",
            ServerState::Connected => "connected",
            ServerState::Disconnected => "disconnected",
            ServerState::GaveUp => "gave up",
            ServerState::Elsewhere => "run by another daemon of the cluster",
        }
    }
}

/// One of a server's tools as the model is offered it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ServerTool {
    /// `mcp__SERVER__TOOL`.
    pub name: String,
    /// The server's own name for it.
    pub original_name: String,
    /// Whether the model sees another name than the server's (one model APIs refuse).
    pub renamed: bool,
    pub description: String,
}

/// Something that went wrong with a server, when.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ServerError {
    pub at: String,
    pub message: String,
}

/// A server as the MCP page and `GET /api/mcp/servers` show it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ServerView {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// The command line, or the URL.
    pub target: String,
    pub state: ServerState,
    /// Why it is not connected, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The daemon of the cluster that runs this stdio server, when it is another one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_on: Option<String>,
    /// The server's own name and version, from its handshake.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_info: Option<String>,
    pub tools: Vec<ServerTool>,
    /// Tools left out, and why (names that meet, schemas that are not JSON Schema).
    pub left_out: Vec<String>,
    pub offers_resources: bool,
    pub offers_prompts: bool,
    /// Connections made since the daemon started (or the config last changed).
    pub connections: u64,
    pub errors: Vec<ServerError>,
    /// The last lines a stdio server wrote to stderr.
    pub stderr: Vec<String>,
}

impl ServerView {
    /// A server as it starts: connecting, nothing known of it yet.
    fn connecting(name: &str, transport: &str, target: String) -> ServerView {
        ServerView {
            name: name.to_string(),
            transport: transport.into(),
            target,
            state: ServerState::Connecting,
            reason: None,
            runs_on: None,
            server_info: None,
            tools: Vec::new(),
            left_out: Vec::new(),
            offers_resources: false,
            offers_prompts: false,
            connections: 0,
            errors: Vec::new(),
            stderr: Vec::new(),
        }
    }

    /// Its state in words, with why it is not connected or which daemon runs it.
    pub fn state_in_words(&self) -> String {
        let state = self.state.words();
        match (&self.reason, &self.runs_on) {
            (Some(reason), _) => format!("{state}: {reason}"),
            (None, Some(daemon)) => format!("{state} ({daemon}); calls are forwarded to it"),
            (None, None) => state.to_string(),
        }
    }
}

/// One configured server and its supervisor.
pub struct Server {
    pub name: String,
    pub config: McpServerConfig,
    /// A stdio server on a shared database: one daemon of the cluster runs it, under the
    /// lease `mcp:<name>`, and the others forward to it.
    clustered: bool,
    view: Mutex<ServerView>,
    peer: RwLock<Option<Peer<RoleClient>>>,
    /// A connected stdio server's process group, killed whole when the daemon stops.
    group: Mutex<Option<u32>>,
    /// Asks the supervisor to drop the connection and connect again now.
    reconnect: Notify,
    /// Says a connection is gone (an HTTP call that could not reach the server)...
    lost: Notify,
    /// ...and which: a call that failed on an old connection must not end a newer one.
    lost_connection: AtomicU64,
    /// Counts connections; each call knows the one it used.
    connection: AtomicU64,
    stop: CancellationToken,
}

impl Server {
    fn new(name: &str, config: McpServerConfig, shared_database: bool) -> Server {
        let clustered = shared_database && matches!(config.transport(), Transport::Stdio { .. });
        let (transport, target) = match config.transport() {
            Transport::Stdio { command } => (
                "stdio",
                std::iter::once(command).chain(config.args.iter().map(String::as_str)).collect::<Vec<_>>().join(" "),
            ),
            Transport::Http { url } => ("http", url.to_string()),
        };
        let view = ServerView::connecting(name, transport, target);
        Server {
            name: name.to_string(),
            config,
            clustered,
            view: Mutex::new(view),
            peer: RwLock::new(None),
            group: Mutex::new(None),
            reconnect: Notify::new(),
            lost: Notify::new(),
            lost_connection: AtomicU64::new(0),
            connection: AtomicU64::new(0),
            stop: CancellationToken::new(),
        }
    }

    pub fn view(&self) -> ServerView {
        self.view.lock().expect("mcp view lock").clone()
    }

    /// The live connection (with its number, for [`Server::connection_lost`]), or why there
    /// is none.
    pub(crate) fn peer(&self) -> Result<(Peer<RoleClient>, u64)> {
        if let Some(peer) = self.peer.read().expect("mcp peer lock").clone() {
            return Ok((peer, self.connection.load(Ordering::SeqCst)));
        }
        let view = self.view();
        let why = view.reason.unwrap_or_else(|| view.state.as_str().to_string());
        Err(Error::unavailable(format!("the MCP server `{}` is not connected: {why}", self.name)))
    }

    /// A call found connection `number` gone: the supervisor reconnects, if that is still
    /// the connection it serves.
    pub(crate) fn connection_lost(&self, number: u64) {
        self.lost_connection.store(number, Ordering::SeqCst);
        self.lost.notify_one();
    }

    fn note_error(&self, clock: &Clock, message: String) {
        tracing::warn!(server = %self.name, "MCP: {message}");
        let mut view = self.view.lock().expect("mcp view lock");
        push_kept(&mut view.errors, ServerError { at: crate::db::timestamp(clock.now()), message });
    }

    pub(crate) fn set_tools(&self, tools: Vec<ServerTool>, left_out: Vec<String>) {
        self.set(|v| {
            v.tools = tools;
            v.left_out = left_out;
        });
    }

    /// Whether it is connected (here or on the daemon running it) and offers resources
    /// (`true`) or prompts (`false`).
    pub(crate) fn offers(&self, resources: bool) -> bool {
        let view = self.view.lock().expect("mcp view lock");
        matches!(view.state, ServerState::Connected | ServerState::Elsewhere)
            && if resources { view.offers_resources } else { view.offers_prompts }
    }

    /// The daemon of the cluster running this server, when it is not this one.
    pub(crate) fn runs_on(&self) -> Option<String> {
        self.view.lock().expect("mcp view lock").runs_on.clone()
    }

    fn set(&self, change: impl FnOnce(&mut ServerView)) {
        change(&mut self.view.lock().expect("mcp view lock"));
    }
}

fn push_kept<T>(list: &mut Vec<T>, item: T) {
    list.push(item);
    if list.len() > KEPT {
        list.remove(0);
    }
}

/// Every configured server.
pub struct Mcp {
    /// Where the servers' tools are offered and withdrawn.
    pub(super) tools: Arc<Tools>,
    /// Runs each stdio server once on a shared database, and carries requests to it.
    pub(super) cluster: Arc<Cluster>,
    clock: Clock,
    /// `$KENNEL_HOME`, the stdio servers' default working directory.
    home: PathBuf,
    /// Whether the database is shared by a cluster of daemons.
    shared_database: bool,
    servers: Mutex<BTreeMap<String, Arc<Server>>>,
    allowed_hosts: RwLock<AllowedHosts>,
}

/// What `kennel reload` changed in `[mcp]`.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, ToSchema)]
pub struct McpReload {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Servers whose settings changed: reconnected with the new ones.
    pub changed: Vec<String>,
    pub unchanged: Vec<String>,
}

impl Mcp {
    pub(super) fn open(services: &Services) -> Mcp {
        Mcp {
            tools: services.need(),
            cluster: services.need(),
            clock: services.get::<Clock>().clone(),
            home: services.get::<Home>().path().to_path_buf(),
            shared_database: services.get::<Db>().is_shared(),
            servers: Mutex::default(),
            allowed_hosts: RwLock::default(),
        }
    }

    pub fn servers(&self) -> Vec<Arc<Server>> {
        self.servers.lock().expect("mcp lock").values().cloned().collect()
    }

    pub fn server(&self, name: &str) -> Result<Arc<Server>> {
        self.servers
            .lock()
            .expect("mcp lock")
            .get(name)
            .cloned()
            .ok_or_else(|| Error::not_found(format!("no MCP server named `{name}` in [mcp.servers]")))
    }

    /// Starts a supervisor for each server of `config`.
    pub fn start(self: &Arc<Self>, config: &McpConfig) {
        self.apply(config);
    }

    /// Makes the running servers those of `config`: removed ones stop (their tools are
    /// withdrawn), added and changed ones (re)connect, the rest are left as they are.
    pub fn apply(self: &Arc<Self>, config: &McpConfig) -> McpReload {
        let mut report = McpReload::default();
        let hosts_changed = {
            let mut hosts = self.allowed_hosts.write().expect("mcp hosts lock");
            let changed = *hosts != config.allowed_hosts;
            *hosts = config.allowed_hosts.clone();
            changed
        };
        let mut servers = self.servers.lock().expect("mcp lock");
        servers.retain(|name, server| {
            let keep = config.servers.get(name).is_some_and(|c| {
                *c == server.config && !(hosts_changed && matches!(c.transport(), Transport::Http { .. }))
            });
            if !keep {
                server.stop.cancel();
                if config.servers.contains_key(name) {
                    report.changed.push(name.clone());
                } else {
                    report.removed.push(name.clone());
                    self.tools.provide(
                        &provider(name),
                        Vec::new(),
                        &format!("the MCP server `{name}` was removed from [mcp]"),
                    );
                }
            }
            keep
        });
        for (name, server_config) in &config.servers {
            if servers.contains_key(name) {
                if !report.changed.contains(name) {
                    report.unchanged.push(name.clone());
                }
                continue;
            }
            if !report.changed.contains(name) {
                report.added.push(name.clone());
            }
            let server = Arc::new(Server::new(name, server_config.clone(), self.shared_database));
            servers.insert(name.clone(), server.clone());
            tokio::spawn(supervise(self.clone(), server));
        }
        drop(servers);
        super::meta::offer(self);
        report
    }

    /// An operator's "reconnect": now, whatever the backoff or a crash loop said.
    pub fn reconnect(&self, name: &str) -> Result<ServerView> {
        let server = self.server(name)?;
        server.reconnect.notify_one();
        Ok(server.view())
    }

    /// Stops every server (the daemon is stopping): their supervisors end, and what is left
    /// of each stdio server's process group is killed now rather than when a task gets to it.
    pub fn stop_all(&self) {
        for server in self.servers.lock().expect("mcp lock").values() {
            server.stop.cancel();
            connect::kill_group(server.group.lock().expect("mcp group lock").take());
        }
    }

    fn allowed_hosts(&self) -> AllowedHosts {
        self.allowed_hosts.read().expect("mcp hosts lock").clone()
    }
}

/// The lease under which one daemon of a cluster runs the stdio server `server`.
pub(crate) fn lease(server: &str) -> String {
    format!("mcp:{server}")
}

/// The tool list's name for a server's tools.
pub(crate) fn provider(server: &str) -> String {
    format!("mcp:{server}")
}

/// Keeps one server connected until it is removed from the config. A stdio server on a
/// shared database runs on one daemon of the cluster: this daemon offers what the one running
/// it offers ([`follow`]) until it holds the server's lease, then runs it until the lease is
/// lost (its heartbeat failed for a lease's time) and follows again.
async fn supervise(mcp: Arc<Mcp>, server: Arc<Server>) {
    if !server.clustered {
        return keep_connected(&mcp, &server, &server.stop).await;
    }
    let lease = lease(&server.name);
    let cluster = &mcp.cluster;
    loop {
        let held = tokio::select! {
            held = cluster.hold(&lease) => held,
            () = follow(&mcp, &server) => false,
            () = server.stop.cancelled() => false,
        };
        if !held {
            break;
        }
        server.set(|v| v.runs_on = None);
        let run = server.stop.child_token();
        let connected = keep_connected(&mcp, &server, &run);
        tokio::pin!(connected);
        tokio::select! {
            () = &mut connected => break,
            () = cluster.lost(&lease) => {
                tracing::warn!(server = %server.name, "this daemon lost the MCP server's lease: it stops running it here");
                run.cancel();
                connected.await;
            }
        }
        if server.stop.is_cancelled() {
            break;
        }
    }
    cluster.give_up(&lease).await;
}

/// Offers what another daemon of the cluster, running the server, wrote that it offers, and
/// keeps it current (told by `NOTIFY`, and looking again every few seconds besides). Runs
/// until dropped.
async fn follow(mcp: &Arc<Mcp>, server: &Arc<Server>) {
    let cluster = &mcp.cluster;
    let mut shown: Option<String> = None;
    loop {
        let changed = cluster.offers_changed.notified();
        match cluster.offer_elsewhere(&server.name).await {
            Ok(Some((daemon, offer)))
                if shown.as_deref() != Some(offer.as_str()) || server.runs_on().as_deref() != Some(daemon.as_str()) =>
            {
                match serde_json::from_str::<Offer>(&offer) {
                    Ok(o) => {
                        server.set(|v| {
                            v.state = ServerState::Elsewhere;
                            v.reason = None;
                            v.runs_on = Some(daemon.clone());
                            v.server_info = o.server_info.clone();
                            v.offers_resources = o.offers_resources;
                            v.offers_prompts = o.offers_prompts;
                        });
                        super::tools::offer(mcp, server, &o.tools, o.left_out);
                        super::meta::offer(mcp);
                        shown = Some(offer);
                    }
                    Err(e) => {
                        tracing::warn!(server = %server.name, error = %e, "another daemon's MCP offer is unreadable")
                    }
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(server = %server.name, error = %e.message, "could not read the MCP server's offer")
            }
        }
        tokio::select! {
            () = changed => {}
            () = tokio::time::sleep(FOLLOW_AGAIN) => {}
        }
    }
}

/// How often a daemon following a stdio server run elsewhere looks at its offer without
/// being told.
const FOLLOW_AGAIN: Duration = Duration::from_secs(5);

/// What a stdio server run by one daemon of a cluster offers, written for the others.
#[derive(Serialize, serde::Deserialize)]
struct Offer {
    server_info: Option<String>,
    offers_resources: bool,
    offers_prompts: bool,
    tools: Vec<super::tools::OfferedTool>,
    left_out: Vec<String>,
}

/// Tells the other daemons of the cluster what the server, run here, offers.
async fn publish(cluster: &Cluster, server: &Server, tools: Vec<super::tools::OfferedTool>, left_out: Vec<String>) {
    let view = server.view();
    let offer = Offer {
        server_info: view.server_info,
        offers_resources: view.offers_resources,
        offers_prompts: view.offers_prompts,
        tools,
        left_out,
    };
    let published = match serde_json::to_string(&offer) {
        Ok(json) => cluster.publish_offer(&server.name, &json).await,
        Err(e) => Err(crate::error::Error::internal(e)),
    };
    if let Err(e) = published {
        tracing::warn!(server = %server.name, error = %e.message, "could not tell the cluster what the MCP server offers");
    }
}

/// Keeps one server connected here until `stop`.
async fn keep_connected(mcp: &Arc<Mcp>, server: &Arc<Server>, stop: &CancellationToken) {
    let mut failures: VecDeque<Instant> = VecDeque::new();
    let mut backoff = FIRST_BACKOFF;
    loop {
        server.set(|v| v.state = ServerState::Connecting);
        let listener = Listener { changed: Arc::new(Notify::new()) };
        let stderr_sink = Arc::downgrade(server);
        let allowed_hosts = mcp.allowed_hosts();
        let connecting = connect::connect(&server.config, &allowed_hosts, &mcp.home, listener.clone(), move |line| {
            if let Some(server) = stderr_sink.upgrade() {
                server.set(|v| push_kept(&mut v.stderr, line));
            }
        });
        let connected = tokio::select! {
            _ = stop.cancelled() => return,
            connected = tokio::time::timeout(HANDSHAKE_TIMEOUT, connecting) => connected.unwrap_or_else(|_| {
                Err(format!("no answer to the handshake within {} s", HANDSHAKE_TIMEOUT.as_secs()))
            }),
        };
        let why = match connected {
            Ok(connection) => {
                backoff = FIRST_BACKOFF;
                let outcome = serve(mcp, server, connection, &listener, stop).await;
                match outcome {
                    Ended::Stopped => return,
                    Ended::Reconnect => {
                        failures.clear();
                        continue;
                    }
                    Ended::Lost(why) => why,
                }
            }
            Err(why) => why,
        };
        server.note_error(&mcp.clock, why.clone());
        withdraw(mcp, server, &why);
        let now = Instant::now();
        failures.push_back(now);
        while failures.front().is_some_and(|t| now.duration_since(*t) > CRASH_WINDOW) {
            failures.pop_front();
        }
        let gave_up = failures.len() >= CRASH_LOOP;
        let wait = if gave_up {
            let reason = format!(
                "failed {CRASH_LOOP} times within {} s; not restarted until an operator reconnects it (last: {why})",
                CRASH_WINDOW.as_secs()
            );
            server.set(|v| {
                v.state = ServerState::GaveUp;
                v.reason = Some(reason);
            });
            Duration::MAX
        } else {
            server.set(|v| {
                v.state = ServerState::Disconnected;
                v.reason = Some(why.clone());
            });
            backoff
        };
        backoff = (backoff * 2).min(MAX_BACKOFF);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = server.reconnect.notified() => {
                failures.clear();
                backoff = FIRST_BACKOFF;
            }
            _ = sleep(wait) => {}
        }
    }
}

async fn sleep(wait: Duration) {
    if wait == Duration::MAX { std::future::pending().await } else { tokio::time::sleep(wait).await }
}

enum Ended {
    Stopped,
    Reconnect,
    Lost(String),
}

/// Offers the connected server's tools and keeps them current until the connection ends.
async fn serve(
    mcp: &Arc<Mcp>,
    server: &Arc<Server>,
    connection: Connection,
    listener: &Listener,
    stop: &CancellationToken,
) -> Ended {
    let peer = connection.client.peer().clone();
    let info = connection.client.peer_info();
    server.set(|v| {
        v.connections += 1;
        v.server_info = info.as_ref().and_then(|i| i.server_info.as_ref()).map(|s| format!("{} {}", s.name, s.version));
        v.offers_resources = info.as_ref().is_some_and(|i| i.capabilities.resources.is_some());
        v.offers_prompts = info.as_ref().is_some_and(|i| i.capabilities.prompts.is_some());
    });
    let number = server.connection.fetch_add(1, Ordering::SeqCst) + 1;
    *server.peer.write().expect("mcp peer lock") = Some(peer.clone());
    let token = connection.client.cancellation_token();
    let group = connection.group;
    *server.group.lock().expect("mcp group lock") = group;
    let mut closed = tokio::spawn(connection.client.waiting());
    let ended = 'connected: loop {
        let (tools, left_out) = match super::tools::refresh(mcp, server, &peer).await {
            Ok(offered) => offered,
            Err(why) => break Ended::Lost(why),
        };
        server.set(|v| {
            v.state = ServerState::Connected;
            v.reason = None;
        });
        super::meta::offer(mcp);
        if server.clustered {
            publish(&mcp.cluster, server, tools, left_out).await;
            mcp.cluster.ready_for_requests();
        }
        loop {
            tokio::select! {
                _ = stop.cancelled() => break 'connected Ended::Stopped,
                _ = server.reconnect.notified() => break 'connected Ended::Reconnect,
                _ = server.lost.notified() => {
                    if server.lost_connection.load(Ordering::SeqCst) == number {
                        break 'connected Ended::Lost("the server could not be reached during a call".into());
                    }
                }
                quit = &mut closed => break 'connected Ended::Lost(match quit {
                    Ok(reason) => format!("the connection closed ({reason:?})"),
                    Err(e) => format!("the connection's task ended: {e}"),
                }),
                _ = listener.changed.notified() => continue 'connected,
            }
        }
    };
    *server.peer.write().expect("mcp peer lock") = None;
    server.group.lock().expect("mcp group lock").take();
    connect::end(token, group);
    closed.abort();
    match &ended {
        Ended::Stopped => {
            withdraw(mcp, server, &format!("the MCP server `{}` was removed from [mcp] or changed", server.name))
        }
        Ended::Reconnect => withdraw(mcp, server, &format!("the MCP server `{}` is reconnecting", server.name)),
        Ended::Lost(_) => {}
    }
    ended
}

/// Takes the server's tools out of the tool list, remembered as gone with `why`.
fn withdraw(mcp: &Arc<Mcp>, server: &Server, why: &str) {
    *server.peer.write().expect("mcp peer lock") = None;
    server.set(|v| {
        v.tools.clear();
        v.offers_resources = false;
        v.offers_prompts = false;
    });
    let reason = format!("the MCP server `{}` is not connected: {why}", server.name);
    mcp.tools.provide(&provider(&server.name), Vec::new(), &reason);
    super::meta::offer(mcp);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(state: ServerState, reason: Option<&str>, runs_on: Option<&str>) -> ServerView {
        let starting = ServerView::connecting("files", "stdio", "mcp-files".into());
        ServerView { state, reason: reason.map(str::to_string), runs_on: runs_on.map(str::to_string), ..starting }
    }

    #[test]
    fn a_servers_state_in_words_says_why_or_where() {
        assert_eq!(view(ServerState::Connected, None, None).state_in_words(), "connected");
        let gave_up = view(ServerState::GaveUp, Some("5 failures in a row"), None);
        assert_eq!(gave_up.state_in_words(), "gave up: 5 failures in a row");
        let elsewhere = view(ServerState::Elsewhere, None, Some("daemon b"));
        assert_eq!(
            elsewhere.state_in_words(),
            "run by another daemon of the cluster (daemon b); calls are forwarded to it"
        );
    }
}
