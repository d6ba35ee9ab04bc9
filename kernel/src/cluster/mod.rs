//! Several daemons on one PostgreSQL database (issue 27), built as a Postgres job queue:
//! rows taken with `FOR UPDATE SKIP LOCKED`, leases renewed by heartbeats, `LISTEN`/`NOTIFY`
//! for wake-ups. No daemon is special and none talks to another except through the database.
//!
//! - Each run of a daemon registers a row in `daemons` with a new id and moves its heartbeat
//!   every third of `[cluster] lease_ms`. One that stopped, or whose heartbeat is older than
//!   the lease, is dead: the first live daemon to notice claims it (`reaped_at`) and takes
//!   over its work ([`take_over`]): its fires and turns are marked interrupted, its A2A tasks
//!   failed, its `agent_send` deliveries finished, its leases freed.
//! - A running agent is held by one daemon through the lease `agent:<id>`: that daemon runs
//!   all of its turns, so its sessions, browser tabs and processes live in one place. Daemons
//!   take free agents up to a fair share (running agents / live daemons) and give back idle
//!   ones beyond it. A turn asked of an agent another daemon holds is forwarded: written to
//!   `cluster_turns`, run there, its result written back ([`forward`]).
//! - Due schedules and task claims are rows taken with `FOR UPDATE SKIP LOCKED`: each once.
//! - What must run once per cluster runs on the holder of a lease: a polling channel
//!   (`channel:<name>`), a stdio MCP server (`mcp:<server>`, whose requests the other daemons
//!   send through `cluster_calls`: [`calls`]).
//!
//! On SQLite the home has one daemon (its lock file sees to that): it registers, takes over
//! the previous run's work at start, and never beats or forwards.
//!
//! # Design notes
//!
//! ## Cluster: several daemons on one PostgreSQL database
//!
//! The model is a Postgres job queue, not a consensus protocol: rows taken with
//! `FOR UPDATE SKIP LOCKED`, leases renewed by heartbeats, `LISTEN`/`NOTIFY` for wake-ups. No
//! daemon is special; daemons never talk to each other except through the database, so they
//! need no addresses, secrets or ports for one another. Any daemon answers any request; put
//! them behind any load balancer.
//!
//! - **Membership.** Each start registers a row in `daemons` with a new id (host, pid, listen
//!   address, version). Every third of `[cluster] lease_ms` (default 3,000) a loop on two
//!   connections of its own (`Db::side_pool`, so a daemon whose main pool is busy still beats)
//!   moves the heartbeat and renews the daemon's leases in one transaction, then reaps and
//!   balances. A daemon whose heartbeat is older than the lease, or that stopped cleanly
//!   (`stopped_at`, written with its leases freed by `Kernel::close`), is dead. Daemons' clocks
//!   must agree to well within the lease (NTP); the lease is theirs, not the database's.
//! - **Reaping.** `UPDATE daemons SET reaped_at … WHERE reaped_at IS NULL AND (dead) RETURNING
//!   id`: each dead daemon is claimed by exactly one reaper, which takes its work over off the
//!   loop (`cluster::take_over`): leases expired, forwarded turns it was running put back in the
//!   queue (the next run is a retry: it answers the message already stored instead of adding
//!   it twice) and those it was waiting for dropped, fires and turns interrupted, A2A tasks
//!   failed, `agent_send` deliveries resumed here. On SQLite the same code runs once at start
//!   with every other daemon row dead (the home's lock file means one daemon), and nothing
//!   beats: an idle SQLite daemon writes nothing.
//! - **Agents are leased.** `agent:<id>` names the daemon that runs all of the agent's turns,
//!   so its sessions, browser tabs and processes live in one place. Each round a daemon takes
//!   free or expired agent leases up to a fair share (running agents ÷ live daemons, rounded
//!   up), gives back those of agents no longer running, and gives back one idle agent (no turn
//!   running, no process running, no browser pages) beyond its share, which a daemon under its
//!   share then takes. A turn asked of an agent nobody holds takes the lease on the spot. A
//!   dead daemon's leases are expired, not deleted, so the daemon that takes one sees it came
//!   from a daemon that died: the agent's next turn there is told, beside the message (sent
//!   like auto-recall, not stored; noted `Moved` in the chat), that its browser tabs and
//!   processes stayed behind (`cluster::MOVED`). A clean stop deletes its leases: a restart or
//!   an upgrade is no news to the agents, as on SQLite.
//! - **Forwarding (decision: forwarded, not run under a per-session lock).** `turn::run` asks
//!   `Cluster::owner_elsewhere` (a set lookup for agents this daemon holds, else one lease read).
//!   When another daemon holds the agent, the request (a `ForwardedTurn`: everything in a
//!   `TurnRequest` but the cancel token; cancelling that token marks the row `cancelled` and
//!   notifies `cancel:<id>`, and the runner cancels the turn's own token) goes into `cluster_turns` and a `NOTIFY kennel_cluster
//!   'turn:<agent>'`; the holder's serve loop takes the agent's queued turns with
//!   `SKIP LOCKED`, runs each as its own (`turn::run_here`), writes the result (`{"ok":
//!   TurnResult}` or `{"error": Error}`) and notifies `done:<id>`; the asker takes the row and
//!   answers as if the turn had run locally. Both sides also look every second, so a missed
//!   notification costs a second, not the turn. When the holder dies with requests queued, they
//!   stay in the table and run on whoever takes the lease: a message sent during a failover
//!   waits for the lease to run out and is then answered, not lost. Every front, schedule,
//!   trigger, channel, `agent_send` and A2A task goes through `turn::run`, so all of them
//!   forward. Why not a per-session lock on any daemon: the agent's processes and browser tabs
//!   would then be spread over daemons, and its turns in different sessions would each need the
//!   same cross-daemon coordination anyway.
//! - **Schedules fire once.** On PostgreSQL the runner reads due schedules `FOR UPDATE SKIP
//!   LOCKED` in the transaction that writes their fires (the guard on `next_fire` stays), so
//!   daemons waking at the same instant each take different schedules and none waits for
//!   another; a batch of up to 500 fires is one statement (a data-modifying CTE). A fire row
//!   names its daemon, and the daemon's death leaves it `interrupted`. A burst (batches that
//!   come back full) is written down whole before any of its turns start, on both back ends
//!   (up to 20,000 fires held back): otherwise the turns of the first batches take the cores
//!   the writing of the rest needs, and the last fires of the burst come late.
//!   Catch-up after a cluster-wide stop is the runner's as before: once per schedule.
//! - **Task board.** Claims were `SKIP LOCKED` with a status re-check already (issue 26). The
//!   sweeper runs on every daemon: it is one `UPDATE … WHERE status = 'claimed' AND claimed_at
//!   < cutoff`, and PostgreSQL re-checks that condition on a row another sweeper changed
//!   meanwhile, so a claim is taken back (and its retry counted) once.
//! - **Events and caches.** Agent types, agents, grants and tokens were already reloaded on
//!   `NOTIFY kennel_cached`, and dashboard sign-ins are too since issue 43 (migration 0038's
//!   trigger on `operator_sessions`; reading them never writes, so a reload tells no one): a
//!   sign-in made on one daemon works on the others, and a sign-out ends its streams on all;
//!   the live pages' topics came by `kennel_changes` (issue 26). Turn
//!   events (`GET /api/agents/{id}/events`, the chat's live view) are relayed: while another
//!   daemon is running (neither stopped nor taken for dead: a late heartbeat does not stop the
//!   relay), each event this daemon's turns emit is sent as `NOTIFY kennel_events`
//!   with the sender's id, and every other daemon puts it on its own bus (`Bus::emit_relayed`,
//!   never relayed again). An event over a notification's 8,000 bytes (a long reply, a big tool
//!   result) crosses in parts, all sent in one transaction and put back together by each
//!   listener (`cluster/relay.rs`); past 4 MiB it is not relayed and followers elsewhere see the
//!   stored result.
//! - **Once per cluster.** A polling channel (Telegram `getUpdates`, the Discord gateway) runs
//!   under the lease `channel:<name>` (`Cluster::hold`, `Cluster::lost`): one daemon polls, the
//!   others wait a lease-third at a time and take over when it dies or stops; a daemon that
//!   loses the lease stops polling. Webhook channels need nothing: any daemon verifies and
//!   stores what arrives.
//! - **A stdio MCP server runs once per cluster** (`mcp/servers.rs` `supervise`, `cluster/calls.rs`).
//!   On a shared database each configured stdio server is run by the holder of `mcp:<server>`;
//!   every other daemon that configures it *follows*: it reads what the holder wrote to
//!   `mcp_offers` (handshake, tools with their schemas, what was left out; rewritten on every
//!   tool-list change, `NOTIFY kennel_cluster 'offer:<server>'`, looked at again every 5 s),
//!   offers the same `mcp__SERVER__*` tools, and shows the server as `elsewhere` with
//!   `runs_on` (the MCP page: "run by another daemon of the cluster"). Every request — a tool
//!   call, `mcp_resources`, `mcp_prompts` — goes through `Server::ask` (`mcp/request.rs`): over
//!   this daemon's connection if it runs the server, else written to `cluster_calls` with
//!   `NOTIFY 'call:mcp:<server>'`, answered by the holder once its server is connected, the
//!   result written back (`done:<id>`). The grant, argument validation against the server's
//!   schema and the audit happen where the call was asked. Unlike a forwarded turn, a request is
//!   never run twice: one whose runner dies ends with `Unavailable` ("may or may not have taken
//!   effect"), because a tool call may already have had its effect; one still queued waits for
//!   the next holder (within the call's `timeout_secs` plus 15 s). The holder losing its lease
//!   stops its server and follows; a daemon that stops or drops the server from its config
//!   gives the lease up at once. Configure the same `[mcp]` on every daemon: the holder runs its
//!   own command line. HTTP servers are remote services already: every daemon connects to them.
//! - **`GET /api/cluster`, the Cluster page.** `Cluster::overview`: each daemon (alive, last
//!   heartbeat, host, pid, address, version) with its leases, live ones first, then those that
//!   stopped or died in the last hour.
//!
//! What is still per daemon, and said so: unanswered channel messages are resumed at start
//! by each daemon (a message stored by one daemon just before another starts can be answered
//! twice).

mod calls;
pub(crate) mod config;
mod forward;
mod relay;
mod store;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use serde::Serialize;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;
use uuid::Uuid;

pub(crate) use calls::{AgentRequest, ask_holder};
pub use config::ClusterConfig;
pub(crate) use forward::run_elsewhere;

use crate::Kernel;
use crate::a2a::A2aTasks;
use crate::browser::Browsers;
use crate::db::{self, Db};
use crate::error::Result;
use crate::process::Processes;
use crate::schedule::Schedules;
use crate::workflow::Workflows;

/// Rows written before daemons had ids (`daemon_id IS NULL`) are taken over with the first
/// dead daemon, or under this name when there is none.
const BEFORE_CLUSTERS: &str = "before-clusters";

/// Stopped and reaped daemons stay on the cluster page this long.
const SHOWN_AFTER_DEATH: chrono::Duration = chrono::Duration::hours(1);

/// A daemon of the cluster, as `GET /api/cluster` shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Daemon {
    /// A new id for every start.
    pub id: String,
    pub host: String,
    pub pid: i64,
    /// The address its API serves on.
    pub listen: String,
    pub version: String,
    pub started_at: String,
    pub heartbeat_at: String,
    /// When it stopped cleanly.
    pub stopped_at: Option<String>,
    /// When a live daemon took its work over.
    pub reaped_at: Option<String>,
    /// It beat within the lease and has not stopped.
    pub alive: bool,
    /// Where it stands, named from the above.
    pub state: DaemonState,
    /// The leases it holds.
    pub leases: Vec<Lease>,
}

/// Where a daemon stands in the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DaemonState {
    /// Beats within its lease.
    Alive,
    /// The only daemon of a home that cannot be shared (SQLite): it keeps no heartbeat.
    AloneAlive,
    /// Stopped cleanly (`stopped_at`).
    Stopped,
    /// Stopped beating, and a live daemon took its work over (`reaped_at`).
    Died,
    /// Stopped beating; nobody has taken its work over yet.
    Silent,
}

impl Daemon {
    /// Names where the daemon stands from its times and liveness.
    fn state_of(&self, shared: bool) -> DaemonState {
        match (&self.stopped_at, &self.reaped_at) {
            _ if self.alive && !shared => DaemonState::AloneAlive,
            _ if self.alive => DaemonState::Alive,
            (Some(_), _) => DaemonState::Stopped,
            (None, Some(_)) => DaemonState::Died,
            (None, None) => DaemonState::Silent,
        }
    }

    /// Whether it runs every agent of its home by itself (no leases kept).
    pub fn runs_everything(&self) -> bool {
        self.state == DaemonState::AloneAlive
    }
}

impl Lease {
    /// The agent this lease runs, for an `agent:<id>` lease.
    pub fn agent_id(&self) -> Option<&str> {
        self.name.strip_prefix("agent:")
    }
}

/// Something one daemon holds at a time: `agent:<id>`, `channel:<name>`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Lease {
    pub name: String,
    pub holder: String,
    pub acquired_at: String,
    pub expires_at: String,
}

/// The cluster as one daemon sees it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Overview {
    /// The daemon that answered.
    pub this_daemon: String,
    /// Whether the database can be shared (PostgreSQL); a SQLite home has one daemon.
    pub shared: bool,
    pub lease_ms: u64,
    /// Live daemons first, then those that stopped or died in the last hour.
    pub daemons: Vec<Daemon>,
}

pub struct Cluster {
    db: Db,
    /// Two connections of their own for the heartbeat loop, so a daemon whose main pool is
    /// busy (a burst of fires) still beats, and is not taken for dead.
    beat_db: Db,
    id: String,
    lease: Duration,
    /// The leases this daemon holds, as of its last heartbeat or acquisition.
    held: Mutex<HashSet<String>>,
    /// Forwarded turns and requests whose results this daemon waits for, by id.
    waiting: Mutex<HashMap<String, Arc<Notify>>>,
    /// Rung when a forwarded turn or request may wait for this daemon.
    work: Notify,
    /// The cancel tokens of the forwarded turns running here, by id.
    forwarded: Mutex<HashMap<String, CancellationToken>>,
    /// Rung when a daemon wrote what a stdio MCP server it runs offers (`mcp_offers`).
    pub(crate) offers_changed: Notify,
    /// Agents this daemon took from a daemon that died, whose next turn here is
    /// told that their browser tabs and processes stayed behind.
    moved: Mutex<HashSet<Uuid>>,
    /// Whether another daemon is running (not stopped, not taken for dead), as of the last
    /// round: only then are this daemon's turn events relayed.
    others_alive: AtomicBool,
    stopped: CancellationToken,
}

/// A result this daemon waits for from another daemon (a forwarded turn's or request's, an
/// `ask_user` answer), woken by `done:<id>`; the waiter is removed however the wait ends.
pub(crate) struct Waiting<'a> {
    cluster: &'a Cluster,
    id: String,
    pub(crate) woken: Arc<Notify>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.cluster.waiting.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
    }
}

/// What an agent's first turn on a new daemon is told, when the one that ran it died (killed,
/// crashed, cut off from the database past its lease): what lived only there is gone.
pub const MOVED: &str = "[Kennel: the daemon that ran you stopped, and another daemon runs you now. Your conversation is intact, but browser tabs you had open and processes you had started are gone; open or start them again if you still need them.]";

/// The lease naming an agent.
pub(crate) fn agent_lease(agent: Uuid) -> String {
    format!("agent:{agent}")
}

impl Cluster {
    pub(crate) fn new(db: Db, config: &ClusterConfig) -> Cluster {
        Cluster {
            beat_db: db.side_pool(2),
            db,
            id: Uuid::new_v4().to_string(),
            lease: Duration::from_millis(config.lease_ms),
            held: Mutex::default(),
            waiting: Mutex::default(),
            work: Notify::new(),
            forwarded: Mutex::default(),
            offers_changed: Notify::new(),
            moved: Mutex::default(),
            others_alive: AtomicBool::new(false),
            stopped: CancellationToken::new(),
        }
    }

    /// Whether another daemon is running (not stopped, not taken for dead), as of this
    /// daemon's last round: only then are its turn events relayed.
    pub fn sees_others(&self) -> bool {
        self.others_alive.load(Ordering::Relaxed)
    }

    /// This daemon's id (a new one every start); rows of work it starts carry it.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn lease_chrono(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.lease).unwrap_or(chrono::Duration::seconds(3))
    }

    /// Starts waiting for the result with `id` (before asking for it, so no `done:` is missed).
    pub(crate) fn wait_for(&self, id: &str) -> Waiting<'_> {
        let woken = Arc::new(Notify::new());
        self.waiting.lock().unwrap_or_else(|e| e.into_inner()).insert(id.to_string(), woken.clone());
        Waiting { cluster: self, id: id.to_string(), woken }
    }

    /// Wakes whoever waits for `id`: here at once, on the other daemons through `done:<id>`.
    pub(crate) async fn wake(&self, id: &str) -> Result<()> {
        if let Some(waiter) = self.waiting.lock().unwrap_or_else(|e| e.into_inner()).get(id) {
            waiter.notify_one();
            return Ok(());
        }
        if self.db.is_shared() {
            store::notify(&self.db, "kennel_cluster", &format!("done:{id}")).await?;
        }
        Ok(())
    }

    /// A forwarded turn starts running here: its cancel token, until
    /// [`Cluster::finished_forwarded`].
    fn running_forwarded(&self, id: &str) -> CancellationToken {
        let token = CancellationToken::new();
        self.forwarded.lock().unwrap_or_else(|e| e.into_inner()).insert(id.to_string(), token.clone());
        token
    }

    fn finished_forwarded(&self, id: &str) {
        self.forwarded.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
    }

    /// Its asker cancelled the forwarded turn `id`: stops it if it runs here.
    fn cancel_forwarded(&self, id: &str) {
        if let Some(token) = self.forwarded.lock().unwrap_or_else(|e| e.into_inner()).get(id) {
            token.cancel();
        }
    }

    /// Whether this daemon holds `name`, as of its last heartbeat.
    fn holds(&self, name: &str) -> bool {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).contains(name)
    }

    fn set_held(&self, name: &str, held: bool) {
        let mut set = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held {
            set.insert(name.to_string());
        } else {
            set.remove(name);
        }
    }

    /// The daemon holding `agent`'s lease now, when that is another one (never on SQLite).
    /// Unlike `owner_elsewhere`, takes nothing.
    pub(crate) async fn holder_elsewhere(&self, agent: Uuid) -> Result<Option<String>> {
        let name = agent_lease(agent);
        if !self.db.is_shared() || self.holds(&name) {
            return Ok(None);
        }
        let now = db::timestamp(Utc::now());
        let lease = store::lease(&self.db, &name).await?;
        Ok(lease.filter(|(holder, expires)| *holder != self.id && *expires >= now).map(|(holder, _)| holder))
    }

    /// The daemon holding `agent`'s lease when it is not this one; `None` when the turn runs
    /// here (always on SQLite). A free or expired lease is taken on the spot.
    pub(crate) async fn owner_elsewhere(&self, agent: Uuid) -> Result<Option<String>> {
        if !self.db.is_shared() {
            return Ok(None);
        }
        let name = agent_lease(agent);
        if self.holds(&name) {
            return Ok(None);
        }
        let now = Utc::now();
        let lease = store::lease(&self.db, &name).await?;
        if let Some((holder, expires)) = &lease
            && *holder != self.id
            && *expires >= db::timestamp(now)
        {
            return Ok(Some(holder.clone()));
        }
        if self.acquire(&name).await? {
            let before = lease.map(|(holder, _)| holder);
            self.note_moved(agent, before.as_deref());
            return Ok(None);
        }
        // Taken by another daemon between the read and the take.
        Ok(store::lease(&self.db, &name).await?.map(|(holder, _)| holder).filter(|h| *h != self.id))
    }

    /// Remembers that this daemon took `agent` from `before`, when that was another daemon
    /// (a lease left behind is one whose daemon stopped or died).
    fn note_moved(&self, agent: Uuid, before: Option<&str>) {
        if before.is_some_and(|b| b != self.id) {
            self.moved.lock().unwrap_or_else(|e| e.into_inner()).insert(agent);
        }
    }

    /// Whether `agent` came here from a daemon that stopped or died since its last turn here
    /// (once: the turn that asks is told).
    pub(crate) fn take_moved(&self, agent: Uuid) -> bool {
        self.moved.lock().unwrap_or_else(|e| e.into_inner()).remove(&agent)
    }

    /// Takes the lease `name` if it is free or expired; whether this daemon holds it.
    pub(crate) async fn acquire(&self, name: &str) -> Result<bool> {
        self.acquire_on(&self.db, name).await
    }

    async fn acquire_on(&self, db: &Db, name: &str) -> Result<bool> {
        let now = Utc::now();
        let expires = db::timestamp(now + self.lease_chrono());
        let held = store::acquire(db, name, &self.id, &db::timestamp(now), &expires).await?;
        self.set_held(name, held);
        Ok(held)
    }

    /// Gives the lease `name` up.
    async fn release(&self, name: &str) -> Result<()> {
        self.set_held(name, false);
        store::release(&self.beat_db, name, &self.id).await
    }

    /// Waits until this daemon holds the lease `name` (at once on SQLite), trying again every
    /// heartbeat; `false` when the daemon stops first. For what the cluster runs once (a
    /// channel's poller): its holder renews it while it lives.
    pub(crate) async fn hold(&self, name: &str) -> bool {
        if !self.db.is_shared() {
            return true;
        }
        loop {
            match self.acquire(name).await {
                Ok(true) => return true,
                Ok(false) => {}
                Err(e) => tracing::warn!(lease = name, error = %e.message, "could not ask for a lease"),
            }
            tokio::select! {
                () = tokio::time::sleep(self.lease / 3) => {}
                () = self.stopped.cancelled() => return false,
            }
        }
    }

    /// Resolves once this daemon no longer holds `name` (a heartbeat could not renew it in
    /// time, and another daemon may have taken it); never on SQLite.
    pub(crate) async fn lost(&self, name: &str) {
        if !self.db.is_shared() {
            return std::future::pending().await;
        }
        while self.holds(name) {
            tokio::time::sleep(self.lease / 3).await;
        }
    }

    /// Gives the lease `name` up if this daemon holds it (what it named stopped here), so
    /// another daemon may take it at once.
    pub(crate) async fn give_up(&self, name: &str) {
        // A daemon that stops frees all of its leases at once (`stop`).
        if self.db.is_shared()
            && !self.stopped.is_cancelled()
            && self.holds(name)
            && let Err(e) = self.release(name).await
        {
            tracing::warn!(lease = name, error = %e.message, "could not give a lease up; it runs out by itself");
        }
    }

    /// Says that what a held lease names became ready to answer requests (an MCP server
    /// connected): the ones waiting for it are taken now rather than at the next round.
    pub(crate) fn ready_for_requests(&self) {
        self.work.notify_one();
    }

    /// Writes what the stdio MCP server `server`, run here, offers, for the other daemons.
    pub(crate) async fn publish_offer(&self, server: &str, offer: &str) -> Result<()> {
        store::put_offer(&self.db, server, &self.id, offer, &db::now()).await
    }

    /// What the stdio MCP server `server` offers and the daemon running it, when that is
    /// another daemon.
    pub(crate) async fn offer_elsewhere(&self, server: &str) -> Result<Option<(String, String)>> {
        Ok(store::offer(&self.db, server).await?.filter(|(daemon, _)| *daemon != self.id))
    }

    /// The daemons and their leases.
    pub async fn overview(&self) -> Result<Overview> {
        let now = Utc::now();
        let since = db::timestamp(now - SHOWN_AFTER_DEATH);
        let beat_since = db::timestamp(now - self.lease_chrono());
        let mut daemons = store::daemons(&self.db, &since).await?;
        let mut leases = store::leases(&self.db).await?;
        for d in &mut daemons {
            d.alive = d.stopped_at.is_none()
                && d.reaped_at.is_none()
                && (!self.db.is_shared() && d.id == self.id || d.heartbeat_at >= beat_since);
            d.leases = leases.extract_if(.., |l| l.holder == d.id).collect();
            d.state = d.state_of(self.db.is_shared());
        }
        daemons.sort_by_key(|d| !d.alive);
        Ok(Overview {
            this_daemon: self.id.clone(),
            shared: self.db.is_shared(),
            lease_ms: self.lease.as_millis() as u64,
            daemons,
        })
    }

    /// Registers this daemon and starts its share of the cluster's work: at once, taking
    /// over the work of the daemons that died or stopped; then, on PostgreSQL, every third
    /// of the lease, its heartbeat, that again, a fair share of the agents, and the turns
    /// forwarded to the agents it holds. Only the daemon calls this.
    pub(crate) async fn start(kernel: &Kernel, listen: &str) -> Result<()> {
        let cluster = kernel.cluster();
        let at = db::now();
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let new = store::NewDaemon {
            id: &cluster.id,
            host: host.trim(),
            pid: std::process::id(),
            listen,
            version: env!("CARGO_PKG_VERSION"),
            at: &at,
        };
        store::register(&cluster.db, new).await?;
        if cluster.db.is_shared() {
            let weak = kernel.downgrade();
            cluster
                .db
                .listen("kennel_cluster", move |payload| {
                    let weak = weak.clone();
                    let payload = payload.map(str::to_string);
                    Box::pin(async move {
                        if let Some(kernel) = Kernel::upgrade(&weak) {
                            kernel.cluster().notified(payload.as_deref());
                        }
                    })
                })
                .await?;
            let weak = kernel.downgrade();
            let mut parts = relay::Parts::default();
            cluster
                .db
                .listen(relay::EVENTS_CHANNEL, move |payload| {
                    let weak = weak.clone();
                    if payload.is_none() {
                        parts.clear();
                    }
                    let whole = payload.and_then(|p| parts.accept(p));
                    let relayed = whole.and_then(|p| serde_json::from_str::<relay::Relayed>(&p).ok());
                    Box::pin(async move {
                        if let (Some(kernel), Some(relayed)) = (Kernel::upgrade(&weak), relayed)
                            && relayed.from != kernel.cluster().id
                        {
                            kernel.turns().emit_relayed(relayed.event);
                        }
                    })
                })
                .await?;
            if let Some(events) = kernel.turns().relay() {
                tokio::spawn(relay::relay_events(kernel.clone(), events));
            }
        }
        let kernel = kernel.clone();
        tokio::spawn(async move {
            let cluster = kernel.cluster();
            // On SQLite every other daemon row is a run before this one.
            let exclusive = !cluster.db.is_shared();
            if let Err(e) = reap(&kernel, exclusive, true).await {
                tracing::warn!(error = %e.message, "taking over the work of stopped daemons failed");
            }
            if exclusive {
                return;
            }
            tokio::spawn(forward::serve_forever(kernel.clone()));
            loop {
                cluster.beat(&kernel).await;
                tokio::select! {
                    () = tokio::time::sleep(cluster.lease / 3) => {}
                    () = cluster.stopped.cancelled() => return,
                }
            }
        });
        Ok(())
    }

    /// One round of the heartbeat loop: the heartbeat, reaping, a share of the agents. (The
    /// forwarded turns have a loop of their own, so a burst of them never delays a beat.)
    async fn beat(&self, kernel: &Kernel) {
        let now = Utc::now();
        match store::heartbeat(&self.beat_db, &self.id, &db::timestamp(now), &db::timestamp(now + self.lease_chrono()))
            .await
        {
            Ok(held) => *self.held.lock().unwrap_or_else(|e| e.into_inner()) = held.into_iter().collect(),
            Err(e) if self.beat_db.is_closed() => {
                tracing::debug!(error = %e.message, "heartbeat after the database closed");
                return;
            }
            Err(e) => {
                // Past the lease the other daemons take this one's agents; forwarding keeps
                // the turns on whoever holds them then.
                tracing::warn!(error = %e.message, "the cluster heartbeat failed");
                return;
            }
        }
        if let Err(e) = reap(kernel, false, false).await {
            tracing::warn!(error = %e.message, "taking over the work of dead daemons failed");
        }
        if let Err(e) = self.balance(kernel).await {
            tracing::warn!(error = %e.message, "taking a share of the agents failed");
        }
    }

    /// Takes free agents up to a fair share (running agents / live daemons), gives back the
    /// leases of agents no longer running, and one idle agent beyond the share per round (the
    /// daemons under their share take it).
    async fn balance(&self, kernel: &Kernel) -> Result<()> {
        let now = db::timestamp(Utc::now());
        let beat_since = db::timestamp(Utc::now() - self.lease_chrono());
        let live = store::live_count(&self.beat_db, &beat_since).await?.max(1) as usize;
        // Relaying goes on while another daemon is not known to be gone: one whose heartbeat
        // is merely late (a busy machine) still follows the turns it shows.
        let others = store::unended_count(&self.beat_db).await? > 1;
        self.others_alive.store(others, Ordering::Relaxed);
        let running: Vec<Uuid> = kernel.agents().list().iter().filter(|a| a.is_running()).map(|a| a.id).collect();
        let fair = running.len().div_ceil(live);
        let leases: HashMap<String, Lease> =
            store::leases(&self.beat_db).await?.into_iter().map(|l| (l.name.clone(), l)).collect();
        let running_names: HashSet<String> = running.iter().map(|a| agent_lease(*a)).collect();
        let mut mine = Vec::new();
        for lease in leases.values().filter(|l| l.holder == self.id && l.name.starts_with("agent:")) {
            if running_names.contains(&lease.name) {
                mine.push(lease.name.clone());
            } else {
                self.release(&lease.name).await?;
            }
        }
        for agent in &running {
            if mine.len() >= fair {
                break;
            }
            let name = agent_lease(*agent);
            let before = leases.get(&name);
            let free = before.is_none_or(|l| l.expires_at < now);
            if free && self.acquire_on(&self.beat_db, &name).await? {
                self.note_moved(*agent, before.map(|l| l.holder.as_str()));
                mine.push(name);
            }
        }
        if mine.len() > fair {
            // Only an agent with nothing here moves: no turn, no process, no browser pages.
            let idle = running.iter().find(|a| {
                mine.contains(&agent_lease(**a))
                    && kernel.turns().running(**a) == 0
                    && !kernel.service::<Processes>().list(**a).iter().any(|p| p.running)
                    && !kernel.services().shared::<Browsers>().is_some_and(|b| b.has_agent(**a))
            });
            if let Some(agent) = idle {
                self.release(&agent_lease(*agent)).await?;
            }
        }
        Ok(())
    }

    /// A `kennel_cluster` notification: a forwarded turn to run (`turn:<agent>`) or to cancel
    /// (`cancel:<id>`), a result ready (`done:<id>`); `None` when the listener reconnected and
    /// may have missed some.
    fn notified(&self, payload: Option<&str>) {
        match payload {
            Some(p) if p.starts_with("turn:") => {
                if self.holds(&format!("agent:{}", &p["turn:".len()..])) {
                    self.work.notify_one();
                }
            }
            Some(p) if p.starts_with("call:") => {
                if self.holds(&p["call:".len()..]) {
                    self.work.notify_one();
                }
            }
            Some(p) if p.starts_with("offer:") => self.offers_changed.notify_waiters(),
            Some(p) if p.starts_with("cancel:") => self.cancel_forwarded(&p["cancel:".len()..]),
            Some(p) if p.starts_with("done:") => {
                if let Some(waiter) = self.waiting.lock().unwrap_or_else(|e| e.into_inner()).get(&p["done:".len()..]) {
                    waiter.notify_one();
                }
            }
            Some(_) => {}
            None => {
                self.work.notify_one();
                self.offers_changed.notify_waiters();
                for waiter in self.waiting.lock().unwrap_or_else(|e| e.into_inner()).values() {
                    waiter.notify_one();
                }
            }
        }
    }

    /// Marks a clean stop and frees this daemon's leases, so the others take its agents at
    /// once instead of after the lease.
    pub(crate) async fn stop(&self) {
        self.stopped.cancel();
        if let Err(e) = store::stop(&self.beat_db, &self.id, &db::now()).await {
            tracing::warn!(error = %e.message, "could not record this daemon's stop in the cluster");
        }
        if self.db.is_shared() {
            self.beat_db.close().await;
        }
    }
}

/// Claims the daemons that stopped or died (on SQLite, `exclusive`: every other one) and
/// takes over their work. At start, rows from before daemons had ids too.
async fn reap(kernel: &Kernel, exclusive: bool, starting: bool) -> Result<()> {
    let cluster = kernel.cluster();
    let now = Utc::now();
    let beat_before = if exclusive { "9999".to_string() } else { db::timestamp(now - cluster.lease_chrono()) };
    let dead = store::claim_dead(&cluster.beat_db, &cluster.id, &db::timestamp(now), &beat_before).await?;
    if dead.is_empty() && starting {
        return take_over(kernel, BEFORE_CLUSTERS).await;
    }
    for daemon in dead {
        // Every clean restart claims the run before it: only work actually taken over is
        // worth an operator's attention ("took over a stopped daemon's work", below).
        tracing::debug!(daemon = %daemon, "taking over the work of a daemon that stopped or died");
        // Off the heartbeat loop: a dead daemon's turns and deliveries can take a while.
        let kernel = kernel.clone();
        tokio::spawn(async move {
            if let Err(e) = take_over(&kernel, &daemon).await {
                tracing::warn!(daemon = %daemon, error = %e.message, "taking over a dead daemon's work failed");
            }
        });
    }
    Ok(())
}

/// Takes over what `dead` left (and rows of no daemon, from before clusters): frees its
/// leases, requeues the forwarded turns it was running, marks its fires and turns
/// interrupted, fails its A2A tasks and workflow runs, and finishes its `agent_send`
/// deliveries here.
async fn take_over(kernel: &Kernel, dead: &str) -> Result<()> {
    store::release_dead(kernel.db(), dead, &calls::cut_off(), &db::now()).await?;
    let fires = kernel.service::<Schedules>().mark_interrupted(dead).await?;
    let turns = crate::turn::recovery::interrupt_turns_of(kernel, dead).await?;
    let tasks = kernel.service::<A2aTasks>().fail_unfinished(dead).await?;
    let runs = kernel.service::<Workflows>().fail_interrupted(dead).await?;
    let deliveries = kernel.service::<crate::agent::delivery::Deliveries>().take_over(dead).await?;
    if fires + turns + tasks + runs + deliveries > 0 {
        tracing::info!(
            daemon = dead,
            fires,
            turns,
            a2a_tasks = tasks,
            workflow_runs = runs,
            deliveries,
            "took over a stopped daemon's work"
        );
    }
    Ok(())
}

#[cfg(test)]
mod state_tests {
    use super::*;

    fn daemon(alive: bool, stopped: bool, reaped: bool) -> Daemon {
        let at = || Some("2026-12-05T00:00:00Z".to_string());
        Daemon {
            id: "d".into(),
            host: "h".into(),
            pid: 1,
            listen: "127.0.0.1:1".into(),
            version: "0".into(),
            started_at: "2026-12-04T00:00:00Z".into(),
            heartbeat_at: "2026-12-04T23:59:00Z".into(),
            stopped_at: stopped.then(at).flatten(),
            reaped_at: reaped.then(at).flatten(),
            alive,
            state: DaemonState::Silent,
            leases: Vec::new(),
        }
    }

    #[test]
    fn a_daemon_is_named_by_its_liveness_then_how_it_ended() {
        assert_eq!(daemon(true, false, false).state_of(false), DaemonState::AloneAlive);
        assert_eq!(daemon(true, false, false).state_of(true), DaemonState::Alive);
        assert_eq!(daemon(false, true, true).state_of(true), DaemonState::Stopped, "a clean stop wins");
        assert_eq!(daemon(false, false, true).state_of(true), DaemonState::Died);
        assert_eq!(daemon(false, false, false).state_of(true), DaemonState::Silent);
    }
}
