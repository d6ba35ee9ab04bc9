//! The semantic store around turns: auto-recall before, auto-memorize after.
//!
//! Both act for the agent only where it could act itself: auto-recall for an agent that may
//! call `memory_semantic_search` (its grant and its `memory_read` scope), auto-memorize for
//! one that may call `memory_semantic_add`, each within its `semantic:` categories.

use super::tools::may;
use super::{Scope, SearchOptions, recall_floor};
use crate::Kernel;
use crate::agent::Agent;
use crate::capability::MemoryAccess;
use crate::memory::semantic;
use crate::memory::semantic::SemanticMemory;

/// The first line of a recall block, by which the chat tells it from what a person typed.
pub const RECALL_HEADER: &str = "[Kennel memory: facts recalled from your long-term memory for this message; they may be out of date. Forget a wrong one with memory_semantic_forget(memory_id).]";

/// How many memories one recall considers.
const RECALL_LIMIT: usize = 8;

/// The memories to put before `message` in `agent`'s turn, as one block of at most
/// `[proactive_memory] recall_max_bytes`, or `None` (off, not allowed, nothing relevant).
/// A failure is logged and recalls nothing: memory must not stop a turn.
pub(crate) async fn recall_block(kernel: &Kernel, agent: &Agent, message: &str) -> Option<String> {
    let memory = kernel.optional::<SemanticMemory>().ok_or_else(semantic::switched_off).ok()?;
    let config = memory.config();
    if !config.auto_recall
        || config.recall_max_bytes == 0
        || !kernel.tools().allows("memory_semantic_search", agent, None)
    {
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
/// the turn's path.
pub(crate) fn memorize(
    kernel: &Kernel,
    agent: std::sync::Arc<Agent>,
    (turn, session): (uuid::Uuid, uuid::Uuid),
    speaker: String,
    message: String,
    reply: String,
) {
    let Ok(memory) = kernel.optional::<SemanticMemory>().ok_or_else(semantic::switched_off) else { return };
    if !memory.config().auto_memorize || !kernel.tools().allows("memory_semantic_add", &agent, None) {
        return;
    }
    let kernel = kernel.clone();
    tokio::spawn(async move {
        let Ok(memory) = kernel.optional::<SemanticMemory>().ok_or_else(semantic::switched_off) else { return };
        let (read, write) = (may(&agent, MemoryAccess::Read), may(&agent, MemoryAccess::Write));
        let metered =
            super::metered_for(kernel.services().need(), kernel.clock().clone(), agent.id, Some(turn), Some(session));
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
