//! `/api/agents/{id}/processes`: an agent's subprocesses as the dashboard shows them, and an
//! operator's kill (the same `Processes::kill` as the agent's `process_kill`).

use crate::routes::api;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::Method;
use kennel_kernel::Kernel;
use kennel_kernel::process::Processes;
use kennel_kernel::process::{ProcessView, Signal};
use serde::Deserialize;
use utoipa::ToSchema;

use super::body::JsonBody;
use super::error::ApiResult;
use crate::routes::{Action, Api};

pub fn routes() -> Api {
    Api::new()
        .route(api!(list), &[])
        .route(api!(get_one), &[])
        .route(api!(kill), &[(Method::POST, Action::named("process.kill"))])
}

/// The agent's processes: running ones and those ended in the last 15 minutes, oldest first,
/// each with the last few KiB of its output.
#[utoipa::path(get, path = "/api/agents/{id}/processes", tag = "processes",
    params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)")),
    responses((status = 200, description = "The agent's processes", body = Vec<ProcessView>), (status = 404, description = "No such agent")))]
async fn list(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Vec<ProcessView>>> {
    let agent = kernel.agents().get(&id)?;
    Ok(Json(kernel.service::<Processes>().list(agent.id)))
}

/// One of the agent's processes.
#[utoipa::path(get, path = "/api/agents/{id}/processes/{process_id}", tag = "processes",
    params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)"), ("process_id" = i64, Path, description = "The process's id")),
    responses((status = 200, description = "The process", body = ProcessView), (status = 404, description = "No such agent, or no such process of it"),
        (status = 422, description = "The process id is not a whole number")))]
async fn get_one(
    State(kernel): State<Kernel>,
    Path((id, process)): Path<(String, String)>,
) -> ApiResult<Json<ProcessView>> {
    let agent = kernel.agents().get(&id)?;
    Ok(Json(kernel.service::<Processes>().get(agent.id, kennel_kernel::process::parse_id(&process)?)?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct KillBody {
    /// Default TERM, followed by KILL past `[exec_policy] kill_grace_secs`.
    signal: Option<Signal>,
}

/// Stops the process and its whole group, or sends it another signal. TERM (the default), INT,
/// QUIT and KILL answer once it ended (KILL follows the others past `[exec_policy]
/// kill_grace_secs`); HUP, USR1 and USR2 are only sent and answer at once. `SIGTERM` and the
/// like are read as `TERM`.
#[utoipa::path(post, path = "/api/agents/{id}/processes/{process_id}/kill", tag = "processes",
    params(("id" = String, Path, description = "The agent's id, or its name (the running agent's, else the one stopped agent's)"), ("process_id" = i64, Path, description = "The process's id")),
    request_body(content = Option<KillBody>, description = "The signal (optional)"),
    responses((status = 200, description = "The process after the signal (an ended one as it was)", body = ProcessView),
        (status = 404, description = "No such agent, or no such process of it"), (status = 422, description = "Not a signal Kennel sends, or the process id is not a whole number")))]
async fn kill(
    State(kernel): State<Kernel>,
    Path((id, process)): Path<(String, String)>,
    JsonBody(body): JsonBody<KillBody>,
) -> ApiResult<Json<ProcessView>> {
    let agent = kernel.agents().get(&id)?;
    let process = kennel_kernel::process::parse_id(&process)?;
    Ok(Json(kernel.service::<Processes>().kill(agent.id, process, body.signal.unwrap_or(Signal::Term)).await?))
}
