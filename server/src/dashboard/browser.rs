//! `/agents/{id}/browser`: the agent's open tabs, from the browser service.

use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use kennel_app::pages::browser::{self, BrowserPage};
use kennel_kernel::Kernel;
use kennel_kernel::browser::Browsers;

use super::{Operator, PageResult, html, meta};
use crate::routes::{Pages, get};

pub fn routes() -> Pages {
    Pages::new().route("/agents/{id}/browser", get(page))
}

pub async fn page(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
) -> PageResult {
    let agent = kernel.agents().get(&id)?;
    let page = BrowserPage {
        agent_id: agent.id.to_string(),
        agent_name: agent.name.clone(),
        configured: kernel.services().shared::<Browsers>().is_some(),
        tabs: kernel.optional::<Browsers>().map(|b| b.tabs(agent.id)).unwrap_or_default(),
        popups_closed: kernel.services().shared::<Browsers>().map_or(0, |b| b.popups_closed(agent.id)),
    };
    Ok(html(
        StatusCode::OK,
        browser::render(meta(&op, format!("{} · browser", agent.name), kennel_app::pages::agents::SECTION, None), page),
    ))
}
