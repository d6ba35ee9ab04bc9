//! `/api/skills`: the daemon's skills for operators — every manifest, one skill whole with its
//! full evolution history (spec §8: the audit trail of every `skill_evolve_*`), and an
//! operator's own changes: create, edit, support files, rollback, delete and restore. Each goes
//! through the same `Skills` service as the agents' tools and is recorded in the skill's
//! history with the operator or token that made it.

use crate::routes::api;
use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::Method;
use axum::http::{StatusCode, header::LOCATION};
use axum::response::{IntoResponse, Response};
use kennel_kernel::Kernel;
use kennel_kernel::agent::Name;
use kennel_kernel::skills::Skills;
use kennel_kernel::skills::{Actor, Evolved, HistoryEntry, Manifest, Proposal, ProposalState, Skill};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::auth::Bearer;
use super::body::{JsonBody, QueryParams};
use super::error::ApiResult;
use crate::routes::{Action, Api};

pub fn routes() -> Api {
    Api::new()
        .route(api!(all_skills, create_skill), &[(Method::POST, Action::named("skill.create"))])
        .route(
            api!(one_skill, edit_skill, delete_skill),
            &[(Method::PUT, Action::named("skill.update")), (Method::DELETE, Action::named("skill.delete"))],
        )
        .route(api!(skill_history), &[])
        .route(
            api!(read_support_file, write_support_file, remove_support_file),
            &[(Method::PUT, Action::named("skill.write_file")), (Method::DELETE, Action::named("skill.remove_file"))],
        )
        .route(api!(roll_back_skill), &[(Method::POST, Action::named("skill.rollback"))])
        .route(api!(restore_skill), &[(Method::POST, Action::named("skill.restore"))])
        .route(api!(deleted_skills), &[])
        .route(api!(skill_proposals), &[])
        .route(api!(one_skill_proposal), &[])
        .route(api!(accept_skill_proposal), &[(Method::POST, Action::named("skill.accept"))])
        .route(api!(reject_skill_proposal), &[(Method::POST, Action::named("skill.reject"))])
}

/// Every skill's manifest, by name.
#[utoipa::path(get, path = "/api/skills", tag = "skills",
    responses((status = 200, description = "The skills' manifests", body = Vec<Manifest>)))]
async fn all_skills(State(kernel): State<Kernel>) -> ApiResult<Json<Vec<Manifest>>> {
    Ok(Json(kernel.service::<Skills>().list().await?))
}

/// A new skill.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct NewSkill {
    manifest: Manifest,
    /// Its instructions (Markdown).
    #[serde(default)]
    body: String,
}

/// Creates a skill (version 1 of its history).
#[utoipa::path(post, path = "/api/skills", tag = "skills", request_body = NewSkill,
    responses(
        (status = 201, description = "Created", body = Evolved, headers(("location" = String, description = "Its URL"))),
        (status = 409, description = "A skill of that name exists"),
        (status = 422, description = "A bad name, manifest or body"),
    ))]
async fn create_skill(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    JsonBody(new): JsonBody<NewSkill>,
) -> ApiResult<Response> {
    let evolved = kernel.service::<Skills>().create(&Actor::person(&caller), new.manifest, new.body).await?;
    let location = format!("/api/skills/{}", evolved.skill);
    Ok((StatusCode::CREATED, [(LOCATION, location)], Json(evolved)).into_response())
}

/// A skill and every operation on it, oldest first.
#[derive(Serialize, ToSchema)]
struct SkillWithHistory {
    #[serde(flatten)]
    skill: Skill,
    history: Vec<HistoryEntry>,
    /// The agent types whose manifests list this skill.
    used_by: Vec<String>,
}

/// One skill: its manifest, body, support files, version, full history and the agent types
/// that use it.
#[utoipa::path(get, path = "/api/skills/{name}", tag = "skills",
    params(("name" = Name, Path, description = "The skill's name")),
    responses((status = 200, description = "The skill with its history", body = SkillWithHistory),
        (status = 404, description = "No such skill (a deleted one's history is at `/history`)"),
        (status = 422, description = "Not a skill name")))]
async fn one_skill(State(kernel): State<Kernel>, Path(name): Path<String>) -> ApiResult<Json<SkillWithHistory>> {
    let skill = kernel.service::<Skills>().get(&name).await?;
    let history = kernel.service::<Skills>().history(&name).await?;
    let used_by = kernel.agents().types_using_skill(&name);
    Ok(Json(SkillWithHistory { skill, history, used_by }))
}

/// An operator's edit of a skill.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct SkillEdit {
    /// The new manifest; its `name` must be the skill's. None keeps the manifest.
    manifest: Option<Manifest>,
    /// The whole new body.
    body: String,
}

/// Replaces a skill's body, and its manifest when one is given, as one new version.
#[utoipa::path(put, path = "/api/skills/{name}", tag = "skills",
    params(("name" = Name, Path, description = "The skill's name")),
    request_body = SkillEdit,
    responses((status = 200, description = "The new version", body = Evolved),
        (status = 404, description = "No such skill"),
        (status = 422, description = "A bad manifest or body, or a manifest naming another skill")))]
async fn edit_skill(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(name): Path<String>,
    JsonBody(edit): JsonBody<SkillEdit>,
) -> ApiResult<Json<Evolved>> {
    Ok(Json(kernel.service::<Skills>().edit(&Actor::person(&caller), &name, edit.manifest, edit.body).await?))
}

/// Deletes a skill: its folder is set aside and its history kept; `POST …/restore` brings it
/// back.
#[utoipa::path(delete, path = "/api/skills/{name}", tag = "skills",
    params(("name" = Name, Path, description = "The skill's name")),
    responses((status = 200, description = "The `delete` version", body = Evolved),
        (status = 404, description = "No such skill"), (status = 422, description = "Not a skill name")))]
async fn delete_skill(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(name): Path<String>,
) -> ApiResult<Json<Evolved>> {
    Ok(Json(kernel.service::<Skills>().delete(&Actor::person(&caller), &name).await?))
}

/// A skill's whole history, oldest first: a deleted skill's too.
#[utoipa::path(get, path = "/api/skills/{name}/history", tag = "skills",
    params(("name" = Name, Path, description = "The skill's name")),
    responses((status = 200, description = "Every operation, oldest first (empty: there never was such a skill)", body = Vec<HistoryEntry>),
        (status = 422, description = "Not a skill name")))]
async fn skill_history(State(kernel): State<Kernel>, Path(name): Path<String>) -> ApiResult<Json<Vec<HistoryEntry>>> {
    Ok(Json(kernel.service::<Skills>().history(&name).await?))
}

/// Which support file.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct FilePath {
    /// `references/…`, `templates/…`, `scripts/…` or `assets/…`: plain names (no control
    /// characters, `%`, `.` or `..` parts), at most 16 parts.
    #[param(
        max_length = 256,
        pattern = r"^(references|templates|scripts|assets)(/([^/.\u0000-\u001f\u007f-\u009f%][^/\u0000-\u001f\u007f-\u009f%]{0,62}|\.[^/.\u0000-\u001f\u007f-\u009f%][^/\u0000-\u001f\u007f-\u009f%]{0,61}|\.\.[^/\u0000-\u001f\u007f-\u009f%]{1,61})){1,15}$"
    )]
    path: String,
}

/// A support file's text.
#[utoipa::path(get, path = "/api/skills/{name}/files", tag = "skills",
    params(("name" = Name, Path, description = "The skill's name"), FilePath),
    responses((status = 200, description = "The file's text", body = String, content_type = "text/plain"),
        (status = 404, description = "No such skill or file"), (status = 422, description = "A bad name or path")))]
async fn read_support_file(
    State(kernel): State<Kernel>,
    Path(name): Path<String>,
    QueryParams(file): QueryParams<FilePath>,
) -> ApiResult<Response> {
    let text = kernel.service::<Skills>().read_file(&name, &file.path).await?;
    Ok(([(axum::http::header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
}

/// A support file's new text.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct SupportFile {
    /// `references/…`, `templates/…`, `scripts/…` or `assets/…`.
    path: String,
    text: String,
}

/// Adds or replaces a support file.
#[utoipa::path(put, path = "/api/skills/{name}/files", tag = "skills",
    params(("name" = Name, Path, description = "The skill's name")),
    request_body = SupportFile,
    responses((status = 200, description = "The new version", body = Evolved),
        (status = 404, description = "No such skill"),
        (status = 422, description = "A path outside the four folders, or a file too large")))]
async fn write_support_file(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(name): Path<String>,
    JsonBody(file): JsonBody<SupportFile>,
) -> ApiResult<Json<Evolved>> {
    Ok(Json(kernel.service::<Skills>().write_file(&Actor::person(&caller), &name, &file.path, file.text).await?))
}

/// Removes a support file.
#[utoipa::path(delete, path = "/api/skills/{name}/files", tag = "skills",
    params(("name" = Name, Path, description = "The skill's name"), FilePath),
    responses((status = 200, description = "The new version", body = Evolved),
        (status = 404, description = "No such skill or file"), (status = 422, description = "A bad name or path")))]
async fn remove_support_file(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(name): Path<String>,
    QueryParams(file): QueryParams<FilePath>,
) -> ApiResult<Json<Evolved>> {
    Ok(Json(kernel.service::<Skills>().remove_file(&Actor::person(&caller), &name, &file.path).await?))
}

/// Which version to roll back to.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct Rollback {
    /// A version of the skill's history; none (or no body) is one step back.
    #[schema(minimum = 1)]
    version: Option<i64>,
}

/// Restores the manifest and body of an earlier version, as a new version.
#[utoipa::path(post, path = "/api/skills/{name}/rollback", tag = "skills",
    params(("name" = Name, Path, description = "The skill's name")),
    request_body(content = Option<Rollback>, description = "`{}` or no body: one step back"),
    responses((status = 200, description = "The `rollback` version", body = Evolved),
        (status = 404, description = "No such skill or version"),
        (status = 422, description = "Not a version before the current one")))]
async fn roll_back_skill(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(name): Path<String>,
    JsonBody(rollback): JsonBody<Rollback>,
) -> ApiResult<Json<Evolved>> {
    Ok(Json(kernel.service::<Skills>().rollback(&Actor::person(&caller), &name, rollback.version).await?))
}

/// Brings a deleted skill back with its support files, as a new version.
#[utoipa::path(post, path = "/api/skills/{name}/restore", tag = "skills",
    params(("name" = Name, Path, description = "The skill's name")),
    responses((status = 200, description = "The `restore` version", body = Evolved),
        (status = 404, description = "There never was such a skill"),
        (status = 409, description = "The skill is not deleted"),
        (status = 422, description = "Not a skill name")))]
async fn restore_skill(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(name): Path<String>,
) -> ApiResult<Json<Evolved>> {
    Ok(Json(kernel.service::<Skills>().restore(&Actor::person(&caller), &name).await?))
}

/// The skills deleted and not restored, by name: each one's `delete` entry (who, when, and the
/// manifest and body it had).
#[utoipa::path(get, path = "/api/deleted-skills", tag = "skills",
    responses((status = 200, description = "The deleted skills", body = Vec<HistoryEntry>)))]
async fn deleted_skills(State(kernel): State<Kernel>) -> ApiResult<Json<Vec<HistoryEntry>>> {
    Ok(Json(kernel.service::<Skills>().deleted().await?))
}

/// Which proposals.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ProposalFilter {
    /// pending, accepted or rejected; every state when not given.
    state: Option<ProposalState>,
    /// One skill's only.
    #[param(value_type = Option<Name>)]
    skill: Option<String>,
}

/// Agents' changes to skills that are not theirs alone (one an operator or another agent made,
/// one other agents load), oldest first. None is in any prompt until an operator accepts it.
#[utoipa::path(get, path = "/api/skill-proposals", tag = "skills", params(ProposalFilter),
    responses((status = 200, description = "The proposals", body = Vec<Proposal>),
        (status = 422, description = "A bad state or skill name")))]
async fn skill_proposals(
    State(kernel): State<Kernel>,
    QueryParams(filter): QueryParams<ProposalFilter>,
) -> ApiResult<Json<Vec<Proposal>>> {
    if let Some(skill) = &filter.skill {
        kennel_kernel::skills::check_name(skill)?;
    }
    Ok(Json(kernel.service::<Skills>().proposals(filter.state, filter.skill.as_deref()).await?))
}

/// One proposal, with the skill as it would leave it and its diff.
#[utoipa::path(get, path = "/api/skill-proposals/{id}", tag = "skills",
    params(("id" = i64, Path, minimum = 1, description = "The proposal's number")),
    responses((status = 200, description = "The proposal", body = Proposal),
        (status = 404, description = "No such proposal"), (status = 422, description = "Not a proposal number")))]
async fn one_skill_proposal(State(kernel): State<Kernel>, Path(id): Path<String>) -> ApiResult<Json<Proposal>> {
    Ok(Json(kernel.service::<Skills>().proposal(proposal_id(&id)?).await?))
}

/// Accepts a pending proposal: the skill becomes what it proposed, as a new version recorded
/// as the caller's.
#[utoipa::path(post, path = "/api/skill-proposals/{id}/accept", tag = "skills",
    params(("id" = i64, Path, minimum = 1, description = "The proposal's number")),
    responses((status = 200, description = "The version it made", body = Evolved),
        (status = 404, description = "No such proposal"),
        (status = 409, description = "Decided already, or the skill changed since it was proposed"),
        (status = 422, description = "Not a proposal number")))]
async fn accept_skill_proposal(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(id): Path<String>,
) -> ApiResult<Json<Evolved>> {
    Ok(Json(kernel.service::<Skills>().accept(&Actor::person(&caller), proposal_id(&id)?).await?))
}

/// Rejects a pending proposal: nothing of it is written.
#[utoipa::path(post, path = "/api/skill-proposals/{id}/reject", tag = "skills",
    params(("id" = i64, Path, minimum = 1, description = "The proposal's number")),
    responses((status = 200, description = "The rejected proposal", body = Proposal),
        (status = 404, description = "No such proposal"),
        (status = 409, description = "Decided already"), (status = 422, description = "Not a proposal number")))]
async fn reject_skill_proposal(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(id): Path<String>,
) -> ApiResult<Json<Proposal>> {
    Ok(Json(kernel.service::<Skills>().reject(&Actor::person(&caller), proposal_id(&id)?).await?))
}

/// A proposal's number from its path.
fn proposal_id(id: &str) -> Result<i64, kennel_kernel::Error> {
    id.parse::<i64>()
        .ok()
        .filter(|id| *id >= 1)
        .ok_or_else(|| kennel_kernel::Error::invalid(format!("`{id}` is not a proposal number")).with_field("id"))
}
