//! The semantic store around turns: auto-recall before, auto-memorize after.
//!
//! Both act for the agent only where it could act itself: auto-recall for an agent that may
//! call `memory_semantic_search` (its grant and its `memory_read` scope), auto-memorize for
//! one that may call `memory_semantic_add`, each within its `semantic:` categories.

use std::sync::Arc;

use super::tools::may;
use super::{ExtractorCall, Scope, SearchOptions, SemanticMemory, recall_floor};
use crate::agent::Agent;
use crate::capability::MemoryAccess;
use crate::tool::Registry;

/// The first line of a recall block, by which the chat tells it from what a person typed.
pub const RECALL_HEADER: &str = "[Kennel memory: facts recalled from your long-term memory for this message; they may be out of date. Forget a wrong one with memory_semantic_forget(memory_id).]";

/// How many memories one recall considers.
const RECALL_LIMIT: usize = 8;

/// The memories to put before `message` in `agent`'s turn, as one block of at most
/// `[proactive_memory] recall_max_bytes`, or `None` (off, not allowed, nothing relevant).
/// A failure is logged and recalls nothing: memory must not stop a turn.
pub(crate) async fn recall_block(
    memory: &SemanticMemory,
    tools: &Registry,
    agent: &Agent,
    message: &str,
) -> Option<String> {
    let config = memory.config();
    if !config.auto_recall || config.recall_max_bytes == 0 || !tools.allows("memory_semantic_search", agent, None) {
        return None;
    }
    let options = SearchOptions {
        limit: RECALL_LIMIT,
        min_confidence: config.recall_min_confidence,
        min_relevance: recall_floor(memory.embedder().is_sparse()),
        refresh: true,
    };
    let hits = match memory.search(agent.id, message, &options, &may(agent, MemoryAccess::Read)).await {
        Ok(hits) => hits,
        Err(e) => {
            tracing::warn!(agent = %agent.name, error = %e, "auto-recall failed; the turn goes on without it");
            return None;
        }
    };
    let lines = hits
        .iter()
        .map(|m| format!("- {} (memory {}, {}, confidence {:.2})", m.content, m.id, m.category, m.confidence));
    block(lines, config.recall_max_bytes as usize)
}

/// The header and as many whole lines as fit in `max_bytes`; `None` if not even one does.
fn block(lines: impl Iterator<Item = String>, max_bytes: usize) -> Option<String> {
    let mut text = RECALL_HEADER.to_string();
    let mut any = false;
    for line in lines {
        // A line that does not fit is left out; a shorter one after it may still fit.
        if text.len() + 1 + line.len() > max_bytes {
            continue;
        }
        text.push('\n');
        text.push_str(&line);
        any = true;
    }
    any.then_some(text)
}

/// After a turn, writes the lasting facts the extractor finds in it (auto-memorize), off
/// the turn's path. `metered` bills the extractor's calls (`super::metered_for`).
pub(crate) fn memorize(
    memory: Arc<SemanticMemory>,
    tools: &Registry,
    agent: Arc<Agent>,
    metered: impl Fn(ExtractorCall<'_>) + Send + Sync + 'static,
    (speaker, message, reply): (String, String, String),
) {
    if !memory.config().auto_memorize || !tools.allows("memory_semantic_add", &agent, None) {
        return;
    }
    tokio::spawn(async move {
        let (read, write) = (may(&agent, MemoryAccess::Read), may(&agent, MemoryAccess::Write));
        let scope = Scope { read: &read, write: &write };
        match memory.memorize_turn(agent.id, (&speaker, &message, &reply), scope, &metered).await {
            Ok(outcome) if !outcome.written.is_empty() => {
                tracing::info!(agent = %agent.name, summary = %outcome.summary, "auto-memorize")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(agent = %agent.name, error = %e, "auto-memorize failed"),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_holds_whole_lines_within_its_bytes() {
        let lines = || ["- one".to_string(), "- a line too long to fit".to_string(), "- two".to_string()].into_iter();
        let both = block(lines(), 10_000).unwrap();
        assert!(both.ends_with("- one\n- a line too long to fit\n- two"));
        let short = block(lines(), RECALL_HEADER.len() + 12).unwrap();
        assert!(short.ends_with("- one\n- two"), "the long line is left out, the next still fits: {short}");
        let one = block(lines(), RECALL_HEADER.len() + 6).unwrap();
        assert!(one.ends_with("- one") && one.len() <= RECALL_HEADER.len() + 6);
        assert_eq!(block(lines(), RECALL_HEADER.len() + 3), None, "not even one line fits");
    }
}
