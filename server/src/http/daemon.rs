//! `/api/status`: what the daemon is doing (`kennel status` prints it).

use axum::Json;
use axum::extract::State;
use kennel_kernel::Kernel;
use kennel_kernel::status::DaemonStatus;
use utoipa_axum::router::UtoipaMethodRouter;
use utoipa_axum::routes;

use super::error::ApiResult;

pub fn routes() -> Vec<UtoipaMethodRouter<Kernel>> {
    vec![routes!(status)]
}

/// The daemon's version and uptime, its agents by state and its model use today.
#[utoipa::path(get, path = "/api/status", tag = "meta",
    responses((status = 200, description = "The daemon's status", body = DaemonStatus)))]
async fn status(State(kernel): State<Kernel>) -> ApiResult<Json<DaemonStatus>> {
    Ok(Json(kernel.status().await?))
}
