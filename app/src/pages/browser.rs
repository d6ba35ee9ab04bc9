//! `/agents/{id}/browser`: the tabs an agent has open in the browser — address, title, when it
//! last used each, and the last screenshot taken there. Titles and addresses come from the
//! pages the agent opened: untrusted text, shown as text.

use kennel_kernel::browser::TabView;
use leptos::prelude::*;

use crate::shell::{PageMeta, Shell};
use crate::widgets::{IntoRendered, short_time};

pub struct BrowserPage {
    pub agent_id: String,
    pub agent_name: String,
    /// `false` when `[browser]` is not configured: the page says how to turn it on.
    pub configured: bool,
    pub tabs: Vec<TabView>,
    /// Pages the agent's pages opened by themselves (popups), each closed at once.
    pub popups_closed: u64,
}

pub fn render(meta: PageMeta, page: BrowserPage) -> String {
    let id = page.agent_id;
    let body = if !page.configured {
        view! {
            <section class="card" id="browser-off">
                <p class="empty">"The browser is not configured on this daemon."</p>
                <p class="hint">"Add a "<code>"[browser]"</code>" section to config.toml (and install Chromium) to give agents granted "<code>"browser.*"</code>" a browser."</p>
            </section>
        }
        .rendered()
    } else if page.tabs.is_empty() {
        view! {
            <section class="card" id="browser-tabs">
                <p class="empty">"No open tabs."</p>
                <p class="hint">"Tabs open with "<code>"browser_navigate"</code>" and close with "<code>"browser_close"</code>", when idle, or when the agent stops."</p>
            </section>
        }
        .rendered()
    } else {
        let tabs = page.tabs.into_iter().map(|t| tab_card(&id, t)).collect::<Vec<_>>();
        view! { <section id="browser-tabs" class="tabs">{tabs}</section> }.rendered()
    };
    crate::document(
        view! {
            <Shell meta>
                <h1>"Browser tabs of "<a href=format!("/agents/{id}")>{page.agent_name}</a></h1>
                {body}
                {(page.popups_closed > 0).then(|| view! {
                    <p class="hint" id="popups-closed">{format!("{} popup(s) its pages opened were closed at once: an agent's pages are the tabs its tools open, within [browser] tabs_per_agent.", page.popups_closed)}</p>
                })}
            </Shell>
        }
        .to_html(),
    )
}

fn tab_card(agent: &str, tab: TabView) -> impl IntoView + use<> {
    let heading = format!("Tab {}{}", tab.tab, if tab.active { " (active)" } else { "" });
    let title = if tab.title.is_empty() { "(no title)".to_string() } else { tab.title };
    let shot = tab.last_screenshot.map(|path| {
        let href =
            format!("/agents/{agent}/files/raw?{}", serde_urlencoded::to_string([("path", &path)]).unwrap_or_default());
        let src = href.clone();
        view! {
            <a href=href><img class="screenshot" src=src alt=format!("Last screenshot: {path}") loading="lazy"/></a>
        }
    });
    view! {
        <article class="card tab">
            <h2>{heading}</h2>
            <p class="tab-title">{title}</p>
            <p><code class="tab-url">{tab.url}</code></p>
            <p class="hint">"Last used "{short_time(&tab.last_used)}</p>
            {shot}
        </article>
    }
}
