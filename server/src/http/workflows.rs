//! `/api/workflows`: stored workflows, their runs, and running one.

use crate::routes::api;
use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::Method;
use axum::http::{StatusCode, header::LOCATION};
use axum::response::{IntoResponse, Response};
use kennel_kernel::Kernel;
use kennel_kernel::agent::Name;
use kennel_kernel::page::IdCursor;
use kennel_kernel::page::PageQuery;
use kennel_kernel::workflow::Workflows;
use kennel_kernel::workflow::{RunOrigin, Workflow, WorkflowInput, WorkflowRun};
use serde::Deserialize;
use utoipa::ToSchema;

use super::auth::Bearer;
use super::body::JsonBody;
use super::error::ApiResult;
use super::page::PageParams;
use crate::routes::{Action, Api};

pub fn routes() -> Api {
    Api::new()
        .route(api!(list_workflows, create_workflow), &[(Method::POST, Action::named("workflow.create"))])
        .route(
            api!(get_workflow, replace_workflow, delete_workflow),
            &[(Method::PUT, Action::named("workflow.update")), (Method::DELETE, Action::named("workflow.delete"))],
        )
        .route(api!(list_runs, start_run), &[(Method::POST, Action::named("workflow.run"))])
}

/// Every workflow, by name.
#[utoipa::path(get, path = "/api/workflows", tag = "workflows", params(PageQuery, ("cursor" = inline(Option<Name>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last workflow's name)")),
    responses((status = 200, description = "A page of workflows, by name", body = Vec<Workflow>)))]
async fn list_workflows(State(kernel): State<Kernel>, page: PageParams) -> ApiResult<Response> {
    Ok(page.answer(kernel.service::<Workflows>().list(&page.request).await?))
}

/// Stores a workflow: ordered steps, each an agent (or agent type) and a prompt template.
#[utoipa::path(post, path = "/api/workflows", tag = "workflows", request_body = WorkflowInput,
    responses(
        (status = 201, description = "The stored workflow", body = Workflow, headers(("location" = String, description = "Its URL"))),
        (status = 409, description = "A workflow of that name exists"),
    ))]
async fn create_workflow(
    State(kernel): State<Kernel>,
    JsonBody(input): JsonBody<WorkflowInput>,
) -> ApiResult<Response> {
    let wf = kernel.service::<Workflows>().create(input).await?;
    let location = format!("/api/workflows/{}", wf.id);
    Ok((StatusCode::CREATED, [(LOCATION, location)], Json(wf)).into_response())
}

/// One workflow, by id or name.
#[utoipa::path(get, path = "/api/workflows/{id}", tag = "workflows", params(("id" = String, Path, description = "The workflow's id or name")),
    responses((status = 200, description = "The workflow", body = Workflow), (status = 404, description = "No such workflow")))]
async fn get_workflow(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Workflow>> {
    Ok(Json(kernel.service::<Workflows>().get(&id).await?))
}

/// Replaces a workflow's name, description and steps. Past runs stay.
#[utoipa::path(put, path = "/api/workflows/{id}", tag = "workflows", params(("id" = String, Path, description = "The workflow's id or name")), request_body = WorkflowInput,
    responses(
        (status = 200, description = "The workflow as stored", body = Workflow),
        (status = 404, description = "No such workflow"),
        (status = 409, description = "Another workflow has the new name"),
    ))]
async fn replace_workflow(
    State(kernel): State<Kernel>,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<WorkflowInput>,
) -> ApiResult<Json<Workflow>> {
    Ok(Json(kernel.service::<Workflows>().replace(&id, input).await?))
}

/// Deletes a workflow. Its run history is kept.
#[utoipa::path(delete, path = "/api/workflows/{id}", tag = "workflows", params(("id" = String, Path, description = "The workflow's id or name")),
    responses((status = 204, description = "Deleted"), (status = 404, description = "No such workflow")))]
async fn delete_workflow(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<StatusCode> {
    kernel.service::<Workflows>().delete(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The workflow's runs, newest first, with each step's output and timing.
#[utoipa::path(get, path = "/api/workflows/{id}/runs", tag = "workflows", params(("id" = String, Path, description = "The workflow's id or name"), PageQuery, ("cursor" = inline(Option<IdCursor>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last run's id)")),
    responses((status = 200, description = "A page of the workflow's runs, newest first", body = Vec<WorkflowRun>), (status = 404, description = "No such workflow")))]
async fn list_runs(State(kernel): State<Kernel>, Path(id): Path<String>, page: PageParams) -> ApiResult<Response> {
    Ok(page.answer(kernel.service::<Workflows>().runs(&id, &page.request).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct RunBody {
    /// Values for the steps' `{{inputs.KEY}}`.
    #[schema(value_type = Option<Object>)]
    inputs: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Runs the workflow now and answers when it has finished (a failed step ends the run with
/// `status: "failed"`).
#[utoipa::path(post, path = "/api/workflows/{id}/runs", tag = "workflows", params(("id" = String, Path, description = "The workflow's id or name")), request_body = Option<RunBody>,
    responses(
        (status = 200, description = "The finished run (a failed step is `status: failed`, not an error)", body = WorkflowRun),
        (status = 404, description = "No such workflow"),
        (status = 429, description = "It would run deeper than [kernel] max_agent_call_depth"),
    ))]
async fn start_run(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RunBody>,
) -> ApiResult<Json<WorkflowRun>> {
    let origin = RunOrigin { caller, agent: None, depth: 0, chain: Vec::new() };
    let inputs = serde_json::Value::Object(body.inputs.unwrap_or_default());
    Ok(Json(kernel.service::<Workflows>().run_detached(&id, inputs, origin).await?))
}
