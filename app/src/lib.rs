//! Kennel's operator dashboard: Leptos components rendered to HTML on the server, never in
//! the browser. The server's handlers load data from kernel services and hand it to a page
//! function here; pages hold no rules, only presentation. Every action is a plain HTML form
//! that works without JavaScript; `public/live.js` adds live chat updates where it runs.

// Leptos views are deeply nested types; the task page's outgrew the default limit in release builds.
#![recursion_limit = "256"]

mod graph;
pub mod pages;
mod shell;
mod widgets;

pub use shell::{Flash, Live, Nav, PageMeta};
pub use widgets::Paging;

/// A rendered page as a complete HTML document.
fn document(html: String) -> String {
    format!("<!DOCTYPE html>{html}")
}
