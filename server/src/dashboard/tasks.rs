//! The task board page and its operator actions (the same `TaskBoard` service as `/api/tasks`).

use axum::Form;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use kennel_app::Paging;
use kennel_app::pages::tasks::{self, Board, Detail, PostForm};
use kennel_kernel::changes::Topic;
use kennel_kernel::error::FieldError;
use kennel_kernel::session::Origin;
use kennel_kernel::tasks::TaskBoard;
use kennel_kernel::tasks::{NewTask, TaskFilter};
use kennel_kernel::tool::Caller;
use kennel_kernel::{Error, Kernel};
use serde::Deserialize;

use super::{
    Cursor, Notice, Operator, PageResult, field_errors, following, html, list_url, meta, next_page, see_other,
};
use crate::routes::{Action, Pages, get, post};

pub fn routes() -> Pages {
    Pages::new()
        .route("/tasks", get(board).post(post_task, Action::named("task.post")))
        .route("/tasks/{id}", get(detail))
        .route("/tasks/{id}/reassign", post(reassign, Action::named("task.reassign")))
        .route("/tasks/{id}/cancel", post(cancel, Action::named("task.cancel")))
        .route("/tasks/{id}/retry", post(retry, Action::named("task.retry")))
}

/// Tasks on one page of the board.
const PER_PAGE: u32 = 200;

#[derive(Deserialize, Default)]
pub struct BoardQuery {
    /// An agent's id (the filter lists every agent by id: a stopped one's name does not resolve).
    #[serde(default)]
    assignee: String,
    #[serde(default)]
    text: String,
    /// As typed: empty means no filter.
    #[serde(default)]
    min_priority: String,
    #[serde(flatten)]
    cursor: Cursor,
}

async fn board_page(
    kernel: &Kernel,
    op: &Operator,
    (q, n): (BoardQuery, Notice),
    status: StatusCode,
    post: PostForm,
) -> PageResult {
    let min_priority = whole_number("min_priority", &q.min_priority)?;
    let filter =
        TaskFilter { status: None, assignee: Some(q.assignee.clone()), text: Some(q.text.clone()), min_priority };
    let tasks = kernel.service::<TaskBoard>().list(&filter, &q.cursor.page(PER_PAGE)).await?;
    let filters =
        [("assignee", q.assignee.clone()), ("text", q.text.clone()), ("min_priority", q.min_priority.clone())];
    // The page reloads where it is (its cursor kept), without a one-time notice.
    let refresh_url = list_url("/tasks", &filters, q.cursor.cursor.as_deref());
    let page = Board {
        paging: Paging { total: tasks.total, next: next_page("/tasks", &filters, tasks.next.as_deref()) },
        tasks: tasks.items,
        agents: kernel.agents().list(),
        assignee: q.assignee,
        text: q.text,
        min_priority: min_priority.unwrap_or(0),
        post,
    };
    let meta = meta(op, "Task board", tasks::SECTION, n.flash());
    let meta = following(meta, &[Topic::Tasks, Topic::Agents], refresh_url);
    Ok(html(status, tasks::render_board(meta, page)))
}

pub async fn board(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Query(q): Query<BoardQuery>,
    n: Notice,
) -> PageResult {
    board_page(&kernel, &op, (q, n), StatusCode::OK, PostForm::default()).await
}

#[derive(Deserialize)]
pub struct PostFields {
    #[serde(default)]
    title: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    assignee: String,
    /// As typed: empty means the default.
    #[serde(default)]
    priority: String,
}

/// A form's number field as typed: empty is `None`; anything but a whole number is a problem
/// of that field.
fn whole_number(field: &str, text: &str) -> Result<Option<i64>, Error> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| {
        Error::invalid_fields(vec![FieldError {
            field: field.into(),
            message: format!("`{text}` is not a whole number"),
        }])
    })
}

/// Posts a task; a refused one shows the board again with the form as sent and each problem
/// next to its field.
pub async fn post_task(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Form(f): Form<PostFields>,
) -> PageResult {
    let posted = match whole_number("priority", &f.priority) {
        Ok(priority) => {
            let assignee = Some(f.assignee.clone());
            let new = NewTask { title: f.title.clone(), body: f.body.clone(), assignee, priority };
            kernel.service::<TaskBoard>().post(new, &Caller::Operator(op.name.clone()).audit_label()).await
        }
        Err(e) => Err(e),
    };
    match posted {
        Ok(task) => Ok(see_other("/tasks", &format!("Task `{}` posted.", task.title))),
        Err(e) if e.kind == kennel_kernel::ErrorKind::InvalidArguments => {
            let post = PostForm {
                priority: f.priority.trim().parse().ok(),
                title: f.title,
                body: f.body,
                assignee: f.assignee,
                errors: field_errors(&e, "title"),
            };
            board_page(
                &kernel,
                &op,
                (BoardQuery::default(), Notice::default()),
                crate::status::status_for(e.kind),
                post,
            )
            .await
        }
        Err(e) => Err(e.into()),
    }
}

pub async fn detail(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    n: Notice,
) -> PageResult {
    let task = kernel.service::<TaskBoard>().get(&id).await?;
    let history = kernel.service::<TaskBoard>().history(&id).await?;
    let woke = Origin::Task(task.id.to_string());
    let wake_ups = kernel.sessions().of_origin(&woke).await?;
    let title = task.title.clone();
    let page = Detail { task, history, wake_ups, agents: kernel.agents().list() };
    let meta = following(meta(&op, title, tasks::SECTION, n.flash()), &[Topic::Tasks], format!("/tasks/{id}"));
    Ok(html(StatusCode::OK, tasks::render_detail(meta, page)))
}

#[derive(Deserialize)]
pub struct ReassignForm {
    #[serde(default)]
    assignee: String,
}

pub async fn reassign(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(id): Path<String>,
    Form(f): Form<ReassignForm>,
) -> PageResult {
    done(&id, kernel.service::<TaskBoard>().reassign(&id, Some(&f.assignee)).await.map(|_| "Reassigned."))
}

pub async fn cancel(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
) -> PageResult {
    let by = kennel_kernel::tool::Caller::Operator(op.name).audit_label();
    done(&id, kernel.service::<TaskBoard>().cancel(&id, &by).await.map(|_| "Cancelled."))
}

pub async fn retry(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(id): Path<String>,
) -> PageResult {
    done(&id, kernel.service::<TaskBoard>().retry(&id).await.map(|_| "Back to pending."))
}

fn done(id: &str, result: Result<&str, Error>) -> PageResult {
    Ok(see_other(&format!("/tasks/{id}"), result?))
}
