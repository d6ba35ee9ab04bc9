//! `/api/agents`: spawn, list, stop, grants, sessions, and invoking a tool as an agent.

use kennel_kernel::agent::Name;
use kennel_kernel::page::{IdCursor, NumberCursor, PositionCursor};
use std::sync::Arc;

use crate::routes::api;
use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::Method;
use axum::http::{StatusCode, header::LOCATION};
use axum::response::{IntoResponse, Response};
use kennel_kernel::Kernel;
use kennel_kernel::agent::{Agent, NewCapabilities, SpawnRequest};
use kennel_kernel::page::PageQuery;
use kennel_kernel::session::{Compaction, Failure, Session, StoredMessage};
use kennel_kernel::tool::pipeline::CallOutput;
use kennel_kernel::tool::{CallContext, EffectiveTool};
use kennel_kernel::turn::{AgentEvent, TurnRequest, TurnResult};
use serde::Deserialize;
use utoipa::ToSchema;

use super::auth::Bearer;
use super::body::{JsonBody, QueryParams};
use super::error::ApiResult;
use super::page::PageParams;
use crate::routes::{Action, Api};

pub fn routes() -> Api {
    Api::new()
        .route(api!(list_agents, spawn_agent), &[(Method::POST, Action::named("agent.spawn"))])
        .route(api!(get_agent, remove_agent), &[(Method::DELETE, Action::named("agent.delete"))])
        .route(api!(stop_agent), &[(Method::POST, Action::named("agent.stop"))])
        .route(api!(start_agent), &[(Method::POST, Action::named("agent.start"))])
        .route(api!(lift_pause), &[(Method::POST, Action::Unnamed)])
        .route(api!(set_capabilities), &[(Method::PUT, Action::named("agent.grants"))])
        .route(api!(agent_tools), &[])
        .route(api!(invoke_tool), &[(Method::POST, Action::Logged)])
        .route(api!(list_sessions, create_session), &[(Method::POST, Action::Logged)])
        .route(api!(send_message), &[(Method::POST, Action::Logged)])
        .route(api!(cancel_turn), &[(Method::POST, Action::named("turn.cancel"))])
        .route(api!(agent_events), &[])
        .route(api!(session_messages), &[])
        .route(api!(get_session), &[])
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct SpawnBody {
    /// The agent type to make the agent from.
    template: String,
    /// Defaults to the type's name, or `name-2`, `name-3`… when taken.
    #[schema(value_type = Option<Name>)]
    name: Option<String>,
    /// What the agent is for; later prompts show it. At most 10,000 characters.
    #[schema(max_length = 10000)]
    goal: Option<String>,
}

/// Which agents `GET /api/agents` lists.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct AgentListQuery {
    /// Include the agents spawned for workflow steps (hidden by default; removed
    /// `[kernel] ephemeral_retention_hours` after they stop).
    ephemeral: Option<bool>,
}

/// Every agent, oldest first.
#[utoipa::path(get, path = "/api/agents", tag = "agents", params(PageQuery, AgentListQuery, ("cursor" = inline(Option<IdCursor>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last agent's id)")),
    responses((status = 200, description = "A page of agents", body = Vec<Agent>)))]
async fn list_agents(
    State(kernel): State<Kernel>,
    QueryParams(q): QueryParams<AgentListQuery>,
    page: PageParams,
) -> ApiResult<Response> {
    Ok(page.answer(kernel.agents().page(&page.request, q.ephemeral.unwrap_or(false))?))
}

/// Spawns an agent from an agent type.
#[utoipa::path(post, path = "/api/agents", tag = "agents", request_body = SpawnBody,
    responses(
        (status = 201, description = "The new agent", body = Agent, headers(("location" = String, description = "Its URL"))),
        (status = 409, description = "The name is taken by an agent type or a running agent"),
        (status = 422, description = "Invalid fields, each listed (a `template` that names no agent type among them)"),
    ))]
async fn spawn_agent(State(kernel): State<Kernel>, JsonBody(body): JsonBody<SpawnBody>) -> ApiResult<Response> {
    let agent = kernel
        .spawn_agent(SpawnRequest { agent_type: body.template, name: body.name, goal: body.goal, ..Default::default() })
        .await?;
    let location = format!("/api/agents/{}", agent.id);
    Ok((StatusCode::CREATED, [(LOCATION, location)], Json(agent)).into_response())
}

/// One agent, by id or (for a running agent) by name.
#[utoipa::path(get, path = "/api/agents/{id}", tag = "agents", params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)")),
    responses((status = 200, description = "The agent", body = Agent), (status = 404, description = "No such agent")))]
async fn get_agent(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Arc<Agent>>> {
    Ok(Json(kernel.agents().get(&id)?))
}

/// Stops an agent and cancels its running turns; it stays listed, with its sessions and audit.
#[utoipa::path(post, path = "/api/agents/{id}/stop", tag = "agents", params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)")),
    responses((status = 200, description = "The stopped agent (stopping a stopped one changes nothing)", body = Agent), (status = 404, description = "No such agent")))]
async fn stop_agent(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Arc<Agent>>> {
    Ok(Json(kernel.stop_agent(&id).await?))
}

/// Starts a stopped agent again, with its sessions and history; its schedules stay paused.
#[utoipa::path(post, path = "/api/agents/{id}/start", tag = "agents", params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)")),
    responses((status = 200, description = "The running agent (starting a running one changes nothing)", body = Agent), (status = 404, description = "No such agent"),
        (status = 409, description = "Another running agent has its name")))]
async fn start_agent(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Arc<Agent>>> {
    Ok(Json(kernel.start_agent(&id).await?))
}

/// Lifts the agent's budget pause: it may start turns again today, its daily budgets counting
/// from now.
#[utoipa::path(post, path = "/api/agents/{id}/lift", tag = "agents", params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)")),
    responses((status = 200, description = "The agent, not paused (lifting an agent that is not paused changes nothing but where its budgets count from)", body = Agent), (status = 404, description = "No such agent")))]
async fn lift_pause(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Arc<Agent>>> {
    Ok(Json(kernel.lift_pause(&id).await?))
}

/// Stops the agent if it runs and removes it: it is no longer listed or found. Its sessions,
/// schedules (paused) and audit rows stay.
#[utoipa::path(delete, path = "/api/agents/{id}", tag = "agents", params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)")),
    responses((status = 200, description = "The removed agent", body = Agent), (status = 404, description = "No such agent")))]
async fn remove_agent(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Arc<Agent>>> {
    Ok(Json(kernel.remove_agent(&id).await?))
}

/// Replaces the agent's `[capabilities]`. `tools` is required (`[]` clears every grant); an
/// empty body is refused and changes nothing.
#[utoipa::path(put, path = "/api/agents/{id}/capabilities", tag = "agents", params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)")),
    request_body = NewCapabilities,
    responses((status = 200, description = "The agent with its new grants", body = Agent), (status = 404, description = "No such agent")))]
async fn set_capabilities(
    State(kernel): State<Kernel>,
    Path(id): Path<String>,
    JsonBody(caps): JsonBody<NewCapabilities>,
) -> ApiResult<Json<Arc<Agent>>> {
    Ok(Json(kernel.agents().set_capabilities(&id, caps).await?))
}

/// The agent's effective tool set: every tool, allowed or not, and why.
#[utoipa::path(get, path = "/api/agents/{id}/tools", tag = "agents", params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)"), PageQuery, ("cursor" = inline(Option<PositionCursor>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last tool's position)")),
    responses((status = 200, description = "A page of the agent's effective tool set", body = Vec<EffectiveTool>), (status = 404, description = "No such agent")))]
async fn agent_tools(State(kernel): State<Kernel>, Path(id): Path<String>, page: PageParams) -> ApiResult<Response> {
    let agent = kernel.agents().get(&id)?;
    Ok(page.answer(kernel.tools().effective_page(&agent, &page.request)?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct InvokeBody {
    /// The tool's arguments, as its schema in `GET /api/tools` describes them.
    #[schema(value_type = Option<Object>)]
    args: Option<serde_json::Map<String, serde_json::Value>>,
    /// Run within this session of the agent (needed by `tool_load`).
    session_id: Option<uuid::Uuid>,
}

/// Runs a tool as the agent, through the same pipeline as the agent loop: grants, argument
/// validation, spill and audit all apply. For debugging and the dashboard's "try it".
#[utoipa::path(post, path = "/api/agents/{id}/tools/{name}/invoke", tag = "agents",
    params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)"), ("name" = String, Path, description = "The tool's name")),
    request_body = Option<InvokeBody>,
    responses(
        (status = 200, description = "The tool's result (or its spill placeholder)", body = CallOutput),
        (status = 403, description = "Not granted, or not allowed for this agent; the tool did not run"),
        (status = 404, description = "No such agent, tool or session"),
        (status = 409, description = "The agent is stopped, or what the tool acts on is in a state that does not allow it"),
        (status = 422, description = "Invalid arguments, with the JSON path; nothing ran"),
        (status = 429, description = "A limit was reached (call depth, a count)"),
        (status = 502, description = "`Failed`: the tool ran and failed (or what it called did)"),
        (status = 503, description = "The tool is not available on this daemon or in this call (a missing prerequisite)"),
        (status = 504, description = "`Timeout`: the tool did not finish in time"),
    ))]
async fn invoke_tool(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path((id, name)): Path<(String, String)>,
    JsonBody(body): JsonBody<InvokeBody>,
) -> ApiResult<Json<CallOutput>> {
    let agent = kernel.agents().get(&id)?;
    if let Some(session) = body.session_id {
        kernel.sessions().of_agent(&agent, session).await?;
    }
    let ctx = CallContext::new(agent, caller).with_session(body.session_id);
    let args = serde_json::Value::Object(body.args.unwrap_or_default());
    Ok(Json(kernel.call_tool(ctx, &name, args).await?))
}

/// The agent's sessions, newest first.
#[utoipa::path(get, path = "/api/agents/{id}/sessions", tag = "agents", params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)"), PageQuery, ("cursor" = inline(Option<IdCursor>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last session's id)")),
    responses((status = 200, description = "A page of the agent's sessions", body = Vec<Session>), (status = 404, description = "No such agent")))]
async fn list_sessions(State(kernel): State<Kernel>, Path(id): Path<String>, page: PageParams) -> ApiResult<Response> {
    let agent = kernel.agents().get(&id)?;
    Ok(page.answer(kernel.sessions().list(agent.id, &page.request).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct SessionBody {
    /// A label to find it by; at most 200 characters.
    #[schema(max_length = 200)]
    label: Option<String>,
}

/// Opens a new session for the agent.
#[utoipa::path(post, path = "/api/agents/{id}/sessions", tag = "agents", params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)")),
    request_body = Option<SessionBody>, responses((status = 201, description = "The new session", body = Session), (status = 404, description = "No such agent")))]
async fn create_session(
    State(kernel): State<Kernel>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<SessionBody>,
) -> ApiResult<(StatusCode, Json<Session>)> {
    let agent = kernel.agents().get(&id)?;
    Ok((StatusCode::CREATED, Json(kernel.sessions().create(agent.id, body.label).await?)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct MessageBody {
    /// What to tell the agent; not blank.
    #[schema(pattern = r"[^ \t\n\r\f\v]")]
    message: String,
    /// Continue this session: its id, or a key of the client's choosing (1 to 100 characters,
    /// no control characters), which names the agent's session of that key and opens it with
    /// the first message that uses it. Without it a new session is opened (its id is in the
    /// answer).
    #[schema(min_length = 1, max_length = 100, pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$")]
    session: Option<String>,
}

/// Sends the agent a message and runs a turn: the model is called, tool calls go through the
/// pipeline under the agent's grants, and the reply comes back with the trace of every call.
/// API turns are headless: tools that need a person are left out. Turns sent with the CLI's
/// token (`kennel chat`) have a person at the terminal, so those tools are offered.
#[utoipa::path(post, path = "/api/agents/{id}/messages", tag = "agents", params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)")),
    request_body = MessageBody,
    responses(
        (status = 200, description = "The turn's reply, session and trace", body = TurnResult),
        (status = 404, description = "No such agent or session"),
        (status = 409, description = "The agent is stopped"),
        (status = 413, description = "The message is too long for the model's context window (the message says both sizes)"),
        (status = 422, description = "A blank message, or a session key that is empty, too long or holds control characters"),
        (status = 429, description = "The provider refused for now (rate limit), or a budget is spent"),
        (status = 502, description = "The provider answered with an error"),
        (status = 503, description = "No provider, model or API key configured for the agent"),
        (status = 504, description = "The provider did not answer in time"),
    ))]
async fn send_message(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<MessageBody>,
) -> ApiResult<Json<TurnResult>> {
    let mut req = TurnRequest::new(body.message, caller);
    req.session = match body.session {
        None => None,
        Some(session) => Some(kernel.sessions().named(&*kernel.agents().get(&id)?, &session).await?.id),
    };
    Ok(Json(kernel.send_message(&id, req).await?))
}

/// What cancelling a session's turn did.
#[derive(serde::Serialize, ToSchema)]
struct Cancelled {
    /// How many turns were cancelled: 1, or 0 when none was running in the session (it had
    /// ended already).
    cancelled: usize,
}

/// Cancels the turn running in one of the agent's sessions. The agent goes on running and the
/// session takes new messages; the cancelled turn ends with `ended: "cancelled"`, keeping what
/// it stored (its messages and finished tool calls). Stopping the agent cancels all its turns.
#[utoipa::path(post, path = "/api/agents/{id}/sessions/{session}/cancel", tag = "agents",
    params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)"), ("session" = String, Path, description = "The session's id")),
    responses((status = 200, description = "How many turns were cancelled (0: none was running)", body = Cancelled), (status = 404, description = "No such agent, or no such session of it")))]
async fn cancel_turn(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path((id, session)): Path<(String, String)>,
) -> ApiResult<Json<Cancelled>> {
    let session = uuid::Uuid::parse_str(&session)
        .map_err(|_| kennel_kernel::Error::not_found(format!("no session `{session}`")))?;
    Ok(Json(Cancelled { cancelled: kernel.cancel_turn(&id, session, &caller).await? }))
}

/// Live progress of the agent's turns as server-sent events (`turn_started`, `model_call`,
/// `tool_call_started`, `tool_call_finished`, `reply`, `turn_ended`, `turn_failed`).
#[utoipa::path(get, path = "/api/agents/{id}/events", tag = "agents", params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)")),
    responses((status = 200, description = "An endless stream of the agent's turn events", content_type = "text/event-stream", body = AgentEvent), (status = 404, description = "No such agent")))]
async fn agent_events(
    State(kernel): State<Kernel>,
    Extension(holder): Extension<crate::live::Holder>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let agent_id = kernel.agents().get(&id)?.id;
    Ok(crate::live::event_stream(&kernel, holder, agent_id).into_response())
}

/// A session's messages, oldest first, as the model saw them (tool calls and results, spill
/// placeholders included).
#[utoipa::path(get, path = "/api/sessions/{id}/messages", tag = "agents", params(("id" = String, Path, description = "The session's id"), PageQuery, ("cursor" = inline(Option<NumberCursor>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last message's `seq`)")),
    responses((status = 200, description = "A page of the session's messages", body = Vec<StoredMessage>), (status = 404, description = "No such session")))]
async fn session_messages(
    State(kernel): State<Kernel>,
    Path(id): Path<String>,
    page: PageParams,
) -> ApiResult<Response> {
    let id = uuid::Uuid::parse_str(&id).map_err(|_| kennel_kernel::Error::not_found(format!("no session `{id}`")))?;
    kernel.sessions().get(id).await?;
    Ok(page.answer(kernel.sessions().messages_page(id, &page.request).await?))
}

/// A session with what happened to it besides its messages.
#[derive(serde::Serialize, ToSchema)]
struct SessionDetail {
    #[serde(flatten)]
    session: Session,
    /// What happened to turns, each after the session's message it followed: failed turns,
    /// turns cut off by a restart or crash (`kind: Interrupted`), and moves to a fallback
    /// provider (`kind: Fallback`, the turn itself went on).
    failures: Vec<Failure>,
    /// Where the session was compacted to fit the model's context window, oldest first: from
    /// each on, the model was sent its summary and stubs instead of the messages they cover
    /// (which stay stored).
    compactions: Vec<Compaction>,
}

/// One session: its failed and interrupted turns and its compactions.
#[utoipa::path(get, path = "/api/sessions/{id}", tag = "agents", params(("id" = String, Path, description = "The session's id")),
    responses((status = 200, description = "The session", body = SessionDetail), (status = 404, description = "No such session")))]
async fn get_session(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<SessionDetail>> {
    let id = uuid::Uuid::parse_str(&id).map_err(|_| kennel_kernel::Error::not_found(format!("no session `{id}`")))?;
    let session = kernel.sessions().get(id).await?;
    let (failures, compactions) = (kernel.sessions().failures(id).await?, kernel.sessions().compactions(id).await?);
    Ok(Json(SessionDetail { session, failures, compactions }))
}
