//! The published contract: `GET /api/openapi.json`, a valid OpenAPI 3.1 document derived from
//! the handlers' types (`utoipa`), then finished here with what every operation shares —
//! the bearer scheme, the status table, and the error answers any operation can give (401 for
//! a missing or revoked token, 500 for a fault of this daemon, 404 where the path names
//! something, 422 where there is input to refuse).

use std::sync::{Arc, OnceLock};

use crate::routes::api;
use axum::Extension;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use kennel_kernel::{ErrorKind, Kernel};
use serde_json::{Value, json};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::routes::{Api, DocumentPart};
use crate::status::{meaning, status_for, status_table};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Kennel",
        description = "The Kennel agent daemon's REST API. Every `/api/*` route needs `Authorization: Bearer TOKEN` \
                       (create one with `kennel token create NAME`).\n\n\
                       Lists are paged: `?limit=` (1–1000, default 100) and `?cursor=`; the answer is the page's \
                       items as an array, with `X-Total-Count` (items on all pages) and, when there is a next page, \
                       `Link: <URL>; rel=\"next\"`."
    ),
    components(schemas(super::error::ErrorBody)),
    security(("bearer" = [])),
)]
struct ApiDoc;

pub(super) fn routes() -> Api {
    Api::new().route(api!(openapi_json), &[]).route(api!(healthz), &[])
}

/// The document every route starts from (info, the error body, global security).
pub(super) fn base() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// The methods of a path item, lower case as the document writes them.
pub(super) fn methods(item: &impl serde::Serialize) -> Vec<String> {
    const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
    let item = serde_json::to_value(item).unwrap_or_default();
    METHODS.iter().filter(|m| item.get(**m).is_some()).map(|m| m.to_string()).collect()
}

/// The served document, finished: every operation answers the shared error statuses, every
/// response has a description, and the bearer scheme and status table are in place.
pub(super) fn finish(mut doc: Value) -> Value {
    doc["components"]["securitySchemes"] = json!({ "bearer": { "type": "http", "scheme": "bearer", "description": "An API token: `kennel token create NAME`" } });
    let intro = doc["info"]["description"].as_str().unwrap_or_default().to_string();
    doc["info"]["description"] = Value::String(format!(
        "{intro}\n\n## Errors\n\nEvery error answers `{{\"error\": {{\"kind\", \"message\", \"fields\"?}}}}` \
         with the status of its kind:\n\n{}",
        status_table()
    ));
    require_name_to_create_an_agent_type(&mut doc);
    link_created_resources(&mut doc);
    if let Some(paths) = doc["paths"].as_object_mut() {
        for (path, item) in paths.iter_mut() {
            for (method, operation) in item.as_object_mut().into_iter().flatten() {
                if method != "parameters" {
                    finish_operation(path, operation);
                }
            }
        }
    }
    doc
}

/// `ManifestInput` serves both creating an agent type (the name in the body) and replacing one
/// (the name in the path), so its `name` is optional; creating one requires it.
fn require_name_to_create_an_agent_type(doc: &mut Value) {
    let body = &mut doc["paths"]["/api/templates"]["post"]["requestBody"]["content"]["application/json"]["schema"];
    if body.is_object() {
        let name = json!({ "$ref": "#/components/schemas/Name" });
        *body = json!({ "allOf": [body.clone(), { "required": ["name"], "properties": { "name": name } }] });
    }
}

/// OpenAPI links from each operation that creates something (`201`) to the operations on what
/// it created, so a client (and schemathesis's stateful phase) can follow them: `POST
/// /api/tasks` to `/api/tasks/{id}/…` with the new task's `id`, `POST /api/templates` to
/// `/api/templates/{name}` and to spawning an agent of the new type, a new session to its
/// messages.
fn link_created_resources(doc: &mut Value) {
    let paths = doc["paths"].as_object().cloned().unwrap_or_default();
    let operation_id = |path: &str, method: &str| paths[path][method]["operationId"].as_str().map(str::to_string);
    let mut links: Vec<(String, String, Value)> = Vec::new(); // (creating path, link name, link)
    for (path, item) in &paths {
        if item["post"]["responses"].get("201").is_none() {
            continue;
        }
        for (other, other_item) in &paths {
            let Some(rest) = other.strip_prefix(&format!("{path}/{{")) else { continue };
            let param = rest.split('}').next().unwrap_or_default();
            // What the created thing is called in the 201's body: a skill's change names it
            // `skill` (the tools' result too).
            let field = match (path.as_str(), param) {
                ("/api/skills", _) => "skill",
                (_, "name") => "name",
                _ => "id",
            };
            for method in methods(other_item) {
                if let Some(id) = operation_id(other, &method) {
                    let link =
                        json!({ "operationId": id, "parameters": { param: format!("$response.body#/{field}") } });
                    links.push((path.clone(), id, link));
                }
            }
        }
    }
    let session_messages = json!({ "operationId": "session_messages", "parameters": { "id": "$response.body#/id" } });
    links.push(("/api/agents/{id}/sessions".into(), "session_messages".into(), session_messages));
    let spawn = json!({ "operationId": "spawn_agent", "requestBody": { "template": "$response.body#/name" } });
    links.push(("/api/templates".into(), "spawn_agent".into(), spawn));
    for (path, name, link) in links {
        let created = &mut doc["paths"][&path]["post"]["responses"]["201"];
        if created.is_object() {
            created["links"][name] = link;
        }
    }
}

fn finish_operation(path: &str, op: &mut Value) {
    let public =
        op["security"].as_array().is_some_and(|s| s.iter().all(|r| r.as_object().is_some_and(|o| o.is_empty())));
    let params = op["parameters"].as_array().cloned().unwrap_or_default();
    let takes_input = op.get("requestBody").is_some() || params.iter().any(|p| p["in"] == "query");
    let responses = op["responses"].as_object_mut().expect("every operation has responses");
    let mut shared = vec![ErrorKind::Internal];
    if path.contains('{') {
        shared.push(ErrorKind::NotFound);
    }
    if takes_input {
        shared.push(ErrorKind::InvalidArguments);
    }
    for kind in shared {
        let status = status_for(kind).as_u16().to_string();
        responses.entry(status).or_insert_with(|| error_response(meaning(kind)));
    }
    if !public {
        responses.entry("401".to_string()).or_insert_with(|| error_response(UNAUTHORIZED));
    }
    // `cursor` marks a paged list; `limit` alone does not (a search's `limit` caps its hits).
    if params.iter().any(|p| p["in"] == "query" && p["name"] == "cursor")
        && let Some(ok) = responses.get_mut("200")
    {
        ok["headers"] = paging_headers();
    }
    for (status, response) in responses.iter_mut() {
        if response["description"].as_str().is_none_or(str::is_empty) {
            response["description"] = Value::String(default_description(status));
        }
        if !status.starts_with('2') && response.get("content").is_none() {
            response["content"] = error_content();
        }
    }
}

/// Every paged list (an operation taking `cursor`) answers with the same two headers; they are
/// added here rather than repeated in each handler's annotation.
fn paging_headers() -> Value {
    json!({
        (super::page::TOTAL_COUNT): {
            "description": "Items on all pages",
            "required": true,
            "schema": { "type": "integer", "format": "int64", "minimum": 0 },
        },
        "link": {
            "description": "`<URL>; rel=\"next\"` when there is a next page",
            "schema": { "type": "string" },
        },
    })
}

const UNAUTHORIZED: &str = "no token, or a token that is not (or no longer) valid";

fn error_content() -> Value {
    json!({ "application/json": { "schema": { "$ref": "#/components/schemas/ErrorBody" } } })
}

fn error_response(description: &str) -> Value {
    json!({ "description": description, "content": error_content() })
}

/// A description for a response the handler left without one: the status table's meaning
/// for error statuses, the reason phrase otherwise.
fn default_description(status: &str) -> String {
    let code: u16 = status.parse().unwrap_or(0);
    if code == 401 {
        return UNAUTHORIZED.to_string();
    }
    ErrorKind::ALL
        .into_iter()
        .find(|k| status_for(*k).as_u16() == code)
        .map(|k| meaning(k).to_string())
        .or_else(|| axum::http::StatusCode::from_u16(code).ok().and_then(|s| s.canonical_reason()).map(str::to_string))
        .unwrap_or_else(|| "the answer".to_string())
}

/// The document as served, shared by every request. It is derived from the handlers
/// (`utoipa_axum::routes!` for each route) and finished when it is first asked for, not at
/// start: deriving it was over half of a daemon's start-up, and memory the allocator keeps.
#[derive(Clone)]
pub struct Document(Arc<(Vec<DocumentPart>, OnceLock<String>)>);

impl Document {
    pub(super) fn new(routes: Vec<DocumentPart>) -> Document {
        Document(Arc::new((routes, OnceLock::new())))
    }

    /// The document's text (JSON), finished when first asked for.
    pub fn finished(&self) -> &str {
        let (routes, finished) = &*self.0;
        finished.get_or_init(|| {
            let derived =
                routes.iter().map(|route| route()).fold(OpenApiRouter::with_openapi(base()), OpenApiRouter::routes);
            let derived = serde_json::to_value(derived.into_openapi()).expect("the OpenAPI document serialises");
            serde_json::to_string_pretty(&finish(derived)).expect("the document serialises")
        })
    }
}

/// This document: the REST API's contract (OpenAPI 3.1).
#[utoipa::path(get, path = "/api/openapi.json", tag = "meta",
    responses((status = 200, description = "The OpenAPI 3.1 document of this API", content_type = "application/json", body = Object)))]
async fn openapi_json(Extension(document): Extension<Document>) -> impl IntoResponse {
    ([(CONTENT_TYPE, "application/json")], document.finished().to_string())
}

/// What `/healthz` answers.
#[derive(serde::Serialize, utoipa::ToSchema)]
struct Health {
    /// Always `ok` while the daemon serves requests.
    status: &'static str,
    /// The daemon's version.
    version: &'static str,
}

/// A challenge the CLI sends: short, so answering it costs nothing.
const MAX_CHALLENGE: usize = 128;

/// Whether the daemon is up. Needs no token. With `X-Kennel-Challenge`, the answer carries
/// `X-Kennel-Proof`, by which the CLI knows this is its home's daemon before it sends its
/// token (another user may have taken the port after a crash).
#[utoipa::path(get, path = "/healthz", tag = "meta", security(()),
    params(("x-kennel-challenge" = Option<String>, Header, description = "A random value from the CLI; the answer's X-Kennel-Proof is its HMAC with this run's CLI token. One over 128 characters is not answered (no proof header)")),
    responses((status = 200, description = "The daemon is serving", body = Health,
        headers(("x-kennel-proof" = String, description = "Present when a challenge was sent")))))]
pub(super) async fn healthz(
    axum::extract::State(kernel): axum::extract::State<Kernel>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    let health = axum::Json(Health { status: "ok", version: env!("CARGO_PKG_VERSION") });
    let challenge =
        headers.get("x-kennel-challenge").and_then(|v| v.to_str().ok()).filter(|c| c.len() <= MAX_CHALLENGE);
    match challenge.and_then(|c| kernel.auth().prove_cli(c)) {
        Some(proof) => ([("x-kennel-proof", proof)], health).into_response(),
        None => health.into_response(),
    }
}
