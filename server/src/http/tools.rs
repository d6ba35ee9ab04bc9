//! `/api/tools` (the registry) and `/api/audit` (the tool-call log).

use axum::Json;
use axum::extract::State;
use kennel_kernel::Kernel;
use kennel_kernel::tool::audit::{AuditFilter, AuditRecord};
use kennel_kernel::tool::{Availability, ToolDef};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::body::QueryParams;
use super::error::ApiResult;

pub fn router() -> OpenApiRouter<Kernel> {
    OpenApiRouter::new().routes(routes!(list_tools)).routes(routes!(list_audit))
}

#[derive(Serialize, ToSchema)]
struct ToolEntry<'a> {
    #[serde(flatten)]
    def: &'a ToolDef,
    availability: &'a Availability,
}

/// Every tool definition: family, tags, description, argument schema and availability.
#[utoipa::path(get, path = "/api/tools", tag = "tools", responses((status = 200, body = Vec<ToolEntry>)))]
async fn list_tools(State(kernel): State<Kernel>) -> Json<serde_json::Value> {
    let entries: Vec<ToolEntry<'_>> =
        kernel.tools().all().map(|(def, availability)| ToolEntry { def, availability }).collect();
    Json(serde_json::to_value(entries).expect("tool definitions serialise"))
}

/// Recorded tool calls, newest first, filtered by agent id and tool name.
#[utoipa::path(get, path = "/api/audit", tag = "tools", params(AuditFilter),
    responses((status = 200, body = Vec<AuditRecord>)))]
async fn list_audit(
    State(kernel): State<Kernel>,
    QueryParams(filter): QueryParams<AuditFilter>,
) -> ApiResult<Json<Vec<AuditRecord>>> {
    Ok(Json(kernel.audit().list(&filter).await?))
}
