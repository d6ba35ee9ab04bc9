//! `/api/skills`: the daemon's skills for operators — every manifest, and one skill whole
//! with its full evolution history (spec §8: the audit trail of every `skill_evolve_*`).

use axum::Json;
use axum::extract::{Path, State};
use kennel_kernel::Kernel;
use kennel_kernel::skills::{HistoryEntry, Manifest, Skill};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::UtoipaMethodRouter;
use utoipa_axum::routes;

use super::error::ApiResult;

pub fn routes() -> Vec<UtoipaMethodRouter<Kernel>> {
    vec![routes!(all_skills), routes!(one_skill)]
}

/// Every skill's manifest, by name.
#[utoipa::path(get, path = "/api/skills", tag = "skills",
    responses((status = 200, description = "The skills' manifests", body = Vec<Manifest>)))]
async fn all_skills(State(kernel): State<Kernel>) -> ApiResult<Json<Vec<Manifest>>> {
    Ok(Json(kernel.skills().list().await?))
}

/// A skill and every operation on it, oldest first.
#[derive(Serialize, ToSchema)]
struct SkillWithHistory {
    #[serde(flatten)]
    skill: Skill,
    history: Vec<HistoryEntry>,
}

/// One skill: its manifest, body, support files, version and full history.
#[utoipa::path(get, path = "/api/skills/{name}", tag = "skills",
    params(("name" = String, Path, pattern = r"^[a-z0-9_-]{1,64}$", description = "The skill's name")),
    responses((status = 200, description = "The skill with its history", body = SkillWithHistory),
        (status = 404, description = "No such skill"), (status = 422, description = "Not a skill name")))]
async fn one_skill(State(kernel): State<Kernel>, Path(name): Path<String>) -> ApiResult<Json<SkillWithHistory>> {
    let skill = kernel.skills().get(&name).await?;
    let history = kernel.skills().history(&name).await?;
    Ok(Json(SkillWithHistory { skill, history }))
}
