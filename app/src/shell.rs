//! The frame every page shares: head, navigation, notices.

use leptos::prelude::*;

/// Which section of the navigation is current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Overview,
    Agents,
    AgentTypes,
    Tools,
    Tasks,
    Schedules,
    Canvases,
    Skills,
    Channels,
    Mcp,
    Inbox,
    Audit,
    Usage,
    Cluster,
    Settings,
    /// No section is current (sign-in pages, error pages).
    None,
}

/// A notice shown at the top of a page.
#[derive(Debug, Clone)]
pub enum Flash {
    Notice(String),
    Error(String),
}

/// What every page needs from the request: who is signed in and the form token.
#[derive(Debug, Clone)]
pub struct PageMeta {
    pub title: String,
    pub nav: Nav,
    pub operator: Option<String>,
    /// The signed-in session's CSRF token; every form carries it.
    pub csrf: String,
    pub flash: Option<Flash>,
    /// Notes in the owner inbox the operator has not read (shown on the Inbox link).
    pub unread: u64,
    /// Keep the page up to date (the task board, schedules, the overview): see [`Live`].
    pub live: Option<Live>,
}

/// A page that follows changes: when the server signals that one of `topics` changed
/// (`/live/changes`, server-sent events), `live.js` reads `url` again (the page as it is; its
/// one-time notice was read already) and swaps its `main` in place, never while a field in it has
/// focus. Without JS the page is reloaded by hand. (Not a meta refresh: a page that reloads
/// itself under a reader is an accessibility failure.)
#[derive(Debug, Clone)]
pub struct Live {
    pub topics: Vec<kennel_kernel::changes::Topic>,
    pub url: String,
}

impl Live {
    /// The stream the page listens to.
    pub fn stream(&self) -> String {
        let names: Vec<&str> = self.topics.iter().map(|t| t.as_str()).collect();
        format!("/live/changes?topics={}", names.join(","))
    }
}

/// The navigation, in order: a section's page, link and label. A new page family adds its
/// `Nav` variant and its line here.
const SECTIONS: &[(Nav, &str, &str)] = &[
    (Nav::Overview, "/", "Overview"),
    (Nav::Agents, "/agents", "Agents"),
    (Nav::AgentTypes, "/agent-types", "Agent types"),
    (Nav::Tools, "/tools", "Tools"),
    (Nav::Tasks, "/tasks", "Tasks"),
    (Nav::Schedules, "/schedules", "Schedules"),
    (Nav::Canvases, "/canvas", "Canvases"),
    (Nav::Skills, "/skills", "Skills"),
    (Nav::Channels, "/channels", "Channels"),
    (Nav::Mcp, "/mcp", "MCP"),
    (Nav::Inbox, "/inbox", "Inbox"),
    (Nav::Usage, "/usage", "Usage"),
    (Nav::Audit, "/audit", "Audit"),
    (Nav::Cluster, "/cluster", "Cluster"),
    (Nav::Settings, "/settings", "Settings"),
];

#[component]
pub fn Shell(meta: PageMeta, children: Children) -> impl IntoView {
    // Signed-in pages (an error page too) have the navigation; sign-in pages do not.
    let nav = meta.operator.is_some().then(|| {
        let links = SECTIONS
            .iter()
            .map(|(section, href, label)| {
                let current = if *section == meta.nav { "page" } else { "false" };
                // Always there (hidden at 0), so live.js can count it up as notes arrive.
                let unread = (*section == Nav::Inbox).then(|| {
                    let count = format!("{} unread", meta.unread);
                    view! { " " <span class="badge" id="unread-count" aria-label=count hidden=meta.unread == 0>{meta.unread}</span> }
                });
                view! { <a href=*href aria-current=current>{*label}{unread}</a> }
            })
            .collect::<Vec<_>>();
        let operator = meta.operator.clone().unwrap_or_default();
        let csrf = meta.csrf.clone();
        // On a phone the sections fold behind a Menu button (a checkbox and its label: no JS).
        view! {
            <input type="checkbox" id="nav-toggle" class="nav-toggle" aria-controls="sections"/>
            <label for="nav-toggle" class="nav-button">"Menu"</label>
            <nav class="sections" id="sections" aria-label="Sections">{links}</nav>
            <form class="signout" method="post" action="/logout">
                <input type="hidden" name="csrf" value=csrf/>
                <span class="who">{operator}</span>
                <button type="submit" class="link">"Sign out"</button>
            </form>
        }
    });
    let flash = meta.flash.map(|f| match f {
        Flash::Notice(text) => {
            view! { <p class="flash notice" role="status">{crate::widgets::rich_text(&text)}</p> }.into_any()
        }
        Flash::Error(text) => {
            view! { <p class="flash error" role="alert">{crate::widgets::rich_text(&text)}</p> }.into_any()
        }
    });
    view! {
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <title>{format!("{} · Kennel", meta.title)}</title>
                <link rel="stylesheet" href="/style/kennel.css"/>
                <script src="/public/live.js" defer></script>
            </head>
            <body>
                <header class="top">
                    <a class="brand" href="/">"Kennel"</a>
                    {nav}
                </header>
                <main data-live=meta.live.as_ref().map(Live::stream) data-live-url=meta.live.map(|l| l.url)>
                    {flash}
                    {children()}
                </main>
            </body>
        </html>
    }
}
