//! The HTTP front's machine side: the REST API (`/api/*`, described by `/api/openapi.json`),
//! A2A (`/a2a`, `/.well-known/…`) and `/healthz`. Handlers are thin: parse, call one kernel
//! service, map the result.

mod a2a;
mod agents;
mod auth;
mod body;
mod error;
mod events;
mod openapi;
mod page;
mod schedules;
mod tasks;
mod templates;
mod tools;
mod workflows;

use std::collections::{BTreeMap, BTreeSet};

use axum::Router;
use axum::middleware;
use kennel_kernel::Kernel;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

pub use error::ApiError;

/// Every documented API route, one line per front module.
fn api_routes() -> Vec<UtoipaMethodRouter<Kernel>> {
    [
        templates::routes(),
        agents::routes(),
        tools::routes(),
        events::routes(),
        workflows::routes(),
        tasks::routes(),
        schedules::routes(),
        openapi::routes(),
    ]
    .concat()
}

/// The API as registered: the router and, recorded by the same calls that add each route,
/// every path and method it serves and every schema the routes bring. A test compares those
/// with the published document.
pub(crate) struct Api {
    router: OpenApiRouter<Kernel>,
    /// `(path, method)` of every route served.
    served: BTreeSet<(String, String)>,
    /// Each schema name, with the schema it was first registered with.
    schemas: BTreeMap<String, serde_json::Value>,
    /// Names registered twice with different schemas (one would silently replace the other).
    clashes: BTreeSet<String>,
}

impl Api {
    fn new() -> Api {
        Api {
            router: OpenApiRouter::with_openapi(openapi::base()),
            served: BTreeSet::new(),
            schemas: BTreeMap::new(),
            clashes: BTreeSet::new(),
        }
    }

    fn routes(mut self, route: UtoipaMethodRouter<Kernel>) -> Api {
        let (schemas, paths, _) = &route;
        for (path, item) in &paths.paths {
            for method in openapi::methods(item) {
                self.served.insert((path.clone(), method));
            }
        }
        for (name, schema) in schemas {
            let schema = serde_json::to_value(schema).unwrap_or_default();
            match self.schemas.get(name) {
                Some(seen) if *seen != schema => {
                    self.clashes.insert(name.clone());
                }
                Some(_) => {}
                None => {
                    self.schemas.insert(name.clone(), schema);
                }
            }
        }
        self.router = self.router.routes(route);
        self
    }

    fn build() -> Api {
        api_routes().into_iter().fold(Api::new(), Api::routes)
    }
}

/// The REST API (token-protected except `/healthz`), A2A and health, with the OpenAPI document.
pub fn router(kernel: Kernel) -> Router<Kernel> {
    let (api, document) = Api::build().router.split_for_parts();
    let document = openapi::finish(document);
    let api = api
        .layer(axum::Extension(openapi::Document::new(&document)))
        .layer(middleware::from_fn_with_state(kernel, auth::require_token));
    Router::new().merge(api).merge(a2a::router())
}

/// The answer for a path no route serves: a JSON error like every other.
pub async fn not_found() -> ApiError {
    kennel_kernel::Error::not_found("no such route; the API is described at /api/openapi.json").into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every route added through `Api` is in the finished document with its methods: `finish`
    /// drops none and adds none. (Routes reach the router only through `Api::routes`; that each
    /// documented operation is served is `openapi::every_documented_operation_is_served`.)
    #[test]
    fn the_document_lists_every_route_the_router_serves() {
        let api = Api::build();
        let served = api.served.clone();
        let (_, document) = api.router.split_for_parts();
        let document = openapi::finish(document);
        let mut documented = BTreeSet::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            for method in openapi::methods(item) {
                documented.insert((path.clone(), method));
            }
        }
        assert_eq!(served, documented);
        assert!(served.len() > 30, "{served:?}");
    }

    /// No two schemas share a name: utoipa keeps the last one registered under a name, so a
    /// clash would describe one type's responses with another's schema.
    #[test]
    fn no_two_schemas_share_a_name() {
        assert!(Api::build().clashes.is_empty(), "schemas registered twice: {:?}", Api::build().clashes);
    }
}
