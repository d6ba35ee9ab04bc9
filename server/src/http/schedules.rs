//! `/api/schedules`: every agent's schedules and cron jobs for scripts and operators — list,
//! pause, resume. Permanent deletion is human-only and refused here (403): an operator
//! deletes a schedule in the dashboard.

use crate::routes::api;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use kennel_kernel::page::IdCursor;
use kennel_kernel::page::PageQuery;
use kennel_kernel::schedule::Schedules;
use kennel_kernel::schedule::{Fire, Schedule, ScheduleFilter};
use kennel_kernel::{Error, Kernel};
use serde::Serialize;
use utoipa::ToSchema;

use super::body::QueryParams;
use super::error::ApiResult;
use super::page::PageParams;
use crate::routes::{Action, Api};

pub fn routes() -> Api {
    Api::new()
        .route(api!(list_schedules), &[])
        .route(api!(get_schedule, delete_schedule), &[(Method::DELETE, Action::named("schedule.delete"))])
        .route(api!(pause_schedule), &[(Method::POST, Action::named("schedule.pause"))])
        .route(api!(resume_schedule), &[(Method::POST, Action::named("schedule.resume"))])
        .route(api!(run_schedule), &[(Method::POST, Action::named("schedule.run"))])
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
#[utoipa::path(get, path = "/api/schedules", tag = "schedules", params(ScheduleFilter, PageQuery, ("cursor" = inline(Option<IdCursor>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last schedule's id)")),
    responses((status = 200, description = "A page of schedules, oldest first", body = Vec<OwnedSchedule>), (status = 404, description = "No agent of that name or id")))]
async fn list_schedules(
    State(kernel): State<Kernel>,
    QueryParams(filter): QueryParams<ScheduleFilter>,
    page: PageParams,
) -> ApiResult<Response> {
    let schedules = kernel.service::<Schedules>().list(&filter, &page.request).await?;
    Ok(page.answer(schedules.map(|s| owned(&kernel, s))))
}

#[derive(Serialize, ToSchema)]
struct ScheduleDetail {
    schedule: OwnedSchedule,
    /// The latest fires, newest first.
    fires: Vec<Fire>,
}

/// One schedule with its recent fires.
#[utoipa::path(get, path = "/api/schedules/{id}", tag = "schedules", params(("id" = String, Path, description = "The schedule's id, or its short form (its last 8 hex digits, as the dashboard shows it)")),
    responses((status = 200, description = "The schedule and its latest 50 fires", body = ScheduleDetail), (status = 404, description = "No such schedule")))]
async fn get_schedule(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<ScheduleDetail>> {
    let schedule = kernel.service::<Schedules>().get(&id).await?;
    let fires = kernel.service::<Schedules>().fires(&id, 50).await?;
    Ok(Json(ScheduleDetail { schedule: owned(&kernel, schedule), fires }))
}

/// Pauses a schedule: it stops firing and keeps its configuration.
#[utoipa::path(post, path = "/api/schedules/{id}/pause", tag = "schedules", params(("id" = String, Path, description = "The schedule's id, or its short form (its last 8 hex digits, as the dashboard shows it)")),
    responses(
        (status = 200, description = "The paused schedule (pausing a paused one changes nothing)", body = OwnedSchedule),
        (status = 404, description = "No such schedule"),
        (status = 409, description = "A one-shot schedule that has fired"),
    ))]
async fn pause_schedule(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<OwnedSchedule>> {
    let schedule = kernel.service::<Schedules>().pause(&id).await?;
    Ok(Json(owned(&kernel, schedule)))
}

/// The fire "run now" started.
#[derive(serde::Serialize, utoipa::ToSchema)]
struct StartedFire {
    /// The fire's id in the schedule's fire history (`GET /api/schedules/{id}`), `running`
    /// until its turn ends.
    fire_id: i64,
}

/// Runs the schedule once now, outside its times: its prompt as a turn of its agent, recorded
/// in its fire history like any fire. Its state and next fire are unchanged (a paused
/// schedule stays paused). Answers when the fire is recorded; the turn runs on.
#[utoipa::path(post, path = "/api/schedules/{id}/run", tag = "schedules", params(("id" = String, Path, description = "The schedule's id, or its short form (its last 8 hex digits, as the dashboard shows it)")),
    responses(
        (status = 202, description = "The fire is recorded and its turn started", body = StartedFire),
        (status = 404, description = "No such schedule"),
        (status = 409, description = "Its agent is stopped or gone"),
    ))]
async fn run_schedule(
    State(kernel): State<Kernel>,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<StartedFire>)> {
    let fire_id = kennel_kernel::schedule::runner::run_now(kernel.services(), &id).await?;
    Ok((StatusCode::ACCEPTED, Json(StartedFire { fire_id })))
}

/// Resumes a paused schedule (a cron job from its next match after now).
#[utoipa::path(post, path = "/api/schedules/{id}/resume", tag = "schedules", params(("id" = String, Path, description = "The schedule's id, or its short form (its last 8 hex digits, as the dashboard shows it)")),
    responses(
        (status = 200, description = "The active schedule", body = OwnedSchedule),
        (status = 404, description = "No such schedule"),
        (status = 409, description = "It has fired (one-shot), never fires again, or its stored expression is no longer accepted"),
    ))]
async fn resume_schedule(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<OwnedSchedule>> {
    let schedule = kernel.service::<Schedules>().resume(&id).await?;
    Ok(Json(owned(&kernel, schedule)))
}

/// Always refused: deleting a schedule for good is a human-only operation, done by an
/// operator in the dashboard with a confirmation. Pause it instead.
#[utoipa::path(delete, path = "/api/schedules/{id}", tag = "schedules", params(("id" = String, Path, description = "The schedule's id, or its short form (its last 8 hex digits, as the dashboard shows it)")),
    responses((status = 403, description = "Always: deleting a schedule for good is human-only (the dashboard)")))]
async fn delete_schedule(Path(id): Path<String>) -> ApiResult<Json<()>> {
    Err(Error::forbidden(format!(
        "deleting a schedule for good is human-only: an operator does it on the dashboard's Schedules page, with confirmation. \
         API tokens can pause it: POST /api/schedules/{id}/pause"
    ))
    .into())
}
