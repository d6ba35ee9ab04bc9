//! `/`: agents by status, recent tool calls, providers.

use std::sync::Arc;

use kennel_kernel::agent::Agent;
use kennel_kernel::llm::ProviderInfo;
use kennel_kernel::status::{AgentCounts, WorkCounts};
use kennel_kernel::tool::audit::AuditRecord;
use leptos::prelude::*;

use crate::shell::{PageMeta, Section, Shell};
use crate::widgets::{Csrf, IntoRendered, audit_table};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/", "Overview");

pub struct Overview {
    pub agents: Vec<Arc<Agent>>,
    pub agent_types: usize,
    pub tools: usize,
    pub recent_calls: Vec<AuditRecord>,
    pub providers: Vec<ProviderInfo>,
    /// Agents by the state they show (workflow steps apart).
    pub counts: AgentCounts,
    /// The tasks and schedules that may need an operator.
    pub work: WorkCounts,
    /// The last 24 hours (UTC `YYYY-MM-DDTHH`, oldest first): turns, tool calls.
    pub activity: Vec<(String, u64, u64)>,
}

pub fn render(meta: PageMeta, o: Overview) -> String {
    let csrf = meta.csrf.clone();
    let AgentCounts { running, paused, stopped, .. } = o.counts;
    let has_provider = !o.providers.is_empty();
    let providers = if o.providers.is_empty() {
        view! { <p class="empty">"No provider is configured: agents cannot think until one is added."</p> }.rendered()
    } else {
        let rows = o
            .providers
            .into_iter()
            .map(|p| {
                let (key, key_class) = super::providers::key_words(&p);
                let (health_class, health) = super::providers::last_call(&p);
                let model_hint = p.settings.models.keys().next().cloned().unwrap_or_else(|| "model to test".into());
                let test = view! {
                    <td>
                        <form method="post" action=format!("/providers/{}/test", p.name) class="inline">
                            <Csrf token=csrf.clone()/>
                            <input type="text" name="model" placeholder=model_hint aria-label=format!("Model to test {} with", p.name) size="14"/>
                            <button type="submit" class="small">"Test"</button>
                        </form>
                    </td>
                };
                let page = format!("/providers/{}", p.name);
                view! { <tr><td><a href=page>{p.name}</a></td><td>{p.settings.kind.as_str()}</td><td><code>{p.url}</code></td><td class=key_class>{key}</td><td class=health_class>{health}</td>{test}</tr> }
            })
            .collect::<Vec<_>>();
        view! {
            <div class="scroll">
                <table>
                    <thead><tr><th>"Provider"</th><th>"Protocol"</th><th>"URL"</th><th>"API key"</th><th>"Last call"</th><th>"Test connection"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        }
        .rendered()
    };
    let getting_started = o.agents.is_empty().then(|| {
        let step = |done: bool, text: &'static str, href: &'static str, link: &'static str| {
            let mark = if done { "done" } else { "to do" };
            view! { <li class=if done { "done" } else { "todo" }><span class="hint">{format!("{mark} · ")}</span>{text}" "<a href=href>{link}</a></li> }
        };
        view! {
            <section class="card highlight" id="getting-started">
                <h2>"Getting started"</h2>
                <ol class="steps">
                    {step(has_provider, "Add an LLM provider: where the model answers, its models and their prices.", "/providers", "Add a provider")}
                    {step(o.agent_types > 0, "Make an agent type: a model, a system prompt, the tools it may use.", "/agent-types", "Agent types")}
                    {step(false, "Spawn an agent from it.", "/agents", "Agents")}
                    {step(false, "Chat with it on its page, and watch its tool calls here.", "/agents", "Agents")}
                </ol>
            </section>
        }
    });
    let task_tiles = o
        .work
        .tasks
        .iter()
        .map(|(status, n)| {
            view! { <a class="tile" href=format!("/tasks#column-{status}")><strong>{*n}</strong>{format!(" tasks {status}")}</a> }
        })
        .collect::<Vec<_>>();
    let failed_class = if o.work.failed_fires_today > 0 { "tile bad" } else { "tile" };
    // Turns and tool calls per hour: one bar per hour, its length the two together.
    let bars = o
        .activity
        .iter()
        .map(|(hour, turns, calls)| crate::widgets::Bar {
            label: format!("{}:00", &hour[11..]),
            value: (*turns + *calls) as f64,
            caption: format!("{turns} turns · {calls} tool calls"),
        })
        .collect::<Vec<_>>();
    let activity = view! { <crate::widgets::BarChart title="Turns and tool calls per hour (UTC)".to_string() bars unit="Activity"/> };
    let calls = if o.recent_calls.is_empty() {
        view! { <p class="empty">"No tool calls yet."</p> }.rendered()
    } else {
        audit_table(o.recent_calls, &o.agents).rendered()
    };
    crate::document(
        view! {
            <Shell meta>
                <h1>"Overview"</h1>
                {getting_started}
                <div class="tiles">
                    <a class="tile" href="/agents"><strong>{running}</strong>" running agents"</a>
                    <a class="tile" href="/agents"><strong>{paused}</strong>" paused"</a>
                    <a class="tile" href="/agents"><strong>{stopped}</strong>" stopped"</a>
                    <a class="tile" href="/agent-types"><strong>{o.agent_types}</strong>" agent types"</a>
                    <a class="tile" href="/tools"><strong>{o.tools}</strong>" tools"</a>
                </div>
                <div class="tiles">
                    {task_tiles}
                    <a class="tile" href="/schedules"><strong>{o.work.active_schedules}</strong>" active schedules"</a>
                    <a class=failed_class href="/schedules"><strong>{o.work.failed_fires_today}</strong>" failed runs today"</a>
                </div>
                <section class="card" id="providers"><h2>"Providers"</h2>{providers}<p><a href="/providers">"Add a provider"</a></p></section>
                <section class="card" id="activity"><h2>"The last 24 hours"</h2>{activity}<p><a href="/usage">"Usage and budgets"</a></p></section>
                <section class="card"><h2>"Recent tool calls"</h2>{calls}<p><a href="/audit">"The whole audit log"</a></p></section>
            </Shell>
        }
        .to_html(),
    )
}
