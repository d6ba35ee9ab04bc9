//! Canvases: every agent's latest (`/canvas`), one version with the agent's others
//! (`/canvas/{agent}/{version}`), the version's HTML alone for the sandboxed frame
//! (`/canvas/{agent}/{version}/frame`, with the canvas CSP), and the agent page's live feed
//! of new versions.

use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use kennel_app::pages::canvas::{self, Named, VersionPage};
use kennel_app::{Nav, Paging};
use kennel_kernel::{Error, Kernel};

use super::headers::canvas_policy;
use super::{Cursor, Operator, PageResult, html, meta, next_page};

/// Agents shown on the Canvases page; versions on a version page.
const LATEST_SHOWN: u32 = 60;
const VERSIONS_SHOWN: u32 = 50;

pub async fn list(State(kernel): State<Kernel>, Extension(op): Extension<Operator>) -> PageResult {
    let latest = kernel.canvases().latest_of_each(LATEST_SHOWN).await?;
    let named = latest
        .into_iter()
        .map(|canvas| {
            let agent = kernel.agents().get(&canvas.agent_id.to_string()).map(|a| a.name.clone());
            Named { agent: agent.unwrap_or_else(|_| "a removed agent".into()), canvas }
        })
        .collect();
    Ok(html(StatusCode::OK, canvas::render_list(meta(&op, "Canvases", Nav::Canvases, None), named)))
}

pub async fn version(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path((agent, version)): Path<(String, String)>,
    Query(cursor): Query<Cursor>,
) -> PageResult {
    let agent = kernel.agents().get(&agent)?;
    let (canvas, _) = kernel.canvases().html(agent.id, parse_version(&version)?).await?;
    let versions = kernel.canvases().versions(agent.id, &cursor.page(VERSIONS_SHOWN)).await?;
    let path = canvas.page_path();
    let page = VersionPage {
        paging: Paging { total: versions.total, next: next_page(&path, &[], versions.next.as_deref()) },
        versions: versions.items,
        agent_id: agent.id.to_string(),
        shown: Named { agent: agent.name.clone(), canvas },
    };
    let title = format!("{} · canvas", agent.name);
    Ok(html(StatusCode::OK, canvas::render_version(meta(&op, title, Nav::Canvases, None), page)))
}

/// The version's HTML as the agent wrote it, under the canvas policy (sandboxed, framed only
/// by dashboard pages); network only if the agent's type says `canvas_network = true`.
pub async fn frame(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path((agent, version)): Path<(String, String)>,
) -> PageResult {
    let agent = kernel.agents().get(&agent)?;
    let (_, body) = kernel.canvases().html(agent.id, parse_version(&version)?).await?;
    let res = ([(CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response();
    Ok(canvas_policy(res, agent.manifest.canvas_network))
}

/// New versions of the agent's canvas as they are presented.
pub async fn live(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(agent): Path<String>,
) -> Result<Response, super::PageError> {
    let agent = kernel.agents().get(&agent)?;
    Ok(crate::live::canvas_stream(&kernel, agent.id).into_response())
}

fn parse_version(text: &str) -> Result<u32, Error> {
    text.parse().map_err(|_| Error::not_found(format!("no canvas version `{text}`: versions are numbers from 1")))
}
