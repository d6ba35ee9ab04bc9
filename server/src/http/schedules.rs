//! `/api/schedules`: every agent's schedules and cron jobs for scripts and operators — list,
//! pause, resume. Permanent deletion is human-only and refused here (403): an operator
//! deletes a schedule in the dashboard.

use axum::Json;
use axum::extract::{Path, State};
use kennel_kernel::schedule::{Fire, Schedule, ScheduleFilter};
use kennel_kernel::{Error, Kernel};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::body::QueryParams;
use super::error::{ApiResult, ErrorBody};

pub fn router() -> OpenApiRouter<Kernel> {
    OpenApiRouter::new()
        .routes(routes!(list_schedules))
        .routes(routes!(get_schedule, delete_schedule))
        .routes(routes!(pause_schedule))
        .routes(routes!(resume_schedule))
}

/// A schedule with its owner's name.
#[derive(Serialize, ToSchema)]
struct OwnedSchedule {
    #[serde(flatten)]
    schedule: Schedule,
    /// The owner agent's name (its id if it has none).
    agent: String,
}

fn owned(kernel: &Kernel, schedule: Schedule) -> OwnedSchedule {
    let agent = kernel.agents().name_of(&schedule.agent_id);
    OwnedSchedule { schedule, agent }
}

/// Every schedule and cron job (manifest and runtime), with owner agent, next fire and last
/// outcome; filtered by agent (name or id), kind and state.
#[utoipa::path(get, path = "/api/schedules", tag = "schedules", params(ScheduleFilter),
    responses((status = 200, body = Vec<OwnedSchedule>), (status = 404, body = ErrorBody)))]
async fn list_schedules(
    State(kernel): State<Kernel>,
    QueryParams(mut filter): QueryParams<ScheduleFilter>,
) -> ApiResult<Json<Vec<OwnedSchedule>>> {
    filter.agent = kernel.agents().id_of(filter.agent.as_deref())?;
    let schedules = kernel.schedules().list(&filter).await?;
    Ok(Json(schedules.into_iter().map(|s| owned(&kernel, s)).collect()))
}

#[derive(Serialize, ToSchema)]
struct ScheduleDetail {
    schedule: OwnedSchedule,
    /// The latest fires, newest first.
    fires: Vec<Fire>,
}

/// One schedule with its recent fires.
#[utoipa::path(get, path = "/api/schedules/{id}", tag = "schedules", params(("id" = String, Path)),
    responses((status = 200, body = ScheduleDetail), (status = 404, body = ErrorBody)))]
async fn get_schedule(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<ScheduleDetail>> {
    let schedule = kernel.schedules().get(&id).await?;
    let fires = kernel.schedules().fires(&id, 50).await?;
    Ok(Json(ScheduleDetail { schedule: owned(&kernel, schedule), fires }))
}

/// Pauses a schedule: it stops firing and keeps its configuration.
#[utoipa::path(post, path = "/api/schedules/{id}/pause", tag = "schedules", params(("id" = String, Path)),
    responses((status = 200, body = OwnedSchedule), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn pause_schedule(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<OwnedSchedule>> {
    let schedule = kernel.schedules().pause(&id).await?;
    Ok(Json(owned(&kernel, schedule)))
}

/// Resumes a paused schedule (a cron job from its next match after now).
#[utoipa::path(post, path = "/api/schedules/{id}/resume", tag = "schedules", params(("id" = String, Path)),
    responses((status = 200, body = OwnedSchedule), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn resume_schedule(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<OwnedSchedule>> {
    let schedule = kernel.schedules().resume(&id).await?;
    Ok(Json(owned(&kernel, schedule)))
}

/// Always refused: deleting a schedule for good is a human-only operation, done by an
/// operator in the dashboard with a confirmation. Pause it instead.
#[utoipa::path(delete, path = "/api/schedules/{id}", tag = "schedules", params(("id" = String, Path)),
    responses((status = 403, body = ErrorBody)))]
async fn delete_schedule(Path(id): Path<String>) -> ApiResult<Json<()>> {
    Err(Error::forbidden(format!(
        "deleting a schedule for good is human-only: an operator does it on the dashboard's Schedules page, with confirmation. \
         API tokens can pause it: POST /api/schedules/{id}/pause"
    ))
    .into())
}
