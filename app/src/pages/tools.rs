//! `/tools`: the Tools inspector, built to stay usable at eighty tools. A search box and an
//! index of families at the top; each tool one line (name, description, standing) that opens
//! to its tags, arguments (read from the derived schema) and controls. With `?agent=`, that
//! agent's effective set, filterable by standing (allowed, not granted, denied, excluded),
//! grant and revoke, and a "try it" form that runs a tool as the agent through the pipeline.

use std::collections::BTreeMap;
use std::sync::Arc;

use kennel_kernel::agent::Agent;
use kennel_kernel::tool::{Availability, EffectiveTool, ToolDef, ToolStatus};
use leptos::prelude::*;

use crate::shell::{PageMeta, Section, Shell};
use crate::widgets::{
    Csrf, IntoRendered, NoMatches, Rendered, TextArea, agent_label, argument_rows, standing_class, standing_label,
};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/tools", "Tools");

/// The outcome of a "try it" run.
pub struct TryResult {
    pub tool: String,
    /// The arguments as sent (JSON), or the raw text when the form could not be read.
    pub args: String,
    /// The form as filled in: the raw JSON field and each argument's field, back in the form.
    pub form: TryForm,
    /// The result as pretty JSON, or the error's kind and message.
    pub outcome: Result<String, (String, String)>,
}

/// A "try it" form's values: the raw JSON and the argument fields (`arg.NAME`, as typed).
#[derive(Debug, Clone, Default)]
pub struct TryForm {
    pub raw: String,
    pub fields: Vec<(String, String)>,
}

impl TryForm {
    fn field(&self, name: &str) -> String {
        let key = format!("{}{name}", kennel_kernel::tool::form::FIELD_PREFIX);
        self.fields.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone()).unwrap_or_default()
    }
}

/// The standings the effective set can be narrowed to (`?show=`).
pub const STANDINGS: [(&str, &str); 4] =
    [("allowed", "allowed"), ("not_granted", "not granted"), ("denied", "denied"), ("excluded", "excluded")];

pub struct ToolsPage {
    /// The tools that match the search (and the standing shown), with their availability.
    pub tools: Vec<(Arc<ToolDef>, Availability)>,
    pub total: usize,
    pub query: String,
    pub agents: Vec<Arc<Agent>>,
    /// The agent whose effective set is shown, with every tool's standing.
    pub agent: Option<(Arc<Agent>, Vec<EffectiveTool>)>,
    /// The standing shown (one of [`STANDINGS`]); empty: all.
    pub show: String,
    /// The tool shown opened (just tried, granted or refused).
    pub open: Option<String>,
    pub tried: Option<TryResult>,
    /// A refused grant or revoke: the tool it was for and why.
    pub refused: Option<(String, String)>,
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
            view! { <option value=id selected=is>{agent_label(a)}</option> }
        })
        .collect::<Vec<_>>();
    let statuses: BTreeMap<String, EffectiveTool> = page
        .agent
        .as_ref()
        .map(|(_, set)| set.iter().map(|t| (t.name.clone(), t.clone())).collect())
        .unwrap_or_default();
    let agent = page.agent.as_ref().map(|(a, _)| a.clone());
    let show_select = agent.as_ref().map(|_| {
        let options = STANDINGS
            .iter()
            .map(|(value, label)| view! { <option value=*value selected={page.show == *value}>{*label}</option> })
            .collect::<Vec<_>>();
        view! { <label>"Standing" <select name="show"><option value="">"all"</option>{options}</select></label> }
    });

    let shown = page.tools.len();
    let mut families: BTreeMap<String, Vec<(Arc<ToolDef>, Availability)>> = BTreeMap::new();
    for (def, availability) in page.tools {
        families.entry(def.family.clone()).or_default().push((def, availability));
    }
    let index = families
        .iter()
        .map(|(family, tools)| {
            view! { <li><a href=format!("#family-{family}")>{family.clone()}</a>" "<span class="hint">{tools.len()}</span></li> }
        })
        .collect::<Vec<_>>();
    // Where grant forms and "try it" return: this view, its filters kept.
    let view_query: Vec<(&str, String)> = [
        ("agent", agent.as_ref().map(|a| a.id.to_string()).unwrap_or_default()),
        ("q", page.query.clone()),
        ("show", page.show.clone()),
    ]
    .into_iter()
    .filter(|(_, v)| !v.is_empty())
    .collect();
    let back = format!("/tools?{}", serde_urlencoded::to_string(&view_query).unwrap_or_default());
    let open = page.open.clone().or_else(|| page.tried.as_ref().map(|t| t.tool.clone()));
    let groups = families
        .into_iter()
        .map(|(family, tools)| {
            let grant_family = agent.as_ref().map(|a| {
                let csrf = csrf.clone();
                view! {
                    <form method="post" action=format!("/agents/{}/grant", a.id) class="inline"
                        data-confirm=format!("Grant {} every tool of the {family} family ({} tools, and any added later)?", a.name, tools.len())>
                        <Csrf token=csrf/>
                        <input type="hidden" name="pattern" value=format!("{family}.*")/>
                        <input type="hidden" name="back" value=back.clone()/>
                        <button type="submit" class="small">{format!("Grant {family}.*")}</button>
                    </form>
                }
            });
            let rows = tools
                .into_iter()
                .map(|(def, availability)| {
                    let card = Card {
                        def: &def,
                        availability: &availability,
                        agent: agent.as_ref(),
                        standing: statuses.get(&def.name),
                        open: open.as_deref() == Some(def.name.as_str()),
                        refused: page.refused.as_ref().filter(|(t, _)| *t == def.name).map(|(_, m)| m.clone()),
                        tried: page.tried.as_ref().filter(|t| t.tool == def.name).map(|t| t.form.clone()),
                        view_query: &view_query,
                        back: &back,
                        csrf: &csrf,
                    };
                    tool_row(card)
                })
                .collect::<Vec<_>>();
            view! {
                <section class="family" id=format!("family-{family}")>
                    <h2>{family.clone()}" "{grant_family}</h2>
                    {rows}
                </section>
            }
        })
        .collect::<Vec<_>>();

    let tried = page.tried.map(|t| {
        let body = match t.outcome {
            Ok(json) => view! { <p class="ok">"ok"</p><pre class="code">{json}</pre> }.rendered(),
            Err((kind, message)) => view! { <p class="bad">{kind}</p><p>{message}</p> }.rendered(),
        };
        view! {
            <section class="card highlight" id="try-result">
                <h2>{format!("Result of {}({})", t.tool, t.args)}</h2>
                {body}
            </section>
        }
    });
    let shown = format!("{shown} of {} tools shown", page.total);
    let nothing = (shown.starts_with("0 ")).then(|| view! { <NoMatches what="tool" clear="/tools"/> });
    crate::document(
        view! {
            <Shell meta>
                <h1>"Tools"</h1>
                <form method="get" action="/tools" class="filters" role="search">
                    <label>"Search" <input type="search" name="q" value=page.query placeholder="name, family, tag or words"/></label>
                    <label>"As agent" <select name="agent"><option value="">"(none)"</option>{agent_options}</select></label>
                    {show_select}
                    <button type="submit">"Show"</button>
                </form>
                <nav class="family-index" aria-label="Families">
                    <p class="hint">{shown}</p>
                    <ul>{index}</ul>
                </nav>
                {tried}
                {nothing}
                {groups}
            </Shell>
        }
        .to_html(),
    )
}

/// What one tool's row shows.
struct Card<'a> {
    def: &'a ToolDef,
    availability: &'a Availability,
    agent: Option<&'a Arc<Agent>>,
    standing: Option<&'a EffectiveTool>,
    open: bool,
    refused: Option<String>,
    /// The form this tool was just tried with: back as it was filled in.
    tried: Option<TryForm>,
    /// The view's filters, kept through a "try it".
    view_query: &'a [(&'a str, String)],
    back: &'a str,
    csrf: &'a str,
}

/// One tool: a line (name, description, standing) that opens to its details.
fn tool_row(card: Card<'_>) -> impl IntoView + use<> {
    let def = card.def;
    let rows = argument_rows(&def.schema)
        .into_iter()
        .map(|r| {
            view! { <tr><td><code>{r.name}</code></td><td>{r.kind}</td><td>{if r.required { "yes" } else { "" }}</td><td>{r.description}</td></tr> }
        })
        .collect::<Vec<_>>();
    let args = if rows.is_empty() {
        view! { <p class="hint">"No arguments."</p> }.rendered()
    } else {
        view! { <table class="args"><thead><tr><th>"Argument"</th><th>"Type"</th><th>"Required"</th><th>"Description"</th></tr></thead><tbody>{rows}</tbody></table> }.rendered()
    };
    let (badge, class) = match (card.agent.zip(card.standing), card.availability) {
        (Some((a, t)), _) => (format!("{}: {}", a.name, standing_label(&t.status)), standing_class(&t.status)),
        (None, Availability::Registered) => ("available".to_string(), "ok"),
        (None, Availability::Excluded { reason }) => (format!("excluded: {reason}"), "bad"),
    };
    let left_out = card
        .standing
        .and_then(|t| t.left_out_of.clone())
        .map(|l| view! { <p class="hint">{format!("Left out of {l}.")}</p> });
    let tags = def.tags.join(", ");
    let origin = def.origin.as_ref().map(|o| {
        let from = match &o.original_name {
            Some(own) => format!("from {} (its name there: {own})", o.provider),
            None => format!("from {}", o.provider),
        };
        let note = o.note.clone().map(|n| view! { <p class="hint tool-note">{n}</p> });
        view! { <p class="hint tool-origin">{from}</p>{note} }
    });
    let refused =
        card.refused.map(|m| view! { <p class="field-error" role="alert">{crate::widgets::rich_text(&m)}</p> });
    let form = card.tried.clone().unwrap_or_default();
    let keep: Vec<(String, String)> =
        card.view_query.iter().filter(|(k, _)| *k != "agent").map(|(k, v)| (k.to_string(), v.clone())).collect();
    let controls = card
        .agent
        .zip(card.standing)
        .map(|(a, t)| agent_controls(def, a, &t.status, Try { form, keep }, card.back, card.csrf));
    view! {
        <details class="tool-row" id=format!("tool-{}", def.name) open=card.open>
            <summary>
                <code class="name">{def.name.clone()}</code>
                <span class="summary-text">{def.description.clone()}</span>
                <span class=format!("standing {class}")>{badge}</span>
            </summary>
            <p class="hint">{format!("family {} · tags: {tags}", def.family)}</p>
            {origin}
            {left_out}
            {args}
            {refused}
            {controls}
        </details>
    }
}

/// A "try it" form's values and the filters it keeps.
struct Try {
    form: TryForm,
    keep: Vec<(String, String)>,
}

/// One field per argument of the tool's schema, as its type is written: text, a number, a
/// choice, or JSON for arrays, objects and unions. Left empty, an argument is left out.
fn argument_fields(def: &ToolDef, form: &TryForm) -> Vec<Rendered> {
    use kennel_kernel::tool::form::{FIELD_PREFIX, FieldKind};
    argument_rows(&def.schema)
        .into_iter()
        .map(|row| {
            let name = format!("{FIELD_PREFIX}{}", row.name);
            let value = form.field(&row.name);
            let label = format!("{}{}", row.name, if row.required { " (required)" } else { "" });
            let input = match FieldKind::of(&def.schema["properties"][&row.name]) {
                FieldKind::Text => view! { <input type="text" name=name value=value/> }.rendered(),
                FieldKind::Integer => view! { <input type="number" step="1" name=name value=value/> }.rendered(),
                FieldKind::Number => view! { <input type="number" step="any" name=name value=value/> }.rendered(),
                FieldKind::Boolean => choice_field(name, &["true", "false"], &value),
                FieldKind::Choice(choices) => {
                    let choices: Vec<&str> = choices.iter().map(String::as_str).collect();
                    choice_field(name, &choices, &value)
                }
                FieldKind::Json => {
                    let hint = format!("JSON: {}", row.kind);
                    view! { <TextArea name=name rows=2 class="code" value=value placeholder=hint/> }.rendered()
                }
            };
            view! { <label>{label}" "<span class="hint">{row.description}</span>{input}</label> }.rendered()
        })
        .collect()
}

/// A choice among `choices`, or none (the argument left out).
fn choice_field(name: String, choices: &[&str], value: &str) -> Rendered {
    let options = choices
        .iter()
        .map(|c| view! { <option value=c.to_string() selected=*c == value>{c.to_string()}</option> })
        .collect::<Vec<_>>();
    view! { <select name=name><option value="">"(left out)"</option>{options}</select> }.rendered()
}

fn agent_controls(
    def: &ToolDef,
    agent: &Arc<Agent>,
    status: &ToolStatus,
    try_form: Try,
    back: &str,
    csrf: &str,
) -> impl IntoView + use<> {
    let back = format!("{back}&open={}#tool-{}", def.name, def.name);
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
    let try_it = status.is_allowed().then(|| {
        let csrf = csrf.to_string();
        let fields = argument_fields(def, &try_form.form);
        // A tool without arguments, or one tried with raw JSON, shows it open.
        let raw_open = fields.is_empty() || !try_form.form.raw.trim().is_empty();
        view! {
            <form method="post" action=format!("/tools/{}/try", def.name) class="try">
                <Csrf token=csrf/>
                <input type="hidden" name="agent" value=agent.id.to_string()/>
                {try_form.keep.into_iter().map(|(k, v)| view! { <input type="hidden" name=k value=v/> }).collect::<Vec<_>>()}
                {fields}
                // What the fields cannot say; the fields are laid over it.
                <details class="raw-args" open=raw_open>
                    <summary>"Raw JSON"</summary>
                    <label>"Arguments (JSON)" <TextArea name="args" rows=4 class="code" value=try_form.form.raw.clone() placeholder="{}"/></label>
                </details>
                <button type="submit">"Try it"</button>
            </form>
        }
    });
    view! { <div class="agent-status">{action}{try_it}</div> }
}
