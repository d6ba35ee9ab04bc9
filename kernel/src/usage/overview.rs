//! The Usage page's report in one view: the periods it covers are decided here, on the
//! kernel's clock, so no front computes a window.

use std::sync::Arc;

use chrono::Duration;

use super::budget::{self, Standing};
use super::{Group, Line, SessionCost};
use crate::Kernel;
use crate::agent::Agent;
use crate::error::Result;
use crate::page::PageRequest;

/// Days shown one by one (today among them).
pub const DAYS_SHOWN: i64 = 14;
/// The window of the per-model lines and the costliest sessions.
pub const MONTH_DAYS: i64 = 30;
/// How many of the costliest sessions are listed.
const TOP_SESSIONS: usize = 10;

pub struct UsageOverview {
    /// When the budget day began (RFC 3339) and the zone it is counted in.
    pub day_start: String,
    pub timezone: String,
    /// Per agent since the budget day began (names in `name`).
    pub today: Vec<Line>,
    /// Per UTC day, the last [`DAYS_SHOWN`], newest first.
    pub days: Vec<Line>,
    /// Per `provider / model`, the last [`MONTH_DAYS`].
    pub models: Vec<Line>,
    /// The costliest sessions of the last [`MONTH_DAYS`], most first.
    pub top_sessions: Vec<TopSession>,
    /// The daemon's budget first (when `[budgets]` sets one), then each agent's that has one.
    pub budgets: Vec<BudgetLine>,
    /// `[retention] model_calls_days`: calls are kept one by one this long, then as daily
    /// totals.
    pub calls_kept_days: u64,
}

pub struct TopSession {
    /// The agent, when it is still found, and its id as the calls name it.
    pub agent: Option<Arc<Agent>>,
    pub cost: SessionCost,
}

pub struct BudgetLine {
    /// `None`: the daemon's budget.
    pub agent: Option<Arc<Agent>>,
    pub standing: Standing,
    /// Until when the agent is paused for going over, while it is.
    pub paused_until: Option<String>,
}

/// The report as it stands now.
pub async fn overview(kernel: &Kernel) -> Result<UsageOverview> {
    let config = &kernel.config().budgets;
    let now = kernel.clock().now();
    let day_start = budget::day_start(kernel);
    let first_day = (now - Duration::days(DAYS_SHOWN - 1)).date_naive().to_string();
    let month = crate::db::timestamp(now - Duration::days(MONTH_DAYS));

    let names = |id: &str| kernel.agents().get(id).ok().map(|a| a.name.clone());
    let today = kernel.usage().report(Group::Agent, Some(&day_start), &PageRequest::first(1000), names).await?.items;
    let (days, models) = kernel.usage().days_and_models(&month).await?;
    // Day keys are dates (`YYYY-MM-DD`), which order as text.
    let mut days: Vec<Line> = days.into_iter().filter(|d| d.key >= first_day).collect();
    days.reverse();

    let mut budgets = Vec::new();
    if let Some(standing) = budget::of_daemon(kernel, None).await? {
        budgets.push(BudgetLine { agent: None, standing, paused_until: None });
    }
    let now_text = kernel.clock().now_text();
    for agent in kernel.agents().list() {
        if let Some(standing) = budget::of_agent(kernel, &agent).await? {
            let paused_until = agent.paused_at(&now_text).map(|p| p.until.clone());
            budgets.push(BudgetLine { agent: Some(agent), standing, paused_until });
        }
    }
    let top_sessions = kernel
        .usage()
        .top_sessions(Some(&month), TOP_SESSIONS)
        .await?
        .into_iter()
        .map(|cost| TopSession { agent: kernel.agents().get(&cost.agent).ok(), cost })
        .collect();
    Ok(UsageOverview {
        day_start,
        timezone: config.timezone.name().to_string(),
        today,
        days,
        models,
        top_sessions,
        budgets,
        calls_kept_days: kernel.config().retention.model_calls_days,
    })
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use uuid::Uuid;

    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::config::Config;
    use crate::usage::tests::call;

    /// Fourteen days one by one (today the thirteenth after the first), thirty for the models
    /// and the costliest sessions, and today from the budget day's start: on the kernel's clock.
    #[tokio::test]
    async fn the_report_covers_its_periods_on_the_kernels_clock() {
        let home = tempfile::tempdir().unwrap();
        let now: DateTime<Utc> = "2026-12-05T12:00:00Z".parse().unwrap();
        let clock = Clock::Manual(ManualClock::starting_at(now));
        let kernel = Kernel::open_with_clock(home.path(), Config::default(), clock).await.unwrap();
        let (old, recent) = (Uuid::now_v7(), Uuid::now_v7());
        for (session, model, days_ago, input) in
            [(old, "a", 31, 1000), (old, "a", 14, 100), (recent, "b", 13, 10), (recent, "b", 0, 1)]
        {
            // One agent per session, as the loop records them; each call adds one output token.
            let at = crate::db::timestamp(now - Duration::days(days_ago));
            kernel.usage().record(call(session, session, model, &at, input));
        }

        let report = overview(&kernel).await.unwrap();
        let days: Vec<&str> = report.days.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(days, ["2026-12-05", "2026-11-22"], "newest first, the 14th day back left out");
        let models: Vec<(&str, u64)> = report.models.iter().map(|m| (m.key.as_str(), m.tokens())).collect();
        assert_eq!(models, [("p / a", 101), ("p / b", 13)], "thirty days: the 31st back left out");
        let sessions: Vec<Uuid> = report.top_sessions.iter().map(|s| s.cost.session.parse().unwrap()).collect();
        assert_eq!(sessions, [old, recent], "most tokens first, within thirty days");
        assert_eq!(report.today.iter().map(Line::tokens).sum::<u64>(), 2, "today: only today's call");
        assert_eq!(report.day_start, "2026-12-05T00:00:00.000Z", "the budget day starts at 00:00 UTC by default");
        assert!(report.budgets.is_empty(), "no budget is configured");
        kernel.close().await;
    }
}
