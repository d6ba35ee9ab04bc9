//! `/skills`: every skill with its description and tags, agents' proposals waiting for an
//! operator (each with its diff, to accept or reject), and the deleted skills an operator can
//! restore; `/skills/{name}`: one skill — its manifest, body, support files, who made it, the
//! agent types that use it, its pending proposals, an operator's edit form, and its whole
//! evolution history with each change's diff and a way back to each version. Skills are
//! written by agents: every field is untrusted text, shown as text.

use kennel_kernel::error::FieldError;
use kennel_kernel::skills::{HistoryEntry, Manifest, Proposal, Skill};
use leptos::prelude::*;

use crate::shell::{PageMeta, Section, Shell};
use crate::widgets::{Csrf, IntoRendered, Markdown, TextArea, field_error, form_list, short_time};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/skills", "Skills");

pub fn render_list(
    meta: PageMeta,
    skills: Vec<Manifest>,
    proposals: Vec<Proposal>,
    deleted: Vec<HistoryEntry>,
    deleted_kept_days: u64,
) -> String {
    let csrf = meta.csrf.clone();
    let proposals = (!proposals.is_empty()).then(|| {
        view! {
            <h2>"Proposals waiting for you"</h2>
            <Proposals proposals csrf=csrf.clone()/>
        }
    });
    let body = if skills.is_empty() {
        view! {
            <section class="card" id="skills">
                <p class="empty">"No skills yet."</p>
                <p class="hint">"Agents granted "<code>"skills.*"</code>" create them with "<code>"skill_evolve_create"</code>"; operators with "<code>"POST /api/skills"</code>"."</p>
            </section>
        }
        .rendered()
    } else {
        let rows = skills.into_iter().map(skill_row).collect::<Vec<_>>();
        view! {
            <table id="skills">
                <thead><tr><th>"Skill"</th><th>"Description"</th><th>"Tags"</th><th>"Label"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
        .rendered()
    };
    let deleted = (!deleted.is_empty()).then(|| {
        let rows = deleted.into_iter().map(|d| deleted_row(d, csrf.clone())).collect::<Vec<_>>();
        view! {
            <h2>"Deleted skills"</h2>
            <p class="hint">"Their history is kept; restoring one brings it back with its support files, as a new version."</p>
            {crate::widgets::kept_for("Their files", "deleted_skills_days", deleted_kept_days)}
            <table id="deleted-skills">
                <thead><tr><th>"Skill"</th><th>"Deleted"</th><th>"By"</th><th></th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
    });
    crate::document(
        view! {
            <Shell meta>
                <h1>"Skills"</h1>
                {proposals}
                {body}
                {deleted}
            </Shell>
        }
        .to_html(),
    )
}

/// A skill's page. Names are lower-case letters, digits, `-` and `_` (`skills::check_name`;
/// a folder with another name is never listed), so one goes into a path as it is.
pub fn skill_href(name: &str) -> String {
    format!("/skills/{name}")
}

fn skill_row(m: Manifest) -> impl IntoView + use<> {
    let href = skill_href(&m.name);
    view! {
        <tr>
            <td><a href=href>{m.name}</a></td>
            <td>{m.description}</td>
            <td>{m.tags.join(", ")}</td>
            <td>{m.version.unwrap_or_default()}</td>
        </tr>
    }
}

fn deleted_row(d: HistoryEntry, csrf: String) -> impl IntoView + use<> {
    let action = format!("{}/restore", skill_href(&d.skill));
    let label = format!("Restore {}", d.skill);
    view! {
        <tr>
            <td>{d.skill}</td>
            <td>{short_time(&d.at)}</td>
            <td>{d.actor}</td>
            <td>
                <form method="post" action=action class="inline">
                    <Csrf token=csrf/>
                    <button type="submit" aria-label=label>"Restore"</button>
                </form>
            </td>
        </tr>
    }
}

/// The operator's edit form, as shown or as sent back with its errors.
#[derive(Debug, Clone, Default)]
pub struct SkillForm {
    pub description: String,
    /// Comma-separated.
    pub tags: String,
    pub label: String,
    pub body: String,
}

impl SkillForm {
    pub fn from_skill(skill: &Skill) -> SkillForm {
        SkillForm {
            description: skill.manifest.description.clone(),
            tags: skill.manifest.tags.join(", "),
            label: skill.manifest.version.clone().unwrap_or_default(),
            body: skill.body.clone(),
        }
    }

    /// The manifest the form describes for the skill `name`.
    pub fn manifest(&self, name: &str) -> Manifest {
        let label = self.label.trim();
        Manifest {
            name: name.to_string(),
            description: self.description.trim().to_string(),
            version: (!label.is_empty()).then(|| label.to_string()),
            tags: form_list(&self.tags),
        }
    }
}

pub struct SkillPage {
    pub skill: Skill,
    pub history: Vec<HistoryEntry>,
    /// Its proposals waiting for an operator.
    pub proposals: Vec<Proposal>,
    /// The agent types whose manifests list the skill.
    pub used_by: Vec<String>,
    pub form: SkillForm,
    pub errors: Vec<FieldError>,
}

pub fn render_skill(meta: PageMeta, page: SkillPage) -> String {
    let csrf = meta.csrf.clone();
    let skill = page.skill;
    let name = skill.manifest.name.clone();
    let files = if skill.files.is_empty() {
        view! { <p class="empty">"No support files."</p> }.rendered()
    } else {
        let items = skill.files.into_iter().map(|f| view! { <li><code>{f}</code></li> }).collect::<Vec<_>>();
        view! { <ul id="skill-files">{items}</ul> }.rendered()
    };
    let used_by = if page.used_by.is_empty() {
        view! { <p class="empty" id="skill-used-by">"No agent type lists this skill."</p> }.rendered()
    } else {
        let items = page
            .used_by
            .into_iter()
            .map(|t| view! { <li><a href=format!("/agent-types/{t}")>{t.clone()}</a></li> })
            .collect::<Vec<_>>();
        view! { <ul id="skill-used-by">{items}</ul> }.rendered()
    };
    // Its maker: the last `create` in its history (an accepted proposal's is the operator's).
    let made_by = page
        .history
        .iter()
        .rev()
        .find(|h| h.op == "create")
        .map_or_else(|| "Put in place by hand: an operator's.".to_string(), |h| format!("Made by {}.", h.actor));
    let proposals = if page.proposals.is_empty() {
        view! { <p class="empty" id="skill-pending">"No proposals waiting."</p> }.rendered()
    } else {
        view! { <Proposals proposals=page.proposals csrf=csrf.clone()/> }.rendered()
    };
    let current = skill.version;
    let entries =
        page.history.into_iter().rev().map(|h| history_entry(h, current, &name, csrf.clone())).collect::<Vec<_>>();
    let m = skill.manifest;
    crate::document(
        view! {
            <Shell meta>
                <h1>"Skill "{name.clone()}</h1>
                <p><a href="/skills">"All skills"</a></p>
                <section class="card" id="skill-manifest">
                    <p>{m.description}</p>
                    <p class="hint">"Version "{skill.version}" · label "{m.version.unwrap_or_default()}" · tags "{m.tags.join(", ")}</p>
                    <p class="hint" id="skill-made-by">{made_by}" Agents change only the skills they made and no one else loads; anything else they propose, for an operator below."</p>
                </section>
                <h2>"Body"</h2>
                <Markdown id="skill-body" text=skill.body/>
                <h2>"Support files"</h2>
                {files}
                <h2>"Used by agent types"</h2>
                {used_by}
                <h2>"Proposals"</h2>
                {proposals}
                <h2>"Edit"</h2>
                <EditForm name=name.clone() form=page.form errors=page.errors csrf=csrf.clone()/>
                <h2>"History"</h2>
                <ul id="skill-history">{entries}</ul>
                <section class="card">
                    <form method="post" action=format!("/skills/{name}/delete") class="inline"
                        data-confirm=format!("Delete skill {name}? Its history is kept and it can be restored.")>
                        <Csrf token=csrf/>
                        <button type="submit" class="danger">"Delete this skill"</button>
                        <span class="hint">" Recoverable: it is listed under deleted skills with a Restore button."</span>
                    </form>
                </section>
            </Shell>
        }
        .to_html(),
    )
}

#[component]
fn EditForm(name: String, form: SkillForm, errors: Vec<FieldError>, csrf: String) -> impl IntoView {
    view! {
        <form method="post" action=skill_href(&name) class="stack card" id="skill-form">
            <Csrf token=csrf/>
            <label>"Description" <input type="text" name="description" value=form.description/></label>
            {field_error(&errors, "manifest.description")}
            <label>"Tags (comma-separated)" <input type="text" name="tags" value=form.tags/></label>
            {field_error(&errors, "manifest.tags")}
            <label>"Label (the author's version)" <input type="text" name="label" value=form.label/></label>
            {field_error(&errors, "manifest.version")}
            <label>"Body" <TextArea name="body" rows=14 class="code" spellcheck="false" value=form.body/></label>
            {field_error(&errors, "body")}
            <button type="submit">"Save as a new version"</button>
        </form>
    }
}

fn history_entry(h: HistoryEntry, current: i64, name: &str, csrf: String) -> impl IntoView + use<> {
    let summary = format!(
        "Version {} · {}{} · {} · {}",
        h.version,
        h.op,
        h.detail.map(|d| format!(" ({d})")).unwrap_or_default(),
        h.actor,
        short_time(&h.at)
    );
    // Any earlier version can be restored (a rollback is itself a new version).
    let rollback = (h.version < current).then(|| {
        let action = format!("/skills/{name}/rollback");
        let label = format!("Roll back to version {}", h.version);
        let confirm = format!("{label}? The current body stays in the history.");
        view! {
            <form method="post" action=action class="inline" data-confirm=confirm>
                <Csrf token=csrf/>
                <input type="hidden" name="version" value=h.version/>
                <button type="submit">{label}</button>
            </form>
        }
    });
    view! {
        <li>
            <details>
                <summary>{summary}</summary>
                <pre class="diff">{h.diff}</pre>
                {rollback}
            </details>
        </li>
    }
}

/// Agents' proposals, each with why it waits, its diff and the operator's two buttons.
#[component]
fn Proposals(proposals: Vec<Proposal>, csrf: String) -> impl IntoView {
    let items = proposals.into_iter().map(|p| proposal_item(p, csrf.clone())).collect::<Vec<_>>();
    view! { <ul id="skill-proposals" class="stack">{items}</ul> }
}

fn proposal_item(p: Proposal, csrf: String) -> impl IntoView + use<> {
    let base = format!("/skill-proposals/{}", p.id);
    let summary =
        format!("Proposal {} · {} of {} · by agent {} · {}", p.id, p.op, p.skill, p.agent_name, short_time(&p.at));
    let accept = format!("Accept proposal {}", p.id);
    let reject = format!("Reject proposal {}", p.id);
    let confirm = format!(
        "Accept proposal {} of agent {}? Every agent that loads {} carries it from its next turn.",
        p.id, p.agent_name, p.skill
    );
    view! {
        <li class="card" id=format!("proposal-{}", p.id)>
            <p><strong>{summary}</strong></p>
            <p class="hint">{p.reason}</p>
            <pre class="diff">{p.diff}</pre>
            <form method="post" action=format!("{base}/accept") class="inline" data-confirm=confirm>
                <Csrf token=csrf.clone()/>
                <button type="submit" aria-label=accept>"Accept"</button>
            </form>
            <form method="post" action=format!("{base}/reject") class="inline">
                <Csrf token=csrf/>
                <button type="submit" class="danger" aria-label=reject>"Reject"</button>
            </form>
        </li>
    }
}
