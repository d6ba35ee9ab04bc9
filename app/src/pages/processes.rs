//! `/agents/{id}/processes`: an agent's subprocesses — command, state, age, how each ended,
//! the last few KiB of its output, and a kill button. Commands and output are the agent's (and
//! whatever its programs printed): untrusted text, shown as text.

use kennel_kernel::process::{ProcessView, describe};
use leptos::prelude::*;

use crate::shell::{PageMeta, Shell};
use crate::widgets::{Csrf, IntoRendered, short_time};

pub struct ProcessesPage {
    pub agent_id: String,
    pub agent_name: String,
    pub processes: Vec<ProcessView>,
    /// `[retention] processes_days`.
    pub kept_days: u64,
}

pub fn render(meta: PageMeta, page: ProcessesPage) -> String {
    let id = page.agent_id;
    let csrf = meta.csrf.clone();
    let body = if page.processes.is_empty() {
        view! {
            <section class="card" id="processes">
                <p class="empty">"No processes."</p>
                <p class="hint">"An agent granted "<code>"process.*"</code>" starts them with "<code>"process_start"</code>"; ended ones stay listed for 15 minutes."</p>
            </section>
        }
        .rendered()
    } else {
        let cards = page.processes.into_iter().map(|p| process_card(&id, &csrf, p)).collect::<Vec<_>>();
        view! { <section id="processes" class="processes">{cards}</section> }.rendered()
    };
    crate::document(
        view! {
            <Shell meta>
                <h1>"Processes of "<a href=format!("/agents/{id}")>{page.agent_name}</a></h1>
                {body}
                {crate::widgets::kept_for("Records of ended processes", "processes_days", page.kept_days)}
            </Shell>
        }
        .to_html(),
    )
}

fn process_card(agent: &str, csrf: &str, p: ProcessView) -> impl IntoView + use<> {
    let state = match &p.exit {
        None => format!("running · pid {} · group {}", p.pid.map_or("?".to_string(), |pid| pid.to_string()), p.pgid),
        Some(exit) => format!("ended {}: {}", short_time(&exit.ended_at), describe(exit)),
    };
    let kill = p.running.then(|| {
        view! {
            <form method="post" action=format!("/agents/{agent}/processes/{}/kill", p.process_id) class="inline"
                data-confirm="Stop this process and everything it started?">
                <Csrf token=csrf.to_string()/>
                <button type="submit" class="danger">"Kill"</button>
            </form>
        }
    });
    let stream = |name: &'static str, text: String| {
        (!text.is_empty()).then(|| {
            view! {
                <h3>{name}</h3>
                <pre class=format!("output {name}")>{text}</pre>
            }
        })
    };
    view! {
        <article class="card process" id=format!("process-{}", p.process_id)>
            <h2>"Process "{p.process_id}</h2>
            <p><code class="command">{p.command}</code></p>
            <p class="hint">"In "<code>{p.cwd}</code>" · started "{short_time(&p.started_at)}" · "{state}</p>
            {kill}
            {stream("stdout", p.stdout_tail)}
            {stream("stderr", p.stderr_tail)}
        </article>
    }
}
