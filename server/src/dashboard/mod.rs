//! The operator dashboard: server-rendered pages (from `kennel-app`) and the plain HTML forms
//! that act on them. Handlers call the same kernel services as the REST API, so a form shows
//! exactly the API's validation messages.

mod agent_types;
mod agents;
mod browser;
mod canvas;
mod channels;
mod cluster;
mod files;
mod headers;
mod inbox;
mod knowledge;
mod mcp;
mod memory;
mod notice;
mod pages;
mod processes;
mod schedules;
mod session;
mod sign_in;
pub(crate) mod site;
mod skills;
mod tasks;
mod tools;
mod usage;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use kennel_app::{Flash, Nav, PageMeta};
use kennel_kernel::changes::Topic;
use kennel_kernel::page::PageRequest;
use kennel_kernel::{Error, Kernel};
use serde::Deserialize;

pub use notice::{Notice, Pending as NoticePending};
pub use session::Operator;

/// Every dashboard route. Sign-in pages and assets are open; everything else needs an
/// operator session, and every POST needs the session's CSRF token. Every response, whatever
/// answers it, gets the security headers (`headers.rs`).
pub fn router(kernel: Kernel) -> Router<Kernel> {
    // An upload's body: the largest file a workspace takes, and room for the form around it.
    let upload_limit =
        usize::try_from(kernel.config().workspace.max_file_bytes).unwrap_or(usize::MAX).saturating_add(64 * 1024);
    let protected = Router::new()
        .route("/", get(pages::overview))
        .route("/logout", post(sign_in::logout))
        .route("/tools", get(tools::page))
        .route("/tools/{name}/try", get(tools::try_page).post(tools::try_it))
        .route("/agent-types", get(agent_types::list).post(agent_types::create))
        .route("/agent-types/{name}", get(agent_types::edit).post(agent_types::save))
        .route("/agent-types/{name}/toml", post(agent_types::replace_toml))
        .route("/agent-types/{name}/delete", post(agent_types::delete))
        .route("/agent-types/{name}/apply", get(agent_types::apply_preview).post(agent_types::apply))
        .route("/agents", get(agents::list).post(agents::spawn))
        .route("/agents/{id}", get(agents::page))
        .route("/agents/{id}/stop", post(agents::stop))
        .route("/agents/{id}/start", post(agents::start))
        .route("/agents/{id}/lift", post(agents::lift))
        .route("/agents/{id}/remove", post(agents::remove))
        .route("/agents/{id}/grant", post(agents::grant))
        .route("/agents/{id}/revoke", post(agents::revoke))
        .route("/agents/{id}/chat", post(agents::chat))
        .route("/agents/{id}/live", get(agents::live))
        .route("/agents/{id}/questions/{question_id}", post(agents::answer))
        .route("/agents/{id}/memory", get(memory::page))
        .route("/agents/{id}/memory/{memory_id}/forget", post(memory::forget))
        .route("/agents/{id}/files", post(files::upload).layer(DefaultBodyLimit::max(upload_limit)))
        .route("/agents/{id}/files/view", get(files::view))
        .route("/agents/{id}/files/raw", get(files::raw))
        .route("/agents/{id}/canvas/live", get(canvas::live))
        .route("/agents/{id}/knowledge", get(knowledge::page))
        .route("/agents/{id}/browser", get(browser::page))
        .route("/agents/{id}/processes", get(processes::page))
        .route("/agents/{id}/processes/{process_id}/kill", post(processes::kill))
        .route("/canvas", get(canvas::list))
        .route("/canvas/{agent}/{version}", get(canvas::version))
        .route("/canvas/{agent}/{version}/frame", get(canvas::frame))
        .route("/tasks", get(tasks::board).post(tasks::post))
        .route("/tasks/{id}", get(tasks::detail))
        .route("/tasks/{id}/reassign", post(tasks::reassign))
        .route("/tasks/{id}/cancel", post(tasks::cancel))
        .route("/tasks/{id}/retry", post(tasks::retry))
        .route("/schedules", get(schedules::list))
        .route("/schedules/{id}", get(schedules::detail))
        .route("/schedules/{id}/pause", post(schedules::pause))
        .route("/schedules/{id}/resume", post(schedules::resume))
        .route("/schedules/{id}/delete", get(schedules::confirm_delete).post(schedules::delete))
        .route("/live/changes", get(pages::changes))
        .route("/usage", get(usage::page))
        .route("/inbox", get(inbox::page))
        .route("/inbox/read", post(inbox::read))
        .route("/inbox/unread", get(inbox::unread))
        .route("/channels", get(channels::list))
        .route("/channels/{name}", get(channels::one))
        .route("/mcp", get(mcp::page))
        .route("/mcp/{name}/reconnect", post(mcp::reconnect))
        .route("/skills", get(skills::list))
        .route("/skills/{name}", get(skills::one).post(skills::save))
        .route("/skills/{name}/rollback", post(skills::rollback))
        .route("/skills/{name}/delete", post(skills::delete))
        .route("/skills/{name}/restore", post(skills::restore))
        .route("/skill-proposals/{id}/accept", post(skills::accept))
        .route("/skill-proposals/{id}/reject", post(skills::reject))
        .route("/audit", get(pages::audit))
        .route("/audit/actions", get(pages::actions))
        .route("/cluster", get(cluster::page))
        .route("/settings", get(pages::settings))
        .route("/settings/tokens", post(pages::create_token))
        .route("/settings/tokens/{name}/revoke", post(pages::revoke_token))
        .layer(middleware::from_fn_with_state(kernel.clone(), crate::actions::record))
        .layer(middleware::from_fn_with_state(kernel.clone(), notice::carry))
        .layer(middleware::from_fn(error_pages))
        .layer(middleware::from_fn(session::check_csrf))
        .layer(middleware::from_fn_with_state(kernel, session::require_operator));
    Router::new()
        .route("/login", get(sign_in::login_page).post(sign_in::login))
        .route("/setup", get(sign_in::setup_page).post(sign_in::setup))
        .route("/style/kennel.css", get(stylesheet))
        .route("/public/live.js", get(live_js))
        .merge(protected)
        .layer(middleware::from_fn(headers::security_headers))
}

// The assets are embedded in the binary; `no-cache` makes a browser ask again, so a new
// binary's script and styles apply at once.
async fn stylesheet() -> impl IntoResponse {
    (
        [(CONTENT_TYPE, "text/css; charset=utf-8"), (CACHE_CONTROL, "no-cache")],
        include_str!("../../../style/kennel.css"),
    )
}

async fn live_js() -> impl IntoResponse {
    (
        [(CONTENT_TYPE, "text/javascript; charset=utf-8"), (CACHE_CONTROL, "no-cache")],
        include_str!("../../../public/live.js"),
    )
}

/// The page frame for a signed-in operator.
pub fn meta(op: &Operator, title: impl Into<String>, nav: Nav, flash: Option<Flash>) -> PageMeta {
    PageMeta {
        title: title.into(),
        nav,
        operator: Some(op.name.clone()),
        csrf: op.csrf.clone(),
        flash,
        unread: op.unread,
        live: None,
    }
}

/// `meta` for a page that follows `topics` and reads itself again from `url` (see
/// [`kennel_app::Live`]).
pub fn following(mut meta: PageMeta, topics: &[Topic], url: impl Into<String>) -> PageMeta {
    meta.live = Some(kennel_app::Live { topics: topics.to_vec(), url: url.into() });
    meta
}

/// 303 to `path` with a notice for the next page (sealed into a cookie by [`notice::carry`]).
pub fn see_other(path: &str, notice: &str) -> Response {
    let mut response = Redirect::to(path).into_response();
    response.extensions_mut().insert(notice::Pending(notice.to_string()));
    response
}

/// A rendered page (from `kennel_app::pages`) with a status. Never pass it other text: only the
/// page renderers escape what they show.
pub fn html(status: StatusCode, body: String) -> Response {
    (status, Html(body)).into_response()
}

/// What a page handler answers when its page cannot be shown: an error with no form to show
/// it next to. It becomes the error page, with the API's status code, in the signed-in
/// operator's frame (`error_pages` renders it), so handlers just use `?`.
pub struct PageError(pub Error);

impl From<Error> for PageError {
    fn from(e: Error) -> Self {
        PageError(e)
    }
}

/// An error on its way to [`error_pages`].
#[derive(Clone)]
struct ErrorToShow(Error);

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let mut response = crate::status::status_for(self.0.kind).into_response();
        response.extensions_mut().insert(crate::actions::Refused::of(&self.0));
        response.extensions_mut().insert(ErrorToShow(self.0));
        response
    }
}

/// What a dashboard handler returns.
pub type PageResult = Result<Response, PageError>;

/// Renders the error page for a [`PageError`], with the operator the request was made by.
async fn error_pages(req: Request, next: Next) -> Response {
    let op = req.extensions().get::<Operator>().cloned();
    let mut response = next.run(req).await;
    match (response.extensions_mut().remove::<ErrorToShow>(), op) {
        (Some(ErrorToShow(e)), Some(op)) => error_page(&op, &e),
        _ => response,
    }
}

/// An error with no form to show it next to: its own page, with the API's status code.
fn error_page(op: &Operator, e: &Error) -> Response {
    let title = kind_in_words(e.kind.as_str());
    let page = kennel_app::pages::error::render(meta(op, title.clone(), Nav::None, None), &title, &e.message);
    html(crate::status::status_for(e.kind), page)
}

/// `NotFound` → `Not found`: an error kind as a page title.
fn kind_in_words(kind: &str) -> String {
    let mut words = String::new();
    for (i, c) in kind.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            words.push(' ');
            words.extend(c.to_lowercase());
        } else {
            words.push(c);
        }
    }
    words
}

/// Any other path that is not the machine side's: a signed-in operator gets the error page in
/// the dashboard's frame, anyone else a bare one; both with the security headers. (The REST
/// API, A2A and `/.well-known` keep their JSON 404.)
pub async fn not_found(axum::extract::State(kernel): axum::extract::State<Kernel>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    let machine = ["/api/", "/a2a", "/.well-known/"].iter().any(|p| path.starts_with(p)) || path == "/api";
    if machine {
        return crate::http::not_found().await.into_response();
    }
    let error = Error::not_found(format!("There is no page at {path}: it may have moved, or the link is wrong."));
    let op = session::cookie(req.headers(), session::SESSION_COOKIE).and_then(|c| {
        kernel.auth().session(&c).map(|s| Operator { name: s.operator, csrf: s.csrf, cookie: c, unread: 0 })
    });
    let mut res = match op {
        Some(op) => error_page(&op, &error),
        None => {
            let meta = PageMeta {
                title: "Not found".into(),
                nav: Nav::None,
                operator: None,
                csrf: String::new(),
                flash: None,
                unread: 0,
                live: None,
            };
            html(StatusCode::NOT_FOUND, kennel_app::pages::error::render(meta, "Not found", &error.message))
        }
    };
    headers::apply(&mut res);
    res
}

/// `?cursor=` of a paged dashboard list, and the link to its next page.
#[derive(Debug, Default, Deserialize)]
pub struct Cursor {
    cursor: Option<String>,
}

impl Cursor {
    /// Whether this is a list's first page.
    pub fn is_first(&self) -> bool {
        self.cursor.is_none()
    }

    /// The page asked for, `per_page` items long.
    pub fn page(&self, per_page: u32) -> PageRequest {
        PageRequest { cursor: self.cursor.clone(), ..PageRequest::first(per_page) }
    }

    /// This cursor, or else `before`: the logs' `?before=ID` (they list newest first, and
    /// their cursor is the last id shown, so "before 120" is where they continue).
    pub fn or_before(self, before: Option<String>) -> Cursor {
        Cursor { cursor: self.cursor.or(before.filter(|b| !b.is_empty())) }
    }
}

/// `path?filters` (the empty ones left out), and `&cursor=` when given: a list's own URL.
pub fn list_url(path: &str, filters: &[(&str, String)], cursor: Option<&str>) -> String {
    let pairs: Vec<(&str, &str)> = filters
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (*k, v.as_str()))
        .chain(cursor.map(|c| ("cursor", c)))
        .collect();
    if pairs.is_empty() {
        return path.to_string();
    }
    format!("{path}?{}", serde_urlencoded::to_string(pairs).unwrap_or_default())
}

/// The link to a list's next page, its filters kept; `None` on the last page.
pub fn next_page(path: &str, filters: &[(&str, String)], next: Option<&str>) -> Option<String> {
    next.map(|n| list_url(path, filters, Some(n)))
}

/// Form fields for a failed validation: the kernel's field errors, or the whole message on
/// `fallback_field` (a name conflict belongs next to the name).
pub fn field_errors(e: &Error, fallback_field: &str) -> Vec<kennel_kernel::error::FieldError> {
    if e.fields.is_empty() {
        vec![kennel_kernel::error::FieldError { field: fallback_field.into(), message: e.message.clone() }]
    } else {
        e.fields.clone()
    }
}
