//! `/api/agents/{id}/knowledge/…`: an agent's knowledge graph for operators: its entities and
//! relations page by page, and the walk its `knowledge_query` tool makes.

use crate::routes::api;
use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use kennel_kernel::error::FieldError;
use kennel_kernel::knowledge::Knowledge;
use kennel_kernel::knowledge::{Direction, Entity, Relation, Subgraph, Walk};
use kennel_kernel::page::NumberCursor;
use kennel_kernel::page::PageQuery;
use kennel_kernel::{Error, Kernel};
use serde::Deserialize;

use super::body::QueryParams;
use super::error::ApiResult;
use super::page::PageParams;
use crate::routes::Api;

pub fn routes() -> Api {
    Api::new().route(api!(entities), &[]).route(api!(relations), &[]).route(api!(query), &[])
}

/// The agent's entities, oldest first.
#[utoipa::path(get, path = "/api/agents/{id}/knowledge/entities", tag = "knowledge", params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)"), PageQuery, ("cursor" = inline(Option<NumberCursor>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last entity's row)")),
    responses((status = 200, description = "A page of the agent's entities", body = Vec<Entity>), (status = 404, description = "No such agent")))]
async fn entities(State(kernel): State<Kernel>, Path(id): Path<String>, page: PageParams) -> ApiResult<Response> {
    let agent = kernel.agents().get(&id)?;
    Ok(page.answer(kernel.service::<Knowledge>().entities(agent.id, &page.request).await?))
}

/// The agent's relations, oldest first, their ends by name.
#[utoipa::path(get, path = "/api/agents/{id}/knowledge/relations", tag = "knowledge", params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)"), PageQuery, ("cursor" = inline(Option<NumberCursor>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last relation's row)")),
    responses((status = 200, description = "A page of the agent's relations", body = Vec<Relation>), (status = 404, description = "No such agent")))]
async fn relations(State(kernel): State<Kernel>, Path(id): Path<String>, page: PageParams) -> ApiResult<Response> {
    let agent = kernel.agents().get(&id)?;
    Ok(page.answer(kernel.service::<Knowledge>().relations(agent.id, &page.request).await?))
}

/// Where a walk starts and how far it goes (its relation types are the repeated `relation`).
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct WalkQuery {
    /// The name of the entity to start from, matched exactly.
    start: String,
    /// How many relations away to go: 0 (the entity alone) to 4; default 2.
    #[param(minimum = 0, maximum = 4)]
    depth: Option<u32>,
    /// `both` (default: relations out of and into each entity reached), `out` or `in`.
    #[param(inline)]
    direction: Option<Direction>,
}

/// Walks the agent's graph breadth first from an entity, as `knowledge_query` does: the
/// entities reached with their distance, and the relations followed between them; at most
/// 200 entities and 1,000 relations (`truncated` says when there was more).
#[utoipa::path(get, path = "/api/agents/{id}/knowledge/query", tag = "knowledge", params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)"), WalkQuery,
        ("relation" = Option<Vec<String>>, Query, max_items = 32, description = "Follow only relations of these types (repeat it: `relation=uses&relation=owns`); every type when absent")),
    responses((status = 200, description = "What the walk reached", body = Subgraph), (status = 404, description = "No such agent, or no entity of that name in its graph")))]
async fn query(
    State(kernel): State<Kernel>,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<WalkQuery>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Subgraph>> {
    let agent = kernel.agents().get(&id)?;
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(raw.as_deref().unwrap_or_default()).unwrap_or_default();
    let relation_filter = pairs.into_iter().filter(|(k, _)| k == "relation").map(|(_, v)| v).collect();
    let walk = Walk { start: q.start, depth: q.depth, direction: q.direction.unwrap_or_default(), relation_filter };
    let subgraph = kernel.service::<Knowledge>().query(agent.id, &walk).await.map_err(|e| {
        // The tool's `relation_filter` is this query's `relation`.
        if !e.fields.iter().any(|f| f.field == "relation_filter") {
            return e;
        }
        let fields = e.fields.into_iter().map(|f| FieldError { field: "relation".into(), ..f }).collect();
        Error::invalid_fields(fields)
    })?;
    Ok(Json(subgraph))
}
