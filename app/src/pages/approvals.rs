//! `/approvals`: calls agents made after reading untrusted content (or that a rule always
//! holds), waiting for a person — their exact arguments, the sources the turn had read, the
//! rule; approve once or for a while, or deny with a note. Decided ones stay as the record.
//! Arguments, labels and notes are agents' and strangers' text: shown as text.

use kennel_kernel::approval::{Approval, Status};
use leptos::prelude::*;

use crate::shell::{PageMeta, Shell};
use crate::widgets::{Csrf, IntoRendered, short_time};

/// Its place in the navigation: under the Inbox (things that wait for the operators).
pub use super::inbox::SECTION;

/// The choices of "approve for a while", in minutes (0: this call once).
const FOR_MINUTES: [(u32, &str); 4] = [(0, "this call once"), (15, "15 minutes"), (60, "an hour"), (480, "8 hours")];

pub struct ApprovalsPage {
    pub approvals: Vec<Approval>,
    /// The state shown: `None` for every state.
    pub status: Option<Status>,
}

pub fn render(meta: PageMeta, page: ApprovalsPage) -> String {
    let csrf = meta.csrf.clone();
    let states = [
        ("pending", Some(Status::Pending)),
        ("approved", Some(Status::Approved)),
        ("denied", Some(Status::Denied)),
        ("expired", Some(Status::Expired)),
        ("all", None),
    ]
    .into_iter()
    .map(|(label, status)| view! { <option value=label selected=page.status == status>{label}</option> })
    .collect::<Vec<_>>();
    let empty = page.approvals.is_empty().then(|| match page.status {
        Some(Status::Pending) => view! {
            <p class="hint">"No call is waiting. Calls that "<code>"[approvals]"</code>" rules hold (by default: a turn that read a web page, an MCP result, a remote agent or a channel message, then runs a command, sends to a remote agent, changes a skill or creates an agent type) wait here."</p>
        }
        .rendered(),
        _ => view! { <p class="hint">"No approvals in this state."</p> }.rendered(),
    });
    let cards = page.approvals.into_iter().map(|a| card(a, csrf.clone())).collect::<Vec<_>>();
    crate::document(
        view! {
            <Shell meta>
                <h1>"Approvals"</h1>
                <p class="hint">"A call here has not run. Approve it and its turn goes on (a parked turn, which had nobody in it, goes on in its session); deny it and the agent is told who denied it and why. Nobody deciding in time denies it."</p>
                <form method="get" action="/approvals" class="filters">
                    <label>"State " <select name="status">{states}</select></label>
                    <button type="submit">"Show"</button>
                </form>
                {empty}
                <ul id="approvals" class="notes">{cards}</ul>
            </Shell>
        }
        .to_html(),
    )
}

fn card(a: Approval, csrf: String) -> impl IntoView + use<> {
    let id = a.id.to_string();
    let state = match (&a.decided_by, a.status) {
        (Some(by), status) => {
            format!("{} by {by} · {}", status.as_str(), short_time(a.decided_at.as_deref().unwrap_or_default()))
        }
        (None, _) => format!("waiting until {}", short_time(&a.expires_at)),
    };
    let arguments = serde_json::to_string_pretty(&a.arguments).unwrap_or_else(|_| a.arguments.to_string());
    let labels = a.provenance.iter().map(|l| view! { <li>{l.to_string()}</li> }).collect::<Vec<_>>();
    let read = (!labels.is_empty()).then(|| view! { <p>"The turn had read:"</p><ul class="labels">{labels}</ul> });
    let note = a.note.clone().map(|n| view! { <p>"Note: "{n}</p> });
    // A headless turn (a schedule, the API) did not wait: say where the call goes on.
    let parked = match (a.parked, a.status, &a.resumed_at) {
        (false, _, _) => None,
        (true, Status::Pending, _) => Some(
            "Parked: its turn had nobody in it and ended; the call runs, and the session goes on, once decided."
                .to_string(),
        ),
        (true, _, Some(at)) => Some(format!("Its session went on {}.", short_time(at))),
        (true, _, None) => Some("Its session goes on in a moment.".to_string()),
    }
    .map(|text| view! { <p class="hint">{text}</p> });
    let until = a
        .allow_until
        .clone()
        .map(|u| view! { <p class="hint">{format!("Calls like it approved until {}", short_time(&u))}</p> });
    let decide = (a.status == Status::Pending).then(|| {
        let choices = FOR_MINUTES
            .iter()
            .map(|(minutes, label)| view! { <option value=minutes.to_string()>{*label}</option> })
            .collect::<Vec<_>>();
        let (approve_to, deny_to) = (format!("/approvals/{id}/approve"), format!("/approvals/{id}/deny"));
        let (for_id, note_id, deny_note_id) = (format!("for-{id}"), format!("note-{id}"), format!("deny-note-{id}"));
        view! {
            <form method="post" action=approve_to class="stack">
                <Csrf token=csrf.clone()/>
                <label for=for_id.clone()>"Approve"</label>
                <select id=for_id name="for_minutes">{choices}</select>
                <label for=note_id.clone()>"Note for the agent (optional)"</label>
                <input id=note_id name="note" maxlength="500"/>
                <button type="submit">"Approve"</button>
            </form>
            <form method="post" action=deny_to class="stack">
                <Csrf token=csrf/>
                <label for=deny_note_id.clone()>"Why (the agent is told)"</label>
                <input id=deny_note_id name="note" maxlength="500"/>
                <button type="submit" class="danger">"Deny"</button>
            </form>
        }
    });
    view! {
        <li class="card note" id=format!("approval-{id}")>
            <h2><code>{a.tool.clone()}</code>{format!(" by agent {}", a.agent)}</h2>
            <p class="hint">{format!("{} · asked {} · {state}", a.status.as_str(), short_time(&a.requested_at))}</p>
            <p>{format!("Why: {}", a.reason)}</p>
            <p class="hint">{format!("Rule: {}", a.rule)}</p>
            {read}
            <details open=a.status == Status::Pending>
                <summary>"The exact arguments"</summary>
                <pre class="arguments">{arguments}</pre>
            </details>
            {parked}
            {note}
            {until}
            {decide}
        </li>
    }
}
