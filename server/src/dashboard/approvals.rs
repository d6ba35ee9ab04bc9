//! `/approvals` and its decisions: the `Approvals` service as `/api/approvals`, decided as the
//! signed-in operator (the kernel takes decisions from operators and the CLI alone).

use axum::Form;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use kennel_app::pages::approvals::{self, ApprovalsPage};
use kennel_kernel::Kernel;
use kennel_kernel::approval::{Approvals, Decision, Status};
use kennel_kernel::tool::Caller;
use serde::Deserialize;

use super::{Notice, Operator, PageResult, html, meta, see_other};
use crate::routes::{Action, Pages, get, post};

pub fn routes() -> Pages {
    Pages::new()
        .route("/approvals", get(page))
        .route("/approvals/{id}/approve", post(approve, Action::named("approval.approve")))
        .route("/approvals/{id}/deny", post(deny, Action::named("approval.deny")))
}

/// Approvals on one page, newest first.
const SHOWN: u32 = 200;

#[derive(Deserialize)]
pub struct ApprovalsQuery {
    /// `pending` (the default), `approved`, `denied`, `expired` or `all`.
    #[serde(default)]
    status: String,
}

pub async fn page(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Query(q): Query<ApprovalsQuery>,
    n: Notice,
) -> PageResult {
    let status = match q.status.as_str() {
        "" | "pending" => Some(Status::Pending),
        "all" => None,
        other => Some(Status::parse(other).ok_or_else(|| {
            kennel_kernel::Error::invalid(format!(
                "`{other}` is not a state: pending, approved, denied, expired or all"
            ))
        })?),
    };
    let listed = kernel.service::<Approvals>().list(status, None, SHOWN).await?;
    let page = ApprovalsPage { approvals: listed, status };
    Ok(html(StatusCode::OK, approvals::render(meta(&op, "Approvals", approvals::SECTION, n.flash()), page)))
}

#[derive(Deserialize)]
pub struct ApproveForm {
    /// 0 or absent: this call once.
    #[serde(default)]
    for_minutes: u32,
    #[serde(default)]
    note: String,
}

#[derive(Deserialize)]
pub struct DenyForm {
    #[serde(default)]
    note: String,
}

pub async fn approve(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Form(f): Form<ApproveForm>,
) -> PageResult {
    let decision =
        Decision { approve: true, for_minutes: (f.for_minutes > 0).then_some(f.for_minutes), note: Some(f.note) };
    let decided = kernel.service::<Approvals>().decide(&id, &decision, &Caller::Operator(op.name.clone())).await?;
    Ok(see_other("/approvals", &format!("Approved `{}` of agent {}: its turn goes on.", decided.tool, decided.agent)))
}

pub async fn deny(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Form(f): Form<DenyForm>,
) -> PageResult {
    let decision = Decision { approve: false, for_minutes: None, note: Some(f.note) };
    let decided = kernel.service::<Approvals>().decide(&id, &decision, &Caller::Operator(op.name.clone())).await?;
    Ok(see_other("/approvals", &format!("Denied `{}` of agent {}: it is told why.", decided.tool, decided.agent)))
}
