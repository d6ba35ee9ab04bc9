//! Tool modes (spec §1, §1b): which tool schemas a turn sends the model. Execution is the same
//! in every mode; only the offer differs.
//!
//! - `all`: every tool the agent may use.
//! - `lazy`: `tool_search`, `tool_load`, the always-offered set, and tools this session loaded.
//! - `stable`: `find_tools`, `run_tool` and the always-offered set — the same bytes on every
//!   turn of every session, so provider prompt caches keep hitting. Every other usable tool is
//!   named in one context line and reached through `run_tool`.
//!
//! The always-offered set is every tool with a built-in grant (`read_artifact`, so a spill
//! placeholder never names a tool the model was not given) and `memory_semantic_search` and
//! `ask_user` where the agent may use them. A turn in `all` or `lazy` mode leaves
//! `read_artifact` out until its session holds a spilled result (`crate::turn`).
//!
//! # Design notes
//!
//! ## Tool modes
//!
//! The offer (tools array + optional context line) is rebuilt for every model call; execution is
//! the same pipeline in every mode.
//!
//! | mode | tools array | everything else |
//! |---|---|---|
//! | `all` | every usable tool except stable's `find_tools`/`run_tool` | — |
//! | `lazy` (`lazy_tools = true`) | `tool_search`, `tool_load`, the always-offered set, tools this session loaded | found with `tool_search`, loaded with `tool_load` (callable from the next model call on) |
//! | `stable` | `find_tools`, `run_tool`, the always-offered set — depends only on grants, never on the session | named in one line at the end of the system prompt: `Tools (call through run_tool): a, b, mcp__server__{x, y}` |
//!
//! - The always-offered set: every tool with a built-in grant (`read_artifact`), and
//!   `memory_semantic_search` and `ask_user` where the agent may use them (`ask_user` only in
//!   turns with a person present). A daemon with `[proactive_memory] enabled = false` offers no search.
//! - A mode's machinery (`tool_search`/`tool_load` in lazy, `find_tools`/`run_tool` in stable) is
//!   allowed in that mode without a grant: it only reveals or routes to tools the agent is granted.
//!   An explicit `deny` still wins.
//! - The pipeline refuses a usable tool that this model call was not offered (`ctx.offered`) with
//!   a pointer: stable → "call run_tool(name=…)", lazy → "call tool_load(name=…) first".
//! - `run_tool(name, args)` runs the inner tool through the whole pipeline under its **real** name
//!   (gate, validation, spill, audit). If this session has not fetched the tool's schema
//!   (`find_tools`, or an earlier `run_tool`), it returns the schema with `not_run: true` and does
//!   not execute. An unknown name is `NotFound` and never runs.
//! - Anthropic `cache_control` is set on the last tool and the system prompt in stable mode.
//! - A headless turn (API turns, schedule fires, triggered turns, task wake-ups) leaves out
//!   `needs_person` tools; a turn with no channel conversation (every turn but a channel's
//!   answer to an inbound message) leaves out `needs_conversation` tools (`channel_dm`).

use std::collections::{BTreeMap, HashSet};

use super::{Registry, ToolDef, TurnScope};
use crate::agent::{Agent, ToolMode};
use crate::llm::ToolSpec;

/// Tools that make lazy mode work; allowed in it without a grant, since they only reveal and
/// load tools the agent is already granted.
const LAZY_MACHINERY: [&str; 2] = ["tool_search", "tool_load"];
/// Tools that make stable mode work; likewise allowed in it without a grant.
const STABLE_MACHINERY: [&str; 2] = ["find_tools", "run_tool"];
/// Offered in every mode whenever the agent may use them (spec §1, §1b), besides the tools
/// with a built-in grant.
const ALWAYS_OFFERED: [&str; 2] = ["memory_semantic_search", "ask_user"];

fn always_offered(def: &ToolDef) -> bool {
    def.built_in_grant || ALWAYS_OFFERED.contains(&def.name.as_str())
}

/// Whether `name` is part of `mode`'s own machinery (and so needs no grant in that mode).
pub fn is_machinery(mode: ToolMode, name: &str) -> bool {
    match mode {
        ToolMode::All => false,
        ToolMode::Lazy => LAZY_MACHINERY.contains(&name),
        ToolMode::Stable => STABLE_MACHINERY.contains(&name),
    }
}

/// What one model call is offered.
#[derive(Debug, Clone)]
pub struct Offer {
    pub mode: ToolMode,
    pub specs: Vec<ToolSpec>,
    /// Names in `specs`; a call of anything else is refused with a mode-specific pointer.
    pub names: HashSet<String>,
    /// Stable mode's `Tools (call through run_tool): …` line for the system prompt.
    pub context_line: Option<String>,
}

impl Offer {
    /// Leaves `name` out of the offer (a call of it is then refused like any tool not offered).
    pub fn remove(&mut self, name: &str) {
        self.specs.retain(|s| s.name != name);
        self.names.remove(name);
    }
}

/// Builds the offer for `agent` in its tool mode, for a turn of `turn`'s scope (a headless
/// turn leaves out tools that need a person). `loaded` is what this session has loaded
/// (lazy) or fetched (stable).
pub fn offer(registry: &Registry, agent: &Agent, loaded: &[String], turn: TurnScope) -> Offer {
    let mode = agent.manifest.tool_mode;
    let usable_defs: Vec<&ToolDef> = registry.usable_by(agent, Some(turn)).map(|d| d.as_ref()).collect();
    let in_array = |def: &ToolDef| -> bool {
        let name = def.name.as_str();
        match mode {
            ToolMode::All => !STABLE_MACHINERY.contains(&name),
            ToolMode::Lazy => LAZY_MACHINERY.contains(&name) || always_offered(def) || loaded.iter().any(|l| l == name),
            ToolMode::Stable => STABLE_MACHINERY.contains(&name) || always_offered(def),
        }
    };
    let (offered, rest): (Vec<&ToolDef>, Vec<&ToolDef>) = usable_defs.into_iter().partition(|d| in_array(d));
    let specs: Vec<ToolSpec> = offered.iter().map(|d| spec_of(d)).collect();
    let names = offered.iter().map(|d| d.name.clone()).collect();
    let context_line = (mode == ToolMode::Stable && !rest.is_empty())
        .then(|| format!("Tools (call through run_tool): {}", grouped_names(rest.iter().map(|d| d.name.as_str()))));
    Offer { mode, specs, names, context_line }
}

/// The model-facing form of a tool.
pub fn spec_of(def: &ToolDef) -> ToolSpec {
    ToolSpec { name: def.name.clone(), description: def.description.clone(), parameters: def.schema.shared() }
}

/// `a, b, mcp__github__{issues, pulls}`: MCP tools grouped per server (spec §1b).
fn grouped_names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut plain = Vec::new();
    let mut mcp: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for name in names {
        match name.strip_prefix("mcp__").and_then(|rest| rest.split_once("__")) {
            Some((server, tool)) => mcp.entry(server).or_default().push(tool),
            None => plain.push(name.to_string()),
        }
    }
    plain.sort();
    plain.extend(mcp.into_iter().map(|(server, tools)| format!("mcp__{server}__{{{}}}", tools.join(", "))));
    plain.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{ManifestInput, validate};
    use crate::config::Config;

    fn agent(manifest: serde_json::Value) -> Agent {
        Agent::planned(validate(crate::error::from_value::<ManifestInput>(manifest).unwrap()).unwrap())
    }

    fn names(offer: &Offer) -> Vec<&str> {
        offer.specs.iter().map(|s| s.name.as_str()).collect()
    }

    #[tokio::test]
    async fn headless_turns_leave_out_tools_that_need_a_person() {
        let registry = crate::family::builtin_registry(Config::default()).await;
        let (with_person, headless) =
            (TurnScope { person: true, conversation: false }, TurnScope { person: false, conversation: false });
        for mode in ["all", "lazy", "stable"] {
            let a = agent(serde_json::json!({"name": "a", "tool_mode": mode, "tools": ["ask_user", "system_time"]}));
            assert!(
                names(&offer(&registry, &a, &[], with_person)).contains(&"ask_user"),
                "{mode}: offered with a person"
            );
            let headless = offer(&registry, &a, &[], headless);
            assert!(!names(&headless).contains(&"ask_user"), "{mode}: not offered headless");
            assert!(!headless.context_line.unwrap_or_default().contains("ask_user"));
        }
    }

    #[tokio::test]
    async fn stable_offers_depend_on_grants_only() {
        let registry = crate::family::builtin_registry(Config::default()).await;
        let a = agent(serde_json::json!({"name": "a", "tool_mode": "stable", "tools": ["*"]}));
        let turn = TurnScope { person: false, conversation: false };
        let fresh = offer(&registry, &a, &[], turn);
        let loaded = offer(&registry, &a, &["system_time".to_string(), "agent_list".to_string()], turn);
        assert_eq!(serde_json::to_string(&fresh.specs).unwrap(), serde_json::to_string(&loaded.specs).unwrap());
        assert_eq!(names(&fresh), ["read_artifact", "find_tools", "run_tool", "memory_semantic_search"]);
        let switched_off = Config {
            proactive_memory: crate::memory::ProactiveMemoryConfig { enabled: false, ..Default::default() },
            ..Config::default()
        };
        let without_store = offer(&crate::family::builtin_registry(switched_off).await, &a, &[], turn);
        assert_eq!(names(&without_store), ["read_artifact", "find_tools", "run_tool"], "no store, no search");
    }

    /// A spill placeholder points at `read_artifact`: every agent is offered it, in every
    /// mode, with no grant at all and even when a deny would cover it.
    #[tokio::test]
    async fn read_artifact_is_offered_to_every_agent_in_every_mode() {
        let registry = crate::family::builtin_registry(Config::default()).await;
        let turn = TurnScope { person: false, conversation: false };
        for mode in ["all", "lazy", "stable"] {
            let a = agent(serde_json::json!({"name": "a", "tool_mode": mode}));
            assert!(names(&offer(&registry, &a, &[], turn)).contains(&"read_artifact"), "{mode}");
            let denied = agent(
                serde_json::json!({"name": "a", "tool_mode": mode, "capabilities": {"tools": ["*"], "deny": ["read_*"]}}),
            );
            assert!(names(&offer(&registry, &denied, &[], turn)).contains(&"read_artifact"), "{mode}, denied");
        }
    }

    #[test]
    fn mcp_names_are_grouped_per_server() {
        let names = ["system_time", "mcp__github__issues", "mcp__fs__read", "mcp__github__pulls", "a2a_send"];
        assert_eq!(
            grouped_names(names.into_iter()),
            "a2a_send, system_time, mcp__fs__{read}, mcp__github__{issues, pulls}"
        );
    }
}
