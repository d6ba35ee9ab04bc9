//! `/api/providers/{name}/test`: "test connection" for a configured LLM provider.

use crate::routes::api;
use axum::Json;
use axum::extract::{Path, State};
use kennel_kernel::Kernel;
use kennel_kernel::llm::ProviderTest;
use serde::Deserialize;
use utoipa::ToSchema;

use super::body::JsonBody;
use super::error::ApiResult;
use crate::routes::{Action, Api};

pub fn routes() -> Api {
    Api::new().route(api!(test_provider), &[(axum::http::Method::POST, Action::named("provider.test"))])
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
struct TestBody {
    /// The model to call; by default the first `[providers.NAME.models.MODEL]` config.toml
    /// describes.
    #[serde(default)]
    model: Option<String>,
}

/// Sends the provider one tiny message ("Reply with the single word: ok", at most 32 tokens)
/// and answers how it went: the model's reply and the time it took, or the provider's own
/// error. The call is not counted in usage; it shows as the provider's last call.
#[utoipa::path(post, path = "/api/providers/{name}/test", tag = "meta",
    params(("name" = String, Path, description = "The provider's name in config.toml")),
    request_body(content = TestBody, description = "Optional: `{}` tests the first configured model"),
    responses(
        (status = 200, description = "The provider answered", body = ProviderTest),
        (status = 404, description = "No provider of that name"),
        (status = 422, description = "No model named, and config.toml describes none of the provider's"),
        (status = 429, description = "The provider refused for now (rate limit)"),
        (status = 502, description = "The provider answered with an error (its words are in the message)"),
        (status = 503, description = "The provider's API key is not set"),
        (status = 504, description = "The provider did not answer in time"),
    ))]
async fn test_provider(
    State(kernel): State<Kernel>,
    Path(name): Path<String>,
    JsonBody(body): JsonBody<TestBody>,
) -> ApiResult<Json<ProviderTest>> {
    Ok(Json(kernel.test_provider(&name, body.model.as_deref()).await?))
}
