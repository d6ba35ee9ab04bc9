//! Security headers on every dashboard response (pages, sign-in, redirects, assets), set by
//! one middleware so no route can forget them:
//!
//! - `Content-Security-Policy`: scripts, styles, media, frames and connections only from this
//!   origin, no inline script or style, forms post only here, and no framing
//!   (`frame-ancestors 'none'`). An agent's canvas, the one route the dashboard frames, gets
//!   a sandboxing policy instead ([`Framing::Canvas`], set with [`canvas_policy`]).
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
    /// Agent HTML, framed by dashboard pages on this origin: sandboxed (an opaque origin of
    /// its own, so no cookie, no dashboard DOM, no API), inline script and style only, images
    /// only as `data:`, no forms; `network` (the agent type's `canvas_network`) opens `https:`.
    Canvas { network: bool },
}

/// The policy for each kind of response.
pub fn content_security_policy(framing: Framing) -> &'static str {
    match framing {
        Framing::Nobody => {
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; media-src 'self'; \
             frame-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
        }
        // `webrtc 'block'` where a browser enforces it; the canvas's prelude takes WebRTC away
        // where it does not (Chromium 156 did not, reliably).
        Framing::Canvas { network: false } => {
            "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             img-src data:; form-action 'none'; base-uri 'none'; frame-ancestors 'self'; webrtc 'block'"
        }
        Framing::Canvas { network: true } => {
            "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline' https:; \
             style-src 'unsafe-inline' https:; img-src data: https:; font-src https:; media-src data: https:; \
             connect-src https:; form-action 'none'; base-uri 'none'; frame-ancestors 'self'; webrtc 'block'"
        }
    }
}

/// The middleware on the dashboard router.
pub async fn security_headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    apply(&mut res);
    res
}

/// Sets the headers on one response (the middleware's work, for a response made outside the
/// dashboard router: its HTML 404).
pub fn apply(res: &mut Response) {
    let framing = res.extensions().get::<Framing>().copied().unwrap_or_default();
    let headers = res.headers_mut();
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(content_security_policy(framing)));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.entry(CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
}

/// Marks a response as a canvas's HTML: the middleware gives it the canvas policy.
pub fn canvas_policy(mut res: Response, network: bool) -> Response {
    res.extensions_mut().insert(Framing::Canvas { network });
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
            .route("/framed", get(|| async { canvas_policy("canvas".into_response(), false) }))
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
    async fn every_response_gets_the_headers_and_a_canvas_gets_the_sandbox() {
        let page = call(app(), "/page").await;
        assert!(one(&page, CONTENT_SECURITY_POLICY).ends_with("frame-ancestors 'none'"));
        assert!(!one(&page, CONTENT_SECURITY_POLICY).contains("unsafe-inline"));
        assert_eq!(one(&page, X_CONTENT_TYPE_OPTIONS), "nosniff");
        assert_eq!(one(&page, REFERRER_POLICY), "same-origin");
        assert_eq!(one(&page, CACHE_CONTROL), "no-store");

        let asset = call(app(), "/asset").await;
        assert_eq!(one(&asset, CACHE_CONTROL), "no-cache", "a handler's own cache policy stays");

        let framed = call(app(), "/framed").await;
        let canvas = one(&framed, CONTENT_SECURITY_POLICY);
        assert!(
            canvas.starts_with("sandbox allow-scripts;") && canvas.ends_with("frame-ancestors 'self'; webrtc 'block'"),
            "{canvas}"
        );
        assert!(!canvas.contains("allow-same-origin") && !canvas.contains("https:"), "{canvas}");
        let own = call(app(), "/own-csp").await;
        assert_eq!(one(&own, CONTENT_SECURITY_POLICY), content_security_policy(Framing::Nobody), "ours, alone");
    }
}
