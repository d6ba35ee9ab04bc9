//! `/setup` (first operator, loopback only), `/login`, `/logout`. `/setup` and `/login` take
//! [`OwnSite`]: they answer only requests addressed to this daemon from its own pages.

use std::net::SocketAddr;

use axum::Form;
use axum::extract::{ConnectInfo, Extension, Query, State};
use axum::http::header::SET_COOKIE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use kennel_app::PageMeta;
use kennel_app::pages::sign_in::{self, SignIn};
use kennel_kernel::auth::SIGN_IN_FORM_SECS;
use kennel_kernel::{ErrorKind, Kernel};
use serde::Deserialize;

use super::session::{self, Operator, PRE_AUTH_COOKIE, cleared_session_cookie, cookie, csrf_refused, session_cookie};
use super::site::{self, OwnSite};
use crate::routes::{Action, Pages, post};

pub fn routes() -> Pages {
    Pages::new().route("/logout", post(logout, Action::Logged))
}

#[derive(Deserialize)]
pub struct Credentials {
    #[serde(default)]
    csrf: String,
    name: String,
    password: String,
    /// The setup form's second typing of the password (a script posting without it is taken
    /// at its word).
    password_again: Option<String>,
    /// Where to go once signed in: a path on this site, else the overview.
    next: Option<String>,
}

/// `?next=` of the sign-in page.
#[derive(Deserialize, Default)]
pub struct Next {
    next: Option<String>,
}

/// A page to return to after signing in: a path on this site only (never an open redirect).
fn next_path(next: Option<&str>) -> Option<String> {
    next.and_then(super::site::same_site_path).filter(|p| !p.starts_with("/login")).map(str::to_string)
}

/// A sign-in page with a double-submit token: the visitor's own if the daemon minted it and
/// it is still good, otherwise a fresh one. A value the visitor chose is never sent back.
fn sign_in_page(kernel: &Kernel, headers: &HeaderMap, status: StatusCode, page: SignIn) -> Response {
    let token = cookie(headers, PRE_AUTH_COOKIE)
        .filter(|t| kernel.auth().sign_in_token_valid(t))
        .unwrap_or_else(|| kernel.auth().mint_sign_in_token());
    let title = if page.setup { "Set up" } else { "Sign in" };
    let meta = PageMeta {
        title: title.into(),
        nav: None,
        operator: None,
        csrf: token.clone(),
        flash: None,
        unread: 0,
        live: None,
    };
    let cookie = session::set_cookie(headers, PRE_AUTH_COOKIE, &token, SIGN_IN_FORM_SECS);
    (status, [(SET_COOKIE, cookie)], axum::response::Html(sign_in::render(meta, page))).into_response()
}

/// The sign-in forms' CSRF check: the cookie must be a token this daemon minted, and the
/// form field must equal it.
fn pre_auth_ok(kernel: &Kernel, headers: &HeaderMap, form_token: &str) -> bool {
    cookie(headers, PRE_AUTH_COOKIE)
        .is_some_and(|c| kernel.auth().sign_in_token_valid(&c) && kennel_kernel::auth::secrets_match(&c, form_token))
}

async fn first_run(kernel: &Kernel) -> bool {
    kernel.auth().operator_count().await.unwrap_or(1) == 0
}

pub async fn setup_page(
    State(kernel): State<Kernel>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    _: OwnSite,
    headers: HeaderMap,
) -> Response {
    if !first_run(&kernel).await {
        return Redirect::to("/login").into_response();
    }
    if !site::direct_from_this_machine(client.ip(), &headers) {
        return loopback_only();
    }
    sign_in_page(
        &kernel,
        &headers,
        StatusCode::OK,
        SignIn { setup: true, name: String::new(), error: None, next: None },
    )
}

fn loopback_only() -> Response {
    (
        StatusCode::FORBIDDEN,
        "the first operator can only be created directly from this machine (a loopback address, not through a proxy), or with `kennel operator add`",
    )
        .into_response()
}

pub async fn setup(
    State(kernel): State<Kernel>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    _: OwnSite,
    headers: HeaderMap,
    Form(form): Form<Credentials>,
) -> Response {
    if !first_run(&kernel).await {
        return Redirect::to("/login").into_response();
    }
    if !site::direct_from_this_machine(client.ip(), &headers) {
        return loopback_only();
    }
    if !pre_auth_ok(&kernel, &headers, &form.csrf) {
        return csrf_refused();
    }
    let mistyped = form.password_again.as_ref().is_some_and(|again| *again != form.password);
    let created = if mistyped {
        Err(kennel_kernel::Error::invalid("the two passwords differ: type the same password twice"))
    } else {
        kernel.auth().add_first_operator(&form.name, &form.password).await
    };
    match created {
        Ok(()) => signed_in(&kernel, &headers, &form.name).await,
        // Another setup won the race: there is an operator now, so sign in as on any visit.
        Err(e) if e.kind == ErrorKind::Conflict => Redirect::to("/login").into_response(),
        Err(e) => {
            let status = crate::status::status_for(e.kind);
            sign_in_page(
                &kernel,
                &headers,
                status,
                SignIn { setup: true, name: form.name, error: Some(e.message), next: None },
            )
        }
    }
}

async fn signed_in(kernel: &Kernel, headers: &HeaderMap, name: &str) -> Response {
    match kernel.auth().open_session(name).await {
        Ok((cookie, _)) => ([session_cookie(headers, &cookie)], Redirect::to("/")).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.message).into_response(),
    }
}

pub async fn login_page(
    State(kernel): State<Kernel>,
    _: OwnSite,
    headers: HeaderMap,
    Query(q): Query<Next>,
) -> Response {
    if first_run(&kernel).await {
        return Redirect::to("/setup").into_response();
    }
    let page = SignIn { setup: false, name: String::new(), error: None, next: next_path(q.next.as_deref()) };
    sign_in_page(&kernel, &headers, StatusCode::OK, page)
}

pub async fn login(
    State(kernel): State<Kernel>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    _: OwnSite,
    headers: HeaderMap,
    Form(form): Form<Credentials>,
) -> Response {
    if !pre_auth_ok(&kernel, &headers, &form.csrf) {
        return csrf_refused();
    }
    match kernel.auth().sign_in(client.ip(), &form.name, &form.password).await {
        Ok((cookie, _)) => {
            let to = next_path(form.next.as_deref()).unwrap_or_else(|| "/".into());
            ([session_cookie(&headers, &cookie)], Redirect::to(&to)).into_response()
        }
        Err(e) => {
            let status = if e.kind == ErrorKind::ResourceExhausted {
                StatusCode::TOO_MANY_REQUESTS
            } else {
                StatusCode::UNAUTHORIZED
            };
            let next = next_path(form.next.as_deref());
            sign_in_page(
                &kernel,
                &headers,
                status,
                SignIn { setup: false, name: form.name, error: Some(e.message), next },
            )
        }
    }
}

pub async fn logout(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    headers: HeaderMap,
) -> super::PageResult {
    kernel.auth().close_session(&op.cookie).await?;
    Ok(([cleared_session_cookie(&headers)], Redirect::to("/login")).into_response())
}
