//! The Tools inspector and its "try it" form.

use axum::Form;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use kennel_app::pages::tools::{self, STANDINGS, ToolsPage, TryForm, TryResult};
use kennel_kernel::tool::meta::matches_query;
use kennel_kernel::tool::{CallContext, form};
use kennel_kernel::{Error, Kernel};
use serde::Deserialize;

use super::{Notice, Operator, PageResult, html, meta};
use crate::routes::{Action, Pages, get};

pub fn routes() -> Pages {
    Pages::new().route("/tools", get(page)).route("/tools/{name}/try", get(try_page).post(try_it, Action::Logged))
}

#[derive(Debug, Default, Deserialize)]
pub struct ToolsQuery {
    #[serde(default)]
    pub q: String,
    pub agent: Option<String>,
    /// One of the standings (`allowed`, `not_granted`, `denied`, `excluded`); empty: all.
    #[serde(default)]
    pub show: String,
    /// A tool to show opened.
    pub open: Option<String>,
}

/// What else the page shows besides the list: a tried tool's result, a refused grant.
#[derive(Default)]
pub struct Outcome {
    /// The notice a redirect left for this page.
    pub notice: Notice,
    pub tried: Option<TryResult>,
    pub refused: Option<(String, String)>,
    pub status: Option<StatusCode>,
}

/// The inspector for `q`, with what `outcome` adds.
pub fn tools_page(kernel: &Kernel, op: &Operator, q: ToolsQuery, outcome: Outcome) -> PageResult {
    let agent = match q.agent.as_deref().filter(|a| !a.is_empty()) {
        Some(a) => {
            let agent = kernel.agents().get(a)?;
            let set = kernel.tools().effective(&agent);
            Some((agent, set))
        }
        None => None,
    };
    if !q.show.is_empty() && !STANDINGS.iter().any(|(s, _)| *s == q.show) {
        return Err(Error::invalid(format!(
            "`{}` is not a standing: allowed, not_granted, denied or excluded",
            q.show
        ))
        .into());
    }
    let standing_shown = |name: &str| match &agent {
        Some((_, set)) if !q.show.is_empty() => set.iter().any(|t| t.name == name && t.status.name() == q.show),
        _ => true,
    };
    let registry = kernel.tools();
    let page = ToolsPage {
        tools: registry
            .all()
            .filter(|(def, _)| matches_query(def, &q.q) && standing_shown(&def.name))
            .map(|(def, availability)| (def.clone(), availability.clone()))
            .collect(),
        total: registry.len(),
        query: q.q,
        agents: kernel.agents().list(),
        agent,
        show: q.show,
        open: q.open,
        tried: outcome.tried,
        refused: outcome.refused,
    };
    let notice = outcome.notice;
    let status = outcome.status.unwrap_or(StatusCode::OK);
    Ok(html(status, tools::render(meta(op, "Tools", tools::SECTION, notice.flash()), page)))
}

pub async fn page(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Query(q): Query<ToolsQuery>,
    notice: Notice,
) -> PageResult {
    tools_page(&kernel, &op, q, Outcome { notice, ..Default::default() })
}

/// Runs the tool as the agent through the pipeline (grants, validation, audit all apply),
/// with the arguments its form stands for: each argument's field over the raw JSON.
pub async fn try_it(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> PageResult {
    let value = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).unwrap_or_default();
    let agent = kernel.agents().get(&value("agent"))?;
    let form = TryForm {
        raw: value("args"),
        fields: pairs.iter().filter(|(k, _)| k.starts_with(form::FIELD_PREFIX)).cloned().collect(),
    };
    let schema = kernel.tools().get(&name).map(|(def, _)| def.schema.shared()).unwrap_or_default();
    let (args, outcome) = match form::arguments(&schema, &form.raw, &form.fields) {
        Err(e) => (form.raw.clone(), Err(e)),
        Ok(args) => {
            let ctx = CallContext::by_operator(agent.clone(), &op.name);
            (args.to_string(), kernel.call_tool(ctx, &name, args).await)
        }
    };
    let tried = TryResult {
        tool: name,
        args,
        form,
        outcome: outcome
            .map(|out| serde_json::to_string_pretty(&out.content).unwrap_or_default())
            .map_err(|e| (e.kind.as_str().to_string(), e.message)),
    };
    let q = ToolsQuery { agent: Some(agent.id.to_string()), q: value("q"), show: value("show"), ..Default::default() };
    tools_page(&kernel, &op, q, Outcome { tried: Some(tried), ..Default::default() })
}

/// A "try it" result's URL opened on its own (a reload, a bookmark): the tool, opened, in the
/// inspector, since the result belongs to the post that made it.
pub async fn try_page(Path(name): Path<String>) -> axum::response::Response {
    let query = serde_urlencoded::to_string([("open", name.as_str())]).unwrap_or_default();
    // The name only as an encoded query value: a path segment may decode to anything.
    axum::response::Redirect::to(&format!("/tools?{query}")).into_response()
}
