//! Script and extension tools (spec §15): `script_NAME` from `$KENNEL_HOME/tools/script/NAME/`
//! and `ext_PACKAGE_TOOL` from `$KENNEL_HOME/tools/ext/PACKAGE/` (see [`manifest`]), run in a
//! sandbox ([`sandbox`]). The folder is watched: tools added, changed or removed appear and
//! disappear while the daemon runs; a manifest with errors is listed, excluded, with its
//! error as the reason.
//!
//! Watching is a poll of the folders' file sizes and times every [`WATCH_EVERY`]: a few
//! `stat` calls, no extra dependency, and it works on every filesystem (inotify misses
//! changes made on network mounts and through some editors' rename dances).

pub mod manifest;
pub mod sandbox;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::Kernel;
use crate::error::Result;
use crate::tool::dynamic::DynamicRun;
use crate::tool::{BoxFuture, CallContext, Provided, ToolDef, ToolOrigin};
use manifest::{Checked, Found};
use sandbox::Sandbox;

/// How often the tools folder is looked at for changes.
pub const WATCH_EVERY: Duration = Duration::from_millis(500);

/// The provider name the tool list knows these tools by.
const PROVIDER: &str = "scripts";

/// `$KENNEL_HOME/tools`.
pub fn root(kernel: &Kernel) -> PathBuf {
    kernel.home().join("tools")
}

/// Offers what the tools folder holds now, then watches it for as long as the daemon runs.
/// Bubblewrap is probed when the first tool appears: a daemon without script tools starts no
/// child for them.
pub fn start(kernel: &Kernel) {
    let kernel = kernel.clone();
    tokio::spawn(async move {
        let mut sandbox: Option<Arc<Sandbox>> = None;
        let root = root(&kernel);
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
                    offer(&kernel, sandbox, found);
                }
                seen = Some(now);
            }
            tokio::time::sleep(WATCH_EVERY).await;
        }
    });
}

/// Sets the tool list's script and extension tools to `found`.
fn offer(kernel: &Kernel, sandbox: &Arc<Sandbox>, found: Vec<Found>) {
    let tools = found.into_iter().map(|f| provided(sandbox, f)).collect();
    kernel.tool_list().provide(PROVIDER, tools, "its folder under $KENNEL_HOME/tools was removed");
}

fn provided(sandbox: &Arc<Sandbox>, found: Found) -> Provided {
    let family = if found.provider == "script" { "script" } else { "ext" };
    let origin = ToolOrigin { provider: found.provider.clone(), original_name: None, note: sandbox.note() };
    match found.manifest {
        Ok(checked) => {
            let mut def =
                ToolDef::new(&found.name, family, checked.manifest.description.trim()).tags(&[family]).origin(origin);
            def.tags.extend(checked.manifest.tags.iter().cloned());
            def.schema = Arc::new(checked.schema.clone());
            let runner = ScriptRun { name: found.name, folder: found.folder, checked, sandbox: sandbox.clone() };
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
}

impl DynamicRun for ScriptRun {
    fn run(self: Arc<Self>, ctx: CallContext, args: Value) -> BoxFuture<Result<Value>> {
        Box::pin(async move {
            let workspace = ctx.kernel.workspaces().dir(ctx.agent.id)?;
            let run = sandbox::Run {
                tool: &self.name,
                agent: &ctx.agent.name,
                workspace: &workspace,
                folder: &self.folder,
                checked: &self.checked,
            };
            sandbox::run(&self.sandbox, run, &args).await
        })
    }
}

/// A tool whose manifest has errors: listed, excluded, never run.
struct Broken;

impl DynamicRun for Broken {
    fn run(self: Arc<Self>, _ctx: CallContext, _args: Value) -> BoxFuture<Result<Value>> {
        Box::pin(async { Err(crate::Error::unavailable("this tool's manifest has errors")) })
    }
}
