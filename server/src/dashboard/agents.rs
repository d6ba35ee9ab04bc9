//! Agents: spawn, stop, remove, grants, and the chat.

use axum::Form;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kennel_app::Paging;
use kennel_app::pages::agents::{self, AgentPage, AgentsPage, SpawnForm};
use kennel_kernel::agent::{SpawnRequest, to_toml};
use kennel_kernel::ask::Questions;
use kennel_kernel::canvas::Canvases;
use kennel_kernel::page::PageRequest;
use kennel_kernel::schedule::Schedules;
use kennel_kernel::session::Origin;
use kennel_kernel::tool::Caller;
use kennel_kernel::turn::TurnRequest;
use kennel_kernel::workspace::Workspaces;
use kennel_kernel::{Error, Kernel};
use serde::Deserialize;

use super::tools::{Outcome, ToolsQuery, tools_page};
use super::{Cursor, Notice, Operator, PageResult, field_errors, html, meta, next_page, see_other, see_other_warned};
use crate::routes::{Action, Pages, get, post};

pub fn routes() -> Pages {
    Pages::new()
        .route("/agents", get(list).post(spawn, Action::named("agent.spawn")))
        .route("/agents/{id}", get(page))
        .route("/agents/{id}/stop", post(stop, Action::named("agent.stop")))
        .route("/agents/{id}/start", post(start, Action::named("agent.start")))
        .route("/agents/{id}/lift", post(lift, Action::Unnamed))
        .route("/agents/{id}/remove", post(remove, Action::named("agent.delete")))
        .route("/agents/{id}/grant", post(grant, Action::named("agent.grant")))
        .route("/agents/{id}/revoke", post(revoke, Action::named("agent.revoke")))
        .route("/agents/{id}/chat", post(chat, Action::Logged))
        .route("/agents/{id}/sessions/{session}/cancel", post(cancel_turn, Action::named("turn.cancel")))
        .route("/agents/{id}/live", get(live))
        .route("/agents/{id}/questions/{question_id}", post(answer, Action::Logged))
}

/// Agents on one page of the list.
const PER_PAGE: u32 = 100;

fn list_page(
    kernel: &Kernel,
    op: &Operator,
    status: StatusCode,
    (cursor, with_ephemeral): (&Cursor, bool),
    form: SpawnForm,
    errors: Vec<kennel_kernel::error::FieldError>,
    notice: Notice,
) -> PageResult {
    let agents = kernel.agents().page(&cursor.page(PER_PAGE), with_ephemeral)?;
    let kept: Vec<(&str, String)> = if with_ephemeral { vec![("ephemeral", "1".into())] } else { Vec::new() };
    let page = AgentsPage {
        paging: Paging { total: agents.total, next: next_page("/agents", &kept, agents.next.as_deref()) },
        agents: agents.items,
        types: kernel.agents().types(),
        form,
        errors,
        with_ephemeral,
        ephemeral: kernel.agents().ephemeral_count(),
    };
    Ok(html(status, agents::render_list(meta(op, "Agents", agents::SECTION, notice.flash()), page)))
}

#[derive(Deserialize)]
pub struct ListQuery {
    #[serde(flatten)]
    cursor: Cursor,
    /// `1`: show the workflow step agents too.
    ephemeral: Option<String>,
}

pub async fn list(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Query(q): Query<ListQuery>,
    n: Notice,
) -> PageResult {
    let with_ephemeral = q.ephemeral.as_deref() == Some("1");
    list_page(&kernel, &op, StatusCode::OK, (&q.cursor, with_ephemeral), SpawnForm::default(), Vec::new(), n)
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
) -> PageResult {
    let req = SpawnRequest {
        agent_type: f.template.clone(),
        name: Some(f.name.trim().to_string()).filter(|n| !n.is_empty()),
        goal: Some(f.goal.trim().to_string()).filter(|g| !g.is_empty()),
        ..Default::default()
    };
    match kernel.spawn_agent(req).await {
        Ok(a) => Ok(see_other(&format!("/agents/{}", a.id), &format!("Agent `{}` spawned.", a.name))),
        Err(e) => {
            let status = crate::status::status_for(e.kind);
            let form = SpawnForm { template: f.template, name: f.name, goal: f.goal };
            list_page(
                &kernel,
                &op,
                status,
                (&Cursor::default(), false),
                form,
                field_errors(&e, "name"),
                Notice::default(),
            )
        }
    }
}

#[derive(Deserialize)]
pub struct PageQuery {
    session: Option<String>,
    /// Where the list of sessions continues.
    #[serde(flatten)]
    cursor: Cursor,
}

/// Schedules listed on an agent's page; the Schedules page has them all.
const AGENT_PAGE_SCHEDULES: u32 = 20;
/// Sessions listed on an agent's page, newest first.
const AGENT_PAGE_SESSIONS: u32 = 50;

/// Canvas versions listed on an agent's page.
const AGENT_PAGE_CANVASES: u32 = 10;

/// What the agent page shows besides the agent: a refused chat message, grant or upload.
#[derive(Default)]
pub(super) struct Refused<'a> {
    pub chat: Option<&'a Error>,
    /// The message the refused chat was sending: back in the box, to retry or edit.
    pub draft: Option<&'a str>,
    pub grant: Option<&'a Error>,
    pub upload: Option<&'a Error>,
}

pub(super) async fn agent_page(
    kernel: &Kernel,
    op: &Operator,
    id: &str,
    (session, cursor): (Option<&str>, &Cursor),
    refused: Refused<'_>,
    notice: Notice,
) -> PageResult {
    let agent = kernel.agents().get(id)?;
    let sessions = kernel.sessions().list(agent.id, &cursor.page(AGENT_PAGE_SESSIONS)).await?;
    let path = format!("/agents/{}", agent.id);
    let sessions_paging = Paging {
        total: sessions.total,
        next: next_page(&path, &[("session", session.unwrap_or_default().to_string())], sessions.next.as_deref()),
    };
    let sessions = sessions.items;
    // No session asked for: the operator's own latest chat (returning to an agent continues
    // where they were; a channel's or a schedule's conversation is one click away in the
    // list); `new` starts a fresh one.
    let session = match session.filter(|s| !s.is_empty()) {
        None if cursor.is_first() => {
            let own = Origin::Operator(op.name.clone());
            kernel.sessions().latest_of(agent.id, &own).await?.map(|s| s.id.to_string())
        }
        other => other.filter(|s| *s != "new").map(str::to_string),
    };
    let session = match session.as_deref() {
        Some(s) => {
            let wanted = uuid::Uuid::parse_str(s).map_err(|_| Error::not_found(format!("no session `{s}`")))?;
            Some(kernel.sessions().of_agent(&agent, wanted).await?)
        }
        None => None,
    };
    let (messages, failures, compactions) = match &session {
        Some(s) => (
            kernel.sessions().messages(s.id).await?,
            kernel.sessions().failures(s.id).await?,
            kernel.sessions().compactions(s.id).await?,
        ),
        None => (Vec::new(), Vec::new(), Vec::new()),
    };
    let filter = kennel_kernel::schedule::ScheduleFilter { agent: Some(agent.id.to_string()), ..Default::default() };
    let schedules = kernel.service::<Schedules>().list(&filter, &PageRequest::first(AGENT_PAGE_SCHEDULES)).await?.items;
    let workspace = kernel.service::<Workspaces>().list(agent.id).await?;
    let canvases =
        kernel.service::<Canvases>().versions(agent.id, &PageRequest::first(AGENT_PAGE_CANVASES)).await?.items;
    let status =
        refused.chat.or(refused.grant).or(refused.upload).map_or(StatusCode::OK, |e| crate::status::status_for(e.kind));
    let agent_ref = agent.clone();
    let now = kernel.clock().now_text();
    let paused = agent.paused_at(&now).cloned();
    let (usage_today, budget_left) = match kennel_kernel::usage::budget::of_agent(kernel, &agent).await? {
        Some(standing) => {
            let left = (standing.tokens_left(), standing.usd_left());
            (standing.used, Some(left))
        }
        None => {
            (kernel.usage().spent_since(Some(agent.id), &kennel_kernel::usage::budget::day_start(kernel)).await?, None)
        }
    };
    let turn_running = session.as_ref().is_some_and(|s| kernel.turns().running_in_session(agent.id, s.id));
    let page = AgentPage {
        turn_running,
        manifest_toml: to_toml(&agent.manifest),
        schedules,
        agent,
        sessions,
        sessions_paging,
        session,
        messages,
        failures,
        compactions,
        draft: refused.draft.map(str::to_string),
        chat_error: refused.chat.map(|e| e.model_text()),
        grant_error: refused.grant.map(|e| e.fields.first().map_or(e.message.clone(), |f| f.message.clone())),
        upload_error: refused.upload.map(|e| e.message.clone()),
        workspace,
        canvases,
        usage_today,
        budget_left,
        paused,
        queued: kernel.provider_for(&agent_ref).ok().and_then(|p| p.queue()),
        questions: kernel
            .service::<Questions>()
            .waiting(Some(agent_ref.id))
            .await?
            .into_iter()
            .filter(|q| q.asked_in == kennel_kernel::ask::AskedIn::Chat)
            .collect(),
    };
    let title = page.agent.name.clone();
    Ok(html(status, agents::render_agent(meta(op, title, agents::SECTION, notice.flash()), page)))
}

pub async fn page(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
    n: Notice,
) -> PageResult {
    agent_page(&kernel, &op, &id, (q.session.as_deref(), &q.cursor), Refused::default(), n).await
}

pub async fn stop(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(id): Path<String>,
) -> PageResult {
    let a = kernel.stop_agent(&id).await?;
    Ok(see_other("/agents", &format!("Agent `{}` stopped.", a.name)))
}

/// Starts a stopped agent again (its schedules stay paused).
pub async fn start(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(id): Path<String>,
) -> PageResult {
    let a = kernel.start_agent(&id).await?;
    let notice = format!("Agent {} started. Its schedules stay paused: resume them on the Schedules page.", a.name);
    Ok(see_other(&format!("/agents/{}", a.id), &notice))
}

/// Removes a stopped agent from the lists (its sessions, schedules and audit stay).
pub async fn remove(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(id): Path<String>,
) -> PageResult {
    let a = kernel.remove_agent(&id).await?;
    Ok(see_other("/agents", &format!("Agent {} deleted: its history and audit stay.", a.name)))
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
) -> PageResult {
    let pattern = f.pattern.trim();
    let done = kernel.agents().grant(&id, pattern).await;
    let done = done.map(|a| (format!("`{pattern}` granted to {}.", a.name), kernel.tools().pattern_warning(pattern)));
    grant_done(&kernel, &op, &id, f.back.as_deref(), done).await
}

pub async fn revoke(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Form(f): Form<GrantForm>,
) -> PageResult {
    let pattern = f.pattern.trim();
    let done = kernel.agents().revoke(&id, pattern).await;
    grant_done(
        &kernel,
        &op,
        &id,
        f.back.as_deref(),
        done.map(|a| (format!("`{pattern}` revoked from {}.", a.name), None)),
    )
    .await
}

/// After a grant or revoke: back where the form was, with a notice; or that page again with
/// the refusal next to the form that was sent (the inspector's tool, the agent's grant field).
async fn grant_done(
    kernel: &Kernel,
    op: &Operator,
    id: &str,
    back: Option<&str>,
    done: Result<(String, Option<String>), Error>,
) -> PageResult {
    let back = back_to(back, id);
    let e = match done {
        Ok((notice, warning)) => return Ok(see_other_warned(&back, &notice, warning)),
        Err(e) => e,
    };
    let message = e.fields.first().map_or(e.message.clone(), |f| f.message.clone());
    if let Some(query) = back.strip_prefix("/tools?") {
        let query = query.split('#').next().unwrap_or_default();
        let q: ToolsQuery = serde_urlencoded::from_str(query).unwrap_or_default();
        let tool = q.open.clone().unwrap_or_default();
        let outcome = Outcome {
            refused: Some((tool, message)),
            status: Some(crate::status::status_for(e.kind)),
            ..Default::default()
        };
        return tools_page(kernel, op, q, outcome);
    }
    let refused = Refused { grant: Some(&e), ..Default::default() };
    agent_page(kernel, op, id, (None, &Cursor::default()), refused, Notice::default()).await
}

#[derive(Deserialize)]
pub struct ChatForm {
    message: String,
    session: Option<String>,
    /// Set by the Retry button: answer the session's unanswered last message again.
    retry: Option<String>,
}

/// Runs a turn with the operator present (not headless), then shows the session.
pub async fn chat(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Form(f): Form<ChatForm>,
) -> PageResult {
    let agent = kernel.agents().get(&id)?;
    let session = match f.session.as_deref().filter(|s| !s.is_empty()).map(uuid::Uuid::parse_str) {
        Some(Ok(s)) => Some(s),
        Some(Err(_)) => return Err(Error::invalid("the session id is not valid").into()),
        // Opened here, not by the turn, so a failed first turn still has its session to show.
        None if agent.is_running() && !kennel_kernel::text::is_blank(&f.message) => {
            Some(kernel.sessions().create(agent.id, Origin::Operator(op.name.clone()).label()).await?.id)
        }
        None => None,
    };
    let req = TurnRequest {
        session,
        retry: f.retry.is_some(),
        ..TurnRequest::new(f.message.clone(), Caller::Operator(op.name.clone()))
    };
    match kernel.send_message(&id, req).await {
        Ok(turn) => Ok(see_other(&format!("/agents/{id}?session={}#chat", turn.session_id), "")),
        Err(e) => {
            let refused = Refused { chat: Some(&e), draft: Some(&f.message), ..Default::default() };
            let shown = session.map(|s| s.to_string()).unwrap_or_else(|| "new".into());
            agent_page(&kernel, &op, &id, (Some(&shown), &Cursor::default()), refused, Notice::default()).await
        }
    }
}

/// Cancels the turn running in one of the agent's chats (the chat's Stop button): the agent
/// goes on running, and the chat takes the next message.
pub async fn cancel_turn(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path((id, session)): Path<(String, String)>,
) -> PageResult {
    let session = uuid::Uuid::parse_str(&session).map_err(|_| Error::not_found(format!("no session `{session}`")))?;
    let notice = match kernel.cancel_turn(&id, session, &Caller::Operator(op.name)).await? {
        0 => "No turn was running in this chat: it had ended already.",
        _ => "The turn is cancelled; the chat takes your next message.",
    };
    let agent = kernel.agents().get(&id)?;
    Ok(see_other(&format!("/agents/{}?session={session}#chat", agent.id), notice))
}

#[derive(Deserialize)]
pub struct AnswerForm {
    /// A choice's button.
    choice: Option<String>,
    /// The answer typed.
    #[serde(default)]
    answer: String,
}

/// Answers an `ask_user` question waiting in the agent's chat: the turn goes on with it.
pub async fn answer(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path((id, question_id)): Path<(String, String)>,
    Form(f): Form<AnswerForm>,
) -> PageResult {
    let agent = kernel.agents().get(&id)?;
    let answer = f.choice.filter(|c| !c.trim().is_empty()).unwrap_or(f.answer);
    let by = Caller::Operator(op.name.clone()).audit_label();
    let question = kernel.service::<Questions>().answer(&question_id, &answer, &by).await?;
    let session = question.session_id.map(|s| format!("?session={s}")).unwrap_or_default();
    Ok(see_other(&format!("/agents/{}{session}#chat", agent.id), "Answered: the agent goes on."))
}

/// Lifts the agent's budget pause (it may go on today; its budget counts from now).
pub async fn lift(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(id): Path<String>,
) -> PageResult {
    let agent = kernel.lift_pause(&id).await?;
    Ok(see_other(
        &format!("/agents/{}", agent.id),
        &format!("The pause of `{}` is lifted; its budget counts from now.", agent.name),
    ))
}

/// The agent's live turn events for the chat page (the dashboard twin of
/// `GET /api/agents/{id}/events`, behind the operator's session instead of a token).
pub async fn live(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
) -> Result<Response, super::PageError> {
    let agent = kernel.agents().get(&id)?;
    Ok(crate::live::event_stream(&kernel, crate::live::Holder::Session(op.cookie), agent.id).into_response())
}
