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
//! - **Support files stay inside.** A path is `FOLDER/NAME…` with FOLDER one of the four, each
//!   part a plain name ([`crate::workspace::check_relative`]); no part may be a symbolic link;
//!   files are at most [`MAX_FILE_BYTES`], a skill at most [`MAX_FILES`] of them.

mod disk;
mod store;
mod tools;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex as StdMutex};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use disk::SUPPORT_FOLDERS;
pub use store::HistoryEntry;
pub(crate) use tools::register;

use crate::clock::Clock;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::patch::MatchOptions;

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
        check_manifest(&manifest)?;
        check_body(&body)?;
        let name = manifest.name.clone();
        let _held = self.lock(&name).await;
        let dir = self.root.join(&name);
        let root = self.root.clone();
        let (m, b) = (manifest.clone(), body.clone());
        blocking(move || disk::create(&root, &dir, &m, &b)).await?;
        let diff = crate::patch::unified("", &body, "/dev/null", &format!("{name}/SKILL.md"));
        self.record(actor, &name, "create", &manifest, &body, diff, None).await
    }

    /// Replaces the whole body.
    pub async fn update(&self, actor: &Actor, name: &str, body: String) -> Result<Evolved> {
        check_body(&body)?;
        let _held = self.lock(name).await;
        let current = self.get(name).await?;
        self.write_body(actor, name, &current, body, "update", None).await
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
        let diff = format!(
            "{}{}",
            crate::patch::unified(
                &manifest_text(&current.manifest)?,
                &manifest_text(&manifest)?,
                "skill.toml",
                "skill.toml"
            ),
            crate::patch::unified(&current.body, &body, "SKILL.md", "SKILL.md")
        );
        self.record(actor, name, "update", &manifest, &body, diff, None).await
    }

    /// The skills deleted and not restored: each one's `delete` entry (who, when, and the
    /// manifest and body it had), by name.
    pub async fn deleted(&self) -> Result<Vec<HistoryEntry>> {
        store::deleted(&self.db).await
    }

    /// Edits the body in place with the bounded five-strategy matcher ([`crate::patch`]).
    pub async fn patch(&self, actor: &Actor, name: &str, old: &str, new: &str) -> Result<Evolved> {
        let _held = self.lock(name).await;
        let current = self.get(name).await?;
        let replaced = crate::patch::replace(&current.body, old, new, &MatchOptions::default())
            .map_err(|refusal| Error::invalid(format!("the patch was not applied: {refusal}")).with_field("old"))?;
        check_body(&replaced.body)?;
        let strategy = replaced.strategy.name();
        self.write_body(actor, name, &current, replaced.body, "patch", Some(strategy)).await
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
        let current = self.get(name).await?;
        let target = version.unwrap_or(current.version - 1);
        if target < 1 || target >= current.version {
            return Err(Error::invalid(format!(
                "`{name}` is at version {}: roll back to a version from 1 to {}",
                current.version,
                current.version - 1
            ))
            .with_field("version"));
        }
        let entry = store::at(&self.db, name, target)
            .await?
            .ok_or_else(|| Error::not_found(format!("`{name}` has no version {target}")).with_field("version"))?;
        let manifest: Manifest = toml::from_str(&entry.manifest)
            .map_err(|e| Error::internal(format!("version {target}'s manifest does not parse: {e}")))?;
        let (dir, m, b) = (self.root.join(name), manifest.clone(), entry.body.clone());
        blocking(move || disk::write_skill(&dir, &m, &b)).await?;
        let diff = crate::patch::unified(&current.body, &entry.body, "SKILL.md", "SKILL.md");
        self.record(actor, name, "rollback", &manifest, &entry.body, diff, Some(format!("to version {target}"))).await
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

    async fn write_body(
        &self,
        actor: &Actor,
        name: &str,
        current: &Skill,
        body: String,
        op: &str,
        strategy: Option<&str>,
    ) -> Result<Evolved> {
        let (dir, m, b) = (self.root.join(name), current.manifest.clone(), body.clone());
        blocking(move || disk::write_skill(&dir, &m, &b)).await?;
        let diff = crate::patch::unified(&current.body, &body, "SKILL.md", "SKILL.md");
        let mut evolved =
            self.record(actor, name, op, &current.manifest, &body, diff, strategy.map(str::to_string)).await?;
        evolved.strategy = strategy.map(str::to_string);
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
