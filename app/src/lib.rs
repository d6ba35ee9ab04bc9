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
//!   names (lowercase letters, digits, `-`, `_`), never from free text.

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
