//! Family `skills` (spec §8): the eight tools, thin over [`super::Skills`]; every change is
//! recorded as the calling agent's. A change to a skill that is not the agent's alone becomes
//! a proposal, or is refused ([`super::owners`]).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Actor, BodyChange, Evolved, Manifest, Outcome, Owners};
use crate::error::{Error, Result};
use crate::family::Services;
use crate::skills::Skills;
use crate::tool::{CallContext, Registry, Tool, ToolDef};

const FAMILY: &str = "skills";

/// What this family's tools reach, taken from the kernel's services when they are registered.
#[derive(Clone)]
pub(super) struct Uses {
    skills: Arc<Skills>,
    owners: Arc<Owners>,
}

pub(crate) fn register(r: &mut Registry, services: &Services) {
    let owners = Owners {
        agents: services.need(),
        inbox: services.need(),
        max_pending_proposals: services.config().skills.max_pending_proposals_per_agent,
    };
    let uses = Uses { skills: services.need(), owners: Arc::new(owners) };
    r.add(ReadFile(uses.clone()));
    r.add(Create(uses.clone()));
    r.add(Update(uses.clone()));
    r.add(Patch(uses.clone()));
    r.add(Delete(uses.clone()));
    r.add(Rollback(uses.clone()));
    r.add(WriteFile(uses.clone()));
    r.add(RemoveFile(uses));
}

fn actor(ctx: &CallContext) -> Actor {
    Actor::agent(&ctx.agent)
}

fn evolved(e: Evolved) -> Value {
    json!(e)
}

/// Makes or proposes `change` as the calling agent; the answer says which.
async fn change(uses: &Uses, ctx: &CallContext, change: BodyChange) -> Result<Value> {
    Ok(match uses.skills.change_by_agent(&uses.owners, &ctx.agent, change).await? {
        Outcome::Applied(e) => evolved(e),
        Outcome::Proposed(p) => json!({
            "skill": p.skill,
            "op": p.op,
            "proposed": true,
            "proposal": p.id,
            "diff": p.diff,
            "note": format!(
                "Not changed yet: {}. Proposal {} waits on the Skills page; no prompt carries it until an operator accepts it.",
                p.reason, p.id
            ),
        }),
    })
}

/// Refuses a delete or support-file change (`what`) to a skill not the agent's alone.
async fn ensure_own(uses: &Uses, ctx: &CallContext, skill: &str, what: &str) -> Result<()> {
    uses.skills.ensure_agents_own(&uses.owners, &ctx.agent, skill, what).await
}

pub struct ReadFile(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// The skill's name.
    pub skill: String,
    /// A support file's path inside the skill, like `references/api.md` (under references/,
    /// templates/, scripts/ or assets/).
    pub file: String,
}

impl Tool for ReadFile {
    type Args = ReadFileArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "skill_read_file",
            FAMILY,
            "Read one of a skill's support files (references, templates, scripts, assets).",
        )
        .tags(&["skill", "read", "file", "reference", "template"])
        .read_only()
    }

    async fn run(&self, _: CallContext, args: ReadFileArgs) -> Result<Value> {
        let text = self.0.skills.read_file(&args.skill, &args.file).await?;
        Ok(json!({ "skill": args.skill, "file": args.file, "content": text }))
    }
}

pub struct Create(pub(super) Uses);

/// A new skill's manifest (its name is the tool's `name`).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestArgs {
    /// What the skill is for, in a sentence or two (1–1,024 characters).
    pub description: String,
    /// Your own version label (informational: Kennel numbers versions itself).
    pub version: Option<String>,
    /// Up to 16 tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The skill's name again, if given: it must be the same as `name`.
    pub name: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateArgs {
    /// The new skill's name: lower-case letters, digits, `-` and `_` (at most 64).
    pub name: String,
    pub manifest: ManifestArgs,
    /// The instructions (Markdown, at most 256 KiB); empty when not given.
    #[serde(default)]
    pub body: String,
}

impl Tool for Create {
    type Args = CreateArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "skill_evolve_create",
            FAMILY,
            "Create a new skill from scratch: its manifest and its body of instructions. A name other agents' types list is only proposed, for an operator to accept.",
        )
        .tags(&["skill", "create", "new", "evolve", "instructions"])
    }

    async fn run(&self, ctx: CallContext, args: CreateArgs) -> Result<Value> {
        if args.manifest.name.as_ref().is_some_and(|n| *n != args.name) {
            return Err(
                Error::invalid("`manifest.name` differs from `name`: give one name").with_field("manifest.name")
            );
        }
        let manifest = Manifest {
            name: args.name,
            description: args.manifest.description,
            version: args.manifest.version,
            tags: args.manifest.tags,
        };
        change(&self.0, &ctx, BodyChange::Create { manifest, body: args.body }).await
    }
}

pub struct Update(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateArgs {
    pub name: String,
    /// The whole new body: it replaces the old one as it is (no matching).
    pub body: String,
}

impl Tool for Update {
    type Args = UpdateArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "skill_evolve_update",
            FAMILY,
            "Replace a skill's whole body (an overwrite; use skill_evolve_patch for an edit). A skill you did not make, or that others load, is only proposed.",
        )
        .tags(&["skill", "update", "replace", "overwrite", "evolve"])
    }

    async fn run(&self, ctx: CallContext, args: UpdateArgs) -> Result<Value> {
        change(&self.0, &ctx, BodyChange::Update { name: args.name, body: args.body }).await
    }
}

pub struct Patch(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchArgs {
    pub name: String,
    /// The text to replace, as it is in the body. Found exactly, else with trailing spaces,
    /// in-line spacing or indentation ignored, else by its first and last three lines; it
    /// must be found once.
    pub old: String,
    /// What replaces it.
    pub new: String,
}

impl Tool for Patch {
    type Args = PatchArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "skill_evolve_patch",
            FAMILY,
            "Edit a skill's body in place: replace `old` with `new`. A text found nowhere or more than once is refused, showing where the body differs. A skill you did not make, or that others load, is only proposed.",
        )
        .tags(&["skill", "patch", "edit", "replace", "evolve", "fix"])
    }

    async fn run(&self, ctx: CallContext, args: PatchArgs) -> Result<Value> {
        change(&self.0, &ctx, BodyChange::Patch { name: args.name, old: args.old, new: args.new }).await
    }
}

pub struct Delete(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NameArgs {
    pub name: String,
}

impl Tool for Delete {
    type Args = NameArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "skill_evolve_delete",
            FAMILY,
            "Delete a whole skill. Its history is kept and an operator can restore it.",
        )
        .tags(&["skill", "delete", "remove", "evolve"])
    }

    async fn run(&self, ctx: CallContext, args: NameArgs) -> Result<Value> {
        ensure_own(&self.0, &ctx, &args.name, "delete").await?;
        Ok(evolved(self.0.skills.delete(&actor(&ctx), &args.name).await?))
    }
}

pub struct Rollback(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RollbackArgs {
    pub name: String,
    /// The version to restore (Kennel's numbers, in the skill's history); one step back when
    /// not given.
    pub version: Option<i64>,
}

impl Tool for Rollback {
    type Args = RollbackArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "skill_evolve_rollback",
            FAMILY,
            "Roll a skill's manifest and body back to an earlier version (one step back without a version). A skill you did not make, or that others load, is only proposed.",
        )
        .tags(&["skill", "rollback", "undo", "revert", "history", "evolve"])
    }

    async fn run(&self, ctx: CallContext, args: RollbackArgs) -> Result<Value> {
        change(&self.0, &ctx, BodyChange::Rollback { name: args.name, version: args.version }).await
    }
}

pub struct WriteFile(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    pub skill: String,
    /// Where, inside references/, templates/, scripts/ or assets/ (like `templates/email.md`).
    pub path: String,
    /// The file's whole text (at most 1 MiB).
    pub body: String,
}

impl Tool for WriteFile {
    type Args = WriteFileArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "skill_evolve_write_file",
            FAMILY,
            "Add or replace a skill's support file (no matching: the whole text).",
        )
        .tags(&["skill", "write", "file", "reference", "template", "evolve"])
    }

    async fn run(&self, ctx: CallContext, args: WriteFileArgs) -> Result<Value> {
        ensure_own(&self.0, &ctx, &args.skill, "change its support files").await?;
        Ok(evolved(self.0.skills.write_file(&actor(&ctx), &args.skill, &args.path, args.body).await?))
    }
}

pub struct RemoveFile(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveFileArgs {
    pub skill: String,
    pub path: String,
}

impl Tool for RemoveFile {
    type Args = RemoveFileArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("skill_evolve_remove_file", FAMILY, "Remove one of a skill's support files.")
            .tags(&["skill", "remove", "delete", "file", "evolve"])
    }

    async fn run(&self, ctx: CallContext, args: RemoveFileArgs) -> Result<Value> {
        ensure_own(&self.0, &ctx, &args.skill, "change its support files").await?;
        Ok(evolved(self.0.skills.remove_file(&actor(&ctx), &args.skill, &args.path).await?))
    }
}
