//! `/api/tasks`: the task board for scripts and operators.

use crate::routes::api;
use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::Method;
use axum::http::{StatusCode, header::LOCATION};
use axum::response::{IntoResponse, Response};
use kennel_kernel::Kernel;
use kennel_kernel::page::PageQuery;
use kennel_kernel::page::PriorityIdCursor;
use kennel_kernel::tasks::TaskBoard;
use kennel_kernel::tasks::{NewTask, Task, TaskEvent, TaskFilter};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::Bearer;
use super::body::{JsonBody, QueryParams};
use super::error::ApiResult;
use super::page::PageParams;
use crate::routes::{Action, Api};

pub fn routes() -> Api {
    Api::new()
        .route(api!(list_tasks, post_task), &[(Method::POST, Action::named("task.post"))])
        .route(api!(get_task), &[])
        .route(api!(reassign_task), &[(Method::POST, Action::named("task.reassign"))])
        .route(api!(cancel_task), &[(Method::POST, Action::named("task.cancel"))])
        .route(api!(retry_task), &[(Method::POST, Action::named("task.retry"))])
}

/// Tasks, highest priority first, filtered by status, assignee (name or id), text, priority.
#[utoipa::path(get, path = "/api/tasks", tag = "tasks", params(TaskFilter, PageQuery, ("cursor" = inline(Option<PriorityIdCursor>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last task's priority and id)")),
    responses((status = 200, description = "A page of tasks, highest priority first, then oldest", body = Vec<Task>), (status = 404, description = "No agent of that name or id")))]
async fn list_tasks(
    State(kernel): State<Kernel>,
    QueryParams(filter): QueryParams<TaskFilter>,
    page: PageParams,
) -> ApiResult<Response> {
    Ok(page.answer(kernel.service::<TaskBoard>().list(&filter, &page.request).await?))
}

/// Posts a pending task (for an agent, or for anyone).
#[utoipa::path(post, path = "/api/tasks", tag = "tasks", request_body = NewTask,
    responses(
        (status = 201, description = "The posted task", body = Task, headers(("location" = String, description = "Its URL"))),
        (status = 422, description = "Invalid fields, each listed (an `assignee` that names no agent among them)"),
    ))]
async fn post_task(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    JsonBody(new): JsonBody<NewTask>,
) -> ApiResult<Response> {
    let task = kernel.service::<TaskBoard>().post(new, &caller.audit_label()).await?;
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
#[utoipa::path(get, path = "/api/tasks/{id}", tag = "tasks", params(("id" = String, Path, description = "The task's id, or its short form (its last 8 hex digits, as the dashboard shows it)")),
    responses((status = 200, description = "The task and its history", body = TaskDetail), (status = 404, description = "No such task")))]
async fn get_task(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<TaskDetail>> {
    let task = kernel.service::<TaskBoard>().get(&id).await?;
    let history = kernel.service::<TaskBoard>().history(&id).await?;
    Ok(Json(TaskDetail { task, history }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ReassignBody {
    /// An agent's name or id; absent or empty: anyone may claim it.
    assignee: Option<String>,
}

/// Gives a pending or claimed task to another agent (or anyone); it is pending again.
#[utoipa::path(post, path = "/api/tasks/{id}/reassign", tag = "tasks", params(("id" = String, Path, description = "The task's id, or its short form (its last 8 hex digits, as the dashboard shows it)")), request_body = Option<ReassignBody>,
    responses(
        (status = 200, description = "The task, pending again", body = Task),
        (status = 404, description = "No such task"),
        (status = 422, description = "The `assignee` names no agent"),
        (status = 409, description = "The task is done, failed or cancelled"),
    ))]
async fn reassign_task(
    State(kernel): State<Kernel>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ReassignBody>,
) -> ApiResult<Json<Task>> {
    Ok(Json(kernel.service::<TaskBoard>().reassign(&id, body.assignee.as_deref()).await?))
}

/// Withdraws a pending or claimed task.
#[utoipa::path(post, path = "/api/tasks/{id}/cancel", tag = "tasks", params(("id" = String, Path, description = "The task's id, or its short form (its last 8 hex digits, as the dashboard shows it)")),
    responses(
        (status = 200, description = "The cancelled task", body = Task),
        (status = 404, description = "No such task"),
        (status = 409, description = "The task is done, failed or cancelled"),
    ))]
async fn cancel_task(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(id): Path<String>,
) -> ApiResult<Json<Task>> {
    Ok(Json(kernel.service::<TaskBoard>().cancel(&id, &caller.audit_label()).await?))
}

/// Puts a failed or cancelled task back to pending.
#[utoipa::path(post, path = "/api/tasks/{id}/retry", tag = "tasks", params(("id" = String, Path, description = "The task's id, or its short form (its last 8 hex digits, as the dashboard shows it)")),
    responses(
        (status = 200, description = "The task, pending again", body = Task),
        (status = 404, description = "No such task"),
        (status = 409, description = "The task is pending, claimed or done"),
    ))]
async fn retry_task(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Task>> {
    Ok(Json(kernel.service::<TaskBoard>().retry(&id).await?))
}
