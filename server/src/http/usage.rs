//! `/api/usage`: what model calls used and cost, grouped by agent, provider, model or day.

use crate::routes::api;
use axum::extract::State;
use axum::response::Response;
use kennel_kernel::Kernel;
use kennel_kernel::page::PageQuery;
use kennel_kernel::page::PositionCursor;
use kennel_kernel::usage::{Group, Line};
use serde::Deserialize;

use super::body::QueryParams;
use super::error::ApiResult;
use super::page::PageParams;
use crate::routes::Api;

pub fn routes() -> Api {
    Api::new().route(api!(usage), &[])
}

/// How to read the usage.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct UsageQuery {
    /// `agent` (default), `provider`, `model` (`provider / model`) or `day` (UTC).
    #[param(inline)]
    group: Option<Group>,
    /// Only calls at or after this time (RFC 3339, e.g. `2026-12-01T00:00:00Z`).
    #[param(format = DateTime)]
    since: Option<String>,
}

/// Tokens and cost of every model call (summaries included), grouped, by key. Costs come from
/// the prices in config.toml (`[providers.NAME.models.MODEL] input_usd_per_mtok`, …); calls
/// of an unpriced model are counted in `unpriced_calls`.
#[utoipa::path(get, path = "/api/usage", tag = "usage", params(PageQuery, UsageQuery, ("cursor" = inline(Option<PositionCursor>), Query, description = "Where to continue: the `cursor` in the previous page's `Link` (the last line's position)")),
    responses((status = 200, description = "A page of usage lines", body = Vec<Line>)))]
async fn usage(
    State(kernel): State<Kernel>,
    QueryParams(q): QueryParams<UsageQuery>,
    page: PageParams,
) -> ApiResult<Response> {
    let since = q.since.as_deref().map(|t| kennel_kernel::db::parse_time("since", t)).transpose()?;
    let names = |id: &str| kernel.agents().get(id).ok().map(|a| a.name.clone());
    let report = kernel.usage().report(q.group.unwrap_or_default(), since.as_deref(), &page.request, names).await?;
    Ok(page.answer(report))
}
