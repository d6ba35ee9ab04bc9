//! `/api/templates`: agent types. One validator and one store, shared with the
//! `agent_type_create` tool and the dashboard (all in `kennel_kernel::agent`).

use crate::routes::api;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::Method;
use axum::http::{HeaderMap, StatusCode, header::LOCATION};
use axum::response::{IntoResponse, Response};
use kennel_kernel::Kernel;
use kennel_kernel::agent::Name;
use kennel_kernel::agent::{AgentType, ApplyRequest, ManifestInput, TypeApplication};
use kennel_kernel::page::PageQuery;

use super::body::{JsonBody, ManifestBody, toml_response, wants_toml};
use super::error::ApiResult;
use super::page::PageParams;
use crate::routes::{Action, Api};

pub fn routes() -> Api {
    Api::new()
        .route(api!(list_templates, create_template), &[(Method::POST, Action::named("type.create"))])
        .route(
            api!(get_template, replace_template, delete_template),
            &[(Method::PUT, Action::named("type.update")), (Method::DELETE, Action::named("type.delete"))],
        )
        .route(api!(apply_template), &[(Method::POST, Action::named("type.apply"))])
}

/// Every agent type, by name.
#[utoipa::path(get, path = "/api/templates", tag = "agent types", params(PageQuery, ("cursor" = inline(Option<Name>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last agent type's name)")),
    responses((status = 200, description = "A page of agent types", body = Vec<AgentType>)))]
async fn list_templates(State(kernel): State<Kernel>, page: PageParams) -> ApiResult<Response> {
    Ok(page.answer_serialised(kernel.agents().types_page_json(&page.request)?))
}

/// Creates an agent type from a manifest (JSON, or TOML with `Content-Type: application/toml`).
/// A name already used by an agent type or a running agent is a 409, never an overwrite.
#[utoipa::path(post, path = "/api/templates", tag = "agent types",
    request_body(content(
        (ManifestInput = "application/json"),
        (String = "application/toml"),
    ), description = "A manifest; top-level `tools` is shorthand for `capabilities.tools`"),
    responses(
        (status = 201, description = "The agent type as stored", body = AgentType, headers(("location" = String, description = "Its URL"), ("kennel-warning" = String, description = "When a grant matches no tool on this daemon: which, in words (the type is saved all the same)"))),
        (status = 409, description = "The name is taken by an agent type or a running agent"),
        (status = 422, description = "Invalid fields, each listed"),
    ))]
async fn create_template(
    State(kernel): State<Kernel>,
    headers: HeaderMap,
    ManifestBody(input): ManifestBody,
) -> ApiResult<Response> {
    let created = kernel.agents().create_type(input).await?;
    let location = format!("/api/templates/{}", created.manifest.name);
    let body = saved_response(&kernel, &headers, &created);
    Ok((StatusCode::CREATED, [(LOCATION, location)], body).into_response())
}

/// One agent type; `Accept: application/toml` gives the manifest as TOML.
#[utoipa::path(get, path = "/api/templates/{name}", tag = "agent types",
    params(("name" = String, Path, description = "The agent type's name")),
    responses(
        (status = 200, description = "The agent type", content(
            (AgentType = "application/json"),
            (String = "application/toml"),
        )),
        (status = 404, description = "No agent type of that name"),
    ))]
async fn get_template(
    State(kernel): State<Kernel>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    Ok(template_response(&headers, &*kernel.agents().get_type(&name)?))
}

/// Replaces an agent type's whole manifest. Agents already made from it keep their own copy.
#[utoipa::path(put, path = "/api/templates/{name}", tag = "agent types",
    params(("name" = String, Path, description = "The agent type's name")),
    request_body(content(
        (ManifestInput = "application/json"),
        (String = "application/toml"),
    ), description = "The whole new manifest; a `name`, if given, must be the one in the path"),
    responses(
        (status = 200, description = "The agent type as stored", body = AgentType, headers(("kennel-warning" = String, description = "When a grant matches no tool on this daemon: which, in words (the type is saved all the same)"))),
        (status = 404, description = "No agent type of that name"),
        (status = 422, description = "Invalid fields, each listed (a `name` other than the path's among them)"),
    ))]
async fn replace_template(
    State(kernel): State<Kernel>,
    headers: HeaderMap,
    Path(name): Path<String>,
    ManifestBody(input): ManifestBody,
) -> ApiResult<Response> {
    Ok(saved_response(&kernel, &headers, &*kernel.agents().replace_type(&name, input).await?))
}

/// Deletes an agent type. Agents made from it keep running.
#[utoipa::path(delete, path = "/api/templates/{name}", tag = "agent types",
    params(("name" = String, Path, description = "The agent type's name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No agent type of that name"),
    ))]
async fn delete_template(State(kernel): State<Kernel>, Path(name): Path<String>) -> ApiResult<StatusCode> {
    kernel.agents().delete_type(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Applies an agent type to the agents made from it (each keeps its own copy of the manifest
/// until then), or previews that: for every running or stopped agent of the type, the fields
/// that would change, grants as gained and lost. A dry run unless `dry_run` is `false`; give
/// the preview's `type_updated_at` as `expected_updated_at` to refuse a type saved since.
#[utoipa::path(post, path = "/api/templates/{name}/apply", tag = "agent types",
    params(("name" = String, Path, description = "The agent type's name")),
    request_body(content = Option<ApplyRequest>, description = "`{}` or no body: a preview"),
    responses(
        (status = 200, description = "What applying changes (or changed) in each agent", body = TypeApplication),
        (status = 404, description = "No agent type of that name"),
        (status = 409, description = "The type was saved after `expected_updated_at`"),
        (status = 422, description = "A bad body"),
    ))]
async fn apply_template(
    State(kernel): State<Kernel>,
    Path(name): Path<String>,
    JsonBody(req): JsonBody<ApplyRequest>,
) -> ApiResult<Response> {
    let application = kernel.agents().apply_type(&name, &req).await?;
    let mut response = Json(application).into_response();
    if req.dry_run {
        response.extensions_mut().insert(crate::actions::Unchanged);
    }
    Ok(response)
}

/// The header a saved type's answer carries when a grant matches no tool on this daemon
/// (`Registry::grant_warning`'s words): what `kennel type apply` prints through the daemon.
pub const GRANT_WARNING_HEADER: &str = "kennel-warning";

/// A created or replaced type's answer, with [`GRANT_WARNING_HEADER`] when a grant matches
/// no tool (saved all the same: a tool of that name may be added later).
fn saved_response(kernel: &Kernel, headers: &HeaderMap, t: &AgentType) -> Response {
    let mut response = template_response(headers, t);
    let warning = kernel.tools().grant_warning(&t.manifest.capabilities.tools);
    // A header holds visible ASCII; a grant outside it (none parse today) goes unsaid here.
    if let Some(value) = warning.and_then(|w| axum::http::HeaderValue::from_str(&w).ok()) {
        response.headers_mut().insert(GRANT_WARNING_HEADER, value);
    }
    response
}

fn template_response(headers: &HeaderMap, t: &AgentType) -> Response {
    if wants_toml(headers) { toml_response(&t.manifest) } else { Json(t).into_response() }
}
