//! `/skills` and `/skills/{name}`: the daemon's skills, one skill's history, and an operator's
//! edit, rollback, delete and restore, and the accepting or rejecting of agents' proposals — the same `Skills` service as `/api/skills`, recorded in
//! the skill's history as the signed-in operator.

use axum::Form;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use kennel_app::pages::skills::{self, SkillForm, SkillPage};
use kennel_kernel::Kernel;
use kennel_kernel::error::FieldError;
use kennel_kernel::skills::Skills;
use kennel_kernel::skills::{Actor, ProposalState};
use kennel_kernel::tool::Caller;
use serde::Deserialize;

use super::{Notice, Operator, PageResult, field_errors, html, meta, see_other};
use crate::routes::{Action, Pages, get, post};

pub fn routes() -> Pages {
    Pages::new()
        .route("/skills", get(list))
        .route("/skills/{name}", get(one).post(save, Action::named("skill.update")))
        .route("/skills/{name}/rollback", post(rollback, Action::named("skill.rollback")))
        .route("/skills/{name}/delete", post(delete, Action::named("skill.delete")))
        .route("/skills/{name}/restore", post(restore, Action::named("skill.restore")))
        .route("/skill-proposals/{id}/accept", post(accept, Action::named("skill.accept")))
        .route("/skill-proposals/{id}/reject", post(reject, Action::named("skill.reject")))
}

pub async fn list(State(kernel): State<Kernel>, Extension(op): Extension<Operator>, n: Notice) -> PageResult {
    let all = kernel.service::<Skills>().list().await?;
    let pending = kernel.service::<Skills>().proposals(Some(ProposalState::Pending), None).await?;
    let deleted = kernel.service::<Skills>().deleted().await?;
    let meta = meta(&op, "Skills", skills::SECTION, n.flash());
    Ok(html(
        StatusCode::OK,
        skills::render_list(meta, all, pending, deleted, kernel.config().retention.deleted_skills_days),
    ))
}

pub async fn one(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
    n: Notice,
) -> PageResult {
    skill_page(&kernel, &op, &name, StatusCode::OK, None, Vec::new(), n).await
}

/// The skill's page; `form` (as sent, with `errors`) in place of the skill as it is.
async fn skill_page(
    kernel: &Kernel,
    op: &Operator,
    name: &str,
    status: StatusCode,
    form: Option<SkillForm>,
    errors: Vec<FieldError>,
    n: Notice,
) -> PageResult {
    let skill = kernel.service::<Skills>().get(name).await?;
    let history = kernel.service::<Skills>().history(name).await?;
    let title = format!("{} · skill", skill.manifest.name);
    let page = SkillPage {
        form: form.unwrap_or_else(|| SkillForm::from_skill(&skill)),
        used_by: kernel.agents().types_using_skill(name),
        proposals: kernel.service::<Skills>().proposals(Some(ProposalState::Pending), Some(name)).await?,
        skill,
        history,
        errors,
    };
    Ok(html(status, skills::render_skill(meta(op, title, skills::SECTION, n.flash()), page)))
}

#[derive(Deserialize)]
pub struct EditFields {
    #[serde(default)]
    description: String,
    #[serde(default)]
    tags: String,
    #[serde(default)]
    label: String,
    #[serde(default)]
    body: String,
}

/// Saves the form as a new version; a refusal sends the form back as typed, with its errors.
pub async fn save(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
    Form(f): Form<EditFields>,
) -> PageResult {
    let form = SkillForm { description: f.description, tags: f.tags, label: f.label, body: f.body };
    let manifest = form.manifest(&name);
    match kernel.service::<Skills>().edit(&actor(&op), &name, Some(manifest), form.body.clone()).await {
        Ok(evolved) => Ok(see_other(&skills::skill_href(&name), &format!("Saved as version {}.", evolved.version))),
        Err(e) if e.kind == kennel_kernel::ErrorKind::InvalidArguments => {
            let errors = field_errors(&e, "body");
            let status = crate::status::status_for(e.kind);
            skill_page(&kernel, &op, &name, status, Some(form), errors, Notice::default()).await
        }
        Err(e) => Err(e.into()),
    }
}

#[derive(Deserialize)]
pub struct RollbackFields {
    version: i64,
}

pub async fn rollback(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
    Form(f): Form<RollbackFields>,
) -> PageResult {
    let evolved = kernel.service::<Skills>().rollback(&actor(&op), &name, Some(f.version)).await?;
    let notice = format!("Rolled back to version {} as version {}.", f.version, evolved.version);
    Ok(see_other(&skills::skill_href(&name), &notice))
}

pub async fn delete(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
) -> PageResult {
    kernel.service::<Skills>().delete(&actor(&op), &name).await?;
    Ok(see_other("/skills", &format!("Skill {name} deleted; restore it from the list below.")))
}

pub async fn restore(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
) -> PageResult {
    let evolved = kernel.service::<Skills>().restore(&actor(&op), &name).await?;
    Ok(see_other(&skills::skill_href(&name), &format!("Restored as version {}.", evolved.version)))
}

/// Accepts an agent's proposal as the signed-in operator: a new version of its skill.
pub async fn accept(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<i64>,
) -> PageResult {
    let evolved = kernel.service::<Skills>().accept(&actor(&op), id).await?;
    let notice = format!("Accepted proposal {id} as version {}.", evolved.version);
    Ok(see_other(&skills::skill_href(&evolved.skill), &notice))
}

/// Rejects an agent's proposal: nothing of it is written.
pub async fn reject(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<i64>,
) -> PageResult {
    let proposal = kernel.service::<Skills>().reject(&actor(&op), id).await?;
    Ok(see_other("/skills", &format!("Rejected proposal {id} of agent {}.", proposal.agent_name)))
}

fn actor(op: &Operator) -> Actor {
    Actor::person(&Caller::Operator(op.name.clone()))
}
