//! `/tools`: the Tools inspector. Every tool by family with its arguments (read from the
//! derived schema) and availability; with `?agent=`, that agent's effective set, grant and
//! revoke, and a "try it" form that runs a tool as the agent through the pipeline.

use std::collections::BTreeMap;
use std::sync::Arc;

use kennel_kernel::agent::Agent;
use kennel_kernel::tool::{Availability, EffectiveTool, ToolDef, ToolStatus};
use leptos::prelude::*;

use crate::shell::{PageMeta, Shell};
use crate::widgets::{Csrf, TextArea, argument_rows};

/// The outcome of a "try it" run.
pub struct TryResult {
    pub tool: String,
    pub args: String,
    /// The result as pretty JSON, or the error's kind and message.
    pub outcome: Result<String, (String, String)>,
}

pub struct ToolsPage {
    /// The tools that match the filter, with their availability.
    pub tools: Vec<(Arc<ToolDef>, Availability)>,
    pub total: usize,
    pub query: String,
    pub agents: Vec<Arc<Agent>>,
    /// The agent whose effective set is shown.
    pub agent: Option<(Arc<Agent>, Vec<EffectiveTool>)>,
    pub tried: Option<TryResult>,
}

pub fn render(meta: PageMeta, page: ToolsPage) -> String {
    let csrf = meta.csrf.clone();
    let selected = page.agent.as_ref().map(|(a, _)| a.id.to_string()).unwrap_or_default();
    let agent_options = page
        .agents
        .iter()
        .filter(|a| a.is_running())
        .map(|a| {
            let id = a.id.to_string();
            let is = id == selected;
            view! { <option value=id selected=is>{a.name.clone()}</option> }
        })
        .collect::<Vec<_>>();
    let statuses: BTreeMap<String, ToolStatus> = page
        .agent
        .as_ref()
        .map(|(_, set)| set.iter().map(|t| (t.name.clone(), t.status.clone())).collect())
        .unwrap_or_default();
    let agent = page.agent.as_ref().map(|(a, _)| a.clone());

    let shown = page.tools.len();
    let mut families: BTreeMap<String, Vec<(Arc<ToolDef>, Availability)>> = BTreeMap::new();
    for (def, availability) in page.tools {
        families.entry(def.family.clone()).or_default().push((def, availability));
    }
    let groups = families
        .into_iter()
        .map(|(family, tools)| {
            let grant_family = agent.as_ref().map(|a| {
                let csrf = csrf.clone();
                view! {
                    <form method="post" action=format!("/agents/{}/grant", a.id) class="inline">
                        <Csrf token=csrf/>
                        <input type="hidden" name="pattern" value=format!("{family}.*")/>
                        <input type="hidden" name="back" value=format!("/tools?agent={}", a.id)/>
                        <button type="submit" class="small">{format!("Grant {family}.*")}</button>
                    </form>
                }
            });
            let cards = tools
                .into_iter()
                .map(|(def, availability)| {
                    tool_card(&def, &availability, agent.as_ref(), statuses.get(&def.name), &csrf)
                })
                .collect::<Vec<_>>();
            view! {
                <section class="family" id=format!("family-{family}")>
                    <h2>{family.clone()}" "{grant_family}</h2>
                    {cards}
                </section>
            }
        })
        .collect::<Vec<_>>();

    let tried = page.tried.map(|t| {
        let body = match t.outcome {
            Ok(json) => view! { <p class="ok">"ok"</p><pre class="code">{json}</pre> }.into_any(),
            Err((kind, message)) => view! { <p class="bad">{kind}</p><p>{message}</p> }.into_any(),
        };
        view! {
            <section class="card highlight" id="try-result">
                <h2>{format!("Result of {}({})", t.tool, t.args)}</h2>
                {body}
            </section>
        }
    });
    let shown = format!("{shown} of {} tools shown", page.total);
    crate::document(
        view! {
            <Shell meta>
                <h1>"Tools"</h1>
                <form method="get" action="/tools" class="filters">
                    <label>"Filter" <input type="search" name="q" value=page.query placeholder="name, family, tag or words"/></label>
                    <label>"As agent" <select name="agent"><option value="">"(none)"</option>{agent_options}</select></label>
                    <button type="submit">"Show"</button>
                </form>
                <p class="hint">{shown}</p>
                {tried}
                {groups}
            </Shell>
        }
        .to_html(),
    )
}

fn tool_card(
    def: &ToolDef,
    availability: &Availability,
    agent: Option<&Arc<Agent>>,
    status: Option<&ToolStatus>,
    csrf: &str,
) -> impl IntoView + use<> {
    let rows = argument_rows(&def.schema)
        .into_iter()
        .map(|r| {
            view! { <tr><td><code>{r.name}</code></td><td>{r.kind}</td><td>{if r.required { "yes" } else { "" }}</td><td>{r.description}</td></tr> }
        })
        .collect::<Vec<_>>();
    let args = if rows.is_empty() {
        view! { <p class="hint">"No arguments."</p> }.into_any()
    } else {
        view! { <table class="args"><thead><tr><th>"Argument"</th><th>"Type"</th><th>"Required"</th><th>"Description"</th></tr></thead><tbody>{rows}</tbody></table> }.into_any()
    };
    let availability = match availability {
        Availability::Registered => view! { <span class="ok">"available"</span> }.into_any(),
        Availability::Excluded { reason } => {
            view! { <span class="bad">{format!("excluded: {reason}")}</span> }.into_any()
        }
    };
    let tags = def.tags.join(", ");
    let per_agent = agent.zip(status).map(|(a, s)| agent_controls(def, a, s, csrf));
    view! {
        <article class="tool" id=format!("tool-{}", def.name)>
            <header>
                <h3><code>{def.name.clone()}</code></h3>
                {availability}
            </header>
            <p>{def.description.clone()}</p>
            <p class="hint">{format!("tags: {tags}")}</p>
            {args}
            {per_agent}
        </article>
    }
}

fn layer_name(layer: kennel_kernel::tool::Layer) -> &'static str {
    match layer {
        kennel_kernel::tool::Layer::Daemon => "daemon",
        kennel_kernel::tool::Layer::Agent => "agent",
        kennel_kernel::tool::Layer::Turn => "turn",
    }
}

fn agent_controls(def: &ToolDef, agent: &Arc<Agent>, status: &ToolStatus, csrf: &str) -> impl IntoView + use<> {
    let back = format!("/tools?agent={}", agent.id);
    let (label, class) = match status {
        ToolStatus::Allowed { grant } => (format!("allowed by {grant}"), "ok"),
        ToolStatus::Denied { grant } => (format!("denied by {grant}"), "bad"),
        ToolStatus::NotGranted => ("not granted".to_string(), "bad"),
        ToolStatus::Excluded { layer, reason } => (format!("excluded ({}): {reason}", layer_name(*layer)), "bad"),
    };
    let action = match status {
        ToolStatus::Allowed { grant } if grant == &def.name => Some(("revoke", grant.clone())),
        ToolStatus::NotGranted => Some(("grant", def.name.clone())),
        _ => None,
    }
    .map(|(verb, pattern)| {
        let csrf = csrf.to_string();
        view! {
            <form method="post" action=format!("/agents/{}/{verb}", agent.id) class="inline">
                <Csrf token=csrf/>
                <input type="hidden" name="pattern" value=pattern/>
                <input type="hidden" name="back" value=back.clone()/>
                <button type="submit" class="small">{verb}</button>
            </form>
        }
    });
    let try_it = matches!(status, ToolStatus::Allowed { .. }).then(|| {
        let csrf = csrf.to_string();
        view! {
            <form method="post" action=format!("/tools/{}/try", def.name) class="try">
                <Csrf token=csrf/>
                <input type="hidden" name="agent" value=agent.id.to_string()/>
                <label>"Arguments (JSON)" <TextArea name="args" rows=2 class="code" value="{}"/></label>
                <button type="submit">"Try it"</button>
            </form>
        }
    });
    view! {
        <div class="agent-status">
            <span class=class>{format!("{}: {label}", agent.name)}</span>
            {action}
            {try_it}
        </div>
    }
}
