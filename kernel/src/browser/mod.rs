//! Browser automation (spec §9, family `browser`): headless Chromium over the DevTools
//! protocol (chromiumoxide), one browser context per agent (cookies and storage never shared)
//! with a bounded tab pool, every request of every page checked by the address guard through
//! a proxy inside the daemon ([`crate::net::proxy`]).
//!
//! - Chromium starts on the first browser call, never at daemon start; it stops when no agent
//!   has a tab open for `idle_close_secs`, and a crashed or killed one is started again on the
//!   next call, which says so.
//! - An agent's calls are serialised (one lock per agent), so two sessions of one agent take
//!   turns on its tabs; different agents run at once.
//! - Tabs unused for `idle_close_secs` close; stopping an agent closes its pages.
//!
//! # Design notes
//!
//! ## Layout
//!
//! The browser family (spec §9): `Browsers` (one Chromium for the daemon, started on first use;
//! per agent a browser context and a tab pool, `session` serialising an agent's calls; the idle
//! sweeper; `close_popups`; `close_agent` when an agent stops; crash detection and restart),
//! `pipe.rs` (DevTools over `--remote-debugging-pipe`, bridged to chromiumoxide), `chromium.rs`
//! (starting Chromium ourselves: flags, a profile folder per process, `PR_SET_PDEATHSIG`, the exit
//! watcher), `pages.rs` (scripts run as plain `Runtime.evaluate`, element marking, load waits,
//! `NetworkActivity` for network idle), `scripts.rs` (the JavaScript the tools run), `tools.rs`
//! (the ten tools).
//!
//! ## The browser
//!
//! - **Availability.** The ten tools need a `browser.*` grant, a `[browser]` section and a
//!   Chromium (`[browser] executable`, else `chromium`, `chromium-browser`, `google-chrome` on
//!   `PATH`); without the section or the binary they are excluded in the daemon layer with that
//!   reason. Nothing starts at daemon start: the first browser call starts the guard proxy and
//!   Chromium (~0.8 s here); when no agent has had a tab open for `idle_close_secs`, the sweeper
//!   stops Chromium again.
//! - **DevTools over a pipe** (`pipe.rs`, issue 41). Chromium gets `--remote-debugging-pipe`
//!   with its ends of two pipes at descriptors 3 and 4 (NUL-ended JSON): no DevTools port
//!   listens, which is what let any local user, and any script with a network, read every
//!   agent's cookies and open `file://…/cli.token`. chromiumoxide only speaks WebSocket over
//!   TCP, so the daemon bridges: a listener on an ephemeral loopback port accepts connections
//!   until one asks for `/devtools/browser/<128 random bits>` (the path never leaves the
//!   process; others get 404 and a warning), then stops listening and relays that connection to
//!   the pipes. **Decision:** a bridge rather than a fork of chromiumoxide's connection type; the
//!   port exists for the milliseconds of the handshake and serves only the secret. Ready means
//!   Chromium answered `Browser.getVersion` (within 45 s), or the launch fails with what it
//!   printed on stderr. Chromium's own sandbox is on unless the daemon is root (Chromium
//!   refuses it there) or `[browser] sandbox = false`, logged at each start of Chromium.
//! - **Chromium is our child.** `chromium.rs` starts it with `tokio::process` (not
//!   chromiumoxide's launcher) and connects chromiumoxide to the bridge. A
//!   profile folder per process under `$KENNEL_HOME/browser/` (removed when it stops),
//!   `XDG_CONFIG_HOME`/`XDG_CACHE_HOME` inside it, `PR_SET_PDEATHSIG` so it dies with the daemon
//!   even on `kill -9`. A watcher on the child and the handler loop (which ends on a closed
//!   socket, failing waiting commands at once) mark it dead; `is_alive` also reads
//!   `/proc/PID/stat` so a killed process that is not yet reaped counts as gone. The next call
//!   starts a new one, and its result has `notice` saying the browser had stopped and how many
//!   tabs were lost. Its environment is built, not inherited (`process::base_environment`:
//!   `PATH`, `LANG`, `LC_ALL`, `TZ`, `TMPDIR`, then `HOME` and the XDG folders inside its profile,
//!   and the display's variables only when not headless): pages run code, and no provider key or
//!   token of the daemon's is Chromium's business. ffmpeg and ffprobe get the same base.
//! - **Per agent**: a browser context (`Target.createBrowserContext`: cookies, storage and cache
//!   never shared) and at most `tabs_per_agent` tabs. While Chromium runs it keeps one **spare**
//!   context with a blank tab ready (`Process::refill_spare`): a new agent's first tab takes it
//!   and a new spare is made in the background, so the ~240 ms Chromium takes to make a context,
//!   a target and its renderer is not on that agent's first navigation. A spare is used by the one
//!   agent that takes it and never handed back; it costs one blank tab's memory (see
//!   `BENCHMARKS.md`, "Browser") and goes with Chromium when it stops. A full pool makes `browser_navigate` with
//!   `new_tab` (or the first tab) `ResourceExhausted`, naming the setting; no tab is ever closed
//!   to make room. Every tool works on the active tab (the last one opened or selected with
//!   `browser_navigate`'s `tab`); results carry the tab's id. An agent's calls hold its lock for
//!   their whole run (two sessions of one agent take turns; the tools are also `exclusive` within
//!   a response); the dashboard reads a copy (`TabView`s) so a slow page never blocks it.
//! - **Guarded navigation.** Chromium runs with `--proxy-server=<the GuardProxy>` and
//!   `--proxy-bypass-list=<-loopback>` (and each context is created with the same proxy), so every
//!   request a page makes — its URL, each redirect hop, images, fetches, websockets — reaches the
//!   proxy, which resolves the host once, refuses it when `blocked_hosts` names it
//!   (`guard::check_blocked`) or `allowed_hosts` does not let every address through
//!   (`guard::check`), and connects to a checked address itself. Refused plain-http requests get a
//!   403 page marked `data-kennel-refused`; refused `CONNECT`s a 403 (Chromium shows
//!   `ERR_TUNNEL_CONNECTION_FAILED`, and `refusal_for` tells the tool why). `browser_navigate`
//!   checks the first URL with the same `ProxyRules::checked` before it touches a tab, refuses
//!   `file:` and every scheme but http(s), and turns a refusal page or a refused tunnel into
//!   `Forbidden`. Page requests that fail the guard simply fail in the page.
//! - **Tools.** Selectors are CSS or `text=…` (a visible element with that text, links, buttons
//!   and fields first, innermost); the element is marked with `data-kennel-target` by a script and
//!   driven through DevTools (real mouse and key events). `browser_type` types key by key and then
//!   waits 150 ms for debounced handlers. `browser_wait` polls a selector, waits for the tab's
//!   requests in flight (from the DevTools network events) to be zero for 500 ms, or sleeps.
//!   `browser_read_page` returns text (50,000 characters by default) and an outline (headings,
//!   links with absolute URLs, forms with fields, labels, options; never a password's or hidden
//!   field's value). `browser_run_js` is `Runtime.evaluate` in REPL mode (`await` at the top,
//!   `let` again in a later call); a thrown error is `Failed` with its text. Navigation and back
//!   wait for `readyState == complete` up to `navigation_timeout_secs`, then stop the load and
//!   answer `Timeout` (the tab keeps what arrived).
//! - **Screenshots** are PNGs written to the agent's workspace (`screenshots/tabN-TIME.png`).
//!   The tool is marked `returns_image`: the turn loop stores the path in the tool message
//!   (`llm::ToolImage`), `turn/images.rs` loads the last 3 such images for each model call, and
//!   the model gets an image block where its provider accepts images
//!   (`ProviderConfig::accepts_images`: `[providers.NAME.models.MODEL] images`, default true for
//!   Anthropic and false for OpenAI-compatible), else a note with the path. The chat shows the
//!   image from the workspace; the agent's **Browser tabs** page (`/agents/{id}/browser`,
//!   `GET /api/agents/{id}/browser/tabs`) lists its tabs with the last screenshot of each.
//!
//! ## Quota
//!
//! - **Browser pages**: a page that a page opens (its target has an opener) is closed the
//!   moment Chromium reports it (`browser::close_popups`, one listener per Chromium) and counted
//!   per agent (the Browser tabs page shows the count); an agent's pages are the tabs its tools
//!   open, within `tabs_per_agent`.
//!
//! ## Tests
//!
//! - Browser: `tests/tests/system/browser.rs` (every tool against pages the test serves on
//!   loopback in Debian's Chromium, the pool, two agents' contexts, the guard on first URLs,
//!   redirects and page fetches, no port of the browser listening and Kennel's setup
//!   unreachable with all of loopback open, Chromium in its own sandbox under an unprivileged
//!   daemon, a page that never loads, Chromium killed and restarted, idle close, a turn's
//!   screenshot reaching the fake Anthropic provider as an image), `tests/tests/system/tool_images.rs`
//!   (both wire shapes of a tool result's image), `net::proxy`'s unit tests.

mod chromium;
pub(crate) mod config;
mod pages;
mod pipe;
mod scripts;
mod tools;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex as StdMutex, Weak};
use std::time::{Duration, Instant};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::browser::{
    BrowserContextId, SetDownloadBehaviorBehavior, SetDownloadBehaviorParams,
};
use chromiumoxide::cdp::browser_protocol::target::{
    CloseTargetParams, CreateBrowserContextParams, CreateTargetParams, EventTargetCreated,
};
use serde::Serialize;
use tokio::sync::Mutex;
use utoipa::ToSchema;

use crate::agent::AgentId;
use crate::error::{Error, Result};
use crate::family::{Family, Home, Services};
use crate::net::proxy::{GuardProxy, ProxyRules};
use crate::tool::Registry;
use crate::tool::availability::Needs;

pub(crate) use chromium::find_executable;
pub use config::BrowserConfig;
use pages::NetworkActivity;

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "browser",
    open: |s| {
        if let Some(config) = s.config().browser.clone() {
            s.provide(Browsers::new(config, s.get::<Home>().path().to_path_buf()));
        }
        Ok(())
    },
    register,
};

pub(crate) fn register(r: &mut Registry, services: &Services) {
    let config = services.config();
    let needs = match &config.browser {
        None => Needs::section(false, "browser"),
        Some(browser) => Needs::unless(find_executable(browser.executable.as_deref()).err()),
    };
    tools::register(r, services, &needs);
}

/// What the dashboard shows of one open tab.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TabView {
    pub tab: u32,
    pub url: String,
    pub title: String,
    pub active: bool,
    /// The workspace path of the last screenshot taken in this tab.
    pub last_screenshot: Option<String>,
    /// When a tool last used it (RFC 3339).
    pub last_used: String,
}

/// The browser service: one Chromium for the daemon, a context and tab pool per agent.
pub struct Browsers {
    config: BrowserConfig,
    /// The Chromium to start, or why there is none.
    executable: std::result::Result<PathBuf, String>,
    home: PathBuf,
    /// The running Chromium, if any, and how many have been started (each agent's context
    /// remembers which one it lives in).
    chromium: Mutex<Running>,
    agents: StdMutex<HashMap<AgentId, Arc<Mutex<AgentPages>>>>,
    /// What the dashboard reads, kept apart so a long navigation never blocks a page view.
    views: StdMutex<HashMap<AgentId, Vec<TabView>>>,
    /// Whose each browser context is, for the popup watcher (which must not wait on a call's
    /// lock of the agent's pages), and how many popups each agent's pages opened and were
    /// closed.
    contexts: StdMutex<HashMap<BrowserContextId, AgentId>>,
    popups_closed: StdMutex<HashMap<AgentId, u64>>,
    sweeper: std::sync::OnceLock<tokio::task::JoinHandle<()>>,
}

#[derive(Default)]
struct Running {
    process: Option<Arc<Process>>,
    generation: u64,
    /// When a call last took the running Chromium (the sweeper never stops one in use).
    handed_out: Option<Instant>,
}

/// A Chromium with the proxy its pages go through.
pub(crate) struct Process {
    chromium: chromium::Chromium,
    proxy: GuardProxy,
    generation: u64,
    /// A context with one blank tab, made ahead of need for the next agent's first tab. The
    /// task that makes it holds the lock meanwhile, so a new agent waits for the one on its way
    /// instead of making a second at the same time (both would take twice as long).
    spare: Arc<Mutex<Option<Fresh>>>,
}

/// A new browser context with one blank tab in it. Making one takes Chromium several
/// DevTools round trips and a renderer process (about 240 ms here), which a new agent's first
/// navigation would otherwise wait for; one is kept ready while Chromium runs, and whoever
/// takes it is the only one ever to use it.
struct Fresh {
    context: BrowserContextId,
    page: Page,
    network: Arc<NetworkActivity>,
}

/// One agent's browser: its context and tabs, in the Chromium of `generation`.
#[derive(Default)]
pub(crate) struct AgentPages {
    generation: u64,
    context: Option<BrowserContextId>,
    tabs: Vec<Tab>,
    active: Option<u32>,
    next_tab: u32,
    last_used: Option<Instant>,
}

pub(crate) struct Tab {
    id: u32,
    page: Page,
    network: Arc<NetworkActivity>,
    last_used: Instant,
    url: String,
    title: String,
    last_screenshot: Option<String>,
}

/// A call's hold on one agent's browser: its pages, locked, in a live Chromium.
pub(crate) struct Session {
    pub(crate) browsers: Arc<Browsers>,
    pub(crate) agent: AgentId,
    pub(crate) process: Arc<Process>,
    pub(crate) pages: tokio::sync::OwnedMutexGuard<AgentPages>,
    /// Set when this call found the browser gone and started it again.
    pub(crate) notice: Option<String>,
}

impl Browsers {
    pub fn new(config: BrowserConfig, home: PathBuf) -> Browsers {
        let executable = find_executable(config.executable.as_deref());
        Browsers {
            config,
            executable,
            home,
            chromium: Mutex::default(),
            agents: StdMutex::default(),
            views: StdMutex::default(),
            contexts: StdMutex::default(),
            popups_closed: StdMutex::default(),
            sweeper: std::sync::OnceLock::new(),
        }
    }

    /// What the guard's proxy checks every request against.
    fn proxy_rules(&self) -> ProxyRules {
        ProxyRules {
            allowed: self.config.allowed_hosts.clone(),
            blocked: self.config.blocked_hosts.clone(),
            allowed_setting: "[browser] allowed_hosts",
            blocked_setting: "[browser] blocked_hosts",
        }
    }

    fn navigation_timeout(&self) -> Duration {
        Duration::from_secs(self.config.navigation_timeout_secs)
    }

    fn forget_context(&self, context: Option<&BrowserContextId>) {
        if let Some(context) = context {
            self.contexts.lock().unwrap_or_else(|e| e.into_inner()).remove(context);
        }
    }

    /// How many pages `agent`'s pages opened by themselves (popups) were closed.
    pub fn popups_closed(&self, agent: AgentId) -> u64 {
        self.popups_closed.lock().unwrap_or_else(|e| e.into_inner()).get(&agent).copied().unwrap_or(0)
    }

    /// How many agents have a browser context open.
    pub fn contexts(&self) -> usize {
        self.agents.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// The open tabs of `agent`, for the dashboard.
    pub fn tabs(&self, agent: AgentId) -> Vec<TabView> {
        self.views.lock().unwrap_or_else(|e| e.into_inner()).get(&agent).cloned().unwrap_or_default()
    }

    /// Opens `agent`'s browser for one call: starts Chromium if none runs (or the last one
    /// died, which the call is told), and drops tabs that lived in a Chromium that is gone.
    pub(crate) async fn session(self: &Arc<Self>, agent: AgentId) -> Result<Session> {
        let pages = self.agent_slot(agent).lock_owned().await;
        let (process, restarted) = self.process().await?;
        let mut session = Session { browsers: self.clone(), agent, process, pages, notice: None };
        if session.pages.generation != session.process.generation {
            let lost = session.pages.tabs.len();
            session.pages.tabs.clear();
            session.pages.context = None;
            session.pages.active = None;
            session.pages.generation = session.process.generation;
            if restarted || lost > 0 {
                session.notice = Some(if lost > 0 {
                    format!(
                        "the browser had stopped (it crashed or was killed) and was started again: your {lost} open tab(s) are gone"
                    )
                } else {
                    "the browser had stopped (it crashed or was killed) and was started again".to_string()
                });
            }
        }
        session.pages.last_used = Some(Instant::now());
        Ok(session)
    }

    fn agent_slot(&self, agent: AgentId) -> Arc<Mutex<AgentPages>> {
        self.agents.lock().unwrap_or_else(|e| e.into_inner()).entry(agent).or_default().clone()
    }

    /// The running Chromium, started if needed; `true` when a previous one had died.
    async fn process(self: &Arc<Self>) -> Result<(Arc<Process>, bool)> {
        let mut running = self.chromium.lock().await;
        let mut restarted = false;
        running.handed_out = Some(Instant::now());
        if let Some(process) = &running.process {
            if process.chromium.is_alive() {
                return Ok((process.clone(), false));
            }
            tracing::warn!("Chromium is gone (crashed or killed); starting it again");
            restarted = true;
            running.process = None;
        }
        let executable = self.executable.clone().map_err(Error::unavailable)?;
        let proxy = GuardProxy::start(self.proxy_rules()).await?;
        running.generation += 1;
        let started = Instant::now();
        let chromium = chromium::Chromium::launch(chromium::Launch {
            executable: &executable,
            headless: self.config.headless,
            proxy: proxy.addr(),
            profile: self.home.join("browser").join(format!("profile-{}-{}", std::process::id(), running.generation)),
            command_timeout: self.navigation_timeout() + Duration::from_secs(5),
            sandbox: self.chromium_sandbox(),
        })
        .await?;
        tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, pid = ?chromium.pid(), "Chromium started");
        let process = Arc::new(Process { chromium, proxy, generation: running.generation, spare: Arc::default() });
        let created = process.chromium.browser.event_listener::<EventTargetCreated>().await.map_err(cdp_error)?;
        tokio::spawn(close_popups(Arc::downgrade(self), Arc::downgrade(&process), created));
        running.process = Some(process.clone());
        self.start_sweeper();
        Ok((process, restarted))
    }

    /// Whether Chromium runs in its own sandbox: `[browser] sandbox`, and never as root,
    /// where Chromium refuses it (said in the log each time it starts).
    fn chromium_sandbox(&self) -> bool {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if root || !self.config.sandbox {
            tracing::warn!(
                "Chromium runs without its own sandbox ({}): a page that exploits the renderer runs as the daemon's user",
                if root { "the daemon runs as root, where Chromium refuses it" } else { "[browser] sandbox = false" }
            );
        }
        self.config.sandbox && !root
    }

    /// Whether `agent` has a browser context here (pages open, or kept between calls).
    pub fn has_agent(&self, agent: AgentId) -> bool {
        self.agents.lock().unwrap_or_else(|e| e.into_inner()).contains_key(&agent)
    }

    /// Closes every page `agent` has open and its context (the agent stopped).
    pub async fn close_agent(&self, agent: AgentId) {
        let slot = self.agents.lock().unwrap_or_else(|e| e.into_inner()).remove(&agent);
        if let Some(slot) = slot {
            let mut pages = slot.lock().await;
            let process = self.chromium.lock().await.process.clone();
            self.forget_context(pages.context.as_ref());
            close_all(&mut pages, process.as_deref()).await;
        }
        self.views.lock().unwrap_or_else(|e| e.into_inner()).remove(&agent);
    }

    /// Stops Chromium (the daemon is shutting down).
    pub async fn shut_down(&self) {
        let process = self.chromium.lock().await.process.take();
        if let Some(process) = process {
            if let Some(sweeper) = self.sweeper.get() {
                sweeper.abort();
            }
            match Arc::try_unwrap(process) {
                Ok(process) => process.chromium.shut_down().await,
                Err(shared) => drop(shared),
            }
        }
    }

    fn publish(&self, agent: AgentId, pages: &AgentPages) {
        let now = Instant::now();
        let wall = chrono::Utc::now();
        let views = pages
            .tabs
            .iter()
            .map(|t| TabView {
                tab: t.id,
                url: t.url.clone(),
                title: t.title.clone(),
                active: pages.active == Some(t.id),
                last_screenshot: t.last_screenshot.clone(),
                last_used: crate::db::timestamp(
                    wall - chrono::Duration::from_std(now.duration_since(t.last_used)).unwrap_or_default(),
                ),
            })
            .collect::<Vec<_>>();
        let mut all = self.views.lock().unwrap_or_else(|e| e.into_inner());
        if views.is_empty() {
            all.remove(&agent);
        } else {
            all.insert(agent, views);
        }
    }

    fn start_sweeper(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let idle = Duration::from_secs(self.config.idle_close_secs);
        self.sweeper.get_or_init(|| tokio::spawn(sweep(weak, idle)));
    }

    /// One pass of the idle sweep: idle tabs close, empty contexts go, and Chromium stops when
    /// no agent has had a tab for the idle time.
    async fn sweep_once(&self, idle: Duration) {
        let now = Instant::now();
        let process = self.chromium.lock().await.process.clone();
        let Some(process) = process else { return };
        let slots: Vec<(AgentId, Arc<Mutex<AgentPages>>)> =
            self.agents.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(a, s)| (*a, s.clone())).collect();
        let mut busy = false;
        let mut last_use: Option<Instant> = None;
        for (agent, slot) in slots {
            // An agent in the middle of a call is not idle.
            let Ok(mut pages) = slot.try_lock() else {
                busy = true;
                continue;
            };
            let stale: Vec<u32> =
                pages.tabs.iter().filter(|t| now.duration_since(t.last_used) >= idle).map(|t| t.id).collect();
            for id in stale {
                tracing::info!(%agent, tab = id, "closing an idle browser tab");
                pages.close_tab(id).await;
            }
            if pages.tabs.is_empty() {
                self.forget_context(pages.context.as_ref());
                if let Some(context) = pages.context.take()
                    && pages.generation == process.generation
                {
                    let _ = process.chromium.browser.dispose_browser_context(context).await;
                }
            } else {
                busy = true;
            }
            last_use = last_use.max(pages.last_used);
            self.publish(agent, &pages);
        }
        let idle_since = last_use.map_or(Duration::MAX, |t| now.duration_since(t));
        if !busy && idle_since >= idle {
            let mut running = self.chromium.lock().await;
            let quiet = running.handed_out.is_none_or(|t| now.duration_since(t) >= idle);
            // Held here and in `running` only: no call has it.
            let unused = Arc::strong_count(&process) == 2;
            if quiet && unused && running.process.as_ref().is_some_and(|p| Arc::ptr_eq(p, &process)) {
                tracing::info!("no agent has used the browser for a while: stopping Chromium");
                running.process = None;
            }
        }
    }
}

async fn sweep(browsers: Weak<Browsers>, idle: Duration) {
    let every = (idle / 4).clamp(Duration::from_millis(250), Duration::from_secs(30));
    loop {
        tokio::time::sleep(every).await;
        let Some(browsers) = browsers.upgrade() else { return };
        browsers.sweep_once(idle).await;
    }
}

/// Closes every page that a page opened (`window.open`, a link or a form aimed at a new
/// window) as soon as Chromium reports it, and counts it for the agent whose context it is in:
/// an agent's pages are the tabs its tools opened, within `[browser] tabs_per_agent`, and none
/// besides. A popup is told from a tab by its opener (a tool's tab has none).
async fn close_popups(
    browsers: Weak<Browsers>,
    process: Weak<Process>,
    mut created: chromiumoxide::listeners::EventStream<EventTargetCreated>,
) {
    use futures_util::StreamExt;
    while let Some(event) = created.next().await {
        let info = &event.target_info;
        if info.r#type != "page" || info.opener_id.is_none() {
            continue;
        }
        let (Some(browsers), Some(process)) = (browsers.upgrade(), process.upgrade()) else { return };
        let closed = process.chromium.browser.execute(CloseTargetParams::new(info.target_id.clone())).await;
        let agent = info
            .browser_context_id
            .as_ref()
            .and_then(|c| browsers.contexts.lock().unwrap_or_else(|e| e.into_inner()).get(c).copied());
        if let Some(agent) = agent {
            *browsers.popups_closed.lock().unwrap_or_else(|e| e.into_inner()).entry(agent).or_default() += 1;
        }
        match closed {
            Ok(_) => tracing::info!(agent = ?agent, url = %info.url, "a page opened a popup: closed"),
            Err(e) => tracing::warn!(agent = ?agent, error = %e, "a popup could not be closed"),
        }
    }
}

async fn close_all(pages: &mut AgentPages, process: Option<&Process>) {
    for id in pages.tabs.iter().map(|t| t.id).collect::<Vec<_>>() {
        pages.close_tab(id).await;
    }
    if let (Some(context), Some(process)) = (pages.context.take(), process)
        && pages.generation == process.generation
    {
        let _ = process.chromium.browser.dispose_browser_context(context).await;
    }
    pages.active = None;
}

impl AgentPages {
    fn tab(&mut self, id: u32) -> Option<&mut Tab> {
        self.tabs.iter_mut().find(|t| t.id == id)
    }

    async fn close_tab(&mut self, id: u32) {
        if let Some(at) = self.tabs.iter().position(|t| t.id == id) {
            let tab = self.tabs.remove(at);
            let _ = tokio::time::timeout(Duration::from_secs(5), tab.page.close()).await;
        }
        if self.active == Some(id) {
            self.active = self.tabs.iter().max_by_key(|t| t.last_used).map(|t| t.id);
        }
    }
}

impl Session {
    /// The active tab, or a clear error when none is open.
    pub(crate) fn active(&mut self) -> Result<&mut Tab> {
        let notice = self.notice.clone();
        let id = self.pages.active.ok_or_else(|| {
            let why = notice.map(|n| format!("{n}; ")).unwrap_or_default();
            Error::not_found(format!("{why}no tab is open: browser_navigate opens one"))
        })?;
        let tab = self.pages.tab(id).ok_or_else(|| Error::internal("the active tab is not in the pool"))?;
        tab.last_used = Instant::now();
        Ok(tab)
    }

    /// Makes tab `id` the active one.
    pub(crate) fn select(&mut self, id: u32) -> Result<()> {
        let open: Vec<u32> = self.pages.tabs.iter().map(|t| t.id).collect();
        if !open.contains(&id) {
            return Err(Error::not_found(format!("there is no tab {id}; open tabs: {open:?}")).with_field("tab"));
        }
        self.pages.active = Some(id);
        Ok(())
    }

    /// Opens a new tab in this agent's context (the spare context on its first tab, else a new
    /// one), or refuses when the pool is full: another tab is never closed to make room.
    pub(crate) async fn open_tab(&mut self) -> Result<u32> {
        let limit = self.browsers.config.tabs_per_agent as usize;
        if self.pages.tabs.len() >= limit {
            return Err(Error::exhausted(format!(
                "all {limit} tabs of your pool ([browser] tabs_per_agent = {limit}) are open: close one with browser_close, or navigate an open one"
            )));
        }
        let (page, network) = match self.pages.context.clone() {
            Some(context) => self.process.new_tab(context).await?,
            None => {
                let spare = self.process.spare.lock().await.take();
                let fresh = match spare {
                    Some(fresh) => fresh,
                    None => self.process.fresh().await?,
                };
                self.browsers
                    .contexts
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(fresh.context.clone(), self.agent);
                self.pages.context = Some(fresh.context);
                (fresh.page, fresh.network)
            }
        };
        self.pages.next_tab += 1;
        let id = self.pages.next_tab;
        self.pages.tabs.push(Tab {
            id,
            page,
            network,
            last_used: Instant::now(),
            url: "about:blank".into(),
            title: String::new(),
            last_screenshot: None,
        });
        self.pages.active = Some(id);
        Ok(id)
    }

    pub(crate) async fn close_tab(&mut self, id: u32) {
        self.pages.close_tab(id).await;
    }

    /// The tabs as tool results list them.
    pub(crate) fn tab_list(&self) -> serde_json::Value {
        let tabs: Vec<serde_json::Value> = self
            .pages
            .tabs
            .iter()
            .map(|t| serde_json::json!({ "tab": t.id, "url": t.url, "title": t.title, "active": self.pages.active == Some(t.id) }))
            .collect();
        serde_json::Value::Array(tabs)
    }

    pub(crate) fn refusal_for(&self, host: &str, port: u16) -> Option<Error> {
        self.process.proxy.refusal_for(host, port)
    }

    /// The mark of the guard proxy's refusal pages in this Chromium.
    pub(crate) fn nonce(&self) -> String {
        self.process.proxy.nonce().to_string()
    }
}

impl Process {
    /// A new context, its pages behind the guard proxy, with one blank tab.
    async fn fresh(&self) -> Result<Fresh> {
        let browser = &self.chromium.browser;
        let params = CreateBrowserContextParams {
            dispose_on_detach: Some(true),
            proxy_server: Some(format!("http://{}", self.proxy.addr())),
            proxy_bypass_list: Some("<-loopback>".into()),
            origins_with_universal_network_access: None,
        };
        let context = browser.create_browser_context(params).await.map_err(cdp_error)?;
        // Downloads would land in the daemon user's home, unbounded: none.
        let downloads = SetDownloadBehaviorParams {
            behavior: SetDownloadBehaviorBehavior::Deny,
            browser_context_id: Some(context.clone()),
            download_path: None,
            events_enabled: None,
        };
        browser.execute(downloads).await.map_err(cdp_error)?;
        let (page, network) = self.new_tab(context.clone()).await?;
        Ok(Fresh { context, page, network })
    }

    /// A blank tab in `context`, its network activity followed.
    async fn new_tab(&self, context: BrowserContextId) -> Result<(Page, Arc<NetworkActivity>)> {
        let mut params = CreateTargetParams::new("about:blank");
        params.browser_context_id = Some(context);
        let page = self.chromium.browser.new_page(params).await.map_err(cdp_error)?;
        let network = NetworkActivity::follow(&page).await?;
        Ok((page, network))
    }

    /// Makes the next spare context in the background, unless one is ready or on its way (after
    /// every call, so the first call of a new Chromium leaves one behind too).
    fn refill_spare(self: &Arc<Self>) {
        let Ok(mut spare) = self.spare.clone().try_lock_owned() else { return };
        if spare.is_some() {
            return;
        }
        let process = self.clone();
        tokio::spawn(async move {
            match process.fresh().await {
                Ok(fresh) => *spare = Some(fresh),
                Err(e) => tracing::debug!(error = %e.message, "could not make a spare browser context"),
            }
        });
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.browsers.publish(self.agent, &self.pages);
        // After the call, not during it: making a context competes for Chromium's main thread
        // and the two cores with the page this call loads.
        self.process.refill_spare();
    }
}

/// A DevTools failure as a tool error.
pub(crate) fn cdp_error(e: chromiumoxide::error::CdpError) -> Error {
    use chromiumoxide::error::CdpError;
    match e {
        CdpError::Timeout => Error::timeout("the browser did not answer in time"),
        CdpError::JavascriptException(details) => Error::failed(pages::exception_text(&details)),
        CdpError::ChromeMessage(message) => Error::failed(format!("the browser refused: {message}")),
        other => Error::failed(format!("the browser failed: {other}")),
    }
}
