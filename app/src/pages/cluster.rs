//! `/cluster`: the daemons sharing this daemon's database — which is alive, its last
//! heartbeat, and what it holds (the agents whose turns it runs, the channels it polls) — then
//! those that stopped or died in the last hour. Agent names are the agents' own: shown as
//! text.

use std::collections::HashMap;

use kennel_kernel::cluster::{Daemon, DaemonState, Lease, Overview};
use leptos::prelude::*;

use crate::shell::{PageMeta, Section, Shell};
use crate::widgets::{IntoRendered, short_time};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/cluster", "Cluster");

pub struct ClusterPage {
    pub overview: Overview,
    /// Agents' names by id, for the `agent:<id>` leases.
    pub agent_names: HashMap<String, String>,
}

pub fn render(meta: PageMeta, page: ClusterPage) -> String {
    let overview = page.overview;
    let summary = if overview.shared {
        let alive = overview.daemons.iter().filter(|d| d.alive).count();
        format!(
            "{alive} live daemon{} on one PostgreSQL database · leases last {} ms after a daemon's last heartbeat",
            if alive == 1 { "" } else { "s" },
            overview.lease_ms
        )
    } else {
        "SQLite: this home has one daemon. Several daemons share work when they use one PostgreSQL database ([database] url).".to_string()
    };
    let this = overview.this_daemon.clone();
    let cards = overview.daemons.into_iter().map(|d| daemon_card(d, &this, &page.agent_names)).collect::<Vec<_>>();
    crate::document(
        view! {
            <Shell meta>
                <h1>"Cluster"</h1>
                <p class="hint" id="cluster-summary">{summary}</p>
                <div id="daemons">{cards}</div>
            </Shell>
        }
        .to_html(),
    )
}

/// The daemon's state in words, with its times.
fn state(d: &Daemon) -> String {
    match d.state {
        DaemonState::AloneAlive => format!("alive since {} (the only daemon: no heartbeat)", short_time(&d.started_at)),
        DaemonState::Alive => format!("alive · last heartbeat {}", short_time(&d.heartbeat_at)),
        DaemonState::Stopped => format!("stopped {}", short_time(d.stopped_at.as_deref().unwrap_or_default())),
        DaemonState::Died => format!(
            "died (last heartbeat {}; work taken over {})",
            short_time(&d.heartbeat_at),
            short_time(d.reaped_at.as_deref().unwrap_or_default())
        ),
        DaemonState::Silent => format!("no heartbeat since {}", short_time(&d.heartbeat_at)),
    }
}

fn lease_row(lease: Lease, agent_names: &HashMap<String, String>) -> impl IntoView + use<> {
    let what = match lease.agent_id() {
        Some(id) => {
            let name = agent_names.get(id).cloned().unwrap_or_else(|| id.to_string());
            view! { "agent "<a href=format!("/agents/{id}")>{name}</a> }.rendered()
        }
        None => view! { <code>{lease.name}</code> }.rendered(),
    };
    view! {
        <tr>
            <td>{what}</td>
            <td>{short_time(&lease.acquired_at)}</td>
            <td>{short_time(&lease.expires_at)}</td>
        </tr>
    }
}

fn daemon_card(d: Daemon, this: &str, agent_names: &HashMap<String, String>) -> impl IntoView + use<> {
    let title = if d.id == this { format!("{} (this daemon)", d.id) } else { d.id.clone() };
    let state = state(&d);
    let class = if d.alive { "card daemon alive" } else { "card daemon" };
    let leases = if d.runs_everything() {
        view! { <p class="empty">"Runs every agent of this home."</p> }.rendered()
    } else if d.leases.is_empty() {
        view! { <p class="empty">"Holds nothing."</p> }.rendered()
    } else {
        let rows = d.leases.into_iter().map(|l| lease_row(l, agent_names)).collect::<Vec<_>>();
        view! {
            <table class="leases">
                <thead><tr><th>"Holds"</th><th>"Since"</th><th>"Until"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
        .rendered()
    };
    view! {
        <article class=class id=format!("daemon-{}", d.id)>
            <h2>{title}</h2>
            <p class="state">{state}</p>
            <p class="hint">{format!("{} · pid {} · {} · version {} · started {}", d.host, d.pid, d.listen, d.version, short_time(&d.started_at))}</p>
            {leases}
        </article>
    }
}
