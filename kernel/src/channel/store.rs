//! The channels' SQL: inbound messages (and their deduplication), conversations, rosters and
//! what was sent. The bridge decides; this only reads and writes rows.

use serde::Serialize;
use utoipa::ToSchema;

use super::platform::Inbound;
use crate::db::{self, Db};
use crate::error::Result;

/// An inbound message as stored.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InboundRow {
    pub channel: String,
    pub message_id: String,
    pub chat_id: String,
    pub chat_title: Option<String>,
    pub is_group: bool,
    pub user_id: String,
    pub display_name: String,
    pub username: Option<String>,
    pub text: String,
    pub received_at: String,
    /// pending, answered, delivered (a deliver-only webhook's), answer (it answered an
    /// `ask_user` question waiting in its conversation) or failed.
    pub state: String,
    pub detail: Option<String>,
}

/// A member of a group conversation: someone who spoke there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct RosterEntry {
    pub user_id: String,
    pub display_name: String,
    pub username: Option<String>,
    pub last_seen: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Conversation {
    pub channel: String,
    pub chat_id: String,
    pub title: Option<String>,
    pub is_group: bool,
    pub last_at: String,
}

/// Something sent on a channel.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OutboundRow {
    pub id: i64,
    pub channel: String,
    pub chat_id: String,
    pub kind: String,
    pub summary: String,
    pub sent_by: String,
    pub at: String,
    pub outcome: String,
}

db::from_row!(InboundRow {
    channel,
    message_id,
    chat_id,
    chat_title,
    is_group,
    user_id,
    display_name,
    username,
    text,
    received_at,
    state,
    detail
});
db::from_row!(RosterEntry { user_id, display_name, username, last_seen });
db::from_row!(Conversation { channel, chat_id, title, is_group, last_at });
db::from_row!(OutboundRow { id, channel, chat_id, kind, summary, sent_by, at, outcome });

/// Stores an inbound message with its conversation and (in a group) its sender on the roster,
/// in one transaction. False when the platform delivered this message before: nothing changes.
pub(super) async fn receive(db: &Db, channel: &str, m: &Inbound, at: &str) -> Result<bool> {
    let mut tx = db.begin_write().await?;
    let inserted = db::query(
        "INSERT INTO channel_inbound (channel, message_id, chat_id, chat_title, is_group, user_id, display_name, username, text, received_at, state)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending')
         ON CONFLICT (channel, message_id) DO NOTHING",
    )
    .bind(channel)
    .bind(&m.message_id)
    .bind(&m.chat_id)
    .bind(&m.chat_title)
    .bind(m.is_group)
    .bind(&m.from.user_id)
    .bind(&m.from.display_name)
    .bind(&m.from.username)
    .bind(&m.text)
    .bind(at)
    .execute(&mut tx)
    .await?
    .rows_affected()
        == 1;
    if !inserted {
        return Ok(false);
    }
    db::query(
        "INSERT INTO channel_conversations (channel, chat_id, title, is_group, last_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (channel, chat_id) DO UPDATE SET title = COALESCE(excluded.title, channel_conversations.title), last_at = excluded.last_at",
    )
    .bind(channel)
    .bind(&m.chat_id)
    .bind(&m.chat_title)
    .bind(m.is_group)
    .bind(at)
    .execute(&mut tx)
    .await?;
    if m.is_group {
        db::query(
            "INSERT INTO channel_members (channel, chat_id, user_id, display_name, username, last_seen) VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (channel, chat_id, user_id) DO UPDATE SET display_name = excluded.display_name, username = excluded.username, last_seen = excluded.last_seen",
        )
        .bind(channel)
        .bind(&m.chat_id)
        .bind(&m.from.user_id)
        .bind(&m.from.display_name)
        .bind(&m.from.username)
        .bind(at)
        .execute(&mut tx)
        .await?;
    }
    tx.commit().await?;
    Ok(true)
}

pub(super) async fn finish(db: &Db, channel: &str, message_id: &str, state: &str, detail: Option<&str>) -> Result<()> {
    db::query("UPDATE channel_inbound SET state = $3, detail = $4 WHERE channel = $1 AND message_id = $2")
        .bind(channel)
        .bind(message_id)
        .bind(state)
        .bind(detail)
        .execute(db)
        .await?;
    Ok(())
}

/// Inbound messages not answered yet (the daemon stopped first), oldest first.
pub(super) async fn pending(db: &Db) -> Result<Vec<InboundRow>> {
    Ok(db::query_as("SELECT * FROM channel_inbound WHERE state = 'pending' ORDER BY received_at").fetch_all(db).await?)
}

pub(super) async fn roster(db: &Db, channel: &str, chat_id: &str) -> Result<Vec<RosterEntry>> {
    Ok(db::query_as(
        "SELECT user_id, display_name, username, last_seen FROM channel_members WHERE channel = $1 AND chat_id = $2 ORDER BY display_name, user_id",
    )
    .bind(channel)
    .bind(chat_id)
    .fetch_all(db)
    .await?)
}

pub(super) async fn member(db: &Db, channel: &str, chat_id: &str, user_id: &str) -> Result<Option<RosterEntry>> {
    Ok(db::query_as(
        "SELECT user_id, display_name, username, last_seen FROM channel_members WHERE channel = $1 AND chat_id = $2 AND user_id = $3",
    )
    .bind(channel)
    .bind(chat_id)
    .bind(user_id)
    .fetch_optional(db)
    .await?)
}

pub(super) async fn conversations(db: &Db, channel: &str) -> Result<Vec<Conversation>> {
    Ok(db::query_as("SELECT * FROM channel_conversations WHERE channel = $1 ORDER BY last_at DESC LIMIT 200")
        .bind(channel)
        .fetch_all(db)
        .await?)
}

pub(super) async fn conversation(db: &Db, channel: &str, chat_id: &str) -> Result<Option<Conversation>> {
    Ok(db::query_as("SELECT * FROM channel_conversations WHERE channel = $1 AND chat_id = $2")
        .bind(channel)
        .bind(chat_id)
        .fetch_optional(db)
        .await?)
}

pub(super) struct NewOutbound<'a> {
    pub channel: &'a str,
    pub chat_id: &'a str,
    pub kind: &'a str,
    pub summary: &'a str,
    pub sent_by: &'a str,
    pub at: &'a str,
    pub outcome: &'a str,
}

pub(super) async fn sent(db: &Db, o: NewOutbound<'_>) -> Result<()> {
    db::query(
        "INSERT INTO channel_outbound (channel, chat_id, kind, summary, sent_by, at, outcome) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(o.channel)
    .bind(o.chat_id)
    .bind(o.kind)
    .bind(o.summary)
    .bind(o.sent_by)
    .bind(o.at)
    .bind(o.outcome)
    .execute(db)
    .await?;
    Ok(())
}

pub(super) async fn recent_inbound(db: &Db, channel: &str, limit: i64) -> Result<Vec<InboundRow>> {
    Ok(db::query_as("SELECT * FROM channel_inbound WHERE channel = $1 ORDER BY received_at DESC LIMIT $2")
        .bind(channel)
        .bind(limit)
        .fetch_all(db)
        .await?)
}

pub(super) async fn recent_outbound(db: &Db, channel: &str, limit: i64) -> Result<Vec<OutboundRow>> {
    Ok(db::query_as("SELECT * FROM channel_outbound WHERE channel = $1 ORDER BY id DESC LIMIT $2")
        .bind(channel)
        .bind(limit)
        .fetch_all(db)
        .await?)
}
