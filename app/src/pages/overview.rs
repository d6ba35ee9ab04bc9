//! `/`: agents by status, recent tool calls, providers.

use std::sync::Arc;

use kennel_kernel::agent::Agent;
use kennel_kernel::tool::audit::AuditRecord;
use leptos::prelude::*;

use crate::shell::{PageMeta, Shell};
use crate::widgets::audit_table;

pub struct ProviderStatus {
    pub name: String,
    pub kind: String,
    /// `None` when the provider needs no key.
    pub key_env: Option<String>,
    pub has_key: bool,
}

pub struct Overview {
    pub agents: Vec<Arc<Agent>>,
    pub agent_types: usize,
    pub tools: usize,
    pub recent_calls: Vec<AuditRecord>,
    pub providers: Vec<ProviderStatus>,
}

pub fn render(meta: PageMeta, o: Overview) -> String {
    let running = o.agents.iter().filter(|a| a.is_running()).count();
    let stopped = o.agents.len() - running;
    let providers = if o.providers.is_empty() {
        view! { <p class="empty">"No provider is configured: agents cannot think until config.toml has a [providers.NAME] section."</p> }.into_any()
    } else {
        let rows = o
            .providers
            .into_iter()
            .map(|p| {
                let status = match (&p.key_env, p.has_key) {
                    (None, _) => "no key needed".to_string(),
                    (Some(var), true) => format!("key set ({var})"),
                    (Some(var), false) => format!("missing: set {var}"),
                };
                let class = if p.key_env.is_none() || p.has_key { "ok" } else { "bad" };
                view! { <tr><td>{p.name}</td><td>{p.kind}</td><td class=class>{status}</td></tr> }
            })
            .collect::<Vec<_>>();
        view! { <table><thead><tr><th>"Provider"</th><th>"Protocol"</th><th>"API key"</th></tr></thead><tbody>{rows}</tbody></table> }
            .into_any()
    };
    let calls = if o.recent_calls.is_empty() {
        view! { <p class="empty">"No tool calls yet."</p> }.into_any()
    } else {
        audit_table(o.recent_calls, &o.agents).into_any()
    };
    crate::document(
        view! {
            <Shell meta>
                <h1>"Overview"</h1>
                <div class="tiles">
                    <a class="tile" href="/agents"><strong>{running}</strong>" running agents"</a>
                    <a class="tile" href="/agents"><strong>{stopped}</strong>" stopped"</a>
                    <a class="tile" href="/agent-types"><strong>{o.agent_types}</strong>" agent types"</a>
                    <a class="tile" href="/tools"><strong>{o.tools}</strong>" tools"</a>
                </div>
                <section class="card"><h2>"Providers"</h2>{providers}</section>
                <section class="card"><h2>"Recent tool calls"</h2>{calls}<p><a href="/audit">"The whole audit log"</a></p></section>
            </Shell>
        }
        .to_html(),
    )
}
