//! `/usage`: what the agents' model calls used and cost, today and by day, the costliest
//! sessions, and where each budget stands.

use kennel_kernel::usage::Line;
use leptos::prelude::*;

use crate::shell::{PageMeta, Shell};
use crate::widgets::{Bar, BarChart, dollars, short_time, tokens};

/// A budget and what is left of it today.
pub struct BudgetRow {
    /// The agent's name, or `the daemon`.
    pub who: String,
    /// The agent's page.
    pub href: Option<String>,
    pub used: Line,
    pub max_tokens: Option<u64>,
    pub max_usd: Option<f64>,
    pub tokens_left: Option<u64>,
    pub usd_left: Option<f64>,
    /// Until when the agent is paused for it.
    pub paused_until: Option<String>,
}

/// A costly session.
pub struct SessionRow {
    pub agent: String,
    pub href: String,
    pub used: Line,
}

pub struct UsagePage {
    /// When the budget day began (RFC 3339) and the zone it is counted in.
    pub day_start: String,
    pub timezone: String,
    /// Per agent since the day began (names in `name`).
    pub today: Vec<Line>,
    /// Per UTC day, the last 14.
    pub days: Vec<Line>,
    /// Per `provider / model`, the last 30 days.
    pub models: Vec<Line>,
    pub top_sessions: Vec<SessionRow>,
    pub budgets: Vec<BudgetRow>,
    /// `[retention] model_calls_days`: calls are kept one by one this long, then as daily
    /// totals.
    pub calls_kept_days: u64,
}

/// "1,234 tokens · $0.0123" (the cost only where prices are known), and how many calls'
/// tokens are estimates (a provider that reported none).
fn caption(l: &Line) -> String {
    let cost = if l.unpriced_calls == l.calls { String::new() } else { format!(" · {}", dollars(l.cost_usd)) };
    let estimated = match l.estimated_calls {
        0 => String::new(),
        n => format!(" · {n} of {} calls estimated", l.calls),
    };
    format!("{} tokens{cost}{estimated}", tokens(l.tokens()))
}

/// Bars by cost when every call had a price, else by tokens.
fn bars(lines: &[Line], label: impl Fn(&Line) -> String) -> Vec<Bar> {
    let by_cost = !lines.is_empty() && lines.iter().all(|l| l.unpriced_calls == 0);
    lines
        .iter()
        .map(|l| Bar {
            label: label(l),
            value: if by_cost { l.cost_usd } else { l.tokens() as f64 },
            caption: caption(l),
        })
        .collect()
}

fn left(max: Option<String>, left: Option<String>) -> String {
    match (max, left) {
        (Some(max), Some(left)) => format!("{left} of {max}"),
        _ => "no limit".into(),
    }
}

/// How long calls are kept one by one: the totals here count them all the same.
fn calls_kept(days: u64) -> String {
    match days {
        0 => "Each model call is kept for ever ([retention] model_calls_days = 0).".to_string(),
        n => format!(
            "Each model call is kept for {n} day(s), then as daily totals per agent, session and model ([retention] model_calls_days): every figure here still counts it."
        ),
    }
}

pub fn render(meta: PageMeta, page: UsagePage) -> String {
    let today = bars(&page.today, |l| l.name.clone().unwrap_or_else(|| l.key.clone()));
    let days = bars(&page.days, |l| l.key.clone());
    let models = bars(&page.models, |l| l.key.clone());
    let sessions = page
        .top_sessions
        .into_iter()
        .map(|s| {
            view! {
                <tr>
                    <td><a href=s.href>{s.agent}</a></td>
                    <td>{s.used.calls}</td>
                    <td>{tokens(s.used.tokens())}</td>
                    <td>{if s.used.unpriced_calls == s.used.calls { "no prices".to_string() } else { dollars(s.used.cost_usd) }}</td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    let no_sessions = sessions.is_empty().then(|| view! { <p class="empty">"No model calls in the last 30 days."</p> });
    let budgets = page
        .budgets
        .into_iter()
        .map(|b| {
            let who = match b.href {
                Some(href) => view! { <a href=href>{b.who}</a> }.into_any(),
                None => view! { <span>{b.who}</span> }.into_any(),
            };
            let state = match b.paused_until {
                Some(until) => {
                    view! { <span class="status stopped">{format!("paused until {} UTC", short_time(&until))}</span> }
                        .into_any()
                }
                None => view! { <span class="status running">"within budget"</span> }.into_any(),
            };
            view! {
                <tr>
                    <td>{who}</td>
                    <td>{tokens(b.used.tokens())}" · "{dollars(b.used.cost_usd)}</td>
                    <td>{left(b.max_tokens.map(tokens), b.tokens_left.map(tokens))}</td>
                    <td>{left(b.max_usd.map(dollars), b.usd_left.map(dollars))}</td>
                    <td>{state}</td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    let no_budgets = budgets.is_empty().then(|| {
        view! { <p class="empty">"No budget is set: [budgets] in config.toml for the daemon, [limits] max_tokens_per_day / max_usd_per_day in an agent type."</p> }
    });
    crate::document(
        view! {
            <Shell meta>
                <h1>"Usage"</h1>
                <p class="hint">{format!("Today began {} UTC (the budget day, {}). Costs come from the prices in config.toml.", short_time(&page.day_start), page.timezone)}</p>
                <p class="hint retention">{calls_kept(page.calls_kept_days)}</p>
                <section class="card" id="usage-today">
                    <h2>"Today, per agent"</h2>
                    <BarChart title="Model use today, per agent".to_string() bars=today unit="Used"/>
                </section>
                <section class="card" id="usage-days">
                    <h2>"The last 14 days"</h2>
                    <BarChart title="Model use per day (UTC)".to_string() bars=days unit="Used"/>
                </section>
                <section class="card" id="usage-models">
                    <h2>"Per model, last 30 days"</h2>
                    <BarChart title="Model use per provider and model".to_string() bars=models unit="Used"/>
                </section>
                <section class="card" id="usage-budgets">
                    <h2>"Budgets"</h2>
                    <div class="scroll">
                        <table>
                            <thead><tr><th>"Whose"</th><th>"Used today"</th><th>"Tokens left"</th><th>"Dollars left"</th><th>"State"</th></tr></thead>
                            <tbody>{budgets}</tbody>
                        </table>
                    </div>
                    {no_budgets}
                </section>
                <section class="card" id="usage-sessions">
                    <h2>"Costliest sessions, last 30 days"</h2>
                    <div class="scroll">
                        <table>
                            <thead><tr><th>"Agent"</th><th>"Calls"</th><th>"Tokens"</th><th>"Cost"</th></tr></thead>
                            <tbody>{sessions}</tbody>
                        </table>
                    </div>
                    {no_sessions}
                </section>
            </Shell>
        }
        .to_html(),
    )
}
