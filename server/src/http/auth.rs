//! API authentication: every `/api/*` route needs `Authorization: Bearer TOKEN`; `/healthz`
//! needs none.

use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use kennel_kernel::Kernel;
use kennel_kernel::tool::Caller;

use super::error::ApiError;
use crate::live::Holder;

/// Who a request's bearer token names: an API token (`Caller::Token(NAME)`, never the
/// secret), or this run's CLI token (`Caller::Cli`, see `cli::daemon`).
#[derive(Debug, Clone)]
pub struct Bearer(pub Caller);

/// Lets requests with a live API token through to `/api/*`; the API router's only other
/// route, `/healthz`, is public.
pub async fn require_token(State(kernel): State<Kernel>, mut req: Request, next: Next) -> Response {
    if !req.uri().path().starts_with("/api/") {
        return next.run(req).await;
    }
    let (caller, holder) = match identify(&kernel, req.headers()) {
        Ok(identified) => identified,
        Err(why) => return ApiError::Unauthorized(why).into_response(),
    };
    req.extensions_mut().insert(Bearer(caller));
    req.extensions_mut().insert(holder);
    next.run(req).await
}

/// Who the request's `Authorization: Bearer TOKEN` names, or why it names nobody (for the
/// 401's message).
pub fn identify(kernel: &Kernel, headers: &HeaderMap) -> Result<(Caller, Holder), &'static str> {
    let presented =
        headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).map(str::trim);
    let Some(token) = presented else {
        return Err("send an API token: `Authorization: Bearer TOKEN` (create one with `kennel token create NAME`)");
    };
    if kernel.auth().is_cli_token(token) {
        Ok((Caller::Cli, Holder::Cli))
    } else if let Some(verified) = kernel.auth().verify_token(token) {
        Ok((Caller::Token(verified.name.clone()), Holder::Token(verified)))
    } else {
        Err("the API token is not valid or has been revoked")
    }
}

/// Refuses every caller but the CLI's token, saying `why`: for changes an API token must not
/// make (where the daemon sends its keys and secrets: providers, channels). Signed-in
/// operators make them on the dashboard.
pub fn cli_only(caller: &Caller, why: &str) -> Result<(), kennel_kernel::Error> {
    match caller {
        Caller::Cli => Ok(()),
        _ => Err(kennel_kernel::Error::forbidden(why.to_string())),
    }
}
