//! `GET /metrics`: the daemon's Prometheus metrics (`kennel_kernel::metrics`) in the text
//! exposition format, for an API token (`Authorization: Bearer`, as Prometheus' scrape
//! `authorization` setting sends it); and the layer that counts every HTTP request by route.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use kennel_kernel::Kernel;
use kennel_kernel::metrics::metrics;
use prometheus_client::encoding::prometheus_text::CONTENT_TYPE as TEXT_FORMAT;

use super::ApiError;
use super::auth::identify;

pub async fn scrape(State(kernel): State<Kernel>, headers: HeaderMap) -> Response {
    if let Err(why) = identify(&kernel, &headers) {
        return ApiError::Unauthorized(why).into_response();
    }
    match metrics().render(&kernel).await {
        Ok(text) => ([(CONTENT_TYPE, TEXT_FORMAT)], text).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// Counts a request under its route as declared (`/api/agents/{id}`), or `unmatched`: never
/// the path itself, which would make a series of every id.
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

pub async fn count_request(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = req.extensions().get::<MatchedPath>().map(|p| p.as_str().to_owned());
    let method = req.method().clone();
    let response = next.run(req).await;
    let route = route.as_deref().unwrap_or("unmatched");
    metrics().http_answered(route, method_label(&method), response.status().as_u16(), started.elapsed().as_secs_f64());
    response
}
