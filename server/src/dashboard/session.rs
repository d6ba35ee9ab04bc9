//! Operator sign-in state for the dashboard: the session cookie, the CSRF check on every
//! form, and the guard that sends anonymous visitors to `/login` (or `/setup` on first run).

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::header::{COOKIE, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use kennel_kernel::Kernel;
use kennel_kernel::auth::{SESSION_HOURS, secrets_match};
use kennel_kernel::notify::Inbox;

pub const SESSION_COOKIE: &str = "kennel_session";
/// Before sign-in there is no session to hold a CSRF token, so the sign-in forms use a
/// double-submit cookie: the form field must equal this cookie.
pub const PRE_AUTH_COOKIE: &str = "kennel_csrf";
const FORM_LIMIT: usize = 1024 * 1024;

/// The signed-in operator, put in the request by [`require_operator`].
#[derive(Debug, Clone)]
pub struct Operator {
    pub name: String,
    pub csrf: String,
    pub cookie: String,
    /// Inbox notes they have not read, for the navigation.
    pub unread: u64,
}

impl Operator {
    /// How the inbox and the logs name this reader.
    pub fn reader(&self) -> String {
        kennel_kernel::tool::Caller::Operator(self.name.clone()).audit_label()
    }
}

/// The value of cookie `name`, if the request has one.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Strict, and Secure when the request came over
/// TLS (through a proxy that says so with `X-Forwarded-Proto: https`).
pub fn set_cookie(headers: &HeaderMap, name: &str, value: &str, max_age_secs: i64) -> HeaderValue {
    let tls = headers.get("x-forwarded-proto").is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"https"));
    let secure = if tls { "; Secure" } else { "" };
    HeaderValue::from_str(&format!("{name}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_secs}{secure}"))
        .expect("cookie values are ASCII")
}

pub fn session_cookie(headers: &HeaderMap, value: &str) -> (axum::http::HeaderName, HeaderValue) {
    (SET_COOKIE, set_cookie(headers, SESSION_COOKIE, value, SESSION_HOURS * 3600))
}

pub fn cleared_session_cookie(headers: &HeaderMap) -> (axum::http::HeaderName, HeaderValue) {
    (SET_COOKIE, set_cookie(headers, SESSION_COOKIE, "", 0))
}

/// Lets signed-in operators through; sends everyone else to sign in.
pub async fn require_operator(State(kernel): State<Kernel>, mut req: Request, next: Next) -> Response {
    let session = cookie(req.headers(), SESSION_COOKIE).and_then(|c| kernel.auth().session(&c).map(|s| (c, s)));
    match session {
        Some((cookie, s)) => {
            let mut op = Operator { name: s.operator, csrf: s.csrf, cookie, unread: 0 };
            // A count on an index; a failure only hides the badge.
            op.unread = kernel.service::<Inbox>().unread(&op.reader()).await.unwrap_or(0);
            req.extensions_mut().insert(op);
            next.run(req).await
        }
        None if req.method() == Method::GET => {
            if kernel.auth().operator_count().await.unwrap_or(1) == 0 {
                return Redirect::to("/setup").into_response();
            }
            // A deep link followed while signed out comes back after the sign-in.
            let wanted = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
            match super::site::same_site_path(wanted).filter(|p| *p != "/") {
                Some(path) => {
                    let next = serde_urlencoded::to_string([("next", path)]).unwrap_or_default();
                    Redirect::to(&format!("/login?{next}")).into_response()
                }
                None => Redirect::to("/login").into_response(),
            }
        }
        None => (StatusCode::FORBIDDEN, "sign in first: your session has ended").into_response(),
    }
}

/// Refuses every POST whose `csrf` form field is not this session's token (403). The body is
/// read once here and handed on unchanged. An upload is streamed to its handler, not read here:
/// only the routes in [`UPLOAD_ROUTES`] take one, and their handler checks the token, the form's
/// first field, before it reads a byte of the file ([`UploadToken`]). The token never rides in a
/// URL, where it would land in logs and history.
pub async fn check_csrf(req: Request, next: Next) -> Response {
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let expected = match req.extensions().get::<Operator>() {
        Some(op) => op.csrf.clone(),
        None => return csrf_refused(),
    };
    if is_multipart(req.headers()) {
        let route = req.extensions().get::<MatchedPath>().map(|p| p.as_str().to_string());
        if !route.is_some_and(|r| UPLOAD_ROUTES.contains(&r.as_str())) {
            return (StatusCode::UNSUPPORTED_MEDIA_TYPE, "this form takes no upload: send it as a plain form")
                .into_response();
        }
        let mut req = req;
        req.extensions_mut().insert(UploadToken(expected));
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, FORM_LIMIT).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "the form is too large").into_response();
    };
    if !form_token_matches(&bytes, &expected) {
        return csrf_refused();
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// The dashboard routes that take a multipart upload; each checks its [`UploadToken`].
pub const UPLOAD_ROUTES: &[&str] = &["/agents/{id}/files"];

/// The session's CSRF token, left for an upload route's handler: the multipart form's first
/// field must be `csrf` with this value.
#[derive(Clone)]
pub struct UploadToken(String);

impl UploadToken {
    /// Reads the form's first field and says whether it is `csrf` with this session's token.
    pub async fn admits(&self, multipart: &mut axum::extract::Multipart) -> bool {
        let Ok(Some(mut field)) = multipart.next_field().await else { return false };
        if field.name() != Some("csrf") {
            return false;
        }
        // The token is short: a field longer than this is not it.
        let mut token = Vec::new();
        while let Ok(Some(chunk)) = field.chunk().await {
            token.extend_from_slice(&chunk);
            if token.len() > 256 {
                return false;
            }
        }
        std::str::from_utf8(&token).is_ok_and(|t| secrets_match(t, &self.0))
    }
}

fn is_multipart(headers: &HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.trim_start().to_ascii_lowercase().starts_with("multipart/form-data"))
}

/// Whether the urlencoded `form` carries `csrf` equal to `expected`.
pub fn form_token_matches(form: &[u8], expected: &str) -> bool {
    let fields: HashMap<String, String> = serde_urlencoded::from_bytes(form).unwrap_or_default();
    fields.get("csrf").is_some_and(|t| secrets_match(t, expected))
}

pub fn csrf_refused() -> Response {
    (StatusCode::FORBIDDEN, "this form has expired or did not come from Kennel's dashboard (CSRF check failed); reload the page and try again")
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_among_several() {
        let mut h = HeaderMap::new();
        h.insert(COOKIE, HeaderValue::from_static("a=1; kennel_session=ks_abc; b=2"));
        assert_eq!(cookie(&h, SESSION_COOKIE).as_deref(), Some("ks_abc"));
        assert_eq!(cookie(&h, "missing"), None);
    }

    #[test]
    fn cookies_are_strict_and_secure_behind_tls() {
        let mut h = HeaderMap::new();
        let plain = set_cookie(&h, "x", "v", 60);
        assert_eq!(plain, "x=v; Path=/; HttpOnly; SameSite=Strict; Max-Age=60");
        h.insert("x-forwarded-proto", HeaderValue::from_static("https"));
        assert!(set_cookie(&h, "x", "v", 60).to_str().unwrap().ends_with("; Secure"));
    }

    #[test]
    fn the_form_token_must_match_exactly() {
        assert!(form_token_matches(b"csrf=abc123&name=x", "abc123"));
        assert!(!form_token_matches(b"csrf=abc124&name=x", "abc123"));
        assert!(!form_token_matches(b"name=x", "abc123"));
        assert!(!form_token_matches(b"csrf=&name=x", ""));
    }
}
