//! Sessions: an agent's conversations. Each remembers which tools it has loaded (spec §1).

use serde::Serialize;
use sqlx::Row;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::agent::AgentId;
use crate::db::{self, Db};
use crate::error::{Error, Result};
use crate::llm::Message;

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Session {
    pub id: Uuid,
    pub agent_id: Uuid,
    pub label: Option<String>,
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
        if label.as_ref().is_some_and(|l| l.len() > MAX_LABEL) {
            return Err(Error::invalid(format!("a session label is at most {MAX_LABEL} bytes")));
        }
        let session = Session { id: Uuid::now_v7(), agent_id, label, created_at: db::now() };
        sqlx::query("INSERT INTO sessions (id, agent_id, label, created_at) VALUES (?, ?, ?, ?)")
            .bind(session.id.to_string())
            .bind(agent_id.to_string())
            .bind(&session.label)
            .bind(&session.created_at)
            .execute(&self.db)
            .await?;
        Ok(session)
    }

    pub async fn get(&self, id: Uuid) -> Result<Session> {
        let row = sqlx::query("SELECT id, agent_id, label, created_at FROM sessions WHERE id = ?")
            .bind(id.to_string())
            .fetch_optional(&self.db)
            .await?
            .ok_or_else(|| Error::not_found(format!("no session `{id}`")))?;
        session_from(&row)
    }

    /// The agent's session with this label, made if it does not exist yet (one conversation
    /// per sending agent, for instance).
    pub async fn labelled(&self, agent_id: AgentId, label: &str) -> Result<Session> {
        let row = sqlx::query(
            "SELECT id, agent_id, label, created_at FROM sessions WHERE agent_id = ? AND label = ? ORDER BY id LIMIT 1",
        )
        .bind(agent_id.to_string())
        .bind(label)
        .fetch_optional(&self.db)
        .await?;
        match row {
            Some(row) => session_from(&row),
            None => self.create(agent_id, Some(label.to_string())).await,
        }
    }

    /// The agent's sessions, newest first.
    pub async fn list(&self, agent_id: AgentId) -> Result<Vec<Session>> {
        let rows =
            sqlx::query("SELECT id, agent_id, label, created_at FROM sessions WHERE agent_id = ? ORDER BY id DESC")
                .bind(agent_id.to_string())
                .fetch_all(&self.db)
                .await?;
        rows.iter().map(session_from).collect()
    }

    pub async fn loaded_tools(&self, session: Uuid) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar("SELECT tool FROM session_loaded_tools WHERE session_id = ? ORDER BY loaded_at, tool")
            .bind(session.to_string())
            .fetch_all(&self.db)
            .await?)
    }

    pub async fn load_tool(&self, session: Uuid, tool: &str) -> Result<()> {
        sqlx::query(
            "INSERT INTO session_loaded_tools (session_id, tool, loaded_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        )
        .bind(session.to_string())
        .bind(tool)
        .bind(db::now())
        .execute(&self.db)
        .await?;
        Ok(())
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

impl Sessions {
    /// Appends messages at the end of the session, in one transaction. Each insert computes
    /// its own place, so the transaction starts by writing (a read first could not be upgraded
    /// to a write once another connection had committed: SQLITE_BUSY_SNAPSHOT).
    pub async fn append(&self, session: Uuid, messages: &[Message]) -> Result<()> {
        const INSERT: &str = "INSERT INTO session_messages (session_id, seq, message, created_at)
             SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3 FROM session_messages WHERE session_id = ?1";
        let now = db::now();
        let insert = |m: &Message| {
            sqlx::query(INSERT)
                .bind(session.to_string())
                .bind(serde_json::to_string(m).expect("messages serialise"))
                .bind(now.clone())
        };
        // One message is one statement, atomic on its own; more share a transaction.
        if let [one] = messages {
            insert(one).execute(&self.db).await?;
            return Ok(());
        }
        let mut tx = self.db.begin().await?;
        for m in messages {
            insert(m).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The whole history of a session, oldest first.
    pub async fn messages(&self, session: Uuid) -> Result<Vec<StoredMessage>> {
        let rows =
            sqlx::query("SELECT seq, message, created_at FROM session_messages WHERE session_id = ? ORDER BY seq")
                .bind(session.to_string())
                .fetch_all(&self.db)
                .await?;
        rows.iter()
            .map(|r| {
                let message = serde_json::from_str(r.try_get("message")?)
                    .map_err(|e| Error::internal(format_args!("stored message is unreadable: {e}")))?;
                Ok(StoredMessage { seq: r.try_get("seq")?, message, created_at: r.try_get("created_at")? })
            })
            .collect()
    }
}

fn session_from(row: &sqlx::sqlite::SqliteRow) -> Result<Session> {
    let parse =
        |s: &str| Uuid::parse_str(s).map_err(|e| Error::internal(format_args!("stored id `{s}` is unreadable: {e}")));
    Ok(Session {
        id: parse(row.try_get("id")?)?,
        agent_id: parse(row.try_get("agent_id")?)?,
        label: row.try_get("label")?,
        created_at: row.try_get("created_at")?,
    })
}
