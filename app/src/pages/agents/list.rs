//! `/agents`: the list of agents (with or without workflow step agents) and the spawn form.

use std::sync::Arc;

use kennel_kernel::agent::{Agent, AgentType};
use kennel_kernel::error::FieldError;
use leptos::prelude::*;

use super::lifecycle::lifecycle_buttons;
use crate::shell::{PageMeta, Shell};
use crate::widgets::{Csrf, IntoRendered, Pager, Paging, field_error, short_time};

#[derive(Debug, Clone, Default)]
pub struct SpawnForm {
    pub template: String,
    pub name: String,
    pub goal: String,
}

pub struct AgentsPage {
    /// A page of the agents, oldest first.
    pub agents: Vec<Arc<Agent>>,
    pub paging: Paging,
    pub types: Vec<Arc<AgentType>>,
    pub form: SpawnForm,
    pub errors: Vec<FieldError>,
    /// Whether workflow step agents are shown, and how many are kept.
    pub with_ephemeral: bool,
    pub ephemeral: usize,
}

/// The switch between the agents list with and without the agents spawned for workflow steps.
fn ephemeral_link(shown: bool, count: usize) -> Option<impl IntoView> {
    match (shown, count) {
        (false, 0) => None,
        (false, n) => Some(view! {
            <p class="muted"><a href="/agents?ephemeral=1">{format!("Show the {n} workflow step agent{}", if n == 1 { "" } else { "s" })}</a>" (removed a while after they stop)"</p>
        }.rendered()),
        (true, _) => Some(view! { <p class="muted"><a href="/agents">"Hide workflow step agents"</a></p> }.rendered()),
    }
}

pub fn render_list(meta: PageMeta, page: AgentsPage) -> String {
    let csrf = meta.csrf.clone();
    let shown = page.agents.len();
    let rows = page
        .agents
        .iter()
        .map(|a| {
            let stop = lifecycle_buttons(a, &csrf);
            let status = if a.is_running() { "running" } else { "stopped" };
            let step = a.ephemeral.then(|| view! { <span class="tag">"workflow step"</span> });
            view! {
                <tr>
                    <td><a href=format!("/agents/{}", a.id)>{a.name.clone()}</a>" "{step}</td>
                    <td>{a.agent_type.clone()}</td>
                    <td><span class=format!("status {status}")>{status}</span></td>
                    <td>{a.goal.clone().unwrap_or_default()}</td>
                    <td>{short_time(&a.created_at)}</td>
                    <td>{stop}</td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    let options = page
        .types
        .iter()
        .map(|t| {
            let (value, label) = (t.manifest.name.clone(), t.manifest.name.clone());
            let selected = value == page.form.template;
            view! { <option value=value selected=selected>{label}</option> }
        })
        .collect::<Vec<_>>();
    let no_types = page.types.is_empty().then(|| {
        view! { <p class="empty">"Create an agent type first: " <a href="/agent-types">"Agent types"</a></p> }
    });
    crate::document(
        view! {
            <Shell meta>
                <h1>"Agents"</h1>
                <section class="card">
                    <div class="scroll">
                        <table>
                            <thead><tr><th>"Name"</th><th>"Type"</th><th>"Status"</th><th>"Goal"</th><th>"Created"</th><th></th></tr></thead>
                            <tbody>{rows}</tbody>
                        </table>
                    </div>
                    <Pager shown paging=page.paging/>
                    {ephemeral_link(page.with_ephemeral, page.ephemeral)}
                </section>
                <section class="card">
                    <h2>"Spawn an agent"</h2>
                    {no_types}
                    <form method="post" action="/agents" class="stack" id="spawn-form">
                        <Csrf token=csrf.clone()/>
                        <div class="row">
                            <label>"Agent type" <select name="template" required>{options}</select></label>
                            <label>"Name (optional)" <input type="text" name="name" value=page.form.name/></label>
                        </div>
                        {field_error(&page.errors, "template")}
                        {field_error(&page.errors, "name")}
                        <label>"Goal (optional)" <input type="text" name="goal" value=page.form.goal/></label>
                        {field_error(&page.errors, "goal")}
                        <button type="submit">"Spawn"</button>
                    </form>
                </section>
            </Shell>
        }
        .to_html(),
    )
}
