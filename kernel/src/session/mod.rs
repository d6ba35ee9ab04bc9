//! Sessions: an agent's conversations. Each remembers which tools it has loaded (spec §1).
//!
//! # Design notes
//!
//! ## Layout
//!
//! Sessions of an agent, their stored messages (`llm::Message` as JSON, in order, exactly as the
//! model saw them), their failed and interrupted turns, their compactions (`Compaction`: the view
//! later model calls start from) and the tools each has loaded or fetched; `Sessions::of_agent`;
//! `store.rs`.

mod store;

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::agent::{Agent, AgentId};
use crate::db::{self, Db};
use crate::error::{Error, Result};
use crate::llm::Message;
use crate::page::{Key, Page, PageRequest, bad_cursor};

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Session {
    pub id: Uuid,
    pub agent_id: Uuid,
    pub label: Option<String>,
    pub created_at: String,
    /// The first words of its first message, on one line (none before the first message),
    /// so a list of sessions says what each is about.
    pub preview: Option<String>,
}

/// How many characters of a session's first message name it.
pub const PREVIEW_CHARS: usize = 60;

impl Session {
    /// The preview of a session whose first stored message is `first` (as stored: JSON).
    fn preview_of(first: &str) -> Option<String> {
        let text = match serde_json::from_str::<Message>(first).ok()? {
            Message::User { content } => content,
            _ => return None,
        };
        let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
        (!line.is_empty()).then(|| crate::text::shorten(&line, PREVIEW_CHARS))
    }
}

/// The label of sessions `kennel chat` opens.
pub const TERMINAL_LABEL: &str = "kennel chat";

/// Where a session came from, written into its label when it is opened and read back from it:
/// one place for the label formats, for every front that names sessions or their senders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// No label: an operator or an API client, from before sessions were labelled.
    Unlabelled,
    /// A dashboard operator's chat.
    Operator(String),
    /// A chat in a terminal (`kennel chat`).
    Terminal,
    /// The task board waking an assignee (the task's short id).
    Task(String),
    /// A schedule's fire (its short id).
    Schedule(String),
    /// A `[[trigger]]` fired by this event type.
    Trigger(String),
    /// `agent_send` from this agent.
    Agent(String),
    /// An A2A client: its owner and context.
    A2a { owner: String, context: String },
    /// A conversation on a channel: the channel's name and the platform's chat id.
    Channel { channel: String, chat: String },
    /// An API client's session of its own key (`"session": "support-42"` in a message).
    Key(String),
    /// A label of no known form.
    Other(String),
}

impl Origin {
    /// The label a session of this origin is opened with.
    pub fn label(&self) -> Option<String> {
        Some(match self {
            Origin::Unlabelled => return None,
            Origin::Operator(name) => format!("operator {name}"),
            Origin::Terminal => TERMINAL_LABEL.into(),
            Origin::Task(id) => format!("task {id}"),
            Origin::Schedule(id) => format!("schedule {id}"),
            Origin::Trigger(event) => format!("trigger {event}"),
            Origin::Agent(name) => format!("from agent {name}"),
            Origin::A2a { owner, context } => format!("a2a:{owner}:{context}"),
            Origin::Channel { channel, chat } => format!("channel {channel}:{chat}"),
            Origin::Key(key) => format!("key {key}"),
            Origin::Other(label) => label.clone(),
        })
    }

    /// The origin a label says.
    pub fn of(label: Option<&str>) -> Origin {
        let Some(label) = label else { return Origin::Unlabelled };
        let rest = |prefix: &str| label.strip_prefix(prefix).map(str::to_string);
        if label == TERMINAL_LABEL {
            Origin::Terminal
        } else if let Some(name) = rest("operator ") {
            Origin::Operator(name)
        } else if let Some(id) = rest("task ") {
            Origin::Task(id)
        } else if let Some(id) = rest("schedule ") {
            Origin::Schedule(id)
        } else if let Some(event) = rest("trigger ") {
            Origin::Trigger(event)
        } else if let Some(name) = rest("from agent ") {
            Origin::Agent(name)
        } else if let Some(key) = rest("key ") {
            Origin::Key(key)
        } else if let Some((channel, chat)) = rest("channel ").as_deref().and_then(|c| c.split_once(':')) {
            // A channel's name has no `:`; the chat id is the rest.
            Origin::Channel { channel: channel.to_string(), chat: chat.to_string() }
        } else if let Some(a2a) = rest("a2a:") {
            // The owner is `anonymous` or `token:NAME` (a name has no `:`); the context is the rest.
            let owner_parts = if a2a.starts_with("token:") { 2 } else { 1 };
            let mut parts = a2a.splitn(owner_parts + 1, ':');
            let owner = parts.by_ref().take(owner_parts).collect::<Vec<_>>().join(":");
            Origin::A2a { owner, context: parts.next().unwrap_or_default().to_string() }
        } else {
            Origin::Other(label.to_string())
        }
    }

    /// Whether the session's user messages are the operator's own words.
    pub fn is_operator(&self) -> bool {
        matches!(self, Origin::Unlabelled | Origin::Operator(_) | Origin::Terminal)
    }
}

impl Session {
    pub fn origin(&self) -> Origin {
        Origin::of(self.label.as_deref())
    }
}

/// A message of a session with its place and time.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StoredMessage {
    pub seq: i64,
    #[serde(flatten)]
    pub message: Message,
    pub created_at: String,
}

/// A turn of a session that failed, after message `after_seq` (the one it left unanswered), or
/// a note of a turn there: `Fallback` (it moved to another model), `Recalled` (what auto-recall
/// sent the model before the message).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Failure {
    pub after_seq: i64,
    /// The error's kind (`Unavailable`, …).
    pub kind: String,
    pub message: String,
    pub created_at: String,
}

/// A compaction of a session (issue 16): from it on, the model is sent a summary in place of
/// every message up to `summary_through` and stubs in place of tool results up to
/// `stubbed_through`. The stored messages are unchanged; the chat marks the place.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Compaction {
    pub id: i64,
    pub summary: Option<String>,
    pub summary_through: i64,
    pub stubbed_through: i64,
    /// Stored messages the summary stands for (all of them, not only this compaction's).
    pub summarised: i64,
    /// Tool results sent as stubs.
    pub stubbed: i64,
    pub created_at: String,
}

impl Compaction {
    pub fn view(&self) -> crate::turn::context::View {
        crate::turn::context::View {
            id: Some(self.id),
            summary: self.summary.clone(),
            summary_through: self.summary_through,
            stubbed_through: self.stubbed_through,
        }
    }
}

pub struct Sessions {
    db: Db,
}

const MAX_LABEL: usize = 200;
/// The longest session key a client may choose (its label, `key …`, stays within [`MAX_LABEL`]).
pub const MAX_KEY: usize = 100;

impl Sessions {
    pub(crate) fn new(db: Db) -> Sessions {
        Sessions { db }
    }

    pub async fn create(&self, agent_id: AgentId, label: Option<String>) -> Result<Session> {
        if label.as_ref().is_some_and(|l| crate::text::longer_than(l, MAX_LABEL)) {
            return Err(Error::invalid(format!("a session label is at most {MAX_LABEL} characters")));
        }
        let session = Session { id: Uuid::now_v7(), agent_id, label, created_at: db::now(), preview: None };
        store::insert(&self.db, &session).await?;
        Ok(session)
    }

    pub async fn get(&self, id: Uuid) -> Result<Session> {
        store::get(&self.db, id).await?.ok_or_else(|| Error::not_found(format!("no session `{id}`")))
    }

    /// The session `id` of `agent`. Another agent's session reads as not found, so no front
    /// can continue or read one agent's conversation as another.
    pub async fn of_agent(&self, agent: &Agent, id: Uuid) -> Result<Session> {
        match store::get(&self.db, id).await? {
            Some(s) if s.agent_id == agent.id => Ok(s),
            _ => Err(Error::not_found(format!("agent `{}` has no session `{id}`", agent.name))),
        }
    }

    /// The agent's session a client names: its id (another agent's is not found), or a key of
    /// the client's choosing ([`Sessions::keyed`], opened by the first message that uses it).
    /// How the REST API's `session` and the OpenAI endpoint's `X-Kennel-Session` read.
    pub async fn named(&self, agent: &Agent, id_or_key: &str) -> Result<Session> {
        match Uuid::parse_str(id_or_key) {
            Ok(id) => self.of_agent(agent, id).await,
            Err(_) => self.keyed(agent.id, id_or_key).await,
        }
    }

    /// The agent's session of this origin, made if it does not exist yet (one conversation
    /// per sending agent, for instance).
    pub async fn labelled(&self, agent_id: AgentId, origin: &Origin) -> Result<Session> {
        let label = origin.label().unwrap_or_default();
        match store::labelled(&self.db, agent_id, &label).await? {
            Some(session) => Ok(session),
            None => self.create(agent_id, Some(label)).await,
        }
    }

    /// The agent's session of a client's own key, opened if it does not exist yet. A key is
    /// 1 to [`MAX_KEY`] characters with no control characters.
    pub async fn keyed(&self, agent_id: AgentId, key: &str) -> Result<Session> {
        if key.is_empty() || crate::text::longer_than(key, MAX_KEY) || key.chars().any(char::is_control) {
            return Err(Error::invalid(format!(
                "a session is an id or a key of 1 to {MAX_KEY} characters without control characters"
            ))
            .with_field("session"));
        }
        self.labelled(agent_id, &Origin::Key(key.to_string())).await
    }

    /// Gives the session `id` of `agent` the key `key` in place of the one it had, so a client
    /// finds it by that key from now on (the OpenAI endpoint's conversations, `chat_api`) —
    /// unless another session of the agent has the key too: then neither keeps it, and each
    /// gets a key of its own (`{parted}{its id}`), so no client's next request lands in a
    /// session it shares. Whether the session keeps `key`.
    pub async fn rekey_alone(&self, agent: AgentId, id: Uuid, key: &str, parted: &str) -> Result<bool> {
        store::relabel_alone(&self.db, agent, id, &key_label(key), &key_label(parted)).await
    }

    /// The agent's session of the key `key`, if there is one (none is opened).
    pub async fn find_keyed(&self, agent_id: AgentId, key: &str) -> Result<Option<Session>> {
        store::labelled(&self.db, agent_id, &key_label(key)).await
    }

    /// A new session of the agent under the key `key`, which the caller made unique.
    pub async fn create_keyed(&self, agent_id: AgentId, key: &str) -> Result<Session> {
        self.create(agent_id, Some(key_label(key))).await
    }

    /// The sessions opened for `origin` by any agent, oldest first (the wake-ups of a task).
    /// At most 100: a history, not an export.
    pub async fn of_origin(&self, origin: &Origin) -> Result<Vec<Session>> {
        let Some(label) = origin.label() else { return Ok(Vec::new()) };
        store::with_label(&self.db, &label, 100).await
    }

    /// A page of the agent's sessions, newest first.
    /// The agent's newest session of `origin` (an operator's own chat, to reopen it), if any.
    pub async fn latest_of(&self, agent_id: AgentId, origin: &Origin) -> Result<Option<Session>> {
        match origin.label() {
            Some(label) => store::latest_labelled(&self.db, agent_id, &label).await,
            None => Ok(None),
        }
    }

    pub async fn list(&self, agent_id: AgentId, page: &PageRequest) -> Result<Page<Session>> {
        store::list(&self.db, agent_id, page).await
    }

    pub async fn loaded_tools(&self, session: Uuid) -> Result<Vec<String>> {
        store::loaded_tools(&self.db, session).await
    }

    pub async fn load_tool(&self, session: Uuid, tool: &str) -> Result<()> {
        store::load_tool(&self.db, session, tool).await
    }

    /// Appends messages at the end of the session, all or none.
    pub async fn append(&self, session: Uuid, messages: &[Message]) -> Result<()> {
        store::append(&self.db, session, messages).await
    }

    /// The whole history of a session, oldest first (what the model is sent).
    pub async fn messages(&self, session: Uuid) -> Result<Vec<StoredMessage>> {
        store::messages(&self.db, session, 0, None).await
    }

    /// Records that a turn in `session` failed, after the session's last message.
    pub async fn record_failure(&self, session: Uuid, error: &Error) -> Result<()> {
        store::record_failure(&self.db, session, error.kind.as_str(), &error.model_text()).await
    }

    /// The session's latest compaction, if it has one.
    pub async fn latest_compaction(&self, session: Uuid) -> Result<Option<Compaction>> {
        store::latest_compaction(&self.db, session).await
    }

    /// Stores a new view of the session; `summarised` and `stubbed` count what it stands for.
    pub async fn record_compaction(
        &self,
        session: Uuid,
        view: &crate::turn::context::View,
        summarised: i64,
        stubbed: i64,
    ) -> Result<Compaction> {
        store::insert_compaction(&self.db, session, view, summarised, stubbed).await
    }

    /// Every compaction of the session, oldest first (the chat's markers).
    pub async fn compactions(&self, session: Uuid) -> Result<Vec<Compaction>> {
        store::compactions(&self.db, session).await
    }

    /// Records that a turn in `session` was cut off by a stop or crash of the daemon.
    pub async fn record_interrupted(&self, session: Uuid, message: &str) -> Result<()> {
        self.record_note(session, "Interrupted", message).await
    }

    /// Notes what happened to a turn after the session's last message, shown there in the
    /// chat (`Interrupted`, `Fallback`): kept with the failed turns.
    pub async fn record_note(&self, session: Uuid, kind: &str, message: &str) -> Result<()> {
        store::record_failure(&self.db, session, kind, message).await
    }

    /// The failed turns of a session, oldest first.
    pub async fn failures(&self, session: Uuid) -> Result<Vec<Failure>> {
        store::failures(&self.db, session).await
    }

    /// A page of a session's messages, oldest first (the cursor is the last message's `seq`).
    pub async fn messages_page(&self, session: Uuid, page: &PageRequest) -> Result<Page<StoredMessage>> {
        let after = match page.after(Key::Number)? {
            Some(c) => c.parse::<i64>().map_err(|_| bad_cursor())?,
            None => 0,
        };
        let rows = store::messages(&self.db, session, after, Some(page.fetch_limit())).await?;
        let total = store::message_count(&self.db, session).await?;
        Ok(Page::from_rows(rows, page, total, |m| m.seq.to_string()))
    }
}

/// The label of a session a client keys `key`.
fn key_label(key: &str) -> String {
    Origin::Key(key.to_string()).label().unwrap_or_default()
}

#[cfg(test)]
mod origin_tests {
    use super::Origin;

    #[test]
    fn every_origin_survives_its_label() {
        let origins = [
            Origin::Operator("ada".into()),
            Origin::Terminal,
            Origin::Task("1a2b3c4d".into()),
            Origin::Schedule("5e6f7a8b".into()),
            Origin::Trigger("inbox.new".into()),
            Origin::Agent("scout".into()),
            Origin::A2a { owner: "token:peer".into(), context: "ctx:with:colons".into() },
            Origin::A2a { owner: "anonymous".into(), context: "plain".into() },
            Origin::Channel { channel: "team".into(), chat: "-100123:thread".into() },
            Origin::Other("something else".into()),
        ];
        for origin in origins {
            assert_eq!(Origin::of(origin.label().as_deref()), origin);
        }
        assert_eq!(Origin::of(None), Origin::Unlabelled);
        assert!(Origin::Unlabelled.is_operator() && !Origin::Task("x".into()).is_operator());
    }
}
