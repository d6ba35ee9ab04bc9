//! `/audit`: the tool-call log, filterable by agent and tool.

use std::sync::Arc;

use kennel_kernel::agent::Agent;
use kennel_kernel::tool::audit::AuditRecord;
use leptos::prelude::*;

use crate::shell::{PageMeta, Shell};
use crate::widgets::{NoMatches, Pager, Paging, agent_label, audit_table};

pub struct AuditPage {
    /// A page of records, newest first.
    pub records: Vec<AuditRecord>,
    pub paging: Paging,
    pub agents: Vec<Arc<Agent>>,
    pub agent: Option<String>,
    pub tool: Option<String>,
}

pub fn render(meta: PageMeta, page: AuditPage) -> String {
    let selected = page.agent.clone().unwrap_or_default();
    let options = page
        .agents
        .iter()
        .map(|a| {
            let id = a.id.to_string();
            let is = id == selected;
            view! { <option value=id selected=is>{agent_label(a)}</option> }
        })
        .collect::<Vec<_>>();
    let shown = page.records.len();
    let filtered =
        page.agent.as_deref().is_some_and(|a| !a.is_empty()) || page.tool.as_deref().is_some_and(|t| !t.is_empty());
    let no_matches = (shown == 0 && filtered).then(|| view! { <NoMatches what="tool call" clear="/audit"/> });
    let table = audit_table(page.records, &page.agents);
    crate::document(
        view! {
            <Shell meta>
                <h1>"Audit"</h1>
                <form method="get" action="/audit" class="filters">
                    <label>"Agent" <select name="agent"><option value="">"any"</option>{options}</select></label>
                    <label>"Tool" <input type="text" name="tool" value=page.tool.unwrap_or_default() placeholder="exact tool name"/></label>
                    <button type="submit">"Filter"</button>
                </form>
                {no_matches}
                {table}
                <Pager shown paging=page.paging/>
            </Shell>
        }
        .to_html(),
    )
}
