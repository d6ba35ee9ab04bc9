//! What the model is told: the system prompt, and a history every provider accepts.

use std::collections::HashSet;

use super::context::Entry;
use crate::agent::Agent;
use crate::llm::Message;

/// The agent type's system prompt, the agent's current goal, its type's skills
/// ([`crate::skills::Skills::prompt_block`]), and (stable mode) the line that names the tools
/// reached through `run_tool`.
pub(super) fn system_prompt(agent: &Agent, skills: Option<&str>, tools_line: Option<&str>) -> String {
    let mut prompt = if agent.manifest.system_prompt.trim().is_empty() {
        format!("You are {}, an agent running in Kennel.", agent.name)
    } else {
        agent.manifest.system_prompt.clone()
    };
    if let Some(goal) = agent.goal.as_deref().filter(|g| !g.trim().is_empty()) {
        prompt.push_str("\n\nYour current goal: ");
        prompt.push_str(goal);
    }
    for part in [skills, tools_line].into_iter().flatten() {
        prompt.push_str("\n\n");
        prompt.push_str(part);
    }
    prompt
}

/// A turn that was stopped between a model's tool calls and their results leaves calls
/// without results, which both wire protocols refuse. Give each such call a result that says
/// what happened. (Not stored: each repaired result takes its call's place.)
pub(super) fn repair_dangling_calls(history: &mut Vec<Entry>) {
    let answered: HashSet<String> = history
        .iter()
        .filter_map(|e| match &e.message {
            Message::Tool { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    let mut repaired = Vec::with_capacity(history.len());
    for e in history.drain(..) {
        let missing: Vec<Entry> = match &e.message {
            Message::Assistant { tool_calls, .. } => tool_calls
                .iter()
                .filter(|c| !answered.contains(&c.id))
                .map(|c| Entry {
                    seq: e.seq,
                    message: Message::Tool {
                        call_id: c.id.clone(),
                        name: c.name.clone(),
                        content: "Failed: the turn was stopped before this call ran".into(),
                        is_error: true,
                        image: None,
                    },
                })
                .collect(),
            _ => Vec::new(),
        };
        repaired.push(e);
        repaired.extend(missing);
    }
    *history = repaired;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    #[test]
    fn dangling_calls_get_a_result_right_after_their_call() {
        let call = |id: &str| ToolCall { id: id.into(), name: "t".into(), arguments: serde_json::json!({}) };
        let mut history: Vec<Entry> = [
            Message::User { content: "go".into() },
            Message::Assistant { content: None, tool_calls: vec![call("a"), call("b")] },
            Message::Tool { call_id: "a".into(), name: "t".into(), content: "ok".into(), is_error: false, image: None },
            Message::User { content: "again".into() },
        ]
        .into_iter()
        .zip(1..)
        .map(|(message, seq)| Entry { seq, message })
        .collect();
        repair_dangling_calls(&mut history);
        assert_eq!(history.len(), 5);
        assert!(matches!(&history[2].message, Message::Tool { call_id, is_error: true, .. } if call_id == "b"));
        assert_eq!(history[2].seq, 2, "the repaired result takes its call's place");
        assert!(matches!(&history[3].message, Message::Tool { call_id, is_error: false, .. } if call_id == "a"));
    }
}
