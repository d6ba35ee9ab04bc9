//! `/agents/{id}`: one agent's page: its status, usage and budget, chat, canvas, grants,
//! schedules, manifest and workspace.

use std::sync::Arc;

use kennel_kernel::agent::Agent;
use kennel_kernel::ask::Question;
use kennel_kernel::canvas::Canvas;
use kennel_kernel::schedule::Schedule;
use kennel_kernel::session::{Compaction, Failure, Origin, Session, StoredMessage};
use kennel_kernel::workspace::Listing;
use leptos::prelude::*;

use super::chat::{compaction_place, compaction_view, failure_view, message_view, questions_view, results_by_call};
use super::files::workspace_card;
use super::lifecycle::lifecycle_buttons;
use crate::shell::{PageMeta, Shell};
use crate::widgets::{CanvasFrame, Csrf, IntoRendered, Pager, Paging, TextArea, origin_names, short_time};

pub struct AgentPage {
    pub agent: Arc<Agent>,
    pub manifest_toml: String,
    /// A page of its sessions, newest first.
    pub sessions: Vec<Session>,
    pub sessions_paging: Paging,
    pub session: Option<Session>,
    pub messages: Vec<StoredMessage>,
    /// The session's failed turns, shown after the message each left unanswered.
    pub failures: Vec<Failure>,
    /// Where the session was compacted for the model, shown where each took effect.
    pub compactions: Vec<Compaction>,
    pub chat_error: Option<String>,
    /// What a refused chat was sending, back in the box.
    pub draft: Option<String>,
    /// Its first schedules and cron jobs.
    pub schedules: Vec<Schedule>,
    /// A refused grant or revoke, shown at the grant form.
    pub grant_error: Option<String>,
    /// Its workspace's files.
    pub workspace: Listing,
    /// A refused upload, shown at the upload form.
    pub upload_error: Option<String>,
    /// Its latest canvas versions, newest first.
    pub canvases: Vec<Canvas>,
    /// Its model use today (since the budget day began).
    pub usage_today: kennel_kernel::usage::Line,
    /// What its own budget leaves today: tokens, dollars (`None`: it has no budget).
    pub budget_left: Option<(Option<u64>, Option<f64>)>,
    /// Its budget pause in force, if any.
    pub paused: Option<kennel_kernel::agent::Pause>,
    /// Model calls waiting for a place at its provider (`max_in_flight`): waiting, places.
    pub queued: Option<(usize, u64)>,
    /// Its `ask_user` questions waiting in a chat, oldest first.
    pub questions: Vec<Question>,
    /// Whether a turn runs in the session shown (it can be stopped).
    pub turn_running: bool,
}

pub fn render_agent(meta: PageMeta, page: AgentPage) -> String {
    let csrf = meta.csrf.clone();
    let a = page.agent.clone();
    let id = a.id.to_string();
    let grants = a
        .manifest
        .capabilities
        .tools
        .iter()
        .map(|g| {
            let csrf = csrf.clone();
            view! {
                <li>
                    <code>{g.as_str().to_string()}</code>
                    " "
                    <form method="post" action=format!("/agents/{}/revoke", a.id) class="inline">
                        <Csrf token=csrf/>
                        <input type="hidden" name="pattern" value=g.as_str().to_string()/>
                        <button type="submit" class="link danger">"revoke"</button>
                    </form>
                </li>
            }
        })
        .collect::<Vec<_>>();
    let current = page.session.as_ref().map(|s| s.id);
    let shown_sessions = page.sessions.len();
    // The chats as one picker: each named by who it is with, when it began and what it
    // began with.
    let sessions = page
        .sessions
        .iter()
        .map(|s| {
            let mut label = format!("{} · {}", origin_names(&s.origin()).0, short_time(&s.created_at));
            if let Some(preview) = &s.preview {
                label = format!("{label} · {preview}");
            }
            view! { <option value=s.id.to_string() selected=Some(s.id) == current>{label}</option> }
        })
        .collect::<Vec<_>>();
    let origin = page.session.as_ref().map_or(Origin::Unlabelled, Session::origin);
    let mut failures = page.failures.into_iter().peekable();
    let mut compactions = page.compactions.into_iter().peekable();
    let mut chat = Vec::new();
    let results = results_by_call(&page.messages);
    for m in page.messages {
        let seq = m.seq;
        chat.extend(message_view(&id, &origin, &results, m));
        while let Some(c) = compactions.next_if(|c| compaction_place(c) <= seq) {
            chat.push(compaction_view(c));
        }
        while let Some(f) = failures.next_if(|f| f.after_seq <= seq) {
            chat.push(failure_view(f));
        }
    }
    chat.extend(compactions.map(compaction_view));
    chat.extend(failures.map(failure_view));
    let retry = page.chat_error.is_some() && page.draft.is_some();
    let chat_error = page
        .chat_error
        .map(|e| view! { <p class="flash error" role="alert" id="chat-error">{crate::widgets::rich_text(&e)}</p> });
    let session_field = current.map(|s| view! { <input type="hidden" name="session" value=s.to_string()/> });
    let status = if a.is_running() { "running" } else { "stopped" };
    // A turn running in this chat (sent from another tab, or before a reload) can be stopped
    // from here; public/live.js offers the same button while a turn it sent runs.
    let running_turn = current.filter(|_| page.turn_running).map(|session| {
        view! {
            <form method="post" action=format!("/agents/{}/sessions/{session}/cancel", a.id) class="row" id="turn-running">
                <Csrf token=csrf.clone()/>
                <span class="hint">"A turn is running in this chat."</span>
                <button type="submit" class="danger">"Stop the turn"</button>
            </form>
        }
    });
    // A stopped agent takes no messages: no chat box that can only fail.
    let chat_form = if a.is_running() {
        view! {
            <form method="post" action=format!("/agents/{}/chat", a.id) class="stack" id="chat-form" data-live=format!("/agents/{}/live", a.id)>
                <Csrf token=csrf.clone()/>
                {session_field}
                {retry.then(|| view! { <input type="hidden" name="retry" value="1"/> })}
                <TextArea name="message" rows=3 required=true placeholder="Message the agent" value=page.draft.clone().unwrap_or_default()/>
                <div class="row">
                    <button type="submit">{if retry { "Retry" } else { "Send" }}</button>
                    <button type="button" class="danger" id="chat-stop" hidden>"Stop the turn"</button>
                    <span class="hint">"Ctrl+Enter sends."</span>
                </div>
            </form>
        }
        .rendered()
    } else {
        view! { <p class="hint" id="chat-stopped">"This agent is stopped: start it to chat."</p> }.rendered()
    };
    let goal = a.goal.clone().unwrap_or_else(|| "none".into());
    let schedules = page
        .schedules
        .iter()
        .map(|s| {
            let next = s.next_fire.as_deref().map(|t| format!(" · next {} UTC", short_time(t))).unwrap_or_default();
            view! {
                <li>
                    <a href=format!("/schedules/{}", s.id)>{crate::widgets::schedule_when(s)}</a>
                    <span class="hint">{format!(" {}{next}", s.state.as_str())}</span>
                </li>
            }
        })
        .collect::<Vec<_>>();
    let no_schedules = page.schedules.is_empty().then(|| view! { <p class="hint">"None."</p> });
    crate::document(
        view! {
            <Shell meta>
                <h1>{a.name.clone()}" "<span class=format!("status {status}")>{status}</span></h1>
                <p class="hint">{format!("Type {} · id {} · goal: {goal}", a.agent_type, a.id)}</p>
                {pause_banner(&a, page.paused, &csrf)}
                <p class="hint" id="agent-usage">{usage_line(&page.usage_today, page.budget_left)}" "<a href="/usage">"Usage"</a></p>
                {page.queued.filter(|(waiting, _)| *waiting > 0).map(|(waiting, places)| view! {
                    <p class="flash" role="status" id="agent-queued">{format!("{waiting} model call(s) queued: the provider's {places} places (max_in_flight) are taken.")}</p>
                })}
                <div class="actions">{lifecycle_buttons(&a, &csrf)}</div>
                <div class="columns">
                    <section class="card" id="chat">
                        <h2>"Chat"</h2>
                        <form method="get" action=format!("/agents/{}#chat", a.id) class="row session-picker" id="session-picker">
                            <label for="session-pick">"Session"</label>
                            <select id="session-pick" name="session">
                                <option value="new" selected=current.is_none()>"New session"</option>
                                {sessions}
                            </select>
                            <button type="submit">"Open"</button>
                        </form>
                        <Pager shown=shown_sessions paging=page.sessions_paging/>
                        <div class="chat-log">{chat}</div>
                        // What the running turn does, step by step: its latest step in
                        // the summary, the whole trace folded (public/live.js fills both).
                        <details class="live-trace" id="live-trace" hidden>
                            <summary><span class="live-status" aria-live="polite">"Working…"</span></summary>
                            <ol class="live-log" id="live-log"></ol>
                        </details>
                        {running_turn}
                        {questions_view(&id, &csrf, page.questions)}
                        {chat_error}
                        {chat_form}
                    </section>
                    <section class="card">
                        {canvas_card(&id, page.canvases)}
                        <h2>"Grants"</h2>
                        <ul class="grants">{grants}</ul>
                        <form method="post" action=format!("/agents/{}/grant", a.id) class="inline" id="grant-form">
                            <Csrf token=csrf.clone()/>
                            <input type="text" name="pattern" placeholder="system_time, memory_*, browser.*" required aria-label="Grant pattern"/>
                            <button type="submit">"Grant"</button>
                        </form>
                        {page.grant_error.map(|e| view! { <p class="field-error" id="pattern-error" role="alert">{crate::widgets::rich_text(&e)}</p> })}
                        <p><a href=format!("/tools?agent={id}")>"The agent's effective tool set"</a></p>
                        <p><a href=format!("/agents/{id}/memory") id="agent-memory">"Its memory"</a>" · "<a href=format!("/agents/{id}/knowledge") id="agent-knowledge">"Its knowledge graph"</a>" · "<a href=format!("/agents/{id}/browser") id="agent-browser">"Its browser tabs"</a>" · "<a href=format!("/agents/{id}/processes") id="agent-processes">"Its processes"</a></p>
                        <h2>"Schedules"</h2>
                        <ul class="schedules" id="agent-schedules">{schedules}</ul>
                        {no_schedules}
                        <p><a href=format!("/schedules?agent={id}")>"Manage its schedules"</a></p>
                        <h2>"Manifest"</h2>
                        <pre class="code">{page.manifest_toml}</pre>
                    </section>
                </div>
                {workspace_card(&id, &csrf, page.workspace, page.upload_error)}
            </Shell>
        }
        .to_html(),
    )
}

/// The agent's latest canvas, live: `live.js` swaps in each new version as it is presented.
fn canvas_card(agent: &str, versions: Vec<Canvas>) -> impl IntoView + use<> {
    let live = format!("/agents/{agent}/canvas/live");
    let frame = match versions.first() {
        Some(latest) => view! { <CanvasFrame canvas=latest.clone()/> }.rendered(),
        None => view! { <p class="hint" id="no-canvas">"No canvas yet: an agent granted "<code>"canvas_present"</code>" shows one here."</p> }.rendered(),
    };
    let items = crate::pages::canvas::version_items(&versions, versions.first().map(|c| c.version));
    view! {
        <div id="canvas" data-canvas-live=live>
            <h2>"Canvas"</h2>
            <div class="canvas-live">{frame}</div>
            <ol class="versions" id="canvas-versions">{items}</ol>
        </div>
    }
}

/// Today's model use and what the agent's budget leaves.
fn usage_line(today: &kennel_kernel::usage::Line, left: Option<(Option<u64>, Option<f64>)>) -> String {
    let cost = if today.calls > today.unpriced_calls {
        format!(" · {}", crate::widgets::dollars(today.cost_usd))
    } else {
        String::new()
    };
    let budget = left.map_or_else(String::new, |(tokens, usd)| {
        let parts: Vec<String> = [
            tokens.map(|t| format!("{} tokens left", crate::widgets::tokens(t))),
            usd.map(|u| format!("{} left", crate::widgets::dollars(u))),
        ]
        .into_iter()
        .flatten()
        .collect();
        format!(" · budget: {}", parts.join(", "))
    });
    format!("Today: {} model calls · {} tokens{cost}{budget}.", today.calls, crate::widgets::tokens(today.tokens()))
}

/// The notice of a budget pause, with the operator's way out.
fn pause_banner(a: &Agent, paused: Option<kennel_kernel::agent::Pause>, csrf: &str) -> Option<impl IntoView + use<>> {
    let pause = paused?;
    Some(view! {
        <div class="flash error" role="alert" id="agent-paused">
            <p>{format!("Paused until {} UTC: {}", crate::widgets::short_time(&pause.until), pause.reason)}</p>
            <form method="post" action=format!("/agents/{}/lift", a.id) class="inline">
                <Csrf token=csrf.to_string()/>
                <button type="submit">"Lift the pause"</button>
            </form>
        </div>
    })
}
