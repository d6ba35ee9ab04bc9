//! `/api/providers`: the LLM providers of `config.toml`, listed, added, edited, removed and
//! tested while the daemon runs (the kernel writes the file back, comments kept).

use crate::routes::api;
use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use kennel_kernel::Kernel;
use kennel_kernel::error::Error;
use kennel_kernel::llm::{ProviderConfig, ProviderInfo, ProviderSaved, ProviderTest};
use serde::Deserialize;
use utoipa::ToSchema;

use super::auth::Bearer;
use super::body::JsonBody;
use super::error::ApiResult;
use crate::routes::{Action, Api};
use kennel_kernel::tool::Caller;

pub fn routes() -> Api {
    Api::new()
        .route(api!(list_providers), &[])
        .route(
            api!(get_provider, save_provider, remove_provider),
            &[(Method::PUT, Action::named("provider.save")), (Method::DELETE, Action::named("provider.remove"))],
        )
        .route(api!(make_default_provider), &[(Method::POST, Action::named("provider.default"))])
        .route(api!(test_provider), &[(Method::POST, Action::named("provider.test"))])
}

/// Every provider config.toml defines, by name: its settings, whether it is the default,
/// and whether its key is set (never the key).
#[utoipa::path(get, path = "/api/providers", tag = "meta",
    responses((status = 200, description = "The providers", body = Vec<ProviderInfo>)))]
async fn list_providers(State(kernel): State<Kernel>) -> Json<Vec<ProviderInfo>> {
    Json(kernel.provider_infos())
}

/// One provider.
#[utoipa::path(get, path = "/api/providers/{name}", tag = "meta",
    params(("name" = String, Path, description = "The provider's name in config.toml")),
    responses(
        (status = 200, description = "The provider", body = ProviderInfo),
        (status = 404, description = "No provider of that name"),
    ))]
async fn get_provider(State(kernel): State<Kernel>, Path(name): Path<String>) -> ApiResult<Json<ProviderInfo>> {
    Ok(Json(kernel.provider_info(&name)?))
}

/// Changing a provider moves where the daemon sends its keys: the machine's CLI may (its token
/// is the home's), an operator may on the dashboard; an API token only reads and tests.
fn may_change_providers(caller: &Caller) -> Result<(), Error> {
    super::auth::cli_only(
        caller,
        "changing a provider moves where the daemon sends its keys: an operator does it on the dashboard's provider page, or `kennel provider` on the daemon's machine; API tokens may list and test providers",
    )
}

#[utoipa::path(put, path = "/api/providers/{name}", tag = "meta",
    params(("name" = String, Path, description = "The provider's name: 1-64 lowercase letters, digits, `-` or `_`")),
    request_body(content = ProviderConfig, description = "The provider's settings"),
    responses(
        (status = 200, description = "Replaced", body = ProviderSaved),
        (status = 201, description = "Added", body = ProviderSaved),
        (status = 403, description = "An API token other than the CLI's"),
        (status = 422, description = "A bad setting, or a config.toml that would not load with it (nothing is written)"),
    ))]
async fn save_provider(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(name): Path<String>,
    JsonBody(settings): JsonBody<ProviderConfig>,
) -> ApiResult<Response> {
    may_change_providers(&caller)?;
    let saved = kernel.save_provider(&name, settings, false).await?;
    let status = if saved.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(saved)).into_response())
}

/// Removes the provider from config.toml; refused while an agent or an agent type would
/// call it (naming it, or naming none while it is the default). Only the CLI's token may.
#[utoipa::path(delete, path = "/api/providers/{name}", tag = "meta",
    params(("name" = String, Path, description = "The provider's name in config.toml")),
    responses(
        (status = 204, description = "Removed"),
        (status = 403, description = "An API token other than the CLI's"),
        (status = 404, description = "No provider of that name"),
        (status = 409, description = "Agents or agent types use it, or it is the default among several"),
    ))]
async fn remove_provider(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    may_change_providers(&caller)?;
    kernel.remove_provider(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Makes the provider the default: the one agents whose type names no provider use
/// (`[kernel] default_provider`). Only the CLI's token may.
#[utoipa::path(post, path = "/api/providers/{name}/default", tag = "meta",
    params(("name" = String, Path, description = "The provider's name in config.toml")),
    responses(
        (status = 204, description = "It is the default"),
        (status = 403, description = "An API token other than the CLI's"),
        (status = 404, description = "No provider of that name"),
    ))]
async fn make_default_provider(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    may_change_providers(&caller)?;
    kernel.make_default_provider(&name).await?;
    Ok(StatusCode::NO_CONTENT)
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
