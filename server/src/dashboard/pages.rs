//! Overview, audit and settings.

use axum::Form;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use kennel_app::pages::{audit, overview, settings};
use kennel_app::{Flash, Nav};
use kennel_kernel::Kernel;
use kennel_kernel::page::PageRequest;
use kennel_kernel::tool::audit::AuditFilter;
use serde::Deserialize;

use super::{Notice, Operator, error_page, html, meta, see_other};

pub async fn overview(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Query(n): Query<Notice>,
) -> Response {
    let recent_calls = match kernel.audit().list(&AuditFilter::default(), &PageRequest::first(10)).await {
        Ok(r) => r.items,
        Err(e) => return error_page(&op, &e),
    };
    let providers = kernel
        .providers()
        .values()
        .map(|p| overview::ProviderStatus {
            name: p.name().to_string(),
            kind: format!("{:?}", p.kind()).to_lowercase(),
            key_env: p.api_key_env().map(str::to_string),
            has_key: p.has_key(),
        })
        .collect();
    let page = overview::Overview {
        agents: kernel.agents().list(),
        agent_types: kernel.agents().types().len(),
        tools: kernel.tools().len(),
        recent_calls,
        providers,
    };
    html(StatusCode::OK, overview::render(meta(&op, "Overview", Nav::Overview, n.flash()), page))
}

#[derive(Deserialize)]
pub struct AuditQuery {
    agent: Option<String>,
    tool: Option<String>,
}

pub async fn audit(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Query(q): Query<AuditQuery>,
) -> Response {
    let agent = q.agent.filter(|a| !a.is_empty());
    let tool = q.tool.filter(|t| !t.trim().is_empty()).map(|t| t.trim().to_string());
    let filter = AuditFilter { agent: agent.clone(), tool: tool.clone() };
    match kernel.audit().list(&filter, &PageRequest::first(200)).await {
        Ok(records) => {
            let records = records.items;
            let page = audit::AuditPage { records, agents: kernel.agents().list(), agent, tool };
            html(StatusCode::OK, audit::render(meta(&op, "Audit", Nav::Audit, None), page))
        }
        Err(e) => error_page(&op, &e),
    }
}

fn settings_page(op: &Operator, status: StatusCode, page: settings::Settings, flash: Option<Flash>) -> Response {
    html(status, settings::render(meta(op, "Settings", Nav::Settings, flash), page))
}

pub async fn settings(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Query(n): Query<Notice>,
) -> Response {
    match kernel.auth().list_tokens().await {
        Ok(tokens) => settings_page(
            &op,
            StatusCode::OK,
            settings::Settings { tokens, new_token: None, name_error: None },
            n.flash(),
        ),
        Err(e) => error_page(&op, &e),
    }
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
) -> Response {
    let name = form.name.trim().to_string();
    let (status, new_token, name_error) = match kernel.auth().create_token(&name).await {
        Ok(token) => (StatusCode::OK, Some((name, token)), None),
        Err(e) => (crate::status::status_for(e.kind), None, Some(e.message)),
    };
    match kernel.auth().list_tokens().await {
        Ok(tokens) => settings_page(&op, status, settings::Settings { tokens, new_token, name_error }, None),
        Err(e) => error_page(&op, &e),
    }
}

pub async fn revoke_token(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
) -> Response {
    match kernel.auth().revoke_token(&name).await {
        Ok(()) => see_other("/settings", &format!("Token `{name}` revoked.")),
        Err(e) => error_page(&op, &e),
    }
}
