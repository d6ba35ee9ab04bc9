//! `/agents/{id}/processes`: the agent's subprocesses, from the process service, and the
//! kill button (the same `Processes::kill` the API and `process_kill` use).

use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use kennel_app::pages::processes::{self, ProcessesPage};
use kennel_kernel::Kernel;
use kennel_kernel::process::Processes;
use kennel_kernel::process::{Signal, describe};

use super::{Notice, Operator, PageResult, html, meta, see_other};
use crate::routes::{Action, Pages, get, post};

pub fn routes() -> Pages {
    Pages::new()
        .route("/agents/{id}/processes", get(page))
        .route("/agents/{id}/processes/{process_id}/kill", post(kill, Action::named("process.kill")))
}

pub async fn page(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    notice: Notice,
) -> PageResult {
    let agent = kernel.agents().get(&id)?;
    let page = ProcessesPage {
        agent_id: agent.id.to_string(),
        agent_name: agent.name.clone(),
        processes: kernel.service::<Processes>().list(agent.id),
        kept_days: kernel.config().retention.processes_days,
    };
    let meta = meta(&op, format!("{} · processes", agent.name), kennel_app::pages::agents::SECTION, notice.flash());
    Ok(html(StatusCode::OK, processes::render(meta, page)))
}

pub async fn kill(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path((id, process)): Path<(String, String)>,
) -> PageResult {
    let agent = kernel.agents().get(&id)?;
    let process = kennel_kernel::process::parse_id(&process)?;
    let view = kernel.service::<Processes>().kill(agent.id, process, Signal::Term).await?;
    let notice = match &view.exit {
        Some(exit) => format!("Process {process} stopped ({}).", describe(exit)),
        None => format!("Process {process} was sent SIGTERM and SIGKILL and has not ended yet."),
    };
    Ok(see_other(&format!("/agents/{}/processes", agent.id), &notice))
}
