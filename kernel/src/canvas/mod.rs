//! Canvases (`canvas_present`, family `media`): HTML an agent presents to the operator. Each
//! call stores a new version of the agent's canvas; older versions stay. The dashboard shows
//! them only inside a sandboxed frame served from a route of its own with a sandboxing CSP
//! (`server/src/dashboard/canvas.rs`): agent HTML is hostile, and nothing here cleans it.
//!
//! # Design notes
//!
//! ## Layout
//!
//! `canvas_present` (family `media`): `Canvases` (present: a new version per call, `[canvas]
//! max_bytes`; versions, latest, latest of each agent; a broadcast of each new version for the
//! pages open on it), `store.rs` (`canvases`).
//!
//! ## Quota
//!
//! - **Canvases** (`canvas/`): `[canvas] max_versions` (50) and `max_agent_bytes` (16 MiB) per
//!   agent; the insert drops the oldest versions past either in the same transaction.
//!   **Decision:** drop, not refuse: a live canvas updated often is the normal use.

pub(crate) mod config;
mod store;

pub use config::CanvasConfig;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::broadcast;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::Db;
use crate::error::{Error, Result};
use crate::family::{Family, Services};
use crate::page::{Page, PageRequest};
use crate::tool::{CallContext, Registry, Tool, ToolDef};

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "canvas",
    open: |s| {
        s.provide(Canvases::new(s.get::<Db>().clone(), s.config().canvas.clone()));
        Ok(())
    },
    register,
};

/// What this family's tools reach, taken from the kernel's services when they are registered.
#[derive(Clone)]
pub(super) struct Uses {
    canvases: Arc<Canvases>,
}

pub(crate) fn register(r: &mut Registry, services: &Services) {
    let uses = Uses { canvases: services.need() };
    r.add(CanvasPresent(uses.clone()));
}

/// The longest title, in characters.
const MAX_TITLE: usize = 200;
/// The title of a canvas presented without one.
const UNTITLED: &str = "Canvas";

/// One version of an agent's canvas, without its HTML.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Canvas {
    pub agent_id: Uuid,
    /// 1 for the agent's first canvas, then one more for each.
    pub version: u32,
    pub title: String,
    /// The HTML's size in bytes.
    pub bytes: u64,
    pub created_at: String,
}

impl Canvas {
    /// The dashboard page that shows this version.
    pub fn page_path(&self) -> String {
        format!("/canvas/{}/{}", self.agent_id, self.version)
    }

    /// The route that serves this version's HTML alone, for the sandboxed frame.
    pub fn frame_path(&self) -> String {
        format!("/canvas/{}/{}/frame", self.agent_id, self.version)
    }
}

/// Every agent's canvases, and the news of each new version (for the pages open on them).
pub struct Canvases {
    db: Db,
    limits: CanvasConfig,
    presented: broadcast::Sender<Canvas>,
}

/// A presented version and how many older ones it pushed out of what an agent may keep.
pub struct Presented {
    pub canvas: Canvas,
    pub dropped: u64,
}

impl Canvases {
    pub(crate) fn new(db: Db, limits: CanvasConfig) -> Canvases {
        Canvases { db, limits, presented: broadcast::channel(64).0 }
    }

    /// Stores `html` as the agent's next version, drops the oldest versions past `[canvas]
    /// max_versions` and `max_agent_bytes`, and tells the pages watching.
    pub async fn present(&self, agent: Uuid, html: &str, title: Option<&str>) -> Result<Presented> {
        if crate::text::is_blank(html) {
            return Err(Error::invalid("the canvas is empty: send the HTML to show").on_field("html"));
        }
        if html.len() as u64 > self.limits.max_bytes {
            return Err(Error::invalid(format!(
                "the canvas is {} bytes; [canvas] max_bytes is {}: send less HTML (small inline images, \
                 no embedded fonts), or ask the operator to raise the limit",
                html.len(),
                self.limits.max_bytes
            ))
            .on_field("html"));
        }
        let title = checked_title(title)?;
        let kept = store::Kept { versions: self.limits.max_versions, bytes: self.limits.max_agent_bytes };
        let (canvas, dropped) = store::insert(&self.db, agent, title, html, kept).await?;
        let _ = self.presented.send(canvas.clone()); // no page open is no error
        Ok(Presented { canvas, dropped })
    }

    /// A version with its HTML.
    pub async fn html(&self, agent: Uuid, version: u32) -> Result<(Canvas, String)> {
        store::html(&self.db, agent, version)
            .await?
            .ok_or_else(|| Error::not_found(format!("this agent has no canvas version {version}")))
    }

    /// A page of the agent's versions, newest first.
    pub async fn versions(&self, agent: Uuid, page: &PageRequest) -> Result<Page<Canvas>> {
        store::versions(&self.db, agent, page).await
    }

    /// The agent's latest version, if it presented any.
    pub async fn latest(&self, agent: Uuid) -> Result<Option<Canvas>> {
        Ok(store::versions(&self.db, agent, &PageRequest::first(1)).await?.items.into_iter().next())
    }

    /// The latest version of every agent that presented one, most recent first.
    pub async fn latest_of_each(&self, limit: u32) -> Result<Vec<Canvas>> {
        store::latest_of_each(&self.db, limit).await
    }

    /// Every new version from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Canvas> {
        self.presented.subscribe()
    }
}

fn checked_title(title: Option<&str>) -> Result<&str> {
    let title = title.map(str::trim).filter(|t| !t.is_empty()).unwrap_or(UNTITLED);
    if !crate::text::is_title(title, MAX_TITLE) {
        return Err(Error::invalid(format!(
            "a title is at most {MAX_TITLE} characters on one line, without bidirectional controls"
        ))
        .on_field("title"));
    }
    Ok(title)
}

/// `canvas_present(html, title?)`.
pub struct CanvasPresent(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CanvasPresentArgs {
    /// A whole HTML document (or fragment) with its styles and scripts inline. It runs in a
    /// sandbox: no network (unless the operator allows it), no access to the dashboard.
    pub html: String,
    /// A short title for the version list.
    pub title: Option<String>,
}

impl Tool for CanvasPresent {
    type Args = CanvasPresentArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "canvas_present",
            "media",
            "Show the operator an interactive HTML canvas in the dashboard (a new version each call; inline scripts and styles run in a sandbox).",
        )
        .tags(&["canvas", "html", "render", "present", "dashboard", "chart", "visualize"])
        // The dashboard calls them Canvases: `canvas.*` is what an operator writes.
        .also_in("canvas")
    }

    async fn run(&self, ctx: CallContext, args: CanvasPresentArgs) -> Result<Value> {
        let Presented { canvas, dropped } =
            self.0.canvases.present(ctx.agent.id, &args.html, args.title.as_deref()).await?;
        let mut answer = json!({
            "version": canvas.version,
            "title": canvas.title,
            "bytes": canvas.bytes,
            "url": canvas.page_path(),
        });
        if dropped > 0 {
            answer["dropped_versions"] = json!(dropped);
            answer["note"] = json!(format!(
                "{dropped} older version(s) were dropped: an agent keeps at most [canvas] max_versions versions and max_agent_bytes bytes of them"
            ));
        }
        Ok(answer)
    }
}
