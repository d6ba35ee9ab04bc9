//! The Tools inspector and its "try it" form.

use axum::Form;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use kennel_app::Nav;
use kennel_app::pages::tools::{self, ToolsPage, TryResult};
use kennel_kernel::tool::meta::matches_query;
use kennel_kernel::tool::{CallContext, Caller};
use kennel_kernel::{Error, Kernel};
use serde::Deserialize;

use super::{Notice, Operator, error_page, html, meta};

#[derive(Deserialize)]
pub struct ToolsQuery {
    #[serde(default)]
    q: String,
    agent: Option<String>,
    notice: Option<String>,
}

fn tools_page(
    kernel: &Kernel,
    op: &Operator,
    query: &str,
    agent: Option<&str>,
    tried: Option<TryResult>,
    notice: Notice,
) -> Response {
    let agent = match agent.filter(|a| !a.is_empty()).map(|a| kernel.agents().get(a)).transpose() {
        Ok(agent) => agent.map(|a| {
            let set = kernel.tools().effective(&a);
            (a, set)
        }),
        Err(e) => return error_page(op, &e),
    };
    let registry = kernel.tools();
    let page = ToolsPage {
        tools: registry
            .all()
            .filter(|(def, _)| matches_query(def, query))
            .map(|(def, availability)| (def.clone(), availability.clone()))
            .collect(),
        total: registry.len(),
        query: query.to_string(),
        agents: kernel.agents().list(),
        agent,
        tried,
    };
    html(StatusCode::OK, tools::render(meta(op, "Tools", Nav::Tools, notice.flash()), page))
}

pub async fn page(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Query(q): Query<ToolsQuery>,
) -> Response {
    tools_page(&kernel, &op, &q.q, q.agent.as_deref(), None, Notice { notice: q.notice })
}

#[derive(Deserialize)]
pub struct TryForm {
    agent: String,
    #[serde(default)]
    args: String,
}

/// Runs the tool as the agent through the pipeline (grants, validation, audit all apply).
pub async fn try_it(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
    Form(f): Form<TryForm>,
) -> Response {
    let agent = match kernel.agents().get(&f.agent) {
        Ok(a) => a,
        Err(e) => return error_page(&op, &e),
    };
    let args_text = if f.args.trim().is_empty() { "{}".to_string() } else { f.args.trim().to_string() };
    let outcome = match serde_json::from_str::<serde_json::Value>(&args_text) {
        Err(e) => Err(Error::invalid(format!("the arguments are not valid JSON: {e}"))),
        Ok(args) => {
            let mut ctx = CallContext::new(kernel.clone(), agent.clone(), Caller::Operator(op.name.clone()));
            ctx.headless = false;
            kernel.call_tool(ctx, &name, args).await
        }
    };
    let tried = TryResult {
        tool: name,
        args: args_text,
        outcome: outcome
            .map(|out| serde_json::to_string_pretty(&out.content).unwrap_or_default())
            .map_err(|e| (e.kind.as_str().to_string(), e.message)),
    };
    tools_page(&kernel, &op, "", Some(&agent.id.to_string()), Some(tried), Notice::default())
}
