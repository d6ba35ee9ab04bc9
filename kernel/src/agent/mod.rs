//! Agent types and the agents made from them: one store, one validator, one namespace.
//!
//! Type names and running-agent names share a namespace: creating a type whose name a type or
//! a running agent already has is a `Conflict`, never an overwrite (spec §3). Reads come from
//! an in-memory copy kept in step with the database, so the hot paths (`GET /api/templates`,
//! the capability gate) never wait on SQLite.
//!
//! # Design notes
//!
//! ## Layout
//!
//! `manifest.rs`: `AgentTypeSpec` (the seven fields), `ManifestInput` (what arrives), `Manifest`
//! (validated), `validate`, TOML/JSON parsing. `source.rs`: a manifest read from a file a person
//! edits (`kennel type apply`): the same parse and `validate`, every problem with its line and
//! column (TOML through `toml`'s spanned tables, JSON through a small scanner that follows the
//! field's path). `mod.rs`: the `Agents` service — agent types and agents, one namespace,
//! in-memory copy kept in step with `store.rs`; `Agent::ensure_running`. `apply.rs`: applying a
//! type to its agents (preview and apply). `tools.rs`: family `agents`. `delivery.rs`: async
//! `agent_send` deliveries, stored (`agent_deliveries`) until delivered and resumed after a
//! restart. `binding.rs`: channels and A2A exposure bound to an agent's id (below). Workflow step agents are `ephemeral` (hidden from default lists, removed by
//! `start_ephemeral_sweeper`).
//!
//! ## Agents working together
//!
//! - **Depth.** A turn carries `depth` and the `chain` of agents that led to it. A blocking
//!   `agent_send`, each workflow step (nested runs included) and each triggered turn run one level
//!   deeper; going past `[kernel] max_agent_call_depth` is refused with `ResourceExhausted` naming
//!   the chain (`a → b → a → b`), never recursed. Async `agent_send` turns carry the depth too, so
//!   agents cannot ping-pong forever either.
//! - **Async `agent_send`** returns `{task_id}` at once; the other agent's turn runs in the
//!   background (in a session of its own per sender, labelled `from agent ID`), and its reply is
//!   appended to the caller's session as a user message `[Reply from agent …]` once no turn is
//!   running there (`Turns::deliver` takes the session lock), so the caller's next turn sees it.
//!   The delivery is stored until then, so a restart retries it (see `delivery`).
//! - **Children** (`agent_spawn`) get as grants the exact tool names that both their type and
//!   their parent allow at spawn time, and `deny = ["agent_spawn", "agent_kill"]`. **Decision:**
//!   an operator may still grant a child more later (a human decision); no agent can.
//! - **Identity is the id (issue 42).** Names are free for reuse once an agent stops, so nothing
//!   that decides who an agent is uses a name after it is first resolved:
//!   - *Reach* (`capability.rs`, `Reach`): an agent messages and stops itself and its
//!     descendants (`Agents::ensure_within_reach`); anyone else needs `agents.message_any` /
//!     `agents.kill_any`, grants that match no tool and that no glob or family gives (only the
//!     exact grant, not denied). **Decision:** grants, not a new manifest field, so the API, the
//!     TOML, the Tools inspector's grant form and `kennel agent grant` carry them unchanged.
//!   - *Bindings* (`agent/binding.rs`, table `agent_bindings`): a channel's or an A2A
//!     exposure's configured name is resolved at first use to the running agent an operator
//!     made under it (no parent, not a workflow step) and kept by id, in memory and in the
//!     database. A stopped bound agent means the channel fails its messages, naming why; the
//!     binding moves only when its agent is removed or the config names another agent.
//!     `agent_kill` refuses an agent that holds a binding (or would, at first use).
//!     **Decision:** "an operator binds it" is removing the old agent or changing the config:
//!     no new endpoint, and nothing an agent can do.
//!   - *Sessions*: `agent_send`'s receiving session is labelled by the sender's id.
//!   - *Workflows*: an `agent` step is stored with the id its name found when the workflow was
//!     saved (an unknown name is a field error); run by an agent, a step reaches only what the
//!     agent could (`agents.message_any` for another's agent step; a type's step agent is its
//!     child, capped at its grants).
//! - **Types no wider than their maker.** `Capabilities::narrowed_to` is the one rule for
//!   `agent_type_create`, `agent_spawn` and agent-run workflow steps: a grant the maker holds as
//!   written (or under `*`) and may use every tool of is kept as written; otherwise the exact
//!   tools both allow; reaches only if the maker has them; the asked-for deny list and memory
//!   scopes kept. What is dropped is named in `agent_type_create`'s answer; `agent_types.made_by`
//!   records the maker until an operator saves the type.
//!
//! ## Decisions
//!
//! - **One namespace for type and running-agent names.** Creating a type whose name a type or a
//!   running agent has is a 409; spawning an agent under another type's name is a 409 too. An
//!   agent spawned without a name takes its type's name, or `name-2`, `name-3`, … A stopped
//!   agent's name is free again (its record stays).
//! - **`tools` vs `[capabilities] tools`.** The canonical manifest keeps grants in
//!   `[capabilities] tools`. Input may use top-level `tools` (the seven-field `AgentTypeSpec`
//!   shape); both at once is a 422. Stored and returned manifests always use `capabilities`.
//! - **`deny` grants.** `[capabilities] deny = [...]` refuses tools even when `tools` allows
//!   them; children get `deny = ["agent_spawn", "agent_kill"]` this way.
//! - **Agents are addressed by id or, while running, by name** in every API path and CLI command.

mod apply;
pub mod binding;
pub(crate) mod delivery;
pub mod manifest;
pub mod source;
mod store;
pub mod tools;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;
use uuid::Uuid;

pub use manifest::{
    AgentTypeSpec, CapabilitiesInput, Manifest, ManifestFormat, ManifestInput, NAME_RULE, Name, NewCapabilities,
    ToolMode, is_valid_name, parse_manifest, to_toml, validate,
};

pub use apply::{AgentUpdate, ApplyRequest, FieldChange, TypeApplication};
pub(crate) use tools::register;

use crate::config::KernelConfig;
use crate::db::{self, Db, stored_enum};
use crate::error::{Error, FieldError, Result};
use crate::family::{Family, Services};
use crate::page::{Key, Page, PageRequest};
use crate::runtime::Runtime;
use crate::schedule::Schedules;
use crate::text::longer_than;

/// The family's part in the kernel (see [`crate::family`]). Its service is the `agent_send`
/// deliveries; [`Agents`] itself is the core's.
pub const FAMILY: Family = Family {
    name: "agent",
    open: |s| {
        let deliveries = delivery::Deliveries::open(s);
        s.provide(deliveries);
        Ok(())
    },
    register,
};

pub type AgentId = Uuid;

/// A stored, reusable manifest.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AgentType {
    #[serde(flatten)]
    pub manifest: Manifest,
    /// The agent that made it with `agent_type_create` (its grants capped at that agent's);
    /// absent when an operator made it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub made_by: Option<Uuid>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AgentStatus {
    Running,
    /// Stopped: kept, listed and found by id, its name free for a new agent.
    Stopped,
    /// Stopped and removed by an operator: no longer listed or found, but its record stays
    /// for the sessions, schedules and audit rows that name it.
    Removed,
}

stored_enum!(AgentStatus { Running = "running", Stopped = "stopped", Removed = "removed" });

/// What an agent is doing as every front shows it: its status, and a running agent under a
/// budget pause is paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AgentState {
    Running,
    /// Running, but paused by a budget: no turn starts until its reset (or a lift).
    Paused,
    Stopped,
    Removed,
}

impl AgentState {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Running => "running",
            AgentState::Paused => "paused",
            AgentState::Stopped => "stopped",
            AgentState::Removed => "removed",
        }
    }
}

/// An agent: a copy of its type's manifest (whose grants can then change on their own), a
/// goal and a status.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Agent {
    pub id: Uuid,
    pub name: String,
    pub agent_type: String,
    pub manifest: Manifest,
    pub goal: Option<String>,
    pub status: AgentStatus,
    pub parent_id: Option<Uuid>,
    /// Spawned for one workflow step: hidden from default lists, removed
    /// `[kernel] ephemeral_retention_hours` after it stops.
    pub ephemeral: bool,
    /// Paused for going over a daily budget: no turn starts until then (or a lift).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<Pause>,
    /// When an operator last lifted a budget pause: the day's budget counts from then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_lifted_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// Why and until when an agent takes no turns.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Pause {
    /// The budget's next reset (RFC 3339).
    pub until: String,
    pub reason: String,
}

impl Agent {
    /// An agent as it would be made from `manifest`, never stored: what previews of a type's
    /// effective set ask the registry about.
    pub fn planned(manifest: Manifest) -> Agent {
        Agent {
            id: Uuid::nil(),
            name: manifest.name.clone(),
            agent_type: manifest.name.clone(),
            manifest,
            goal: None,
            status: AgentStatus::Running,
            parent_id: None,
            ephemeral: false,
            paused: None,
            budget_lifted_at: None,
            created_at: String::new(),
            updated_at: String::new(),
        }
    }

    /// The pause in force at `now` (RFC 3339), if any.
    pub fn paused_at(&self, now: &str) -> Option<&Pause> {
        self.paused.as_ref().filter(|p| p.until.as_str() > now)
    }

    /// Running but taking no turns, paused by a budget at `now` (RFC 3339).
    pub fn is_paused(&self, now: &str) -> bool {
        self.is_running() && self.paused_at(now).is_some()
    }

    /// The state fronts show at `now` (RFC 3339).
    pub fn state_at(&self, now: &str) -> AgentState {
        match self.status {
            AgentStatus::Running if self.is_paused(now) => AgentState::Paused,
            AgentStatus::Running => AgentState::Running,
            AgentStatus::Stopped => AgentState::Stopped,
            AgentStatus::Removed => AgentState::Removed,
        }
    }

    pub fn is_running(&self) -> bool {
        self.status == AgentStatus::Running
    }

    /// Refuses work for a stopped agent. A stopped agent is a state that does not allow the
    /// call (`Conflict`, 409), not a missing prerequisite.
    pub fn ensure_running(&self) -> Result<()> {
        if self.is_running() {
            Ok(())
        } else {
            Err(Error::conflict(format!(
                "agent `{0}` is stopped: start it with `kennel agent start {0}` or Start on its page",
                self.name
            )))
        }
    }
}

/// What to spawn: from which type, under which name, with which goal.
#[derive(Debug, Clone, Default)]
pub struct SpawnRequest {
    pub agent_type: String,
    pub name: Option<String>,
    pub goal: Option<String>,
    pub parent: Option<AgentId>,
    /// Replaces the type's tool grants (a child's are narrowed to what its parent may use).
    pub tools: Option<Vec<crate::capability::Grant>>,
    /// For one workflow step (see [`Agent::ephemeral`]).
    pub ephemeral: bool,
}

const MAX_GOAL: usize = 10_000;

/// Denied to every agent spawned by another agent (spec §3).
pub const CHILD_DENIED: [&str; 2] = ["agent_spawn", "agent_kill"];

#[derive(Default)]
struct State {
    types: BTreeMap<String, Arc<AgentType>>,
    /// Each type as the API lists it, serialised once when it is stored or loaded: the list
    /// asked for most (`GET /api/templates`) copies these per request instead of serialising
    /// every manifest again. Changed only with `types` ([`State::put_type`], [`State::remove_type`]).
    types_json: BTreeMap<String, Arc<RawValue>>,
    agents: HashMap<AgentId, Arc<Agent>>,
    /// By binding key (`channel:NAME`): see [`binding`].
    bindings: HashMap<String, binding::Bound>,
}

impl State {
    fn put_type(&mut self, t: Arc<AgentType>) -> Result<()> {
        let json =
            serde_json::value::to_raw_value(&*t).map_err(|e| Error::internal(format!("agent type as JSON: {e}")))?;
        self.types_json.insert(t.manifest.name.clone(), Arc::from(json));
        self.types.insert(t.manifest.name.clone(), t);
        Ok(())
    }

    fn remove_type(&mut self, name: &str) {
        self.types.remove(name);
        self.types_json.remove(name);
    }

    fn running_agent_named(&self, name: &str) -> Option<&Arc<Agent>> {
        self.agents.values().find(|a| a.is_running() && a.name == name)
    }

    /// The one stopped (not removed) agent named `name`; several are a conflict that lists
    /// their ids, none is not found.
    fn stopped_agent_named(&self, name: &str) -> Result<&Arc<Agent>> {
        let stopped: Vec<&Arc<Agent>> =
            self.agents.values().filter(|a| a.status == AgentStatus::Stopped && a.name == name).collect();
        match stopped.as_slice() {
            [] => Err(Error::not_found(format!("no agent `{name}`"))),
            [one] => Ok(one),
            several => {
                let ids: Vec<String> = several.iter().map(|a| a.id.to_string()).collect();
                Err(Error::conflict(format!(
                    "no agent named `{name}` runs, and {} stopped ones have that name: name one by its id ({})",
                    several.len(),
                    ids.join(", ")
                )))
            }
        }
    }

    /// Why `name` cannot be taken by a new type or agent, if it cannot.
    fn name_conflict(&self, name: &str, own_type: Option<&str>) -> Option<Error> {
        if self.types.contains_key(name) && own_type != Some(name) {
            return Some(Error::conflict(format!("an agent type named `{name}` already exists")));
        }
        self.running_agent_named(name)
            .map(|a| Error::conflict(format!("an agent named `{name}` is running (id {})", a.id)))
    }
}

pub struct Agents {
    db: Db,
    /// The providers config.toml defines: the only ones an agent type may name (replaced
    /// when the providers are edited).
    providers: std::sync::RwLock<Vec<String>>,
    state: RwLock<State>,
    /// Serialises writes and reloads so a reload can never put back a stale copy.
    write: tokio::sync::Mutex<()>,
}

impl Agents {
    pub(crate) async fn load(db: Db, providers: Vec<String>) -> Result<Agents> {
        let agents = Agents {
            db,
            providers: std::sync::RwLock::new(providers),
            state: RwLock::default(),
            write: tokio::sync::Mutex::new(()),
        };
        agents.reload().await?;
        Ok(agents)
    }

    /// Re-reads everything from the database (after another process wrote to it).
    pub async fn reload(&self) -> Result<()> {
        let _w = self.write.lock().await;
        let mut state = State {
            types: BTreeMap::new(),
            types_json: BTreeMap::new(),
            agents: store::load_agents(&self.db).await?.into_iter().map(|a| (a.id, Arc::new(a))).collect(),
            bindings: binding::load(&self.db).await?.into_iter().collect(),
        };
        for t in store::load_types(&self.db).await? {
            state.put_type(Arc::new(t))?;
        }
        *self.state.write().expect("agent state lock") = state;
        Ok(())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().expect("agent state lock")
    }

    // ---- agent types ----

    /// All agent types, by name.
    pub fn types(&self) -> Vec<Arc<AgentType>> {
        self.read().types.values().cloned().collect()
    }

    /// A page of the agent types, by name, each already serialised as the API lists it.
    pub fn types_page_json(&self, page: &PageRequest) -> Result<Page<Arc<RawValue>>> {
        use std::ops::Bound::{Excluded, Unbounded};
        let after = page.after(Key::Name)?;
        let state = self.read();
        // Only the page's own entries are copied out (an Arc each), straight from the sorted map.
        let rows: Vec<(&str, Arc<RawValue>)> = match after {
            Some(cursor) => {
                state.types_json.range::<str, _>((Excluded(cursor), Unbounded)).take(page.limit as usize + 1)
            }
            None => state.types_json.range::<str, _>(..).take(page.limit as usize + 1),
        }
        .map(|(name, json)| (name.as_str(), json.clone()))
        .collect();
        let total = state.types_json.len() as u64;
        Ok(Page::from_rows(rows, page, total, |(name, _)| name.to_string()).map(|(_, json)| json))
    }

    /// The names of the agent types whose manifests list the skill `skill`, sorted.
    pub fn types_using_skill(&self, skill: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .read()
            .types
            .values()
            .filter(|t| t.manifest.skills.iter().any(|s| s == skill))
            .map(|t| t.manifest.name.clone())
            .collect();
        names.sort();
        names
    }

    /// Who loads the skill `skill` besides `agent`: the agent types that list it other than
    /// those `agent` made (its own type too, when an operator made it: every agent spawned
    /// from it later would carry the skill), and the agents whose manifests list it other
    /// than `agent` and its descendants — each as "agent type `x`" or "agent `y`", sorted.
    pub fn others_loading_skill(&self, skill: &str, agent: &Agent) -> Vec<String> {
        let lists = |m: &Manifest| m.skills.iter().any(|s| s == skill);
        let (types, agents) = {
            let state = self.read();
            let types: Vec<String> = state
                .types
                .values()
                .filter(|t| lists(&t.manifest) && t.made_by != Some(agent.id))
                .map(|t| format!("agent type `{}`", t.manifest.name))
                .collect();
            let agents: Vec<Arc<Agent>> = state
                .agents
                .values()
                .filter(|a| a.status != AgentStatus::Removed && a.id != agent.id && lists(&a.manifest))
                .cloned()
                .collect();
            (types, agents)
        };
        let mut agents: Vec<String> = agents
            .into_iter()
            .filter(|a| !self.descends_from(a, agent.id))
            .map(|a| format!("agent `{}`", a.name))
            .collect();
        agents.sort();
        [types, agents].concat()
    }

    pub fn get_type(&self, name: &str) -> Result<Arc<AgentType>> {
        self.read().types.get(name).cloned().ok_or_else(|| Error::not_found(format!("no agent type named `{name}`")))
    }

    /// Validates and stores a new agent type, made by an operator.
    pub async fn create_type(&self, input: ManifestInput) -> Result<Arc<AgentType>> {
        let manifest = self.validate(input).await?;
        self.insert_type(manifest, None).await
    }

    /// Validates and stores a new agent type made by the agent `maker`, its grants capped at
    /// `maker`'s own over `tools` (every tool of the daemon; see
    /// [`crate::capability::Capabilities::narrowed_to`]). Also returns what was dropped.
    pub async fn create_type_by_agent(
        &self,
        input: ManifestInput,
        maker: &Agent,
        tools: &[Arc<crate::tool::ToolDef>],
    ) -> Result<(Arc<AgentType>, Vec<String>)> {
        let mut manifest = self.validate(input).await?;
        let (capped, dropped) =
            manifest.capabilities.narrowed_to(&maker.manifest.capabilities, tools.iter().map(|t| t.as_ref()));
        manifest.capabilities = capped;
        Ok((self.insert_type(manifest, Some(maker.id)).await?, dropped))
    }

    async fn insert_type(&self, manifest: Manifest, made_by: Option<AgentId>) -> Result<Arc<AgentType>> {
        let _w = self.write.lock().await;
        if let Some(e) = self.read().name_conflict(&manifest.name, None) {
            return Err(e);
        }
        let now = db::now();
        self.store_type(AgentType { manifest, made_by, created_at: now.clone(), updated_at: now }, true).await
    }

    /// Replaces an existing type's whole manifest. Agents already made from it keep theirs.
    pub async fn replace_type(&self, name: &str, input: ManifestInput) -> Result<Arc<AgentType>> {
        let manifest = self.validate(named(name, input)?).await?;
        let _w = self.write.lock().await;
        let created_at = self.get_type(name)?.created_at.clone();
        // An operator's whole new manifest: the type is the operator's from now on.
        self.store_type(AgentType { manifest, made_by: None, created_at, updated_at: db::now() }, false).await
    }

    /// Creates the type `input` names, or replaces it if it exists (`kennel type apply`);
    /// whether it was created. One decision under the write lock, so two savers never both
    /// create.
    pub async fn save_type(&self, input: ManifestInput) -> Result<(bool, Arc<AgentType>)> {
        let manifest = self.validate(input).await?;
        let _w = self.write.lock().await;
        let existing = self.read().types.get(&manifest.name).map(|t| t.created_at.clone());
        let now = db::now();
        match existing {
            Some(created_at) => {
                let t = AgentType { manifest, made_by: None, created_at, updated_at: now };
                Ok((false, self.store_type(t, false).await?))
            }
            None => {
                if let Some(e) = self.read().name_conflict(&manifest.name, None) {
                    return Err(e);
                }
                let t = AgentType { manifest, made_by: None, created_at: now.clone(), updated_at: now };
                Ok((true, self.store_type(t, true).await?))
            }
        }
    }

    /// Writes a type (new or replacing) and its in-memory copy; the caller holds `write`.
    async fn store_type(&self, t: AgentType, new: bool) -> Result<Arc<AgentType>> {
        if new {
            store::insert_type(&self.db, &t).await?;
        } else {
            store::update_type(&self.db, &t).await?;
        }
        let t = Arc::new(t);
        self.state.write().expect("agent state lock").put_type(t.clone())?;
        Ok(t)
    }

    /// The one validator, and the one rule it cannot know: a named provider must be one
    /// config.toml defines (else the type's agents fail only when they first think). Its
    /// refusal joins the validator's others.
    async fn validate(&self, input: ManifestInput) -> Result<Manifest> {
        let configured = self.providers();
        let named = std::iter::once(("provider".to_string(), input.provider.clone())).chain(
            input
                .fallbacks
                .iter()
                .flatten()
                .enumerate()
                .map(|(i, f)| (format!("fallbacks[{i}].provider"), f.provider.clone())),
        );
        let unknown: Vec<FieldError> = named
            .filter_map(|(field, p)| p.filter(|p| !p.is_empty() && !configured.contains(p)).map(|p| (field, p)))
            .map(|(field, p)| FieldError {
                field,
                message: format!(
                    "`{p}` is not a provider of this daemon (configured: {})",
                    self.configured_providers()
                ),
            })
            .collect();
        match validate_off_runtime(input).await {
            Ok(m) if unknown.is_empty() => Ok(m),
            Ok(_) => Err(Error::invalid_fields(unknown)),
            Err(mut e) if !e.fields.is_empty() => {
                e.fields.extend(unknown);
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// The providers an agent type may name.
    pub fn providers(&self) -> Vec<String> {
        self.providers.read().expect("providers lock").clone()
    }

    pub(crate) fn set_providers(&self, names: Vec<String>) {
        *self.providers.write().expect("providers lock") = names;
    }

    fn configured_providers(&self) -> String {
        let providers = self.providers();
        if providers.is_empty() {
            "none; add a [providers.NAME] section to config.toml".into()
        } else {
            providers.join(", ")
        }
    }

    pub async fn delete_type(&self, name: &str) -> Result<()> {
        let _w = self.write.lock().await;
        self.get_type(name)?;
        store::delete_type(&self.db, name).await?;
        self.state.write().expect("agent state lock").remove_type(name);
        Ok(())
    }

    // ---- agents ----

    /// Every agent not removed, oldest first.
    pub fn list(&self) -> Vec<Arc<Agent>> {
        let mut all: Vec<_> =
            self.read().agents.values().filter(|a| a.status != AgentStatus::Removed).cloned().collect();
        all.sort_by_key(|a| a.id);
        all
    }

    /// A page of the agents, oldest first (ids are time-ordered, so their text sorts so too);
    /// workflow step agents only when asked for.
    pub fn page(&self, page: &PageRequest, with_ephemeral: bool) -> Result<Page<Arc<Agent>>> {
        let agents = self.list().into_iter().filter(|a| with_ephemeral || !a.ephemeral).collect();
        Ok(Page::of_sorted(agents, page, page.after(Key::Id)?, |a| a.id.to_string()))
    }

    /// How many workflow step agents are kept (hidden from default lists).
    pub fn ephemeral_count(&self) -> usize {
        self.read().agents.values().filter(|a| a.ephemeral && a.status != AgentStatus::Removed).count()
    }

    /// Removes the stopped workflow step agents that stopped before `before` (RFC 3339): their
    /// records stay for the sessions and audit rows that name them. How many it removed.
    pub async fn remove_stopped_ephemeral(&self, before: &str) -> Result<usize> {
        let due: Vec<Uuid> = self
            .read()
            .agents
            .values()
            .filter(|a| a.ephemeral && a.status == AgentStatus::Stopped && a.updated_at.as_str() < before)
            .map(|a| a.id)
            .collect();
        for id in &due {
            self.remove(&id.to_string()).await?;
        }
        Ok(due.len())
    }

    /// Finds an agent by id, or by name: the running agent of that name, else the one stopped
    /// agent of that name (so `kennel agent start helper` and a stopped agent's clear refusal
    /// work by name; several stopped namesakes are named by id). A removed agent is not found.
    pub fn get(&self, id_or_name: &str) -> Result<Arc<Agent>> {
        let state = self.read();
        let found = match Uuid::parse_str(id_or_name) {
            Ok(id) => state.agents.get(&id).filter(|a| a.status != AgentStatus::Removed),
            Err(_) => match state.running_agent_named(id_or_name) {
                Some(running) => Some(running),
                None => return state.stopped_agent_named(id_or_name).cloned(),
            },
        };
        found.cloned().ok_or_else(|| Error::not_found(format!("no agent `{id_or_name}`")))
    }

    /// The id of the agent named by `who` (a running agent's name, or any agent's id, a
    /// stopped or removed one's too: records keep naming them); blank or absent means nobody.
    /// Records that point at agents (task assignees) store this id; filters select by it. An
    /// unknown agent is `NotFound`.
    pub fn id_of(&self, who: Option<&str>) -> Result<Option<String>> {
        let Some(who) = who.map(str::trim).filter(|w| !w.is_empty()) else { return Ok(None) };
        let state = self.read();
        let found = match Uuid::parse_str(who) {
            Ok(id) => state.agents.get(&id),
            Err(_) => state.running_agent_named(who),
        };
        found.map(|a| Some(a.id.to_string())).ok_or_else(|| Error::not_found(format!("no agent `{who}`")))
    }

    /// Like [`Agents::id_of`] for an input field that refers to an agent (a task's `assignee`):
    /// an unknown agent is an invalid value of that field.
    pub fn id_for_field(&self, field: &str, who: Option<&str>) -> Result<Option<String>> {
        self.id_of(who).map_err(|e| e.on_field(field))
    }

    /// The name of the agent with this id (running or stopped), or the id itself if none has it.
    pub fn name_of(&self, id: &str) -> String {
        Uuid::parse_str(id).ok().and_then(|id| self.get_by_id(id)).map_or_else(|| id.to_string(), |a| a.name.clone())
    }

    pub fn get_by_id(&self, id: AgentId) -> Option<Arc<Agent>> {
        self.read().agents.get(&id).cloned()
    }

    pub async fn spawn(&self, req: SpawnRequest) -> Result<Arc<Agent>> {
        if let Some(goal) = &req.goal
            && longer_than(goal, MAX_GOAL)
        {
            return Err(Error::invalid_fields(vec![FieldError {
                field: "goal".into(),
                message: format!("is at most {MAX_GOAL} characters"),
            }]));
        }
        if let Some(name) = &req.name
            && !is_valid_name(name)
        {
            return Err(Error::invalid_fields(vec![FieldError {
                field: "name".into(),
                message: format!("`{name}` is not a valid name: {NAME_RULE}"),
            }]));
        }
        let _w = self.write.lock().await;
        let agent_type = self.get_type(&req.agent_type).map_err(|e| e.on_field("template"))?;
        let name = {
            let state = self.read();
            match req.name {
                Some(name) => {
                    if let Some(e) = state.name_conflict(&name, Some(&req.agent_type)) {
                        return Err(e);
                    }
                    name
                }
                None => free_name(&state, &req.agent_type),
            }
        };
        let now = db::now();
        let mut manifest = agent_type.manifest.clone();
        if let Some(tools) = req.tools {
            manifest.capabilities.tools = tools;
        }
        if req.parent.is_some() {
            // No fork bombs: a child may not spawn or kill unless an operator allows it later.
            for denied in CHILD_DENIED {
                let grant = crate::capability::Grant::parse(denied).expect("valid built-in pattern");
                if !manifest.capabilities.deny.contains(&grant) {
                    manifest.capabilities.deny.push(grant);
                }
            }
        }
        let agent = Agent {
            id: Uuid::now_v7(),
            name,
            agent_type: req.agent_type,
            manifest,
            goal: req.goal.filter(|g| !g.is_empty()),
            status: AgentStatus::Running,
            parent_id: req.parent,
            ephemeral: req.ephemeral,
            paused: None,
            budget_lifted_at: None,
            created_at: now.clone(),
            updated_at: now,
        };
        store::insert_agent(&self.db, &agent).await?;
        Ok(self.cache(agent))
    }

    /// Marks a stopped agent removed: it is no longer listed or found (see
    /// [`AgentStatus::Removed`]). A running agent must be stopped first.
    pub async fn remove(&self, id_or_name: &str) -> Result<Arc<Agent>> {
        self.update(id_or_name, |a| {
            if a.is_running() {
                return Err(Error::conflict(format!("agent `{}` is running: stop it before removing it", a.name)));
            }
            a.status = AgentStatus::Removed;
            Ok(())
        })
        .await
    }

    /// Pauses an agent over a budget until `until`, decided on a record whose last lift was
    /// `seen_lift`: `Some(true)` when it was not paused so already (the operators are told
    /// once), `Some(false)` when it was, `None` when an operator lifted the pause since (the
    /// lift stands, nothing changes).
    pub async fn pause(&self, id: AgentId, until: &str, reason: &str, seen_lift: Option<&str>) -> Result<Option<bool>> {
        let mut outcome = None;
        self.update(&id.to_string(), |a| {
            if a.budget_lifted_at.as_deref() != seen_lift {
                return Ok(());
            }
            outcome = Some(a.paused.as_ref().is_none_or(|p| p.until != until));
            a.paused = Some(Pause { until: until.to_string(), reason: reason.to_string() });
            Ok(())
        })
        .await?;
        Ok(outcome)
    }

    /// Lifts an agent's budget pause at `now`: its budgets count from then.
    pub async fn lift_pause(&self, id_or_name: &str, now: &str) -> Result<Arc<Agent>> {
        self.update(id_or_name, |a| {
            a.paused = None;
            a.budget_lifted_at = Some(now.to_string());
            Ok(())
        })
        .await
    }

    /// Stops an agent. Its record, sessions and audit stay.
    pub async fn stop(&self, id_or_name: &str) -> Result<Arc<Agent>> {
        self.update(id_or_name, |a| {
            a.status = AgentStatus::Stopped;
            Ok(())
        })
        .await
    }

    /// Starts a stopped agent again, with its sessions and history. Refused while another
    /// running agent holds its name (the name was free for a new agent while it was stopped).
    pub async fn start(&self, id_or_name: &str) -> Result<Arc<Agent>> {
        self.update(id_or_name, |a| {
            if a.is_running() {
                return Ok(());
            }
            if let Some(other) = self.read().running_agent_named(&a.name) {
                return Err(Error::conflict(format!(
                    "an agent named `{}` is running (id {}): stop it first, or keep this one stopped",
                    a.name, other.id
                )));
            }
            a.status = AgentStatus::Running;
            Ok(())
        })
        .await
    }

    /// Sets the agent's goal; later prompts show it. Empty clears it.
    pub async fn set_goal(&self, id_or_name: &str, goal: &str) -> Result<Arc<Agent>> {
        if longer_than(goal, MAX_GOAL) {
            return Err(Error::invalid(format!("a goal is at most {MAX_GOAL} characters")));
        }
        self.update(id_or_name, |a| {
            a.goal = Some(goal.trim().to_string()).filter(|g| !g.is_empty());
            Ok(())
        })
        .await
    }

    /// The agents from `agent` up to the root of its spawn tree, starting with its parent.
    pub fn ancestors(&self, agent: &Agent) -> Vec<Arc<Agent>> {
        let state = self.read();
        let mut out: Vec<Arc<Agent>> = Vec::new();
        let mut next = agent.parent_id;
        while let Some(id) = next {
            // A cycle cannot be made through spawn, but a hand-edited database could hold one.
            if out.iter().any(|a| a.id == id) {
                break;
            }
            match state.agents.get(&id) {
                Some(parent) => {
                    next = parent.parent_id;
                    out.push(parent.clone());
                }
                None => break,
            }
        }
        out
    }

    /// Whether `agent` is `ancestor`'s child, grandchild, and so on.
    pub fn descends_from(&self, agent: &Agent, ancestor: AgentId) -> bool {
        self.ancestors(agent).iter().any(|a| a.id == ancestor)
    }

    /// Refuses `caller` acting on `target` (`what`: "message", "stop") unless `target` is
    /// `caller` itself or one of its descendants, or `caller` holds `reach`'s grant.
    pub fn ensure_within_reach(
        &self,
        caller: &Agent,
        target: &Agent,
        reach: crate::capability::Reach,
        what: &str,
    ) -> Result<()> {
        if target.id == caller.id
            || self.descends_from(target, caller.id)
            || caller.manifest.capabilities.reaches(reach)
        {
            return Ok(());
        }
        Err(Error::forbidden(format!(
            "agent `{}` is not one of yours (spawned by you or by your children): to {what} it you need the grant `{}`, which only an operator gives",
            target.name,
            reach.pattern()
        )))
    }

    /// Replaces an agent's `[capabilities]`, validated like any manifest.
    pub async fn set_capabilities(&self, id_or_name: &str, caps: NewCapabilities) -> Result<Arc<Agent>> {
        let capabilities = manifest::validate_capabilities(caps.into())?;
        self.update(id_or_name, |a| {
            a.manifest.capabilities = capabilities;
            Ok(())
        })
        .await
    }

    /// Adds one grant pattern to an agent (no-op if present).
    pub async fn grant(&self, id_or_name: &str, pattern: &str) -> Result<Arc<Agent>> {
        let grant = parse_grant(pattern)?;
        self.update(id_or_name, |a| {
            if !a.manifest.capabilities.tools.contains(&grant) {
                a.manifest.capabilities.tools.push(grant);
            }
            Ok(())
        })
        .await
    }

    /// Removes one grant pattern; `NotFound` if the agent does not have it.
    pub async fn revoke(&self, id_or_name: &str, pattern: &str) -> Result<Arc<Agent>> {
        let grant = parse_grant(pattern)?;
        self.update(id_or_name, |a| {
            let before = a.manifest.capabilities.tools.len();
            a.manifest.capabilities.tools.retain(|g| *g != grant);
            if a.manifest.capabilities.tools.len() == before {
                return Err(Error::not_found(format!("agent `{}` has no grant `{pattern}`", a.name)));
            }
            Ok(())
        })
        .await
    }

    /// Read-modify-write of one agent under the write lock.
    async fn update(&self, id_or_name: &str, change: impl FnOnce(&mut Agent) -> Result<()>) -> Result<Arc<Agent>> {
        let _w = self.write.lock().await;
        let mut agent = Agent::clone(&*self.get(id_or_name)?);
        change(&mut agent)?;
        agent.updated_at = db::now();
        store::update_agent(&self.db, &agent).await?;
        Ok(self.cache(agent))
    }

    fn cache(&self, agent: Agent) -> Arc<Agent> {
        let agent = Arc::new(agent);
        self.state.write().expect("agent state lock").agents.insert(agent.id, agent.clone());
        agent
    }
}

/// How often stopped workflow step agents past their retention are looked for.
const EPHEMERAL_SWEEP: std::time::Duration = std::time::Duration::from_secs(600);

/// Removes stopped workflow step agents `[kernel] ephemeral_retention_hours` after they
/// stopped, at start and every ten minutes. First it stops the step agents the last run left
/// running (a crash mid-step): no workflow run survives a restart.
pub(crate) fn start_ephemeral_sweeper(services: &Services) {
    let (agents, runtime) = (services.need::<Agents>(), services.get::<Runtime>().clone());
    let KernelConfig { ephemeral_retention_hours, .. } = services.config().kernel;
    let retention = chrono::Duration::hours(ephemeral_retention_hours as i64);
    let started = db::now();
    tokio::spawn(async move {
        let left: Vec<Arc<Agent>> =
            agents.list().into_iter().filter(|a| a.ephemeral && a.is_running() && a.created_at < started).collect();
        for agent in left {
            if let Err(e) = runtime.stop_agent(&agent.id.to_string()).await {
                tracing::warn!(agent = %agent.name, error = %e, "stopping a workflow step agent the last run left failed");
            }
        }
        let mut tick = tokio::time::interval(EPHEMERAL_SWEEP);
        loop {
            tick.tick().await;
            let before = crate::db::timestamp(chrono::Utc::now() - retention);
            match agents.remove_stopped_ephemeral(&before).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(agents = n, "workflow step agents past their retention were removed"),
                Err(e) => tracing::warn!(error = %e, "removing old workflow step agents failed"),
            }
        }
    });
}

/// Spawns an agent and puts its manifest's `[[cron]]` jobs in the schedule store: how every
/// front and `agent_spawn` spawn an agent (a workflow step agent, which has no cron jobs, is
/// spawned by [`Agents::spawn`] alone).
pub async fn spawn_with_cron(agents: &Agents, schedules: &Schedules, req: SpawnRequest) -> Result<Arc<Agent>> {
    let agent = agents.spawn(req).await?;
    schedules.seed_manifest(&agent).await?;
    Ok(agent)
}

/// Validates a manifest on the blocking pool: its `[[cron]]` blocks are parsed and checked
/// for a matching date, CPU work kept off the runtime's workers.
async fn validate_off_runtime(input: ManifestInput) -> Result<Manifest> {
    crate::schedule::cron::off_runtime(move || validate(input)).await?
}

fn parse_grant(pattern: &str) -> Result<crate::capability::Grant> {
    crate::capability::Grant::parse(pattern)
        .map_err(|message| Error::invalid_fields(vec![FieldError { field: "pattern".into(), message }]))
}

/// The type's own name if free, else `name-2`, `name-3`, …
fn free_name(state: &State, type_name: &str) -> String {
    if state.name_conflict(type_name, Some(type_name)).is_none() {
        return type_name.to_string();
    }
    (2..)
        .map(|n| {
            let base = &type_name[..type_name.len().min(58)];
            format!("{base}-{n}")
        })
        .find(|candidate| state.name_conflict(candidate, None).is_none())
        .expect("an unbounded range always yields a free name")
}

/// `input` as the type `name`: a `name` in it must be that one (a type cannot be renamed).
fn named(name: &str, mut input: ManifestInput) -> Result<ManifestInput> {
    match &input.name {
        Some(n) if n != name => Err(Error::invalid_fields(vec![FieldError {
            field: "name".into(),
            message: format!("`{n}` differs from `{name}` in the path; a type cannot be renamed"),
        }])),
        _ => {
            input.name = Some(name.to_string());
            Ok(input)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every front shows this state: a budget pause shows while it lasts, on a running agent.
    #[test]
    fn a_running_agent_under_a_pause_shows_paused_until_the_pause_ends() {
        let manifest = validate(serde_json::from_value(serde_json::json!({"name": "payer"})).unwrap()).unwrap();
        let mut agent = Agent {
            id: Uuid::now_v7(),
            name: "payer".into(),
            agent_type: "payer".into(),
            manifest,
            goal: None,
            status: AgentStatus::Running,
            parent_id: None,
            ephemeral: false,
            paused: Some(Pause { until: "2026-12-05T00:00:00Z".into(), reason: "daily budget".into() }),
            budget_lifted_at: None,
            created_at: "2026-12-04T00:00:00Z".into(),
            updated_at: "2026-12-04T00:00:00Z".into(),
        };
        assert_eq!(agent.state_at("2026-12-04T12:00:00Z"), AgentState::Paused);
        assert_eq!(agent.state_at("2026-12-05T00:00:00Z"), AgentState::Running, "the pause ends at its reset");
        agent.status = AgentStatus::Stopped;
        assert_eq!(agent.state_at("2026-12-04T12:00:00Z"), AgentState::Stopped, "a stopped agent is not paused");
        agent.status = AgentStatus::Removed;
        assert_eq!(agent.state_at("2026-12-04T12:00:00Z").as_str(), "removed");
    }

    /// Replacing an agent's grants judges the grants alone: a `[[cron]]` it stored before a
    /// rule that now refuses it does not keep an operator from changing them.
    #[tokio::test]
    async fn grants_change_though_a_stored_cron_block_is_no_longer_valid() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::db::open_for_test(dir.path()).await;
        let input: ManifestInput = serde_json::from_value(serde_json::json!({
            "name": "keeper", "tools": ["read_file"], "cron": [{"schedule": "0 9 * * *", "prompt": "Look around."}],
        }))
        .unwrap();
        let mut manifest = validate(input).unwrap();
        // As a later rule would see it: not an expression it takes.
        manifest.cron[0].schedule = "61 * * * *".into();
        let at = crate::db::now();
        let agent = Agent {
            id: Uuid::now_v7(),
            name: "keeper".into(),
            agent_type: "keeper".into(),
            manifest,
            goal: None,
            status: AgentStatus::Running,
            parent_id: None,
            ephemeral: false,
            paused: None,
            budget_lifted_at: None,
            created_at: at.clone(),
            updated_at: at,
        };
        store::insert_agent(&db, &agent).await.unwrap();
        let agents = Agents::load(db, Vec::new()).await.unwrap();

        let caps = NewCapabilities { tools: vec!["files.*".into()], deny: None, memory_read: None, memory_write: None };
        let changed = agents.set_capabilities("keeper", caps).await.expect("the grants are changed");
        assert_eq!(changed.manifest.capabilities.tools, vec![parse_grant("files.*").unwrap()]);
        assert_eq!(changed.manifest.cron[0].schedule, "61 * * * *", "the rest is kept as stored");
        let bad = NewCapabilities { tools: vec!["a.b.c".into()], deny: None, memory_read: None, memory_write: None };
        let refused = agents.set_capabilities("keeper", bad).await.unwrap_err();
        assert_eq!(refused.fields[0].field, "capabilities.tools[0]", "{refused}");
    }
}
