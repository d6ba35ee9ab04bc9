//! The one list of tools (spec §0.1). The model's tools array, `GET /api/tools` and the
//! Tools inspector are all read from here.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use utoipa::ToSchema;

use super::{ErasedTool, Tool, ToolDef, schema_for};
use crate::agent::Agent;
use crate::capability::Decision;
use crate::config::Config;

/// Whether a tool is offered at all on this daemon (spec §0.8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum Availability {
    Registered,
    /// Its prerequisite is missing; the model never sees it.
    Excluded {
        reason: String,
    },
}

pub(crate) struct Entry {
    pub def: Arc<ToolDef>,
    pub tool: Arc<dyn ErasedTool>,
    pub availability: Availability,
}

#[derive(Default)]
pub struct Registry {
    entries: Vec<Entry>,
    by_name: HashMap<String, usize>,
}

/// A tool as one agent sees it: usable, or why not.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EffectiveTool {
    pub name: String,
    pub family: String,
    #[serde(flatten)]
    pub status: ToolStatus,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ToolStatus {
    Allowed { grant: String },
    Denied { grant: String },
    NotGranted,
    Excluded { reason: String },
}

impl Registry {
    /// Every built-in tool, each registered by one line. Tools whose prerequisite is absent
    /// are registered as excluded, with the reason.
    pub fn builtin(_config: &Config) -> Registry {
        let mut r = Registry::default();
        r.add(crate::system::SystemTime);
        r.add(super::artifact::ReadArtifact);
        r.add(super::meta::ToolSearch);
        r.add(super::meta::ToolLoad);
        r.add(super::meta::FindTools);
        r.add(super::meta::RunTool);
        r.add(crate::agent::tools::AgentSend);
        r.add(crate::agent::tools::AgentSpawn);
        r.add(crate::agent::tools::AgentList);
        r.add(crate::agent::tools::AgentFind);
        r.add(crate::agent::tools::AgentKill);
        r.add(crate::agent::tools::GoalUpdate);
        r.add(crate::agent::tools::AgentTypeCreate);
        r.add(crate::event::EventPublish);
        r.add(crate::workflow::WorkflowRunTool);
        r.add(crate::a2a::A2aDiscover);
        r.add(crate::a2a::A2aSend);
        r.add(crate::tasks::TaskPost);
        r.add(crate::tasks::TaskClaim);
        r.add(crate::tasks::TaskComplete);
        r.add(crate::tasks::TaskList);
        r.add(crate::tasks::TaskStatus);
        r.add(crate::schedule::ScheduleCreate);
        r.add(crate::schedule::ScheduleList);
        r.add(crate::schedule::ScheduleDelete);
        r.add(crate::schedule::ScheduleResume);
        r.add(crate::schedule::CronCreate);
        r.add(crate::schedule::CronList);
        r.add(crate::schedule::CronCancel);
        r.add(crate::schedule::CronEnable);
        r
    }

    pub fn add<T: Tool>(&mut self, tool: T) {
        self.add_with(tool, Availability::Registered);
    }

    /// Registers `tool` as available only if `prerequisite` holds; otherwise excluded with
    /// `reason` ("[browser] not configured").
    pub fn add_if<T: Tool>(&mut self, tool: T, prerequisite: bool, reason: &str) {
        let availability =
            if prerequisite { Availability::Registered } else { Availability::Excluded { reason: reason.into() } };
        self.add_with(tool, availability);
    }

    fn add_with<T: Tool>(&mut self, tool: T, availability: Availability) {
        let mut def = tool.def();
        def.schema = Arc::new(schema_for::<T::Args>());
        assert!(!self.by_name.contains_key(&def.name), "tool `{}` registered twice", def.name);
        self.by_name.insert(def.name.clone(), self.entries.len());
        self.entries.push(Entry { def: Arc::new(def), tool: Arc::new(tool), availability });
    }

    pub(crate) fn resolve(&self, name: &str) -> Option<&Entry> {
        self.by_name.get(name).map(|&i| &self.entries[i])
    }

    pub fn get(&self, name: &str) -> Option<(&Arc<ToolDef>, &Availability)> {
        self.resolve(name).map(|e| (&e.def, &e.availability))
    }

    /// Every tool with its availability, in registration order.
    pub fn all(&self) -> impl Iterator<Item = (&Arc<ToolDef>, &Availability)> {
        self.entries.iter().map(|e| (&e.def, &e.availability))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How each tool stands for `agent`: allowed by which grant, denied by which, not granted,
    /// or excluded on this daemon.
    pub fn effective(&self, agent: &Agent) -> Vec<EffectiveTool> {
        self.entries
            .iter()
            .map(|e| EffectiveTool {
                name: e.def.name.clone(),
                family: e.def.family.clone(),
                status: status_for(agent, &e.def, &e.availability),
            })
            .collect()
    }

    /// The tools `agent` can call right now (granted, or machinery of its tool mode).
    pub fn usable_by<'a>(&'a self, agent: &'a Agent) -> impl Iterator<Item = &'a Arc<ToolDef>> + 'a {
        self.entries.iter().filter(move |e| super::modes::usable(agent, &e.def, &e.availability)).map(|e| &e.def)
    }
}

fn status_for(agent: &Agent, def: &ToolDef, availability: &Availability) -> ToolStatus {
    if let Availability::Excluded { reason } = availability {
        return ToolStatus::Excluded { reason: reason.clone() };
    }
    match agent.manifest.capabilities.decide(def) {
        Decision::Allowed { by } => ToolStatus::Allowed { grant: by.to_string() },
        Decision::Denied { by } => ToolStatus::Denied { grant: by.to_string() },
        Decision::NotGranted if super::modes::is_machinery(agent.manifest.tool_mode, &def.name) => {
            ToolStatus::Allowed { grant: format!("tool_mode = \"{}\"", agent.manifest.tool_mode.as_str()) }
        }
        Decision::NotGranted => ToolStatus::NotGranted,
    }
}
