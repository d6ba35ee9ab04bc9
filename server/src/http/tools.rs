//! `/api/tools` (the registry), `/api/audit` (the tool-call log) and `/api/audit/actions`
//! (what operators and API tokens changed).

use crate::routes::api;
use axum::extract::State;
use axum::response::Response;
use kennel_kernel::Kernel;
use kennel_kernel::actions::{ActionFilter, ActionRecord};
use kennel_kernel::page::PageQuery;
use kennel_kernel::page::{NumberCursor, PositionCursor};
use kennel_kernel::tool::audit::{AuditFilter, AuditRecord};
use kennel_kernel::tool::{Availability, ToolDef};
use serde::Serialize;
use utoipa::ToSchema;

use super::body::QueryParams;
use super::error::ApiResult;
use super::page::PageParams;
use crate::routes::Api;

pub fn routes() -> Api {
    Api::new().route(api!(list_tools), &[]).route(api!(list_audit), &[]).route(api!(list_actions), &[])
}

/// A tool as the registry holds it, with whether this daemon offers it.
#[derive(Serialize, ToSchema)]
struct ToolEntry {
    #[serde(flatten)]
    #[schema(value_type = ToolDef)]
    def: std::sync::Arc<ToolDef>,
    availability: Availability,
}

/// Every tool definition: family, tags, description, argument schema and availability.
#[utoipa::path(get, path = "/api/tools", tag = "tools", params(PageQuery, ("cursor" = inline(Option<PositionCursor>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last tool's position)")),
    responses((status = 200, description = "A page of tools, in registration order", body = Vec<ToolEntry>)))]
async fn list_tools(State(kernel): State<Kernel>, page: PageParams) -> ApiResult<Response> {
    let tools = kernel.tools().page(&page.request)?.map(|(def, availability)| ToolEntry { def, availability });
    Ok(page.answer(tools))
}

/// Recorded tool calls, newest first, filtered by agent (name or id) and tool name.
#[utoipa::path(get, path = "/api/audit", tag = "tools", params(AuditFilter, PageQuery, ("cursor" = inline(Option<NumberCursor>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last record's id)")),
    responses((status = 200, description = "A page of audit records, newest first", body = Vec<AuditRecord>), (status = 404, description = "No such agent")))]
async fn list_audit(
    State(kernel): State<Kernel>,
    QueryParams(filter): QueryParams<AuditFilter>,
    page: PageParams,
) -> ApiResult<Response> {
    Ok(page.answer(kernel.audit().list(&filter, &page.request).await?))
}

/// Recorded operator actions, newest first: every change made from the dashboard or with an
/// API token (refusals too), filtered by actor and action.
#[utoipa::path(get, path = "/api/audit/actions", tag = "tools", params(ActionFilter, PageQuery, ("cursor" = inline(Option<NumberCursor>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last record's id)")),
    responses((status = 200, description = "A page of operator actions, newest first", body = Vec<ActionRecord>)))]
async fn list_actions(
    State(kernel): State<Kernel>,
    QueryParams(filter): QueryParams<ActionFilter>,
    page: PageParams,
) -> ApiResult<Response> {
    Ok(page.answer(kernel.actions().list(&filter, &page.request).await?))
}
