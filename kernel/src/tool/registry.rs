//! The one list of tools (spec §0.1). The model's tools array, the pipeline's gate,
//! `GET /api/tools`, `GET /api/agents/{id}/tools` and the Tools inspector are all read from
//! here, through one answer per tool and agent: [`Registry::standing`].
//!
//! Built-in tools are registered at start by their families (`crate::family`, in the order
//! of `lib.rs`'s `FAMILIES`). Dynamic providers (MCP servers, script folders) add and remove
//! tools while the daemon runs through [`Tools::provide`], which swaps in a new snapshot;
//! a tool that disappears is remembered with the reason, so a session that loaded it is told
//! it is "no longer available" rather than that it never existed.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde::Serialize;
use utoipa::ToSchema;

use super::availability::{Layer, Needs, TurnScope};
use super::{ArgsSchema, ErasedTool, Tool, ToolDef};
use crate::agent::{Agent, Manifest};
use crate::capability::Decision;
use crate::error::Result;
use crate::page::{Key, Page, PageRequest};

/// Whether a tool is offered at all on this daemon (spec §0.8): the daemon layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum Availability {
    Registered,
    /// Its prerequisite is missing; the model never sees it.
    Excluded {
        reason: String,
    },
}

#[derive(Clone)]
pub(crate) struct Entry {
    pub def: Arc<ToolDef>,
    pub tool: Arc<dyn ErasedTool>,
    pub availability: Availability,
    /// The dynamic provider that added it; `None` for a built-in tool.
    provider: Option<Arc<str>>,
}

/// One snapshot of every tool. Cheap to share: a turn or a call holds the snapshot it started
/// with while providers change the live list.
#[derive(Default, Clone)]
pub struct Registry {
    entries: Vec<Entry>,
    by_name: HashMap<String, usize>,
    /// Tools a provider removed while the daemon ran, with why.
    gone: HashMap<String, String>,
}

/// A tool as one agent sees it: usable, or why not.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EffectiveTool {
    pub name: String,
    pub family: String,
    #[serde(flatten)]
    pub status: ToolStatus,
    /// Kinds of turn that leave it out even when it is allowed (`ask_user` needs a person).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out_of: Option<String>,
}

/// [`Registry::preview`]'s answer: every tool's standing, and what to warn of.
#[derive(Debug, Clone)]
pub struct GrantPreview {
    pub tools: Vec<EffectiveTool>,
    /// [`Registry::grant_warning`] for the grants previewed.
    pub warning: Option<String>,
}

/// How one tool stands for one agent: the answer of [`Registry::standing`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ToolStatus {
    Allowed {
        grant: String,
    },
    Denied {
        grant: String,
    },
    NotGranted,
    /// Left out on this daemon, for this agent, or in this kind of turn, and why.
    Excluded {
        layer: Layer,
        reason: String,
    },
}

impl ToolStatus {
    pub fn is_allowed(&self) -> bool {
        matches!(self, ToolStatus::Allowed { .. })
    }

    /// The status's name as the API writes it: `allowed`, `denied`, `not_granted`, `excluded`.
    pub fn name(&self) -> &'static str {
        match self {
            ToolStatus::Allowed { .. } => "allowed",
            ToolStatus::Denied { .. } => "denied",
            ToolStatus::NotGranted => "not_granted",
            ToolStatus::Excluded { .. } => "excluded",
        }
    }
}

/// A [`ToolStatus`] borrowing what it names from the agent's grants and the registry.
pub(crate) enum Standing<'a> {
    Allowed(Cow<'a, str>),
    Denied(&'a str),
    NotGranted,
    Excluded(Layer, Cow<'a, str>),
}

impl From<Standing<'_>> for ToolStatus {
    fn from(standing: Standing<'_>) -> ToolStatus {
        match standing {
            Standing::Allowed(grant) => ToolStatus::Allowed { grant: grant.into_owned() },
            Standing::Denied(grant) => ToolStatus::Denied { grant: grant.to_string() },
            Standing::NotGranted => ToolStatus::NotGranted,
            Standing::Excluded(layer, reason) => ToolStatus::Excluded { layer, reason: reason.into_owned() },
        }
    }
}

/// The grant shown for `read_artifact`, which every agent may call on its own results.
pub const BUILT_IN_GRANT: &str = "built in: every agent reads its own spilled results";

impl Registry {
    /// Registers a tool that is always available on this daemon.
    pub fn add<T: Tool>(&mut self, tool: T) {
        self.add_needing(tool, &Needs::nothing());
    }

    /// Registers a tool that is available only if `needs` holds; otherwise it is excluded with
    /// the reason ("[browser] is not configured").
    pub fn add_needing<T: Tool>(&mut self, tool: T, needs: &Needs) {
        self.insert(Provided::typed(tool, needs).0);
    }

    fn insert(&mut self, entry: Entry) {
        let name = entry.def.name.clone();
        assert!(!self.by_name.contains_key(&name), "tool `{name}` registered twice");
        self.gone.remove(&name);
        self.by_name.insert(name, self.entries.len());
        self.entries.push(entry);
    }

    pub(crate) fn resolve(&self, name: &str) -> Option<&Entry> {
        self.by_name.get(name).map(|&i| &self.entries[i])
    }

    pub fn get(&self, name: &str) -> Option<(&Arc<ToolDef>, &Availability)> {
        self.resolve(name).map(|e| (&e.def, &e.availability))
    }

    /// Why a tool that is not registered now was removed, if a provider removed it.
    pub fn gone(&self, name: &str) -> Option<&str> {
        self.gone.get(name).map(String::as_str)
    }

    /// A page of the tools with their availability, in registration order (the cursor is
    /// a position).
    pub fn page(&self, page: &PageRequest) -> Result<Page<(Arc<ToolDef>, Availability)>> {
        let all = self.entries.iter().map(|e| (e.def.clone(), e.availability.clone())).collect();
        by_position(all, page)
    }

    /// A page of [`Registry::effective`].
    pub fn effective_page(&self, agent: &Agent, page: &PageRequest) -> Result<Page<EffectiveTool>> {
        by_position(self.effective(agent), page)
    }

    /// Every tool with its availability, in registration order.
    pub fn all(&self) -> impl Iterator<Item = (&Arc<ToolDef>, &Availability)> {
        self.entries.iter().map(|e| (&e.def, &e.availability))
    }

    /// Every tool's definition, for what needs them past an `await`.
    pub fn defs(&self) -> Vec<Arc<ToolDef>> {
        self.entries.iter().map(|e| e.def.clone()).collect()
    }

    /// The grants among `grants` that match no tool this registry holds (a typo such as
    /// `memry_*`, or a family this daemon does not have): worth a warning, not a refusal,
    /// since a dynamic provider may add such tools later.
    pub fn unmatched<'g>(&self, grants: &'g [crate::capability::Grant]) -> Vec<&'g str> {
        grants
            .iter()
            .filter(|g| g.reach().is_none() && !self.entries.iter().any(|e| g.matches(&e.def)))
            .map(|g| g.as_str())
            .collect()
    }

    /// The warning every front gives for grants that match no tool ([`Registry::unmatched`]),
    /// or `None` when each matches one.
    pub fn grant_warning(&self, grants: &[crate::capability::Grant]) -> Option<String> {
        let unmatched = self.unmatched(grants);
        (!unmatched.is_empty()).then(|| {
            let names: Vec<String> = unmatched.iter().map(|g| format!("`{g}`")).collect();
            format!(
                "no tool on this daemon matches {} {}: check the spelling (the Tools page and GET /api/tools list every tool); it is kept, in case a tool of that name is added later",
                if names.len() == 1 { "the grant" } else { "the grants" },
                names.join(", ")
            )
        })
    }

    /// [`Registry::grant_warning`] for the one pattern just granted (a pattern that does not
    /// parse was refused before it got here: no warning).
    pub fn pattern_warning(&self, pattern: &str) -> Option<String> {
        let grant = crate::capability::Grant::parse(pattern).ok()?;
        self.grant_warning(std::slice::from_ref(&grant))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How `def` stands for `agent`, layer by layer: excluded on this daemon, not granted or
    /// denied, excluded for this agent (its family's condition on the agent), and — when
    /// `turn` is given — excluded in this kind of turn. Every front reads this one answer.
    pub(crate) fn standing(&self, entry: &Entry, agent: &Agent, turn: Option<TurnScope>) -> ToolStatus {
        self.decide(entry, agent, turn).into()
    }

    /// [`Registry::standing`] as decided, borrowing the grant and reasons it names: the gate
    /// and [`Registry::usable_by`] (every tool, every model call) decide without copying them.
    pub(crate) fn decide<'a>(&self, entry: &'a Entry, agent: &'a Agent, turn: Option<TurnScope>) -> Standing<'a> {
        let def = &entry.def;
        if let Availability::Excluded { reason } = &entry.availability {
            return Standing::Excluded(Layer::Daemon, Cow::Borrowed(reason));
        }
        let granted = match agent.manifest.capabilities.decide(def) {
            _ if def.built_in_grant => Cow::Borrowed(BUILT_IN_GRANT),
            Decision::Allowed { by } => Cow::Borrowed(by.as_str()),
            Decision::Denied { by } => return Standing::Denied(by.as_str()),
            Decision::NotGranted if super::modes::is_machinery(agent.manifest.tool_mode, &def.name) => {
                Cow::Owned(format!("tool_mode = \"{}\"", agent.manifest.tool_mode.as_str()))
            }
            Decision::NotGranted => return Standing::NotGranted,
        };
        if let Some(reason) = entry.tool.excluded_for(agent) {
            return Standing::Excluded(Layer::Agent, Cow::Owned(reason));
        }
        if let Some(reason) = turn.and_then(|t| t.leaves_out(def)) {
            return Standing::Excluded(Layer::Turn, Cow::Borrowed(reason));
        }
        Standing::Allowed(granted)
    }

    /// How each tool stands for `agent` outside any particular turn (`GET
    /// /api/agents/{id}/tools`, the inspector), with the kinds of turn that leave it out.
    pub fn effective(&self, agent: &Agent) -> Vec<EffectiveTool> {
        self.entries
            .iter()
            .map(|e| EffectiveTool {
                name: e.def.name.clone(),
                family: e.def.family.clone(),
                status: self.standing(e, agent, None),
                left_out_of: TurnScope::left_out_of(&e.def),
            })
            .collect()
    }

    /// How each tool would stand for an agent made from `manifest` with `grants` as its tool
    /// grants (checked as a save checks them), with the warning for grants no tool matches:
    /// the type editor's live preview, before anything is saved.
    pub fn preview(&self, manifest: &Manifest, grants: Vec<String>) -> Result<GrantPreview> {
        let planned = Agent::planned(manifest.with_tools(grants)?);
        let warning = self.grant_warning(&planned.manifest.capabilities.tools);
        Ok(GrantPreview { tools: self.effective(&planned), warning })
    }

    /// Whether `agent` may call the tool `name` in a turn of this scope: what the kernel asks
    /// before acting for an agent on a tool's behalf (auto-recall reads the semantic store
    /// only for an agent that may search it).
    pub(crate) fn allows(&self, name: &str, agent: &Agent, turn: Option<TurnScope>) -> bool {
        self.resolve(name).is_some_and(|e| matches!(self.decide(e, agent, turn), Standing::Allowed(_)))
    }

    /// The tools `agent` can call in a turn of this scope (`None`: whatever the turn).
    pub fn usable_by<'a>(
        &'a self,
        agent: &'a Agent,
        turn: Option<TurnScope>,
    ) -> impl Iterator<Item = &'a Arc<ToolDef>> + 'a {
        self.entries.iter().filter(move |e| matches!(self.decide(e, agent, turn), Standing::Allowed(_))).map(|e| &e.def)
    }
}

/// A page of a list in registration order; the cursor is the last item's position.
fn by_position<T>(items: Vec<T>, page: &PageRequest) -> Result<Page<T>> {
    let numbered: Vec<(usize, T)> = items.into_iter().enumerate().collect();
    let after = page.after(Key::Position)?;
    Ok(Page::of_sorted(numbered, page, after, |(i, _)| format!("{i:06}")).map(|(_, item)| item))
}

fn typed_entry<T: Tool>(tool: T, availability: Availability, provider: Option<Arc<str>>) -> Entry {
    let mut def = tool.def();
    def.schema = ArgsSchema::of::<T::Args>();
    Entry { def: Arc::new(def), tool: Arc::new(tool), availability, provider }
}

/// A tool a dynamic provider offers.
pub struct Provided(Entry);

impl Provided {
    /// A provided tool with typed arguments, available while its provider offers it if
    /// `needs` holds (an MCP server's command on `PATH`, say).
    pub fn typed<T: Tool>(tool: T, needs: &Needs) -> Provided {
        let availability = match needs.missing() {
            None => Availability::Registered,
            Some(reason) => Availability::Excluded { reason: reason.to_string() },
        };
        Provided(typed_entry(tool, availability, None))
    }
}

impl Provided {
    /// A tool with its argument type erased (see `tool::dynamic`), excluded with `excluded`'s
    /// reason when that is given.
    pub(crate) fn erased(def: ToolDef, tool: Arc<dyn ErasedTool>, excluded: Option<String>) -> Provided {
        let availability = match excluded {
            None => Availability::Registered,
            Some(reason) => Availability::Excluded { reason },
        };
        Provided(Entry { def: Arc::new(def), tool, availability, provider: None })
    }

    /// Why it is excluded, if it is.
    pub fn exclusion(&self) -> Option<&str> {
        match &self.0.availability {
            Availability::Excluded { reason } => Some(reason),
            Availability::Registered => None,
        }
    }

    /// The same tool, excluded with `reason`.
    pub fn excluded(mut self, reason: String) -> Provided {
        self.0.availability = Availability::Excluded { reason };
        self
    }
}

/// The live tool list: built-in tools and what dynamic providers offer right now.
pub struct Tools {
    current: RwLock<Arc<Registry>>,
}

impl Tools {
    pub(crate) fn new(builtin: Registry) -> Tools {
        Tools { current: RwLock::new(Arc::new(builtin)) }
    }

    /// Puts the built-in tools in the list, once the families registered them (the list is a
    /// service before they open, so a family may hold it).
    pub(crate) fn set_builtin(&self, builtin: Registry) {
        *self.current.write().expect("tools lock") = Arc::new(builtin);
    }

    /// The list as it is now. A call holds the snapshot it resolved its tool in.
    pub fn snapshot(&self) -> Arc<Registry> {
        self.current.read().expect("tools lock").clone()
    }

    /// Sets everything `provider` offers (an MCP server's tools after it connected or
    /// changed its list; empty when it went away). Tools it offered before and not now are
    /// remembered as gone with `reason`.
    pub fn provide(&self, provider: &str, tools: Vec<Provided>, reason: &str) {
        let mut current = self.current.write().expect("tools lock");
        let provider: Arc<str> = Arc::from(provider);
        let mut next = Registry { gone: current.gone.clone(), ..Registry::default() };
        let mut removed = Vec::new();
        for entry in current.entries.iter() {
            if entry.provider.as_deref() == Some(&*provider) {
                removed.push(entry.def.name.clone());
            } else {
                next.insert(entry.clone());
            }
        }
        for Provided(mut entry) in tools {
            entry.provider = Some(provider.clone());
            if entry.def.built_in_grant {
                // Only the kernel's own tools go ungranted; a provider's never do.
                let mut def = ToolDef::clone(&entry.def);
                def.built_in_grant = false;
                entry.def = Arc::new(def);
            }
            if next.by_name.contains_key(&entry.def.name) {
                tracing::warn!(tool = %entry.def.name, provider = %provider, "a provided tool has the name of another tool; it is left out");
                continue;
            }
            next.insert(entry);
        }
        for name in removed {
            if !next.by_name.contains_key(&name) {
                next.gone.insert(name, reason.to_string());
            }
        }
        *current = Arc::new(next);
    }
}
