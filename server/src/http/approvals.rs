//! `/api/approvals`: calls that wait, or waited, for a person's decision (issue 48). Any
//! token reads them; only the CLI's token decides here (403 for API tokens, as for permanent
//! deletion). Operators decide on the dashboard's Approvals page.

use crate::routes::api;
use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::Method;
use kennel_kernel::Kernel;
use kennel_kernel::approval::{Approval, Approvals, Decision, Status};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::auth::Bearer;
use super::body::{JsonBody, QueryParams};
use super::error::ApiResult;
use crate::routes::{Action, Api};

pub fn routes() -> Api {
    Api::new()
        .route(api!(list_approvals), &[])
        .route(api!(get_approval), &[])
        .route(api!(approve), &[(Method::POST, Action::named("approval.approve"))])
        .route(api!(deny), &[(Method::POST, Action::named("approval.deny"))])
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ApprovalFilter {
    /// Only those in this state (`pending`, `approved`, `denied`, `expired`).
    status: Option<Status>,
    /// Only this agent's (its id or a running agent's name).
    agent: Option<String>,
    /// At most this many, newest first (1–500, default 100).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
}

/// Approvals, newest first.
#[utoipa::path(get, path = "/api/approvals", tag = "approvals", params(ApprovalFilter),
    responses((status = 200, description = "Approvals", body = Vec<Approval>),
        (status = 422, description = "No such agent, a bad status, or a limit out of 1–500")))]
async fn list_approvals(
    State(kernel): State<Kernel>,
    QueryParams(filter): QueryParams<ApprovalFilter>,
) -> ApiResult<Json<Vec<Approval>>> {
    let agent = match filter.agent {
        Some(a) => Some(kernel.agents().get(&a).map_err(|e| e.on_field("agent"))?.id),
        None => None,
    };
    let approvals = kernel.service::<Approvals>();
    Ok(Json(approvals.list(filter.status, agent, filter.limit.unwrap_or(100)).await?))
}

/// One approval: the call's exact arguments, the turn's provenance, the rule, the decision.
#[utoipa::path(get, path = "/api/approvals/{id}", tag = "approvals",
    params(("id" = String, Path, description = "The approval's id")),
    responses((status = 200, description = "The approval", body = Approval),
        (status = 404, description = "No such approval")))]
async fn get_approval(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Approval>> {
    Ok(Json(kernel.service::<Approvals>().get(&id).await?))
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
struct ApproveBody {
    /// Also let this agent's calls of the same tool under the same rule through for this many
    /// minutes (1–1,440). Unset: this call once.
    #[schema(minimum = 1, maximum = 1440)]
    for_minutes: Option<u32>,
    /// Why (at most 500 characters): the agent is told.
    #[schema(max_length = 500)]
    note: Option<String>,
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
struct DenyBody {
    /// Why (at most 500 characters): the agent is told.
    #[schema(max_length = 500)]
    note: Option<String>,
}

/// Approves a waiting call: its turn goes on and the call runs. The CLI's token only.
#[utoipa::path(post, path = "/api/approvals/{id}/approve", tag = "approvals",
    params(("id" = String, Path, description = "The approval's id")),
    request_body = ApproveBody,
    responses((status = 200, description = "The approval, decided", body = Approval),
        (status = 403, description = "An API token: approvals are decided by a person"),
        (status = 404, description = "No such approval"),
        (status = 409, description = "Decided or expired already"),
        (status = 422, description = "A bad for_minutes or note")))]
async fn approve(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ApproveBody>,
) -> ApiResult<Json<Approval>> {
    let decision = Decision { approve: true, for_minutes: body.for_minutes, note: body.note };
    Ok(Json(kernel.service::<Approvals>().decide(&id, &decision, &caller).await?))
}

/// Denies a waiting call: the model is told who denied it and why. The CLI's token only.
#[utoipa::path(post, path = "/api/approvals/{id}/deny", tag = "approvals",
    params(("id" = String, Path, description = "The approval's id")),
    request_body = DenyBody,
    responses((status = 200, description = "The approval, decided", body = Approval),
        (status = 403, description = "An API token: approvals are decided by a person"),
        (status = 404, description = "No such approval"),
        (status = 409, description = "Decided or expired already"),
        (status = 422, description = "A bad note")))]
async fn deny(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<DenyBody>,
) -> ApiResult<Json<Approval>> {
    let decision = Decision { approve: false, for_minutes: None, note: body.note };
    Ok(Json(kernel.service::<Approvals>().decide(&id, &decision, &caller).await?))
}
