//! `/agents` (list, spawn, stop) and `/agents/{id}` (manifest, grants, sessions, chat).

use std::sync::Arc;

use kennel_kernel::agent::{Agent, AgentType};
use kennel_kernel::ask::Question;
use kennel_kernel::canvas::Canvas;
use kennel_kernel::error::FieldError;
use kennel_kernel::llm::{Message, ToolImage};
use kennel_kernel::schedule::Schedule;
use kennel_kernel::session::{Compaction, Failure, Origin, Session, StoredMessage};
use kennel_kernel::workspace::{FileEntry, Inert, Listing};
use leptos::prelude::*;

use crate::shell::{PageMeta, Section, Shell};
use crate::widgets::{CanvasFrame, Csrf, Pager, Paging, TextArea, field_error, human_bytes, origin_names, short_time};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/agents", "Agents");

#[derive(Debug, Clone, Default)]
pub struct SpawnForm {
    pub template: String,
    pub name: String,
    pub goal: String,
}

pub struct AgentsPage {
    /// A page of the agents, oldest first.
    pub agents: Vec<Arc<Agent>>,
    pub paging: Paging,
    pub types: Vec<Arc<AgentType>>,
    pub form: SpawnForm,
    pub errors: Vec<FieldError>,
    /// Whether workflow step agents are shown, and how many are kept.
    pub with_ephemeral: bool,
    pub ephemeral: usize,
}

/// The switch between the agents list with and without the agents spawned for workflow steps.
fn ephemeral_link(shown: bool, count: usize) -> Option<impl IntoView> {
    match (shown, count) {
        (false, 0) => None,
        (false, n) => Some(view! {
            <p class="muted"><a href="/agents?ephemeral=1">{format!("Show the {n} workflow step agent{}", if n == 1 { "" } else { "s" })}</a>" (removed a while after they stop)"</p>
        }.into_any()),
        (true, _) => Some(view! { <p class="muted"><a href="/agents">"Hide workflow step agents"</a></p> }.into_any()),
    }
}

pub fn render_list(meta: PageMeta, page: AgentsPage) -> String {
    let csrf = meta.csrf.clone();
    let shown = page.agents.len();
    let rows = page
        .agents
        .iter()
        .map(|a| {
            let stop = lifecycle_buttons(a, &csrf);
            let status = if a.is_running() { "running" } else { "stopped" };
            let step = a.ephemeral.then(|| view! { <span class="tag">"workflow step"</span> });
            view! {
                <tr>
                    <td><a href=format!("/agents/{}", a.id)>{a.name.clone()}</a>" "{step}</td>
                    <td>{a.agent_type.clone()}</td>
                    <td><span class=format!("status {status}")>{status}</span></td>
                    <td>{a.goal.clone().unwrap_or_default()}</td>
                    <td>{short_time(&a.created_at)}</td>
                    <td>{stop}</td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    let options = page
        .types
        .iter()
        .map(|t| {
            let (value, label) = (t.manifest.name.clone(), t.manifest.name.clone());
            let selected = value == page.form.template;
            view! { <option value=value selected=selected>{label}</option> }
        })
        .collect::<Vec<_>>();
    let no_types = page.types.is_empty().then(|| {
        view! { <p class="empty">"Create an agent type first: " <a href="/agent-types">"Agent types"</a></p> }
    });
    crate::document(
        view! {
            <Shell meta>
                <h1>"Agents"</h1>
                <section class="card">
                    <div class="scroll">
                        <table>
                            <thead><tr><th>"Name"</th><th>"Type"</th><th>"Status"</th><th>"Goal"</th><th>"Created"</th><th></th></tr></thead>
                            <tbody>{rows}</tbody>
                        </table>
                    </div>
                    <Pager shown paging=page.paging/>
                    {ephemeral_link(page.with_ephemeral, page.ephemeral)}
                </section>
                <section class="card">
                    <h2>"Spawn an agent"</h2>
                    {no_types}
                    <form method="post" action="/agents" class="stack" id="spawn-form">
                        <Csrf token=csrf.clone()/>
                        <div class="row">
                            <label>"Agent type" <select name="template" required>{options}</select></label>
                            <label>"Name (optional)" <input type="text" name="name" value=page.form.name/></label>
                        </div>
                        {field_error(&page.errors, "template")}
                        {field_error(&page.errors, "name")}
                        <label>"Goal (optional)" <input type="text" name="goal" value=page.form.goal/></label>
                        {field_error(&page.errors, "goal")}
                        <button type="submit">"Spawn"</button>
                    </form>
                </section>
            </Shell>
        }
        .to_html(),
    )
}

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
    let sessions = page
        .sessions
        .iter()
        .map(|s| {
            let is = Some(s.id) == current;
            let label = format!("{} · {}", origin_names(&s.origin()).0, short_time(&s.created_at));
            view! { <li><a href=format!("/agents/{}?session={}#chat", a.id, s.id) aria-current=if is { "true" } else { "false" }>{label}</a></li> }
        })
        .collect::<Vec<_>>();
    let origin = page.session.as_ref().map_or(Origin::Unlabelled, Session::origin);
    let mut failures = page.failures.into_iter().peekable();
    let mut compactions = page.compactions.into_iter().peekable();
    let mut chat = Vec::new();
    for m in page.messages {
        let seq = m.seq;
        chat.push(message_view(&id, &origin, m));
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
                    <span class="hint">"Ctrl+Enter sends."</span>
                </div>
            </form>
        }
        .into_any()
    } else {
        view! { <p class="hint" id="chat-stopped">"This agent is stopped: start it to chat."</p> }.into_any()
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
                        <ul class="sessions">
                            <li><a href=format!("/agents/{}?session=new#chat", a.id) aria-current=if current.is_none() { "true" } else { "false" }>"New session"</a></li>
                            {sessions}
                        </ul>
                        <Pager shown=shown_sessions paging=page.sessions_paging/>
                        <div class="chat-log">{chat}</div>
                        <ol class="live-log" id="live-log" hidden></ol>
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

/// The `ask_user` questions waiting in the agent's chats, each answered by a choice's button
/// or in the person's own words. live.js builds the same form when a question arrives
/// during a turn. "Answer" comes first so Enter in the box sends what was typed.
fn questions_view(agent: &str, csrf: &str, questions: Vec<Question>) -> impl IntoView + use<> {
    let items = questions
        .into_iter()
        .map(|q| {
            let choices = q
                .choices
                .iter()
                .map(|c| view! { <button type="submit" name="choice" value=c.clone() formnovalidate>{c.clone()}</button> })
                .collect::<Vec<_>>();
            view! {
                <form method="post" action=format!("/agents/{agent}/questions/{}", q.id) class="question stack" data-question=q.id.to_string()>
                    <Csrf token=csrf.to_string()/>
                    <p class="question-text"><strong>"The agent asks: "</strong>{q.question.clone()}</p>
                    <div class="row">
                        <input type="text" name="answer" required maxlength="4000" aria-label="Your answer" placeholder="Your answer"/>
                        <button type="submit">"Answer"</button>
                    </div>
                    <div class="row choices">{choices}</div>
                    <p class="hint">{format!("The turn waits until {} UTC.", short_time(&q.expires_at))}</p>
                </form>
            }
        })
        .collect::<Vec<_>>();
    view! { <div id="questions">{items}</div> }
}

/// Stop for a running agent; Start and Delete for a stopped one. Stopping and deleting ask
/// first (`data-confirm`, read by live.js).
fn lifecycle_buttons(a: &Agent, csrf: &str) -> impl IntoView + use<> {
    let button = |action: &str, label: &'static str, class: &'static str, confirm: Option<String>| {
        view! {
            <form method="post" action=format!("/agents/{}/{action}", a.id) class="inline" data-confirm=confirm>
                <Csrf token=csrf.to_string()/>
                <button type="submit" class=class>{label}</button>
            </form>
        }
    };
    if a.is_running() {
        let confirm = format!("Stop agent {}? Its running turns are cancelled and its schedules paused.", a.name);
        view! { {button("stop", "Stop", "danger", Some(confirm))} }.into_any()
    } else {
        let confirm = format!("Delete agent {}? It leaves every list; its history and audit stay.", a.name);
        view! { {button("start", "Start", "", None)}" "{button("remove", "Delete", "link danger", Some(confirm))} }
            .into_any()
    }
}

/// The agent's latest canvas, live: `live.js` swaps in each new version as it is presented.
fn canvas_card(agent: &str, versions: Vec<Canvas>) -> impl IntoView + use<> {
    let live = format!("/agents/{agent}/canvas/live");
    let frame = match versions.first() {
        Some(latest) => view! { <CanvasFrame canvas=latest.clone()/> }.into_any(),
        None => view! { <p class="hint" id="no-canvas">"No canvas yet: an agent granted "<code>"canvas_present"</code>" shows one here."</p> }.into_any(),
    };
    let items = super::canvas::version_items(&versions, versions.first().map(|c| c.version));
    view! {
        <div id="canvas" data-canvas-live=live>
            <h2>"Canvas"</h2>
            <div class="canvas-live">{frame}</div>
            <ol class="versions" id="canvas-versions">{items}</ol>
        </div>
    }
}

/// Where a workspace file is served: inline for inert types, else as a download.
pub fn file_url(agent: &str, path: &str, download: bool) -> String {
    let query = serde_urlencoded::to_string([("path", path)]).unwrap_or_default();
    format!("/agents/{agent}/files/raw?{query}{}", if download { "&download=1" } else { "" })
}

fn workspace_card(agent: &str, csrf: &str, listing: Listing, error: Option<String>) -> impl IntoView + use<> {
    let empty = listing.files.is_empty().then(|| view! { <p class="hint">"No files yet."</p> });
    let more = listing.truncated.then(|| view! { <p class="hint">{format!("Only the first {} files are listed.", kennel_kernel::workspace::MAX_LISTED)}</p> });
    let rows = listing
        .files
        .into_iter()
        .map(|f| {
            let view_url = format!(
                "/agents/{agent}/files/view?{}",
                serde_urlencoded::to_string([("path", &f.path)]).unwrap_or_default()
            );
            let download = file_url(agent, &f.path, true);
            view! {
                <tr>
                    <td><a href=view_url>{f.path.clone()}</a></td>
                    <td>{human_bytes(f.bytes)}</td>
                    <td>{short_time(&f.modified)}</td>
                    <td><a href=download download="">"Download"</a></td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    // The CSRF token is the upload's first field: the handler checks it before the file.
    let action = format!("/agents/{agent}/files");
    view! {
        <section class="card" id="workspace">
            <h2>"Workspace"</h2>
            <div class="scroll">
                <table>
                    <thead><tr><th>"File"</th><th>"Size"</th><th>"Modified"</th><th></th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
            {empty}
            {more}
            <form method="post" action=action enctype="multipart/form-data" class="inline" id="upload-form">
                <input type="hidden" name="csrf" value=csrf.to_string()/>
                <input type="file" name="file" required aria-label="File to upload"/>
                <input type="text" name="folder" placeholder="folder (optional)" aria-label="Folder in the workspace"/>
                <button type="submit">"Upload"</button>
            </form>
            {error.map(|e| view! { <p class="field-error" id="upload-error" role="alert">{crate::widgets::rich_text(&e)}</p> })}
        </section>
    }
}

pub struct FilePage {
    pub agent: Arc<Agent>,
    pub file: FileEntry,
    pub inert: Option<Inert>,
    /// The text of a text file (valid UTF-8, not too long to show).
    pub text: Option<String>,
}

/// One workspace file: shown inline when its type is inert, else offered as a download.
pub fn render_file(meta: PageMeta, page: FilePage) -> String {
    let agent = page.agent.id.to_string();
    let f = page.file;
    let inline = file_url(&agent, &f.path, false);
    let preview = match (page.inert, page.text) {
        (Some(Inert::Image(_)), _) => view! { <img class="preview" src=inline alt=f.path.clone()/> }.into_any(),
        (Some(Inert::Audio(_)), _) => view! { <audio controls src=inline></audio> }.into_any(),
        (Some(Inert::Video(_)), _) => view! { <video class="preview" controls src=inline></video> }.into_any(),
        (Some(Inert::Text), Some(text)) => view! { <pre class="code">{text}</pre> }.into_any(),
        _ => view! { <p class="hint">"This type is not shown here (it could run as a page on the dashboard's origin): download it."</p> }.into_any(),
    };
    crate::document(
        view! {
            <Shell meta>
                <h1>{f.path.clone()}</h1>
                <p class="hint">
                    "In the workspace of "<a href=format!("/agents/{agent}#workspace")>{page.agent.name.clone()}</a>
                    {format!(" · {} · modified {}", human_bytes(f.bytes), short_time(&f.modified))}
                </p>
                <section class="card">{preview}</section>
                <p><a href=file_url(&agent, &f.path, true) download="">"Download"</a></p>
            </Shell>
        }
        .to_html(),
    )
}

/// A failed turn, where it failed: the unanswered message's answer is this error (or the
/// note that a restart or crash cut the turn off).
fn failure_view(f: Failure) -> AnyView {
    // What auto-recall sent the model before the message, folded.
    if f.kind == "Recalled" {
        let recalled = f.message.strip_prefix(kennel_kernel::memory::semantic::RECALL_HEADER).unwrap_or(&f.message);
        return view! {
            <details class="msg recall">
                <summary>"Recalled from long-term memory"</summary>
                <pre>{recalled.trim().to_string()}</pre>
            </details>
        }
        .into_any();
    }
    // Notes the kernel keeps with turns: a cut-off turn, a move to a fallback model, a move
    // to another daemon of the cluster.
    let what = match f.kind.as_str() {
        "Interrupted" => "Interrupted",
        "Fallback" => "Fallback",
        "Moved" => "Moved to another daemon",
        _ => "Failed",
    };
    view! {
        <div class="msg failed" role="note">
            <span class="who">{format!("{what} · {}", short_time(&f.created_at))}</span>
            <p>{f.message}</p>
        </div>
    }
    .into_any()
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

/// After which message a compaction is marked: the last one it summarised or stubbed.
fn compaction_place(c: &Compaction) -> i64 {
    c.summary_through.max(c.stubbed_through)
}

/// The marker where the session was compacted to fit the model's context window; the
/// stored messages above it are all still here, the model was sent the summary instead.
fn compaction_view(c: Compaction) -> AnyView {
    let what = match (c.summarised, c.stubbed) {
        (0, n) => format!("{n} older tool results sent as stubs"),
        (s, 0) => format!("the {s} messages above sent as a summary"),
        (s, n) => format!("the {s} messages above sent as a summary, {n} tool results as stubs"),
    };
    let summary = c
        .summary
        .map(|text| view! { <details><summary>"The summary the model was sent"</summary><p>{text}</p></details> });
    view! {
        <div class="msg compacted" role="note">
            <span class="who">{format!("Compacted to fit the context window · {}", short_time(&c.created_at))}</span>
            <p>{what}</p>
            {summary}
        </div>
    }
    .into_any()
}

fn message_view(agent: &str, origin: &Origin, m: StoredMessage) -> AnyView {
    match m.message {
        Message::User { content } if origin.is_operator() => {
            view! { <div class="msg user"><span class="who">"You"</span><p>{content}</p></div> }.into_any()
        }
        Message::User { content } => {
            view! { <div class="msg system"><span class="who">{origin_names(origin).1}</span><p>{content}</p></div> }
                .into_any()
        }
        Message::Assistant { content, tool_calls } => {
            let calls = tool_calls
                .into_iter()
                .map(|c| view! { <div class="call"><code>{c.name}</code>" "<code class="args">{c.arguments.to_string()}</code></div> })
                .collect::<Vec<_>>();
            let text = content.map(|t| view! { <p>{t}</p> });
            view! { <div class="msg assistant"><span class="who">"Agent"</span>{text}{calls}</div> }.into_any()
        }
        Message::Tool { name, content, is_error: false, .. } if name == "canvas_present" => {
            canvas_call_card(agent, &content)
        }
        Message::Tool { name, content, is_error: false, image: Some(image), .. } => {
            tool_image_card(agent, &name, content, image)
        }
        Message::Tool { name, content, is_error, .. } => {
            let class = if is_error { "msg tool bad" } else { "msg tool" };
            view! {
                <details class=class>
                    <summary>{format!("{name} result{}", if is_error { " (error)" } else { "" })}</summary>
                    <pre>{content}</pre>
                </details>
            }
            .into_any()
        }
    }
}

/// A tool result with an image in the chat: the image itself from the agent's workspace
/// (the file route serves only inert types inline; any other is a link to its file page),
/// then the result's text, folded.
fn tool_image_card(agent: &str, name: &str, content: String, image: ToolImage) -> AnyView {
    let shown = match Inert::of(&image.path) {
        Some(Inert::Image(_)) => {
            view! { <img class="preview" src=file_url(agent, &image.path, false) alt=image.path.clone()/> }.into_any()
        }
        _ => {
            let query = serde_urlencoded::to_string([("path", &image.path)]).unwrap_or_default();
            view! { <a href=format!("/agents/{agent}/files/view?{query}")>{image.path.clone()}</a> }.into_any()
        }
    };
    view! {
        <div class="msg tool tool-image">
            <span class="who">{format!("{name} image")}</span>
            {shown}
            <details>
                <summary>{format!("{name} result")}</summary>
                <pre>{content}</pre>
            </details>
        </div>
    }
    .into_any()
}

/// A `canvas_present` result in the chat: a card linking to the version it made.
fn canvas_call_card(agent: &str, result: &str) -> AnyView {
    let value: serde_json::Value = serde_json::from_str(result).unwrap_or_default();
    let version = value["version"].as_u64().unwrap_or_default();
    let title = value["title"].as_str().unwrap_or("Canvas").to_string();
    view! {
        <div class="msg tool canvas-call">
            <span class="who">"Canvas"</span>
            <a href=format!("/canvas/{agent}/{version}")>{format!("v{version} · {title}")}</a>
        </div>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool result's image path is the agent's text: it names the file in the image's
    /// address and `alt`, and never becomes markup.
    #[test]
    fn a_tool_results_image_is_shown_from_the_workspace_and_its_path_stays_text() {
        let hostile = r#"s/"><script>alert(1)</script><img src=x onerror=alert(2)>.png"#;
        let message = |path: &str| StoredMessage {
            seq: 1,
            message: Message::Tool {
                call_id: "c".into(),
                name: "shot<b>".into(),
                content: hostile.into(),
                is_error: false,
                image: Some(ToolImage { path: path.into(), media_type: "image/png".into() }),
            },
            created_at: "now".into(),
        };
        let html = message_view("a1", &Origin::Unlabelled, message(hostile)).to_html();
        assert!(!html.contains("<script") && !html.contains("<b>") && !html.contains("<img src=x"), "{html}");
        assert!(html.contains(r#"alt="s/&quot;&gt;&lt;script&gt;"#), "the path as the alt text: {html}");
        assert_eq!(html.matches("<img").count(), 1, "{html}");
        let src = format!("src=\"{}\"", file_url("a1", hostile, false).replace('&', "&amp;"));
        assert!(html.contains(&src), "{src} in {html}");
        assert!(html.contains("<details>"), "the text result, folded: {html}");

        let not_inert = message_view("a1", &Origin::Unlabelled, message("s/page.svg")).to_html();
        assert!(!not_inert.contains("<img"), "an SVG is linked, not shown: {not_inert}");
        assert!(not_inert.contains("/agents/a1/files/view?path=s%2Fpage.svg"), "{not_inert}");
    }
}
