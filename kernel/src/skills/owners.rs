//! Skills have owners (issue 42): what an agent may change itself, and what waits for an
//! operator.
//!
//! A skill's maker is whoever its last `create` row names: an agent (by id), or a person (an
//! operator's create, an accepted proposal, a folder put under `skills/` by hand). An agent
//! changes a skill itself only when it made it and no one else loads it: no agent type lists
//! it but those the agent made (its own, when an operator made it, would give the skill to
//! every agent spawned from it later), and no agent lists it but itself and its
//! descendants. Anything else that changes what a prompt carries (a create of a name another
//! type lists, an update, a patch, a rollback) becomes a [`Proposal`](super::Proposal); a
//! delete or a support file of such a skill is refused.

use std::sync::Arc;

use crate::agent::{Agent, Agents};
use crate::error::Result;
use crate::notify::Inbox;

use super::{Skills, store};

/// The most loaders named in a reason; the rest are counted.
const NAMED_LOADERS: usize = 5;

/// What an agent's change to a skill reaches beyond the skills: the agents (who else loads a
/// skill), `[skills] max_pending_proposals_per_agent`, and the inbox that tells the operators
/// of a proposal. Taken when the tools are registered (the inbox opens after the skills).
pub(crate) struct Owners {
    pub(super) agents: Arc<Agents>,
    pub(super) inbox: Arc<Inbox>,
    pub(super) max_pending_proposals: u64,
}

/// Why `agent` may not make `change` to its skill itself, if it may not.
pub(super) async fn why_not_yours(
    owners: &Owners,
    skills: &Skills,
    agent: &Agent,
    name: &str,
    creating: bool,
) -> Result<Option<String>> {
    if !creating && let Some(maker) = someone_elses(&owners.agents, skills, agent, name).await? {
        return Ok(Some(format!("{maker} made it")));
    }
    let loaders = owners.agents.others_loading_skill(name, agent);
    if loaders.is_empty() {
        return Ok(None);
    }
    let named = loaders.iter().take(NAMED_LOADERS).cloned().collect::<Vec<_>>().join(", ");
    let more = loaders.len().saturating_sub(NAMED_LOADERS);
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    Ok(Some(format!("other agents load it ({named}{more})")))
}

/// Who made `name`, when that is not `agent`.
async fn someone_elses(agents: &Agents, skills: &Skills, agent: &Agent, name: &str) -> Result<Option<String>> {
    Ok(match store::maker(&skills.db, name).await? {
        Some(Some(id)) if id == agent.id.to_string() => None,
        Some(Some(id)) => {
            let other = uuid::Uuid::parse_str(&id).ok().and_then(|id| agents.get_by_id(id));
            Some(other.map_or_else(|| format!("agent {id}"), |a| format!("agent {} ({id})", a.name)))
        }
        Some(None) | None => Some("an operator".to_string()),
    })
}
