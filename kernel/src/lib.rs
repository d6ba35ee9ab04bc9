//! Kennel's kernel: the agent OS. It owns every service — agent types and agents, grants,
//! sessions, the tool registry and call pipeline, artifacts, the audit log — and knows
//! nothing of HTTP or HTML. Every front (REST, dashboard, CLI, the agent loop) is a thin
//! adapter over [`Kernel`].

pub mod a2a;
pub mod actions;
pub mod agent;
pub mod artifact;
pub mod ask;
pub mod auth;
pub mod browser;
pub mod canvas;
pub mod capability;
pub mod changes;
pub mod channel;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod db;
pub mod docker;
pub mod error;
pub mod event;
pub mod files;
pub mod knowledge;
pub mod llm;
pub mod location;
pub mod mcp;
pub mod media;
pub mod memory;
pub mod net;
pub mod notify;
pub mod page;
pub mod patch;
pub mod process;
pub mod retention;
pub mod schedule;
pub mod script;
pub mod session;
pub mod skills;
pub mod status;
pub mod system;
pub mod tasks;
pub mod text;
pub mod tool;
pub mod turn;
pub mod usage;
pub mod workflow;
pub mod workspace;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent::Agents;
use artifact::ArtifactStore;
use auth::Auth;
use config::{Config, ConfigError};
use session::Sessions;
use tool::audit::AuditLog;
use tool::{CallContext, Registry, Tools};
use turn::{TurnRequest, TurnResult, Turns};

pub use error::{Error, ErrorKind, Result};

/// The kernel handle. Cheap to clone; every clone is the same kernel.
#[derive(Clone)]
pub struct Kernel(Arc<Inner>);

struct Inner {
    home: PathBuf,
    config: Config,
    db: db::Db,
    cluster: cluster::Cluster,
    agents: Arc<Agents>,
    auth: Auth,
    sessions: Sessions,
    tools: Tools,
    artifacts: ArtifactStore,
    audit: AuditLog,
    actions: actions::Actions,
    providers: BTreeMap<String, llm::Provider>,
    turns: Turns,
    meter: usage::Meter,
    /// The time every service reads (tests move a manual one).
    clock: clock::Clock,
    workflows: workflow::Workflows,
    a2a: a2a::A2aTasks,
    tasks: tasks::TaskBoard,
    schedules: schedule::Schedules,
    workspaces: workspace::Workspaces,
    canvases: canvas::Canvases,
    media: media::Media,
    kv: memory::kv::KvStore,
    /// `None` when `[proactive_memory] enabled = false`.
    semantic: Option<memory::semantic::SemanticMemory>,
    knowledge: knowledge::Knowledge,
    skills: skills::Skills,
    channels: channel::Channels,
    inbox: notify::Inbox,
    locator: location::Locator,
    /// The MCP servers of `[mcp]` while the daemon runs (none in a CLI command).
    mcp: mcp::Mcp,
    /// `None` without a `[browser]` section.
    browsers: Option<Arc<browser::Browsers>>,
    processes: Arc<process::Processes>,
    /// When this kernel opened its home (RFC 3339), and the instant, for uptime.
    started_at: String,
    started: std::time::Instant,
}

/// Why the kernel could not start.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("config error: {0}")]
    Config(#[from] ConfigError),
    #[error("cannot prepare {path}: {source}")]
    Home { path: String, source: std::io::Error },
    #[error("cannot open the database {path}: {source}")]
    Database { path: String, source: sqlx::Error },
    #[error("{} (from {})", .message, config::DATABASE_URL_ENV)]
    DatabaseUrl { message: String },
    #[error("{0}")]
    Kernel(#[from] Error),
}

/// How often the kernel looks for commits made by another process (the CLI granting a tool
/// or revoking a token while the daemon runs).
const CHANGE_POLL: Duration = Duration::from_millis(200);

impl Kernel {
    /// Opens `$KENNEL_HOME`: creates it with a commented `config.toml` on first use, reads
    /// the config, opens the database (applying migrations) and loads every service.
    pub async fn open(home: &Path) -> Result<Kernel, OpenError> {
        prepare_home(home)?;
        let config = Config::load(&home.join("config.toml"))?;
        Kernel::open_with(home, config).await
    }

    /// Like [`Kernel::open`] with an already-loaded config.
    pub async fn open_with(home: &Path, config: Config) -> Result<Kernel, OpenError> {
        Kernel::open_with_clock(home, config, clock::Clock::System).await
    }

    /// Like [`Kernel::open_with`] on a given clock (tests move a manual one to fire schedules).
    pub async fn open_with_clock(home: &Path, config: Config, clock: clock::Clock) -> Result<Kernel, OpenError> {
        prepare_home(home)?;
        let db_path = home.join("kennel.db");
        let db = match config.database.postgres_url() {
            Some(url) => {
                let named = config::redacted_url(&url);
                config::check_database_url(&url).map_err(|message| OpenError::DatabaseUrl { message })?;
                db::open_postgres(&url).await.map_err(|source| OpenError::Database { path: named, source })?
            }
            None => db::open(&db_path)
                .await
                .map_err(|source| OpenError::Database { path: db_path.display().to_string(), source })?,
        };
        let providers = config
            .providers
            .iter()
            .map(|(name, p)| Ok((name.clone(), llm::Provider::new(name, p.clone())?)))
            .collect::<Result<_>>()?;
        let agents = Arc::new(Agents::load(db.clone(), config.providers.keys().cloned().collect()).await?);
        let semantic = memory::semantic::SemanticMemory::new(db.clone(), clock.clone(), &config)?;
        let cluster = cluster::Cluster::new(db.clone(), &config.cluster);
        let kernel = Kernel(Arc::new(Inner {
            semantic,
            started_at: db::timestamp(clock.now()),
            providers,
            turns: Turns::load(&db).await?,
            meter: usage::Meter::start(db.clone(), &config),
            workflows: workflow::Workflows::new(db.clone(), cluster.id().to_string()),
            a2a: a2a::A2aTasks::new(db.clone()),
            tasks: tasks::TaskBoard::new(db.clone(), agents.clone()),
            schedules: schedule::Schedules::new(
                db.clone(),
                clock.clone(),
                config.schedules.fire_history,
                agents.clone(),
                cluster.id().to_string(),
            ),
            cluster,
            skills: skills::Skills::new(home.join("skills"), db.clone(), clock.clone()),
            channels: channel::Channels::new(&config.channels, db.clone(), clock.clone()),
            inbox: notify::Inbox::new(db.clone(), clock.clone()),
            locator: location::Locator::default(),
            mcp: mcp::Mcp::default(),
            clock,
            workspaces: workspace::Workspaces::new(home.join("workspaces"), config.workspace.clone()),
            canvases: canvas::Canvases::new(db.clone(), config.canvas.clone()),
            media: media::Media::new(db.clone(), &config.media),
            kv: memory::kv::KvStore::new(db.clone()),
            knowledge: knowledge::Knowledge::new(db.clone(), knowledge::Limits::default()),
            browsers: config.browser.clone().map(|b| Arc::new(browser::Browsers::new(b, home.to_path_buf()))),
            processes: Arc::new(process::Processes::new(db.clone(), &config, home)),
            started: std::time::Instant::now(),
            home: home.to_path_buf(),
            tools: Tools::new(Registry::builtin(&config)),
            config,
            auth: Auth::load(db.clone()).await?,
            sessions: Sessions::new(db.clone()),
            artifacts: ArtifactStore::new(home.join("artifacts"), db.clone()),
            audit: AuditLog::start(db.clone(), agents.clone()),
            actions: actions::Actions::new(db.clone()),
            agents,
            db,
        }));
        for agent in kernel.0.agents.list() {
            kernel.0.schedules.seed_manifest(&agent).await?;
        }
        let weak = Arc::downgrade(&kernel.0);
        db::watch_changes(&kernel.0.db, &db_path, CHANGE_POLL, move || {
            let weak = weak.clone();
            Box::pin(async move {
                if let Some(inner) = weak.upgrade() {
                    Kernel(inner).reload().await;
                }
            })
        })
        .await?;
        Ok(kernel)
    }

    /// Starts the daemon's own work: its place in the cluster (taking over the work of a
    /// previous run or a dead daemon), the task board's sweeper, the scheduler, processes,
    /// channels, script and MCP tools. `listen` is the address its API serves on. Only the
    /// daemon calls this — a CLI command opening the same home must not fire schedules or
    /// mark the daemon's running work interrupted.
    pub async fn start_background(&self, listen: &str) -> Result<()> {
        cluster::Cluster::start(self, listen).await?;
        tasks::start_sweeper(self);
        schedule::runner::start(self);
        agent::start_ephemeral_sweeper(self);
        retention::start(self);
        process::start(self);
        channel::Channels::start(self);
        script::start(self);
        mcp::Mcp::start(self, &self.0.config.mcp);
        Ok(())
    }

    /// This daemon's place among the daemons sharing its database.
    pub fn cluster(&self) -> &cluster::Cluster {
        &self.0.cluster
    }

    /// Re-reads the state another process may have changed.
    pub async fn reload(&self) {
        if let Err(e) = self.0.agents.reload().await {
            tracing::warn!(error = %e, "reloading agents failed");
        }
        // An agent stopped by another process (another daemon of the cluster): its turns
        // running here stop too, as `stop_agent` stops them in the daemon it ran in.
        for agent in self.0.turns.agents_running() {
            if !self.0.agents.get_by_id(agent).is_some_and(|a| a.is_running()) {
                self.0.turns.cancel_agent(agent);
            }
        }
        if let Err(e) = self.0.auth.reload().await {
            tracing::warn!(error = %e, "reloading tokens failed");
        }
        if let Err(e) = self.0.auth.reload_sessions().await {
            tracing::warn!(error = %e, "reloading dashboard sign-ins failed");
        }
        // A commit of another process (the CLI granting a tool) raises no hook here: the
        // live pages hear of it from this reload instead.
        self.0.db.changes().send(changes::Topic::Agents);
    }

    pub fn home(&self) -> &Path {
        &self.0.home
    }
    pub fn config(&self) -> &Config {
        &self.0.config
    }
    pub fn agents(&self) -> &Agents {
        &self.0.agents
    }
    pub fn auth(&self) -> &Auth {
        &self.0.auth
    }
    pub fn sessions(&self) -> &Sessions {
        &self.0.sessions
    }
    /// The tool list as it is now (built-in tools and what dynamic providers offer).
    pub fn tools(&self) -> Arc<Registry> {
        self.0.tools.snapshot()
    }
    /// The live tool list, for dynamic providers that add and remove tools.
    pub fn tool_list(&self) -> &Tools {
        &self.0.tools
    }
    pub fn artifacts(&self) -> &ArtifactStore {
        &self.0.artifacts
    }
    /// Which kinds of state (tasks, schedules, agents) each commit changed, for live pages.
    pub fn changes(&self) -> &changes::Changes {
        self.0.db.changes()
    }

    /// The operator-action log (what people and API tokens changed).
    pub fn actions(&self) -> &actions::Actions {
        &self.0.actions
    }

    pub fn audit(&self) -> &AuditLog {
        &self.0.audit
    }
    /// The browser service, when `[browser]` is configured.
    pub fn browsers(&self) -> Option<&Arc<browser::Browsers>> {
        self.0.browsers.as_ref()
    }

    /// The tabs `agent` has open in the browser (none when `[browser]` is not configured).
    pub fn browser_tabs(&self, agent: agent::AgentId) -> Vec<browser::TabView> {
        self.0.browsers.as_ref().map(|b| b.tabs(agent)).unwrap_or_default()
    }

    /// Agents' subprocesses.
    pub fn processes(&self) -> &Arc<process::Processes> {
        &self.0.processes
    }

    /// The media providers and ffmpeg, for the media tools.
    pub fn media(&self) -> &media::Media {
        &self.0.media
    }

    /// Each agent's folder of files.
    pub fn workspaces(&self) -> &workspace::Workspaces {
        &self.0.workspaces
    }
    pub fn canvases(&self) -> &canvas::Canvases {
        &self.0.canvases
    }
    /// Every agent's private knowledge graph.
    pub fn knowledge(&self) -> &knowledge::Knowledge {
        &self.0.knowledge
    }
    pub fn skills(&self) -> &skills::Skills {
        &self.0.skills
    }

    pub fn channels(&self) -> &channel::Channels {
        &self.0.channels
    }

    pub fn inbox(&self) -> &notify::Inbox {
        &self.0.inbox
    }

    pub fn locator(&self) -> &location::Locator {
        &self.0.locator
    }

    /// The MCP servers of `[mcp]`.
    pub fn mcp(&self) -> &mcp::Mcp {
        &self.0.mcp
    }

    /// Re-reads `[mcp]` from `config.toml` and applies it (`kennel reload`, SIGHUP). The rest
    /// of the config is read at start only.
    pub async fn reload_config(&self) -> Result<mcp::McpReload> {
        let path = self.0.home.join("config.toml");
        let config = tokio::task::spawn_blocking(move || config::Config::load(&path))
            .await
            .map_err(Error::internal)?
            .map_err(|e| Error::invalid(format!("config.toml was not reloaded: {e}")))?;
        Ok(self.0.mcp.apply(self, &config.mcp))
    }

    /// The key/value memory of every agent.
    pub fn kv(&self) -> &memory::kv::KvStore {
        &self.0.kv
    }

    /// The semantic memory, or `Unavailable` when `[proactive_memory] enabled = false`.
    pub fn semantic(&self) -> Result<&memory::semantic::SemanticMemory> {
        self.0.semantic.as_ref().ok_or_else(|| {
            Error::unavailable("the semantic store is switched off: [proactive_memory] enabled = false in config.toml")
        })
    }

    pub(crate) fn db(&self) -> &db::Db {
        &self.0.db
    }
    pub fn tasks(&self) -> &tasks::TaskBoard {
        &self.0.tasks
    }
    pub fn schedules(&self) -> &schedule::Schedules {
        &self.0.schedules
    }
    pub(crate) fn downgrade(&self) -> std::sync::Weak<Inner> {
        Arc::downgrade(&self.0)
    }
    pub(crate) fn upgrade(weak: &std::sync::Weak<Inner>) -> Option<Kernel> {
        weak.upgrade().map(Kernel)
    }

    /// Posts a task and, if `[task_board] wake_assignee` is on and it is for a running agent,
    /// starts a turn that tells that agent a task waits.
    /// `new.assignee` may be an agent's name or id.
    pub async fn post_task(&self, new: tasks::NewTask, posted_by: &str) -> Result<tasks::Task> {
        let task = self.0.tasks.post(new, posted_by).await?;
        self.wake_assignee(&task, "posted for you");
        Ok(task)
    }

    /// Gives a task to another agent (a name or id; `None` or empty: anyone) and puts it back
    /// to pending; the new assignee, if running, is woken as for a new task.
    pub async fn reassign_task(&self, id: &str, assignee: Option<&str>) -> Result<tasks::Task> {
        let task = self.0.tasks.reassign(id, assignee).await?;
        self.wake_assignee(&task, "given to you");
        Ok(task)
    }

    /// If `[task_board] wake_assignee` is on and `task` is for a running agent, starts a turn
    /// telling that agent the task waits (`how`: "posted for you", "given to you"), in a
    /// session labelled with the task's whole id (its wake-ups, on the task's page).
    fn wake_assignee(&self, task: &tasks::Task, how: &str) {
        if !self.0.config.task_board.wake_assignee {
            return;
        }
        let Some(agent) =
            task.assigned_to.as_deref().and_then(|a| self.0.agents.get(a).ok()).filter(|a| a.is_running())
        else {
            return;
        };
        let (kernel, title, id) = (self.clone(), task.title.clone(), task.id);
        let message = format!("A task was {how}: \"{title}\" (task {id}). Claim it with task_claim when you can.");
        tokio::spawn(async move {
            let label = session::Origin::Task(id.to_string()).label();
            let req = TurnRequest { new_session_label: label, ..TurnRequest::headless(message, tool::Caller::Agent) };
            if let Err(e) = turn::run(&kernel, agent.clone(), req).await {
                tracing::info!(agent = %agent.name, error = %e.message, "could not wake the assignee of a task");
            }
        });
    }

    pub(crate) fn a2a(&self) -> &a2a::A2aTasks {
        &self.0.a2a
    }
    pub fn workflows(&self) -> &workflow::Workflows {
        &self.0.workflows
    }
    pub fn turns(&self) -> &Turns {
        &self.0.turns
    }
    pub fn providers(&self) -> &BTreeMap<String, llm::Provider> {
        &self.0.providers
    }

    /// The provider an agent's turns use: the one its type names, or the only one configured.
    pub fn provider_for(&self, agent: &agent::Agent) -> Result<&llm::Provider> {
        let configured = || self.0.providers.keys().cloned().collect::<Vec<_>>().join(", ");
        match agent.manifest.provider.as_deref() {
            Some(name) => self.0.providers.get(name).ok_or_else(|| {
                Error::unavailable(format!(
                    "agent `{}` uses provider `{name}`, which config.toml does not define: add [providers.{name}] (configured: {})",
                    agent.name,
                    if self.0.providers.is_empty() { "none".into() } else { configured() }
                ))
            }),
            None if self.0.providers.len() == 1 => Ok(self.0.providers.values().next().expect("one provider")),
            None if self.0.providers.is_empty() => Err(Error::unavailable(format!(
                "no LLM provider is configured, so agent `{}` cannot think: add a [providers.NAME] section to config.toml",
                agent.name
            ))),
            None => Err(Error::unavailable(format!(
                "agent `{}` names no provider and several are configured ({}): set `provider` in its agent type",
                agent.name,
                configured()
            ))),
        }
    }

    /// The last 24 hours, hour by hour (UTC, oldest first): turns started and tool calls made,
    /// every hour present (zeros too).
    pub async fn activity(&self) -> Result<Vec<(String, u64, u64)>> {
        let now = self.0.clock.now();
        let since = db::timestamp(now - chrono::Duration::hours(23));
        let since = &since[..13];
        let turns: std::collections::HashMap<String, u64> =
            turn::turns_per_hour(self, since).await?.into_iter().collect();
        let calls: std::collections::HashMap<String, u64> =
            self.0.audit.calls_per_hour(since).await?.into_iter().collect();
        Ok((0..24)
            .rev()
            .map(|back| {
                let hour = db::timestamp(now - chrono::Duration::hours(back))[..13].to_string();
                let (t, c) = (turns.get(&hour).copied().unwrap_or(0), calls.get(&hour).copied().unwrap_or(0));
                (hour, t, c)
            })
            .collect())
    }

    /// When this kernel opened its home (RFC 3339): the daemon's start.
    pub fn started_at(&self) -> &str {
        &self.0.started_at
    }

    /// The kernel's time.
    pub fn clock(&self) -> &clock::Clock {
        &self.0.clock
    }

    /// Lifts an agent's budget pause: it may start turns again, its budgets counting from now.
    pub async fn lift_pause(&self, agent: &str) -> Result<Arc<agent::Agent>> {
        self.0.agents.lift_pause(agent, &db::timestamp(self.0.clock.now())).await
    }

    /// The usage meter: every model call's tokens and cost.
    pub fn usage(&self) -> &usage::Meter {
        &self.0.meter
    }

    /// The provider config.toml names `name`.
    pub fn provider_named(&self, name: &str) -> Option<&llm::Provider> {
        self.0.providers.get(name)
    }

    /// Runs one turn of `agent` (by id, or running agent by name).
    /// The turn runs on a task of its own: a client that hangs up (a closed browser tab, a
    /// timed-out script) never cancels it; stopping the agent does.
    pub async fn send_message(&self, agent: &str, req: TurnRequest) -> Result<TurnResult> {
        let agent = self.0.agents.get(agent)?;
        let kernel = self.clone();
        tokio::spawn(async move { turn::run(&kernel, agent, req).await })
            .await
            .map_err(|e| Error::internal(format_args!("a turn's task ended abnormally: {e}")))?
    }

    /// Spawns an agent and puts its manifest's `[[cron]]` jobs in the schedule store. The
    /// only way any front spawns an agent.
    pub async fn spawn_agent(&self, req: agent::SpawnRequest) -> Result<Arc<agent::Agent>> {
        let agent = self.0.agents.spawn(req).await?;
        self.0.schedules.seed_manifest(&agent).await?;
        Ok(agent)
    }

    /// Stops an agent, cancels its running turns and pauses its schedules (kept, so an
    /// operator can resume them).
    pub async fn stop_agent(&self, agent: &str) -> Result<Arc<agent::Agent>> {
        let stopped = self.0.agents.stop(agent).await?;
        self.0.turns.cancel_agent(stopped.id);
        self.0.schedules.pause_agent(stopped.id).await?;
        if let Some(browsers) = &self.0.browsers {
            browsers.close_agent(stopped.id).await;
        }
        self.0.processes.close_agent(stopped.id);
        Ok(stopped)
    }

    /// Starts a stopped agent again. Its schedules stay paused (stopping paused them, and
    /// which ones an operator had paused before is not known): resume them on purpose.
    pub async fn start_agent(&self, agent: &str) -> Result<Arc<agent::Agent>> {
        self.0.agents.start(agent).await
    }

    /// Stops an agent if it runs, then removes it: no longer listed or found, its sessions,
    /// schedules (paused) and audit rows kept.
    pub async fn remove_agent(&self, agent: &str) -> Result<Arc<agent::Agent>> {
        let agent = self.0.agents.get(agent)?;
        if agent.is_running() {
            self.stop_agent(&agent.id.to_string()).await?;
        }
        let removed = self.0.agents.remove(&agent.id.to_string()).await?;
        self.0.processes.forget_agent(removed.id);
        Ok(removed)
    }

    /// Runs a tool call through the pipeline. The only way any front runs a tool.
    pub async fn call_tool(
        &self,
        ctx: CallContext,
        name: &str,
        args: serde_json::Value,
    ) -> Result<tool::pipeline::CallOutput> {
        tool::pipeline::call(ctx, name, args).await
    }

    /// Writes out queued audit entries and closes the database.
    pub async fn close(&self) {
        self.0.schedules.stop();
        self.0.cluster.stop().await;
        self.0.channels.close();
        self.0.mcp.stop_all();
        if let Some(browsers) = &self.0.browsers {
            browsers.shut_down().await;
        }
        self.0.processes.shut_down().await;
        self.0.audit.flush().await;
        self.0.db.close().await;
    }
}

fn prepare_home(home: &Path) -> Result<(), OpenError> {
    let io = |e: std::io::Error| OpenError::Home { path: home.display().to_string(), source: e };
    std::fs::create_dir_all(home.join("artifacts")).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(home, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    let config = home.join("config.toml");
    if !config.exists() {
        std::fs::write(&config, config::default_text()).map_err(io)?;
    }
    Ok(())
}
