//! `/cluster`: the daemons sharing the database, from the kernel's cluster service (the same
//! `Cluster::overview` as `GET /api/cluster`).

use axum::extract::{Extension, State};
use axum::http::StatusCode;
use kennel_app::pages::cluster::{self, ClusterPage};
use kennel_kernel::Kernel;

use super::{Notice, Operator, PageResult, html, meta};
use crate::routes::{Pages, get};

pub fn routes() -> Pages {
    Pages::new().route("/cluster", get(page))
}

pub async fn page(State(kernel): State<Kernel>, Extension(op): Extension<Operator>, notice: Notice) -> PageResult {
    let overview = kernel.cluster().overview().await?;
    let agent_names = kernel.agents().list().iter().map(|a| (a.id.to_string(), a.name.clone())).collect();
    let meta = meta(&op, "Cluster", cluster::SECTION, notice.flash());
    Ok(html(StatusCode::OK, cluster::render(meta, ClusterPage { overview, agent_names })))
}
