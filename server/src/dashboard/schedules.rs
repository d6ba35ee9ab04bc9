//! The schedule manager and its actions: the same `Schedules` service as `/api/schedules`,
//! plus the one thing only here: permanent deletion, with the operator's session, the form's
//! CSRF token and a typed confirmation.

use axum::Form;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use kennel_app::Paging;
use kennel_app::pages::schedules::{self, ConfirmDelete, Detail, List};
use kennel_kernel::changes::Topic;
use kennel_kernel::schedule::{Schedule, ScheduleFilter, Schedules};
use kennel_kernel::{ErrorKind, Kernel};
use serde::Deserialize;

use super::{Cursor, Notice, Operator, PageResult, following, html, list_url, meta, next_page, see_other};
use crate::routes::{Action, Pages, get, post};

pub fn routes() -> Pages {
    Pages::new()
        .route("/schedules", get(list))
        .route("/schedules/{id}", get(detail))
        .route("/schedules/{id}/pause", post(pause, Action::named("schedule.pause")))
        .route("/schedules/{id}/resume", post(resume, Action::named("schedule.resume")))
        .route("/schedules/{id}/run", post(run_now, Action::named("schedule.run")))
        .route("/schedules/{id}/delete", get(confirm_delete).post(delete, Action::named("schedule.delete")))
}

/// Schedules on one page of the list.
const PER_PAGE: u32 = 200;

#[derive(Deserialize)]
pub struct ListQuery {
    /// An agent's name or id.
    #[serde(default)]
    agent: String,
    #[serde(flatten)]
    cursor: Cursor,
}

pub async fn list(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Query(q): Query<ListQuery>,
    n: Notice,
) -> PageResult {
    let filter = ScheduleFilter { agent: Some(q.agent.clone()), ..Default::default() };
    let found = kernel.service::<Schedules>().list(&filter, &q.cursor.page(PER_PAGE)).await?;
    let next = next_page("/schedules", &[("agent", q.agent.clone())], found.next.as_deref());
    let page = List {
        schedules: found.items,
        paging: Paging { total: found.total, next },
        agents: kernel.agents().list(),
        agent: q.agent,
    };
    let flash = n.flash();
    let url = list_url("/schedules", &[("agent", page.agent.clone())], q.cursor.cursor.as_deref());
    let meta = following(meta(&op, "Schedules", schedules::SECTION, flash), &[Topic::Schedules, Topic::Agents], url);
    Ok(html(StatusCode::OK, schedules::render_list(meta, page)))
}

pub async fn detail(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    n: Notice,
) -> PageResult {
    let schedule = kernel.service::<Schedules>().get(&id).await?;
    let fires = kernel.service::<Schedules>().fires(&id, 50).await?;
    let title = format!("Schedule {}", schedule.short_id());
    let page = Detail { agent: kernel.agents().name_of(&schedule.agent_id), schedule, fires };
    let meta =
        following(meta(&op, title, schedules::SECTION, n.flash()), &[Topic::Schedules], format!("/schedules/{id}"));
    Ok(html(StatusCode::OK, schedules::render_detail(meta, page)))
}

pub async fn pause(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(id): Path<String>,
) -> PageResult {
    let s = kernel.service::<Schedules>().pause(&id).await?;
    Ok(see_other("/schedules", &format!("Schedule {} paused.", s.short_id())))
}

/// "Run now": one fire outside the schedule's times; its page shows it in the fire history.
pub async fn run_now(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(id): Path<String>,
) -> PageResult {
    let s = kernel.service::<Schedules>().get(&id).await?;
    kennel_kernel::schedule::runner::run_now(kernel.services(), &id).await?;
    let notice = format!("Schedule {} is running now; its fire is in the history below.", s.short_id());
    Ok(see_other(&format!("/schedules/{}", s.id), &notice))
}

pub async fn resume(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(id): Path<String>,
) -> PageResult {
    let s = kernel.service::<Schedules>().resume(&id).await?;
    Ok(see_other("/schedules", &format!("Schedule {} resumed.", s.short_id())))
}

/// The confirmation step: names the schedule and asks for its short id.
pub async fn confirm_delete(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
) -> PageResult {
    let schedule = kernel.service::<Schedules>().get(&id).await?;
    Ok(confirm_page(&kernel, &op, StatusCode::OK, schedule, None))
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
    html(status, schedules::render_confirm_delete(meta(op, title, schedules::SECTION, None), page))
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
) -> PageResult {
    let approval = kernel.auth().human_approval(&op.cookie, &f.csrf)?;
    match kernel.service::<Schedules>().delete_permanently(&id, &f.confirm, &approval).await {
        Ok(s) => Ok(see_other("/schedules", &format!("Schedule {} deleted for good.", s.short_id()))),
        Err(e) if e.kind == ErrorKind::InvalidArguments => {
            let schedule = kernel.service::<Schedules>().get(&id).await?;
            let message = e.fields.first().map_or(e.message, |f| f.message.clone());
            Ok(confirm_page(&kernel, &op, StatusCode::UNPROCESSABLE_ENTITY, schedule, Some(message)))
        }
        Err(e) => Err(e.into()),
    }
}
