//! The Start, Stop and Delete buttons of an agent, on the list and on its page.

use kennel_kernel::agent::Agent;
use leptos::prelude::*;

use crate::widgets::{Csrf, IntoRendered};

/// Stop for a running agent; Start and Delete for a stopped one. Stopping and deleting ask
/// first (`data-confirm`, read by live.js).
pub(super) fn lifecycle_buttons(a: &Agent, csrf: &str) -> impl IntoView + use<> {
    let button = |action: &str, label: &'static str, class: &'static str, confirm: Option<String>| {
        view! {
            <form method="post" action=format!("/agents/{}/{action}", a.id) class="inline" data-confirm=confirm>
                <Csrf token=csrf.to_string()/>
                <button type="submit" class=class>{label}</button>
            </form>
        }
    };
    if a.is_running() {
        let confirm = format!("Stop agent {}? Its running turns are cancelled and its schedules paused.", a.name);
        view! { {button("stop", "Stop", "danger", Some(confirm))} }.rendered()
    } else {
        let confirm = format!("Delete agent {}? It leaves every list; its history and audit stay.", a.name);
        view! { {button("start", "Start", "", None)}" "{button("remove", "Delete", "link danger", Some(confirm))} }
            .rendered()
    }
}
