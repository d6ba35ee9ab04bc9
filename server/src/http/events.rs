//! `POST /api/events`: publish on the event bus, as `event_publish` does.

use crate::routes::api;
use axum::Json;
use axum::extract::{Extension, State};
use axum::http::Method;
use kennel_kernel::Kernel;
use kennel_kernel::event::{Events, Origin, Published};
use serde::Deserialize;
use utoipa::ToSchema;

use super::auth::Bearer;
use super::body::JsonBody;
use super::error::ApiResult;
use crate::routes::{Action, Api};

pub fn routes() -> Api {
    Api::new().route(api!(publish_event), &[(Method::POST, Action::named("event.publish"))])
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct EventBody {
    /// Like `inbox.new_file`: 1–128 lowercase letters, digits, `.`, `_` or `-`.
    #[schema(pattern = r"^[a-z0-9._-]{1,128}$")]
    event_type: String,
    /// Any JSON, at most 64 KiB as JSON text; triggers can put it into their prompt with
    /// `{{payload}}`.
    #[serde(default)]
    payload: serde_json::Value,
}

/// Publishes an event. Every running agent with a matching `[[trigger]]` gets a headless turn
/// (within its cooldown and fire limit); the answer lists what fired and what did not, and why.
#[utoipa::path(post, path = "/api/events", tag = "events", request_body = EventBody,
    responses((status = 200, description = "What fired and what did not, and why", body = Published)))]
async fn publish_event(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    JsonBody(body): JsonBody<EventBody>,
) -> ApiResult<Json<Published>> {
    let origin = Origin { source: caller.audit_label(), ..Default::default() };
    Ok(Json(kernel.service::<Events>().publish(&body.event_type, body.payload, origin).await?))
}
