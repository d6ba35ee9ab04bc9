//! `/api/workflows`: stored workflows, their runs, and running one.

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::{StatusCode, header::LOCATION};
use axum::response::{IntoResponse, Response};
use kennel_kernel::Kernel;
use kennel_kernel::tool::Caller;
use kennel_kernel::workflow::{RunOrigin, Workflow, WorkflowInput, WorkflowRun, run};
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::TokenName;
use super::body::JsonBody;
use super::error::{ApiResult, ErrorBody};

pub fn router() -> OpenApiRouter<Kernel> {
    OpenApiRouter::new()
        .routes(routes!(list_workflows, create_workflow))
        .routes(routes!(get_workflow, replace_workflow, delete_workflow))
        .routes(routes!(list_runs, start_run))
}

/// Every workflow, by name.
#[utoipa::path(get, path = "/api/workflows", tag = "workflows", responses((status = 200, body = Vec<Workflow>)))]
async fn list_workflows(State(kernel): State<Kernel>) -> ApiResult<Json<Vec<Workflow>>> {
    Ok(Json(kernel.workflows().list().await?))
}

/// Stores a workflow: ordered steps, each an agent (or agent type) and a prompt template.
#[utoipa::path(post, path = "/api/workflows", tag = "workflows", request_body = WorkflowInput,
    responses((status = 201, body = Workflow), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn create_workflow(
    State(kernel): State<Kernel>,
    JsonBody(input): JsonBody<WorkflowInput>,
) -> ApiResult<Response> {
    let wf = kernel.workflows().create(input).await?;
    let location = format!("/api/workflows/{}", wf.id);
    Ok((StatusCode::CREATED, [(LOCATION, location)], Json(wf)).into_response())
}

/// One workflow, by id or name.
#[utoipa::path(get, path = "/api/workflows/{id}", tag = "workflows", params(("id" = String, Path)),
    responses((status = 200, body = Workflow), (status = 404, body = ErrorBody)))]
async fn get_workflow(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Workflow>> {
    Ok(Json(kernel.workflows().get(&id).await?))
}

/// Replaces a workflow's name, description and steps. Past runs stay.
#[utoipa::path(put, path = "/api/workflows/{id}", tag = "workflows", params(("id" = String, Path)), request_body = WorkflowInput,
    responses((status = 200, body = Workflow), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn replace_workflow(
    State(kernel): State<Kernel>,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<WorkflowInput>,
) -> ApiResult<Json<Workflow>> {
    Ok(Json(kernel.workflows().replace(&id, input).await?))
}

/// Deletes a workflow. Its run history is kept.
#[utoipa::path(delete, path = "/api/workflows/{id}", tag = "workflows", params(("id" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
async fn delete_workflow(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<StatusCode> {
    kernel.workflows().delete(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The workflow's runs, newest first, with each step's output and timing.
#[utoipa::path(get, path = "/api/workflows/{id}/runs", tag = "workflows", params(("id" = String, Path)),
    responses((status = 200, body = Vec<WorkflowRun>), (status = 404, body = ErrorBody)))]
async fn list_runs(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Vec<WorkflowRun>>> {
    Ok(Json(kernel.workflows().runs(&id).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct RunBody {
    #[serde(default)]
    #[schema(value_type = Object)]
    inputs: serde_json::Value,
}

/// Runs the workflow now and answers when it has finished (a failed step ends the run with
/// `status: "failed"`).
#[utoipa::path(post, path = "/api/workflows/{id}/runs", tag = "workflows", params(("id" = String, Path)), request_body = RunBody,
    responses((status = 200, body = WorkflowRun), (status = 404, body = ErrorBody)))]
async fn start_run(
    State(kernel): State<Kernel>,
    Extension(TokenName(token)): Extension<TokenName>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RunBody>,
) -> ApiResult<Json<WorkflowRun>> {
    let origin = RunOrigin { caller: Caller::Token(token), depth: 0, chain: Vec::new() };
    Ok(Json(run(&kernel, &id, body.inputs, origin).await?))
}
