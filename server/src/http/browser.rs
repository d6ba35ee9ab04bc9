//! `/api/agents/{id}/browser/tabs`: the tabs an agent has open in the browser, what the
//! dashboard's browser page shows.

use crate::routes::api;
use axum::Json;
use axum::extract::{Path, State};
use kennel_kernel::Kernel;
use kennel_kernel::browser::Browsers;
use kennel_kernel::browser::TabView;

use super::error::ApiResult;
use crate::routes::Api;

pub fn routes() -> Api {
    Api::new().route(api!(tabs), &[])
}

/// The agent's open tabs (empty when it has none, or `[browser]` is not configured).
#[utoipa::path(get, path = "/api/agents/{id}/browser/tabs", tag = "browser",
    params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)")),
    responses((status = 200, description = "The agent's open tabs", body = Vec<TabView>), (status = 404, description = "No such agent")))]
async fn tabs(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Vec<TabView>>> {
    let agent = kernel.agents().get(&id)?;
    Ok(Json(kernel.optional::<Browsers>().map(|b| b.tabs(agent.id)).unwrap_or_default()))
}
