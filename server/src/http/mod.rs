//! The HTTP front: one axum router for the REST API, the dashboard and health checks.
//! Handlers are thin: parse, call one kernel service, map the result.

mod a2a;
mod agents;
mod auth;
mod body;
mod error;
mod events;
mod schedules;
mod tasks;
mod templates;
mod tools;
mod workflows;

pub(crate) use agents::event_stream;
pub(crate) use error::status_for;

use std::net::SocketAddr;

use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::middleware;
use axum::response::IntoResponse;
use axum::routing::get;
use kennel_kernel::Kernel;
use tower_http::trace::{DefaultMakeSpan, DefaultOnResponse, TraceLayer};
use tracing::Level;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

#[derive(OpenApi)]
#[openapi(
    info(title = "Kennel", description = "The Kennel agent daemon's REST API. Every `/api/*` route needs `Authorization: Bearer TOKEN`."),
    modifiers(&BearerAuth, &StatusTable),
    security(("bearer" = [])),
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        openapi.components.get_or_insert_with(Default::default).add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// Appends the status table to the document's description, so clients read it where they
/// read the routes.
struct StatusTable;

impl utoipa::Modify for StatusTable {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let intro = openapi.info.description.take().unwrap_or_default();
        openapi.info.description = Some(format!(
            "{intro}\n\n## Errors\n\nEvery error answers `{{\"error\": {{\"kind\", \"message\", \"fields\"?}}}}` \
             with the status of its kind:\n\n{}",
            error::status_table()
        ));
    }
}

/// The whole application router.
pub fn router(kernel: Kernel) -> Router {
    let (api, openapi) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(templates::router())
        .merge(agents::router())
        .merge(tools::router())
        .merge(events::router())
        .merge(workflows::router())
        .merge(tasks::router())
        .merge(schedules::router())
        .split_for_parts();
    let openapi_json = openapi.to_pretty_json().expect("the OpenAPI document serialises");
    let api = api
        .route("/api/openapi.json", get(move || async move { ([(CONTENT_TYPE, "application/json")], openapi_json) }))
        .layer(middleware::from_fn_with_state(kernel.clone(), auth::require_token));
    Router::new()
        .merge(api)
        .merge(crate::dashboard::router(kernel.clone()))
        .merge(a2a::router())
        .route("/healthz", get(healthz))
        .fallback(not_found)
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(DefaultMakeSpan::new().level(Level::INFO))
                .on_request(())
                .on_response(DefaultOnResponse::new().level(Level::INFO)),
        )
        .with_state(kernel)
}

async fn healthz() -> impl IntoResponse {
    axum::Json(serde_json::json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") }))
}

async fn not_found() -> error::ApiError {
    kennel_kernel::Error::not_found("no such route; the API is described at /api/openapi.json").into()
}

/// Serves until SIGINT or SIGTERM, lets in-flight requests finish, then closes the kernel.
pub async fn serve(kernel: Kernel, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let addr: SocketAddr = listener.local_addr()?;
    tracing::info!(%addr, "listening");
    let app = router(kernel.clone())
        .layer(axum::Extension(crate::dashboard::site::ListenAddr(addr)))
        .into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app).with_graceful_shutdown(shutdown_signal()).await?;
    tracing::info!("shutting down: closing the database");
    kernel.close().await;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
}
