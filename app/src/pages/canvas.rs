//! `/canvas` (every agent's latest canvas) and `/canvas/{agent}/{version}` (one version, with
//! the agent's others). The HTML itself is only ever inside a [`CanvasFrame`].

use kennel_kernel::canvas::Canvas;
use leptos::prelude::*;

use crate::shell::{PageMeta, Section, Shell};
use crate::widgets::{CanvasFrame, Pager, Paging, human_bytes, short_time};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/canvas", "Canvases");

/// A canvas with the name of the agent that presented it.
pub struct Named {
    pub canvas: Canvas,
    pub agent: String,
}

/// `kept_days`: `[retention] canvas_versions_days`.
pub fn render_list(meta: PageMeta, latest: Vec<Named>, kept_days: u64) -> String {
    let empty = latest.is_empty().then(|| {
        view! { <p class="empty">"No agent has presented a canvas yet. Grant an agent "<code>"canvas_present"</code>" and ask it to show you something."</p> }
    });
    let cards = latest
        .into_iter()
        .map(|Named { canvas, agent }| {
            let caption = format!("{agent} · v{} · {}", canvas.version, short_time(&canvas.created_at));
            view! {
                <section class="card canvas-card">
                    <h2><a href=canvas.page_path()>{canvas.title.clone()}</a></h2>
                    <p class="hint">{caption}</p>
                    <CanvasFrame canvas/>
                </section>
            }
        })
        .collect::<Vec<_>>();
    crate::document(
        view! {
            <Shell meta>
                <h1>"Canvases"</h1>
                <p class="hint">"The latest canvas of every agent. Each runs in a sandbox: its scripts cannot reach this dashboard."</p>
                {crate::widgets::kept_for("Older versions (never an agent's latest)", "canvas_versions_days", kept_days)}
                {empty}
                <div class="canvas-grid">{cards}</div>
            </Shell>
        }
        .to_html(),
    )
}

pub struct VersionPage {
    pub shown: Named,
    pub agent_id: String,
    /// A page of the agent's versions, newest first.
    pub versions: Vec<Canvas>,
    pub paging: Paging,
}

pub fn render_version(meta: PageMeta, page: VersionPage) -> String {
    let current = page.shown.canvas.version;
    let shown_versions = page.versions.len();
    let versions = version_items(&page.versions, Some(current));
    let c = page.shown.canvas;
    let caption = format!("v{} · {} · {}", c.version, short_time(&c.created_at), human_bytes(c.bytes));
    crate::document(
        view! {
            <Shell meta>
                <h1>{c.title.clone()}</h1>
                <p class="hint">"By agent "<a href=format!("/agents/{}#canvas", page.agent_id)>{page.shown.agent}</a>" · "{caption}</p>
                <div class="columns">
                    <section class="card"><CanvasFrame canvas=c/></section>
                    <section class="card">
                        <h2>"Versions"</h2>
                        <ol class="versions">{versions}</ol>
                        <Pager shown=shown_versions paging=page.paging/>
                    </section>
                </div>
            </Shell>
        }
        .to_html(),
    )
}

/// The list items of a version list, `current` marked.
pub fn version_items(versions: &[Canvas], current: Option<u32>) -> Vec<impl IntoView + use<>> {
    versions
        .iter()
        .map(|v| {
            let is = if Some(v.version) == current { "page" } else { "false" };
            view! {
                <li>
                    <a href=v.page_path() aria-current=is>{format!("v{} · {}", v.version, v.title)}</a>
                    <span class="hint">{format!(" {}", short_time(&v.created_at))}</span>
                </li>
            }
        })
        .collect()
}
