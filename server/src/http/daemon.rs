//! `/api/status`: what the daemon is doing (`kennel status` prints it); `/api/cluster`: the
//! daemons sharing its database.

use crate::routes::api;
use axum::Json;
use axum::extract::State;
use kennel_kernel::Kernel;
use kennel_kernel::cluster::Overview;
use kennel_kernel::status::DaemonStatus;

use super::error::ApiResult;
use crate::routes::Api;

pub fn routes() -> Api {
    Api::new().route(api!(status), &[]).route(api!(cluster), &[])
}

/// The daemon's version and uptime, its agents by state and its model use today.
#[utoipa::path(get, path = "/api/status", tag = "meta",
    responses((status = 200, description = "The daemon's status", body = DaemonStatus)))]
async fn status(State(kernel): State<Kernel>) -> ApiResult<Json<DaemonStatus>> {
    Ok(Json(kernel.status().await?))
}

/// The daemons sharing this daemon's database: live ones first, with their heartbeats and
/// the leases they hold (the agents whose turns they run, the channels they poll); then those
/// that stopped or died in the last hour. A SQLite home has one daemon.
#[utoipa::path(get, path = "/api/cluster", tag = "meta",
    responses((status = 200, description = "The cluster", body = Overview)))]
async fn cluster(State(kernel): State<Kernel>) -> ApiResult<Json<Overview>> {
    Ok(Json(kernel.cluster().overview().await?))
}
