//! A page for an error that has no form to go back to.

use leptos::prelude::*;

use crate::shell::{PageMeta, Shell};

pub fn render(meta: PageMeta, kind: &str, message: &str) -> String {
    let (kind, message) = (kind.to_string(), message.to_string());
    crate::document(
        view! {
            <Shell meta>
                <section class="card">
                    <h1>{kind}</h1>
                    <p>{crate::widgets::rich_text(&message)}</p>
                    <p><a href="/" data-back="">"Back"</a>" · "<a href="/">"Overview"</a></p>
                </section>
            </Shell>
        }
        .to_html(),
    )
}
