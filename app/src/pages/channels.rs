//! `/channels`: every configured channel with its kind, agent and connection state;
//! `/channels/{name}`: one channel's conversations with the groups' rosters, and its recent
//! traffic in and out. Everything here but the configuration is written by strangers on chat
//! platforms (names, usernames, titles, messages): all of it is shown as text.

use kennel_kernel::channel::{
    ChannelConfig, ChannelDetail, ChannelInfo, ConversationWithRoster, InboundRow, OutboundRow,
};
use kennel_kernel::error::FieldError;
use leptos::prelude::*;

use crate::shell::{PageMeta, Section, Shell};
use crate::widgets::{Csrf, IntoRendered, field_error, short_time};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/channels", "Channels");

/// The form that adds a channel, as filled in (empty on a first visit) with what was wrong.
pub struct NewChannel {
    pub form: ChannelForm,
    pub errors: Vec<FieldError>,
}

pub fn render_list(meta: PageMeta, channels: Vec<ChannelInfo>, new: NewChannel) -> String {
    let csrf = meta.csrf.clone();
    let body = if channels.is_empty() {
        view! {
            <section class="card" id="channels">
                <p class="empty">"No channels configured."</p>
                <p class="hint">"Add one below (kind telegram, slack, discord or webhook; the agent that answers), with "<code>"kennel channel set"</code>", or as a "<code>"[channels.NAME]"</code>" section of config.toml: it listens at once."</p>
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
                <section class="card" id="add-channel">
                    <h2>"Add a channel"</h2>
                    <ChannelFields action="/channels".into() form=new.form errors=new.errors csrf submit="Add channel" name_editable=true/>
                </section>
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

/// `kept_days`: `[retention] channel_traffic_days`. `form`: its settings as just submitted
/// with what was wrong, or as stored.
pub fn render_channel(
    meta: PageMeta,
    detail: ChannelDetail,
    kept_days: u64,
    form: Option<(ChannelForm, Vec<FieldError>)>,
) -> String {
    let csrf = meta.csrf.clone();
    let c = detail.channel;
    let name = c.name.clone();
    let (form, errors) = form.unwrap_or_else(|| (ChannelForm::of(&c.name, &c.settings), Vec::new()));
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
                <section class="card" id="channel-settings">
                    <h2>"Settings"</h2>
                    <p class="hint">"Saved to config.toml (its comments kept); the channel listens with them at once. Secrets are read from the variables named here, in the daemon's environment."</p>
                    <ChannelFields action=format!("/channels/{name}") form errors csrf=csrf.clone() submit="Save" name_editable=false/>
                    <form method="post" action=format!("/channels/{name}/test") class="inline">
                        <Csrf token=csrf.clone()/>
                        <button type="submit">"Test connection"</button>
                        <span class="hint">" One call that needs its token: who the platform says its account is."</span>
                    </form>
                    <form method="post" action=format!("/channels/{name}/remove") class="inline"
                        data-confirm=format!("Remove channel {name}? It stops listening; its conversations stay.")>
                        <Csrf token=csrf/>
                        <button type="submit" class="danger">"Remove this channel"</button>
                    </form>
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

/// A channel's settings as the form holds them (text as typed).
#[derive(Debug, Clone, Default)]
pub struct ChannelForm {
    pub name: String,
    pub kind: String,
    pub agent: String,
    pub base_url: String,
    pub token_env: String,
    pub signing_secret_env: String,
    /// `poll`, `webhook`, or empty: the kind's own.
    pub mode: String,
    pub default_target: String,
    pub deliver_only: bool,
    /// Platform user ids, one per line or comma-separated.
    pub trusted_users: String,
}

impl ChannelForm {
    pub fn of(name: &str, c: &ChannelConfig) -> ChannelForm {
        let text = |v: &Option<String>| v.clone().unwrap_or_default();
        ChannelForm {
            name: name.to_string(),
            kind: c.kind.as_str().to_string(),
            agent: text(&c.agent),
            base_url: text(&c.base_url),
            token_env: text(&c.token_env),
            signing_secret_env: text(&c.signing_secret_env),
            mode: c.mode.map(|m| m.as_str().to_string()).unwrap_or_default(),
            default_target: text(&c.default_target),
            deliver_only: c.deliver_only,
            trusted_users: c.trusted_users.join(", "),
        }
    }

    pub fn from_fields(fields: &[(String, String)]) -> ChannelForm {
        let mut form = ChannelForm::default();
        for (key, value) in fields {
            let value = value.trim().to_string();
            match key.as_str() {
                "name" => form.name = value,
                "kind" => form.kind = value,
                "agent" => form.agent = value,
                "base_url" => form.base_url = value,
                "token_env" => form.token_env = value,
                "signing_secret_env" => form.signing_secret_env = value,
                "mode" => form.mode = value,
                "default_target" => form.default_target = value,
                "deliver_only" => form.deliver_only = true,
                "trusted_users" => form.trusted_users = value,
                _ => {}
            }
        }
        form
    }

    /// The settings the form says, read as config.toml is read; what cannot be read is a
    /// field error. What the settings must hold together is the kernel's check, on saving.
    pub fn to_settings(&self) -> Result<ChannelConfig, Vec<FieldError>> {
        let kind = serde_json::from_value(self.kind.clone().into()).map_err(|_| {
            vec![FieldError { field: "kind".into(), message: "choose telegram, slack, discord or webhook".into() }]
        })?;
        let mode = match self.mode.as_str() {
            "" => None,
            mode => Some(serde_json::from_value(mode.into()).map_err(|_| {
                vec![FieldError { field: "mode".into(), message: "choose poll, webhook or the kind's own".into() }]
            })?),
        };
        let text = |value: &str| (!value.is_empty()).then(|| value.to_string());
        Ok(ChannelConfig {
            kind,
            agent: text(&self.agent),
            base_url: text(&self.base_url),
            token_env: text(&self.token_env),
            signing_secret_env: text(&self.signing_secret_env),
            mode,
            default_target: text(&self.default_target),
            deliver_only: self.deliver_only,
            trusted_users: self
                .trusted_users
                .split([',', '\n'])
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .map(str::to_string)
                .collect(),
        })
    }
}

#[component]
fn ChannelFields(
    action: String,
    form: ChannelForm,
    errors: Vec<FieldError>,
    csrf: String,
    submit: &'static str,
    name_editable: bool,
) -> impl IntoView {
    let choice = |value: &'static str, label: &'static str, current: &str| {
        view! { <option value=value selected=value == current>{label}</option> }
    };
    let kinds =
        [("telegram", "Telegram"), ("slack", "Slack"), ("discord", "Discord"), ("webhook", "Webhook (signed JSON)")]
            .into_iter()
            .map(|(v, l)| choice(v, l, &form.kind))
            .collect::<Vec<_>>();
    let modes = [
        ("", "the kind's own"),
        ("poll", "poll (Kennel asks)"),
        ("webhook", "webhook (posted to /channels/NAME/inbound)"),
    ]
    .into_iter()
    .map(|(v, l)| choice(v, l, &form.mode))
    .collect::<Vec<_>>();
    let general = errors
        .iter()
        .filter(|e| {
            !["name", "kind", "mode", "agent", "base_url", "token_env", "signing_secret_env", "default_target"]
                .contains(&e.field.as_str())
        })
        .map(|e| view! { <p class="field-error" role="alert">{crate::widgets::rich_text(&e.message)}</p> })
        .collect::<Vec<_>>();
    view! {
        <form method="post" action=action class="stack channel-form">
            <Csrf token=csrf/>
            {general}
            <div class="row">
                <label>"Name" <input type="text" name="name" value=form.name readonly=!name_editable required pattern="[a-z0-9_-]{1,64}"/></label>
                <label>"Kind" <select name="kind">{kinds}</select></label>
            </div>
            {field_error(&errors, "name")}
            {field_error(&errors, "kind")}
            <div class="row">
                <label>"Agent that answers" <input type="text" name="agent" value=form.agent/></label>
                <label>"Mode" <select name="mode">{modes}</select></label>
            </div>
            {field_error(&errors, "agent")}
            {field_error(&errors, "mode")}
            <label>"Base URL (the platform's API; a webhook channel's replies go here)" <input type="url" name="base_url" value=form.base_url/></label>
            {field_error(&errors, "base_url")}
            <div class="row">
                <label>"Bot token variable (…_TOKEN)" <input type="text" name="token_env" value=form.token_env autocomplete="off"/></label>
                <label>"Signing secret variable (…_SECRET)" <input type="text" name="signing_secret_env" value=form.signing_secret_env autocomplete="off"/></label>
            </div>
            {field_error(&errors, "token_env")}
            {field_error(&errors, "signing_secret_env")}
            <label>"Default target (the chat a schedule naming only this channel sends to)" <input type="text" name="default_target" value=form.default_target/></label>
            {field_error(&errors, "default_target")}
            <label>"Trusted users (the owner's and operators' platform user ids, comma-separated: their messages do not taint a turn)" <input type="text" name="trusted_users" value=form.trusted_users/></label>
            {field_error(&errors, "trusted_users")}
            <label class="check"><input type="checkbox" name="deliver_only" checked=form.deliver_only/>" Deliver only: send each message on to the default target, run no turn (webhook)"</label>
            <button type="submit">{submit}</button>
        </form>
    }
}
