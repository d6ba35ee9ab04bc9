//! Usage: the meter's reports and the budgets, read from the kernel's services.

use axum::extract::{Extension, State};
use axum::http::StatusCode;
use kennel_app::Nav;
use kennel_app::pages::usage::{self, BudgetRow, SessionRow, UsagePage};
use kennel_kernel::Kernel;
use kennel_kernel::usage::budget::Standing;
use kennel_kernel::usage::overview::overview;

use super::{Notice, Operator, PageResult, html, meta};

fn row(who: String, href: Option<String>, s: Standing, paused_until: Option<String>) -> BudgetRow {
    BudgetRow {
        who,
        href,
        tokens_left: s.tokens_left(),
        usd_left: s.usd_left(),
        max_tokens: s.max_tokens,
        max_usd: s.max_usd,
        used: s.used,
        paused_until,
    }
}

pub async fn page(State(kernel): State<Kernel>, Extension(op): Extension<Operator>, n: Notice) -> PageResult {
    let report = overview(&kernel).await?;
    let budgets = report
        .budgets
        .into_iter()
        .map(|b| match b.agent {
            None => row("the daemon".into(), None, b.standing, b.paused_until),
            Some(a) => row(a.name.clone(), Some(format!("/agents/{}", a.id)), b.standing, b.paused_until),
        })
        .collect();
    let top_sessions = report
        .top_sessions
        .into_iter()
        .map(|s| {
            let agent = s.agent.map_or_else(|| s.cost.agent.clone(), |a| a.name.clone());
            let href = format!("/agents/{}?session={}#chat", s.cost.agent, s.cost.session);
            SessionRow { href, agent, used: s.cost.line }
        })
        .collect();
    let page = UsagePage {
        day_start: report.day_start,
        timezone: report.timezone,
        today: report.today,
        days: report.days,
        models: report.models,
        top_sessions,
        budgets,
        calls_kept_days: report.calls_kept_days,
    };
    Ok(html(StatusCode::OK, usage::render(meta(&op, "Usage", Nav::Usage, n.flash()), page)))
}
