//! Usage: the kernel's report of the meter and the budgets, rendered.

use axum::extract::{Extension, State};
use axum::http::StatusCode;
use kennel_app::pages::usage;
use kennel_kernel::Kernel;
use kennel_kernel::usage::overview::overview;

use super::{Notice, Operator, PageResult, html, meta};
use crate::routes::{Pages, get};

pub fn routes() -> Pages {
    Pages::new().route("/usage", get(page))
}

pub async fn page(State(kernel): State<Kernel>, Extension(op): Extension<Operator>, n: Notice) -> PageResult {
    let report = overview(&kernel).await?;
    Ok(html(StatusCode::OK, usage::render(meta(&op, "Usage", usage::SECTION, n.flash()), report)))
}
