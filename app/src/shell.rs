//! The frame every page shares: head, navigation, notices.

use leptos::prelude::*;

use crate::widgets::{IntoRendered, Rendered};

/// A section of the navigation: where its link goes and what it says. Each page module that
/// has a section declares it (`pages::tasks::SECTION`); `pages::SECTIONS` lists them in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    pub path: &'static str,
    pub label: &'static str,
    /// Its link counts the operator's unread notes (the Inbox).
    pub counts_unread: bool,
}

impl Section {
    pub const fn new(path: &'static str, label: &'static str) -> Section {
        Section { path, label, counts_unread: false }
    }

    /// The section's link counts the operator's unread notes.
    pub const fn counting_unread(self) -> Section {
        Section { counts_unread: true, ..self }
    }
}

/// A notice shown at the top of a page.
#[derive(Debug, Clone)]
pub enum Flash {
    Notice(String),
    /// Done, with something the operator should look at.
    Warning(String),
    Error(String),
}

/// What every page needs from the request: who is signed in and the form token.
#[derive(Debug, Clone)]
pub struct PageMeta {
    pub title: String,
    /// Which section of the navigation is current: none on sign-in and error pages.
    pub nav: Option<Section>,
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

/// Every page: the head, the navigation, the notice, and the page's own view in `<main>`.
/// Generic over the page's view, which is rendered at once (`IntoRendered`): the shell's own
/// markup is built once for every page, and no page's view is type-erased (`AnyView`).
#[component]
pub fn Shell<T: IntoView + 'static>(meta: PageMeta, children: TypedChildren<T>) -> impl IntoView {
    frame(meta, children.into_inner()().rendered())
}

fn frame(meta: PageMeta, body: Rendered) -> impl IntoView {
    // Signed-in pages (an error page too) have the navigation; sign-in pages do not.
    let nav = meta.operator.is_some().then(|| {
        let links = crate::pages::SECTIONS
            .iter()
            .map(|section| {
                let current = if Some(*section) == meta.nav { "page" } else { "false" };
                // Always there (hidden at 0), so live.js can count it up as notes arrive.
                let unread = section.counts_unread.then(|| {
                    let count = format!("{} unread", meta.unread);
                    view! { " " <span class="badge" id="unread-count" aria-label=count hidden=meta.unread == 0>{meta.unread}</span> }
                });
                view! { <a href=section.path aria-current=current>{section.label}{unread}</a> }
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
            view! { <p class="flash notice" role="status">{crate::widgets::rich_text(&text)}</p> }.rendered()
        }
        Flash::Warning(text) => {
            view! { <p class="flash warning" role="status">{crate::widgets::rich_text(&text)}</p> }.rendered()
        }
        Flash::Error(text) => {
            view! { <p class="flash error" role="alert">{crate::widgets::rich_text(&text)}</p> }.rendered()
        }
    });
    view! {
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <title>{format!("{} · Kennel", meta.title)}</title>
                <link rel="stylesheet" href="/style/kennel.css"/>
                <link rel="icon" href="/public/favicon.svg" type="image/svg+xml"/>
                <script src="/public/live.js" defer></script>
            </head>
            <body>
                <header class="top">
                    <a class="brand" href="/">"Kennel"</a>
                    {nav}
                </header>
                <main data-live=meta.live.as_ref().map(Live::stream) data-live-url=meta.live.map(|l| l.url)>
                    {flash}
                    {body}
                </main>
            </body>
        </html>
    }
}
