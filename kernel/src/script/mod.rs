//! Script and extension tools (spec §15): `script_NAME` from `$KENNEL_HOME/tools/script/NAME/`
//! and `ext_PACKAGE_TOOL` from `$KENNEL_HOME/tools/ext/PACKAGE/` (see [`manifest`]), run in a
//! sandbox ([`sandbox`]). The folder is watched: tools added, changed or removed appear and
//! disappear while the daemon runs; a manifest with errors is listed, excluded, with its
//! error as the reason.
//!
//! Watching is a poll of the folders' file sizes and times every [`WATCH_EVERY`]: a few
//! `stat` calls, no extra dependency, and it works on every filesystem (inotify misses
//! changes made on network mounts and through some editors' rename dances).
//!
//! # Design notes
//!
//! ## Layout
//!
//! `script_*` and `ext_*` tools (spec §15, issue 25): `manifest.rs` (the folders under
//! `$KENNEL_HOME/tools`, their manifests and checks), `sandbox.rs` (bubblewrap, limits, the run),
//! `mod.rs` (the watcher that offers them).
//!
//! ## Script and extension tools
//!
//! **Script and extension tools** (`script/`). `$KENNEL_HOME/tools/script/NAME/tool.toml` makes
//! `script_NAME`; `$KENNEL_HOME/tools/ext/PACKAGE/package.toml` makes `ext_PACKAGE_TOOL` for each
//! `[tools.TOOL]` (a package name has no `_`, so the name reads one way). A manifest:
//! `description`, `run` (an executable inside the folder), `timeout_secs` (30), `max_output_bytes`
//! (1 MiB), `network` (false), `tags`, and `[arguments]`, the JSON Schema written as TOML. The
//! arguments go as JSON on stdin; stdout is the result (JSON if it parses, else text); a
//! non-zero exit is a failed call with stderr's first 2,000 characters. Past the timeout or the
//! output limit the sandbox is killed (`Timeout`, `ResourceExhausted`).
//! - **The sandbox** is bubblewrap when it is on `PATH` and can make namespaces here (probed
//!   once, when the first tool appears): the system's `/usr` (and merged-`/usr` links), the few `/etc` files programs
//!   need (`alternatives`, `ld.so.cache`, `localtime`, `passwd`, `group`; never `shadow`) and,
//!   only with `network = true`, the resolver and certificate files (`nsswitch.conf`, `hosts`,
//!   `resolv.conf`, `ssl/certs`, `ca-certificates`; each bind costs bubblewrap about 0.1 ms),
//!   a fresh `/tmp`, `/proc`, `/dev`; the agent's workspace read-write
//!   at `/workspace` (the working folder and `HOME`); the tool's folder read-only at `/tool`;
//!   every namespace unshared (no network unless `network = true`); `--die-with-parent` and a
//!   PID namespace, so killing bwrap ends everything in it; the environment `PATH`, `HOME`,
//!   `LANG`, `KENNEL_TOOL`, `KENNEL_AGENT`. Nothing of `$KENNEL_HOME` but the workspace is
//!   there. Without bubblewrap a tool runs in its workspace with the same environment and limits
//!   but can read what the daemon's user can: every such tool's inspector line says so.
//! - **A sandbox made ahead.** Bubblewrap spends about 7 ms of a start making namespaces and
//!   mounts. After each call the next sandbox for that agent and tool is made in the background
//!   with `--block-fd 3`: bubblewrap sets everything up, then waits on that pipe, so nothing of
//!   the tool runs before its call. The call writes one byte and feeds stdin as usual. One waits
//!   per (tool, agent), for at most 60 s (`KEEP_READY`), then it is killed; a changed or removed
//!   tool's sandboxes go with its old version. It is started from a runtime thread, never the
//!   blocking pool: `--die-with-parent` follows the *thread* that started bwrap, and pool
//!   threads end when idle (a sandbox made there died with its thread).
//! - **Watching** is a poll of the folders' files (names, sizes, times) every 0.5 s, then a
//!   rescan when anything changed: no extra dependency, and it works on every filesystem. A
//!   manifest with errors is listed, excluded, with `tools/script/NAME/tool.toml:LINE:COL: …` as
//!   the reason; a removed folder's tools are withdrawn ("its folder … was removed").

pub mod manifest;
pub mod sandbox;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use uuid::Uuid;

use crate::error::Result;
use crate::family::{Home, Services};
use crate::process::Processes;
use crate::tool::dynamic::DynamicRun;
use crate::tool::{BoxFuture, CallContext, Provided, ToolDef, ToolOrigin, Tools};
use crate::workspace::Workspaces;
use manifest::{Checked, Found};
use sandbox::Sandbox;

/// How often the tools folder is looked at for changes.
pub const WATCH_EVERY: Duration = Duration::from_millis(500);

/// The provider name the tool list knows these tools by.
const PROVIDER: &str = "scripts";

/// `$KENNEL_HOME/tools`.
pub fn root(home: &Home) -> PathBuf {
    home.path().join("tools")
}

/// What a script tool's call takes beyond its folder: the caller's workspace, and the
/// sandbox's network when its manifest asks for one.
#[derive(Clone)]
struct Uses {
    workspaces: Arc<Workspaces>,
    processes: Arc<Processes>,
}

/// Offers what the tools folder holds now, then watches it for as long as the daemon runs.
/// Bubblewrap is probed when the first tool appears: a daemon without script tools starts no
/// child for them.
pub fn start(services: &Services) {
    let (tools, root) = (services.need::<Tools>(), root(services.get::<Home>()));
    let uses = Uses { workspaces: services.need(), processes: services.need() };
    tokio::spawn(async move {
        let mut sandbox: Option<Arc<Sandbox>> = None;
        let mut seen = None;
        loop {
            let now = tokio::task::spawn_blocking({
                let root = root.clone();
                move || manifest::fingerprint(&root)
            })
            .await
            .unwrap_or_default();
            if seen.as_ref() != Some(&now) {
                let found = tokio::task::spawn_blocking({
                    let root = root.clone();
                    move || manifest::scan(&root)
                })
                .await
                .unwrap_or_default();
                if sandbox.is_none() && !found.is_empty() {
                    let detected = Sandbox::detect().await;
                    if let Some(note) = detected.note() {
                        tracing::warn!("script and extension tools: {note}");
                    }
                    sandbox = Some(Arc::new(detected));
                }
                if let Some(sandbox) = &sandbox {
                    offer(&tools, &uses, sandbox, found);
                }
                seen = Some(now);
            }
            tokio::time::sleep(WATCH_EVERY).await;
        }
    });
}

/// Sets the tool list's script and extension tools to `found`.
fn offer(tools: &Tools, uses: &Uses, sandbox: &Arc<Sandbox>, found: Vec<Found>) {
    let provided = found.into_iter().map(|f| provided(uses, sandbox, f)).collect();
    tools.provide(PROVIDER, provided, "its folder under $KENNEL_HOME/tools was removed");
}

fn provided(uses: &Uses, sandbox: &Arc<Sandbox>, found: Found) -> Provided {
    let family = if found.provider == "script" { "script" } else { "ext" };
    let origin = ToolOrigin { provider: found.provider.clone(), original_name: None, note: sandbox.note() };
    match found.manifest {
        Ok(checked) => {
            let mut def =
                ToolDef::new(&found.name, family, checked.manifest.description.trim()).tags(&[family]).origin(origin);
            def.tags.extend(checked.manifest.tags.iter().cloned());
            def.schema = crate::tool::ArgsSchema::given(checked.schema.clone());
            let runner = ScriptRun {
                name: found.name,
                folder: found.folder,
                checked,
                sandbox: sandbox.clone(),
                uses: uses.clone(),
                ready: Mutex::default(),
            };
            Provided::dynamic(def, Arc::new(runner))
        }
        Err(why) => {
            let def = ToolDef::new(&found.name, family, "(its manifest has errors)").origin(origin);
            Provided::dynamic(def, Arc::new(Broken)).excluded(format!("its manifest has errors: {why}"))
        }
    }
}

struct ScriptRun {
    name: String,
    folder: PathBuf,
    checked: Checked,
    sandbox: Arc<Sandbox>,
    uses: Uses,
    /// A sandbox made ahead for each agent that called this tool in the last [`KEEP_READY`]:
    /// bubblewrap takes most of a start (namespaces and mounts, about 7 ms here), so the next
    /// call pays only for the tool. A new version of the tool is a new `ScriptRun`, and the old
    /// one's sandboxes go (and are killed) with it.
    ready: Mutex<HashMap<Uuid, sandbox::Ready>>,
}

/// How long a sandbox made ahead waits for its call before it is killed.
pub const KEEP_READY: Duration = Duration::from_secs(60);

impl DynamicRun for ScriptRun {
    fn run(self: Arc<Self>, ctx: CallContext, args: Value) -> BoxFuture<Result<Value>> {
        Box::pin(async move {
            let workspace = self.uses.workspaces.dir(ctx.agent.id)?;
            let network = match (&*self.sandbox, self.checked.manifest.network) {
                (Sandbox::Bubblewrap(_), true) => Some(self.uses.processes.sandbox_network().await?),
                _ => None,
            };
            let ready = self.ready().remove(&ctx.agent.id).filter(|r| r.agent == ctx.agent.name);
            let run = self.run_for(&ctx.agent.name, &workspace, network.as_deref());
            let result = sandbox::run(&self.sandbox, run, &args, ready).await;
            self.prepare_next(ctx.agent.id, ctx.agent.name.clone(), workspace, network);
            result
        })
    }
}

impl ScriptRun {
    fn run_for<'a>(
        &'a self,
        agent: &'a str,
        workspace: &'a std::path::Path,
        network: Option<&'a std::path::Path>,
    ) -> sandbox::Run<'a> {
        sandbox::Run { tool: &self.name, agent, workspace, folder: &self.folder, checked: &self.checked, network }
    }

    fn ready(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, sandbox::Ready>> {
        self.ready.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes the agent's next sandbox in the background, and kills it after [`KEEP_READY`]
    /// without a call. Without bubblewrap there is nothing to make ahead.
    fn prepare_next(self: &Arc<Self>, agent: Uuid, name: String, workspace: PathBuf, network: Option<PathBuf>) {
        if !matches!(*self.sandbox, Sandbox::Bubblewrap(_)) || self.ready().contains_key(&agent) {
            return;
        }
        let this = Arc::downgrade(self);
        // Started from a runtime thread, not the blocking pool: bubblewrap's `--die-with-parent`
        // watches the thread that started it, and the pool's threads end when idle.
        tokio::spawn(async move {
            let made = {
                let Some(tool) = this.upgrade() else { return };
                let run = tool.run_for(&name, &workspace, network.as_deref());
                let Some(ready) = sandbox::prepare(&tool.sandbox, &run) else { return };
                let made = ready.id();
                tool.ready().entry(agent).or_insert(ready);
                made
            };
            tokio::time::sleep(KEEP_READY).await;
            if let Some(tool) = this.upgrade() {
                let mut ready = tool.ready();
                if ready.get(&agent).is_some_and(|r| r.id() == made) {
                    ready.remove(&agent);
                }
            }
        });
    }
}

/// A tool whose manifest has errors: listed, excluded, never run.
struct Broken;

impl DynamicRun for Broken {
    fn run(self: Arc<Self>, _ctx: CallContext, _args: Value) -> BoxFuture<Result<Value>> {
        Box::pin(async { Err(crate::Error::unavailable("this tool's manifest has errors")) })
    }
}
