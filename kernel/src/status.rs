//! What the daemon is doing, in one answer: how long it has run, its agents by state and its
//! model use today. `GET /api/status` serves it and `kennel status` prints it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::Kernel;
use crate::error::Result;

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DaemonStatus {
    /// The daemon's version.
    pub version: String,
    /// When this run of the daemon opened its home (RFC 3339, UTC).
    pub started_at: String,
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

impl Kernel {
    pub async fn status(&self) -> Result<DaemonStatus> {
        let now = crate::db::timestamp(self.clock().now());
        let mut agents = AgentCounts::default();
        for agent in self.agents().list() {
            let count = match (agent.is_running(), agent.ephemeral) {
                (true, true) => &mut agents.workflow_steps,
                (false, true) => continue,
                (true, false) if agent.is_paused(&now) => &mut agents.paused,
                (true, false) => &mut agents.running,
                (false, false) => &mut agents.stopped,
            };
            *count += 1;
        }
        let since = crate::usage::budget::day_start(self);
        let used = self.usage().spent_since(None, &since).await?;
        Ok(DaemonStatus {
            version: env!("CARGO_PKG_VERSION").to_string(),
            started_at: self.started_at().to_string(),
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
