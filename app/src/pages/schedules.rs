//! `/schedules`: the schedule manager. Every agent's one-shot schedules and cron jobs with
//! next fire and last result, pause and resume, a schedule's fire history, and permanent
//! deletion — human-only, behind a confirmation page that names the schedule and asks the
//! operator to type its short id.

use std::sync::Arc;

use kennel_kernel::agent::Agent;
use kennel_kernel::schedule::{Fire, Schedule, ScheduleAction};
use leptos::prelude::*;

use crate::shell::{PageMeta, Section, Shell};
use crate::widgets::{
    Csrf, IntoRendered, NoMatches, Pager, Paging, agent_label, agent_names, schedule_when, short_time,
};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/schedules", "Schedules");

pub struct List {
    /// A page of the schedules, oldest first.
    pub schedules: Vec<Schedule>,
    pub paging: Paging,
    pub agents: Vec<Arc<Agent>>,
    /// The agent filter as typed (name or id); empty: every agent.
    pub agent: String,
}

/// "ok · 2026-11-30 14:02:11 · 420 ms", or "never fired".
fn last_result(fire: &Option<Fire>) -> String {
    match fire {
        None => "never fired".into(),
        Some(f) => {
            let took = f.duration_ms.map(|ms| format!(" · {ms} ms")).unwrap_or_default();
            let missed =
                if f.missed_slots > 0 { format!(" · caught up {} missed", f.missed_slots) } else { String::new() };
            format!("{} · {}{took}{missed}", f.outcome, short_time(&f.fired_at))
        }
    }
}

/// The next fire in UTC, and on the job's own clocks when its zone is another.
fn next_fire(s: &Schedule) -> String {
    let Some(utc) = s.next_fire.as_deref() else { return "—".into() };
    match s.next_fire_in_zone() {
        Some(local) => format!("{} UTC ({local})", short_time(utc)),
        None => format!("{} UTC", short_time(utc)),
    }
}

/// A button for each action the schedule's state offers (Pause or Resume), and Run now,
/// which every schedule offers (one fire outside its times).
fn toggle(s: &Schedule, csrf: &str) -> impl IntoView + use<> {
    let run = view! {
        <form method="post" action=format!("/schedules/{}/run", s.id) class="inline">
            <Csrf token=csrf.to_string()/>
            <button type="submit" aria-label=format!("Run schedule {} now", s.short_id())>"Run now"</button>
        </form>
    };
    let actions = s
        .state
        .actions()
        .iter()
        .map(|action| {
            let label = match action {
                ScheduleAction::Pause => "Pause",
                ScheduleAction::Resume => "Resume",
            };
            view! {
                <form method="post" action=format!("/schedules/{}/{}", s.id, action.as_str()) class="inline">
                    <Csrf token=csrf.to_string()/>
                    <button type="submit">{label}</button>
                </form>
            }
        })
        .collect::<Vec<_>>();
    (actions, run)
}

pub fn render_list(meta: PageMeta, page: List) -> String {
    let csrf = meta.csrf.clone();
    let names = agent_names(&page.agents);
    let shown = page.schedules.len();
    let rows = page
        .schedules
        .iter()
        .map(|s| {
            let agent = names.get(&s.agent_id).cloned().unwrap_or_else(|| s.agent_id.clone());
            view! {
                <tr id=format!("schedule-{}", s.id) data-state=s.state.as_str()>
                    <td><a href=format!("/schedules/{}", s.id)>{s.short_id()}</a></td>
                    <td><a href=format!("/agents/{}", s.agent_id)>{agent}</a></td>
                    <td>{schedule_when(s)}<span class="hint">{format!(" · {}", s.origin.as_str())}</span></td>
                    <td class="prompt">{s.prompt.clone()}</td>
                    <td><span class=format!("status {}", s.state.as_str())>{s.state.as_str()}</span></td>
                    <td>{next_fire(s)}</td>
                    <td>{last_result(&s.last_fire)}</td>
                    <td class="row-actions">
                        {toggle(s, &csrf)}
                        <a class="button danger" href=format!("/schedules/{}/delete", s.id)>"Delete…"</a>
                    </td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    let options = page
        .agents
        .iter()
        .map(|a| {
            // By id: a stopped agent's name no longer resolves.
            let id = a.id.to_string();
            let selected = a.name == page.agent || id == page.agent;
            view! { <option value=id selected=selected>{agent_label(a)}</option> }
        })
        .collect::<Vec<_>>();
    let filtered = !page.agent.is_empty();
    let empty = page.schedules.is_empty().then(|| {
        if filtered {
            view! { <NoMatches what="schedule" clear="/schedules"/> }.rendered()
        } else {
            view! { <p class="hint">"No schedules yet. Agents make them with "<code>"schedule_create"</code>" and "<code>"cron_create"</code>"; agent types declare them in "<code>"[[cron]]"</code>" blocks."</p> }.rendered()
        }
    });
    crate::document(
        view! {
            <Shell meta>
                <h1>"Schedules"</h1>
                <p class="hint">"Agents can only pause and resume their own schedules. Deleting one for good is for operators, here."</p>
                <form method="get" action="/schedules" class="filters">
                    <label>"Agent" <select name="agent"><option value="">"any"</option>{options}</select></label>
                    <button type="submit">"Filter"</button>
                </form>
                {empty}
                <div class="scroll">
                    <table id="schedules">
                        <thead><tr><th>"Id"</th><th>"Agent"</th><th>"When"</th><th>"Prompt"</th><th>"State"</th><th>"Next fire"</th><th>"Last result"</th><th></th></tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
                <Pager shown paging=page.paging/>
            </Shell>
        }
        .to_html(),
    )
}

pub struct Detail {
    pub schedule: Schedule,
    pub agent: String,
    pub fires: Vec<Fire>,
}

/// What a schedule is, in a definition list: shared by its page and the deletion page.
fn summary(s: &Schedule, agent: &str) -> impl IntoView + use<> {
    view! {
        <dl class="facts">
            <dt>"Agent"</dt><dd><a href=format!("/agents/{}", s.agent_id)>{agent.to_string()}</a></dd>
            <dt>"When"</dt><dd>{schedule_when(s)}</dd>
            <dt>"Prompt"</dt><dd><pre>{s.prompt.clone()}</pre></dd>
            <dt>"From"</dt><dd>{format!("{} (created by {})", s.origin.as_str(), s.created_by)}</dd>
            <dt>"State"</dt><dd>{s.state.as_str()}</dd>
            <dt>"Next fire"</dt><dd>{next_fire(s)}</dd>
        </dl>
    }
}

pub fn render_detail(meta: PageMeta, page: Detail) -> String {
    let csrf = meta.csrf.clone();
    let s = &page.schedule;
    let fires = page
        .fires
        .iter()
        .map(|f| {
            let session = f.session_id.clone().map(|id| {
                let href = format!("/agents/{}?session={id}", s.agent_id);
                view! { " "<a href=href class="hint">"open the session"</a> }
            });
            view! {
                <tr>
                    <td>{short_time(&f.due_at)}</td>
                    <td>{short_time(&f.fired_at)}</td>
                    <td><span class=format!("status {}", f.outcome)>{f.outcome.as_str()}</span></td>
                    <td>{f.duration_ms.map(|ms| format!("{ms} ms")).unwrap_or_default()}</td>
                    <td>{if f.missed_slots > 0 { f.missed_slots.to_string() } else { String::new() }}</td>
                    <td>{f.detail.clone().unwrap_or_default()}{session}</td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    let (title, facts, toggle, delete) = (
        format!("Schedule {}", s.short_id()),
        summary(s, &page.agent),
        toggle(s, &csrf),
        format!("/schedules/{}/delete", s.id),
    );
    crate::document(
        view! {
            <Shell meta>
                <h1>{title}</h1>
                <section class="card">
                    {facts}
                    <div class="actions">
                        {toggle}
                        <a class="button danger" href=delete>"Delete…"</a>
                    </div>
                </section>
                <section class="card">
                    <h2>"Fires"</h2>
                    <table id="fires">
                        <thead><tr><th>"Due"</th><th>"Fired"</th><th>"Outcome"</th><th>"Took"</th><th>"Missed slots"</th><th>"Reply or error"</th></tr></thead>
                        <tbody>{fires}</tbody>
                    </table>
                </section>
                <p><a href="/schedules">"Back to schedules"</a></p>
            </Shell>
        }
        .to_html(),
    )
}

pub struct ConfirmDelete {
    pub schedule: Schedule,
    pub agent: String,
    /// Why the last attempt was refused (a mistyped confirmation).
    pub error: Option<String>,
}

pub fn render_confirm_delete(meta: PageMeta, page: ConfirmDelete) -> String {
    let csrf = meta.csrf.clone();
    let s = &page.schedule;
    let short = s.short_id();
    let error =
        page.error.map(|e| view! { <p class="field-error" id="confirm-error">{crate::widgets::rich_text(&e)}</p> });
    let (facts, action, keep) =
        (summary(s, &page.agent), format!("/schedules/{}/delete", s.id), format!("/schedules/{}", s.id));
    crate::document(
        view! {
            <Shell meta>
                <h1>{format!("Delete schedule {short} for good?")}</h1>
                <section class="card danger-zone">
                    {facts}
                    <p>"This removes the schedule and its fire history. It cannot be undone. To stop it firing but keep it, pause it instead."</p>
                    <form method="post" action=action class="stack" id="confirm-delete">
                        <Csrf token=csrf/>
                        <label>{format!("Type {short} to confirm")}
                            <input type="text" name="confirm" autocomplete="off" required/>
                        </label>
                        {error}
                        <div class="actions">
                            <button type="submit" class="danger">"Delete permanently"</button>
                            <a href=keep>"Keep it"</a>
                        </div>
                    </form>
                </section>
            </Shell>
        }
        .to_html(),
    )
}
