//! The HTTP front's machine side: the REST API (`/api/*`, described by `/api/openapi.json`),
//! A2A (`/a2a`, `/.well-known/…`) and `/healthz`. Handlers are thin: parse, call one kernel
//! service, map the result.
//!
//! # Design notes
//!
//! ## The REST contract
//!
//! - **One way to add a route.** Each REST module exposes `routes() -> routes::Api`
//!   (`routes!` over handlers with `#[utoipa::path]`, each with the operator-action name of its
//!   state-changing methods: `server/src/routes.rs`); `http/mod.rs` merges the modules
//!   (`api_routes`), and the router is folded from that list alone, each route added to the
//!   router and the document together. Unit tests read the same list: its routes are exactly the
//!   finished document's operations, and no schema name comes with two different schemas
//!   (utoipa silently keeps one; the schedule `Fire` was once shadowed by the event `Fire`, now
//!   `TriggerFire`). A system test calls every
//!   documented operation on the running daemon and checks it is served (neither the fallback nor
//!   405). `/healthz` is documented (no security); A2A (`/a2a`, `/.well-known/…`) is not: it is
//!   described by its own protocol and cards.
//! - **The finished document** (`http/openapi.rs::finish`, run when the document is first
//!   asked for: start-up keeps only the derived JSON text): the bearer scheme declared once and
//!   applied globally (`/healthz` opts out); every operation answers 500 (`Internal`), 401 unless
//!   public, 404 where its path names something, 422 where it takes a body or query parameters;
//!   every response has a description (the status table's meaning for errors); links from each
//!   `201` to the operations on what it created. Valid OpenAPI 3.1 (checked with
//!   openapi-spec-validator).
//! - **Paging** (`kernel/src/page.rs`, `http/page.rs`): every list takes `?limit=` (1–1000,
//!   default 100) and `?cursor=`; the body stays a JSON array (today's clients read the first
//!   page unchanged), `X-Total-Count` counts every page, and `Link: <URL>; rel="next"` (the
//!   request's other parameters kept) points at the next page. Cursors are keyset: the sort key
//!   of the page's last item, of a form each list documents with a pattern (`page::Key`: a name,
//!   an id, a position for the in-memory tool lists, a row number, a task's `PRIORITY:ID`), so
//!   any cursor of that form is a valid place to continue from and others are 422. A page never
//!   skips or repeats an item because others were added meanwhile (positions in the tool list
//!   are the exception: a dynamic provider's change shifts them). **Decision:** the default page
//!   is 100 for every list (`GET /api/tasks` used to stop silently at 500 rows, schedules at
//!   1,000); the header says how many there are.
//! - **The contract run** (`tests/contract/run` → `check.py`, in `./scripts/test` after the
//!   release build): the release binary on a fresh home with the fake LLM as its provider; the
//!   document is validated, then schemathesis 4.32 runs every check (its default; `--checks all`
//!   would override the one exclusion below) over every operation: examples, coverage, fuzzing and stateful phases, with a fixed seed (reproducible
//!   CI; `CONTRACT_SEED=random` for new inputs) and a 120 s budget. `schemathesis.toml` says per
//!   operation what JSON Schema cannot: that creating agent types and workflows, spawning,
//!   posting and reassigning tasks and invoking a tool also refuse input for semantic rules
//!   (cron syntax, time zones, `{{steps.N}}` placeholders, names of things that must exist, the
//!   tool's own argument schema), and that the operations that run a turn or a tool answer 502,
//!   503 and 504 by the status table (only 500 is a fault). One check is off for the operations
//!   on `/api/workflows/{id}` and `/api/agents/{id}`: `ensure_resource_availability`. Those
//!   resources are addressed by id *or* name, and a stateful scenario was seen making a workflow
//!   named `0`, deleting `/api/workflows/0` with a value it generated, then getting 404 for the
//!   id it was given; the check cannot tell that both paths named one workflow. `use_after_free`
//!   and the rest still run there. The daemon's log is kept in
//!   `target/contract-daemon.log` and its errors printed when the run fails.
//!
//! ## Decisions
//!
//! - **`PUT /api/templates/{name}` replaces an existing type** (404 if unknown, so a deleted type is not brought back by a late `PUT`; the body's `name`,
//!   if given, must match). Agents already made from a type keep their own copy of the manifest,
//!   so editing or deleting a type never changes a running agent; an agent's grants are changed
//!   on the agent (`PUT /api/agents/{id}/capabilities`, `kennel agent grant`).
//! - **Stopping and removing an agent.** `POST /api/agents/{id}/stop` (and the dashboard's
//!   Stop) stops it: its turns are cancelled, its schedules paused, it stays listed and found by
//!   id, its name is free. `DELETE /api/agents/{id}` (the dashboard's Remove on a stopped agent)
//!   stops it if it runs and removes it: status `removed`, no longer listed or found (404), its
//!   sessions, schedules (paused) and audit rows kept, so history still names it.
//!   **Decision:** DELETE used to only stop; a deleted resource that still answers `GET` is what
//!   REST clients (and schemathesis's `use_after_free` check) call a bug, so stopping got its own
//!   operation and DELETE now means what it says. Records are never deleted, only hidden.
//! - **A body field that names something that does not exist** (`template` when spawning,
//!   `assignee` of a task) is 422 on that field, like any invalid value; a path naming nothing
//!   is 404; a filter naming no agent (`?assignee=`) is 404 too.
//! - **Invalid JSON bodies are 422** like every other invalid input (`InvalidArguments`).
//! - **Tokens** are `kn_` + 64 hex characters; only a SHA-256 is stored. Every stored hash is
//!   compared in constant time on each request.
//! - **`/api/openapi.json` needs a token** like every other `/api/*` route.
//!
//! ## Schemas and required fields
//!
//! - **Schemas are derived, never hand-written.** A tool's argument JSON Schema comes from its
//!   argument struct (`schemars`), and that same struct is what the call deserialises. The
//!   OpenAPI document comes from the handlers' types (`utoipa`, `utoipa-axum`); the rules the
//!   validators enforce are on the types (`#[schema(pattern, max_length, …)]`), written in
//!   characters as the validators count them (`text.rs`). `http/openapi.rs` finishes the
//!   document with what every operation shares (*The finished document* above); two small refinements there say what a
//!   derived schema cannot: creating an agent type requires the `name` that replacing one takes
//!   from its path, and the links from created resources.
//! - **Required means required.** A request type states its required fields without
//!   `#[serde(default)]`; `JsonBody` reads an empty body (or `null`) as `{}` only, so a type with
//!   a required field refuses it with 422 naming the field, and types whose fields are all
//!   optional accept it (their request body is documented as optional).
//!   `PUT /api/agents/{id}/capabilities` takes `NewCapabilities` (`tools` required, `[]` clears).

mod a2a;
mod agents;
mod approvals;
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
pub mod metrics;
mod openai;
pub mod openapi;
mod page;
mod processes;
mod providers;
mod questions;
mod schedules;
mod skills;
mod tasks;
pub mod templates;
mod tools;
mod usage;
mod workflows;

use crate::routes::Api;
use axum::Router;
use axum::middleware;
use kennel_kernel::Kernel;

pub use auth::Bearer;
pub use error::ApiError;

/// Every documented API route and its actions, one line per front module.
pub(crate) fn api_routes() -> Api {
    Api::new()
        .merge(templates::routes())
        .merge(agents::routes())
        .merge(tools::routes())
        .merge(events::routes())
        .merge(workflows::routes())
        .merge(tasks::routes())
        .merge(memory::routes())
        .merge(schedules::routes())
        .merge(usage::routes())
        .merge(knowledge::routes())
        .merge(skills::routes())
        .merge(channels::routes())
        .merge(inbox::routes())
        .merge(questions::routes())
        .merge(approvals::routes())
        .merge(browser::routes())
        .merge(processes::routes())
        .merge(providers::routes())
        .merge(mcp::routes())
        .merge(daemon::routes())
        .merge(openapi::routes())
}

/// The REST API (token-protected except `/healthz`), A2A and health, with the OpenAPI document.
/// Also the API's OpenAPI document, which the dashboard's API reference draws.
pub fn router(kernel: Kernel) -> (Router<Kernel>, openapi::Document) {
    let (api, documents, declared) = api_routes().merge(mcp_server::routes(&kernel)).into_parts();
    let document = openapi::Document::new(documents);
    let api = api
        .layer(axum::Extension(document.clone()))
        .layer(middleware::from_fn_with_state(
            crate::actions::Log::new(kernel.clone(), declared),
            crate::actions::record,
        ))
        .layer(middleware::from_fn_with_state(kernel, auth::require_token));
    let router = Router::new()
        .merge(api)
        .merge(a2a::router())
        .merge(openai::router())
        .route("/metrics", axum::routing::get(metrics::scrape))
        .merge(channels::inbound_router())
        .layer(middleware::map_response(machine_headers));
    (router, document)
}

/// `GET /healthz` alone, as it answers while the daemon is still starting (`edge::App`).
pub fn health_router(kernel: Kernel) -> Router {
    Router::new()
        .route("/healthz", axum::routing::get(openapi::healthz))
        .layer(middleware::map_response(machine_headers))
        .with_state(kernel)
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

    use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

    use super::*;

    /// The routes of the OpenAPI document.
    fn documented() -> impl Iterator<Item = UtoipaMethodRouter<Kernel>> {
        api_routes().into_parts().1.into_iter().map(|document| document())
    }

    /// `(path, method)` of every route `api_routes` adds: what the router serves, since routes
    /// reach it only through `api_routes` (`router` folds them in).
    fn served() -> BTreeSet<(String, String)> {
        let mut served = BTreeSet::new();
        for (_, paths, _) in documented() {
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
        let routes = documented().fold(OpenApiRouter::with_openapi(openapi::base()), OpenApiRouter::routes);
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
        let routes = documented().fold(OpenApiRouter::with_openapi(openapi::base()), OpenApiRouter::routes);
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

    /// Every state-changing operation declares what it is in the operator-action log (a name,
    /// `Logged` or `Unnamed`; `routes.rs`), so none is added without one.
    #[test]
    fn every_state_changing_operation_declares_its_action() {
        let (served, declared) = api_routes().served();
        let changing: Vec<_> = served.into_iter().filter(|(method, _)| crate::routes::changes(method)).collect();
        for (method, path) in &changing {
            assert!(declared.declares(method, path), "{method} {path} declares no action");
        }
        assert!(changing.len() > 30, "{changing:?}");
    }

    /// No two schemas share a name: utoipa keeps the last one registered under a name, so a
    /// clash would describe one type's responses with another's schema.
    #[test]
    fn no_two_schemas_share_a_name() {
        let mut seen: BTreeMap<String, serde_json::Value> = BTreeMap::new();
        let mut clashes = BTreeSet::new();
        for (schemas, _, _) in documented() {
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
