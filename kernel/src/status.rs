//! What the daemon is doing, in one answer: how long it has run, its agents by state and its
//! model use today. `GET /api/status` serves it and `kennel status` prints it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use std::sync::Arc;

use crate::Kernel;
use crate::agent::{Agent, AgentState};
use crate::error::Result;
use crate::page::PageRequest;
use crate::schedule::Schedules;
use crate::schedule::{ScheduleFilter, State as ScheduleState};
use crate::tasks::TaskBoard;
use crate::tasks::{TaskFilter, TaskStatus};

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DaemonStatus {
    /// The daemon's version.
    pub version: String,
    /// When this run of the daemon opened its home (RFC 3339, UTC).
    pub started_at: String,
    /// Where it keeps its state: `sqlite` (in the home) or `postgres`.
    pub database: String,
    pub uptime_secs: u64,
    pub agents: AgentCounts,
    pub agent_types: u64,
    /// Tools in the catalogue (every family, whether or not any agent may use them).
    pub tools: u64,
    /// Model calls since today's budget day began (`[budgets] reset_hour` and `timezone`;
    /// midnight UTC by default), every agent together.
    pub usage_today: UsageToday,
}

/// Agents by state; workflow step agents are counted apart.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct AgentCounts {
    /// Running and not paused.
    pub running: u64,
    /// Running, but paused by a budget until its reset or an operator's lift.
    pub paused: u64,
    pub stopped: u64,
    /// Agents spawned for workflow steps that are still running.
    pub workflow_steps: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct UsageToday {
    /// When today's budget day began (RFC 3339, UTC).
    pub since: String,
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// In US dollars, for the calls of models config.toml gives prices for.
    pub cost_usd: f64,
    /// Calls of models without prices (not in `cost_usd`).
    pub unpriced_calls: u64,
}

impl AgentCounts {
    /// `agents` by the state they show at `now` (RFC 3339); stopped workflow step agents are
    /// not counted (they are swept).
    pub fn of(agents: &[Arc<Agent>], now: &str) -> AgentCounts {
        let mut counts = AgentCounts::default();
        for agent in agents {
            let count = match (agent.state_at(now), agent.ephemeral) {
                (AgentState::Running | AgentState::Paused, true) => &mut counts.workflow_steps,
                (_, true) | (AgentState::Removed, false) => continue,
                (AgentState::Paused, false) => &mut counts.paused,
                (AgentState::Running, false) => &mut counts.running,
                (AgentState::Stopped, false) => &mut counts.stopped,
            };
            *count += 1;
        }
        counts
    }
}

/// The work that may need an operator, as the overview shows it.
#[derive(Debug, Clone)]
pub struct WorkCounts {
    /// Tasks in each of [`TaskStatus::WATCHED`], in that order.
    pub tasks: Vec<(TaskStatus, u64)>,
    pub active_schedules: u64,
    /// Schedule fires that failed since midnight UTC, on the kernel's clock.
    pub failed_fires_today: u64,
}

impl Kernel {
    /// Counts of the work that may need an operator.
    pub async fn work_counts(&self) -> Result<WorkCounts> {
        let mut tasks = Vec::new();
        for status in TaskStatus::WATCHED {
            let filter = TaskFilter { status: Some(status), ..Default::default() };
            tasks.push((status, self.service::<TaskBoard>().list(&filter, &PageRequest::first(1)).await?.total));
        }
        let active = ScheduleFilter { state: Some(ScheduleState::Active), ..Default::default() };
        let midnight = self.clock().now().date_naive().and_time(chrono::NaiveTime::MIN).and_utc();
        Ok(WorkCounts {
            tasks,
            active_schedules: self.service::<Schedules>().list(&active, &PageRequest::first(1)).await?.total,
            failed_fires_today: self.service::<Schedules>().failed_fires_since(midnight).await?,
        })
    }

    pub async fn status(&self) -> Result<DaemonStatus> {
        let agents = AgentCounts::of(&self.agents().list(), &self.clock().now_text());
        let since = crate::usage::budget::day_start(self);
        let used = self.usage().spent_since(None, &since).await?;
        Ok(DaemonStatus {
            version: env!("CARGO_PKG_VERSION").to_string(),
            started_at: self.started_at().to_string(),
            database: if self.db().is_shared() { "postgres" } else { "sqlite" }.to_string(),
            uptime_secs: self.0.started.elapsed().as_secs(),
            agents,
            agent_types: self.agents().types().len() as u64,
            tools: self.tools().len() as u64,
            usage_today: UsageToday {
                since,
                calls: used.calls,
                input_tokens: used.input_tokens,
                output_tokens: used.output_tokens,
                cost_usd: used.cost_usd,
                unpriced_calls: used.unpriced_calls,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;
    use crate::agent::{AgentStatus, Pause};

    fn agent(status: AgentStatus, paused_until: Option<&str>, ephemeral: bool) -> Arc<Agent> {
        let manifest =
            crate::agent::validate(serde_json::from_value(serde_json::json!({"name": "t"})).unwrap()).unwrap();
        Arc::new(Agent {
            id: Uuid::now_v7(),
            name: "t".into(),
            agent_type: "t".into(),
            manifest,
            goal: None,
            status,
            parent_id: None,
            ephemeral,
            paused: paused_until.map(|until| Pause { until: until.into(), reason: "budget".into() }),
            budget_lifted_at: None,
            created_at: "2026-12-01T00:00:00Z".into(),
            updated_at: "2026-12-01T00:00:00Z".into(),
        })
    }

    /// The one count the overview, `GET /api/status` and `kennel status` show.
    #[test]
    fn agents_are_counted_by_the_state_they_show() {
        let later = Some("2026-12-06T00:00:00Z");
        let agents = [
            agent(AgentStatus::Running, None, false),
            agent(AgentStatus::Running, later, false),
            agent(AgentStatus::Running, Some("2026-12-05T00:00:00Z"), false),
            agent(AgentStatus::Stopped, later, false),
            agent(AgentStatus::Running, later, true),
            agent(AgentStatus::Stopped, None, true),
        ];
        let counts = AgentCounts::of(&agents, "2026-12-05T12:00:00Z");
        let seen = (counts.running, counts.paused, counts.stopped, counts.workflow_steps);
        assert_eq!(seen, (2, 1, 1, 1), "a past pause is over; a stopped agent is not paused; steps apart");
    }
}
