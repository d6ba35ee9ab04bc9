//! `/skills`: every skill with its description and tags; `/skills/{name}`: one skill — its
//! manifest, body, support files and its whole evolution history with each change's diff.
//! Skills are written by agents: every field is untrusted text, shown as text.

use kennel_kernel::skills::{HistoryEntry, Manifest, Skill};
use leptos::prelude::*;

use crate::shell::{PageMeta, Shell};
use crate::widgets::short_time;

pub fn render_list(meta: PageMeta, skills: Vec<Manifest>) -> String {
    let body = if skills.is_empty() {
        view! {
            <section class="card" id="skills">
                <p class="empty">"No skills yet."</p>
                <p class="hint">"Agents granted "<code>"skills.*"</code>" create them with "<code>"skill_evolve_create"</code>"."</p>
            </section>
        }
        .into_any()
    } else {
        let rows = skills.into_iter().map(skill_row).collect::<Vec<_>>();
        view! {
            <table id="skills">
                <thead><tr><th>"Skill"</th><th>"Description"</th><th>"Tags"</th><th>"Label"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
        .into_any()
    };
    crate::document(
        view! {
            <Shell meta>
                <h1>"Skills"</h1>
                {body}
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

pub fn render_skill(meta: PageMeta, skill: Skill, history: Vec<HistoryEntry>) -> String {
    let files = if skill.files.is_empty() {
        view! { <p class="empty">"No support files."</p> }.into_any()
    } else {
        let items = skill.files.into_iter().map(|f| view! { <li><code>{f}</code></li> }).collect::<Vec<_>>();
        view! { <ul id="skill-files">{items}</ul> }.into_any()
    };
    let entries = history.into_iter().rev().map(history_entry).collect::<Vec<_>>();
    let m = skill.manifest;
    crate::document(
        view! {
            <Shell meta>
                <h1>"Skill "{m.name.clone()}</h1>
                <p><a href="/skills">"All skills"</a></p>
                <section class="card" id="skill-manifest">
                    <p>{m.description}</p>
                    <p class="hint">"Version "{skill.version}" · label "{m.version.unwrap_or_default()}" · tags "{m.tags.join(", ")}</p>
                </section>
                <h2>"Body"</h2>
                <pre id="skill-body">{skill.body}</pre>
                <h2>"Support files"</h2>
                {files}
                <h2>"History"</h2>
                <ul id="skill-history">{entries}</ul>
            </Shell>
        }
        .to_html(),
    )
}

fn history_entry(h: HistoryEntry) -> impl IntoView + use<> {
    let summary = format!(
        "Version {} · {}{} · {} · {}",
        h.version,
        h.op,
        h.detail.map(|d| format!(" ({d})")).unwrap_or_default(),
        h.actor,
        short_time(&h.at)
    );
    view! {
        <li>
            <details>
                <summary>{summary}</summary>
                <pre class="diff">{h.diff}</pre>
            </details>
        </li>
    }
}
