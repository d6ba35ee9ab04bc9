//! Skills and their evolution (spec §8): a skill is a named folder under
//! `$KENNEL_HOME/skills/NAME/` holding a manifest (`skill.toml`: name, description, version,
//! tags), a body of instructions (`SKILL.md`) and support files under `references/`,
//! `templates/`, `scripts/` and `assets/`.
//!
//! The rules, decided here once for the tools, the REST API and the dashboard:
//! - **Every change is history.** Each operation (create, update, patch, write or remove a
//!   support file, rollback, delete, restore) appends a row to `skill_history`: who (an agent
//!   or an operator), when, the operation, Kennel's version number for the skill (1, 2, 3…;
//!   the manifest's `version` is informational), a content hash, a unified diff, and the
//!   manifest and body after it. A rollback restores the manifest and body of a version (one
//!   step back when none is named) and is itself a new version; support files are not
//!   versioned, their operations are recorded with their diffs.
//! - **Delete keeps everything.** The folder moves to `skills/.deleted/NAME.VERSION/` and the
//!   history stays; [`Skills::restore`] (an operator's action) brings it back as a new
//!   version.
//! - **One change at a time per skill.** Operations on a skill are serialised by a lock per
//!   name, so two agents patching at once both land, one after the other (the second patch is
//!   matched against the body the first left, and is refused if its text is gone).
//! - **Skills have owners.** An agent changes a skill itself only if it made it and no one
//!   else loads it; any other change of its manifest or body is a [`Proposal`] an operator
//!   accepts or rejects, and a delete or support-file change is refused ([`owners`]).
//! - **Support files stay inside.** A path is `FOLDER/NAME…` with FOLDER one of the four, each
//!   part a plain name ([`crate::workspace::check_relative`]); no part may be a symbolic link;
//!   files are at most [`MAX_FILE_BYTES`], a skill at most [`MAX_FILES`] of them.
//!
//! # Design notes
//!
//! ## Layout
//!
//! Skills and their evolution (spec §8, family `skills`, issue 22): `Skills` (create, update, an
//! operator's edit, patch through `patch::replace`, support files, rollback, delete kept aside, an
//! operator's restore; one lock per skill), `disk.rs` (the folders under `$KENNEL_HOME/skills/`,
//! support paths confined to the four folders, atomic writes), `store.rs` (`skill_history`),
//! `owners.rs` (what an agent may change itself), `proposals.rs` (`skill_proposals`), `tools.rs`
//! (the eight tools). REST `/api/skills…` and the dashboard's Skills pages (below).
//!
//! ## Skills
//!
//! - **On disk**, one folder a skill: `$KENNEL_HOME/skills/NAME/skill.toml` (name, description,
//!   version label, tags), `SKILL.md` (the body), and support files under `references/`,
//!   `templates/`, `scripts/`, `assets/`. Names are lower-case letters, digits, `-`, `_` (they
//!   name folders and appear in prompts). Writes are a synced temporary file renamed into place.
//! - **History** (`skill_history`): every operation appends a row — actor (`agent NAME (ID)`, or
//!   a person by the action log's label: `operator:NAME`, `token:NAME`, `cli`), time, op, Kennel's version number (1, 2, 3… per skill; the manifest's
//!   `version` is only a label), a sha256 of manifest and body, a unified diff, a detail (the
//!   file, the patch's strategy, the version rolled back to), and the manifest and body after it.
//!   `GET /api/skills/{name}` returns all of it.
//! - **Rollback** restores the manifest and body of a version (one step back without one) and is
//!   itself a new version. Support files are not versioned: their writes and removals are in the
//!   history with their diffs, and a rollback leaves them as they are.
//! - **Delete** moves the folder to `skills/.deleted/NAME.VERSION/`; the history stays, and
//!   `Skills::restore` (an operator's action) brings folder and files back as a new version.
//! - **One operation at a time per skill** (a lock per name): two agents patching at once both
//!   land, the second matched against what the first left (and refused, showing the drift, if
//!   its text is gone) — never a lost update.
//! - **Support paths** are `FOLDER/…` with FOLDER one of the four, every part a plain name
//!   (`workspace::check_relative`), no part that exists a symbolic link, the file opened with
//!   `O_NOFOLLOW`; 1 MiB a file, 200 files a skill, 256 KiB a body.
//! - **In the system prompt**: an agent type's `skills` list puts each skill's name,
//!   description and body under "## Your skills", in the list's order, read once per turn (an
//!   evolve shows from the next turn), at most `[skills] prompt_max_bytes` (32 KiB by default): a
//!   body over what is left is cut at a character with a note naming the limit, later skills
//!   that no longer fit are named, and a listed skill that does not exist is named with the
//!   reason. It is part of the system prompt, never of the history, so compaction never touches
//!   it.
//! - **Owners** (`owners.rs`, issue 42). A skill's maker is its last `create` row's `agent_id`
//!   (NULL: a person, an accepted proposal, or a folder put in place by hand). An agent changes a
//!   skill itself only if it made it and no one else loads it: no agent type lists it but the
//!   types the agent made, no agent lists it but itself and its descendants (an
//!   operator may later give the skill to another type: from then on it is shared). Otherwise a
//!   create, update, patch or rollback is worked out exactly as it would be made (`Skills::plan`)
//!   and stored as a **proposal** (`proposals.rs`, `skill_proposals`: the manifest and body it
//!   would leave, its diff, the version it was made against) with an inbox note (source
//!   `skills`); no prompt reads it. A delete or a support-file change of such a skill is refused
//!   (`Forbidden`). At most `[skills] max_pending_proposals_per_agent` (20) wait per agent,
//!   counted in the insert's write transaction. `Skills::accept` writes a proposal as a new
//!   version recorded as the operator's (detail `proposal N of agent NAME (ID)`), only while
//!   the skill is still at the version it was made against (else `Conflict`: the agent proposes
//!   again from what is there); the proposal is claimed (`pending → accepted`) before the write
//!   and reopened if the write fails, so two operators accepting at once write it once.
//!   Decision: the agent's own type, when an operator made it, counts as another loader (every
//!   agent spawned from it later would carry the skill), stricter than the issue's "no other
//!   type"; an agent evolves freely the skills of the types it made for its own children. A
//!   create or rollback proposal's diff covers the manifest too (its description is in every
//!   loader's prompt).
//! - **Operators' changes** go through the same service and land in the same history, named by
//!   who made them (`Actor::person`), and in the operator-action log (`skill.create`,
//!   `skill.update`, `skill.write_file`, `skill.remove_file`, `skill.rollback`, `skill.delete`,
//!   `skill.restore`, `skill.accept`, `skill.reject`). An operator's edit (`Skills::edit`) replaces the body and, when given,
//!   the manifest in one `update` version whose diff covers both files; the manifest's name must
//!   stay the skill's (agent types list skills by name: a rename would silently drop it from
//!   them). Restoring a deleted skill is an operator's action only (no tool does it).
//! - **Fronts**: the eight tools. REST: `GET /api/skills`, `POST /api/skills`;
//!   `GET|PUT|DELETE /api/skills/{name}` (the GET with the whole history and `used_by`, the
//!   agent types listing it: `Agents::types_using_skill`); `GET /api/skills/{name}/history`
//!   (a deleted skill's too); `GET|PUT|DELETE /api/skills/{name}/files` (`?path=` or
//!   `{path, text}`); `POST /api/skills/{name}/rollback` (`{version?}`) and `/restore`;
//!   `GET /api/deleted-skills` (each deleted skill's `delete` entry);
//!   `GET /api/skill-proposals` (`?state=&skill=`), `GET /api/skill-proposals/{id}`,
//!   `POST /api/skill-proposals/{id}/accept|reject` (not under `/api/skills/`: `proposals` is a
//!   valid skill name). Dashboard: `/skills` (pending proposals with their diffs and Accept /
//!   Reject, skills, and deleted ones with Restore), `/skills/{name}` (manifest, body, files,
//!   its maker, the types using it, its pending proposals, the edit form sent back as typed when
//!   refused, each history entry's diff with "Roll back to version N", Delete); both in the
//!   hostile-text corpus, proposals included.

pub(crate) mod config;
mod disk;
mod owners;
mod proposals;
mod store;
mod tools;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex as StdMutex};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use config::SkillsConfig;
pub use disk::SUPPORT_FOLDERS;
pub(crate) use owners::Owners;
pub use proposals::{Proposal, ProposalState};
pub use store::HistoryEntry;
pub(crate) use tools::register;

use crate::agent::Agent;
use crate::clock::Clock;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::family::{Family, Home};
use crate::patch::MatchOptions;

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "skills",
    open: |s| {
        let skills =
            Skills::new(s.get::<Home>().path().join("skills"), s.get::<Db>().clone(), s.get::<Clock>().clone());
        s.provide(skills);
        Ok(())
    },
    register,
};

/// The longest description, in characters.
pub const MAX_DESCRIPTION: usize = 1024;
/// The largest body, and the largest support file, in bytes.
pub const MAX_BODY_BYTES: usize = 256 * 1024;
pub const MAX_FILE_BYTES: usize = 1024 * 1024;
/// The most support files one skill holds, and the most tags its manifest lists.
pub const MAX_FILES: usize = 200;
pub const MAX_TAGS: usize = 16;

/// A skill's manifest, as `skill.toml` holds it and `skill_evolve_create` takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = SkillManifest)]
pub struct Manifest {
    /// The skill's name: its folder's name too.
    pub name: String,
    /// What the skill is for, in a sentence or two (agents read it to pick skills).
    pub description: String,
    /// The author's version label (informational: Kennel numbers versions itself).
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// A skill as read from disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Skill {
    pub manifest: Manifest,
    pub body: String,
    /// Support files, `FOLDER/…` paths, sorted.
    pub files: Vec<String>,
    /// Kennel's version number: the latest history entry's.
    pub version: i64,
}

/// Who changed a skill, as history records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    Agent {
        name: String,
        id: uuid::Uuid,
    },
    /// A person, by the label the action log gives them: `operator:NAME` (the dashboard),
    /// `token:NAME` (the API) or `cli`.
    Operator(String),
}

impl Actor {
    pub fn agent(agent: &Agent) -> Actor {
        Actor::Agent { name: agent.name.clone(), id: agent.id }
    }

    /// The person behind a REST or dashboard request.
    pub fn person(caller: &crate::tool::Caller) -> Actor {
        Actor::Operator(caller.audit_label())
    }

    fn label(&self) -> String {
        match self {
            Actor::Agent { name, id } => format!("agent {name} ({id})"),
            Actor::Operator(label) => label.clone(),
        }
    }

    fn agent_id(&self) -> Option<uuid::Uuid> {
        match self {
            Actor::Agent { id, .. } => Some(*id),
            Actor::Operator(_) => None,
        }
    }
}

/// A change to a skill's manifest or body: what an agent may propose instead of making.
#[derive(Debug, Clone)]
pub enum BodyChange {
    Create { manifest: Manifest, body: String },
    Update { name: String, body: String },
    Patch { name: String, old: String, new: String },
    Rollback { name: String, version: Option<i64> },
}

impl BodyChange {
    pub fn skill(&self) -> &str {
        match self {
            BodyChange::Create { manifest, .. } => &manifest.name,
            BodyChange::Update { name, .. } | BodyChange::Patch { name, .. } | BodyChange::Rollback { name, .. } => {
                name
            }
        }
    }
}

/// What a [`BodyChange`] would leave, before it is written or proposed.
struct Planned {
    op: &'static str,
    /// The version it was worked out from (0: no skill).
    base_version: i64,
    manifest: Manifest,
    body: String,
    diff: String,
    detail: Option<String>,
    strategy: Option<String>,
}

impl Planned {
    /// A new body for `current`, its manifest kept.
    fn body_of(current: Skill, op: &'static str, body: String, strategy: Option<String>) -> Planned {
        let diff = crate::patch::unified(&current.body, &body, "SKILL.md", "SKILL.md");
        Planned {
            op,
            base_version: current.version,
            manifest: current.manifest,
            body,
            diff,
            detail: strategy.clone(),
            strategy,
        }
    }
}

/// What an evolve operation did, for its tool result.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = SkillChange)]
pub struct Evolved {
    pub skill: String,
    /// The version this operation made.
    pub version: i64,
    pub op: String,
    /// The unified diff of what changed.
    pub diff: String,
    /// For a patch: the strategy that matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
}

/// What became of an agent's change to a skill's manifest or body.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Made: the skill is the agent's alone.
    Applied(Evolved),
    /// Waiting for an operator, in no prompt until accepted.
    Proposed(Box<Proposal>),
}

/// Every skill of this daemon.
pub struct Skills {
    root: PathBuf,
    db: Db,
    clock: Clock,
    /// One lock per skill name: its operations run one at a time.
    locks: StdMutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Skills {
    pub fn new(root: PathBuf, db: Db, clock: Clock) -> Skills {
        Skills { root, db, clock, locks: StdMutex::default() }
    }

    /// The skills on disk, by name.
    pub async fn list(&self) -> Result<Vec<Manifest>> {
        let root = self.root.clone();
        blocking(move || disk::list(&root)).await
    }

    /// One skill: manifest, body, support files and version.
    pub async fn get(&self, name: &str) -> Result<Skill> {
        check_name(name)?;
        let dir = self.root.join(name);
        let mut skill = blocking(move || disk::read(&dir)).await?;
        skill.version = store::latest(&self.db, name).await?.map_or(0, |h| h.version);
        Ok(skill)
    }

    /// The whole history of `name`, oldest first (a deleted skill's too).
    pub async fn history(&self, name: &str) -> Result<Vec<HistoryEntry>> {
        check_name(name)?;
        store::all(&self.db, name).await
    }

    /// A support file's text.
    pub async fn read_file(&self, name: &str, path: &str) -> Result<String> {
        check_name(name)?;
        let (dir, path) = (self.root.join(name), path.to_string());
        blocking(move || disk::read_file(&dir, &path)).await
    }

    /// What an agent's system prompt carries of the skills `names` (its type's list): each
    /// skill's name, description and body, in the list's order, in at most `max_bytes`. A
    /// body over what is left is cut at a character with a note saying so, a skill that does
    /// not exist (or cannot be read) is named with the reason, and later skills that no longer
    /// fit are named. `None` when the list is empty.
    pub async fn prompt_block(&self, names: &[String], max_bytes: usize) -> Option<String> {
        if names.is_empty() {
            return None;
        }
        let mut block = String::from("## Your skills\n");
        let mut left_out = Vec::new();
        for name in names {
            // The disk alone: a turn needs no version number from the history.
            let dir = self.root.join(name);
            let read = match check_name(name) {
                Ok(()) => blocking(move || disk::read(&dir)).await,
                Err(e) => Err(e),
            };
            let skill = match read {
                Ok(skill) => skill,
                Err(e) => {
                    block.push_str(&format!(
                        "\n(Skill `{name}` is listed by your agent type but cannot be read: {})\n",
                        e.message
                    ));
                    continue;
                }
            };
            let heading = format!("\n### {name}: {}\n\n", skill.manifest.description);
            let room = max_bytes.saturating_sub(block.len() + heading.len());
            if room == 0 {
                left_out.push(name.as_str());
                continue;
            }
            block.push_str(&heading);
            if skill.body.len() <= room {
                block.push_str(&skill.body);
            } else {
                let cut = skill.body.floor_char_boundary(room);
                block.push_str(&skill.body[..cut]);
                block.push_str(&format!(
                    "\n\n[… the body of `{name}` is cut here, at {cut} of {} bytes: skills in a system prompt are limited to [skills] prompt_max_bytes = {max_bytes}]\n",
                    skill.body.len()
                ));
            }
            block.push('\n');
        }
        if !left_out.is_empty() {
            block.push_str(&format!(
                "\n[Skills left out for [skills] prompt_max_bytes = {max_bytes}: {}]\n",
                left_out.join(", ")
            ));
        }
        Some(block)
    }

    /// Creates a skill from scratch.
    pub async fn create(&self, actor: &Actor, manifest: Manifest, body: String) -> Result<Evolved> {
        let name = manifest.name.clone();
        let _held = self.lock(&name).await;
        let planned = self.plan(BodyChange::Create { manifest, body }).await?;
        self.apply(actor, &name, planned, None).await
    }

    /// Replaces the whole body.
    pub async fn update(&self, actor: &Actor, name: &str, body: String) -> Result<Evolved> {
        let _held = self.lock(name).await;
        let planned = self.plan(BodyChange::Update { name: name.to_string(), body }).await?;
        self.apply(actor, name, planned, None).await
    }

    /// An operator's edit: the whole body, and the manifest when one is given (its name must
    /// stay the skill's: a skill is not renamed, agent types list it by name). Recorded as an
    /// `update` whose diff covers both files.
    pub async fn edit(&self, actor: &Actor, name: &str, manifest: Option<Manifest>, body: String) -> Result<Evolved> {
        check_body(&body)?;
        if let Some(m) = &manifest {
            check_manifest(m)?;
            if m.name != name {
                return Err(Error::invalid(format!(
                    "the manifest names `{}`, but this is `{name}`: a skill keeps its name",
                    m.name
                ))
                .with_field("manifest.name"));
            }
        }
        let _held = self.lock(name).await;
        let current = self.get(name).await?;
        let manifest = manifest.unwrap_or_else(|| current.manifest.clone());
        let (dir, m, b) = (self.root.join(name), manifest.clone(), body.clone());
        blocking(move || disk::write_skill(&dir, &m, &b)).await?;
        let diff = whole_diff((&current.manifest, &current.body), (&manifest, &body))?;
        self.record(actor, name, "update", &manifest, &body, diff, None).await
    }

    /// The skills deleted and not restored: each one's `delete` entry (who, when, and the
    /// manifest and body it had), by name.
    pub async fn deleted(&self) -> Result<Vec<HistoryEntry>> {
        store::deleted(&self.db).await
    }

    /// Removes the folders of skills deleted before `cutoff` from `skills/.deleted` (they can
    /// no longer be restored; their history stays). Returns how many went.
    pub(crate) async fn sweep_deleted(&self, cutoff: &str) -> Result<u64> {
        let old = store::deletes_before(&self.db, cutoff).await?;
        let root = self.root.clone();
        blocking(move || {
            let mut removed = 0;
            for (skill, version) in old {
                if disk::remove_aside(&root, &skill, version)? {
                    removed += 1;
                }
            }
            Ok(removed)
        })
        .await
    }

    /// Edits the body in place with the bounded five-strategy matcher ([`crate::patch`]).
    pub async fn patch(&self, actor: &Actor, name: &str, old: &str, new: &str) -> Result<Evolved> {
        let _held = self.lock(name).await;
        let change = BodyChange::Patch { name: name.to_string(), old: old.to_string(), new: new.to_string() };
        let planned = self.plan(change).await?;
        self.apply(actor, name, planned, None).await
    }

    /// Adds or replaces a support file.
    pub async fn write_file(&self, actor: &Actor, name: &str, path: &str, text: String) -> Result<Evolved> {
        if text.len() > MAX_FILE_BYTES {
            return Err(Error::invalid(format!(
                "a support file is at most {MAX_FILE_BYTES} bytes; this one is {}",
                text.len()
            ))
            .with_field("body"));
        }
        let _held = self.lock(name).await;
        let current = self.get(name).await?;
        let (dir, rel, new) = (self.root.join(name), path.to_string(), text.clone());
        let (rel, before) = blocking(move || disk::write_file(&dir, &rel, &new)).await?;
        let diff = crate::patch::unified(before.as_deref().unwrap_or(""), &text, &rel, &rel);
        self.record(actor, name, "write_file", &current.manifest, &current.body, diff, Some(rel)).await
    }

    /// Removes a support file.
    pub async fn remove_file(&self, actor: &Actor, name: &str, path: &str) -> Result<Evolved> {
        let _held = self.lock(name).await;
        let current = self.get(name).await?;
        let (dir, rel) = (self.root.join(name), path.to_string());
        let (rel, before) = blocking(move || disk::remove_file(&dir, &rel)).await?;
        let diff = crate::patch::unified(&before, "", &rel, "/dev/null");
        self.record(actor, name, "remove_file", &current.manifest, &current.body, diff, Some(rel)).await
    }

    /// Restores the manifest and body of `version` (one step back when `None`), as a new
    /// version.
    pub async fn rollback(&self, actor: &Actor, name: &str, version: Option<i64>) -> Result<Evolved> {
        let _held = self.lock(name).await;
        let planned = self.plan(BodyChange::Rollback { name: name.to_string(), version }).await?;
        self.apply(actor, name, planned, None).await
    }

    /// Deletes a skill: its folder moves aside and its history stays.
    pub async fn delete(&self, actor: &Actor, name: &str) -> Result<Evolved> {
        let _held = self.lock(name).await;
        let current = self.get(name).await?;
        let version = current.version + 1;
        let (root, n) = (self.root.clone(), name.to_string());
        blocking(move || disk::move_aside(&root, &n, version)).await?;
        let diff = crate::patch::unified(&current.body, "", "SKILL.md", "/dev/null");
        self.record(actor, name, "delete", &current.manifest, &current.body, diff, None).await
    }

    /// Brings a deleted skill back with its files (an operator's action), as a new version.
    pub async fn restore(&self, actor: &Actor, name: &str) -> Result<Evolved> {
        check_name(name)?;
        let _held = self.lock(name).await;
        let last = store::latest(&self.db, name)
            .await?
            .ok_or_else(|| Error::not_found(format!("there never was a skill `{name}`")))?;
        if last.op != "delete" {
            return Err(Error::conflict(format!("`{name}` is not deleted (its last operation was {})", last.op)));
        }
        let (root, n, version) = (self.root.clone(), name.to_string(), last.version);
        blocking(move || disk::bring_back(&root, &n, version)).await?;
        let manifest: Manifest = toml::from_str(&last.manifest)
            .map_err(|e| Error::internal(format!("the deleted manifest does not parse: {e}")))?;
        let diff = crate::patch::unified("", &last.body, "/dev/null", "SKILL.md");
        self.record(actor, name, "restore", &manifest, &last.body, diff, None).await
    }

    /// An agent's change to a skill's manifest or body: made when the skill is the agent's
    /// alone, else stored as a proposal for an operator ([`owners`]).
    pub(crate) async fn change_by_agent(&self, owners: &Owners, agent: &Agent, change: BodyChange) -> Result<Outcome> {
        let name = change.skill().to_string();
        check_name(&name)?;
        let _held = self.lock(&name).await;
        let creating = matches!(change, BodyChange::Create { .. });
        let why = owners::why_not_yours(owners, self, agent, &name, creating).await?;
        let planned = self.plan(change).await?;
        match why {
            None => Ok(Outcome::Applied(self.apply(&Actor::agent(agent), &name, planned, None).await?)),
            Some(why) => Ok(Outcome::Proposed(Box::new(self.propose(owners, agent, &name, planned, &why).await?))),
        }
    }

    /// Refuses an agent's delete or support-file change (`what`) to a skill that is not its
    /// alone: those are an operator's.
    pub(crate) async fn ensure_agents_own(&self, owners: &Owners, agent: &Agent, name: &str, what: &str) -> Result<()> {
        check_name(name)?;
        match owners::why_not_yours(owners, self, agent, name, false).await? {
            None => Ok(()),
            Some(why) => Err(Error::forbidden(format!(
                "skill `{name}` is not yours alone to {what}: {why}. Only an operator may; a change to its body becomes a proposal for an operator to accept"
            ))),
        }
    }

    /// The proposals in `state` (all when `None`), of one skill when `skill` is given, oldest
    /// first.
    pub async fn proposals(&self, state: Option<ProposalState>, skill: Option<&str>) -> Result<Vec<Proposal>> {
        proposals::list(&self.db, state, skill).await
    }

    pub async fn proposal(&self, id: i64) -> Result<Proposal> {
        proposals::get(&self.db, id).await?.ok_or_else(|| Error::not_found(format!("there is no skill proposal {id}")))
    }

    /// An operator accepts proposal `id`: the skill becomes what it proposed, as a new version
    /// recorded as the operator's — if the skill is still at the version it was made against.
    pub async fn accept(&self, actor: &Actor, id: i64) -> Result<Evolved> {
        let p = self.proposal(id).await?;
        let _held = self.lock(&p.skill).await;
        let now = store::latest(&self.db, &p.skill).await?.map_or(0, |h| h.version);
        if p.state == ProposalState::Pending && now != p.base_version {
            return Err(Error::conflict(format!(
                "skill `{}` is at version {now}, and proposal {id} was made against version {}: reject it; the agent can propose again from the skill as it is",
                p.skill, p.base_version
            )));
        }
        let at = crate::db::timestamp(self.clock.now());
        if !proposals::decide(&self.db, id, ProposalState::Accepted, &actor.label(), &at).await? {
            return Err(already_decided(&self.proposal(id).await?));
        }
        let applied = self.apply_proposal(actor, &p).await;
        match &applied {
            Ok(evolved) => proposals::set_version(&self.db, id, evolved.version).await?,
            Err(_) => proposals::reopen(&self.db, id).await?,
        }
        applied
    }

    /// An operator rejects proposal `id`: nothing of it is written.
    pub async fn reject(&self, actor: &Actor, id: i64) -> Result<Proposal> {
        let at = crate::db::timestamp(self.clock.now());
        if !proposals::decide(&self.db, id, ProposalState::Rejected, &actor.label(), &at).await? {
            return Err(already_decided(&self.proposal(id).await?));
        }
        self.proposal(id).await
    }

    async fn apply_proposal(&self, actor: &Actor, p: &Proposal) -> Result<Evolved> {
        let op = ["create", "update", "patch", "rollback"]
            .into_iter()
            .find(|op| *op == p.op)
            .ok_or_else(|| Error::internal(format!("proposal {} has an unknown operation `{}`", p.id, p.op)))?;
        let manifest: Manifest = toml::from_str(&p.manifest)
            .map_err(|e| Error::internal(format!("proposal {}'s manifest does not parse: {e}", p.id)))?;
        let planned = Planned {
            op,
            base_version: p.base_version,
            manifest,
            body: p.body.clone(),
            diff: p.diff.clone(),
            detail: None,
            strategy: None,
        };
        let detail = format!("proposal {} of agent {} ({})", p.id, p.agent_name, p.agent_id);
        self.apply(actor, &p.skill, planned, Some(detail)).await
    }

    /// Stores `planned` as `agent`'s proposal, within its pending limit, and tells the
    /// operators.
    async fn propose(
        &self,
        owners: &Owners,
        agent: &Agent,
        name: &str,
        planned: Planned,
        why: &str,
    ) -> Result<Proposal> {
        let manifest = manifest_text(&planned.manifest)?;
        let reason = format!("{why}: an operator accepts or rejects this change");
        let new = proposals::NewProposal {
            skill: name,
            op: planned.op,
            base_version: planned.base_version,
            agent,
            at: crate::db::timestamp(self.clock.now()),
            reason: &reason,
            diff: &planned.diff,
            detail: planned.detail.as_deref(),
            manifest: &manifest,
            body: &planned.body,
        };
        let limit = owners.max_pending_proposals;
        let id = proposals::insert_within(&self.db, new, limit).await?.ok_or_else(|| {
            Error::exhausted(format!(
                "agent {} has {limit} skill proposals waiting for an operator, the most [skills] max_pending_proposals_per_agent allows: wait until some are accepted or rejected",
                agent.name
            ))
        })?;
        let proposal = self.proposal(id).await?;
        let note = crate::notify::NewNote {
            source: "skills",
            agent: Some((agent.id, agent.name.clone())),
            reason: format!("Agent {} proposes a change to skill {name}", agent.name),
            summary: format!(
                "Proposal {id} ({}): {why}. Review its diff on the Skills page; no prompt carries it until an operator accepts it.",
                planned.op
            ),
            urgency: crate::notify::Urgency::Normal,
        };
        if let Err(e) = owners.inbox.notify(note).await {
            tracing::warn!(proposal = id, error = %e.message, "a skill proposal could not be noted in the inbox");
        }
        Ok(proposal)
    }

    /// What `change` would leave, worked out from the skill as it is and nothing written. The
    /// caller holds the skill's lock.
    async fn plan(&self, change: BodyChange) -> Result<Planned> {
        match change {
            BodyChange::Create { manifest, body } => {
                check_manifest(&manifest)?;
                check_body(&body)?;
                let name = manifest.name.clone();
                if self.get(&name).await.is_ok() {
                    return Err(Error::conflict(format!(
                        "a skill `{name}` exists: change it with skill_evolve_update or skill_evolve_patch"
                    ))
                    .with_field("name"));
                }
                let base_version = store::latest(&self.db, &name).await?.map_or(0, |h| h.version);
                // The manifest too: its description rides in every loader's prompt.
                let diff = format!(
                    "{}{}",
                    crate::patch::unified("", &manifest_text(&manifest)?, "/dev/null", &format!("{name}/skill.toml")),
                    crate::patch::unified("", &body, "/dev/null", &format!("{name}/SKILL.md"))
                );
                Ok(Planned { op: "create", base_version, manifest, body, diff, detail: None, strategy: None })
            }
            BodyChange::Update { name, body } => {
                check_body(&body)?;
                let current = self.get(&name).await?;
                Ok(Planned::body_of(current, "update", body, None))
            }
            BodyChange::Patch { name, old, new } => {
                let current = self.get(&name).await?;
                let replaced =
                    crate::patch::replace(&current.body, &old, &new, &MatchOptions::default()).map_err(|refusal| {
                        Error::invalid(format!("the patch was not applied: {refusal}")).with_field("old")
                    })?;
                check_body(&replaced.body)?;
                Ok(Planned::body_of(current, "patch", replaced.body, Some(replaced.strategy.name().to_string())))
            }
            BodyChange::Rollback { name, version } => {
                let current = self.get(&name).await?;
                let target = version.unwrap_or(current.version - 1);
                if target < 1 || target >= current.version {
                    return Err(Error::invalid(format!(
                        "`{name}` is at version {}: roll back to a version from 1 to {}",
                        current.version,
                        current.version - 1
                    ))
                    .with_field("version"));
                }
                let entry = store::at(&self.db, &name, target).await?.ok_or_else(|| {
                    Error::not_found(format!("`{name}` has no version {target}")).with_field("version")
                })?;
                let manifest: Manifest = toml::from_str(&entry.manifest)
                    .map_err(|e| Error::internal(format!("version {target}'s manifest does not parse: {e}")))?;
                let diff = whole_diff((&current.manifest, &current.body), (&manifest, &entry.body))?;
                Ok(Planned {
                    op: "rollback",
                    base_version: current.version,
                    manifest,
                    body: entry.body,
                    diff,
                    detail: Some(format!("to version {target}")),
                    strategy: None,
                })
            }
        }
    }

    /// Writes what `plan` worked out and records it as `actor`'s; `detail` in place of the
    /// plan's (an accepted proposal names itself there).
    async fn apply(&self, actor: &Actor, name: &str, planned: Planned, detail: Option<String>) -> Result<Evolved> {
        let dir = self.root.join(name);
        let (m, b) = (planned.manifest.clone(), planned.body.clone());
        if planned.op == "create" {
            let root = self.root.clone();
            blocking(move || disk::create(&root, &dir, &m, &b)).await?;
        } else {
            blocking(move || disk::write_skill(&dir, &m, &b)).await?;
        }
        let detail = detail.or(planned.detail);
        let mut evolved =
            self.record(actor, name, planned.op, &planned.manifest, &planned.body, planned.diff, detail).await?;
        evolved.strategy = planned.strategy;
        Ok(evolved)
    }

    #[allow(clippy::too_many_arguments)]
    async fn record(
        &self,
        actor: &Actor,
        name: &str,
        op: &str,
        manifest: &Manifest,
        body: &str,
        diff: String,
        detail: Option<String>,
    ) -> Result<Evolved> {
        let manifest_text = manifest_text(manifest)?;
        let entry = store::NewEntry {
            skill: name,
            op,
            actor: actor.label(),
            at: crate::db::timestamp(self.clock.now()),
            diff: &diff,
            detail: detail.as_deref(),
            manifest: &manifest_text,
            body,
            agent_id: actor.agent_id(),
        };
        let version = store::append(&self.db, entry).await?;
        Ok(Evolved { skill: name.to_string(), version, op: op.to_string(), diff, strategy: None })
    }

    async fn lock(&self, name: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = self.locks.lock().unwrap_or_else(|e| e.into_inner()).entry(name.to_string()).or_default().clone();
        lock.lock_owned().await
    }
}

/// A skill name: the names of agent types and agents ([`crate::agent::manifest::is_valid_name`]),
/// since agent types list skills by name; it names a folder and appears in prompts.
pub fn check_name(name: &str) -> Result<()> {
    if crate::agent::manifest::is_valid_name(name) {
        Ok(())
    } else {
        Err(Error::invalid(format!("`{name}` is not a skill name: {}", crate::agent::manifest::NAME_RULE))
            .with_field("name"))
    }
}

fn already_decided(p: &Proposal) -> Error {
    Error::conflict(format!(
        "proposal {} was {} already{}",
        p.id,
        p.state.as_str(),
        p.decided_by.as_ref().map(|by| format!(" by {by}")).unwrap_or_default()
    ))
}

/// The unified diff of a skill's manifest and body from `before` to `after`: both files, since
/// the description rides in prompts as the body does.
fn whole_diff(before: (&Manifest, &str), after: (&Manifest, &str)) -> Result<String> {
    let manifests =
        crate::patch::unified(&manifest_text(before.0)?, &manifest_text(after.0)?, "skill.toml", "skill.toml");
    Ok(format!("{manifests}{}", crate::patch::unified(before.1, after.1, "SKILL.md", "SKILL.md")))
}

fn manifest_text(manifest: &Manifest) -> Result<String> {
    toml::to_string(manifest).map_err(|e| Error::internal(format!("the manifest does not serialise: {e}")))
}

fn check_manifest(manifest: &Manifest) -> Result<()> {
    check_name(&manifest.name)?;
    if crate::text::is_blank(&manifest.description) || manifest.description.chars().count() > MAX_DESCRIPTION {
        return Err(Error::invalid(format!("a skill's description is 1 to {MAX_DESCRIPTION} characters, not blank"))
            .with_field("manifest.description"));
    }
    if manifest.tags.len() > MAX_TAGS
        || manifest.tags.iter().any(|t| crate::text::is_blank(t) || t.chars().count() > 64)
    {
        return Err(
            Error::invalid(format!("at most {MAX_TAGS} tags, each 1 to 64 characters")).with_field("manifest.tags")
        );
    }
    if manifest.version.as_ref().is_some_and(|v| v.chars().count() > 64) {
        return Err(Error::invalid("a version label is at most 64 characters").with_field("manifest.version"));
    }
    Ok(())
}

fn check_body(body: &str) -> Result<()> {
    if body.len() > MAX_BODY_BYTES {
        return Err(Error::invalid(format!(
            "a skill's body is at most {MAX_BODY_BYTES} bytes; this one is {}",
            body.len()
        ))
        .with_field("body"));
    }
    Ok(())
}

async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(work).await.map_err(|e| Error::internal(format!("a skill operation failed: {e}")))?
}

#[cfg(test)]
mod tests;
