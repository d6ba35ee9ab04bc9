//! `/audit`: the tool-call log, filterable by agent and tool; `/audit/actions`: what operators
//! and API tokens changed, filterable by who and what.

use std::sync::Arc;

use kennel_kernel::actions::ActionRecord;
use kennel_kernel::agent::Agent;
use kennel_kernel::tool::audit::AuditRecord;
use leptos::prelude::*;

use crate::shell::{PageMeta, Section, Shell};
use crate::widgets::{
    IntoRendered, NoMatches, Pager, Paging, Rendered, agent_label, audit_table, rich_text, short_time,
};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/audit", "Audit");

pub struct AuditPage {
    /// A page of records, newest first.
    pub records: Vec<AuditRecord>,
    pub paging: Paging,
    pub agents: Vec<Arc<Agent>>,
    pub agent: Option<String>,
    pub tool: Option<String>,
    /// `ok` or `error`: only calls that ended so.
    pub outcome: Option<String>,
    /// `1h`, `24h` or `7d`: only calls that recent.
    pub within: Option<String>,
    /// `[retention] audit_days`.
    pub kept_days: u64,
}

/// A filter's `<select>` choices: the value, its words, and whether it is the one chosen.
fn choices(options: &[(&'static str, &'static str)], chosen: Option<&str>) -> Vec<Rendered> {
    options
        .iter()
        .map(|(value, words)| {
            view! { <option value=*value selected=chosen == Some(*value)>{*words}</option> }.rendered()
        })
        .collect()
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
    let filtered = page.agent.as_deref().is_some_and(|a| !a.is_empty())
        || page.tool.as_deref().is_some_and(|t| !t.is_empty())
        || page.outcome.is_some()
        || page.within.is_some();
    let outcomes = choices(&[("", "any"), ("ok", "ok"), ("error", "failed")], page.outcome.as_deref());
    let windows = choices(
        &[("", "any time"), ("1h", "the last hour"), ("24h", "the last 24 hours"), ("7d", "the last 7 days")],
        page.within.as_deref(),
    );
    let no_matches = (shown == 0 && filtered).then(|| view! { <NoMatches what="tool call" clear="/audit"/> });
    let table = audit_table(page.records, &page.agents);
    crate::document(
        view! {
            <Shell meta>
                <h1>"Audit"</h1>
                <LogTabs current=Log::ToolCalls/>
                {crate::widgets::kept_for("Tool calls", "audit_days", page.kept_days)}
                <form method="get" action="/audit" class="filters">
                    <label>"Agent" <select name="agent"><option value="">"any"</option>{options}</select></label>
                    <label>"Tool" <input type="text" name="tool" value=page.tool.unwrap_or_default() placeholder="a name, or a prefix: browser_*"/></label>
                    <label>"Outcome" <select name="outcome">{outcomes}</select></label>
                    <label>"When" <select name="within">{windows}</select></label>
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

/// The audit's two logs.
#[derive(Clone, Copy, PartialEq)]
enum Log {
    ToolCalls,
    Actions,
}

#[component]
fn LogTabs(current: Log) -> impl IntoView {
    let tab = move |log: Log, href: &'static str, label: &'static str| {
        let here = (log == current).then_some("page");
        view! { <a href=href aria-current=here>{label}</a> }
    };
    view! {
        <nav class="tabs" aria-label="Logs">
            {tab(Log::ToolCalls, "/audit", "Tool calls")}
            {tab(Log::Actions, "/audit/actions", "Operator actions")}
        </nav>
    }
}

pub struct ActionsPage {
    /// A page of records, newest first.
    pub records: Vec<ActionRecord>,
    pub paging: Paging,
    pub actor: Option<String>,
    pub action: Option<String>,
}

pub fn render_actions(meta: PageMeta, page: ActionsPage) -> String {
    let shown = page.records.len();
    let filtered = page.actor.is_some() || page.action.is_some();
    let no_matches =
        (shown == 0 && filtered).then(|| view! { <NoMatches what="operator action" clear="/audit/actions"/> });
    let empty = (shown == 0 && !filtered).then(|| {
        view! { <p class="hint">"No operator has changed anything yet: spawns, grants, saved types, revoked tokens and the like show here."</p> }
    });
    let rows = page
        .records
        .into_iter()
        .map(|r| {
            let class = if r.outcome == "ok" { "ok" } else { "bad" };
            view! {
                <tr>
                    <td>{short_time(&r.at)}</td>
                    <td>{r.actor}</td>
                    <td><code>{r.action}</code></td>
                    <td>{r.subject.unwrap_or_default()}</td>
                    <td class=class>{r.outcome}</td>
                    <td>{r.detail.as_deref().map(rich_text)}</td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    let table = (shown > 0).then(|| {
        view! {
            <div class="scroll">
                <table>
                    <thead><tr><th>"When"</th><th>"Who"</th><th>"Action"</th><th>"On"</th><th>"Outcome"</th><th>"Detail"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        }
    });
    crate::document(
        view! {
            <Shell meta>
                <h1>"Audit"</h1>
                <LogTabs current=Log::Actions/>
                <form method="get" action="/audit/actions" class="filters">
                    <label>"Who" <input type="text" name="actor" value=page.actor.unwrap_or_default() placeholder="operator:NAME or token:NAME"/></label>
                    <label>"Action" <input type="text" name="action" value=page.action.unwrap_or_default() placeholder="agent.stop"/></label>
                    <button type="submit">"Filter"</button>
                </form>
                {no_matches}
                {empty}
                {table}
                <Pager shown paging=page.paging/>
            </Shell>
        }
        .to_html(),
    )
}
