//! Kennel's operator dashboard: Leptos components rendered to HTML on the server, never in
//! the browser. The server's handlers load data from kernel services and hand it to a page
//! function here; pages hold no rules, only presentation. Every action is a plain HTML form
//! that works without JavaScript; `public/live.js` adds live chat updates where it runs.
//!
//! # Design notes
//!
//! ## Rendering and escaping
//!
//! - **Rendering:** a handler loads what the page shows from kernel services, builds the page's
//!   data struct and calls `kennel_app::pages::<page>::render(meta, data)`, which renders Leptos
//!   components to a complete HTML document. No WASM, no hydration, no client router.
//!   **Decision:** we use Leptos for components only and route with axum directly, without
//!   `leptos_axum`/`leptos_router`/server functions: every action is a plain `<form method=post>`
//!   to an axum handler, which keeps one router, one set of extractors and a lean binary.
//! - **Escaping:** what tachys leaves raw, and the rule that keeps stored text out of it, are
//!   in `widgets.rs`'s docs (this file may not name those elements: the rule's test reads it).

// Leptos views are deeply nested types; the task page's outgrew the default limit in release builds.
#![recursion_limit = "256"]

mod graph;
mod markdown;
pub mod pages;
mod shell;
mod widgets;

pub use shell::{Flash, Live, PageMeta, Section};
pub use widgets::Paging;

/// A rendered page as a complete HTML document.
fn document(html: String) -> String {
    format!("<!DOCTYPE html>{html}")
}
