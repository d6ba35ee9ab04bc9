//! `/api/agents`: spawn, list, stop, grants, sessions, and invoking a tool as an agent.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::{StatusCode, header::LOCATION};
use axum::response::{IntoResponse, Response};
use kennel_kernel::Kernel;
use kennel_kernel::agent::{Agent, NewCapabilities, SpawnRequest};
use std::convert::Infallible;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use kennel_kernel::session::{Session, StoredMessage};
use kennel_kernel::tool::pipeline::CallOutput;
use kennel_kernel::tool::{CallContext, Caller, EffectiveTool};
use kennel_kernel::turn::{AgentEvent, TurnRequest, TurnResult};
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::TokenName;
use super::body::JsonBody;
use super::error::{ApiResult, ErrorBody};

pub fn router() -> OpenApiRouter<Kernel> {
    OpenApiRouter::new()
        .routes(routes!(list_agents, spawn_agent))
        .routes(routes!(get_agent, stop_agent))
        .routes(routes!(set_capabilities))
        .routes(routes!(agent_tools))
        .routes(routes!(invoke_tool))
        .routes(routes!(list_sessions, create_session))
        .routes(routes!(send_message))
        .routes(routes!(agent_events))
        .routes(routes!(session_messages))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct SpawnBody {
    /// The agent type to make the agent from.
    template: String,
    /// Defaults to the type's name, or `name-2`, `name-3`… when taken.
    name: Option<String>,
    goal: Option<String>,
}

/// Every agent, oldest first.
#[utoipa::path(get, path = "/api/agents", tag = "agents", responses((status = 200, body = Vec<Agent>)))]
async fn list_agents(State(kernel): State<Kernel>) -> Json<Vec<Arc<Agent>>> {
    Json(kernel.agents().list())
}

/// Spawns an agent from an agent type.
#[utoipa::path(post, path = "/api/agents", tag = "agents", request_body = SpawnBody,
    responses((status = 201, body = Agent), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn spawn_agent(State(kernel): State<Kernel>, JsonBody(body): JsonBody<SpawnBody>) -> ApiResult<Response> {
    let agent = kernel
        .spawn_agent(SpawnRequest { agent_type: body.template, name: body.name, goal: body.goal, ..Default::default() })
        .await?;
    let location = format!("/api/agents/{}", agent.id);
    Ok((StatusCode::CREATED, [(LOCATION, location)], Json(agent)).into_response())
}

/// One agent, by id or (for a running agent) by name.
#[utoipa::path(get, path = "/api/agents/{id}", tag = "agents", params(("id" = String, Path)),
    responses((status = 200, body = Agent), (status = 404, body = ErrorBody)))]
async fn get_agent(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Arc<Agent>>> {
    Ok(Json(kernel.agents().get(&id)?))
}

/// Stops an agent and cancels its running turns. Its record, sessions and audit stay.
#[utoipa::path(delete, path = "/api/agents/{id}", tag = "agents", params(("id" = String, Path)),
    responses((status = 200, body = Agent), (status = 404, body = ErrorBody)))]
async fn stop_agent(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Arc<Agent>>> {
    Ok(Json(kernel.stop_agent(&id).await?))
}

/// Replaces the agent's `[capabilities]`. `tools` is required (`[]` clears every grant); an
/// empty body is refused and changes nothing.
#[utoipa::path(put, path = "/api/agents/{id}/capabilities", tag = "agents", params(("id" = String, Path)),
    request_body = NewCapabilities,
    responses((status = 200, body = Agent), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn set_capabilities(
    State(kernel): State<Kernel>,
    Path(id): Path<String>,
    JsonBody(caps): JsonBody<NewCapabilities>,
) -> ApiResult<Json<Arc<Agent>>> {
    Ok(Json(kernel.agents().set_capabilities(&id, caps).await?))
}

/// The agent's effective tool set: every tool, allowed or not, and why.
#[utoipa::path(get, path = "/api/agents/{id}/tools", tag = "agents", params(("id" = String, Path)),
    responses((status = 200, body = Vec<EffectiveTool>), (status = 404, body = ErrorBody)))]
async fn agent_tools(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Vec<EffectiveTool>>> {
    let agent = kernel.agents().get(&id)?;
    Ok(Json(kernel.tools().effective(&agent)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct InvokeBody {
    /// The tool's arguments.
    #[serde(default)]
    #[schema(value_type = Object)]
    args: serde_json::Value,
    /// Run within this session of the agent (needed by `tool_load`).
    session_id: Option<uuid::Uuid>,
}

/// Runs a tool as the agent, through the same pipeline as the agent loop: grants, argument
/// validation, spill and audit all apply. For debugging and the dashboard's "try it".
#[utoipa::path(post, path = "/api/agents/{id}/tools/{name}/invoke", tag = "agents",
    params(("id" = String, Path), ("name" = String, Path)), request_body = InvokeBody,
    responses(
        (status = 200, body = CallOutput),
        (status = 403, body = ErrorBody, description = "Not granted; the tool did not run"),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody, description = "Invalid arguments, with the JSON path"),
        (status = 502, body = ErrorBody, description = "`Failed`: the tool ran and failed (or what it called did)"),
        (status = 504, body = ErrorBody, description = "`Timeout`: the tool did not finish in time"),
        (status = 500, body = ErrorBody, description = "`Internal`: a fault of this daemon; the message is `internal error (ref ID)`"),
    ))]
async fn invoke_tool(
    State(kernel): State<Kernel>,
    Extension(TokenName(token)): Extension<TokenName>,
    Path((id, name)): Path<(String, String)>,
    JsonBody(body): JsonBody<InvokeBody>,
) -> ApiResult<Json<CallOutput>> {
    let agent = kernel.agents().get(&id)?;
    if let Some(session) = body.session_id {
        session_of(&kernel, &agent, session).await?;
    }
    let ctx = CallContext::new(kernel.clone(), agent, Caller::Token(token)).with_session(body.session_id);
    Ok(Json(kernel.call_tool(ctx, &name, body.args).await?))
}

async fn session_of(kernel: &Kernel, agent: &Agent, session: uuid::Uuid) -> ApiResult<Session> {
    let s = kernel.sessions().get(session).await?;
    if s.agent_id != agent.id {
        return Err(
            kennel_kernel::Error::not_found(format!("agent `{}` has no session `{session}`", agent.name)).into()
        );
    }
    Ok(s)
}

/// The agent's sessions, newest first.
#[utoipa::path(get, path = "/api/agents/{id}/sessions", tag = "agents", params(("id" = String, Path)),
    responses((status = 200, body = Vec<Session>), (status = 404, body = ErrorBody)))]
async fn list_sessions(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Vec<Session>>> {
    let agent = kernel.agents().get(&id)?;
    Ok(Json(kernel.sessions().list(agent.id).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct SessionBody {
    label: Option<String>,
}

/// Opens a new session for the agent.
#[utoipa::path(post, path = "/api/agents/{id}/sessions", tag = "agents", params(("id" = String, Path)),
    request_body = SessionBody, responses((status = 201, body = Session), (status = 404, body = ErrorBody)))]
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
    message: String,
    /// Continue this session; without it a new session is opened (its id is in the answer).
    session: Option<uuid::Uuid>,
}

/// Sends the agent a message and runs a turn: the model is called, tool calls go through the
/// pipeline under the agent's grants, and the reply comes back with the trace of every call.
/// API turns are headless: tools that need a person are left out.
#[utoipa::path(post, path = "/api/agents/{id}/messages", tag = "agents", params(("id" = String, Path)),
    request_body = MessageBody,
    responses(
        (status = 200, body = TurnResult),
        (status = 404, body = ErrorBody),
        (status = 503, body = ErrorBody, description = "No provider, no API key, or the agent is stopped"),
    ))]
async fn send_message(
    State(kernel): State<Kernel>,
    Extension(TokenName(token)): Extension<TokenName>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<MessageBody>,
) -> ApiResult<Json<TurnResult>> {
    let mut req = TurnRequest::headless(body.message, Caller::Token(token));
    req.session = body.session;
    Ok(Json(kernel.send_message(&id, req).await?))
}

/// Live progress of the agent's turns as server-sent events (`turn_started`, `model_call`,
/// `tool_call_started`, `tool_call_finished`, `reply`, `turn_ended`, `turn_failed`).
#[utoipa::path(get, path = "/api/agents/{id}/events", tag = "agents", params(("id" = String, Path)),
    responses((status = 200, content_type = "text/event-stream", body = AgentEvent), (status = 404, body = ErrorBody)))]
async fn agent_events(
    State(kernel): State<Kernel>,
    Path(id): Path<String>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let agent_id = kernel.agents().get(&id)?.id;
    Ok(event_stream(&kernel, agent_id))
}

/// The SSE stream of one agent's turn events; the dashboard's live chat uses it too.
pub(crate) fn event_stream(
    kernel: &Kernel,
    agent_id: uuid::Uuid,
) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<>> {
    let events = futures_util::stream::unfold(kernel.turns().subscribe(), move |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(event) if event.agent_id == agent_id => {
                    let sse = Event::default().event(event.kind.name()).json_data(&event).unwrap_or_default();
                    return Some((Ok(sse), rx));
                }
                Ok(_) => continue,
                Err(RecvError::Lagged(missed)) => {
                    return Some((Ok(Event::default().event("lagged").data(missed.to_string())), rx));
                }
                Err(RecvError::Closed) => return None,
            }
        }
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}

/// A session's messages, oldest first, as the model saw them (tool calls and results, spill
/// placeholders included).
#[utoipa::path(get, path = "/api/sessions/{id}/messages", tag = "agents", params(("id" = String, Path)),
    responses((status = 200, body = Vec<StoredMessage>), (status = 404, body = ErrorBody)))]
async fn session_messages(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Vec<StoredMessage>>> {
    let id = uuid::Uuid::parse_str(&id).map_err(|_| kennel_kernel::Error::not_found(format!("no session `{id}`")))?;
    kernel.sessions().get(id).await?;
    Ok(Json(kernel.sessions().messages(id).await?))
}
