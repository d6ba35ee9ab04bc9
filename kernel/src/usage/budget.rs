//! Daily budgets (issue 17): `[budgets]` for the whole daemon and an agent type's `[limits]`
//! for each of its agents. A turn that would start past one is refused with
//! `ResourceExhausted` naming it, and the agent is paused until the budget's next reset (its
//! history untouched); the operators are told once, in the audit and the log. An operator can
//! lift the pause: the day's budget then counts from that moment.

use chrono::{DateTime, Duration, TimeZone, Utc};

use crate::Kernel;
use crate::agent::Agent;
use crate::error::{Error, ErrorKind, Result};
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
    let today = at(local.date_naive());
    let start = if today <= now { today } else { at(local.date_naive() - Duration::days(1)) };
    let end = at(start.with_timezone(&tz).date_naive() + Duration::days(1));
    (start, end)
}

/// Refuses the turn `agent` would start if it is paused or past a budget (pausing it then).
pub async fn admit(kernel: &Kernel, agent: &Agent) -> Result<()> {
    let now = kernel.clock().now();
    let now_text = crate::db::timestamp(now);
    if let Some(pause) = agent.paused_at(&now_text) {
        return Err(refusal(format!(
            "agent `{}` is paused until {}: {}. Lift the pause on its page to let it go on today.",
            agent.name, pause.until, pause.reason
        )));
    }
    let config = &kernel.config().budgets;
    let limits = &agent.manifest.limits;
    let (agent_budget, daemon_budget) = (
        limits.max_tokens_per_day.is_some() || limits.max_usd_per_day.is_some(),
        config.max_tokens_per_day.is_some() || config.max_usd_per_day.is_some(),
    );
    if !agent_budget && !daemon_budget {
        return Ok(());
    }
    let (start, end) = budget_day(now, config.reset_hour as u32, config.timezone);
    let start = crate::db::timestamp(start);
    let since = agent.budget_lifted_at.as_deref().filter(|l| *l > start.as_str()).unwrap_or(&start);
    let mut over = None;
    if agent_budget {
        let spent = kernel.usage().spent_since(Some(agent.id), since).await?;
        over = over_budget(
            &format!("agent type `{}`'s daily budget", agent.agent_type),
            spent.tokens(),
            spent.cost_usd,
            limits.max_tokens_per_day,
            limits.max_usd_per_day,
        );
    }
    if over.is_none() && daemon_budget {
        let spent = kernel.usage().spent_since(None, since).await?;
        over = over_budget(
            "the daemon's daily budget ([budgets])",
            spent.tokens(),
            spent.cost_usd,
            config.max_tokens_per_day,
            config.max_usd_per_day,
        );
    }
    let Some(reason) = over else { return Ok(()) };
    let until = crate::db::timestamp(end);
    if kernel.agents().pause(agent.id, &until, &reason).await? {
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
