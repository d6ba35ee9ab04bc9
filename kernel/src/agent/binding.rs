//! Bindings: which agent answers a channel (`[channels.NAME] agent`) or is exposed over A2A
//! (`[a2a] expose`) or as an OpenAI model (`[openai] expose`). Config names the agent; the first use resolves that name once, to the
//! id of the running agent an operator made with it (no parent, not a workflow step), and
//! from then on the binding is that id. A new agent that takes the name after the bound one
//! stopped inherits nothing: the channel answers nothing until the bound agent runs again, or
//! an operator removes it (then the name binds afresh) or changes the config's name. An agent
//! that another agent spawned is never bound, so no agent can make itself a channel's voice.

use std::sync::Arc;

use uuid::Uuid;

use super::{Agent, AgentStatus, Agents};
use crate::config::Config;
use crate::db;
use crate::error::{Error, Result};

/// What a binding is for: the key it is stored under and how it reads in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    Channel(String),
    A2a(String),
    OpenAi(String),
}

impl Binding {
    fn key(&self) -> String {
        match self {
            Binding::Channel(name) => format!("channel:{name}"),
            Binding::A2a(name) => format!("a2a:{name}"),
            Binding::OpenAi(name) => format!("openai:{name}"),
        }
    }

    fn describe(&self) -> String {
        match self {
            Binding::Channel(name) => format!("channel `{name}`"),
            Binding::A2a(name) => format!("A2A exposure `{name}`"),
            Binding::OpenAi(name) => format!("OpenAI model `{name}`"),
        }
    }
}

/// One stored binding: the config's name when it was bound, and the agent it was bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Bound {
    pub name: String,
    pub agent: Uuid,
}

impl Agents {
    /// The agent `binding` is bound to under the config's name `configured`, binding it now
    /// if it is not (or its agent was removed, or the config names another agent). The agent
    /// may be stopped: the caller decides what a stopped agent means for it.
    pub fn bound(&self, binding: &Binding, configured: &str) -> Result<Arc<Agent>> {
        let key = binding.key();
        let kept = self.read().bindings.get(&key).cloned();
        if let Some(bound) = kept.filter(|b| b.name == configured)
            && let Some(agent) = self.get_by_id(bound.agent).filter(|a| a.status != AgentStatus::Removed)
        {
            return Ok(agent);
        }
        let agent = self.bindable(binding, configured)?;
        let bound = Bound { name: configured.to_string(), agent: agent.id };
        self.state.write().expect("agent state lock").bindings.insert(key.clone(), bound.clone());
        tracing::info!(binding = %binding.describe(), agent = %agent.id, name = configured, "bound to an agent");
        // Kept across restarts; should the write be lost, the next start binds the same
        // operator-made agent again, never an agent-made one.
        let db = self.db.clone();
        tokio::spawn(async move {
            if let Err(e) = save(&db, &key, &bound).await {
                tracing::warn!(binding = %key, error = %e.message, "keeping a binding failed");
            }
        });
        Ok(agent)
    }

    /// The running, operator-made agent named `configured`: the only kind a binding takes.
    fn bindable(&self, binding: &Binding, configured: &str) -> Result<Arc<Agent>> {
        let state = self.read();
        let named = state.running_agent_named(configured).cloned();
        match named {
            Some(agent) if agent.parent_id.is_none() && !agent.ephemeral => Ok(agent),
            Some(agent) => Err(Error::forbidden(format!(
                "the running agent `{configured}` (id {}) was made by an agent, not an operator, so {} is not bound to it: an operator spawns the agent it should be",
                agent.id,
                binding.describe()
            ))),
            None => Err(Error::not_found(format!(
                "{} names agent `{configured}`, and no such agent runs: spawn it (as an operator) or change the config",
                binding.describe()
            ))),
        }
    }

    /// Whether `agent` is bound to anything, or would be at its binding's first use: named
    /// by config for a binding not yet made. What it is bound to, for the refusal.
    pub fn binding_held_by(&self, config: &Config, agent: &Agent) -> Option<String> {
        let configured = config
            .channels
            .channels
            .iter()
            .filter_map(|(name, c)| c.agent.as_deref().map(|a| (Binding::Channel(name.clone()), a)))
            .chain(config.a2a.expose.iter().map(|a| (Binding::A2a(a.clone()), a.as_str())))
            .chain(config.openai.expose.iter().map(|a| (Binding::OpenAi(a.clone()), a.as_str())));
        let state = self.read();
        for (binding, name) in configured {
            let held = match state.bindings.get(&binding.key()).filter(|b| b.name == name) {
                Some(bound) => {
                    bound.agent == agent.id
                        || (state.agents.get(&bound.agent).is_some_and(|a| a.status == AgentStatus::Removed)
                            && agent.name == name)
                }
                None => agent.name == name && agent.parent_id.is_none(),
            };
            if held {
                return Some(binding.describe());
            }
        }
        None
    }
}

pub(super) async fn load(db: &db::Db) -> Result<Vec<(String, Bound)>> {
    let rows = db::query("SELECT binding, name, agent_id FROM agent_bindings").fetch_all(db).await?;
    rows.iter()
        .map(|r| {
            let agent: String = r.try_get("agent_id")?;
            let agent =
                Uuid::parse_str(&agent).map_err(|e| Error::internal(format!("a stored binding's agent: {e}")))?;
            Ok((r.try_get("binding")?, Bound { name: r.try_get("name")?, agent }))
        })
        .collect()
}

async fn save(db: &db::Db, key: &str, bound: &Bound) -> Result<()> {
    db::query(
        "INSERT INTO agent_bindings (binding, name, agent_id, bound_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (binding) DO UPDATE SET name = excluded.name, agent_id = excluded.agent_id, bound_at = excluded.bound_at",
    )
    .bind(key)
    .bind(&bound.name)
    .bind(bound.agent.to_string())
    .bind(db::now())
    .execute(db)
    .await?;
    Ok(())
}
