//! `/tasks`: the task board. Columns by status, filters, a task's history and the operator's
//! actions (reassign, cancel, retry). The board reloads itself every few seconds while open.

use std::sync::Arc;

use kennel_kernel::agent::Agent;
use kennel_kernel::session::Session;
use kennel_kernel::tasks::{Task, TaskAction, TaskChange, TaskEvent, TaskStatus};
use leptos::prelude::*;

use crate::shell::{PageMeta, Section, Shell};
use crate::widgets::{
    Csrf, IntoRendered, Markdown, NoMatches, Pager, Paging, TextArea, agent_label, agent_names, field_error, short_time,
};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/tasks", "Tasks");

pub struct Board {
    /// A page of the tasks, highest priority first.
    pub tasks: Vec<Task>,
    pub paging: Paging,
    pub agents: Vec<Arc<Agent>>,
    pub assignee: String,
    pub text: String,
    pub min_priority: i64,
    /// The "post a task" form as sent, when it was refused, with what was wrong.
    pub post: PostForm,
}

/// The fields of the "post a task" form and their problems.
#[derive(Debug, Clone, Default)]
pub struct PostForm {
    pub title: String,
    pub body: String,
    pub assignee: String,
    pub priority: Option<i64>,
    pub errors: Vec<kennel_kernel::error::FieldError>,
}

pub fn render_board(meta: PageMeta, page: Board) -> String {
    let csrf = meta.csrf.clone();
    let names = agent_names(&page.agents);
    let name_of = |id: &Option<String>| {
        id.as_ref().map(|i| names.get(i).cloned().unwrap_or_else(|| i.clone())).unwrap_or_else(|| "anyone".into())
    };
    let columns = TaskStatus::ALL
        .iter()
        .map(|status| {
            let cards = page
                .tasks
                .iter()
                .filter(|t| t.status == *status)
                .map(|t| {
                    let who = if t.status == TaskStatus::Claimed {
                        format!("claimed by {}", name_of(&t.claimed_by))
                    } else {
                        format!("for {}", name_of(&t.assigned_to))
                    };
                    view! {
                        <li class="task-card">
                            <a href=format!("/tasks/{}", t.id)>{t.title.clone()}</a>
                            <span class="hint">{format!("P{} · {who}", t.priority)}</span>
                        </li>
                    }
                })
                .collect::<Vec<_>>();
            let count = cards.len();
            view! {
                <section class="column" id=format!("column-{status}")>
                    <h2>{format!("{status} ({count})")}</h2>
                    <ul>{cards}</ul>
                </section>
            }
        })
        .collect::<Vec<_>>();
    let options = page
        .agents
        .iter()
        .map(|a| {
            // By id: a stopped agent's name no longer resolves.
            let id = a.id.to_string();
            let selected = id == page.assignee || a.name == page.assignee;
            view! { <option value=id selected=selected>{agent_label(a)}</option> }
        })
        .collect::<Vec<_>>();
    let post = page.post;
    let post_options = page
        .agents
        .iter()
        .filter(|a| a.is_running())
        .map(|a| {
            let selected = a.name == post.assignee;
            view! { <option value=a.name.clone() selected=selected>{a.name.clone()}</option> }
        })
        .collect::<Vec<_>>();
    let shown = page.tasks.len();
    let filtered = !page.assignee.is_empty() || !page.text.is_empty() || page.min_priority > 0;
    let no_matches = (shown == 0 && filtered).then(|| view! { <NoMatches what="task" clear="/tasks"/> });
    crate::document(
        view! {
            <Shell meta>
                <h1>"Task board"</h1>
                <form method="get" action="/tasks" class="filters">
                    <label>"Assignee" <select name="assignee"><option value="">"any"</option>{options}</select></label>
                    <label>"Priority at least" <input type="number" name="min_priority" min="0" max="9" value=page.min_priority.to_string()/></label>
                    <label>"Text" <input type="search" name="text" value=page.text/></label>
                    <button type="submit">"Filter"</button>
                </form>
                {no_matches}
                <div class="board">{columns}</div>
                <Pager shown paging=page.paging/>
                <section class="card">
                    <h2>"Post a task"</h2>
                    <form method="post" action="/tasks" class="stack" id="post-task">
                        <Csrf token=csrf/>
                        <div class="row">
                            <label>"Title" <input type="text" name="title" required value=post.title/></label>
                            <label>"For" <select name="assignee"><option value="">"anyone"</option>{post_options}</select></label>
                            <label>"Priority" <input type="number" name="priority" min="0" max="9" value=post.priority.unwrap_or(5).to_string()/></label>
                        </div>
                        {field_error(&post.errors, "title")}
                        {field_error(&post.errors, "assignee")}
                        {field_error(&post.errors, "priority")}
                        <label>"Details" <TextArea name="body" rows=3 value=post.body/></label>
                        {field_error(&post.errors, "body")}
                        <button type="submit">"Post"</button>
                    </form>
                </section>
            </Shell>
        }
        .to_html(),
    )
}

pub struct Detail {
    pub task: Task,
    pub history: Vec<TaskEvent>,
    /// The sessions the board opened to wake the task's assignee, oldest first.
    pub wake_ups: Vec<Session>,
    pub agents: Vec<Arc<Agent>>,
}

pub fn render_detail(meta: PageMeta, page: Detail) -> String {
    let csrf = meta.csrf.clone();
    let names = agent_names(&page.agents);
    let t = page.task;
    let name_of = |id: &Option<String>| id.as_ref().map(|i| names.get(i).cloned().unwrap_or_else(|| i.clone()));
    let mut history = page
        .history
        .iter()
        .map(|e| {
            let what = match e.change {
                TaskChange::Posted => format!("posted by {}", e.actor.clone().unwrap_or_default()),
                TaskChange::Claimed => format!("claimed by {}", name_of(&e.actor).unwrap_or_default()),
                TaskChange::ClaimExpired => format!("claim expired: back to pending (retry {})", e.retries),
                TaskChange::Pending => {
                    format!("pending (for {})", name_of(&e.actor).unwrap_or_else(|| "anyone".into()))
                }
                TaskChange::Failed => format!("failed after {} retries", e.retries),
                TaskChange::Done => format!("done by {}", name_of(&e.actor).unwrap_or_else(|| "its claimant".into())),
                // Who cancelled is a caller's label (`operator:ada`, `cli`); rows older than
                // its recording hold the assignee's id there instead, and name no one.
                TaskChange::Cancelled => match &e.actor {
                    Some(by) if by.contains(':') || by == "cli" => format!("cancelled by {by}"),
                    _ => "cancelled".into(),
                },
            };
            (e.at.clone(), view! { <li><span class="hint">{short_time(&e.at)}</span>" "{what}</li> }.rendered())
        })
        .collect::<Vec<_>>();
    // Wake-ups in their place in time, each a link to the turn it started.
    history.extend(page.wake_ups.iter().map(|s| {
        let agent = names.get(&s.agent_id.to_string()).cloned().unwrap_or_else(|| s.agent_id.to_string());
        let href = format!("/agents/{}?session={}", s.agent_id, s.id);
        let line =
            view! { <li><span class="hint">{short_time(&s.created_at)}</span>" woke "<a href=href>{agent}</a></li> };
        (s.created_at.clone(), line.rendered())
    }));
    history.sort_by(|a, b| a.0.cmp(&b.0));
    let history = history.into_iter().map(|(_, line)| line).collect::<Vec<_>>();
    let actions = {
        let reassign = t.status.allows(TaskAction::Reassign).then(|| {
            let options = page
                .agents
                .iter()
                .filter(|a| a.is_running())
                .map(|a| {
                    // The current assignee first chosen: reassigning starts from who has it.
                    let current = t.assigned_to.as_deref() == Some(a.id.to_string().as_str());
                    view! { <option value=a.name.clone() selected=current>{a.name.clone()}</option> }
                })
                .collect::<Vec<_>>();
            view! {
                <form method="post" action=format!("/tasks/{}/reassign", t.id) class="inline">
                    <Csrf token=csrf.clone()/>
                    <select name="assignee"><option value="">"anyone"</option>{options}</select>
                    <button type="submit">"Reassign"</button>
                </form>
            }
        });
        let cancel = t.status.allows(TaskAction::Cancel).then(|| {
            view! {
                <form method="post" action=format!("/tasks/{}/cancel", t.id) class="inline">
                    <Csrf token=csrf.clone()/>
                    <button type="submit" class="danger">"Cancel"</button>
                </form>
            }
        });
        let retry = t.status.allows(TaskAction::Retry).then(|| {
            view! {
                <form method="post" action=format!("/tasks/{}/retry", t.id) class="inline">
                    <Csrf token=csrf.clone()/>
                    <button type="submit">"Retry"</button>
                </form>
            }
        });
        view! { <div class="actions">{reassign}{cancel}{retry}</div> }
    };
    let result = t.result.clone().map(|r| view! { <h2>"Result"</h2><Markdown text=r/> });
    let summary = format!(
        "Priority {} · for {} · task {} ({})",
        t.priority,
        name_of(&t.assigned_to).unwrap_or_else(|| "anyone".into()),
        kennel_kernel::text::short_id(&t.id.to_string()),
        t.id
    );
    crate::document(
        view! {
            <Shell meta>
                <h1>{t.title.clone()}" "<span class=format!("status {}", t.status)>{t.status.as_str()}</span></h1>
                <p class="hint">{summary}</p>
                <div class="columns">
                    <section class="card">
                        <pre>{t.body.clone()}</pre>
                        {result}
                        {actions}
                    </section>
                    <section class="card">
                        <h2>"History"</h2>
                        <ol class="history" id="task-history">{history}</ol>
                    </section>
                </div>
                <p><a href="/tasks">"Back to the board"</a></p>
            </Shell>
        }
        .to_html(),
    )
}
