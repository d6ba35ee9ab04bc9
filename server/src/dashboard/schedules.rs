//! The schedule manager and its actions: the same `Schedules` service as `/api/schedules`,
//! plus the one thing only here: permanent deletion, with the operator's session, the form's
//! CSRF token and a typed confirmation.

use axum::Form;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use kennel_app::Nav;
use kennel_app::pages::schedules::{self, ConfirmDelete, Detail, List};
use kennel_kernel::page::PageRequest;
use kennel_kernel::schedule::{self as schedule, Schedule, ScheduleFilter};
use kennel_kernel::{Error, ErrorKind, Kernel};
use serde::Deserialize;

use super::{Notice, Operator, error_page, html, meta, see_other};

#[derive(Deserialize)]
pub struct ListQuery {
    /// An agent's name or id.
    #[serde(default)]
    agent: String,
    notice: Option<String>,
}

pub async fn list(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    axum::extract::Query(q): axum::extract::Query<ListQuery>,
) -> Response {
    let result = async {
        let filter = ScheduleFilter { agent: Some(q.agent.clone()), ..Default::default() };
        kernel.schedules().list(&filter, &PageRequest::first(1000)).await.map(|p| p.items)
    };
    match result.await {
        Ok(schedules) => {
            let page = List { schedules, agents: kernel.agents().list(), agent: q.agent };
            let flash = Notice { notice: q.notice }.flash();
            html(StatusCode::OK, schedules::render_list(meta(&op, "Schedules", Nav::Schedules, flash), page))
        }
        Err(e) => error_page(&op, &e),
    }
}

pub async fn detail(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    axum::extract::Query(n): axum::extract::Query<Notice>,
) -> Response {
    let result =
        async { Ok::<_, Error>((kernel.schedules().get(&id).await?, kernel.schedules().fires(&id, 50).await?)) };
    match result.await {
        Ok((schedule, fires)) => {
            let title = format!("Schedule {}", schedule.short_id());
            let page = Detail { agent: kernel.agents().name_of(&schedule.agent_id), schedule, fires };
            html(StatusCode::OK, schedules::render_detail(meta(&op, title, Nav::Schedules, n.flash()), page))
        }
        Err(e) => error_page(&op, &e),
    }
}

pub async fn pause(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
) -> Response {
    match kernel.schedules().pause(&id).await {
        Ok(s) => see_other("/schedules", &format!("Schedule {} paused.", s.short_id())),
        Err(e) => error_page(&op, &e),
    }
}

pub async fn resume(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
) -> Response {
    match kernel.schedules().resume(&id).await {
        Ok(s) => see_other("/schedules", &format!("Schedule {} resumed.", s.short_id())),
        Err(e) => error_page(&op, &e),
    }
}

/// The confirmation step: names the schedule and asks for its short id.
pub async fn confirm_delete(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
) -> Response {
    match kernel.schedules().get(&id).await {
        Ok(schedule) => confirm_page(&kernel, &op, StatusCode::OK, schedule, None),
        Err(e) => error_page(&op, &e),
    }
}

fn confirm_page(
    kernel: &Kernel,
    op: &Operator,
    status: StatusCode,
    schedule: Schedule,
    error: Option<String>,
) -> Response {
    let title = format!("Delete schedule {}", schedule.short_id());
    let page = ConfirmDelete { agent: kernel.agents().name_of(&schedule.agent_id), schedule, error };
    html(status, schedules::render_confirm_delete(meta(op, title, Nav::Schedules, None), page))
}

#[derive(Deserialize)]
pub struct DeleteForm {
    csrf: String,
    #[serde(default)]
    confirm: String,
}

pub async fn delete(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Form(f): Form<DeleteForm>,
) -> Response {
    let result = async {
        let approval = kernel.auth().human_approval(&op.cookie, &f.csrf)?;
        schedule::delete_permanently(&kernel, &id, &f.confirm, &approval).await
    };
    match result.await {
        Ok(s) => see_other("/schedules", &format!("Schedule {} deleted for good.", s.short_id())),
        Err(e) if e.kind == ErrorKind::InvalidArguments => match kernel.schedules().get(&id).await {
            Ok(schedule) => {
                let message = e.fields.first().map_or(e.message, |f| f.message.clone());
                confirm_page(&kernel, &op, StatusCode::UNPROCESSABLE_ENTITY, schedule, Some(message))
            }
            Err(e) => error_page(&op, &e),
        },
        Err(e) => error_page(&op, &e),
    }
}
