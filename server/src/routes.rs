//! How a family declares its routes: each route together with what each of its
//! state-changing methods is in the operator-action log (`actions.rs`). A front assembles its
//! families' declarations into its router and the [`Declared`] table its action layer reads, so
//! a route and its action's name are written in one place.
//!
//! - The dashboard's routes ([`Pages`]) are built from [`get`] and [`post`]: `post` takes the
//!   route's [`Action`], so a form's route cannot be added without one.
//! - The REST API's routes ([`Api`]) come from `utoipa_axum::routes!`, which knows their methods
//!   from the handlers' `#[utoipa::path]`; each is declared with the action of every
//!   state-changing method it serves, and declaring one it does not serve, or leaving one out,
//!   panics as the router is assembled (as axum does for two handlers on one route).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::handler::Handler;
use axum::http::Method;
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, Route};
use kennel_kernel::Kernel;
use tower::{Layer, Service};
use utoipa::openapi::PathItem;
use utoipa_axum::router::UtoipaMethodRouter;

/// What a state-changing request is in the operator-action log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Recorded under this name (`task.post`), the same for both fronts.
    Named(&'static str),
    /// A tool call, a chat message or an answer: each has its own record (the audit log, the
    /// session), so the action log leaves it out.
    Logged,
    /// Recorded under its method and route (`POST /agents/{id}/lift`).
    Unnamed,
}

impl Action {
    pub const fn named(name: &'static str) -> Action {
        Action::Named(name)
    }
}

/// Whether a request with this method can change anything (and is therefore an action).
pub fn changes(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The action of each declared state-changing route, by method (or for any method) and route.
#[derive(Debug, Default)]
pub struct Declared {
    by_method: HashMap<(Method, String), Action>,
    any_method: HashMap<String, Action>,
}

impl Declared {
    /// What a request to `route` (as matched: `/agents/{id}/stop`) with `method` is; a
    /// method the route does not serve (answered 405) is [`Action::Unnamed`].
    pub fn action(&self, method: &Method, route: &str) -> Action {
        let declared = self.by_method.get(&(method.clone(), route.to_string()));
        declared.or_else(|| self.any_method.get(route)).copied().unwrap_or(Action::Unnamed)
    }

    /// Whether `route` declares what `method` is.
    #[cfg(test)]
    pub fn declares(&self, method: &Method, route: &str) -> bool {
        self.by_method.contains_key(&(method.clone(), route.to_string())) || self.any_method.contains_key(route)
    }

    fn add(&mut self, method: Method, route: &str, action: Action) {
        let previous = self.by_method.insert((method.clone(), route.to_string()), action);
        assert!(previous.is_none(), "{method} {route} is declared twice");
    }

    fn merge(&mut self, other: Declared) {
        for ((method, route), action) in other.by_method {
            self.add(method, &route, action);
        }
        for (route, action) in other.any_method {
            let previous = self.any_method.insert(route.clone(), action);
            assert!(previous.is_none(), "{route} is declared twice");
        }
    }
}

/// The handlers of one dashboard route, by method; built with [`get`] and [`post`].
pub struct Endpoint {
    router: MethodRouter<Kernel>,
    methods: Vec<Method>,
    actions: Vec<(Method, Action)>,
}

/// A route answering GET (and HEAD) with `handler`.
pub fn get<H: Handler<T, Kernel>, T: 'static>(handler: H) -> Endpoint {
    Endpoint { router: axum::routing::get(handler), methods: vec![Method::GET, Method::HEAD], actions: Vec::new() }
}

/// A route answering POST with `handler`, which is `action` in the log.
pub fn post<H: Handler<T, Kernel>, T: 'static>(handler: H, action: Action) -> Endpoint {
    Endpoint {
        router: axum::routing::post(handler),
        methods: vec![Method::POST],
        actions: vec![(Method::POST, action)],
    }
}

impl Endpoint {
    /// POST too, which is `action` in the log.
    pub fn post<H: Handler<T, Kernel>, T: 'static>(mut self, handler: H, action: Action) -> Endpoint {
        self.methods.push(Method::POST);
        self.actions.push((Method::POST, action));
        Endpoint { router: self.router.post(handler), ..self }
    }

    /// `layer` around this route's handlers ([`MethodRouter::layer`]).
    pub fn layer<L>(self, layer: L) -> Endpoint
    where
        L: Layer<Route> + Clone + Send + Sync + 'static,
        L::Service: Service<Request> + Clone + Send + Sync + 'static,
        <L::Service as Service<Request>>::Response: IntoResponse + 'static,
        <L::Service as Service<Request>>::Error: Into<Infallible> + 'static,
        <L::Service as Service<Request>>::Future: Send + 'static,
    {
        Endpoint { router: self.router.layer(layer), ..self }
    }
}

/// A family's dashboard routes and their actions.
#[derive(Default)]
pub struct Pages {
    router: Router<Kernel>,
    declared: Declared,
    served: Vec<(Method, String)>,
}

impl Pages {
    pub fn new() -> Pages {
        Pages::default()
    }

    pub fn route(mut self, path: &str, endpoint: Endpoint) -> Pages {
        self.served.extend(endpoint.methods.into_iter().map(|method| (method, path.to_string())));
        for (method, action) in endpoint.actions {
            self.declared.add(method, path, action);
        }
        Pages { router: self.router.route(path, endpoint.router), ..self }
    }

    pub fn merge(mut self, other: Pages) -> Pages {
        self.declared.merge(other.declared);
        self.served.extend(other.served);
        Pages { router: self.router.merge(other.router), ..self }
    }

    /// The router, and the table the action layer reads.
    pub fn into_parts(self) -> (Router<Kernel>, Arc<Declared>) {
        (self.router, Arc::new(self.declared))
    }

    /// Each method and route served, and the table.
    #[cfg(test)]
    pub fn served(self) -> (Vec<(Method, String)>, Declared) {
        (self.served, self.declared)
    }
}

/// The state-changing methods an OpenAPI path serves.
fn changing_methods(item: &PathItem) -> Vec<Method> {
    let operations = [
        (Method::PUT, &item.put),
        (Method::POST, &item.post),
        (Method::DELETE, &item.delete),
        (Method::PATCH, &item.patch),
    ];
    operations.into_iter().filter(|(_, operation)| operation.is_some()).map(|(method, _)| method).collect()
}

/// A family's REST routes (documented in the OpenAPI document, or not) and their actions.
#[derive(Default)]
pub struct Api {
    documented: Vec<UtoipaMethodRouter<Kernel>>,
    undocumented: Router<Kernel>,
    declared: Declared,
}

impl Api {
    pub fn new() -> Api {
        Api::default()
    }

    /// The routes of `routes!(…)`, with the action of each state-changing method they serve
    /// (`&[]` for a route that only reads).
    ///
    /// # Panics
    /// If `actions` names a method these routes do not serve or leaves out one they do.
    pub fn route(mut self, routes: UtoipaMethodRouter<Kernel>, actions: &[(Method, Action)]) -> Api {
        for (path, item) in &routes.1.paths {
            let served = changing_methods(item);
            let declared: Vec<Method> = actions.iter().map(|(m, _)| m.clone()).collect();
            for method in &served {
                assert!(declared.contains(method), "{method} {path} has no action: declare it with its `routes!`");
            }
            for (method, action) in actions {
                assert!(served.contains(method), "{method} {path} is declared but not served");
                self.declared.add(method.clone(), path, *action);
            }
        }
        self.documented.push(routes);
        self
    }

    /// A route the OpenAPI document does not describe (a protocol's endpoint), which is
    /// `action` whatever its method.
    pub fn undocumented(mut self, path: &str, router: MethodRouter<Kernel>, action: Action) -> Api {
        let previous = self.declared.any_method.insert(path.to_string(), action);
        assert!(previous.is_none(), "{path} is declared twice");
        Api { undocumented: self.undocumented.route(path, router), ..self }
    }

    pub fn merge(mut self, other: Api) -> Api {
        self.declared.merge(other.declared);
        self.documented.extend(other.documented);
        Api { undocumented: self.undocumented.merge(other.undocumented), ..self }
    }

    /// Each method and route the documented routes serve (from their OpenAPI paths), and the
    /// table.
    #[cfg(test)]
    pub fn served(self) -> (Vec<(Method, String)>, Declared) {
        let mut served = Vec::new();
        for routes in &self.documented {
            for (path, item) in &routes.1.paths {
                let get = item.get.as_ref().map(|_| Method::GET);
                served.extend(get.into_iter().chain(changing_methods(item)).map(|m| (m, path.clone())));
            }
        }
        (served, self.declared)
    }

    /// The documented routes, the others, and the table the action layer reads.
    pub fn into_parts(self) -> (Vec<UtoipaMethodRouter<Kernel>>, Router<Kernel>, Arc<Declared>) {
        (self.documented, self.undocumented, Arc::new(self.declared))
    }
}
