//! The depth budget (spec §0.7): how many blocking agent calls deep work may run. Every
//! place that starts nested work — a tool call, a blocking `agent_send`, a workflow step, a
//! triggered turn — asks [`check`] (or [`check_with`], holding the config and agents rather than
//! the kernel), so the limit and its wording are one.

use uuid::Uuid;

use crate::Kernel;
use crate::agent::Agents;
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};

/// Refuses `what` (`sending to agent \`b\``, `calling \`task_post\``) if it would run `depth`
/// agent calls deep, past `[kernel] max_agent_call_depth`, naming the chain that led there.
/// `what` is only worded when the call is refused: every tool call passes through here.
pub(crate) fn check(kernel: &Kernel, depth: u32, chain: &[Uuid], what: impl FnOnce() -> String) -> Result<()> {
    check_with(kernel.config(), kernel.agents(), depth, chain, what)
}

/// [`check`] for a family, which holds the config and the agents, not the kernel.
pub(crate) fn check_with(
    config: &Config,
    agents: &Agents,
    depth: u32,
    chain: &[Uuid],
    what: impl FnOnce() -> String,
) -> Result<()> {
    let max = config.kernel.max_agent_call_depth;
    if u64::from(depth) <= max {
        return Ok(());
    }
    let chain = if chain.is_empty() { String::new() } else { format!(" (chain: {})", chain_names(agents, chain)) };
    Err(Error::new(
        ErrorKind::ResourceExhausted,
        format!(
            "refused: {} would run {depth} agent calls deep, over [kernel] max_agent_call_depth = {max}{chain}",
            what()
        ),
    ))
}

/// `a → b → c`: agents along a chain by name (by id if one is gone).
fn chain_names(agents: &Agents, chain: &[Uuid]) -> String {
    chain
        .iter()
        .map(|id| agents.get_by_id(*id).map_or_else(|| id.to_string(), |a| a.name.clone()))
        .collect::<Vec<_>>()
        .join(" → ")
}
