//! The owner inbox (spec §14, family `notify`): notes for the daemon's operators — from
//! agents (`notify_owner`) and from the daemon itself (a budget pausing an agent). A note is
//! never part of any chat history. One inbox for every operator; each reader (an operator, an
//! API token, the CLI) has their own read state.
//!
//! Fan-out: a note at or above `[notify] min_urgency_telegram` is also sent to
//! `[notify] telegram_channel` (a configured channel, its chat `telegram_chat`), and one at or
//! above `min_urgency_email` is emailed to `email_to` over `smtp_url` (`email.rs`), after it
//! is stored; how each went is kept on the note.
//!
//! # Design notes
//!
//! ## Layout
//!
//! The owner inbox (spec §14, family `notify`, issue 24): `Inbox` (notes from `notify_owner` and
//! budget pauses; read state per reader; fan-out by urgency to `[notify] telegram_channel` and,
//! `email.rs`, by SMTP to `email_to`), `store.rs` (`inbox_notes`, `inbox_reads`), `tools.rs`
//! (`notify_owner`).
//!
//! ## The owner inbox
//!
//! - **Notes** come from `notify_owner(reason, summary, urgency?)` (urgency low, normal — the
//!   default —, high, critical; reason ≤ 200 and summary ≤ 4,000 characters, not blank) and from
//!   the daemon: a budget that pauses an agent writes a `high` note (`source = budget`) besides
//!   its audit row. A note is stored in `inbox_notes` and is never a chat message (the tool's
//!   call and result are in the calling turn's trace, as every tool's are).
//! - **One inbox, a read state per reader**: `inbox_reads` (note, reader) where the reader is the
//!   action log's label — `operator:NAME` in the dashboard, `token:NAME` over the API, `cli`.
//! - **Fan-out**, after the note is stored, in the background, each outcome kept on the note
//!   (`telegram`, `email`: `ok` or why not):
//!   - at or above `[notify] min_urgency_telegram` (default `high`) to `telegram_channel` (a
//!     configured channel, checked at load) at `telegram_chat` (else the channel's
//!     `default_target`) through `Channels::deliver` (split, 429-retried, recorded like every
//!     send);
//!   - at or above `min_urgency_email` (default `high`) to every `email_to` address from
//!     `email_from` (default: the first of `email_to`) over `smtp_url` with lettre (rustls with
//!     the platform verifier): `smtps://USER@HOST:465`, `smtp://USER@HOST:587?tls=required`
//!     (STARTTLS), or plain `smtp://` for a relay on this machine. It signs in as the URL's user
//!     with the password in the variable `smtp_password_env`; **a password in the URL is refused
//!     at load** (config.toml is not a secret store). Addresses, the URL, and the pair
//!     `email_to`/`smtp_url` are checked at load. The subject is `[Kennel] URGENCY: reason` on
//!     one line (the agent's line breaks become spaces: no header of its making), the body plain
//!     text. The SMTP server is the operator's choice, so it is not behind the address guard.
//! - **Fronts**: `GET /api/inbox` (filters `agent`, `urgency`, `unread`; paged, newest first),
//!   `POST /api/inbox/read` (`{ids?}`; none: every note), `GET /api/inbox/unread`; the dashboard's
//!   **Inbox** (`/inbox`, filters, "Mark read", "Mark all read"; live on `Topic::Inbox`), and the
//!   unread count on the Inbox link of every page's navigation: counted per request in
//!   `require_operator`, always rendered (hidden at 0), and kept current by live.js, which
//!   follows `Topic::Inbox` on the page's one change stream (the page's own topics plus
//!   `inbox`: one connection per tab, as browsers allow few per site) and reads
//!   `GET /inbox/unread` when it changes. In the hostile-text corpus.
//!
//! ## Quota
//!
//! - **Notes** (`notify/`): `[notify] max_per_agent_per_hour` (30) `notify_owner` notes per agent
//!   in any hour, counted in the insert's write transaction (concurrent calls cannot pass it);
//!   `max_fanout_per_hour` (30) per medium (Telegram, email) in a clock hour, counted in memory
//!   (one daemon's fan-out), the rest kept and marked `not sent`.

pub(crate) mod config;
mod email;
mod store;
mod tools;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

pub use config::NotifyConfig;
pub(crate) use tools::register;

use crate::agent::Agents;
use crate::channel::Channels;
use crate::clock::Clock;
use crate::config::Config;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::family::Family;
use crate::page::{Key, Page, PageRequest, bad_cursor};

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "notify",
    open: |s| {
        s.provide(Inbox::new(s.get::<Db>().clone(), s.get::<Clock>().clone(), s.need(), s.need(), s.need()));
        Ok(())
    },
    register,
};

/// The longest reason, and summary, in characters.
pub const MAX_REASON: usize = 200;
pub const MAX_SUMMARY: usize = 4_000;

/// How soon a person should look.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize, ToSchema, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Urgency {
    Low,
    #[default]
    Normal,
    High,
    Critical,
}

crate::db::stored_enum!(Urgency { Low = "low", Normal = "normal", High = "high", Critical = "critical" });

/// A note to store.
pub struct NewNote {
    /// `agent` (notify_owner) or `budget`.
    pub source: &'static str,
    pub agent: Option<(uuid::Uuid, String)>,
    pub reason: String,
    pub summary: String,
    pub urgency: Urgency,
}

/// A note as a reader sees it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Note {
    pub id: i64,
    pub at: String,
    /// `agent` (notify_owner) or `budget` (a budget paused the agent).
    pub source: String,
    pub agent_id: Option<String>,
    pub agent_name: Option<String>,
    pub reason: String,
    pub summary: String,
    pub urgency: Urgency,
    /// The Telegram fan-out: absent when not sent, `ok`, or why it failed.
    pub telegram: Option<String>,
    /// The email fan-out: absent when not sent, `ok`, or why it failed.
    pub email: Option<String>,
    /// Whether this reader has read it.
    pub read: bool,
}

#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NoteFilter {
    /// An agent's name or id.
    pub agent: Option<String>,
    /// Only notes of this urgency.
    pub urgency: Option<Urgency>,
    /// Only notes this reader has not read.
    #[serde(default)]
    pub unread: bool,
}

pub struct Inbox {
    db: Db,
    clock: Clock,
    /// `[notify]`: limits and where notes are sent on.
    config: Arc<Config>,
    /// To find the agent a reader filters by.
    agents: Arc<Agents>,
    /// Where a note is sent on to Telegram.
    channels: Arc<Channels>,
    /// Notes sent on in the current clock hour, per medium (see [`Inbox::fan_out_allowed`]).
    fanned_out: std::sync::Mutex<FanOutHour>,
}

/// The clock hour being counted and how many notes went to each medium in it.
#[derive(Default)]
struct FanOutHour {
    hour: i64,
    telegram: u64,
    email: u64,
}

#[derive(Clone, Copy)]
enum Medium {
    Telegram,
    Email,
}

fn over_fan_out(max: u64) -> String {
    format!("not sent: {max} notes went out this hour, the most [notify] max_fanout_per_hour allows")
}

impl Inbox {
    pub(crate) fn new(
        db: Db,
        clock: Clock,
        config: Arc<Config>,
        agents: Arc<Agents>,
        channels: Arc<Channels>,
    ) -> Inbox {
        Inbox { db, clock, config, agents, channels, fanned_out: std::sync::Mutex::default() }
    }

    /// Counts one note sent on to `medium` in this clock hour, if fewer than `max` were: a
    /// burst of notes (an agent's, or budgets pausing many agents) is kept in the inbox but does
    /// not become a burst of emails and messages.
    fn fan_out_allowed(&self, medium: Medium, max: u64) -> bool {
        let hour = self.clock.now().timestamp().div_euclid(3600);
        let mut counted = self.fanned_out.lock().unwrap_or_else(|e| e.into_inner());
        if counted.hour != hour {
            *counted = FanOutHour { hour, ..FanOutHour::default() };
        }
        let sent = match medium {
            Medium::Telegram => &mut counted.telegram,
            Medium::Email => &mut counted.email,
        };
        if *sent >= max {
            return false;
        }
        *sent += 1;
        true
    }

    /// Stores a note, then fans it out as `[notify]` says (in the background: the note is
    /// stored whatever the fan-out does).
    pub async fn notify(&self, new: NewNote) -> Result<Note> {
        check_text("reason", &new.reason, MAX_REASON)?;
        // The reason is the note's title: it cannot reorder what an operator reads.
        if new.reason.chars().any(crate::text::is_bidi_control) {
            return Err(Error::invalid(
                "`reason` is a title: no bidirectional controls (U+202A–U+202E, U+2066–U+2069)",
            )
            .with_field("reason"));
        }
        check_text("summary", &new.summary, MAX_SUMMARY)?;
        let now = self.clock.now();
        let (at, since) = (crate::db::timestamp(now), crate::db::timestamp(now - chrono::Duration::hours(1)));
        let config = &self.config.notify;
        let id = store::insert_within(&self.db, &new, &at, &since, config.max_per_agent_per_hour).await?.ok_or_else(|| {
            Error::exhausted(format!(
                "this agent left {} notes in the last hour, the most [notify] max_per_agent_per_hour allows: put what matters in one note, or wait",
                config.max_per_agent_per_hour
            ))
        })?;
        let note = store::get(&self.db, id, "").await?.ok_or_else(|| Error::internal("a stored note is gone"))?;
        if let Some(channel) = &config.telegram_channel
            && new.urgency >= config.min_urgency_telegram
        {
            if self.fan_out_allowed(Medium::Telegram, config.max_fanout_per_hour) {
                let address = match &config.telegram_chat {
                    Some(chat) => format!("{channel}:{chat}"),
                    None => channel.clone(),
                };
                let (channels, db, note) = (self.channels.clone(), self.db.clone(), note.clone());
                tokio::spawn(async move { fan_out(&channels, &db, &address, &note).await });
            } else {
                store::set_telegram(&self.db, note.id, &over_fan_out(config.max_fanout_per_hour)).await?;
            }
        }
        if !config.email_to.is_empty()
            && new.urgency >= config.min_urgency_email
            && !self.fan_out_allowed(Medium::Email, config.max_fanout_per_hour)
        {
            store::set_email(&self.db, note.id, &over_fan_out(config.max_fanout_per_hour)).await?;
        } else if !config.email_to.is_empty() && new.urgency >= config.min_urgency_email {
            let (config, db, note) = (self.config.clone(), self.db.clone(), note.clone());
            tokio::spawn(async move {
                let outcome = match email::send(&config.notify, &note).await {
                    Ok(()) => "ok".to_string(),
                    Err(e) => e.message,
                };
                if let Err(e) = store::set_email(&db, note.id, &outcome).await {
                    tracing::warn!(note = note.id, error = %e.message, "could not record a note's email");
                }
            });
        }
        Ok(note)
    }

    /// A page of notes, newest first, with `reader`'s read state.
    pub async fn list(&self, reader: &str, filter: &NoteFilter, page: &PageRequest) -> Result<Page<Note>> {
        let agent = match filter.agent.as_deref().map(str::trim).filter(|a| !a.is_empty()) {
            Some(who) => Some(self.agents.id_for_field("agent", Some(who))?.unwrap_or_default()),
            None => None,
        };
        let query = store::Query { reader, agent: agent.as_deref(), urgency: filter.urgency, unread: filter.unread };
        let before = page.after(Key::Number)?.map(|c| c.parse::<i64>().map_err(|_| bad_cursor())).transpose()?;
        let notes = store::list(&self.db, &query, before, page.fetch_limit()).await?;
        let total = store::count(&self.db, &query).await?;
        Ok(Page::from_rows(notes, page, total, |n| n.id.to_string()))
    }

    /// How many notes `reader` has not read.
    pub async fn unread(&self, reader: &str) -> Result<u64> {
        store::count(&self.db, &store::Query { reader, agent: None, urgency: None, unread: true }).await
    }

    /// Marks notes read for `reader`: those of `ids`, or every note when `ids` is `None`.
    /// Returns how many were newly read.
    pub async fn mark_read(&self, reader: &str, ids: Option<&[i64]>) -> Result<u64> {
        let at = crate::db::timestamp(self.clock.now());
        store::mark_read(&self.db, reader, ids, &at).await
    }
}

/// Sends a note to the Telegram chat `[notify]` names (`address`: `CHANNEL` or
/// `CHANNEL:CHAT`) and records how it went.
async fn fan_out(channels: &Channels, db: &Db, address: &str, note: &Note) {
    let from = note.agent_name.as_deref().map(|a| format!(" from agent {a}")).unwrap_or_default();
    let text = format!("[{}] {}{from}\n{}", urgency_label(note.urgency), note.reason, note.summary);
    let out = crate::channel::platform::Outgoing::Text(text);
    let sent = match channels.address(address) {
        Ok((channel, chat)) => channels.deliver(&channel, &chat, out, "notify_owner").await,
        Err(e) => Err(e),
    };
    let outcome = match sent {
        Ok(()) => "ok".to_string(),
        Err(e) => e.message,
    };
    if let Err(e) = store::set_telegram(db, note.id, &outcome).await {
        tracing::warn!(note = note.id, error = %e.message, "could not record a note's fan-out");
    }
}

fn urgency_label(u: Urgency) -> &'static str {
    match u {
        Urgency::Low => "low",
        Urgency::Normal => "normal",
        Urgency::High => "HIGH",
        Urgency::Critical => "CRITICAL",
    }
}

fn check_text(field: &str, text: &str, max: usize) -> Result<()> {
    if crate::text::is_blank(text) || text.chars().count() > max {
        return Err(Error::invalid(format!("`{field}` is 1 to {max} characters, not blank")).with_field(field));
    }
    Ok(())
}
