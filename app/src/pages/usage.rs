//! `/usage`: what the agents' model calls used and cost, today and by day, the costliest
//! sessions, and where each budget stands.

use kennel_kernel::usage::Line;
use kennel_kernel::usage::overview::UsageOverview;
use leptos::prelude::*;

use crate::shell::{PageMeta, Section, Shell};
use crate::widgets::{Bar, BarChart, IntoRendered, dollars, short_time, tokens};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/usage", "Usage");

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

pub fn render(meta: PageMeta, page: UsageOverview) -> String {
    let today = bars(&page.today, |l| l.name.clone().unwrap_or_else(|| l.key.clone()));
    let days = bars(&page.days, |l| l.key.clone());
    let models = bars(&page.models, |l| l.key.clone());
    let sessions = page
        .top_sessions
        .into_iter()
        .map(|s| {
            let href = format!("/agents/{}?session={}#chat", s.cost.agent, s.cost.session);
            // An agent no longer found is named by the id its calls carry.
            let agent = s.agent.map_or(s.cost.agent, |a| a.name.clone());
            let used = s.cost.line;
            view! {
                <tr>
                    <td><a href=href>{agent}</a></td>
                    <td>{used.calls}</td>
                    <td>{tokens(used.tokens())}</td>
                    <td>{if used.unpriced_calls == used.calls { "no prices".to_string() } else { dollars(used.cost_usd) }}</td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    let no_sessions = sessions.is_empty().then(|| view! { <p class="empty">"No model calls in the last 30 days."</p> });
    let budgets = page
        .budgets
        .into_iter()
        .map(|b| {
            let who = match &b.agent {
                Some(a) => view! { <a href=format!("/agents/{}", a.id)>{a.name.clone()}</a> }.rendered(),
                None => view! { <span>"the daemon"</span> }.rendered(),
            };
            let s = &b.standing;
            let state = match b.paused_until {
                Some(until) => {
                    view! { <span class="status stopped">{format!("paused until {} UTC", short_time(&until))}</span> }
                        .rendered()
                }
                None => view! { <span class="status running">"within budget"</span> }.rendered(),
            };
            view! {
                <tr>
                    <td>{who}</td>
                    <td>{tokens(s.used.tokens())}" · "{dollars(s.used.cost_usd)}</td>
                    <td>{left(s.max_tokens.map(tokens), s.tokens_left().map(tokens))}</td>
                    <td>{left(s.max_usd.map(dollars), s.usd_left().map(dollars))}</td>
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
