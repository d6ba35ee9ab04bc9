//! Overview, audit, settings, and the live pages' change signal.

use axum::Form;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::response::Response;
use kennel_app::pages::{audit, overview, settings};
use kennel_app::{Flash, Paging};
use kennel_kernel::actions::ActionFilter;
use kennel_kernel::changes::Topic;
use kennel_kernel::status::AgentCounts;
use kennel_kernel::tool::audit::AuditFilter;
use kennel_kernel::{Error, Kernel};
use serde::Deserialize;

use super::{Cursor, Notice, Operator, PageResult, following, html, meta, next_page, see_other};
use crate::routes::{Action, Pages, get, post};

pub fn routes() -> Pages {
    Pages::new()
        .route("/", get(overview))
        .route("/providers/{name}/test", post(test_provider, Action::named("provider.test")))
        .route("/live/changes", get(changes))
        .route("/audit", get(audit))
        .route("/audit/actions", get(actions))
        .route("/settings", get(settings))
        .route("/api-reference", get(api_reference))
        .route("/api-reference/openapi.json", get(openapi_document))
        .route("/settings/tokens", post(create_token, Action::named("token.create")))
        .route("/settings/tokens/{name}/revoke", post(revoke_token, Action::named("token.revoke")))
}

pub async fn overview(State(kernel): State<Kernel>, Extension(op): Extension<Operator>, n: Notice) -> PageResult {
    let recent_calls = kernel.audit().recent(10).await?;
    let providers = kernel.provider_infos();
    let agents = kernel.agents().list();
    let page = overview::Overview {
        counts: AgentCounts::of(&agents, &kernel.clock().now_text()),
        work: kernel.work_counts().await?,
        agents,
        agent_types: kernel.agents().types().len(),
        tools: kernel.tools().len(),
        recent_calls,
        providers,
        activity: kernel.activity().await?,
    };
    let meta = following(meta(&op, "Overview", overview::SECTION, n.flash()), &Topic::ALL, "/");
    Ok(html(StatusCode::OK, overview::render(meta, page)))
}

/// The API's reference, drawn from its own OpenAPI document.
pub async fn api_reference(
    Extension(op): Extension<Operator>,
    Extension(document): Extension<crate::http::openapi::Document>,
) -> PageResult {
    let doc: serde_json::Value = serde_json::from_str(document.finished()).map_err(Error::internal)?;
    let page = kennel_app::pages::api_reference::Reference::from_document(&doc);
    Ok(html(
        StatusCode::OK,
        kennel_app::pages::api_reference::render(meta(&op, "API reference", settings::SECTION, None), page),
    ))
}

/// The OpenAPI document for a signed-in operator (the API's copy needs a token).
pub async fn openapi_document(
    Extension(_): Extension<Operator>,
    Extension(document): Extension<crate::http::openapi::Document>,
) -> Response {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], document.finished().to_string()).into_response()
}

#[derive(Deserialize)]
pub struct TestForm {
    #[serde(default)]
    model: String,
    /// `page`: back to the provider's page rather than the overview.
    #[serde(default)]
    back: String,
}

/// "Test" on the overview's provider table: one tiny call, its answer or the provider's own
/// error shown back there.
pub async fn test_provider(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(name): Path<String>,
    Form(f): Form<TestForm>,
) -> PageResult {
    let back = if f.back == "page" { format!("/providers/{name}#status") } else { "/#providers".into() };
    let back = back.as_str();
    Ok(match kernel.test_provider(&name, Some(&f.model)).await {
        Ok(t) => see_other(
            back,
            &format!("`{}` answered in {} ms (model `{}`): {}", t.provider, t.millis, t.model, quoted(&t.reply)),
        ),
        Err(e) if e.kind == kennel_kernel::error::ErrorKind::NotFound => return Err(e.into()),
        Err(e) => super::see_other_warning(back, &format!("Test of `{name}` failed: {}", e.message)),
    })
}

/// A model's reply in a notice: quoted, or said to be empty.
fn quoted(reply: &str) -> String {
    if reply.is_empty() { "no text".into() } else { format!("\u{201c}{reply}\u{201d}") }
}

#[derive(Deserialize)]
pub struct AuditQuery {
    agent: Option<String>,
    tool: Option<String>,
    /// `ok` or `error`.
    outcome: Option<String>,
    /// `1h`, `24h` or `7d`: only calls that recent.
    within: Option<String>,
    before: Option<String>,
    #[serde(flatten)]
    cursor: Cursor,
}

/// The audit page's time windows: its `within` values and how long each is.
const WITHIN: [(&str, i64); 3] = [("1h", 1), ("24h", 24), ("7d", 24 * 7)];

/// Audit records on one page.
const AUDIT_PER_PAGE: u32 = 200;

pub async fn audit(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Query(q): Query<AuditQuery>,
) -> PageResult {
    let agent = q.agent.filter(|a| !a.is_empty());
    let tool = q.tool.filter(|t| !t.trim().is_empty()).map(|t| t.trim().to_string());
    let outcome = q.outcome.filter(|o| o == "ok" || o == "error");
    let within = q.within.filter(|w| WITHIN.iter().any(|(name, _)| name == w));
    let since = within
        .as_deref()
        .and_then(|w| WITHIN.iter().find(|(name, _)| *name == w))
        .map(|(_, hours)| kennel_kernel::db::timestamp(kernel.clock().now() - chrono::Duration::hours(*hours)));
    let filter = AuditFilter { agent: agent.clone(), tool: tool.clone(), outcome: outcome.clone(), since };
    let records = kernel.audit().list(&filter, &q.cursor.or_before(q.before).page(AUDIT_PER_PAGE)).await?;
    let kept = |v: &Option<String>| v.clone().unwrap_or_default();
    let filters =
        [("agent", kept(&agent)), ("tool", kept(&tool)), ("outcome", kept(&outcome)), ("within", kept(&within))];
    let paging = Paging { total: records.total, next: next_page("/audit", &filters, records.next.as_deref()) };
    let kept_days = kernel.config().retention.audit_days;
    let page = audit::AuditPage {
        records: records.items,
        paging,
        agents: kernel.agents().list(),
        agent,
        tool,
        outcome,
        within,
        kept_days,
    };
    Ok(html(StatusCode::OK, audit::render(meta(&op, "Audit", audit::SECTION, None), page)))
}

#[derive(Deserialize)]
pub struct ActionsQuery {
    actor: Option<String>,
    action: Option<String>,
    before: Option<String>,
    #[serde(flatten)]
    cursor: Cursor,
}

/// What operators and API tokens changed, newest first.
pub async fn actions(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Query(q): Query<ActionsQuery>,
) -> PageResult {
    let given = |v: Option<String>| v.map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    let filter = ActionFilter { actor: given(q.actor), action: given(q.action) };
    let records = kernel.actions().list(&filter, &q.cursor.or_before(q.before).page(AUDIT_PER_PAGE)).await?;
    let filters =
        [("actor", filter.actor.clone().unwrap_or_default()), ("action", filter.action.clone().unwrap_or_default())];
    let paging = Paging { total: records.total, next: next_page("/audit/actions", &filters, records.next.as_deref()) };
    let page = audit::ActionsPage { records: records.items, paging, actor: filter.actor, action: filter.action };
    Ok(html(StatusCode::OK, audit::render_actions(meta(&op, "Operator actions", audit::SECTION, None), page)))
}

fn settings_page(op: &Operator, status: StatusCode, page: settings::Settings, flash: Option<Flash>) -> Response {
    html(status, settings::render(meta(op, "Settings", settings::SECTION, flash), page))
}

pub async fn settings(State(kernel): State<Kernel>, Extension(op): Extension<Operator>, n: Notice) -> PageResult {
    let tokens = kernel.auth().list_tokens().await?;
    // A token made by this session's last post is shown here, this once.
    let new_token = kernel.auth().take_reveal(&op.cookie);
    let page = settings::Settings { tokens, new_token, name_error: None };
    Ok(settings_page(&op, StatusCode::OK, page, n.flash()))
}

#[derive(Deserialize)]
pub struct TokenForm {
    name: String,
}

/// Creates a token and shows it on this one response (never after a redirect, never again).
pub async fn create_token(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Form(form): Form<TokenForm>,
) -> PageResult {
    let name = form.name.trim().to_string();
    match kernel.auth().create_token(&name).await {
        Ok(secret) => {
            kernel.auth().hold_reveal(&op.cookie, &name, &secret);
            Ok(see_other("/settings#new-token", &format!("Token `{name}` created.")))
        }
        Err(e) => {
            let tokens = kernel.auth().list_tokens().await?;
            let page = settings::Settings { tokens, new_token: None, name_error: Some(e.message) };
            Ok(settings_page(&op, crate::status::status_for(e.kind), page, None))
        }
    }
}

pub async fn revoke_token(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(name): Path<String>,
) -> PageResult {
    kernel.auth().revoke_token(&name).await?;
    Ok(see_other("/settings", &format!("Token {name} revoked.")))
}

#[derive(Deserialize)]
pub struct ChangesQuery {
    #[serde(default)]
    topics: String,
}

/// The live pages' signal: an event each time one of `?topics=` changed.
pub async fn changes(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Query(q): Query<ChangesQuery>,
) -> PageResult {
    let topics = q
        .topics
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| {
            Topic::parse(t)
                .ok_or_else(|| Error::invalid(format!("`{t}` is not a topic: tasks, schedules, agents or inbox")))
        })
        .collect::<Result<Vec<_>, Error>>()?;
    if topics.is_empty() {
        return Err(Error::invalid("name the topics to follow: `?topics=tasks,schedules`").into());
    }
    Ok(crate::live::changes_stream(&kernel, crate::live::Holder::Session(op.cookie), topics).into_response())
}
