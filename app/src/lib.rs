//! Kennel's operator dashboard: Leptos components rendered on the server, never in the
//! browser. Pages read kernel services through the handles the server passes in; they hold
//! no rules of their own.

use leptos::prelude::*;

/// What the overview placeholder shows.
pub struct Overview {
    pub version: &'static str,
    pub agents_running: usize,
    pub agent_types: usize,
    pub tools: usize,
}

#[component]
fn Shell(title: &'static str, children: Children) -> impl IntoView {
    view! {
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <title>{format!("{title} · Kennel")}</title>
                <link rel="stylesheet" href="/style/kennel.css"/>
            </head>
            <body>
                <header class="top">
                    <a class="brand" href="/">"Kennel"</a>
                </header>
                <main>{children()}</main>
            </body>
        </html>
    }
}

#[component]
fn OverviewPage(overview: Overview) -> impl IntoView {
    view! {
        <Shell title="Overview">
            <h1>"Overview"</h1>
            <p class="lede">
                "The dashboard is being built. Everything it will show is already available from the REST API: "
                <a href="/api/openapi.json">"/api/openapi.json"</a>
                " (needs an API token)."
            </p>
            <dl class="facts">
                <dt>"Running agents"</dt>
                <dd>{overview.agents_running}</dd>
                <dt>"Agent types"</dt>
                <dd>{overview.agent_types}</dd>
                <dt>"Tools"</dt>
                <dd>{overview.tools}</dd>
                <dt>"Version"</dt>
                <dd>{overview.version}</dd>
            </dl>
        </Shell>
    }
}

/// The overview page as a complete HTML document.
pub fn render_overview(overview: Overview) -> String {
    let html = view! { <OverviewPage overview/> }.to_html();
    format!("<!DOCTYPE html>{html}")
}
