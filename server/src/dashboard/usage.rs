//! Usage: the meter's reports and the budgets, read from the kernel's services.

use axum::extract::{Extension, State};
use axum::http::StatusCode;
use kennel_app::Nav;
use kennel_app::pages::usage::{self, BudgetRow, SessionRow, UsagePage};
use kennel_kernel::Kernel;
use kennel_kernel::page::PageRequest;
use kennel_kernel::usage::budget::{self, Standing};
use kennel_kernel::usage::{Group, Line};

use super::{Notice, Operator, PageResult, html, meta};

/// Lines of a report, all of them (a day's agents, fourteen days: a page holds them).
async fn lines(kernel: &Kernel, group: Group, since: &str) -> kennel_kernel::Result<Vec<Line>> {
    let names = |id: &str| kernel.agents().get(id).ok().map(|a| a.name.clone());
    Ok(kernel.usage().report(group, Some(since), &PageRequest::first(1000), names).await?.items)
}

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
    let config = &kernel.config().budgets;
    let now = kernel.clock().now();
    let (day_start, _) = budget::budget_day(now, config.reset_hour as u32, config.timezone);
    let day_start = kennel_kernel::db::timestamp(day_start);
    let fortnight = kennel_kernel::db::timestamp(now - chrono::Duration::days(13));
    let month = kennel_kernel::db::timestamp(now - chrono::Duration::days(30));
    let today = lines(&kernel, Group::Agent, &day_start).await?;
    let (days, models) = kernel.usage().days_and_models(&month).await?;
    let mut days: Vec<Line> = days.into_iter().filter(|d| d.key.as_str() >= &fortnight[..10]).collect();
    days.reverse();

    let mut budgets = Vec::new();
    if let Some(daemon) = budget::of_daemon(&kernel, None).await? {
        budgets.push(row("the daemon".into(), None, daemon, None));
    }
    let now_text = kennel_kernel::db::timestamp(now);
    for agent in kernel.agents().list() {
        if let Some(standing) = budget::of_agent(&kernel, &agent).await? {
            let paused = agent.paused_at(&now_text).map(|p| p.until.clone());
            budgets.push(row(agent.name.clone(), Some(format!("/agents/{}", agent.id)), standing, paused));
        }
    }
    let top_sessions = kernel
        .usage()
        .top_sessions(Some(&month), 10)
        .await?
        .into_iter()
        .map(|s| {
            let agent = kernel.agents().get(&s.agent).map_or_else(|_| s.agent.clone(), |a| a.name.clone());
            SessionRow { href: format!("/agents/{}?session={}#chat", s.agent, s.session), agent, used: s.line }
        })
        .collect();
    let page = UsagePage {
        day_start,
        timezone: config.timezone.name().to_string(),
        today,
        days,
        models,
        top_sessions,
        budgets,
        calls_kept_days: kernel.config().retention.model_calls_days,
    };
    Ok(html(StatusCode::OK, usage::render(meta(&op, "Usage", Nav::Usage, n.flash()), page)))
}
