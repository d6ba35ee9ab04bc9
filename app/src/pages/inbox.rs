//! `/inbox`: the owner inbox — notes from agents (`notify_owner`) and from the daemon (budget
//! pauses), newest first, unread ones marked; filters by agent, urgency and unread; mark one or
//! all read (the operator's own read state). Notes are agents' text: shown as text.

use std::sync::Arc;

use kennel_kernel::agent::Agent;
use kennel_kernel::notify::{Note, Urgency};
use leptos::prelude::*;

use crate::shell::{PageMeta, Section, Shell};
use crate::widgets::{Csrf, IntoRendered, Markdown, NoMatches, Pager, Paging, agent_label, short_time};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/inbox", "Inbox").counting_unread();

pub struct InboxPage {
    pub notes: Vec<Note>,
    pub paging: Paging,
    pub agents: Vec<Arc<Agent>>,
    /// The filters as given.
    pub agent: String,
    pub urgency: Option<Urgency>,
    pub unread_only: bool,
    /// Calls waiting for a person's approval (`/approvals`).
    pub waiting_approvals: u64,
}

pub fn render(meta: PageMeta, page: InboxPage) -> String {
    let csrf = meta.csrf.clone();
    let unread = meta.unread;
    let shown = page.notes.len();
    let filtered = !page.agent.is_empty() || page.urgency.is_some() || page.unread_only;
    let agents = page
        .agents
        .iter()
        .map(|a| {
            let id = a.id.to_string();
            let selected = a.name == page.agent || id == page.agent;
            view! { <option value=id selected=selected>{agent_label(a)}</option> }
        })
        .collect::<Vec<_>>();
    let urgencies = Urgency::ALL
        .iter()
        .map(|u| view! { <option value=u.as_str() selected=page.urgency == Some(*u)>{u.as_str()}</option> })
        .collect::<Vec<_>>();
    let empty = page.notes.is_empty().then(|| {
        if filtered {
            view! { <NoMatches what="note" clear="/inbox"/> }.rendered()
        } else {
            view! { <p class="hint">"No notes yet. Agents granted "<code>"notify_owner"</code>" leave them here; a budget that pauses an agent does too."</p> }.rendered()
        }
    });
    let notes = page.notes.into_iter().map(|n| note(n, csrf.clone())).collect::<Vec<_>>();
    let mark_all = (unread > 0).then(|| {
        view! {
            <form method="post" action="/inbox/read" class="inline">
                <Csrf token=csrf.clone()/>
                <button type="submit">{format!("Mark all {unread} read")}</button>
            </form>
        }
    });
    crate::document(
        view! {
            <Shell meta>
                <h1>"Inbox"</h1>
                <p class="hint">"Notes for the operators — never part of a chat. Each operator's read marks are their own."</p>
                <p id="waiting-approvals">
                    <a href="/approvals">{match page.waiting_approvals {
                        0 => "Approvals: no call is waiting".to_string(),
                        1 => "Approvals: 1 call is waiting for a decision".to_string(),
                        n => format!("Approvals: {n} calls are waiting for a decision"),
                    }}</a>
                </p>
                <form method="get" action="/inbox" class="filters">
                    <label>"Agent" <select name="agent"><option value="">"any"</option>{agents}</select></label>
                    <label>"Urgency" <select name="urgency"><option value="">"any"</option>{urgencies}</select></label>
                    <label><input type="checkbox" name="unread" value="true" checked=page.unread_only/>" Unread only"</label>
                    <button type="submit">"Filter"</button>
                </form>
                {mark_all}
                {empty}
                <ul id="notes" class="notes">{notes}</ul>
                <Pager shown paging=page.paging/>
            </Shell>
        }
        .to_html(),
    )
}

fn note(n: Note, csrf: String) -> impl IntoView + use<> {
    let class = if n.read { "card note" } else { "card note unread" };
    let from = match (&n.agent_name, n.source.as_str()) {
        (Some(agent), "budget") => format!("budget · agent {agent}"),
        (Some(agent), _) => format!("agent {agent}"),
        (None, source) => source.to_string(),
    };
    let state = if n.read { "read" } else { "unread" };
    let fan_out = [("Telegram", n.telegram), ("Email", n.email)]
        .into_iter()
        .filter_map(|(by, outcome)| outcome.map(|o| format!(" · {by}: {o}")))
        .collect::<String>();
    let mark = (!n.read).then(|| {
        let id = n.id.to_string();
        view! {
            <form method="post" action="/inbox/read" class="inline">
                <Csrf token=csrf/>
                <input type="hidden" name="id" value=id/>
                <button type="submit">"Mark read"</button>
            </form>
        }
    });
    view! {
        <li class=class id=format!("note-{}", n.id)>
            <h2>{n.reason}</h2>
            <p class="hint">{format!("{} · {} · {} · {state}", n.urgency.as_str(), from, short_time(&n.at))}{fan_out}</p>
            <div class="summary"><Markdown text=n.summary/></div>
            {mark}
        </li>
    }
}
