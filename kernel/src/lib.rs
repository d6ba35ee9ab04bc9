//! Kennel's kernel: the agent OS. It owns every service — agent types and agents, grants,
//! sessions, the tool registry and call pipeline, artifacts, the audit log — and knows
//! nothing of HTTP or HTML. Every front (REST, dashboard, CLI, the agent loop) is a thin
//! adapter over [`Kernel`].

pub mod a2a;
pub mod actions;
pub mod agent;
pub mod approval;
pub mod artifact;
pub mod ask;
pub mod auth;
pub mod backup;
pub mod browser;
pub mod canvas;
pub mod capability;
pub mod changes;
pub mod channel;
pub mod chat_api;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod db;
pub mod docker;
pub mod error;
pub mod event;
pub mod family;
pub mod files;
pub mod knowledge;
pub mod llm;
pub mod location;
pub mod mcp;
pub mod media;
pub mod memory;
pub mod metrics;
pub mod net;
pub mod notify;
pub mod page;
pub mod patch;
pub mod process;
pub mod retention;
pub mod runtime;
pub mod schedule;
pub mod script;
pub mod session;
pub mod skills;
pub mod startup;
pub mod status;
pub mod system;
pub mod tasks;
pub mod text;
pub mod tool;
pub mod turn;
pub mod usage;
pub mod workflow;
pub mod workspace;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent::Agents;
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
    config: Arc<Config>,
    db: db::Db,
    cluster: Arc<cluster::Cluster>,
    agents: Arc<Agents>,
    auth: Auth,
    sessions: Arc<Sessions>,
    tools: Arc<Tools>,
    audit: Arc<AuditLog>,
    actions: actions::Actions,
    providers: llm::Providers,
    /// One edit of config.toml at a time ([`llm::setup`]).
    config_edits: tokio::sync::Mutex<()>,
    turns: Arc<Turns>,
    /// The time every service reads (tests move a manual one).
    clock: clock::Clock,
    /// The core's services and every family's, by type.
    services: family::Services,
    /// When this kernel opened its home (RFC 3339), and the instant, for uptime.
    started_at: String,
    started: std::time::Instant,
    /// How long opening took, phase by phase (the last phases are marked once the kernel
    /// stands).
    opening: std::sync::Mutex<startup::Phases>,
}

/// Every family, in the order they open and their tools are listed (see [`family`]).
const FAMILIES: &[family::Family] = &[
    system::FAMILY,
    artifact::FAMILY,
    tool::meta::FAMILY,
    memory::FAMILY,
    agent::FAMILY,
    event::FAMILY,
    workflow::FAMILY,
    a2a::FAMILY,
    tasks::FAMILY,
    schedule::FAMILY,
    canvas::FAMILY,
    media::FAMILY,
    knowledge::FAMILY,
    browser::FAMILY,
    process::FAMILY,
    docker::FAMILY,
    workspace::FAMILY,
    files::FAMILY,
    skills::FAMILY,
    channel::FAMILY,
    notify::FAMILY,
    location::FAMILY,
    ask::FAMILY,
    approval::FAMILY,
    mcp::FAMILY,
];

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
        Kernel::open_timing(home, startup::Phases::begin()).await
    }

    /// Like [`Kernel::open`], adding its phases to `phases` ([`Kernel::opening`]).
    pub async fn open_timing(home: &Path, mut phases: startup::Phases) -> Result<Kernel, OpenError> {
        prepare_home(home)?;
        let config = Config::load(&home.join("config.toml"))?;
        phases.mark("config");
        Kernel::open_timed(home, config, clock::Clock::System, phases).await
    }

    /// Like [`Kernel::open`] with an already-loaded config.
    pub async fn open_with(home: &Path, config: Config) -> Result<Kernel, OpenError> {
        Kernel::open_with_clock(home, config, clock::Clock::System).await
    }

    /// Like [`Kernel::open_with`] on a given clock (tests move a manual one to fire schedules).
    pub async fn open_with_clock(home: &Path, config: Config, clock: clock::Clock) -> Result<Kernel, OpenError> {
        Kernel::open_timed(home, config, clock, startup::Phases::begin()).await
    }

    async fn open_timed(
        home: &Path,
        config: Config,
        clock: clock::Clock,
        mut phases: startup::Phases,
    ) -> Result<Kernel, OpenError> {
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
        phases.mark("store");
        let one_connection = db.one_connection();
        let providers = llm::Providers::load(&config)?;
        let loaded = db::cached_mark(&db).await?;
        let agents = Arc::new(Agents::load(db.clone(), config.providers.keys().cloned().collect()).await?);
        let config = Arc::new(config);
        let cluster = Arc::new(cluster::Cluster::new(db.clone(), &config.cluster));
        let mut services = family::Services::default();
        services.provide_shared(config.clone());
        services.provide_shared(agents.clone());
        services.provide_shared(cluster.clone());
        services.provide(db.clone());
        services.provide(clock.clone());
        services.provide(family::Home(home.to_path_buf()));
        services.provide(usage::Meter::start(db.clone(), &config));
        let sessions = services.provide(Sessions::new(db.clone()));
        let turns = services.provide(Turns::load(&db).await?);
        let audit = services.provide(AuditLog::start(db.clone(), agents.clone()));
        let tools = services.provide(Tools::new(Registry::default()));
        let runtime = services.provide(runtime::Runtime::unbound());
        let auth = Auth::load(db.clone()).await?;
        phases.mark("core");
        tools.set_builtin(family::open_all(FAMILIES, &mut services)?);
        phases.mark("families");
        let kernel = Kernel(Arc::new(Inner {
            started_at: db::timestamp(clock.now()),
            providers,
            config_edits: Default::default(),
            turns,
            cluster,
            clock,
            started: std::time::Instant::now(),
            home: home.to_path_buf(),
            tools,
            config,
            services,
            auth,
            sessions,
            audit,
            actions: actions::Actions::new(db.clone()),
            agents,
            db,
            opening: std::sync::Mutex::new(phases),
        }));
        runtime.bind(Box::new(Running(kernel.downgrade())));
        for agent in kernel.0.agents.list() {
            kernel.service::<schedule::Schedules>().seed_manifest(&agent).await?;
        }
        drop(one_connection);
        let weak = Arc::downgrade(&kernel.0);
        db::watch_changes(&kernel.0.db, &db_path, CHANGE_POLL, loaded, move || {
            let weak = weak.clone();
            Box::pin(async move {
                if let Some(inner) = weak.upgrade() {
                    Kernel(inner).reload().await;
                }
            })
        })
        .await?;
        kernel.0.opening.lock().unwrap_or_else(|e| e.into_inner()).mark("seeds and watcher");
        Ok(kernel)
    }

    /// How long opening this kernel took, phase by phase.
    pub fn opening(&self) -> startup::Phases {
        self.0.opening.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Starts the daemon's own work: its place in the cluster (taking over the work of a
    /// previous run or a dead daemon), the task board's sweeper, the scheduler, processes,
    /// channels, script and MCP tools. `listen` is the address its API serves on. Only the
    /// daemon calls this — a CLI command opening the same home must not fire schedules or
    /// mark the daemon's running work interrupted.
    pub async fn start_background(&self, listen: &str) -> Result<()> {
        cluster::Cluster::start(self, listen).await?;
        tasks::start_sweeper(self.services());
        schedule::runner::start(self.services());
        agent::start_ephemeral_sweeper(self.services());
        retention::start(self);
        process::start(self.services().need());
        self.services().need::<channel::Channels>().start();
        script::start(self.services());
        self.services().need::<mcp::Mcp>().start(&self.0.config.mcp);
        // After the tools that come and go (scripts, MCP): an approved call runs with them.
        approval::start_resuming(self.services());
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

    /// A service by its type: the core's or a family's (see [`family`]), e.g.
    /// `kernel.service::<tasks::TaskBoard>()`.
    pub fn service<T: std::any::Any + Send + Sync>(&self) -> &T {
        self.0.services.get::<T>()
    }

    /// A service that may be switched off by the config (the browser without `[browser]`,
    /// semantic memory with `[proactive_memory] enabled = false`).
    pub fn optional<T: std::any::Any + Send + Sync>(&self) -> Option<&T> {
        self.0.services.optional::<T>()
    }

    /// Every service, for code that hands some of them on.
    pub fn services(&self) -> &family::Services {
        &self.0.services
    }

    /// Re-reads `[mcp]` and `[providers]` from `config.toml` and applies them (`kennel
    /// reload`, SIGHUP). The rest of the config is read at start only.
    pub async fn reload_config(&self) -> Result<mcp::McpReload> {
        // Not beside a provider edit: a file read before it must not put back what it replaced.
        let _one = self.config_edits().lock().await;
        let path = self.0.home.join("config.toml");
        let config = tokio::task::spawn_blocking(move || config::Config::load(&path))
            .await
            .map_err(Error::internal)?
            .map_err(|e| Error::invalid(format!("config.toml was not reloaded: {e}")))?;
        self.take_config(&config)?;
        Ok(self.services().need::<mcp::Mcp>().apply(&config.mcp))
    }

    pub(crate) fn db(&self) -> &db::Db {
        &self.0.db
    }
    pub(crate) fn downgrade(&self) -> std::sync::Weak<Inner> {
        Arc::downgrade(&self.0)
    }
    pub(crate) fn upgrade(weak: &std::sync::Weak<Inner>) -> Option<Kernel> {
        weak.upgrade().map(Kernel)
    }

    pub fn turns(&self) -> &Turns {
        &self.0.turns
    }
    pub(crate) fn providers_registry(&self) -> &llm::Providers {
        &self.0.providers
    }
    pub(crate) fn config_edits(&self) -> &tokio::sync::Mutex<()> {
        &self.0.config_edits
    }

    /// The providers as they are now (edits replace them while the daemon runs).
    pub fn providers(&self) -> Arc<llm::ProviderSet> {
        self.0.providers.now()
    }

    /// The provider an agent's turns use: the one its type names, else the default
    /// ([`Config::default_provider`]).
    pub fn provider_for(&self, agent: &agent::Agent) -> Result<Arc<llm::Provider>> {
        let providers = self.providers();
        let Some(name) = agent.manifest.provider.as_deref().or_else(|| providers.default_name()) else {
            // Several without a default: `Config::load` refuses that, a config built in code may not.
            return Err(Error::unavailable(if providers.is_empty() {
                format!(
                    "no LLM provider is configured, so agent `{}` cannot think: add a [providers.NAME] section to config.toml",
                    agent.name
                )
            } else {
                format!(
                    "agent `{}` names no provider and no [kernel] default_provider is set (configured: {})",
                    agent.name,
                    providers.listed()
                )
            }));
        };
        providers.get(name).cloned().ok_or_else(|| {
            Error::unavailable(format!(
                "agent `{}` uses provider `{name}`, which config.toml does not define: add [providers.{name}] (configured: {})",
                agent.name,
                providers.listed()
            ))
        })
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
        self.service::<usage::Meter>()
    }

    /// The provider config.toml names `name`.
    pub fn provider_named(&self, name: &str) -> Option<Arc<llm::Provider>> {
        self.providers().get(name).cloned()
    }

    /// Tests the provider `name` with one tiny call to `model` (or its first configured
    /// model): the answer, or the provider's own error. Not counted in usage (a few tokens).
    pub async fn test_provider(&self, name: &str, model: Option<&str>) -> Result<llm::ProviderTest> {
        let provider = self.provider_named(name).ok_or_else(|| self.no_provider(name))?;
        provider.probe(&provider.probe_model(model)?).await
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
        agent::spawn_with_cron(&self.0.agents, self.service(), req).await
    }

    /// Stops an agent, cancels its running turns and pauses its schedules (kept, so an
    /// operator can resume them).
    pub async fn stop_agent(&self, agent: &str) -> Result<Arc<agent::Agent>> {
        let stopped = self.0.agents.stop(agent).await?;
        self.0.turns.cancel_agent(stopped.id);
        self.service::<schedule::Schedules>().pause_agent(stopped.id).await?;
        if let Some(browsers) = self.optional::<browser::Browsers>() {
            browsers.close_agent(stopped.id).await;
        }
        self.service::<process::Processes>().close_agent(stopped.id);
        Ok(stopped)
    }

    /// Cancels the turn of `agent` running in `session` (an operator's Stop in a chat): the
    /// agent goes on running, and the session takes its next message; the chat notes who
    /// cancelled it (`by`). Asks the daemon of the cluster that holds the agent when another
    /// one does. How many turns it cancelled: none when the turn had ended already.
    pub async fn cancel_turn(&self, agent: &str, session: uuid::Uuid, by: &tool::Caller) -> Result<usize> {
        let agent = self.0.agents.get(agent)?;
        self.sessions().of_agent(&agent, session).await?;
        let by = by.audit_label();
        let here = self.0.turns.cancel_in_session(agent.id, session, &by);
        if self.0.cluster.holder_elsewhere(agent.id).await?.is_none() {
            return Ok(here);
        }
        let request = cluster::AgentRequest::CancelTurn { session, by };
        let lease = cluster::agent_lease(agent.id);
        let limit = std::time::Duration::from_secs(10);
        let answer = cluster::ask_holder(&self.0.cluster, &lease, &request, limit, "cancelling the turn").await?;
        Ok(here + answer["cancelled"].as_u64().unwrap_or(0) as usize)
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
        self.service::<process::Processes>().forget_agent(removed.id);
        Ok(removed)
    }

    /// Runs a tool call through the pipeline. The only way any front runs a tool.
    pub async fn call_tool(
        &self,
        ctx: CallContext,
        name: &str,
        args: serde_json::Value,
    ) -> Result<tool::pipeline::CallOutput> {
        tool::pipeline::call(self, ctx, name, args).await
    }

    /// Writes out queued audit entries and closes the database.
    pub async fn close(&self) {
        self.service::<schedule::Schedules>().stop();
        self.0.cluster.stop().await;
        self.service::<channel::Channels>().close();
        self.service::<mcp::Mcp>().stop_all();
        if let Some(browsers) = self.optional::<browser::Browsers>() {
            browsers.shut_down().await;
        }
        self.service::<process::Processes>().shut_down().await;
        self.0.audit.flush().await;
        self.0.db.close().await;
    }
}

/// The kernel behind every family's [`runtime::Runtime`], held weakly so a family's handle
/// never keeps a closed kernel open.
struct Running(std::sync::Weak<Inner>);

impl Running {
    fn kernel(&self) -> Result<Kernel> {
        Kernel::upgrade(&self.0).ok_or_else(runtime::not_running)
    }
}

impl runtime::Engine for Running {
    fn run_turn(
        &self,
        agent: Arc<agent::Agent>,
        req: TurnRequest,
    ) -> futures_util::future::BoxFuture<'static, Result<TurnResult>> {
        let kernel = self.kernel();
        Box::pin(async move { turn::run(&kernel?, agent, req).await })
    }

    fn stop_agent(&self, agent: String) -> futures_util::future::BoxFuture<'static, Result<Arc<agent::Agent>>> {
        let kernel = self.kernel();
        Box::pin(async move { kernel?.stop_agent(&agent).await })
    }

    fn call_tool(
        &self,
        ctx: CallContext,
        name: String,
        args: serde_json::Value,
    ) -> futures_util::future::BoxFuture<'static, Result<runtime::CallOutput>> {
        let kernel = self.kernel();
        Box::pin(async move { kernel?.call_tool(ctx, &name, args).await })
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
