//! Sessions: an agent's conversations. Each remembers which tools it has loaded (spec §1).

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
}

/// A message of a session with its place and time.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StoredMessage {
    pub seq: i64,
    #[serde(flatten)]
    pub message: Message,
    pub created_at: String,
}

/// A turn of a session that failed, after message `after_seq` (the one it left unanswered).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Failure {
    pub after_seq: i64,
    /// The error's kind (`Unavailable`, …).
    pub kind: String,
    pub message: String,
    pub created_at: String,
}

pub struct Sessions {
    db: Db,
}

const MAX_LABEL: usize = 200;

impl Sessions {
    pub(crate) fn new(db: Db) -> Sessions {
        Sessions { db }
    }

    pub async fn create(&self, agent_id: AgentId, label: Option<String>) -> Result<Session> {
        if label.as_ref().is_some_and(|l| crate::text::longer_than(l, MAX_LABEL)) {
            return Err(Error::invalid(format!("a session label is at most {MAX_LABEL} characters")));
        }
        let session = Session { id: Uuid::now_v7(), agent_id, label, created_at: db::now() };
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

    /// The agent's session with this label, made if it does not exist yet (one conversation
    /// per sending agent, for instance).
    pub async fn labelled(&self, agent_id: AgentId, label: &str) -> Result<Session> {
        match store::labelled(&self.db, agent_id, label).await? {
            Some(session) => Ok(session),
            None => self.create(agent_id, Some(label.to_string())).await,
        }
    }

    /// A page of the agent's sessions, newest first.
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
