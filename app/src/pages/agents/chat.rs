//! The chat on an agent's page: its messages, failed turns, recalls and compactions as
//! entries of the log, and the `ask_user` questions waiting for an answer.

use kennel_kernel::ask::Question;
use std::collections::{HashMap, HashSet};

use kennel_kernel::llm::{Message, ToolCall, ToolImage};
use kennel_kernel::session::{Compaction, Failure, Origin, StoredMessage};
use kennel_kernel::workspace::Inert;
use leptos::prelude::*;

use super::files::file_url;
use crate::widgets::{Csrf, IntoRendered, Markdown, Rendered, origin_names, short_time};

/// The `ask_user` questions waiting in the agent's chats, each answered by a choice's button
/// or in the person's own words. live.js builds the same form when a question arrives
/// during a turn. "Answer" comes first so Enter in the box sends what was typed.
pub(super) fn questions_view(agent: &str, csrf: &str, questions: Vec<Question>) -> impl IntoView + use<> {
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

/// A failed turn, where it failed: the unanswered message's answer is this error (or the
/// note that a restart or crash cut the turn off).
pub(super) fn failure_view(f: Failure) -> Rendered {
    // What auto-recall sent the model before the message, folded.
    if f.kind == "Recalled" {
        let recalled = f.message.strip_prefix(kennel_kernel::memory::semantic::RECALL_HEADER).unwrap_or(&f.message);
        return view! {
            <details class="msg recall">
                <summary>"Recalled from long-term memory"</summary>
                <pre>{recalled.trim().to_string()}</pre>
            </details>
        }
        .rendered();
    }
    // Notes the kernel keeps with turns: a cut-off turn, a move to a fallback model, a move
    // to another daemon of the cluster.
    let what = match f.kind.as_str() {
        "Interrupted" => "Interrupted",
        "Fallback" => "Fallback",
        "Moved" => "Moved to another daemon",
        "Cancelled" => "Cancelled",
        _ => "Failed",
    };
    view! {
        <div class="msg failed" role="note">
            <span class="who">{format!("{what} · {}", short_time(&f.created_at))}</span>
            <p>{f.message}</p>
        </div>
    }
    .rendered()
}

/// After which message a compaction is marked: the last one it summarised or stubbed.
pub(super) fn compaction_place(c: &Compaction) -> i64 {
    c.summary_through.max(c.stubbed_through)
}

/// The marker where the session was compacted to fit the model's context window; the
/// stored messages above it are all still here, the model was sent the summary instead.
pub(super) fn compaction_view(c: Compaction) -> Rendered {
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
    .rendered()
}

/// The results of tool calls on this page shown inside their call: each plain result (not a
/// canvas card or an image, which have cards of their own) whose call is on the page, by
/// the call's id. [`message_view`] shows them with the call and skips them after it.
pub(super) fn results_by_call(messages: &[StoredMessage]) -> HashMap<String, CallResult> {
    let calls: HashSet<&str> = messages
        .iter()
        .filter_map(|m| match &m.message {
            Message::Assistant { tool_calls, .. } => Some(tool_calls.iter().map(|c| c.id.as_str())),
            _ => None,
        })
        .flatten()
        .collect();
    messages
        .iter()
        .filter_map(|m| match &m.message {
            Message::Tool { call_id, name, content, is_error, image: None }
                if (*is_error || name != "canvas_present") && calls.contains(call_id.as_str()) =>
            {
                Some((call_id.clone(), CallResult { content: content.clone(), is_error: *is_error }))
            }
            _ => None,
        })
        .collect()
}

/// A tool call's result, shown with it.
pub(super) struct CallResult {
    content: String,
    is_error: bool,
}

/// A tool call with its result when it has one: folded, the tool's name, a short look at its
/// arguments and the outcome in the summary; the arguments and the result, formatted as
/// "try it" shows them, inside (a canvas's whole HTML is not dumped into the chat).
fn call_view(call: ToolCall, result: Option<&CallResult>) -> Rendered {
    let compact = call.arguments.to_string();
    let preview = kennel_kernel::text::shorten(&compact, CALL_PREVIEW_CHARS);
    let (outcome, class) = match result {
        Some(CallResult { is_error: true, .. }) => ("error", "outcome bad"),
        Some(_) => ("ok", "outcome"),
        None => ("", "outcome"),
    };
    let result = result.map(|r| {
        let what = if r.is_error { "Error" } else { "Result" };
        view! { <p class="hint">{what}</p><pre>{pretty(&r.content)}</pre> }
    });
    view! {
        <details class="call">
            <summary><code>{call.name}</code>" "<code class="args">{preview}</code>" "<span class=class>{outcome}</span></summary>
            <p class="hint">"Arguments"</p>
            <pre>{serde_json::to_string_pretty(&call.arguments).unwrap_or(compact)}</pre>
            {result}
        </details>
    }
    .rendered()
}

/// How much of a call's arguments its folded line shows.
const CALL_PREVIEW_CHARS: usize = 80;

/// A tool's result as "try it" shows it: JSON indented, any other text as it is.
fn pretty(content: &str) -> String {
    serde_json::from_str::<serde_json::Value>(content)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| content.to_string())
}

pub(super) fn message_view(
    agent: &str,
    origin: &Origin,
    results: &HashMap<String, CallResult>,
    m: StoredMessage,
) -> Option<Rendered> {
    Some(match m.message {
        // Shown inside its call.
        Message::Tool { call_id, .. } if results.contains_key(&call_id) => return None,
        Message::User { content } if origin.is_operator() => {
            view! { <div class="msg user"><span class="who">"You"</span><p>{content}</p></div> }.rendered()
        }
        Message::User { content } => {
            view! { <div class="msg system"><span class="who">{origin_names(origin).1}</span><p>{content}</p></div> }
                .rendered()
        }
        Message::Assistant { content, tool_calls } => {
            let calls = tool_calls
                .into_iter()
                .map(|c| {
                    let result = results.get(&c.id);
                    call_view(c, result)
                })
                .collect::<Vec<_>>();
            let text = content.map(|t| view! { <Markdown text=t/> });
            view! { <div class="msg assistant"><span class="who">"Agent"</span>{text}{calls}</div> }.rendered()
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
                    <pre>{pretty(&content)}</pre>
                </details>
            }
            .rendered()
        }
    })
}

/// A tool result with an image in the chat: the image itself from the agent's workspace
/// (the file route serves only inert types inline; any other is a link to its file page),
/// then the result's text, folded.
fn tool_image_card(agent: &str, name: &str, content: String, image: ToolImage) -> Rendered {
    let shown = match Inert::of(&image.path) {
        Some(Inert::Image(_)) => {
            view! { <img class="preview" src=file_url(agent, &image.path, false) alt=image.path.clone()/> }.rendered()
        }
        _ => {
            let query = serde_urlencoded::to_string([("path", &image.path)]).unwrap_or_default();
            view! { <a href=format!("/agents/{agent}/files/view?{query}")>{image.path.clone()}</a> }.rendered()
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
    .rendered()
}

/// A `canvas_present` result in the chat: a card linking to the version it made.
fn canvas_call_card(agent: &str, result: &str) -> Rendered {
    let value: serde_json::Value = serde_json::from_str(result).unwrap_or_default();
    let version = value["version"].as_u64().unwrap_or_default();
    let title = value["title"].as_str().unwrap_or("Canvas").to_string();
    view! {
        <div class="msg tool canvas-call">
            <span class="who">"Canvas"</span>
            <a href=format!("/canvas/{agent}/{version}")>{format!("v{version} · {title}")}</a>
        </div>
    }
    .rendered()
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
        let no_calls = HashMap::new();
        let html = message_view("a1", &Origin::Unlabelled, &no_calls, message(hostile)).expect("shown").to_html();
        assert!(!html.contains("<script") && !html.contains("<b>") && !html.contains("<img src=x"), "{html}");
        assert!(html.contains(r#"alt="s/&quot;&gt;&lt;script&gt;"#), "the path as the alt text: {html}");
        assert_eq!(html.matches("<img").count(), 1, "{html}");
        let src = format!("src=\"{}\"", file_url("a1", hostile, false).replace('&', "&amp;"));
        assert!(html.contains(&src), "{src} in {html}");
        assert!(html.contains("<details>"), "the text result, folded: {html}");

        let not_inert =
            message_view("a1", &Origin::Unlabelled, &no_calls, message("s/page.svg")).expect("shown").to_html();
        assert!(!not_inert.contains("<img"), "an SVG is linked, not shown: {not_inert}");
        assert!(not_inert.contains("/agents/a1/files/view?path=s%2Fpage.svg"), "{not_inert}");
    }
}
