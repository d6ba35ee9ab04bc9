//! `POST /api/events`: publish on the event bus, as `event_publish` does.

use axum::Json;
use axum::extract::{Extension, State};
use kennel_kernel::Kernel;
use kennel_kernel::event::{Origin, Published, publish};
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::TokenName;
use super::body::JsonBody;
use super::error::{ApiResult, ErrorBody};

pub fn router() -> OpenApiRouter<Kernel> {
    OpenApiRouter::new().routes(routes!(publish_event))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct EventBody {
    /// Like `inbox.new_file`.
    event_type: String,
    #[serde(default)]
    #[schema(value_type = Object)]
    payload: serde_json::Value,
}

/// Publishes an event. Every running agent with a matching `[[trigger]]` gets a headless turn
/// (within its cooldown and fire limit); the answer lists what fired and what did not, and why.
#[utoipa::path(post, path = "/api/events", tag = "events", request_body = EventBody,
    responses((status = 200, body = Published), (status = 422, body = ErrorBody)))]
async fn publish_event(
    State(kernel): State<Kernel>,
    Extension(TokenName(token)): Extension<TokenName>,
    JsonBody(body): JsonBody<EventBody>,
) -> ApiResult<Json<Published>> {
    let origin = Origin { source: format!("api:{token}"), ..Default::default() };
    Ok(Json(publish(&kernel, &body.event_type, body.payload, origin).await?))
}
