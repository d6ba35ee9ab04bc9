//! `/inbox` and marking notes read: the `Inbox` service as `/api/inbox`, with the signed-in
//! operator's read state.

use axum::Form;
use axum::extract::{Extension, Query, State};
use axum::http::StatusCode;
use kennel_app::Paging;
use kennel_app::pages::inbox::{self, InboxPage};
use kennel_kernel::Kernel;
use kennel_kernel::approval::Approvals;
use kennel_kernel::changes::Topic;
use kennel_kernel::notify::Inbox;
use kennel_kernel::notify::{NoteFilter, Urgency};
use serde::Deserialize;

use super::{Cursor, Notice, Operator, PageResult, following, html, list_url, meta, next_page, see_other};
use crate::routes::{Action, Pages, get, post};

pub fn routes() -> Pages {
    Pages::new()
        .route("/inbox", get(page))
        .route("/inbox/read", post(read, Action::named("inbox.read")))
        .route("/inbox/unread", get(unread))
}

/// Notes on one page.
const PER_PAGE: u32 = 100;

#[derive(Deserialize)]
pub struct InboxQuery {
    #[serde(default)]
    agent: String,
    /// As chosen: empty means any.
    #[serde(default)]
    urgency: String,
    #[serde(default)]
    unread: Option<String>,
    #[serde(flatten)]
    cursor: Cursor,
}

pub async fn page(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Query(q): Query<InboxQuery>,
    n: Notice,
) -> PageResult {
    let urgency = match q.urgency.as_str() {
        "" => None,
        u => Some(Urgency::ALL.iter().copied().find(|x| x.as_str() == u).ok_or_else(|| {
            kennel_kernel::Error::invalid(format!("`{u}` is not an urgency: low, normal, high or critical"))
        })?),
    };
    let unread_only = q.unread.as_deref() == Some("true");
    let filter = NoteFilter { agent: Some(q.agent.clone()), urgency, unread: unread_only };
    let notes = kernel.service::<Inbox>().list(&op.reader(), &filter, &q.cursor.page(PER_PAGE)).await?;
    let filters = [
        ("agent", q.agent.clone()),
        ("urgency", q.urgency.clone()),
        ("unread", if unread_only { "true".into() } else { String::new() }),
    ];
    let page = InboxPage {
        paging: Paging { total: notes.total, next: next_page("/inbox", &filters, notes.next.as_deref()) },
        notes: notes.items,
        agents: kernel.agents().list(),
        agent: q.agent,
        urgency,
        unread_only,
        waiting_approvals: kernel.service::<Approvals>().waiting().await?,
    };
    let url = list_url("/inbox", &filters, q.cursor.cursor.as_deref());
    let meta = following(meta(&op, "Inbox", inbox::SECTION, n.flash()), &[Topic::Inbox], url);
    Ok(html(StatusCode::OK, inbox::render(meta, page)))
}

#[derive(Deserialize)]
pub struct ReadForm {
    /// One note; absent: every note.
    id: Option<i64>,
}

pub async fn read(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Form(f): Form<ReadForm>,
) -> PageResult {
    let ids = f.id.map(|id| vec![id]);
    let marked = kernel.service::<Inbox>().mark_read(&op.reader(), ids.as_deref()).await?;
    let notice = match (f.id, marked) {
        (Some(_), _) => "Marked read.".to_string(),
        (None, n) => format!("{n} notes marked read."),
    };
    Ok(see_other("/inbox", &notice))
}

/// The operator's unread count, for the navigation's badge (live.js reads it when the inbox
/// changes). Counted when the request was let in.
pub async fn unread(Extension(op): Extension<Operator>) -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({ "unread": op.unread }))
}
