//! `/audit`: the tool-call log, filterable by agent and tool.

use std::sync::Arc;

use kennel_kernel::agent::Agent;
use kennel_kernel::tool::audit::AuditRecord;
use leptos::prelude::*;

use crate::shell::{PageMeta, Shell};
use crate::widgets::short_time;

pub struct AuditPage {
    pub records: Vec<AuditRecord>,
    pub agents: Vec<Arc<Agent>>,
    pub agent: Option<String>,
    pub tool: Option<String>,
}

pub fn render(meta: PageMeta, page: AuditPage) -> String {
    let names: std::collections::HashMap<String, String> =
        page.agents.iter().map(|a| (a.id.to_string(), a.name.clone())).collect();
    let selected = page.agent.clone().unwrap_or_default();
    let options = page
        .agents
        .iter()
        .map(|a| {
            let id = a.id.to_string();
            let is = id == selected;
            view! { <option value=id selected=is>{a.name.clone()}</option> }
        })
        .collect::<Vec<_>>();
    let rows = page
        .records
        .into_iter()
        .map(|r| {
            let agent = names.get(&r.agent_id).cloned().unwrap_or_else(|| r.agent_id.clone());
            let class = if r.outcome == "ok" { "ok" } else { "bad" };
            view! {
                <tr>
                    <td>{short_time(&r.at)}</td>
                    <td><a href=format!("/agents/{}", r.agent_id)>{agent}</a></td>
                    <td>{r.tool}</td>
                    <td class=class>{r.outcome}</td>
                    <td>{r.message.unwrap_or_default()}</td>
                    <td class="num">{format!("{:.2} ms", r.duration_us as f64 / 1000.0)}</td>
                    <td>{r.caller}</td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    crate::document(
        view! {
            <Shell meta>
                <h1>"Audit"</h1>
                <form method="get" action="/audit" class="filters">
                    <label>"Agent" <select name="agent"><option value="">"any"</option>{options}</select></label>
                    <label>"Tool" <input type="text" name="tool" value=page.tool.unwrap_or_default() placeholder="exact tool name"/></label>
                    <button type="submit">"Filter"</button>
                </form>
                <div class="scroll">
                    <table>
                        <thead><tr><th>"When"</th><th>"Agent"</th><th>"Tool"</th><th>"Outcome"</th><th>"Message"</th><th>"Took"</th><th>"Caller"</th></tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
            </Shell>
        }
        .to_html(),
    )
}
