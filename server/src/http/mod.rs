//! The HTTP front's machine side: the REST API (`/api/*`, described by `/api/openapi.json`),
//! A2A (`/a2a`, `/.well-known/…`) and `/healthz`. Handlers are thin: parse, call one kernel
//! service, map the result.

mod a2a;
mod agents;
mod auth;
mod body;
mod browser;
pub mod channels;
mod daemon;
mod error;
mod events;
mod inbox;
mod knowledge;
mod mcp;
mod mcp_server;
mod memory;
mod openapi;
mod page;
mod processes;
mod questions;
mod schedules;
mod skills;
mod tasks;
mod templates;
mod tools;
mod usage;
mod workflows;

use axum::Router;
use axum::middleware;
use kennel_kernel::Kernel;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

pub use auth::Bearer;
pub use error::ApiError;

/// Every documented API route, one line per front module.
fn api_routes() -> impl Iterator<Item = UtoipaMethodRouter<Kernel>> {
    [
        templates::routes(),
        agents::routes(),
        tools::routes(),
        events::routes(),
        workflows::routes(),
        tasks::routes(),
        memory::routes(),
        schedules::routes(),
        usage::routes(),
        knowledge::routes(),
        skills::routes(),
        channels::routes(),
        inbox::routes(),
        questions::routes(),
        browser::routes(),
        processes::routes(),
        mcp::routes(),
        daemon::routes(),
        openapi::routes(),
    ]
    .into_iter()
    .flatten()
}

/// The REST API (token-protected except `/healthz`), A2A and health, with the OpenAPI document.
pub fn router(kernel: Kernel) -> Router<Kernel> {
    let routes = api_routes().fold(OpenApiRouter::with_openapi(openapi::base()), OpenApiRouter::routes);
    let (api, document) = routes.split_for_parts();
    let api = api
        .route("/api/agents/{id}/mcp", mcp_server::route(&kernel))
        .layer(axum::Extension(openapi::Document::new(&document)))
        .layer(middleware::from_fn_with_state(kernel.clone(), crate::actions::record))
        .layer(middleware::from_fn_with_state(kernel, auth::require_token));
    Router::new()
        .merge(api)
        .merge(a2a::router())
        .merge(channels::inbound_router())
        .layer(middleware::map_response(machine_headers))
}

/// Every machine-side answer (the API, A2A, webhooks, health) is what it says it is and is
/// kept by no cache: it can carry an agent's words or a task's result.
async fn machine_headers(mut res: axum::response::Response) -> axum::response::Response {
    use axum::http::HeaderValue;
    use axum::http::header::{CACHE_CONTROL, X_CONTENT_TYPE_OPTIONS};
    let headers = res.headers_mut();
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.entry(CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    res
}

/// The answer for a path no route serves: a JSON error like every other.
pub async fn not_found() -> ApiError {
    kennel_kernel::Error::not_found("no such route; the API is described at /api/openapi.json").into()
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    /// `(path, method)` of every route `api_routes` adds: what the router serves, since routes
    /// reach it only through `api_routes` (`router` folds them in).
    fn served() -> BTreeSet<(String, String)> {
        let mut served = BTreeSet::new();
        for (_, paths, _) in api_routes() {
            for (path, item) in &paths.paths {
                served.extend(openapi::methods(item).into_iter().map(|m| (path.clone(), m)));
            }
        }
        served
    }

    /// Every route the router is built from is in the finished document with its methods, and
    /// nothing else is: `finish` drops none and adds none. (That each documented operation
    /// is served by the running daemon is `openapi::every_documented_operation_is_served`.)
    #[test]
    fn the_document_lists_every_route_the_router_serves() {
        let routes = api_routes().fold(OpenApiRouter::with_openapi(openapi::base()), OpenApiRouter::routes);
        let document = openapi::finish(serde_json::to_value(routes.split_for_parts().1).unwrap());
        let mut documented = BTreeSet::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            documented.extend(openapi::methods(item).into_iter().map(|m| (path.clone(), m)));
        }
        let served = served();
        assert_eq!(served, documented);
        assert!(served.len() > 30, "{served:?}");
    }

    /// Every operation has its own `operationId` (utoipa takes the handler's name, so two
    /// modules' `list` would clash, and a client generator or the contract run refuses that).
    #[test]
    fn no_two_operations_share_an_id() {
        let routes = api_routes().fold(OpenApiRouter::with_openapi(openapi::base()), OpenApiRouter::routes);
        let document = serde_json::to_value(routes.split_for_parts().1).unwrap();
        let mut seen = BTreeMap::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                if let Some(id) = operation["operationId"].as_str()
                    && let Some(first) = seen.insert(id.to_string(), format!("{method} {path}"))
                {
                    panic!("operationId `{id}` of {method} {path} is also {first}'s");
                }
            }
        }
        assert!(seen.len() > 30, "{seen:?}");
    }

    /// No two schemas share a name: utoipa keeps the last one registered under a name, so a
    /// clash would describe one type's responses with another's schema.
    #[test]
    fn no_two_schemas_share_a_name() {
        let mut seen: BTreeMap<String, serde_json::Value> = BTreeMap::new();
        let mut clashes = BTreeSet::new();
        for (schemas, _, _) in api_routes() {
            for (name, schema) in schemas {
                let schema = serde_json::to_value(schema).unwrap();
                match seen.get(&name) {
                    Some(first) if *first != schema => {
                        clashes.insert(name);
                    }
                    Some(_) => {}
                    None => {
                        seen.insert(name, schema);
                    }
                }
            }
        }
        assert!(clashes.is_empty(), "schemas registered twice: {clashes:?}");
    }
}
