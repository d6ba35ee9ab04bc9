//! How a family declares its routes: each route together with what each of its
//! state-changing methods is in the operator-action log (`actions.rs`). A front assembles its
//! families' declarations into its router and the [`Declared`] table its action layer reads, so
//! a route and its action's name are written in one place.
//!
//! - The dashboard's routes ([`Pages`]) are built from [`get`] and [`post`]: `post` takes the
//!   route's [`Action`], so a form's route cannot be added without one.
//! - The REST API's routes ([`Api`]) come from [`api!`], which knows their path and methods
//!   from the handlers' `#[utoipa::path]`; each is declared with the action of every
//!   state-changing method it serves, and declaring one it does not serve, or leaving one out,
//!   panics as the router is assembled (as axum does for two handlers on one route).
//! - Serving a documented route needs only its path and methods. Its part of the OpenAPI
//!   document (operations, parameters, every schema they name) is built by
//!   `utoipa_axum::routes!` when the document is first asked for: building all of it was
//!   over half of a daemon's start-up (docs/BENCHMARKS.md, "Issue 46").

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
use utoipa::openapi::HttpMethod;
use utoipa_axum::PathItemExt;
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

/// Builds one route's part of the OpenAPI document (`utoipa_axum::routes!` of its handlers).
pub type DocumentPart = fn() -> UtoipaMethodRouter<Kernel>;

/// The handlers of one documented route, as [`api!`] makes them.
pub struct Documented {
    path: String,
    methods: Vec<Method>,
    router: MethodRouter<Kernel>,
    /// The same handlers through `utoipa_axum::routes!`: their part of the OpenAPI document.
    document: DocumentPart,
}

impl Documented {
    /// Handlers that all serve `path` (`#[utoipa::path]`), each at its own methods.
    pub fn new(handlers: Vec<(String, Vec<HttpMethod>, MethodRouter<Kernel>)>, document: DocumentPart) -> Documented {
        let path = handlers.first().map(|(path, ..)| path.clone()).expect("api! names a handler");
        let mut methods = Vec::new();
        let mut router = MethodRouter::new();
        for (own, served, handler) in handlers {
            assert_eq!(own, path, "the handlers of one api! serve one path");
            methods.extend(served.iter().map(http_method));
            router = router.merge(handler);
        }
        Documented { path, methods, router, document }
    }
}

/// A handler's router at the methods its `#[utoipa::path]` names ([`api!`]).
pub fn at_methods<H: Handler<T, Kernel>, T: 'static>(methods: &[HttpMethod], handler: H) -> MethodRouter<Kernel> {
    methods.iter().fold(MethodRouter::new(), |router, method| router.on(method.to_method_filter(), handler.clone()))
}

fn http_method(method: &HttpMethod) -> Method {
    match method {
        HttpMethod::Get => Method::GET,
        HttpMethod::Put => Method::PUT,
        HttpMethod::Post => Method::POST,
        HttpMethod::Delete => Method::DELETE,
        HttpMethod::Options => Method::OPTIONS,
        HttpMethod::Head => Method::HEAD,
        HttpMethod::Patch => Method::PATCH,
        HttpMethod::Trace => Method::TRACE,
    }
}

/// The handlers of one route (each with `#[utoipa::path]`), for [`Api::route`]: their path
/// and methods now, their OpenAPI document when it is first asked for.
macro_rules! api {
    ($($handler:ident),+ $(,)?) => {
        $crate::routes::Documented::new(
            vec![$(
                utoipa_axum::paste! {{
                    use utoipa::Path as _;
                    let methods = [<__path_ $handler>]::methods();
                    let router = $crate::routes::at_methods(&methods, $handler);
                    ([<__path_ $handler>]::path(), methods, router)
                }}
            ),+],
            || utoipa_axum::routes!($($handler),+),
        )
    };
}
pub(crate) use api;

/// A family's REST routes (documented in the OpenAPI document, or not) and their actions.
#[derive(Default)]
pub struct Api {
    documented: Vec<Documented>,
    undocumented: Router<Kernel>,
    declared: Declared,
}

impl Api {
    pub fn new() -> Api {
        Api::default()
    }

    /// The routes of `api!(…)`, with the action of each state-changing method they serve
    /// (`&[]` for a route that only reads).
    ///
    /// # Panics
    /// If `actions` names a method these routes do not serve or leaves out one they do.
    pub fn route(mut self, routes: Documented, actions: &[(Method, Action)]) -> Api {
        let path = &routes.path;
        let declared: Vec<Method> = actions.iter().map(|(m, _)| m.clone()).collect();
        for method in routes.methods.iter().filter(|m| changes(m)) {
            assert!(declared.contains(method), "{method} {path} has no action: declare it with its `api!`");
        }
        for (method, action) in actions {
            assert!(routes.methods.contains(method), "{method} {path} is declared but not served");
            self.declared.add(method.clone(), path, *action);
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

    /// Each method and route the documented routes serve, and the table.
    #[cfg(test)]
    pub fn served(self) -> (Vec<(Method, String)>, Declared) {
        let served = self.documented.iter().flat_map(|r| r.methods.iter().map(|m| (m.clone(), r.path.clone())));
        (served.collect(), self.declared)
    }

    /// The router of every route (documented or not), the documented routes' parts of the
    /// OpenAPI document, and the table the action layer reads.
    pub fn into_parts(self) -> (Router<Kernel>, Vec<DocumentPart>, Arc<Declared>) {
        let mut router = self.undocumented;
        let mut documents = Vec::with_capacity(self.documented.len());
        for routes in self.documented {
            router = router.route(&routes.path, routes.router);
            documents.push(routes.document);
        }
        (router, documents, Arc::new(self.declared))
    }
}
