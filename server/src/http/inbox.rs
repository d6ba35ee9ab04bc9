//! `/api/inbox`: the owner inbox (notes from `notify_owner` and budget pauses) for API
//! clients. Read state is the caller's own (`token:NAME`), apart from each operator's.

use crate::routes::api;
use axum::Json;
use axum::extract::{Extension, State};
use axum::http::Method;
use axum::response::Response;
use kennel_kernel::Kernel;
use kennel_kernel::notify::Inbox;
use kennel_kernel::notify::{Note, NoteFilter};
use kennel_kernel::page::NumberCursor;
use kennel_kernel::page::PageQuery;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::Bearer;
use super::body::{JsonBody, QueryParams};
use super::error::ApiResult;
use super::page::PageParams;
use crate::routes::{Action, Api};

pub fn routes() -> Api {
    Api::new()
        .route(api!(list_notes), &[])
        .route(api!(mark_notes_read), &[(Method::POST, Action::named("inbox.read"))])
        .route(api!(unread_notes), &[])
}

/// Notes, newest first, with whether this token has read each.
#[utoipa::path(get, path = "/api/inbox", tag = "inbox", params(NoteFilter, PageQuery, ("cursor" = inline(Option<NumberCursor>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last note's id)")),
    responses((status = 200, description = "A page of notes, newest first", body = Vec<Note>),
        (status = 422, description = "An agent that does not exist, or a bad filter")))]
async fn list_notes(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    QueryParams(filter): QueryParams<NoteFilter>,
    page: PageParams,
) -> ApiResult<Response> {
    Ok(page.answer(kernel.service::<Inbox>().list(&caller.audit_label(), &filter, &page.request).await?))
}

/// Which notes to mark read.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct MarkRead {
    /// Note ids; absent: every note.
    ids: Option<Vec<i64>>,
}

#[derive(Serialize, ToSchema)]
struct Marked {
    /// Notes newly marked read.
    marked: u64,
}

/// Marks notes read for this token.
#[utoipa::path(post, path = "/api/inbox/read", tag = "inbox", request_body(content = Option<MarkRead>, description = "`{}` or no body: every note"),
    responses((status = 200, description = "How many were newly marked", body = Marked), (status = 422, description = "A bad body")))]
async fn mark_notes_read(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    JsonBody(body): JsonBody<MarkRead>,
) -> ApiResult<Json<Marked>> {
    let marked = kernel.service::<Inbox>().mark_read(&caller.audit_label(), body.ids.as_deref()).await?;
    Ok(Json(Marked { marked }))
}

#[derive(Serialize, ToSchema)]
struct Unread {
    unread: u64,
}

/// How many notes this token has not read.
#[utoipa::path(get, path = "/api/inbox/unread", tag = "inbox", responses((status = 200, description = "The unread count", body = Unread)))]
async fn unread_notes(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
) -> ApiResult<Json<Unread>> {
    Ok(Json(Unread { unread: kernel.service::<Inbox>().unread(&caller.audit_label()).await? }))
}
