//! `/agents/{id}/knowledge`: an agent's knowledge graph, the whole of it or one entity's
//! neighbourhood (`?entity=NAME&depth=1|2`), read from the same service as its tools.

use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use kennel_app::pages::knowledge::{self, KnowledgePage, View};
use kennel_app::{Flash, Paging};
use kennel_kernel::knowledge::Knowledge;
use kennel_kernel::knowledge::Walk;
use kennel_kernel::{ErrorKind, Kernel};
use serde::Deserialize;
use uuid::Uuid;

use super::{Cursor, Operator, PageResult, html, meta, next_page};
use crate::routes::{Pages, get};

pub fn routes() -> Pages {
    Pages::new().route("/agents/{id}/knowledge", get(page))
}

/// The entities drawn in the picture of a whole graph, the relations between them, and the
/// entities listed per page under it.
const DRAWN: u32 = 60;
const DRAWN_RELATIONS: u32 = 400;
const LISTED: u32 = 100;

#[derive(Debug, Default, Deserialize)]
pub struct Shown {
    entity: Option<String>,
    /// `2` for two relations away; anything else is one.
    depth: Option<String>,
}

pub async fn page(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Query(shown): Query<Shown>,
    Query(cursor): Query<Cursor>,
) -> PageResult {
    let agent = kernel.agents().get(&id)?;
    let title = format!("{} · knowledge", agent.name);
    let mut status = StatusCode::OK;
    let mut flash = None;
    if let Some(name) = shown.entity.filter(|e| !e.is_empty()) {
        let depth = if shown.depth.as_deref() == Some("2") { 2 } else { 1 };
        let walk = Walk { start: name, depth: Some(depth), ..Walk::default() };
        match kernel.service::<Knowledge>().query(agent.id, &walk).await {
            Ok(subgraph) => {
                let page = KnowledgePage {
                    agent_id: agent.id.to_string(),
                    agent_name: agent.name.clone(),
                    view: View::Entity { subgraph, depth },
                };
                return Ok(html(
                    status,
                    knowledge::render(meta(&op, title, kennel_app::pages::agents::SECTION, None), page),
                ));
            }
            // A name typed in the search box that is not there: the whole graph, saying so.
            Err(e) if e.kind == ErrorKind::NotFound => {
                status = StatusCode::NOT_FOUND;
                flash = Some(Flash::Error(e.message));
            }
            Err(e) => return Err(e.into()),
        }
    }
    let view = whole(&kernel, agent.id, &cursor).await?;
    let page = KnowledgePage { agent_id: agent.id.to_string(), agent_name: agent.name.clone(), view };
    Ok(html(status, knowledge::render(meta(&op, title, kennel_app::pages::agents::SECTION, flash), page)))
}

async fn whole(kernel: &Kernel, agent: Uuid, cursor: &Cursor) -> kennel_kernel::Result<View> {
    let overview = kernel.service::<Knowledge>().overview(agent, DRAWN, DRAWN_RELATIONS).await?;
    let entities = kernel.service::<Knowledge>().entities(agent, &cursor.page(LISTED)).await?;
    let path = format!("/agents/{agent}/knowledge");
    let paging = Paging { total: entities.total, next: next_page(&path, &[], entities.next.as_deref()) };
    Ok(View::Whole { overview, entities: entities.items, paging })
}
