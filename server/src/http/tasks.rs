//! `/api/tasks`: the task board for scripts and operators.

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::{StatusCode, header::LOCATION};
use axum::response::{IntoResponse, Response};
use kennel_kernel::Kernel;
use kennel_kernel::tasks::{NewTask, Task, TaskEvent, TaskFilter};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::TokenName;
use super::body::{JsonBody, QueryParams};
use super::error::{ApiResult, ErrorBody};

pub fn router() -> OpenApiRouter<Kernel> {
    OpenApiRouter::new()
        .routes(routes!(list_tasks, post_task))
        .routes(routes!(get_task))
        .routes(routes!(reassign_task))
        .routes(routes!(cancel_task))
        .routes(routes!(retry_task))
}

/// Tasks, highest priority first, filtered by status, assignee (name or id), text, priority.
#[utoipa::path(get, path = "/api/tasks", tag = "tasks", params(TaskFilter), responses((status = 200, body = Vec<Task>)))]
async fn list_tasks(
    State(kernel): State<Kernel>,
    QueryParams(mut filter): QueryParams<TaskFilter>,
) -> ApiResult<Json<Vec<Task>>> {
    filter.assignee = kernel.agents().id_of(filter.assignee.as_deref())?;
    Ok(Json(kernel.tasks().list(&filter).await?))
}

/// Posts a pending task (for an agent, or for anyone).
#[utoipa::path(post, path = "/api/tasks", tag = "tasks", request_body = NewTask,
    responses((status = 201, body = Task), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn post_task(
    State(kernel): State<Kernel>,
    Extension(TokenName(token)): Extension<TokenName>,
    JsonBody(new): JsonBody<NewTask>,
) -> ApiResult<Response> {
    let task = kernel.post_task(new, &format!("token:{token}")).await?;
    let location = format!("/api/tasks/{}", task.id);
    Ok((StatusCode::CREATED, [(LOCATION, location)], Json(task)).into_response())
}

#[derive(Serialize, ToSchema)]
struct TaskDetail {
    task: Task,
    /// Posted, claimed, reset by the sweeper, completed… oldest first.
    history: Vec<TaskEvent>,
}

/// One task with its history.
#[utoipa::path(get, path = "/api/tasks/{id}", tag = "tasks", params(("id" = String, Path)),
    responses((status = 200, body = TaskDetail), (status = 404, body = ErrorBody)))]
async fn get_task(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<TaskDetail>> {
    let task = kernel.tasks().get(&id).await?;
    let history = kernel.tasks().history(&id).await?;
    Ok(Json(TaskDetail { task, history }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ReassignBody {
    /// An agent's name or id; absent: anyone may claim it.
    assignee: Option<String>,
}

/// Gives a pending or claimed task to another agent (or anyone); it is pending again.
#[utoipa::path(post, path = "/api/tasks/{id}/reassign", tag = "tasks", params(("id" = String, Path)), request_body = ReassignBody,
    responses((status = 200, body = Task), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn reassign_task(
    State(kernel): State<Kernel>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ReassignBody>,
) -> ApiResult<Json<Task>> {
    let assignee = kernel.agents().id_of(body.assignee.as_deref())?;
    Ok(Json(kernel.tasks().reassign(&id, assignee).await?))
}

/// Withdraws a pending or claimed task.
#[utoipa::path(post, path = "/api/tasks/{id}/cancel", tag = "tasks", params(("id" = String, Path)),
    responses((status = 200, body = Task), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn cancel_task(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Task>> {
    Ok(Json(kernel.tasks().cancel(&id).await?))
}

/// Puts a failed or cancelled task back to pending.
#[utoipa::path(post, path = "/api/tasks/{id}/retry", tag = "tasks", params(("id" = String, Path)),
    responses((status = 200, body = Task), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn retry_task(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Task>> {
    Ok(Json(kernel.tasks().retry(&id).await?))
}
