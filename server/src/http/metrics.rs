//! `GET /metrics`: the daemon's Prometheus metrics (`kennel_kernel::metrics`) in the text
//! exposition format, for an API token (`Authorization: Bearer`, as Prometheus' scrape
//! `authorization` setting sends it), or without one on `[metrics] listen`'s own address;
//! and the layer that counts every HTTP request by route.

use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use kennel_kernel::Kernel;
use kennel_kernel::metrics::metrics;
use prometheus_client::encoding::prometheus_text::CONTENT_TYPE as TEXT_FORMAT;

use super::ApiError;
use super::auth::identify;

/// `GET /metrics` on the daemon's address: for an API token.
pub async fn scrape(State(kernel): State<Kernel>, headers: HeaderMap) -> Response {
    if let Err(why) = identify(&kernel, &headers) {
        return ApiError::Unauthorized(why).into_response();
    }
    render(&kernel).await
}

/// What `[metrics] listen` serves: `GET /metrics` without a token, and nothing else (every
/// other path is a 404 that names no route of the daemon's).
pub fn open_router(kernel: Kernel) -> Router {
    Router::new()
        .route("/metrics", get(|State(kernel): State<Kernel>| async move { render(&kernel).await }))
        .fallback(|| async { (StatusCode::NOT_FOUND, "only GET /metrics is served here\n") })
        .with_state(kernel)
}

async fn render(kernel: &Kernel) -> Response {
    match metrics().render(kernel).await {
        Ok(text) => ([(CONTENT_TYPE, TEXT_FORMAT)], text).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// HTTP's own methods by name, any other (a client may send any token) as `other`: a label's
/// values stay few whatever clients send.
fn method_label(method: &Method) -> &'static str {
    const KNOWN: [Method; 9] = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
        Method::OPTIONS,
        Method::CONNECT,
        Method::TRACE,
    ];
    KNOWN.iter().find(|known| *known == method).map_or("other", |known| known.as_str())
}

/// Counts a request under its route as declared (`/api/agents/{id}`), or `unmatched`: never
/// the path itself, which would make a series of every id.
pub async fn count_request(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = req.extensions().get::<MatchedPath>().map(|p| p.as_str().to_owned());
    let method = req.method().clone();
    let response = next.run(req).await;
    let route = route.as_deref().unwrap_or("unmatched");
    metrics().http_answered(route, method_label(&method), response.status().as_u16(), started.elapsed().as_secs_f64());
    response
}
