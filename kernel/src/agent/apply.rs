//! Applying an agent type to the agents made from it. An agent keeps its own copy of its
//! type's manifest (by design: its grants can change on their own), so editing a type changes
//! no agent. An operator can apply the type: first a preview of what each agent would gain and
//! lose (grants, prompt, model, limits, …), then the change, refused if the type was edited
//! after the preview so nothing unseen is applied.
//!
//! The agent's name, goal, status and history stay. A child agent keeps its tool grants
//! (narrowed to its parent's at spawn) and the denials every child gets
//! ([`super::CHILD_DENIED`]). `[[cron]]` blocks are seeded into schedules once per
//! agent, so a changed block does not re-seed; the preview says so.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::{Agent, AgentStatus, Agents, CHILD_DENIED, Manifest, store};
use crate::db;
use crate::error::{Error, Result};

/// Applying a type, or its preview.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyRequest {
    /// Only show what would change (the default); `false` applies it.
    #[serde(default = "yes")]
    pub dry_run: bool,
    /// The type's `updated_at` from the preview: applying is refused (`Conflict`) if the type
    /// was saved since, so what was previewed is what is applied.
    pub expected_updated_at: Option<String>,
}

fn yes() -> bool {
    true
}

/// What applying a type does (or did) to each agent made from it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TypeApplication {
    pub agent_type: String,
    /// The version of the type this is about: pass it back as `expected_updated_at`.
    pub type_updated_at: String,
    /// Whether the agents were changed (`false`: a preview).
    pub applied: bool,
    /// Every running or stopped agent of the type, those already matching it too.
    pub agents: Vec<AgentUpdate>,
}

impl TypeApplication {
    /// How many agents applying changes (or changed).
    pub fn changing(&self) -> usize {
        self.agents.iter().filter(|a| !a.changes.is_empty()).count()
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AgentUpdate {
    pub agent_id: String,
    pub name: String,
    pub status: AgentStatus,
    /// Empty: the agent already matches its type.
    pub changes: Vec<FieldChange>,
}

/// One manifest field that differs between an agent and its type.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct FieldChange {
    /// `system_prompt`, `model`, `capabilities.tools`, `limits.max_iterations`, …
    pub field: String,
    /// Lists (grants, skills): the items the agent gains …
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<String>,
    /// … and those it loses.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    /// Other values: before and after, as text (JSON for what is not text). `None`: unset.
    pub before: Option<String>,
    pub after: Option<String>,
    /// What applying this does not do, when there is something (a `[[cron]]` block).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Agents {
    /// Applies the type `name` to every agent made from it, or (`dry_run`) only says what
    /// that would change.
    pub async fn apply_type(&self, name: &str, req: &ApplyRequest) -> Result<TypeApplication> {
        // Only applying writes: a preview (every editor page shows one) reads the cached
        // state without waiting on writers.
        let _w = if req.dry_run { None } else { Some(self.write.lock().await) };
        let agent_type = self.get_type(name)?;
        if !req.dry_run
            && let Some(expected) = req.expected_updated_at.as_deref()
            && expected != agent_type.updated_at
        {
            return Err(Error::conflict(format!(
                "type `{name}` was saved at {} after the preview you saw ({expected}): preview it again",
                agent_type.updated_at
            )));
        }
        let mut agents: Vec<Arc<Agent>> = self
            .read()
            .agents
            .values()
            .filter(|a| a.agent_type == name && a.status != AgentStatus::Removed)
            .cloned()
            .collect();
        agents.sort_by(|a, b| (&a.name, a.id).cmp(&(&b.name, b.id)));

        let mut updates = Vec::with_capacity(agents.len());
        let mut changed = Vec::new();
        for agent in agents {
            let target = target_manifest(&agent_type.manifest, &agent);
            let changes = differences(&agent.manifest, &target);
            if !changes.is_empty() && !req.dry_run {
                let mut next = Agent::clone(&agent);
                next.manifest = target;
                next.updated_at = db::now();
                changed.push(next);
            }
            updates.push(AgentUpdate {
                agent_id: agent.id.to_string(),
                name: agent.name.clone(),
                status: agent.status,
                changes,
            });
        }
        store::update_agents(&self.db, &changed).await?;
        for agent in changed {
            self.cache(agent);
        }
        Ok(TypeApplication {
            agent_type: name.to_string(),
            type_updated_at: agent_type.updated_at.clone(),
            applied: !req.dry_run,
            agents: updates,
        })
    }
}

/// The manifest an agent of this type gets: the type's. A child keeps its own tool grants
/// (narrowed, at its spawn, to what its parent may use: applying must not widen them) and
/// its standing denials.
fn target_manifest(of_type: &Manifest, agent: &Agent) -> Manifest {
    let mut manifest = of_type.clone();
    if agent.parent_id.is_some() {
        manifest.capabilities.tools = agent.manifest.capabilities.tools.clone();
        for denied in CHILD_DENIED {
            let grant = crate::capability::Grant::parse(denied).expect("valid built-in pattern");
            if !manifest.capabilities.deny.contains(&grant) {
                manifest.capabilities.deny.push(grant);
            }
        }
    }
    manifest
}

/// The fields that differ, in manifest order, one level into tables (`limits.max_iterations`).
fn differences(current: &Manifest, target: &Manifest) -> Vec<FieldChange> {
    let (Ok(Value::Object(current)), Ok(Value::Object(target))) =
        (serde_json::to_value(current), serde_json::to_value(target))
    else {
        return Vec::new();
    };
    let mut changes = Vec::new();
    let mut keys: Vec<&String> = target.keys().collect();
    keys.extend(current.keys().filter(|k| !target.contains_key(*k)));
    for key in keys {
        let (before, after) = (current.get(key), target.get(key));
        match (before, after) {
            (Some(Value::Object(b)), Some(Value::Object(a))) => {
                let mut inner: Vec<&String> = a.keys().collect();
                inner.extend(b.keys().filter(|k| !a.contains_key(*k)));
                for k in inner {
                    if let Some(change) = change(&format!("{key}.{k}"), b.get(k), a.get(k)) {
                        changes.push(change);
                    }
                }
            }
            _ => changes.extend(change(key, before, after)),
        }
    }
    changes
}

fn change(field: &str, before: Option<&Value>, after: Option<&Value>) -> Option<FieldChange> {
    let empty = |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v.as_array().is_some_and(Vec::is_empty));
    if before == after || (empty(before) && empty(after)) {
        return None;
    }
    let note = (field == "cron").then(|| {
        "schedules are seeded from [[cron]] once per agent: add or change this agent's jobs on the Schedules page"
            .into()
    });
    let items = |v: Option<&Value>| -> Option<Vec<String>> {
        match v {
            None | Some(Value::Null) => Some(Vec::new()),
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
                Some(items.iter().filter_map(Value::as_str).map(str::to_string).collect())
            }
            _ => None,
        }
    };
    if let (Some(b), Some(a)) = (items(before), items(after))
        && (before.is_some_and(Value::is_array) || after.is_some_and(Value::is_array))
    {
        let added = a.iter().filter(|x| !b.contains(x)).cloned().collect::<Vec<_>>();
        let removed = b.iter().filter(|x| !a.contains(x)).cloned().collect::<Vec<_>>();
        if added.is_empty() && removed.is_empty() {
            return None; // the same items in another order
        }
        return Some(FieldChange { field: field.into(), added, removed, before: None, after: None, note });
    }
    Some(FieldChange {
        field: field.into(),
        added: Vec::new(),
        removed: Vec::new(),
        before: before.and_then(as_text),
        after: after.and_then(as_text),
        note,
    })
}

/// A value as an operator reads it: text as it is, anything else as JSON.
fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::validate;

    fn manifest(toml: &str) -> Manifest {
        validate(crate::agent::parse_manifest(toml, crate::agent::ManifestFormat::Toml).unwrap()).unwrap()
    }

    #[test]
    fn grants_are_gained_and_lost_and_values_are_shown_before_and_after() {
        let agent = manifest(
            "name = \"t\"\nmodel = \"small\"\nsystem_prompt = \"Be brief.\"\n[capabilities]\ntools = [\"system_time\", \"tasks.*\"]\n",
        );
        let of_type = manifest(
            "name = \"t\"\nmodel = \"large\"\nsystem_prompt = \"Be brief.\"\n[capabilities]\ntools = [\"tasks.*\", \"web_fetch\"]\n[limits]\nmax_iterations = 7\n",
        );
        let changes = differences(&agent, &of_type);
        let by_field = |f: &str| changes.iter().find(|c| c.field == f).cloned();
        let grants = by_field("capabilities.tools").expect("grants change");
        assert_eq!((grants.added, grants.removed), (vec!["web_fetch".to_string()], vec!["system_time".to_string()]));
        let model = by_field("model").expect("the model changes");
        assert_eq!((model.before.as_deref(), model.after.as_deref()), (Some("small"), Some("large")));
        assert_eq!(by_field("limits.max_iterations").and_then(|c| c.after).as_deref(), Some("7"));
        assert!(by_field("system_prompt").is_none(), "unchanged fields are not listed: {changes:?}");
        assert!(differences(&of_type, &of_type).is_empty());
    }
}
