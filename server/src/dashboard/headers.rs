//! Security headers on every dashboard response (pages, sign-in, redirects, assets), set by
//! one middleware so no route can forget them:
//!
//! - `Content-Security-Policy`: scripts, styles and connections only from this origin, no
//!   inline script or style, forms post only here, and no framing (`frame-ancestors 'none'`).
//!   A route the dashboard itself must frame says so with [`allow_same_origin_framing`].
//!   Exactly one CSP header per response: the middleware replaces any other.
//! - `X-Content-Type-Options: nosniff` and `Referrer-Policy: same-origin`.
//! - `Cache-Control: no-store` unless the handler chose a policy (the assets do): signed-in
//!   pages and the new-token page must not linger in a cache.

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS};
use axum::middleware::Next;
use axum::response::Response;

/// Who may put a dashboard response in a frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Framing {
    /// Nobody (clickjacking): the default for every route.
    #[default]
    Nobody,
    /// Dashboard pages on this origin (for a view the dashboard embeds, like the canvas).
    SameOrigin,
}

/// The policy: everything from this origin only, nothing inline, no plugins, no `<base>`.
pub fn content_security_policy(framing: Framing) -> &'static str {
    match framing {
        Framing::Nobody => {
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
             form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
        }
        Framing::SameOrigin => {
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
             form-action 'self'; base-uri 'none'; frame-ancestors 'self'"
        }
    }
}

/// The middleware on the dashboard router.
pub async fn security_headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let framing = res.extensions().get::<Framing>().copied().unwrap_or_default();
    let headers = res.headers_mut();
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(content_security_policy(framing)));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.entry(CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    res
}

/// For a route the dashboard frames itself:
/// `.route("/canvas", get(canvas).layer(middleware::map_response(allow_same_origin_framing)))`.
#[allow(dead_code)] // no such route yet; the canvas will be the first
pub async fn allow_same_origin_framing(mut res: Response) -> Response {
    res.extensions_mut().insert(Framing::SameOrigin);
    res
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::middleware;
    use axum::response::IntoResponse;
    use axum::routing::get;
    use tower::ServiceExt;

    use super::*;

    async fn call(app: Router, path: &str) -> Response {
        app.oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap()
    }

    fn app() -> Router {
        Router::new()
            .route("/page", get(|| async { "page" }))
            .route("/asset", get(|| async { ([(CACHE_CONTROL, "no-cache")], "asset") }))
            .route("/framed", get(|| async { "framed" }).layer(middleware::map_response(allow_same_origin_framing)))
            .route(
                "/own-csp",
                get(|| async { ([(CONTENT_SECURITY_POLICY, "default-src *")], StatusCode::NOT_FOUND).into_response() }),
            )
            .layer(middleware::from_fn(security_headers))
    }

    fn one(res: &Response, name: axum::http::HeaderName) -> &str {
        let values: Vec<_> = res.headers().get_all(&name).iter().collect();
        assert_eq!(values.len(), 1, "exactly one {name}");
        values[0].to_str().unwrap()
    }

    #[tokio::test]
    async fn every_response_gets_the_headers_and_one_route_may_allow_same_origin_frames() {
        let page = call(app(), "/page").await;
        assert!(one(&page, CONTENT_SECURITY_POLICY).ends_with("frame-ancestors 'none'"));
        assert!(!one(&page, CONTENT_SECURITY_POLICY).contains("unsafe-inline"));
        assert_eq!(one(&page, X_CONTENT_TYPE_OPTIONS), "nosniff");
        assert_eq!(one(&page, REFERRER_POLICY), "same-origin");
        assert_eq!(one(&page, CACHE_CONTROL), "no-store");

        let asset = call(app(), "/asset").await;
        assert_eq!(one(&asset, CACHE_CONTROL), "no-cache", "a handler's own cache policy stays");

        let framed = call(app(), "/framed").await;
        assert!(one(&framed, CONTENT_SECURITY_POLICY).ends_with("frame-ancestors 'self'"));
        let own = call(app(), "/own-csp").await;
        assert_eq!(one(&own, CONTENT_SECURITY_POLICY), content_security_policy(Framing::Nobody), "ours, alone");
    }
}
