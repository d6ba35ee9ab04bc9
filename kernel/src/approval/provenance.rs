//! What untrusted sources a conversation's model has read: labels carried by the session, so a
//! hostile page read in one turn still counts in the next (it is still in the context).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One untrusted source that entered the model's context.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
pub struct Label {
    /// `web` (a browser page), `mcp` (an MCP server's result), `a2a` (a remote agent),
    /// `channel` (a stranger's message on a chat platform).
    pub source: String,
    /// Which one: the tool that read it (`browser_read_page`, `mcp__github__issues`), or who
    /// wrote (`channel:team user 42`, `a2a:remote-agent`).
    pub via: String,
}

impl Label {
    pub fn new(source: &str, via: impl Into<String>) -> Label {
        Label { source: source.into(), via: via.into() }
    }

    /// The label a call of `tool` (of `family`) puts on its turn, whatever its outcome, if
    /// what it returns comes from outside: a web page, an MCP server (its tools, resources and
    /// prompts), or a remote agent.
    pub fn of_result(tool: &str, family: &str) -> Option<Label> {
        let source = if tool.starts_with("browser_") || family == "browser" {
            "web"
        } else if tool.starts_with("mcp__") || family == "mcp" {
            "mcp"
        } else if tool.starts_with("a2a_") || family == "a2a" {
            "a2a"
        } else {
            return None;
        };
        Some(Label::new(source, tool))
    }
}

impl std::fmt::Display for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.source, self.via)
    }
}

/// The labels of one session's context as its turn runs; shared by the turn's tool calls.
#[derive(Debug, Default, Clone)]
pub struct Provenance(Arc<Mutex<Taint>>);

#[derive(Debug, Default)]
struct Taint {
    labels: BTreeSet<Label>,
    /// Labels added since the session last stored them.
    unsaved: bool,
}

impl Provenance {
    pub fn of(labels: impl IntoIterator<Item = Label>) -> Provenance {
        let labels: BTreeSet<Label> = labels.into_iter().collect();
        Provenance(Arc::new(Mutex::new(Taint { labels, unsaved: false })))
    }

    /// Adds `label`; true when it is new to the session.
    pub fn add(&self, label: Label) -> bool {
        let mut taint = self.0.lock().expect("provenance lock");
        let added = taint.labels.insert(label);
        taint.unsaved |= added;
        added
    }

    pub fn is_tainted(&self) -> bool {
        !self.0.lock().expect("provenance lock").labels.is_empty()
    }

    pub fn labels(&self) -> Vec<Label> {
        self.0.lock().expect("provenance lock").labels.iter().cloned().collect()
    }

    /// Marks the labels as not stored (a write failed): the next look stores them again.
    pub fn mark_unsaved(&self) {
        self.0.lock().expect("provenance lock").unsaved = true;
    }

    /// The labels to store, when some were added since the last time.
    pub fn take_unsaved(&self) -> Option<Vec<Label>> {
        let mut taint = self.0.lock().expect("provenance lock");
        std::mem::take(&mut taint.unsaved).then(|| taint.labels.iter().cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_from_outside_label_their_turn() {
        assert_eq!(Label::of_result("browser_read_page", "browser"), Some(Label::new("web", "browser_read_page")));
        assert_eq!(Label::of_result("mcp__github__issues", "mcp").unwrap().source, "mcp");
        assert_eq!(Label::of_result("mcp_resources", "mcp").unwrap().source, "mcp");
        assert_eq!(Label::of_result("a2a_send", "a2a").unwrap().source, "a2a");
        assert_eq!(Label::of_result("memory_recall", "memory"), None);
    }

    #[test]
    fn a_label_is_new_once_and_stored_once() {
        let p = Provenance::default();
        assert!(!p.is_tainted() && p.take_unsaved().is_none());
        assert!(p.add(Label::new("web", "browser_navigate")));
        assert!(!p.add(Label::new("web", "browser_navigate")));
        assert_eq!(p.take_unsaved().map(|l| l.len()), Some(1));
        assert!(p.take_unsaved().is_none() && p.is_tainted());
        // A failed write: stored again at the next look.
        p.mark_unsaved();
        assert_eq!(p.take_unsaved().map(|l| l.len()), Some(1));
    }
}
