//! `/agent-types`: the agent-type editor. A form for the seven fields an agent may also set
//! (`agent_type_create`), and the full manifest as TOML. Validation is the kernel's; errors
//! arrive as field errors and are shown next to their field.

use std::sync::Arc;

use kennel_kernel::agent::{AgentType, AgentTypeSpec, FieldChange, Manifest, TypeApplication};
use kennel_kernel::error::FieldError;
use kennel_kernel::tool::{GrantPreview, ToolDef};
use leptos::prelude::*;

use crate::shell::{PageMeta, Section, Shell};
use crate::widgets::{Csrf, IntoRendered, Rendered, TextArea, field_error, form_list, standing_class, standing_label};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/agent-types", "Agent types");

/// The seven fields as the form holds them (lists as comma- or line-separated text).
#[derive(Debug, Clone, Default)]
pub struct TypeForm {
    pub name: String,
    pub description: String,
    pub system_prompt: String,
    pub provider: String,
    pub model: String,
    /// The grants ticked in the tool picker (a family's `family.*`, a tool's name), or all
    /// of a stored type's grants: the picker ticks those it offers and types out the rest.
    pub picked: Vec<String>,
    /// The grants typed beside the picker: globs, reaches, tools this daemon lacks.
    pub tools: String,
    pub skills: String,
    /// "Preview" was pressed: the page shows the effective set, and nothing is saved.
    pub preview: bool,
}

fn list(text: &str) -> Option<Vec<String>> {
    Some(form_list(text))
}

fn text(value: &str) -> Option<String> {
    (!value.trim().is_empty()).then(|| value.trim().to_string())
}

impl TypeForm {
    pub fn from_manifest(m: &Manifest) -> TypeForm {
        TypeForm {
            name: m.name.clone(),
            description: m.description.clone(),
            system_prompt: m.system_prompt.clone(),
            provider: m.provider.clone().unwrap_or_default(),
            model: m.model.clone().unwrap_or_default(),
            picked: m.capabilities.tools.iter().map(|g| g.as_str().to_string()).collect(),
            tools: String::new(),
            skills: m.skills.join(", "),
            preview: false,
        }
    }

    /// The form as posted: each field once, `grant` once per ticked box.
    pub fn from_fields(fields: &[(String, String)]) -> TypeForm {
        let mut form = TypeForm::default();
        for (key, value) in fields {
            match key.as_str() {
                "name" => form.name = value.clone(),
                "description" => form.description = value.clone(),
                "system_prompt" => form.system_prompt = value.clone(),
                "provider" => form.provider = value.clone(),
                "model" => form.model = value.clone(),
                "grant" => form.picked.push(value.clone()),
                "tools" => form.tools = value.clone(),
                "skills" => form.skills = value.clone(),
                "preview" => form.preview = true,
                _ => {}
            }
        }
        form
    }

    /// Every grant of the form, ticked then typed (the kernel keeps each once).
    pub fn grants(&self) -> Vec<String> {
        self.picked.iter().cloned().chain(form_list(&self.tools)).collect()
    }

    /// The form as the seven-field spec the kernel validates.
    pub fn to_spec(&self) -> AgentTypeSpec {
        AgentTypeSpec {
            name: self.name.trim().to_string(),
            description: text(&self.description),
            system_prompt: text(&self.system_prompt),
            provider: text(&self.provider),
            model: text(&self.model),
            tools: Some(self.grants()),
            skills: list(&self.skills),
        }
    }
}

/// What the tool picker shows: every tool this daemon has and how each stands with the
/// form's grants.
pub struct Picker {
    /// Every tool, in registration order.
    pub tools: Vec<Arc<ToolDef>>,
    /// The standings with the form's grants ([`kennel_kernel::tool::Registry::preview`]), or
    /// why those grants cannot be read.
    pub preview: Result<GrantPreview, String>,
    /// Where the page asks for the standings again as the form changes (`/agent-types-preview?type=…`).
    pub preview_url: String,
}

pub struct AgentTypesPage {
    pub types: Vec<Arc<AgentType>>,
    /// The providers config.toml defines: the choices of the provider field.
    pub providers: Vec<String>,
    /// What "the default" is (`Config::default_provider`).
    pub default_provider: Option<String>,
    /// The models config.toml describes, with their providers: the model field's suggestions.
    pub models: Vec<(String, String)>,
    pub form: TypeForm,
    pub errors: Vec<FieldError>,
    pub picker: Picker,
}

pub fn render_list(meta: PageMeta, page: AgentTypesPage) -> String {
    let csrf = meta.csrf.clone();
    let rows = page
        .types
        .iter()
        .map(|t| {
            let m = &t.manifest;
            let grants = m.capabilities.tools.iter().map(|g| g.as_str()).collect::<Vec<_>>().join(", ");
            let agent_made = t.made_by.map(|id| {
                view! { " " <a class="tag" href=format!("/agents/{id}") title="Made by an agent with agent_type_create; its grants are capped at that agent's">"agent-made"</a> }
            });
            view! {
                <tr>
                    <td><a href=format!("/agent-types/{}", m.name)>{m.name.clone()}</a>{agent_made}</td>
                    <td>{m.description.clone()}</td>
                    <td>{m.model.clone().unwrap_or_default()}</td>
                    <td>{m.tool_mode.as_str()}</td>
                    <td><code>{grants}</code></td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    let empty =
        page.types.is_empty().then(|| view! { <p class="empty">"No agent types yet: create the first one below."</p> });
    crate::document(
        view! {
            <Shell meta>
                <h1>"Agent types"</h1>
                <section class="card">
                    {empty}
                    <div class="scroll">
                        <table>
                            <thead><tr><th>"Name"</th><th>"Description"</th><th>"Model"</th><th>"Tool mode"</th><th>"Grants"</th></tr></thead>
                            <tbody>{rows}</tbody>
                        </table>
                    </div>
                </section>
                <section class="card">
                    <h2>"New agent type"</h2>
                    <TypeFields action="/agent-types".into() form=page.form errors=page.errors csrf submit="Create agent type" name_editable=true providers=page.providers default_provider=page.default_provider models=page.models picker=page.picker/>
                </section>
            </Shell>
        }
        .to_html(),
    )
}

#[component]
fn TypeFields(
    action: String,
    form: TypeForm,
    errors: Vec<FieldError>,
    csrf: String,
    submit: &'static str,
    name_editable: bool,
    providers: Vec<String>,
    default_provider: Option<String>,
    models: Vec<(String, String)>,
    picker: Picker,
) -> impl IntoView {
    // Suggestions, not a closed list: a provider serves models config.toml does not describe.
    let model_choices = models
        .into_iter()
        .map(|(model, provider)| view! { <option value=model.clone()>{format!("{model} ({provider})")}</option> })
        .collect::<Vec<_>>();
    let provider_choices = provider_options(&providers, default_provider.as_deref(), &form.provider);
    // Grants typed as `tools` or stored as `capabilities.tools` belong to the same input.
    let tools_error = field_error(&errors, "tools")
        .map(IntoRendered::rendered)
        .or_else(|| field_error(&errors, "capabilities.tools").map(IntoRendered::rendered));
    let grants = form.grants();
    view! {
        <form method="post" action=action class="stack" id="type-form">
            <Csrf token=csrf/>
            <label>"Name"
                <input type="text" name="name" value=form.name readonly=!name_editable required/>
            </label>
            {field_error(&errors, "name")}
            <label>"Description" <input type="text" name="description" value=form.description/></label>
            {field_error(&errors, "description")}
            <label>"System prompt" <TextArea name="system_prompt" rows=5 value=form.system_prompt/></label>
            {field_error(&errors, "system_prompt")}
            <div class="row">
                <label>"Provider" <select name="provider">{provider_choices}</select></label>
                <label>"Model" <input type="text" name="model" value=form.model list="model-choices" autocomplete="off"/></label>
                <datalist id="model-choices">{model_choices}</datalist>
            </div>
            {field_error(&errors, "provider")}
            {field_error(&errors, "model")}
            <ToolPicker picker grants/>
            {tools_error}
            <label>"Skills (comma-separated)" <input type="text" name="skills" value=form.skills/></label>
            {field_error(&errors, "skills")}
            <div class="actions">
                <button type="submit">{submit}</button>
                <button type="submit" name="preview" value="1" class="secondary" formnovalidate>"Preview the tools"</button>
            </div>
        </form>
    }
}

/// The tools field: a box per family (`family.*`, its tools now and any added later) and per
/// tool, each tool's standing with the grants as they are in the form and why (allowed by
/// which grant, denied, not granted, excluded on this daemon), and a line for the grants no
/// box offers. The parts marked `data-live-part` are what the page updates, with `live.js`,
/// from `preview_url` as boxes are ticked: the same render, asked again.
#[component]
pub fn ToolPicker(picker: Picker, grants: Vec<String>) -> impl IntoView {
    let mut families: Vec<(String, Vec<Arc<ToolDef>>)> = Vec::new();
    for def in picker.tools {
        match families.iter_mut().find(|(f, _)| *f == def.family) {
            Some((_, tools)) => tools.push(def),
            None => families.push((def.family.clone(), vec![def])),
        }
    }
    let offered = |g: &String| {
        families.iter().any(|(f, tools)| g.strip_suffix(".*") == Some(f.as_str()) || tools.iter().any(|t| t.name == *g))
    };
    let typed = grants.iter().filter(|g| !offered(g)).cloned().collect::<Vec<_>>().join(", ");
    let standings: std::collections::HashMap<&str, &kennel_kernel::tool::ToolStatus> = match &picker.preview {
        Ok(p) => p.tools.iter().map(|t| (t.name.as_str(), &t.status)).collect(),
        Err(_) => Default::default(),
    };
    let total = families.iter().map(|(_, t)| t.len()).sum::<usize>();
    let allowed = standings.values().filter(|s| s.is_allowed()).count();
    let summary = match &picker.preview {
        Ok(_) => format!("{allowed} of {total} tools in with these grants."),
        Err(why) => format!("The grants cannot be previewed: {why}"),
    };
    let warning = picker.preview.as_ref().ok().and_then(|p| p.warning.clone());
    let no_warning = warning.is_none();
    let rows = families
        .iter()
        .map(|(family, tools)| {
            let grant = format!("{family}.*");
            let counted = tools.iter().filter(|t| standings.get(t.name.as_str()).is_some_and(|s| s.is_allowed())).count();
            let single = tools.iter().any(|t| grants.contains(&t.name));
            let items = tools
                .iter()
                .map(|t| {
                    let (label, class) = match standings.get(t.name.as_str()) {
                        Some(s) => (standing_label(s), standing_class(s)),
                        None => (String::new(), "hint"),
                    };
                    view! {
                        <li>
                            <label class="check"><input type="checkbox" name="grant" value=t.name.clone() checked=grants.contains(&t.name)/>" "<code>{t.name.clone()}</code></label>
                            <span class=format!("standing {class}") id=format!("standing-{}", t.name) data-live-part="">{label}</span>
                            <span class="hint summary-text">{t.description.clone()}</span>
                        </li>
                    }
                })
                .collect::<Vec<_>>();
            view! {
                <div class="pick-family">
                    <div class="pick-head">
                        <label class="check"><input type="checkbox" name="grant" value=grant.clone() checked=grants.contains(&grant)/>" "<code>{grant.clone()}</code></label>
                        <span class="hint" id=format!("count-{family}") data-live-part="">{format!("{counted} of {} in", tools.len())}</span>
                    </div>
                    <details open=single>
                        <summary>{format!("Single {family} tools")}</summary>
                        <ul class="pick-tools">{items}</ul>
                    </details>
                </div>
            }
        })
        .collect::<Vec<_>>();
    view! {
        <fieldset class="tool-picker" id="tool-picker" data-preview=picker.preview_url>
            <legend>"Tools"</legend>
            <p class="hint">"Tick a family for all of its tools (and any it gains later), or open it for single tools. Each tool says whether an agent of this type could call it, and why."</p>
            <p id="tool-summary" data-live-part="" aria-live="polite">{crate::widgets::rich_text(&summary)}</p>
            <p id="grant-warning" class="warning" data-live-part="" hidden=no_warning>{crate::widgets::rich_text(&warning.unwrap_or_default())}</p>
            <div class="pick-families">{rows}</div>
            <label>"Other grants (comma-separated: globs such as memory_*, agents.kill_any, tools this daemon does not have yet)"
                <input type="text" name="tools" value=typed/>
            </label>
        </fieldset>
    }
}

/// The picker alone, as the page asks for it while boxes are ticked.
pub fn render_picker(picker: Picker, grants: Vec<String>) -> String {
    view! { <ToolPicker picker grants/> }.to_html()
}

/// The provider field's choices: "the default" (empty: whichever provider is the daemon's
/// default when a turn runs), each configured provider, and the form's own value when it is
/// none of them (so a stored or typed name that is not configured stays visible next to its
/// error instead of silently becoming the default).
fn provider_options(providers: &[String], default: Option<&str>, current: &str) -> Vec<Rendered> {
    let default = match default {
        Some(name) => format!("the default ({name})"),
        None => "none configured (add [providers.NAME] to config.toml)".to_string(),
    };
    let mut options = vec![view! { <option value="" selected=current.is_empty()>{default}</option> }.rendered()];
    for p in providers {
        options.push(view! { <option value=p.clone() selected=p == current>{p.clone()}</option> }.rendered());
    }
    if !current.is_empty() && !providers.iter().any(|p| p == current) {
        let label = format!("{current} (not configured)");
        options.push(view! { <option value=current.to_string() selected=true>{label}</option> }.rendered());
    }
    options
}

pub struct EditPage {
    pub agent_type: Arc<AgentType>,
    pub providers: Vec<String>,
    pub default_provider: Option<String>,
    /// The models config.toml describes, with their providers.
    pub models: Vec<(String, String)>,
    pub form: TypeForm,
    pub errors: Vec<FieldError>,
    pub picker: Picker,
    /// The TOML text to show: the stored manifest, or what was just submitted with its error.
    pub toml: String,
    /// What is wrong with the TOML just submitted, each at its line and column.
    pub toml_errors: Vec<kennel_kernel::agent::source::Problem>,
    /// What applying the type to its agents would change (a preview).
    pub application: TypeApplication,
}

pub fn render_edit(meta: PageMeta, page: EditPage) -> String {
    let csrf = meta.csrf.clone();
    let name = page.agent_type.manifest.name.clone();
    let toml_errors = (!page.toml_errors.is_empty()).then(|| {
        let items = page
            .toml_errors
            .iter()
            .map(|p| {
                let field = p.field.as_deref().map(|f| format!("{f}: ")).unwrap_or_default();
                view! { <li>{format!("line {}, column {}: {field}", p.line, p.column)}{crate::widgets::rich_text(&p.message)}</li> }
            })
            .collect::<Vec<_>>();
        view! { <ul class="field-error" id="toml-error">{items}</ul> }
    });
    crate::document(
        view! {
            <Shell meta>
                <h1>{format!("Agent type {name}")}</h1>
                <p class="hint">{format!("Created {}, changed {} (UTC). Agents already made from it keep their own copy.", crate::widgets::short_time(&page.agent_type.created_at), crate::widgets::short_time(&page.agent_type.updated_at))}</p>
                {page.agent_type.made_by.map(|id| view! {
                    <p class="hint" id="made-by">"Made by "<a href=format!("/agents/{id}")>"an agent"</a>" with agent_type_create: its grants were capped at that agent's own. Saving it here makes it an operator's type."</p>
                })}
                <div class="columns">
                    <section class="card">
                        <h2>"The seven fields"</h2>
                        <TypeFields action=format!("/agent-types/{name}") form=page.form errors=page.errors csrf=csrf.clone() submit="Save" name_editable=false providers=page.providers default_provider=page.default_provider models=page.models picker=page.picker/>
                    </section>
                    <section class="card" id="manifest">
                        <h2>"Full manifest (TOML)"</h2>
                        <form method="post" action=format!("/agent-types/{name}/toml") class="stack">
                            <Csrf token=csrf.clone()/>
                            <TextArea name="toml" rows=20 class="code" spellcheck="false" value=page.toml label="The whole manifest, as TOML"/>
                            {toml_errors}
                            <button type="submit">"Replace manifest"</button>
                        </form>
                    </section>
                </div>
                <AgentsOfType name=name.clone() application=page.application/>
                <section class="card">
                    <form method="post" action=format!("/agent-types/{name}/delete") class="inline"
                        data-confirm=format!("Delete agent type {name}? Agents made from it keep running.")>
                        <Csrf token=csrf/>
                        <button type="submit" class="danger">"Delete this agent type"</button>
                        <span class="hint">" Agents made from it keep running."</span>
                    </form>
                </section>
            </Shell>
        }
        .to_html(),
    )
}

/// The editor's card about the agents made from this type: how many, how many differ from
/// it, and the way to the preview of applying it.
#[component]
fn AgentsOfType(name: String, application: TypeApplication) -> impl IntoView {
    let (total, changing) = (application.agents.len(), application.changing());
    let summary = match (total, changing) {
        (0, _) => "No agent is made from this type.".to_string(),
        (n, 0) => format!("{n} agent{} made from this type, all matching it.", plural(n)),
        (n, c) => format!(
            "{n} agent{} made from this type; {c} keep{} an older copy of it.",
            plural(n),
            if c == 1 { "s" } else { "" }
        ),
    };
    let apply = (changing > 0).then(|| {
        view! { " "<a class="button" href=format!("/agent-types/{name}/apply")>"Apply this type to its agents…"</a> }
    });
    view! {
        <section class="card" id="agents-of-type">
            <h2>"Agents made from it"</h2>
            <p>{summary}{apply}</p>
        </section>
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

pub struct ApplyPage {
    pub application: TypeApplication,
}

/// The preview of applying a type to its agents: per agent, each field that changes (grants
/// gained and lost, values before and after), and the form that applies exactly this version.
pub fn render_apply(meta: PageMeta, page: ApplyPage) -> String {
    let csrf = meta.csrf.clone();
    let app = page.application;
    let name = app.agent_type.clone();
    let changing = app.changing();
    let agents = app
        .agents
        .iter()
        .map(|a| {
            let changes = if a.changes.is_empty() {
                view! { <p class="hint">"Already matches the type."</p> }.rendered()
            } else {
                let rows = a.changes.iter().map(change_row).collect::<Vec<_>>();
                view! { <table class="changes"><thead><tr><th>"Field"</th><th>"Now"</th><th>"After applying"</th></tr></thead><tbody>{rows}</tbody></table> }.rendered()
            };
            view! {
                <section class="card" id=format!("apply-{}", a.agent_id)>
                    <h2><a href=format!("/agents/{}", a.agent_id)>{a.name.clone()}</a>" "<span class=format!("status {}", a.status.as_str())>{a.status.as_str()}</span></h2>
                    {changes}
                </section>
            }
        })
        .collect::<Vec<_>>();
    let form = (changing > 0).then(|| {
        let confirm = format!("Apply type {name} to {changing} agent{}?", plural(changing));
        view! {
            <form method="post" action=format!("/agent-types/{name}/apply") class="inline" data-confirm=confirm>
                <Csrf token=csrf/>
                <input type="hidden" name="expected_updated_at" value=app.type_updated_at.clone()/>
                <button type="submit">{format!("Apply to {changing} agent{}", plural(changing))}</button>
            </form>
        }
    });
    let none = (changing == 0)
        .then(|| view! { <p>"Every agent made from this type already matches it: nothing to apply."</p> });
    crate::document(
        view! {
            <Shell meta>
                <h1>{format!("Apply type {name} to its agents")}</h1>
                <p class="hint">{format!("The type as saved at {} UTC. Each agent keeps its name, goal, status and history; its manifest becomes the type's. Schedules from [[cron]] blocks are not made again.", crate::widgets::short_time(&app.type_updated_at))}</p>
                {none}
                {agents}
                <div class="actions">
                    {form}
                    <a href=format!("/agent-types/{name}")>"Back to the type"</a>
                </div>
            </Shell>
        }
        .to_html(),
    )
}

/// One changed field: grants as gained (+) and lost (−), other values before and after.
fn change_row(c: &FieldChange) -> impl IntoView + use<> {
    let (now, after) = if c.added.is_empty() && c.removed.is_empty() {
        let text = |v: &Option<String>| match v {
            Some(v) => view! { <pre class="value">{v.clone()}</pre> }.rendered(),
            None => view! { <span class="hint">"unset"</span> }.rendered(),
        };
        (text(&c.before), text(&c.after))
    } else {
        let items = |sign: &'static str, class: &'static str, items: &[String]| {
            items.iter().map(|i| view! { <li class=class>{sign}" "<code>{i.clone()}</code></li> }).collect::<Vec<_>>()
        };
        let lost = view! { <ul class="diff">{items("−", "bad", &c.removed)}</ul> }.rendered();
        let gained = view! { <ul class="diff">{items("+", "ok", &c.added)}</ul> }.rendered();
        (lost, gained)
    };
    let note = c.note.clone().map(|n| view! { <p class="hint">{n}</p> });
    view! { <tr><td><code>{c.field.clone()}</code></td><td>{now}</td><td>{after}{note}</td></tr> }
}

#[cfg(test)]
mod tests {
    use kennel_kernel::agent::manifest::{to_toml, validate};

    use super::*;

    /// The attack: an agent stores a system prompt that closes the textarea. Both
    /// textareas of the editor (the field and the TOML) must keep it as text.
    #[test]
    fn a_system_prompt_that_closes_the_textarea_stays_text_in_the_editor() {
        let hostile = "</textarea><script>alert(document.cookie)</script>";
        let spec = AgentTypeSpec {
            name: "evil".into(),
            description: Some(hostile.into()),
            system_prompt: Some(hostile.into()),
            ..Default::default()
        };
        let manifest = validate(spec.into()).expect("a valid manifest");
        let page = EditPage {
            form: TypeForm::from_manifest(&manifest),
            toml: to_toml(&manifest),
            agent_type: Arc::new(AgentType {
                manifest,
                made_by: None,
                created_at: "now".into(),
                updated_at: "now".into(),
            }),
            providers: vec!["local".into()],
            default_provider: Some("local".into()),
            models: vec![("m".into(), "local".into())],
            errors: Vec::new(),
            // A grant's error quotes what was typed: shown as text too.
            picker: Picker {
                tools: Vec::new(),
                preview: Err(hostile.into()),
                preview_url: "/agent-types-preview?type=evil".into(),
            },
            toml_errors: Vec::new(),
            application: TypeApplication {
                agent_type: "evil".into(),
                type_updated_at: "now".into(),
                applied: false,
                agents: Vec::new(),
            },
        };
        let meta = PageMeta {
            title: hostile.into(),
            nav: Some(SECTION),
            operator: Some("ada".into()),
            csrf: "token".into(),
            flash: None,
            unread: 0,
            live: None,
        };
        let html = render_edit(meta, page);
        assert!(!html.contains("<script>alert"), "{html}");
        assert_eq!(html.matches("<script").count(), 1, "only live.js");
        assert_eq!(
            html.matches("&lt;/textarea&gt;&lt;script&gt;").count(),
            6,
            "title, description, prompt, TOML twice, the grants' error: {html}"
        );
    }
}
