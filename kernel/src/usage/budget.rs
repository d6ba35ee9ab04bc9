//! Daily budgets (issue 17): `[budgets]` for the whole daemon and an agent type's `[limits]`
//! for each of its agents. A turn that would start past one is refused with
//! `ResourceExhausted` naming it, and the agent is paused until the budget's next reset (its
//! history untouched); the operators are told once, in the audit and the log. An operator can
//! lift the pause: the day's budget then counts from that moment.

use chrono::{DateTime, Duration, TimeZone, Utc};

use crate::Kernel;
use crate::agent::Agent;
use crate::error::{Error, ErrorKind, Result};
use crate::notify::Inbox;
use crate::tool::audit::AuditEntry;

/// When the budget day holding `now` began and when it ends: the last `reset_hour` in `tz`.
pub fn budget_day(now: DateTime<Utc>, reset_hour: u32, tz: chrono_tz::Tz) -> (DateTime<Utc>, DateTime<Utc>) {
    let local = now.with_timezone(&tz);
    let at = |date: chrono::NaiveDate| {
        let naive = date.and_hms_opt(reset_hour, 0, 0).expect("an hour of 0-23");
        // A reset hour a DST change skips starts the day at the first instant after it.
        tz.from_local_datetime(&naive)
            .earliest()
            .or_else(|| tz.from_local_datetime(&(naive + Duration::hours(1))).earliest())
            .map_or(now, |t| t.with_timezone(&Utc))
    };
    let today = local.date_naive();
    let day = if at(today) <= now { today } else { today - Duration::days(1) };
    // The next day's reset from the day's own date: a reset a DST change moved must not move
    // the end by a day.
    (at(day), at(day + Duration::days(1)))
}

/// Where a budget stands today: what it allows and what was used since its day began (or
/// since an operator lifted the agent's pause, if later).
#[derive(Debug, Clone)]
pub struct Standing {
    /// Whose budget: `agent type `x`'s daily budget`, `the daemon's daily budget ([budgets])`.
    pub budget: String,
    pub since: String,
    /// When the day ends and the budget resets.
    pub until: String,
    pub used: super::Line,
    pub max_tokens: Option<u64>,
    pub max_usd: Option<f64>,
}

impl Standing {
    /// What is used up, said as a person reads it; `None` while the budget lasts.
    pub fn over(&self) -> Option<String> {
        over_budget(&self.budget, self.used.tokens(), self.used.cost_usd, self.max_tokens, self.max_usd)
    }

    pub fn tokens_left(&self) -> Option<u64> {
        self.max_tokens.map(|m| m.saturating_sub(self.used.tokens()))
    }

    pub fn usd_left(&self) -> Option<f64> {
        self.max_usd.map(|m| (m - self.used.cost_usd).max(0.0))
    }
}

/// When today's budget day began (RFC 3339 as stored).
pub fn day_start(kernel: &Kernel) -> String {
    window(kernel, None).0
}

/// The day's window for `agent`: from the budget day's start, or its last lift if later.
fn window(kernel: &Kernel, agent: Option<&Agent>) -> (String, String) {
    let config = &kernel.config().budgets;
    let (start, end) = budget_day(kernel.clock().now(), config.reset_hour as u32, config.timezone);
    let start = crate::db::timestamp(start);
    let since = agent.and_then(|a| a.budget_lifted_at.clone()).filter(|lifted| *lifted > start).unwrap_or(start);
    (since, crate::db::timestamp(end))
}

/// The agent's own budget (its type's `[limits]`) today, if it has one.
pub async fn of_agent(kernel: &Kernel, agent: &Agent) -> Result<Option<Standing>> {
    let limits = &agent.manifest.limits;
    if limits.max_tokens_per_day.is_none() && limits.max_usd_per_day.is_none() {
        return Ok(None);
    }
    let (since, until) = window(kernel, Some(agent));
    Ok(Some(Standing {
        budget: format!("agent type `{}`'s daily budget", agent.agent_type),
        used: kernel.usage().spent_since(Some(agent.id), &since).await?,
        since,
        until,
        max_tokens: limits.max_tokens_per_day,
        max_usd: limits.max_usd_per_day,
    }))
}

/// The daemon's budget (`[budgets]`) today, as it counts for `agent` (from its last lift), if
/// config.toml sets one.
pub async fn of_daemon(kernel: &Kernel, agent: Option<&Agent>) -> Result<Option<Standing>> {
    let config = &kernel.config().budgets;
    if config.max_tokens_per_day.is_none() && config.max_usd_per_day.is_none() {
        return Ok(None);
    }
    let (since, until) = window(kernel, agent);
    Ok(Some(Standing {
        budget: "the daemon's daily budget ([budgets])".into(),
        used: kernel.usage().spent_since(None, &since).await?,
        since,
        until,
        max_tokens: config.max_tokens_per_day,
        max_usd: config.max_usd_per_day,
    }))
}

/// Refuses the turn `agent` would start if it is paused or past a budget (pausing it then).
pub async fn admit(kernel: &Kernel, agent: &Agent) -> Result<()> {
    let now = crate::db::timestamp(kernel.clock().now());
    if let Some(pause) = agent.paused_at(&now) {
        return Err(refusal(format!(
            "agent `{}` is paused until {}: {}. Lift the pause on its page to let it go on today.",
            agent.name, pause.until, pause.reason
        )));
    }
    let mut over = None;
    if let Some(standing) = of_agent(kernel, agent).await? {
        over = standing.over().map(|why| (why, standing.until));
    }
    if over.is_none()
        && let Some(standing) = of_daemon(kernel, Some(agent)).await?
    {
        over = standing.over().map(|why| (why, standing.until));
    }
    let Some((reason, until)) = over else { return Ok(()) };
    let first = match kernel.agents().pause(agent.id, &until, &reason, agent.budget_lifted_at.as_deref()).await? {
        Some(first) => first,
        // An operator lifted the pause after this agent was read: that decision stands.
        None => return Ok(()),
    };
    if first {
        tracing::warn!(agent = %agent.name, %until, "{reason}: the agent is paused");
        kernel.audit().record(AuditEntry {
            agent_id: agent.id,
            session_id: None,
            caller: "budget".into(),
            tool: "budget".into(),
            args_digest: String::new(),
            outcome: "ResourceExhausted",
            message: Some(format!("{reason}: paused until {until}")),
            duration_us: 0,
            artifact_id: None,
        });
        // The operators hear of it in the inbox (and its fan-out), not only in the logs.
        let note = crate::notify::NewNote {
            source: "budget",
            agent: Some((agent.id, agent.name.clone())),
            reason: format!("Agent {} paused by its budget", agent.name),
            summary: format!("{reason}: paused until {until}. Lift the pause on its page to let it go on today."),
            urgency: crate::notify::Urgency::High,
        };
        if let Err(e) = kernel.service::<Inbox>().notify(note).await {
            tracing::warn!(agent = %agent.name, error = %e.message, "the budget pause could not be noted in the inbox");
        }
    }
    Err(refusal(format!(
        "{reason}: agent `{}` is paused until {until} (its history is kept). Lift the pause on its page to let it go on today.",
        agent.name
    )))
}

fn refusal(message: String) -> Error {
    Error::new(ErrorKind::ResourceExhausted, message)
}

/// Which of a budget's two limits the day's use has reached, said as a person reads it.
fn over_budget(budget: &str, tokens: u64, usd: f64, max_tokens: Option<u64>, max_usd: Option<f64>) -> Option<String> {
    if let Some(max) = max_tokens.filter(|&m| tokens >= m) {
        return Some(format!("{budget} of {max} tokens is used up ({tokens} today)"));
    }
    if let Some(max) = max_usd.filter(|&m| usd >= m) {
        return Some(format!("{budget} of ${max:.2} is used up (${usd:.4} today)"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().to_utc()
    }

    #[test]
    fn a_budget_day_starts_at_the_reset_hour_in_its_zone() {
        let berlin: chrono_tz::Tz = "Europe/Berlin".parse().unwrap();
        // 06:30 in Berlin (UTC+1 in December), reset at 09:00: the day began yesterday at 09:00.
        let (start, end) = budget_day(at("2026-12-01T05:30:00Z"), 9, berlin);
        assert_eq!((start, end), (at("2026-11-30T08:00:00Z"), at("2026-12-01T08:00:00Z")));
        let (start, _) = budget_day(at("2026-12-01T08:00:00Z"), 9, berlin);
        assert_eq!(start, at("2026-12-01T08:00:00Z"), "the reset instant starts the new day");
        // Across the spring change (02:00 does not exist on 29 March 2026 in Berlin).
        let (start, end) = budget_day(at("2026-03-29T12:00:00Z"), 2, berlin);
        assert_eq!(start, at("2026-03-29T01:00:00Z"));
        assert_eq!(end, at("2026-03-30T00:00:00Z"));
    }

    #[test]
    fn either_limit_of_a_budget_stops_it() {
        assert!(over_budget("b", 100, 0.0, Some(100), None).unwrap().contains("100 tokens"));
        assert!(over_budget("b", 99, 2.5, Some(100), Some(2.0)).unwrap().contains("$2.00"));
        assert_eq!(over_budget("b", 99, 1.0, Some(100), Some(2.0)), None);
    }
}
