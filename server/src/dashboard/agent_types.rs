//! The agent-type editor's forms. Validation and conflicts are the kernel's
//! (`Agents::create_type` / `replace_type`), exactly as for `/api/templates`.

use std::sync::Arc;

use axum::Form;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kennel_app::Flash;
use kennel_app::pages::agent_types::{self, AgentTypesPage, EditPage, Picker, TypeForm};
use kennel_kernel::agent::{
    AgentType, ApplyRequest, Manifest, ManifestFormat, ManifestInput, TypeApplication, source, to_toml,
};
use kennel_kernel::error::FieldError;
use kennel_kernel::{Error, Kernel};
use serde::Deserialize;

use super::{Notice, Operator, PageResult, field_errors, html, meta, see_other, see_other_warned};
use crate::routes::{Action, Pages, get, post};

pub fn routes() -> Pages {
    Pages::new()
        .route("/agent-types", get(list).post(create, Action::named("type.create")))
        // Outside `/agent-types/{name}`: `preview` is a type name like any other.
        .route("/agent-types-preview", get(preview_tools))
        .route("/agent-types/{name}", get(edit).post(save, Action::named("type.update")))
        .route("/agent-types/{name}/toml", get(to_editor).post(replace_toml, Action::named("type.update")))
        .route("/agent-types/{name}/delete", post(delete, Action::named("type.delete")))
        .route("/agent-types/{name}/apply", get(apply_preview).post(apply, Action::named("type.apply")))
}

fn list_page(
    kernel: &Kernel,
    op: &Operator,
    status: StatusCode,
    form: TypeForm,
    errors: Vec<FieldError>,
    notice: Notice,
) -> Response {
    let page = AgentTypesPage {
        types: kernel.agents().types(),
        providers: kernel.agents().providers().to_vec(),
        default_provider: kernel.providers().default_name().map(str::to_string),
        models: model_choices(kernel),
        picker: picker(kernel, None, &form),
        form,
        errors,
    };
    html(status, agent_types::render_list(meta(op, "Agent types", agent_types::SECTION, notice.flash()), page))
}

pub async fn list(State(kernel): State<Kernel>, Extension(op): Extension<Operator>, n: Notice) -> Response {
    list_page(&kernel, &op, StatusCode::OK, TypeForm::default(), Vec::new(), n)
}

pub async fn create(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Form(fields): Form<Vec<(String, String)>>,
) -> Response {
    let form = TypeForm::from_fields(&fields);
    if form.preview {
        return unchanged(list_page(&kernel, &op, StatusCode::OK, form, Vec::new(), Notice::default()));
    }
    match kernel.agents().create_type(form.to_spec().into()).await {
        Ok(t) => saved(&kernel, &t, &format!("Agent type \u{201c}{}\u{201d} created.", t.manifest.name)),
        Err(e) => {
            let status = crate::status::status_for(e.kind);
            list_page(&kernel, &op, status, form, field_errors(&e, "name"), Notice::default())
        }
    }
}

fn edit_page(op: &Operator, status: StatusCode, page: EditPage, notice: Notice) -> Response {
    let title = format!("Agent type {}", page.agent_type.manifest.name);
    html(status, agent_types::render_edit(meta(op, title, agent_types::SECTION, notice.flash()), page))
}

/// Back to the type's page saying `done`, as a warning when a grant matches no tool on this
/// daemon (a typo, or a family not installed): saved all the same, since a dynamic provider
/// may add it later.
fn saved(kernel: &Kernel, t: &AgentType, done: &str) -> Response {
    let path = format!("/agent-types/{}", t.manifest.name);
    see_other_warned(&path, done, kernel.tools().grant_warning(&t.manifest.capabilities.tools))
}

/// The models config.toml describes, each with its provider: the model field's suggestions.
fn model_choices(kernel: &Kernel) -> Vec<(String, String)> {
    let providers = kernel.providers();
    providers.iter().flat_map(|p| p.configured_models().map(|m| (m.to_string(), p.name().to_string()))).collect()
}

/// The tool picker for `form`'s grants, previewed against the stored type's manifest (its
/// deny list, memory scopes and tool mode), or a new type's defaults: the standings the
/// registry gives an agent made from it.
fn picker(kernel: &Kernel, stored: Option<&Manifest>, form: &TypeForm) -> Picker {
    let tools = kernel.tools();
    let preview = match stored {
        Some(m) => tools.preview(m, form.grants()),
        None => tools.preview(&Manifest::unsaved(), form.grants()),
    };
    let query = [("type", stored.map(|m| m.name.as_str()).unwrap_or_default())];
    Picker {
        tools: tools.defs(),
        preview: preview.map_err(|e| match e.fields.is_empty() {
            true => e.message,
            false => e.fields.into_iter().map(|f| f.message).collect::<Vec<_>>().join("; "),
        }),
        preview_url: format!("/agent-types-preview?{}", serde_urlencoded::to_string(query).unwrap_or_default()),
    }
}

/// A page that previews and saves nothing: not an entry in the operator-action log.
fn unchanged(mut response: Response) -> Response {
    response.extensions_mut().insert(crate::actions::Unchanged);
    response
}

/// The tool picker alone, for the grants in the query (`grant` per ticked box, `tools` as
/// typed) and the stored type it edits (`type`, empty for a new one): what `live.js` asks
/// for as boxes are ticked, to show each tool's new standing.
pub async fn preview_tools(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Query(fields): Query<Vec<(String, String)>>,
) -> PageResult {
    let stored = match fields.iter().find(|(k, _)| k == "type").map(|(_, v)| v.as_str()) {
        None | Some("") => None,
        Some(name) => Some(kernel.agents().get_type(name)?),
    };
    let form = TypeForm::from_fields(&fields);
    let picker = picker(&kernel, stored.as_ref().map(|t| &t.manifest), &form);
    Ok(html(StatusCode::OK, agent_types::render_picker(picker, form.grants())))
}

/// What applying the type would change in its agents, for the editor's card.
async fn preview(kernel: &Kernel, name: &str) -> Result<TypeApplication, Error> {
    kernel.agents().apply_type(name, &ApplyRequest { dry_run: true, expected_updated_at: None }).await
}

fn fresh_edit(kernel: &Kernel, t: Arc<AgentType>, application: TypeApplication) -> EditPage {
    EditPage {
        application,
        providers: kernel.agents().providers().to_vec(),
        default_provider: kernel.providers().default_name().map(str::to_string),
        models: model_choices(kernel),
        picker: picker(kernel, Some(&t.manifest), &TypeForm::from_manifest(&t.manifest)),
        form: TypeForm::from_manifest(&t.manifest),
        toml: to_toml(&t.manifest),
        agent_type: t,
        errors: Vec::new(),
        toml_errors: Vec::new(),
    }
}

pub async fn edit(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
    n: Notice,
) -> PageResult {
    let application = preview(&kernel, &name).await?;
    Ok(edit_page(&op, StatusCode::OK, fresh_edit(&kernel, kernel.agents().get_type(&name)?, application), n))
}

/// The preview of applying the type to its agents, with the form that applies it.
pub async fn apply_preview(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
) -> PageResult {
    let application = preview(&kernel, &name).await?;
    Ok(apply_page(&op, application, None))
}

fn apply_page(op: &Operator, application: TypeApplication, flash: Option<Flash>) -> Response {
    let title = format!("Apply type {}", application.agent_type);
    let page = agent_types::ApplyPage { application };
    html(StatusCode::OK, agent_types::render_apply(meta(op, title, agent_types::SECTION, flash), page))
}

#[derive(Deserialize)]
pub struct ApplyForm {
    #[serde(default)]
    expected_updated_at: String,
}

/// Applies the type as previewed; a type saved since shows the new preview with why.
pub async fn apply(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
    Form(form): Form<ApplyForm>,
) -> PageResult {
    let req = ApplyRequest { dry_run: false, expected_updated_at: Some(form.expected_updated_at) };
    match kernel.agents().apply_type(&name, &req).await {
        Ok(done) => {
            let names: Vec<&str> =
                done.agents.iter().filter(|a| !a.changes.is_empty()).map(|a| a.name.as_str()).collect();
            let notice = match names.len() {
                0 => format!("Every agent of `{name}` already matched it: nothing changed."),
                n => format!(
                    "Applied type `{name}` to {n} agent{}: {}.",
                    if n == 1 { "" } else { "s" },
                    names.join(", ")
                ),
            };
            Ok(see_other(&format!("/agent-types/{name}"), &notice))
        }
        Err(e) if e.kind == kennel_kernel::ErrorKind::Conflict => {
            let mut response = apply_page(&op, preview(&kernel, &name).await?, Some(Flash::Error(e.message.clone())));
            *response.status_mut() = StatusCode::CONFLICT;
            response.extensions_mut().insert(crate::actions::Refused::of(&e));
            Ok(response)
        }
        Err(e) => Err(e.into()),
    }
}

/// Saves the seven fields; the rest of the manifest (mode, limits, cron, …) is kept.
pub async fn save(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
    Form(fields): Form<Vec<(String, String)>>,
) -> PageResult {
    let current = kernel.agents().get_type(&name)?;
    let form = TypeForm { name: name.clone(), ..TypeForm::from_fields(&fields) };
    if form.preview {
        let page = EditPage {
            picker: picker(&kernel, Some(&current.manifest), &form),
            form,
            ..fresh_edit(&kernel, current.clone(), preview(&kernel, &name).await?)
        };
        return Ok(unchanged(edit_page(&op, StatusCode::OK, page, Notice::default())));
    }
    let spec = form.to_spec();
    let mut input = ManifestInput::from(&current.manifest);
    input.description = spec.description;
    input.system_prompt = spec.system_prompt;
    input.provider = spec.provider;
    input.model = spec.model;
    input.skills = spec.skills;
    if let Some(caps) = input.capabilities.as_mut() {
        caps.tools = spec.tools;
    }
    match kernel.agents().replace_type(&name, input).await {
        Ok(t) => Ok(saved(&kernel, &t, "Saved.")),
        Err(e) => {
            let page = EditPage {
                errors: field_errors(&e, "name"),
                picker: picker(&kernel, Some(&current.manifest), &form),
                form,
                ..fresh_edit(&kernel, current, preview(&kernel, &name).await?)
            };
            Ok(edit_page(&op, crate::status::status_for(e.kind), page, Notice::default()))
        }
    }
}

/// The address a refused "Replace manifest" leaves in the browser, opened again (a reload
/// after the form is gone, a link copied): the editor, at its TOML.
pub async fn to_editor(Extension(_): Extension<Operator>, Path(name): Path<String>) -> Response {
    axum::response::Redirect::to(&format!("/agent-types/{name}#manifest")).into_response()
}

#[derive(Deserialize)]
pub struct TomlForm {
    toml: String,
}

/// Replaces the whole manifest from its TOML text.
pub async fn replace_toml(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
    Form(form): Form<TomlForm>,
) -> PageResult {
    let current = kernel.agents().get_type(&name)?;
    // Read as `kennel type apply` reads a file: every problem at its line and column.
    let (status, problems) = match source::read(&form.toml, ManifestFormat::Toml) {
        Err(problems) => (StatusCode::UNPROCESSABLE_ENTITY, problems),
        Ok((input, _)) => match kernel.agents().replace_type(&name, input).await {
            Ok(t) => return Ok(saved(&kernel, &t, "Manifest replaced.")),
            Err(e) if e.fields.is_empty() => return Err(e.into()),
            Err(e) => (crate::status::status_for(e.kind), source::locate(&form.toml, ManifestFormat::Toml, e.fields)),
        },
    };
    let page = EditPage {
        toml: form.toml,
        toml_errors: problems,
        ..fresh_edit(&kernel, current, preview(&kernel, &name).await?)
    };
    Ok(edit_page(&op, status, page, Notice::default()))
}

pub async fn delete(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(name): Path<String>,
) -> PageResult {
    kernel.agents().delete_type(&name).await?;
    Ok(see_other("/agent-types", &format!("Agent type `{name}` deleted.")))
}
