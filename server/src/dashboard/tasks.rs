//! The task board page and its operator actions (the same `TaskBoard` service as `/api/tasks`).

use axum::Form;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use kennel_app::Nav;
use kennel_app::pages::tasks::{self, Board, Detail};
use kennel_kernel::page::PageRequest;
use kennel_kernel::tasks::{NewTask, TaskFilter};
use kennel_kernel::tool::Caller;
use kennel_kernel::{Error, Kernel};
use serde::Deserialize;

use super::{Notice, Operator, error_page, html, meta, see_other};

/// How often the open board reloads itself.
const BOARD_REFRESH_SECS: u32 = 5;

#[derive(Deserialize)]
pub struct BoardQuery {
    #[serde(default)]
    assignee: String,
    #[serde(default)]
    text: String,
    min_priority: Option<i64>,
    notice: Option<String>,
}

pub async fn board(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Query(q): Query<BoardQuery>,
) -> Response {
    let result = async {
        let filter = TaskFilter {
            status: None,
            assignee: Some(q.assignee.clone()),
            text: Some(q.text.clone()),
            min_priority: q.min_priority,
        };
        kernel.tasks().list(&filter, &PageRequest::first(500)).await.map(|p| p.items)
    }
    .await;
    match result {
        Ok(tasks) => {
            let filters = [("assignee", q.assignee.clone()), ("text", q.text.clone())]
                .into_iter()
                .chain(q.min_priority.map(|p| ("min_priority", p.to_string())))
                .filter(|(_, v)| !v.is_empty());
            let query = serde_urlencoded::to_string(filters.collect::<Vec<_>>()).unwrap_or_default();
            let refresh_url = if query.is_empty() { "/tasks".to_string() } else { format!("/tasks?{query}") };
            let page = Board {
                tasks,
                agents: kernel.agents().list(),
                assignee: q.assignee,
                text: q.text,
                min_priority: q.min_priority.unwrap_or(0),
            };
            let mut meta = meta(&op, "Task board", Nav::Tasks, Notice { notice: q.notice }.flash());
            meta.refresh = Some((BOARD_REFRESH_SECS, refresh_url));
            html(StatusCode::OK, tasks::render_board(meta, page))
        }
        Err(e) => error_page(&op, &e),
    }
}

#[derive(Deserialize)]
pub struct PostForm {
    title: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    assignee: String,
    priority: Option<i64>,
}

pub async fn post(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Form(f): Form<PostForm>,
) -> Response {
    let result = async {
        let new = NewTask { title: f.title, body: f.body, assignee: Some(f.assignee), priority: f.priority };
        kernel.post_task(new, &Caller::Operator(op.name.clone()).audit_label()).await
    }
    .await;
    match result {
        Ok(task) => see_other("/tasks", &format!("Task `{}` posted.", task.title)),
        Err(e) => error_page(&op, &e),
    }
}

pub async fn detail(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Query(n): Query<Notice>,
) -> Response {
    let result = async { Ok::<_, Error>((kernel.tasks().get(&id).await?, kernel.tasks().history(&id).await?)) }.await;
    match result {
        Ok((task, history)) => {
            let title = task.title.clone();
            let page = Detail { task, history, agents: kernel.agents().list() };
            html(StatusCode::OK, tasks::render_detail(meta(&op, title, Nav::Tasks, n.flash()), page))
        }
        Err(e) => error_page(&op, &e),
    }
}

#[derive(Deserialize)]
pub struct ReassignForm {
    #[serde(default)]
    assignee: String,
}

pub async fn reassign(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Form(f): Form<ReassignForm>,
) -> Response {
    let result = kernel.tasks().reassign(&id, Some(&f.assignee)).await;
    done(&op, &id, result.map(|_| "Reassigned."))
}

pub async fn cancel(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
) -> Response {
    done(&op, &id, kernel.tasks().cancel(&id).await.map(|_| "Cancelled."))
}

pub async fn retry(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
) -> Response {
    done(&op, &id, kernel.tasks().retry(&id).await.map(|_| "Back to pending."))
}

fn done(op: &Operator, id: &str, result: Result<&str, Error>) -> Response {
    match result {
        Ok(notice) => see_other(&format!("/tasks/{id}"), notice),
        Err(e) => error_page(op, &e),
    }
}
