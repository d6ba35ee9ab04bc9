//! `/channels`: every configured channel with its kind, agent and connection state;
//! `/channels/{name}`: one channel's conversations with the groups' rosters, and its recent
//! traffic in and out. Everything here but the configuration is written by strangers on chat
//! platforms (names, usernames, titles, messages): all of it is shown as text.

use kennel_kernel::channel::{ChannelDetail, ChannelInfo, ConversationWithRoster, InboundRow, OutboundRow};
use leptos::prelude::*;

use crate::shell::{PageMeta, Section, Shell};
use crate::widgets::{IntoRendered, short_time};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/channels", "Channels");

pub fn render_list(meta: PageMeta, channels: Vec<ChannelInfo>) -> String {
    let body = if channels.is_empty() {
        view! {
            <section class="card" id="channels">
                <p class="empty">"No channels configured."</p>
                <p class="hint">"Add a "<code>"[channels.NAME]"</code>" section to config.toml (kind = telegram, slack, discord or webhook; agent = the agent that answers) and restart the daemon."</p>
            </section>
        }
        .rendered()
    } else {
        let rows = channels.into_iter().map(channel_row).collect::<Vec<_>>();
        view! {
            <table id="channels">
                <thead><tr><th>"Channel"</th><th>"Kind"</th><th>"Mode"</th><th>"Agent"</th><th>"State"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
        .rendered()
    };
    crate::document(
        view! {
            <Shell meta>
                <h1>"Channels"</h1>
                {body}
            </Shell>
        }
        .to_html(),
    )
}

/// Channel names are `[a-z0-9_-]` (checked when the config loads), so one goes into a path
/// as it is.
fn channel_href(name: &str) -> String {
    format!("/channels/{name}")
}

fn channel_row(c: ChannelInfo) -> impl IntoView + use<> {
    let agent = if c.deliver_only {
        format!("none (delivers to {})", c.default_target.unwrap_or_default())
    } else {
        c.agent.unwrap_or_default()
    };
    view! {
        <tr>
            <td><a href=channel_href(&c.name)>{c.name.clone()}</a></td>
            <td>{c.kind}</td>
            <td>{c.mode}</td>
            <td>{agent}</td>
            <td>{c.state}</td>
        </tr>
    }
}

/// `kept_days`: `[retention] channel_traffic_days`.
pub fn render_channel(meta: PageMeta, detail: ChannelDetail, kept_days: u64) -> String {
    let c = detail.channel;
    let conversations = if detail.conversations.is_empty() {
        view! { <p class="empty">"No conversations yet."</p> }.rendered()
    } else {
        let items = detail.conversations.into_iter().map(conversation).collect::<Vec<_>>();
        view! { <div id="conversations">{items}</div> }.rendered()
    };
    let inbound = detail.inbound.into_iter().map(inbound_row).collect::<Vec<_>>();
    let outbound = detail.outbound.into_iter().map(outbound_row).collect::<Vec<_>>();
    crate::document(
        view! {
            <Shell meta>
                <h1>"Channel "{c.name.clone()}</h1>
                <p><a href="/channels">"All channels"</a></p>
                <section class="card" id="channel-state">
                    <p>{format!("{} · {} · agent {} · default target {}", c.kind, c.mode, c.agent.unwrap_or_else(|| "none".into()), c.default_target.unwrap_or_else(|| "none".into()))}</p>
                    <p class="hint">"State: "{c.state}</p>
                </section>
                <h2>"Conversations"</h2>
                {conversations}
                {crate::widgets::kept_for("Messages received (once answered) and sent", "channel_traffic_days", kept_days)}
                <h2>"Received"</h2>
                <table id="channel-inbound">
                    <thead><tr><th>"When"</th><th>"Chat"</th><th>"From"</th><th>"Message"</th><th>"State"</th></tr></thead>
                    <tbody>{inbound}</tbody>
                </table>
                <h2>"Sent"</h2>
                <table id="channel-outbound">
                    <thead><tr><th>"When"</th><th>"Chat"</th><th>"What"</th><th>"By"</th><th>"Outcome"</th></tr></thead>
                    <tbody>{outbound}</tbody>
                </table>
            </Shell>
        }
        .to_html(),
    )
}

fn conversation(c: ConversationWithRoster) -> impl IntoView + use<> {
    let conv = c.conversation;
    let title = match (&conv.title, conv.is_group) {
        (Some(t), _) => format!("{t} ({})", conv.chat_id),
        (None, true) => format!("Group {}", conv.chat_id),
        (None, false) => format!("Direct conversation {}", conv.chat_id),
    };
    let roster = (!c.roster.is_empty()).then(|| {
        let rows = c
            .roster
            .into_iter()
            .map(|m| {
                view! {
                    <tr>
                        <td>{m.display_name}</td>
                        <td>{m.username.map(|u| format!("@{u}")).unwrap_or_default()}</td>
                        <td><code>{m.user_id}</code></td>
                        <td>{short_time(&m.last_seen)}</td>
                    </tr>
                }
            })
            .collect::<Vec<_>>();
        view! {
            <table class="roster">
                <thead><tr><th>"Member"</th><th>"Username"</th><th>"User id"</th><th>"Last seen"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
    });
    view! {
        <section class="card">
            <h3>{title}</h3>
            <p class="hint">"Last message "{short_time(&conv.last_at)}</p>
            {roster}
        </section>
    }
}

fn inbound_row(m: InboundRow) -> impl IntoView + use<> {
    let from = match &m.username {
        Some(u) => format!("{} (@{u})", m.display_name),
        None => m.display_name.clone(),
    };
    let state = match m.detail {
        Some(d) => format!("{}: {d}", m.state),
        None => m.state,
    };
    view! {
        <tr>
            <td>{short_time(&m.received_at)}</td>
            <td><code>{m.chat_id}</code></td>
            <td>{from}</td>
            <td>{m.text}</td>
            <td>{state}</td>
        </tr>
    }
}

fn outbound_row(m: OutboundRow) -> impl IntoView + use<> {
    view! {
        <tr>
            <td>{short_time(&m.at)}</td>
            <td><code>{m.chat_id}</code></td>
            <td>{format!("{}: {}", m.kind, m.summary)}</td>
            <td>{m.sent_by}</td>
            <td>{m.outcome}</td>
        </tr>
    }
}
