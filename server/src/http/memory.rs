//! `/api/agents/{id}/memory/…`: an operator's view of an agent's two memory stores, kept
//! apart as the tools keep them: `kv` (exact keys) and `semantic` (facts by meaning).
//! Operators are not bound by the agent's memory scopes, and looking (listing, searching)
//! does not refresh what the agent will remember.

use crate::routes::api;
use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::Method;
use axum::response::Response;
use kennel_kernel::Kernel;
use kennel_kernel::memory::kv::KvStore;
use kennel_kernel::memory::kv::{KvEntry, KvWrite};
use kennel_kernel::memory::semantic::SemanticMemory;
use kennel_kernel::memory::semantic::{AddOutcome, Memory, Scope, SearchOptions, Stats};
use kennel_kernel::page::PageQuery;
use kennel_kernel::page::{IdCursor, PositionCursor};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::auth::Bearer;
use super::body::{JsonBody, QueryParams};
use super::error::ApiResult;
use super::page::PageParams;
use crate::routes::{Action, Api};

pub fn routes() -> Api {
    Api::new()
        .route(api!(list_kv), &[])
        .route(
            api!(get_kv, put_kv, delete_kv),
            &[(Method::PUT, Action::named("memory.store")), (Method::DELETE, Action::named("memory.remove"))],
        )
        .route(api!(list_semantic, add_semantic), &[(Method::POST, Action::named("memory.add"))])
        .route(api!(search_semantic), &[])
        .route(api!(semantic_stats), &[])
        .route(api!(forget_semantic), &[(Method::DELETE, Action::named("memory.forget"))])
}

/// The agent's keys with their values, in byte order of the keys.
#[utoipa::path(get, path = "/api/agents/{id}/memory/kv", tag = "memory",
    params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)"), PageQuery, ("cursor" = inline(Option<PositionCursor>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last key's position)")),
    responses((status = 200, description = "A page of the agent's key/value memory", body = Vec<KvEntry>), (status = 404, description = "No such agent")))]
async fn list_kv(State(kernel): State<Kernel>, Path(id): Path<String>, page: PageParams) -> ApiResult<Response> {
    let agent = kernel.agents().get(&id)?;
    Ok(page.answer(kernel.service::<KvStore>().entries(agent.id, &page.request).await?))
}

/// The value under exactly `key`.
#[utoipa::path(get, path = "/api/agents/{id}/memory/kv/{key}", tag = "memory",
    params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)"), ("key" = String, Path, description = "The exact key (percent-encoded)")),
    responses((status = 200, description = "The entry", body = KvEntry), (status = 404, description = "No such agent, or nothing under this key"),
        (status = 422, description = "The key is empty or longer than 256 bytes")))]
async fn get_kv(State(kernel): State<Kernel>, Path((id, key)): Path<(String, String)>) -> ApiResult<Json<KvEntry>> {
    let agent = kernel.agents().get(&id)?;
    let entry = kernel.service::<KvStore>().recall(agent.id, &key).await?;
    Ok(Json(entry.ok_or_else(|| kennel_kernel::Error::not_found("nothing is stored under this key"))?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct KvBody {
    /// At most 65,536 bytes.
    value: String,
}

#[derive(Serialize, ToSchema)]
struct KvWritten {
    key: String,
    written: KvWrite,
}

/// Stores `value` under `key`, replacing what the key held.
#[utoipa::path(put, path = "/api/agents/{id}/memory/kv/{key}", tag = "memory",
    params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)"), ("key" = String, Path, description = "The exact key (percent-encoded)")),
    request_body = KvBody,
    responses((status = 200, description = "Whether the key was new or replaced", body = KvWritten), (status = 404, description = "No such agent"),
        (status = 422, description = "The key or value is out of bounds"), (status = 429, description = "The agent holds the most keys it may")))]
async fn put_kv(
    State(kernel): State<Kernel>,
    Path((id, key)): Path<(String, String)>,
    JsonBody(body): JsonBody<KvBody>,
) -> ApiResult<Json<KvWritten>> {
    let agent = kernel.agents().get(&id)?;
    let written = kernel.service::<KvStore>().store(agent.id, &key, &body.value, &[]).await?;
    Ok(Json(KvWritten { key, written }))
}

#[derive(Serialize, ToSchema)]
struct KvRemoved {
    key: String,
    removed: bool,
}

/// Removes `key` (removing a key that is not there changes nothing).
#[utoipa::path(delete, path = "/api/agents/{id}/memory/kv/{key}", tag = "memory",
    params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)"), ("key" = String, Path, description = "The exact key (percent-encoded)")),
    responses((status = 200, description = "Whether the key was there", body = KvRemoved), (status = 404, description = "No such agent"),
        (status = 422, description = "The key is empty or longer than 256 bytes")))]
async fn delete_kv(
    State(kernel): State<Kernel>,
    Path((id, key)): Path<(String, String)>,
) -> ApiResult<Json<KvRemoved>> {
    let agent = kernel.agents().get(&id)?;
    let removed = kernel.service::<KvStore>().remove(agent.id, &key).await?;
    Ok(Json(KvRemoved { key, removed }))
}

/// The agent's live semantic memories, newest first.
#[utoipa::path(get, path = "/api/agents/{id}/memory/semantic", tag = "memory",
    params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)"), PageQuery, ("cursor" = inline(Option<IdCursor>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last memory's id)")),
    responses((status = 200, description = "A page of memories", body = Vec<Memory>), (status = 404, description = "No such agent"),
        (status = 502, description = "The embeddings provider failed while the store was embedded again"),
        (status = 503, description = "The semantic store is switched off ([proactive_memory] enabled = false)")))]
async fn list_semantic(State(kernel): State<Kernel>, Path(id): Path<String>, page: PageParams) -> ApiResult<Response> {
    let agent = kernel.agents().get(&id)?;
    Ok(page.answer(
        kernel
            .optional::<SemanticMemory>()
            .ok_or_else(kennel_kernel::memory::semantic::switched_off)?
            .list(agent.id, &page.request)
            .await?,
    ))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct AddBody {
    /// The fact (or a few, one per sentence); at most 8 KiB.
    content: String,
}

/// Adds facts for the agent through the extractor, as `memory_semantic_add` does (recorded
/// as the operator's): the answer says what was written, "nothing" included.
#[utoipa::path(post, path = "/api/agents/{id}/memory/semantic", tag = "memory",
    params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)")),
    request_body = AddBody,
    responses((status = 200, description = "What was written and what was not", body = AddOutcome), (status = 404, description = "No such agent"),
        (status = 422, description = "The content is empty or too long"), (status = 429, description = "The agent holds the most memories it may"),
        (status = 502, description = "The extraction model or the embeddings provider failed; nothing was written"),
        (status = 503, description = "The semantic store is switched off, or a provider it needs has no API key")))]
async fn add_semantic(
    State(kernel): State<Kernel>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<AddBody>,
) -> ApiResult<Json<AddOutcome>> {
    let agent = kernel.agents().get(&id)?;
    // The extraction is for this agent's memory: its model calls count against its budget.
    let metered = kennel_kernel::memory::semantic::metered_for(
        kernel.services().need(),
        kernel.clock().clone(),
        agent.id,
        None,
        None,
    );
    Ok(Json(
        kernel
            .optional::<SemanticMemory>()
            .ok_or_else(kennel_kernel::memory::semantic::switched_off)?
            .add(agent.id, &body.content, "operator", Scope::everything(), &metered)
            .await?,
    ))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct SearchQuery {
    /// What to look for.
    #[param(min_length = 1)]
    q: String,
    /// How many hits at most (1–50, default 10).
    #[param(minimum = 1, maximum = 50)]
    limit: Option<usize>,
    /// Leave out memories whose confidence decayed below this (0–1).
    #[param(minimum = 0.0, maximum = 1.0)]
    min_confidence: Option<f64>,
}

/// Searches the agent's semantic memory as the agent would, without refreshing what it finds.
#[utoipa::path(get, path = "/api/agents/{id}/memory/semantic/search", tag = "memory",
    params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)"), SearchQuery),
    responses((status = 200, description = "Hits, best first, with relevance and confidence", body = Vec<Memory>), (status = 404, description = "No such agent"),
        (status = 422, description = "A parameter is out of range"), (status = 502, description = "The embeddings provider failed"),
        (status = 503, description = "The semantic store is switched off, or its embeddings provider has no API key")))]
async fn search_semantic(
    State(kernel): State<Kernel>,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<SearchQuery>,
) -> ApiResult<Json<Vec<Memory>>> {
    let agent = kernel.agents().get(&id)?;
    let options = SearchOptions::for_operator(q.limit, q.min_confidence)?;
    Ok(Json(
        kernel
            .optional::<SemanticMemory>()
            .ok_or_else(kennel_kernel::memory::semantic::switched_off)?
            .search(agent.id, &q.q, &options, &|_| true)
            .await?,
    ))
}

/// Counts by tier and category, and the store's switches; `enabled: false` on a daemon whose
/// store is switched off.
#[utoipa::path(get, path = "/api/agents/{id}/memory/semantic/stats", tag = "memory",
    params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)")),
    responses((status = 200, description = "The agent's semantic memory in numbers", body = Stats), (status = 404, description = "No such agent"),
        (status = 502, description = "The embeddings provider failed while the store was embedded again")))]
async fn semantic_stats(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Stats>> {
    let agent = kernel.agents().get(&id)?;
    Ok(Json(match kernel.optional::<SemanticMemory>().ok_or_else(kennel_kernel::memory::semantic::switched_off) {
        Ok(memory) => memory.stats(agent.id, &|_| true).await?,
        Err(_) => Stats::switched_off(),
    }))
}

/// Withdraws a memory: no search or recall returns it again.
#[utoipa::path(delete, path = "/api/agents/{id}/memory/semantic/{memory_id}", tag = "memory",
    params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)"), ("memory_id" = Uuid, Path, description = "The memory's id")),
    responses((status = 200, description = "The memory as it was", body = Memory), (status = 404, description = "No such agent, or no live memory of it with this id"),
        (status = 422, description = "The memory id is not a UUID"), (status = 503, description = "The semantic store is switched off")))]
async fn forget_semantic(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path((id, memory_id)): Path<(String, String)>,
) -> ApiResult<Json<Memory>> {
    let agent = kernel.agents().get(&id)?;
    let memory_id = Uuid::parse_str(&memory_id)
        .map_err(|_| kennel_kernel::Error::invalid("not a memory id (a UUID)").with_field("memory_id"))?;
    Ok(Json(
        kernel
            .optional::<SemanticMemory>()
            .ok_or_else(kennel_kernel::memory::semantic::switched_off)?
            .forget(agent.id, memory_id, &caller.audit_label(), Scope::everything())
            .await?,
    ))
}
