//! `/mcp`: the MCP servers' state, tools and errors (what `GET /api/mcp/servers` answers), and
//! reconnecting one (`POST /api/mcp/servers/{name}/reconnect`).

use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use kennel_app::pages::mcp;
use kennel_kernel::Kernel;
use kennel_kernel::mcp::Mcp;

use super::{Notice, Operator, PageResult, html, meta, see_other};
use crate::routes::{Action, Pages, get, post};

pub fn routes() -> Pages {
    Pages::new()
        .route("/mcp", get(page))
        .route("/mcp/{name}/reconnect", post(reconnect, Action::named("mcp.reconnect")))
}

pub async fn page(State(kernel): State<Kernel>, Extension(op): Extension<Operator>, notice: Notice) -> PageResult {
    let servers = kernel.service::<Mcp>().servers().iter().map(|s| s.view()).collect();
    Ok(html(StatusCode::OK, mcp::render(meta(&op, "MCP servers", mcp::SECTION, notice.flash()), servers)))
}

pub async fn reconnect(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(name): Path<String>,
) -> PageResult {
    kernel.service::<Mcp>().reconnect(&name)?;
    Ok(see_other("/mcp", &format!("Reconnecting {name}.")))
}
