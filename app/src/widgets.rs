//! Small pieces several pages use.
//!
//! # Design notes
//!
//! - **Escaping (what tachys leaves raw):** Leptos 0.8 renders through tachys, which escapes
//!   text children (`&`, `<`, `>`) and attribute values (also `"`) everywhere **except** the
//!   children of `<textarea>`, `<script>`, `<style>` and `<noscript>` (`ESCAPE_CHILDREN = false`
//!   in tachys's element table, `tachys/src/html/element/elements.rs`), and `inner_html`, which
//!   it never escapes. `<title>`, `<pre>`, `<option>` and every other element are escaped. So
//!   stored text inside a plain `<textarea>` could close it and inject a script (issue 10 §1).
//!   **Rule:** pages never open those elements; text areas are `widgets::TextArea`, which escapes
//!   its text itself (and puts a newline first, which the parser drops, so text that starts with
//!   one keeps it). A unit test in `widgets.rs` fails if any file of `app/src` outside `widgets.rs`
//!   writes `<textarea`, `<script`, `<style`, `<noscript` or `inner_html` (the shell's one
//!   `<script src="/public/live.js">` aside); data for `live.js` travels in escaped `data-`
//!   attributes, never in inline JSON. URLs in `href`/`action` are built from ids and validated
//!   names (lowercase letters, digits, `-`, `_`), never from free text. The one `inner_html`
//!   is `Markdown`'s, of what `markdown::to_html` wrote (raw HTML in the text comes out as
//!   text; links are checked there).

use std::collections::HashMap;
use std::sync::Arc;

use kennel_kernel::agent::Agent;
use kennel_kernel::error::FieldError;
use kennel_kernel::tool::audit::AuditRecord;
use leptos::prelude::*;
use serde_json::Value;

/// A view rendered to its HTML at once, as one type: what a branch, or a list of views of
/// different types, is made of. `into_any()` would erase the type too, but `AnyView` keeps,
/// for every type it erases, the code to stream it, hydrate it and update it once mounted:
/// 1.4 MB of a binary whose pages are rendered once, on the server, as a whole (docs/
/// BENCHMARKS.md, "Views rendered at once"). It holds only what tachys rendered, so escaped.
pub type Rendered = leptos::tachys::html::InertElement;

/// Renders a view to [`Rendered`].
pub trait IntoRendered: leptos::tachys::view::RenderHtml + Sized {
    fn rendered(self) -> Rendered {
        Rendered::new(self.to_html())
    }
}

impl<T: leptos::tachys::view::RenderHtml> IntoRendered for T {}

/// A `<textarea>` whose text is always escaped; pages use this, never `<textarea>` itself.
///
/// Why: tachys (Leptos 0.8's renderer) writes the children of `textarea`, `script`, `style`
/// and `noscript` unescaped (`ESCAPE_CHILDREN = false` in its element table), so stored text
/// placed inside a plain `<textarea>` could close the element and add markup. The text is
/// escaped here, and a newline goes first because an HTML parser drops one newline right
/// after `<textarea>`: text that starts with a newline keeps it.
#[component]
pub fn TextArea(
    #[prop(into)] name: String,
    rows: u32,
    /// The text inside: escaped whatever it holds.
    #[prop(into, optional)]
    value: String,
    #[prop(optional)] class: Option<&'static str>,
    #[prop(optional)] required: bool,
    #[prop(optional, into)] placeholder: Option<String>,
    #[prop(optional)] spellcheck: Option<&'static str>,
    /// Its accessible name, when no `<label>` wraps it.
    #[prop(optional)]
    label: Option<&'static str>,
) -> impl IntoView {
    view! {
        <textarea name=name rows=rows class=class required=required placeholder=placeholder spellcheck=spellcheck aria-label=label>{textarea_text(&value)}</textarea>
    }
}

/// What goes between `<textarea>` and `</textarea>` for `value`: escaped (tachys will not).
fn textarea_text(value: &str) -> String {
    format!("\n{}", html_escape::encode_text(value))
}

/// Text written in Markdown (a reply, a skill's body, a task's result, a note), rendered.
/// The one component that inserts HTML: `markdown::to_html` writes no markup it did not make.
#[component]
pub fn Markdown(#[prop(into)] text: String, #[prop(optional)] id: Option<&'static str>) -> impl IntoView {
    view! { <div class="md" id=id inner_html=crate::markdown::to_html(&text)></div> }
}

/// A form field's list: items separated by commas or lines, trimmed, blanks dropped.
pub fn form_list(text: &str) -> Vec<String> {
    text.split([',', '\n']).map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// The hidden CSRF field every form carries.
#[component]
pub fn Csrf(token: String) -> impl IntoView {
    view! { <input type="hidden" name="csrf" value=token/> }
}

/// The message for `field` among `errors`, shown under its input.
pub fn field_error(errors: &[FieldError], field: &str) -> Option<impl IntoView + use<>> {
    let messages: Vec<String> = errors
        .iter()
        .filter(|e| {
            e.field == field || e.field.starts_with(&format!("{field}[")) || e.field.starts_with(&format!("{field}."))
        })
        .map(|e| if e.field == field { e.message.clone() } else { format!("{}: {}", e.field, e.message) })
        .collect();
    (!messages.is_empty()).then(|| {
        let id = format!("{}-error", field.replace('.', "-"));
        view! { <p class="field-error" id=id>{rich_text(&messages.join("; "))}</p> }
    })
}

/// One row of a tool's argument table.
pub struct ArgRow {
    pub name: String,
    pub kind: String,
    pub required: bool,
    pub description: String,
}

/// The arguments of a tool as rows, read from its JSON Schema.
pub fn argument_rows(schema: &Value) -> Vec<ArgRow> {
    let required: Vec<&str> =
        schema["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let Some(props) = schema["properties"].as_object() else { return Vec::new() };
    props
        .iter()
        .map(|(name, prop)| ArgRow {
            name: name.clone(),
            kind: type_label(prop),
            required: required.contains(&name.as_str()),
            description: prop["description"].as_str().unwrap_or_default().to_string(),
        })
        .collect()
}

fn type_label(prop: &Value) -> String {
    // `true` and `{}` are schemas that accept anything.
    if prop == &Value::Bool(true) || prop.as_object().is_some_and(|o| o.is_empty()) {
        return "any".into();
    }
    match &prop["type"] {
        Value::String(t) if t == "array" => format!("array of {}", type_label(&prop["items"])),
        Value::String(t) => t.clone(),
        Value::Array(types) => {
            types.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect::<Vec<_>>().join(" | ")
        }
        _ => "object".into(),
    }
}

/// Agent names by id, to show names where records hold ids.
pub fn agent_names(agents: &[Arc<Agent>]) -> HashMap<String, String> {
    agents.iter().map(|a| (a.id.to_string(), a.name.clone())).collect()
}

/// Tool calls from the audit log as a table (the overview's recent calls and `/audit`).
pub fn audit_table(records: Vec<AuditRecord>, agents: &[Arc<Agent>]) -> impl IntoView + use<> {
    let names = agent_names(agents);
    let rows = records
        .into_iter()
        .map(|r| {
            let agent = names.get(&r.agent_id).cloned().unwrap_or_else(|| r.agent_id.clone());
            let class = if r.outcome == "ok" { "ok" } else { "bad" };
            // A call made in a turn links to the chat it was made in.
            let when = match &r.session_id {
                Some(session) => {
                    let chat = format!("/agents/{}?session={session}", r.agent_id);
                    view! { <a href=chat title="The chat this call was made in">{short_time(&r.at)}</a> }.rendered()
                }
                None => short_time(&r.at).rendered(),
            };
            view! {
                <tr>
                    <td>{when}</td>
                    <td><a href=format!("/agents/{}", r.agent_id)>{agent}</a></td>
                    <td>{r.tool}</td>
                    <td class=class>{r.outcome}</td>
                    <td>{r.message.unwrap_or_default()}</td>
                    <td class="num">{format!("{:.2} ms", r.duration_us as f64 / 1000.0)}</td>
                    <td>{r.caller}</td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    view! {
        <div class="scroll">
            <table>
                <thead><tr><th>"When"</th><th>"Agent"</th><th>"Tool"</th><th>"Outcome"</th><th>"Message"</th><th>"Took"</th><th>"Caller"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
}

/// Where a paged list stands: how many of how many, and the link to the next page (its
/// filters kept) when there is one.
#[derive(Debug, Clone, Default)]
pub struct Paging {
    pub total: u64,
    pub next: Option<String>,
}

/// `20 of 130 · Next page →` under a paged list; nothing when the list is shown whole ("1 of
/// 1" and "0 of 0" say nothing a person needs).
#[component]
pub fn Pager(shown: usize, paging: Paging) -> impl IntoView {
    let whole = paging.next.is_none() && shown as u64 >= paging.total;
    let next = paging.next.map(|href| view! { " · " <a href=href rel="next">"Next page →"</a> });
    (!whole).then(|| view! { <p class="pager hint">{format!("{shown} of {}", paging.total)}{next}</p> })
}

/// An agent as lists of agents to choose from show it: a running agent by its name, a
/// stopped one with its status and short id (its name may be a running agent's now).
pub fn agent_label(a: &Agent) -> String {
    if a.is_running() {
        a.name.clone()
    } else {
        format!("{} (stopped · {})", a.name, kennel_kernel::text::short_id(&a.id.to_string()))
    }
}

/// How the session list names a session's origin, and who its user messages are from
/// ("You" only in an operator's own sessions). The origin itself is the kernel's.
pub fn origin_names(origin: &kennel_kernel::session::Origin) -> (String, String) {
    use kennel_kernel::session::Origin;
    match origin {
        Origin::Unlabelled => ("Operator or API".into(), "You".into()),
        Origin::Operator(op) => (format!("Operator {op}"), "You".into()),
        Origin::Terminal => ("Terminal (kennel chat)".into(), "You".into()),
        Origin::Task(task) => (format!("Task {task} wake-up"), "Task board".into()),
        Origin::Schedule(s) => (format!("Schedule {s}"), "Schedule".into()),
        Origin::Trigger(e) => (format!("Trigger {e}"), "Event".into()),
        Origin::Agent(a) => (format!("From agent {a}"), format!("Agent {a}")),
        Origin::A2a { owner, context } => (format!("A2A {context} ({owner})"), "A2A client".into()),
        Origin::Channel { channel, chat } => (format!("{channel} · {chat}"), "Channel conversation".into()),
        Origin::Key(key) => (format!("API session {key}"), "API client".into()),
        Origin::Other(label) => (label.clone(), "Sender".into()),
    }
}

/// Text whose `backtick` spans (names and values in kernel messages) are shown as code, not
/// as literal backticks. Everything stays text: the spans are only split, never parsed.
pub fn rich_text(text: &str) -> Vec<Rendered> {
    let parts: Vec<&str> = text.split('`').collect();
    if parts.len().is_multiple_of(2) {
        return vec![text.to_string().rendered()]; // an unpaired backtick: as it is
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 { view! { <code>{part.to_string()}</code> }.rendered() } else { part.to_string().rendered() }
        })
        .collect()
}

/// What a filtered list with nothing in it says: that the filters hid everything, and the way
/// back to the whole list.
#[component]
pub fn NoMatches(what: &'static str, clear: &'static str) -> impl IntoView {
    view! { <p class="empty" id="no-matches">{format!("No {what} matches these filters. ")}<a href=clear>"Clear filters"</a></p> }
}

/// A size for people: `812 B`, `14.2 KiB`, `3.0 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut size = bytes as f64 / 1024.0;
    let mut unit = 0;
    while size >= 1024.0 && unit + 1 < UNITS.len() {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1} {}", UNITS[unit])
}

/// An agent's canvas version in its sandbox: scripts run, but in an origin of their own (no
/// `allow-same-origin`), with no forms, popups or top-level navigation. The frame's route
/// adds a sandboxing CSP of its own, so the HTML is contained even when opened directly.
#[component]
pub fn CanvasFrame(canvas: kennel_kernel::canvas::Canvas) -> impl IntoView {
    view! {
        <iframe class="canvas" sandbox="allow-scripts" referrerpolicy="no-referrer" src=canvas.frame_path()
            title=format!("Canvas v{}: {}", canvas.version, canvas.title) data-version=canvas.version.to_string()></iframe>
    }
}

/// When a schedule fires, in words for a cron job with its expression and zone beside them
/// ("At 09:00, on Monday. `0 9 * * 1` Europe/Berlin"); a one-shot one's time in UTC.
pub fn schedule_when(s: &kennel_kernel::schedule::Schedule) -> Rendered {
    match s.in_words() {
        Some(words) => {
            let zone = s.timezone.clone().unwrap_or_else(|| "UTC".into());
            let expression = s.expression.clone().unwrap_or_default();
            view! { {words}" "<span class="hint"><code>{expression}</code>" "{zone}</span> }.rendered()
        }
        None => match s.run_at.as_deref() {
            Some(at) => format!("once at {} UTC", short_time(at)).rendered(),
            None => s.timing().rendered(),
        },
    }
}

/// A timestamp as a person reads it: `2026-11-30 14:02:11`.
pub fn short_time(rfc3339: &str) -> String {
    rfc3339.get(..19).map(|s| s.replace('T', " ")).unwrap_or_else(|| rfc3339.to_string())
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    #[test]
    fn hostile_text_in_a_text_area_stays_text() {
        let hostile = "</textarea><script>alert(1)</script> &lt;b&gt; & </TEXTAREA >";
        let html = view! { <TextArea name="x" rows=2 value=hostile/> }.to_html();
        assert_eq!(
            html,
            "<textarea name=\"x\" rows=\"2\" class=\"\">\n&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt; \
             &amp;lt;b&amp;gt; &amp; &lt;/TEXTAREA &gt;</textarea>"
        );
        let empty = view! { <TextArea name="m" rows=3 required=true placeholder="Say"/> }.to_html();
        assert_eq!(empty, "<textarea name=\"m\" rows=\"3\" required placeholder=\"Say\" class=\"\">\n</textarea>");
    }

    fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("app/src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                rust_files(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }

    /// tachys writes the children of these elements unescaped. Outside this file (where
    /// `TextArea` escapes) no component may open one, except the shell's script, which has a
    /// `src` and no children. `inner_html` skips escaping too, and so does an `InertElement`
    /// made from a string (`Rendered` holds only what tachys rendered: `IntoRendered`).
    #[test]
    fn no_page_writes_an_element_whose_text_tachys_leaves_raw() {
        let mut files = Vec::new();
        rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
        assert!(files.len() > 10, "found the pages: {files:?}");
        for file in files.iter().filter(|f| !f.ends_with("widgets.rs")) {
            let source = std::fs::read_to_string(file).expect("a source file");
            // Tests (at the end of a file) may hold hostile strings.
            let source = source.split("#[cfg(test)]").next().unwrap_or_default();
            let source = source.replace(r#"<script src="/public/live.js" defer></script>"#, "");
            for raw in ["<textarea", "<script", "<style", "<noscript", "inner_html", "InertElement", "Rendered::new"] {
                assert!(!source.contains(raw), "{} writes `{raw}`: use widgets::TextArea", file.display());
            }
        }
    }

    #[test]
    fn argument_rows_read_types_requirement_and_descriptions() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words"},
                "limit": {"type": ["integer", "null"]},
                "names": {"type": "array", "items": {"type": "string"}},
                "args": {},
                "anything": true
            },
            "required": ["query"]
        });
        let rows = argument_rows(&schema);
        let by = |n: &str| rows.iter().find(|r| r.name == n).unwrap();
        assert!(by("query").required && by("query").description == "Words");
        assert_eq!(by("limit").kind, "integer");
        assert!(!by("limit").required);
        assert_eq!(by("names").kind, "array of string");
        assert_eq!(by("args").kind, "any");
        assert_eq!(by("anything").kind, "any");
    }
}

/// One bar of a [`BarChart`]: its label, its length (any unit, the chart scales), and what
/// is written beside it.
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub caption: String,
}

/// A horizontal bar chart as server-rendered SVG: readable without script, labels and
/// captions as SVG text (escaped like any text), an accessible name, and the same numbers in a
/// table under it for screen readers and copying.
#[component]
pub fn BarChart(
    /// The chart's name (`aria-label`) and the table's caption.
    title: String,
    bars: Vec<Bar>,
    /// The table's column heading for the captions.
    unit: &'static str,
) -> impl IntoView {
    const ROW: f64 = 22.0;
    const LABEL: f64 = 170.0;
    const LENGTH: f64 = 330.0;
    let most = bars.iter().map(|b| b.value).fold(0.0_f64, f64::max);
    let height = (bars.len().max(1) as f64 * ROW) + 4.0;
    let rows = bars
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let y = i as f64 * ROW + 2.0;
            let width = if most > 0.0 { (b.value / most * LENGTH).max(1.0) } else { 1.0 };
            let label: String = b.label.chars().take(24).collect();
            view! {
                <g>
                    <text x=format!("{:.0}", LABEL - 6.0) y=format!("{:.1}", y + 15.0) text-anchor="end" class="chart-label">{label}</text>
                    <rect x=format!("{LABEL:.0}") y=format!("{:.1}", y + 3.0) width=format!("{width:.1}") height="16" rx="2" class="chart-bar"></rect>
                    <text x=format!("{:.1}", LABEL + width + 6.0) y=format!("{:.1}", y + 15.0) class="chart-caption">{b.caption.clone()}</text>
                </g>
            }
        })
        .collect::<Vec<_>>();
    let table = bars.into_iter().map(|b| view! { <tr><td>{b.label}</td><td>{b.caption}</td></tr> }).collect::<Vec<_>>();
    let empty = rows.is_empty();
    view! {
        <figure class="chart">
            <svg viewBox=format!("0 0 780 {height:.0}") role="img" aria-label=title.clone() class="chart-svg">{rows}</svg>
            {empty.then(|| view! { <p class="empty">"Nothing yet."</p> })}
            <details>
                <summary>"The numbers"</summary>
                <table>
                    <caption>{title}</caption>
                    <thead><tr><th>"What"</th><th>{unit}</th></tr></thead>
                    <tbody>{table}</tbody>
                </table>
            </details>
        </figure>
    }
}

pub use kennel_kernel::text::dollars;

/// Tokens with thousands separated (`1,234,567`).
pub fn tokens(n: u64) -> String {
    kennel_kernel::text::thousands(n)
}

/// How long the records a page lists are kept: `[retention] key` days (`0`: for ever).
pub fn kept_for(what: &str, key: &str, days: u64) -> impl IntoView + use<> {
    let text = match days {
        0 => format!("{what} are kept for ever ([retention] {key} = 0)."),
        1 => format!("{what} are kept for a day, then removed ([retention] {key})."),
        n => format!("{what} are kept for {n} days, then removed ([retention] {key})."),
    };
    view! { <p class="hint retention">{text}</p> }
}

/// A tool's standing for an agent in words: allowed by which grant, denied by which, not
/// granted, or excluded and why (the Tools inspector, the type editor's picker).
pub fn standing_label(status: &kennel_kernel::tool::ToolStatus) -> String {
    use kennel_kernel::tool::ToolStatus;
    match status {
        ToolStatus::Allowed { grant } => format!("allowed by {grant}"),
        ToolStatus::Denied { grant } => format!("denied by {grant}"),
        ToolStatus::NotGranted => "not granted".to_string(),
        ToolStatus::Excluded { layer, reason } => format!("excluded ({}): {reason}", layer.as_str()),
    }
}

/// The class a standing is shown in: `ok` when the tool may be called, `bad` when not.
pub fn standing_class(status: &kennel_kernel::tool::ToolStatus) -> &'static str {
    if status.is_allowed() { "ok" } else { "bad" }
}
