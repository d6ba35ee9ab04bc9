//! Agents: spawn, stop, grants, and the chat.

use axum::Form;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kennel_app::Nav;
use kennel_app::pages::agents::{self, AgentPage, AgentsPage, SpawnForm};
use kennel_kernel::agent::{SpawnRequest, to_toml};
use kennel_kernel::page::PageRequest;
use kennel_kernel::tool::Caller;
use kennel_kernel::turn::TurnRequest;
use kennel_kernel::{Error, Kernel};
use serde::Deserialize;

use super::{Notice, Operator, error_page, field_errors, html, meta, see_other};

fn list_page(op: &Operator, status: StatusCode, page: AgentsPage, notice: Notice) -> Response {
    html(status, agents::render_list(meta(op, "Agents", Nav::Agents, notice.flash()), page))
}

pub async fn list(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Query(n): Query<Notice>,
) -> Response {
    let page = AgentsPage {
        agents: kernel.agents().list(),
        types: kernel.agents().types(),
        form: SpawnForm::default(),
        errors: Vec::new(),
    };
    list_page(&op, StatusCode::OK, page, n)
}

#[derive(Deserialize)]
pub struct SpawnFields {
    #[serde(default)]
    template: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    goal: String,
}

pub async fn spawn(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Form(f): Form<SpawnFields>,
) -> Response {
    let req = SpawnRequest {
        agent_type: f.template.clone(),
        name: Some(f.name.trim().to_string()).filter(|n| !n.is_empty()),
        goal: Some(f.goal.trim().to_string()).filter(|g| !g.is_empty()),
        ..Default::default()
    };
    match kernel.spawn_agent(req).await {
        Ok(a) => see_other(&format!("/agents/{}", a.id), &format!("Agent `{}` spawned.", a.name)),
        Err(e) => {
            let field = if e.kind == kennel_kernel::ErrorKind::NotFound { "template" } else { "name" };
            let page = AgentsPage {
                agents: kernel.agents().list(),
                types: kernel.agents().types(),
                form: SpawnForm { template: f.template, name: f.name, goal: f.goal },
                errors: field_errors(&e, field),
            };
            list_page(&op, crate::status::status_for(e.kind), page, Notice::default())
        }
    }
}

#[derive(Deserialize)]
pub struct PageQuery {
    session: Option<String>,
    notice: Option<String>,
}

/// Schedules listed on an agent's page; the Schedules page has them all.
const AGENT_PAGE_SCHEDULES: u32 = 20;
/// Sessions listed on an agent's page, newest first.
const AGENT_PAGE_SESSIONS: u32 = 50;

async fn agent_page(
    kernel: &Kernel,
    op: &Operator,
    id: &str,
    session: Option<&str>,
    chat_error: Option<&Error>,
    notice: Notice,
) -> Response {
    let result: Result<AgentPage, Error> = async {
        let agent = kernel.agents().get(id)?;
        let sessions = kernel.sessions().list(agent.id, &PageRequest::first(AGENT_PAGE_SESSIONS)).await?.items;
        let session = match session.filter(|s| !s.is_empty()) {
            Some(s) => {
                let wanted = uuid::Uuid::parse_str(s).map_err(|_| Error::not_found(format!("no session `{s}`")))?;
                Some(
                    sessions
                        .iter()
                        .find(|x| x.id == wanted)
                        .cloned()
                        .ok_or_else(|| Error::not_found(format!("agent `{}` has no session `{s}`", agent.name)))?,
                )
            }
            None => None,
        };
        let messages = match &session {
            Some(s) => kernel.sessions().messages(s.id).await?,
            None => Vec::new(),
        };
        let filter =
            kennel_kernel::schedule::ScheduleFilter { agent: Some(agent.id.to_string()), ..Default::default() };
        let schedules = kernel.schedules().list(&filter, &PageRequest::first(AGENT_PAGE_SCHEDULES)).await?.items;
        Ok(AgentPage {
            manifest_toml: to_toml(&agent.manifest),
            schedules,
            agent,
            sessions,
            session,
            messages,
            chat_error: chat_error.map(|e| e.model_text()),
        })
    }
    .await;
    match result {
        Ok(page) => {
            let status = chat_error.map_or(StatusCode::OK, |e| crate::status::status_for(e.kind));
            let title = page.agent.name.clone();
            html(status, agents::render_agent(meta(op, title, Nav::Agents, notice.flash()), page))
        }
        Err(e) => error_page(op, &e),
    }
}

pub async fn page(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let notice = Notice { notice: q.notice };
    agent_page(&kernel, &op, &id, q.session.as_deref(), None, notice).await
}

pub async fn stop(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
) -> Response {
    match kernel.stop_agent(&id).await {
        Ok(a) => see_other("/agents", &format!("Agent `{}` stopped.", a.name)),
        Err(e) => error_page(&op, &e),
    }
}

#[derive(Deserialize)]
pub struct GrantForm {
    pattern: String,
    /// Where to go afterwards (a dashboard path); the agent's page by default.
    back: Option<String>,
}

fn back_to(form_back: Option<&str>, id: &str) -> String {
    // Only paths on this site: never an open redirect.
    form_back.and_then(super::site::same_site_path).map(str::to_string).unwrap_or_else(|| format!("/agents/{id}"))
}

pub async fn grant(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Form(f): Form<GrantForm>,
) -> Response {
    match kernel.agents().grant(&id, f.pattern.trim()).await {
        Ok(a) => see_other(&back_to(f.back.as_deref(), &id), &format!("`{}` granted to {}.", f.pattern.trim(), a.name)),
        Err(e) => error_page(&op, &e),
    }
}

pub async fn revoke(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Form(f): Form<GrantForm>,
) -> Response {
    match kernel.agents().revoke(&id, f.pattern.trim()).await {
        Ok(a) => {
            see_other(&back_to(f.back.as_deref(), &id), &format!("`{}` revoked from {}.", f.pattern.trim(), a.name))
        }
        Err(e) => error_page(&op, &e),
    }
}

#[derive(Deserialize)]
pub struct ChatForm {
    message: String,
    session: Option<String>,
}

/// Runs a turn with the operator present (not headless), then shows the session.
pub async fn chat(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Form(f): Form<ChatForm>,
) -> Response {
    let session = match f.session.as_deref().filter(|s| !s.is_empty()).map(uuid::Uuid::parse_str) {
        Some(Ok(s)) => Some(s),
        Some(Err(_)) => return error_page(&op, &Error::invalid("the session id is not valid")),
        None => None,
    };
    let req =
        TurnRequest { session, headless: false, ..TurnRequest::headless(f.message, Caller::Operator(op.name.clone())) };
    match kernel.send_message(&id, req).await {
        Ok(turn) => see_other(&format!("/agents/{id}?session={}#chat", turn.session_id), ""),
        Err(e) => agent_page(&kernel, &op, &id, f.session.as_deref(), Some(&e), Notice::default()).await,
    }
}

/// The agent's live turn events for the chat page (the dashboard twin of
/// `GET /api/agents/{id}/events`, behind the operator's session instead of a token).
pub async fn live(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
) -> Response {
    match kernel.agents().get(&id) {
        Ok(agent) => crate::live::event_stream(&kernel, agent.id).into_response(),
        Err(e) => error_page(&op, &e),
    }
}
