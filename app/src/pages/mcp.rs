//! `/mcp`: every MCP server of `[mcp]` — its state and why, the tools it offers under the
//! names the model sees (with the server's own names), tools left out, recent errors and a
//! stdio server's last stderr lines — with a Reconnect button each. Tool names, descriptions,
//! errors and stderr come from the servers: all of it is shown as text.

use kennel_kernel::mcp::ServerView;
use leptos::prelude::*;

use crate::shell::{PageMeta, Section, Shell};
use crate::widgets::{Csrf, IntoRendered, short_time};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/mcp", "MCP");

pub fn render(meta: PageMeta, servers: Vec<ServerView>) -> String {
    let csrf = meta.csrf.clone();
    let body = if servers.is_empty() {
        view! {
            <section class="card" id="mcp-servers">
                <p class="empty">"No MCP servers configured."</p>
                <p class="hint">"Add an "<code>"[mcp.servers.NAME]"</code>" section to config.toml (command = a stdio server, or url = a streamable-HTTP one), then run "<code>"kennel reload"</code>". Grant agents its tools as "<code>"mcp__NAME__*"</code>"."</p>
            </section>
        }
        .rendered()
    } else {
        let cards = servers.into_iter().map(|s| server_card(s, csrf.clone())).collect::<Vec<_>>();
        view! { <div id="mcp-servers">{cards}</div> }.rendered()
    };
    crate::document(
        view! {
            <Shell meta>
                <h1>"MCP servers"</h1>
                {body}
            </Shell>
        }
        .to_html(),
    )
}

/// Server names are `[a-z0-9_-]` (checked when the config loads), so one goes into a path as
/// it is.
fn server_card(s: ServerView, csrf: String) -> impl IntoView + use<> {
    let action = format!("/mcp/{}/reconnect", s.name);
    let label = format!("Reconnect {}", s.name);
    let state = s.state_in_words();
    let info = format!(
        "{} · {}{} · {} connection{}",
        s.transport,
        s.target,
        s.server_info.as_ref().map(|i| format!(" · {i}")).unwrap_or_default(),
        s.connections,
        if s.connections == 1 { "" } else { "s" }
    );
    let tools = (!s.tools.is_empty()).then(|| {
        let rows = s
            .tools
            .iter()
            .map(|t| {
                // The server's own name, always: a renamed tool says so.
                let renamed = t.renamed.then_some(" (renamed: the model sees another name)");
                view! {
                    <tr>
                        <td><code>{t.name.clone()}</code></td>
                        <td><code>{t.original_name.clone()}</code>{renamed}</td>
                        <td>{t.description.clone()}</td>
                    </tr>
                }
            })
            .collect::<Vec<_>>();
        view! {
            <table class="mcp-tools">
                <thead><tr><th>"Tool"</th><th>"Server's name"</th><th>"Description"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
    });
    let left_out = (!s.left_out.is_empty()).then(|| {
        let items = s.left_out.iter().map(|l| view! { <li>{l.clone()}</li> }).collect::<Vec<_>>();
        view! { <h3>"Left out"</h3><ul class="mcp-left-out">{items}</ul> }
    });
    let errors = (!s.errors.is_empty()).then(|| {
        let rows = s
            .errors
            .iter()
            .rev()
            .map(|e| view! { <tr><td>{short_time(&e.at)}</td><td>{e.message.clone()}</td></tr> })
            .collect::<Vec<_>>();
        view! {
            <h3>"Recent errors"</h3>
            <table class="mcp-errors"><thead><tr><th>"When"</th><th>"Error"</th></tr></thead><tbody>{rows}</tbody></table>
        }
    });
    let stderr = (!s.stderr.is_empty()).then(|| {
        let text = s.stderr.join("\n");
        view! { <h3>"Last lines on stderr"</h3><pre class="mcp-stderr">{text}</pre> }
    });
    let extras = match (s.offers_resources, s.offers_prompts) {
        (true, true) => "Offers resources (mcp_resources) and prompts (mcp_prompts).",
        (true, false) => "Offers resources (mcp_resources).",
        (false, true) => "Offers prompts (mcp_prompts).",
        (false, false) => "",
    };
    view! {
        <section class="card mcp-server" id=format!("mcp-{}", s.name)>
            <h2>{s.name.clone()}</h2>
            <p class="mcp-state" data-state=s.state.as_str()>{state}</p>
            <p class="hint">{info}</p>
            <p class="hint">{extras}</p>
            <form method="post" action=action class="inline">
                <Csrf token=csrf/>
                <button type="submit" aria-label=label>"Reconnect"</button>
            </form>
            {tools}
            {left_out}
            {errors}
            {stderr}
        </section>
    }
}
