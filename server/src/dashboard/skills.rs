//! `/skills` and `/skills/{name}`: the daemon's skills and one skill's history, from the
//! skills service.

use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use kennel_app::Nav;
use kennel_app::pages::skills;
use kennel_kernel::Kernel;

use super::{Operator, PageResult, html, meta};

pub async fn list(State(kernel): State<Kernel>, Extension(op): Extension<Operator>) -> PageResult {
    let all = kernel.skills().list().await?;
    Ok(html(StatusCode::OK, skills::render_list(meta(&op, "Skills", Nav::Skills, None), all)))
}

pub async fn one(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
) -> PageResult {
    let skill = kernel.skills().get(&name).await?;
    let history = kernel.skills().history(&name).await?;
    let title = format!("{} · skill", skill.manifest.name);
    Ok(html(StatusCode::OK, skills::render_skill(meta(&op, title, Nav::Skills, None), skill, history)))
}
