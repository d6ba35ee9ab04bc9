//! SQL for sessions, their messages and the tools each has loaded.

use uuid::Uuid;

use super::{Compaction, Failure, Session, StoredMessage};
use crate::agent::AgentId;
use crate::db::{self, Db};
use crate::error::{Error, Result};
use crate::llm::Message;
use crate::page::{Key, Page, PageRequest};

/// A session's columns, with its first message for its preview (the primary key finds it).
const COLUMNS: &str = "SELECT id, agent_id, label, created_at, \
    (SELECT message FROM session_messages m WHERE m.session_id = sessions.id ORDER BY seq LIMIT 1) AS first_message \
    FROM sessions";

pub(super) async fn insert(db: &Db, session: &Session) -> Result<()> {
    db::query("INSERT INTO sessions (id, agent_id, label, created_at) VALUES ($1, $2, $3, $4)")
        .bind(session.id.to_string())
        .bind(session.agent_id.to_string())
        .bind(&session.label)
        .bind(&session.created_at)
        .execute(db)
        .await?;
    Ok(())
}

/// Gives the session `id` of `agent` the label `label`, unless another session of the agent
/// has it too by then: then none of them keeps it (each gets `parted` and its own id).
/// Whether the session keeps it. Set first and counted after, each on its own, so of two
/// sessions labelled alike at once, the later count sees both whatever the interleaving.
pub(super) async fn relabel_alone(db: &Db, agent: AgentId, id: Uuid, label: &str, parted: &str) -> Result<bool> {
    db::query("UPDATE sessions SET label = $2 WHERE id = $1").bind(id.to_string()).bind(label).execute(db).await?;
    let sharing: i64 = db::query_scalar("SELECT count(*) FROM sessions WHERE agent_id = $1 AND label = $2")
        .bind(agent.to_string())
        .bind(label)
        .fetch_one(db)
        .await?;
    if sharing <= 1 {
        return Ok(true);
    }
    db::query("UPDATE sessions SET label = $3 || id WHERE agent_id = $1 AND label = $2")
        .bind(agent.to_string())
        .bind(label)
        .bind(parted)
        .execute(db)
        .await?;
    Ok(false)
}

pub(super) async fn get(db: &Db, id: Uuid) -> Result<Option<Session>> {
    let row = db::query(sqlx::AssertSqlSafe(format!("{COLUMNS} WHERE id = $1")))
        .bind(id.to_string())
        .fetch_optional(db)
        .await?;
    row.as_ref().map(session_from).transpose()
}

/// The agent's oldest session with this label.
pub(super) async fn labelled(db: &Db, agent_id: AgentId, label: &str) -> Result<Option<Session>> {
    let row =
        db::query(sqlx::AssertSqlSafe(format!("{COLUMNS} WHERE agent_id = $1 AND label = $2 ORDER BY id LIMIT 1")))
            .bind(agent_id.to_string())
            .bind(label)
            .fetch_optional(db)
            .await?;
    row.as_ref().map(session_from).transpose()
}

/// The sessions of any agent with this label, oldest first, at most `limit`.
pub(super) async fn with_label(db: &Db, label: &str, limit: i64) -> Result<Vec<Session>> {
    let rows = db::query(sqlx::AssertSqlSafe(format!("{COLUMNS} WHERE label = $1 ORDER BY created_at, id LIMIT $2")))
        .bind(label)
        .bind(limit)
        .fetch_all(db)
        .await?;
    rows.iter().map(session_from).collect()
}

/// A page of the agent's sessions, newest first (the cursor is the last session's id).
pub(super) async fn list(db: &Db, agent_id: AgentId, page: &PageRequest) -> Result<Page<Session>> {
    let before = page.after(Key::Id)?;
    let rows =
        db::query(sqlx::AssertSqlSafe(format!("{COLUMNS} WHERE agent_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3")))
            .bind(agent_id.to_string())
            .bind(before.unwrap_or(db::AFTER_EVERY_KEY))
            .bind(page.fetch_limit())
            .fetch_all(db)
            .await?;
    let total: i64 = db::query_scalar("SELECT count(*) FROM sessions WHERE agent_id = $1")
        .bind(agent_id.to_string())
        .fetch_one(db)
        .await?;
    let sessions = rows.iter().map(session_from).collect::<Result<Vec<_>>>()?;
    Ok(Page::from_rows(sessions, page, total as u64, |s| s.id.to_string()))
}

/// The agent's newest session opened with `label`, if any.
pub(super) async fn latest_labelled(db: &Db, agent_id: AgentId, label: &str) -> Result<Option<Session>> {
    let row = db::query(sqlx::AssertSqlSafe(format!(
        "{COLUMNS} WHERE agent_id = $1 AND label = $2 ORDER BY id DESC LIMIT 1"
    )))
    .bind(agent_id.to_string())
    .bind(label)
    .fetch_optional(db)
    .await?;
    row.as_ref().map(session_from).transpose()
}

pub(super) async fn loaded_tools(db: &Db, session: Uuid) -> Result<Vec<String>> {
    Ok(db::query_scalar("SELECT tool FROM session_loaded_tools WHERE session_id = $1 ORDER BY loaded_at, tool")
        .bind(session.to_string())
        .fetch_all(db)
        .await?)
}

pub(super) async fn load_tool(db: &Db, session: Uuid, tool: &str) -> Result<()> {
    db::query(
        "INSERT INTO session_loaded_tools (session_id, tool, loaded_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
    )
    .bind(session.to_string())
    .bind(tool)
    .bind(db::now())
    .execute(db)
    .await?;
    Ok(())
}

/// Appends messages at the end of the session, in one transaction. Each insert computes its
/// own place, so the transaction starts by writing (a read first could not be upgraded to a
/// write once another connection had committed: SQLITE_BUSY_SNAPSHOT); on PostgreSQL it
/// first locks the session's key, so two daemons appending at once never take one place.
pub(super) async fn append(db: &Db, session: Uuid, messages: &[Message]) -> Result<()> {
    const INSERT: &str = "INSERT INTO session_messages (session_id, seq, message, created_at)
         SELECT $1, COALESCE(MAX(seq), 0) + 1, $2, $3 FROM session_messages WHERE session_id = $1";
    let now = db::now();
    let insert = |m: &Message| {
        db::query(INSERT)
            .bind(session.to_string())
            .bind(serde_json::to_string(m).expect("messages serialise"))
            .bind(now.clone())
    };
    // On SQLite one message is one statement, atomic on its own; more share a transaction.
    if let [one] = messages
        && !db.is_shared()
    {
        insert(one).execute(db).await?;
        return Ok(());
    }
    let mut tx = db.begin().await?;
    tx.lock_key(&format!("session:{session}")).await?;
    for m in messages {
        insert(m).execute(&mut tx).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Messages after `after_seq` (0: from the start), oldest first, at most `limit` (all when
/// `None`).
pub(super) async fn messages(db: &Db, session: Uuid, after_seq: i64, limit: Option<i64>) -> Result<Vec<StoredMessage>> {
    let rows = db::query(
        "SELECT seq, message, created_at FROM session_messages
         WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
    )
    .bind(session.to_string())
    .bind(after_seq)
    .bind(limit.unwrap_or(i64::MAX))
    .fetch_all(db)
    .await?;
    rows.iter()
        .map(|r| {
            let message = serde_json::from_str(r.try_get("message")?)
                .map_err(|e| Error::internal(format_args!("stored message is unreadable: {e}")))?;
            Ok(StoredMessage { seq: r.try_get("seq")?, message, created_at: r.try_get("created_at")? })
        })
        .collect()
}

pub(super) async fn message_count(db: &Db, session: Uuid) -> Result<u64> {
    let n: i64 = db::query_scalar("SELECT count(*) FROM session_messages WHERE session_id = $1")
        .bind(session.to_string())
        .fetch_one(db)
        .await?;
    Ok(n as u64)
}

fn session_from(row: &db::Row) -> Result<Session> {
    let parse =
        |s: &str| Uuid::parse_str(s).map_err(|e| Error::internal(format_args!("stored id `{s}` is unreadable: {e}")));
    Ok(Session {
        id: parse(row.try_get("id")?)?,
        agent_id: parse(row.try_get("agent_id")?)?,
        label: row.try_get("label")?,
        created_at: row.try_get("created_at")?,
        preview: row.try_get::<Option<String>, _>("first_message")?.as_deref().and_then(Session::preview_of),
    })
}

pub(super) async fn record_failure(db: &Db, session: Uuid, kind: &str, message: &str) -> Result<()> {
    db::query(
        "INSERT INTO session_failures (session_id, after_seq, kind, message, created_at)
         SELECT $1, COALESCE(MAX(seq), 0), $2, $3, $4 FROM session_messages WHERE session_id = $1",
    )
    .bind(session.to_string())
    .bind(kind)
    .bind(message)
    .bind(db::now())
    .execute(db)
    .await?;
    Ok(())
}

pub(super) async fn failures(db: &Db, session: Uuid) -> Result<Vec<Failure>> {
    let rows = db::query(
        "SELECT after_seq, kind, message, created_at FROM session_failures WHERE session_id = $1
         ORDER BY after_seq, created_at",
    )
    .bind(session.to_string())
    .fetch_all(db)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(Failure {
                after_seq: r.try_get("after_seq")?,
                kind: r.try_get("kind")?,
                message: r.try_get("message")?,
                created_at: r.try_get("created_at")?,
            })
        })
        .collect()
}

const COMPACTION_COLUMNS: &str = "SELECT id, summary, summary_through, stubbed_through, summarised, stubbed, created_at
     FROM session_compactions WHERE session_id = $1";

pub(super) async fn latest_compaction(db: &Db, session: Uuid) -> Result<Option<Compaction>> {
    let row = db::query(sqlx::AssertSqlSafe(format!("{COMPACTION_COLUMNS} ORDER BY id DESC LIMIT 1")))
        .bind(session.to_string())
        .fetch_optional(db)
        .await?;
    row.as_ref().map(compaction_from).transpose()
}

pub(super) async fn compactions(db: &Db, session: Uuid) -> Result<Vec<Compaction>> {
    let rows = db::query(sqlx::AssertSqlSafe(format!("{COMPACTION_COLUMNS} ORDER BY id")))
        .bind(session.to_string())
        .fetch_all(db)
        .await?;
    rows.iter().map(compaction_from).collect()
}

pub(super) async fn insert_compaction(
    db: &Db,
    session: Uuid,
    view: &crate::turn::context::View,
    summarised: i64,
    stubbed: i64,
) -> Result<Compaction> {
    let created_at = db::now();
    let id: i64 = db::query_scalar(
        "INSERT INTO session_compactions
             (session_id, summary, summary_through, stubbed_through, summarised, stubbed, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
    )
    .bind(session.to_string())
    .bind(&view.summary)
    .bind(view.summary_through)
    .bind(view.stubbed_through)
    .bind(summarised)
    .bind(stubbed)
    .bind(&created_at)
    .fetch_one(db)
    .await?;
    Ok(Compaction {
        id,
        summary: view.summary.clone(),
        summary_through: view.summary_through,
        stubbed_through: view.stubbed_through,
        summarised,
        stubbed,
        created_at,
    })
}

fn compaction_from(row: &db::Row) -> Result<Compaction> {
    Ok(Compaction {
        id: row.try_get("id")?,
        summary: row.try_get("summary")?,
        summary_through: row.try_get("summary_through")?,
        stubbed_through: row.try_get("stubbed_through")?,
        summarised: row.try_get("summarised")?,
        stubbed: row.try_get("stubbed")?,
        created_at: row.try_get("created_at")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two sessions of one agent given one key: the first keeps it while alone, and once the
    /// second takes it too, neither does (on SQLite, and on PostgreSQL in the second pass).
    #[tokio::test]
    async fn sessions_relabelled_alike_both_part_and_a_lone_one_keeps_its_label() {
        let dir = tempfile::tempdir().unwrap();
        let db = db::open_for_test(dir.path()).await;
        let agent = Uuid::now_v7();
        db::query(
            "INSERT INTO agents (id, name, agent_type, manifest, status, created_at, updated_at)
             VALUES ($1, 'a', 't', '{}', 'running', $2, $2)",
        )
        .bind(agent.to_string())
        .bind(db::now())
        .execute(&db)
        .await
        .unwrap();
        let session = |label: &str| Session {
            id: Uuid::now_v7(),
            agent_id: agent,
            label: Some(label.into()),
            created_at: db::now(),
            preview: None,
        };
        let (a, b) = (session("key new:a"), session("key new:b"));
        insert(&db, &a).await.unwrap();
        insert(&db, &b).await.unwrap();

        assert!(relabel_alone(&db, agent, a.id, "key k", "key parted:").await.unwrap(), "alone, it keeps the label");
        assert_eq!(labelled(&db, agent, "key k").await.unwrap().map(|s| s.id), Some(a.id));
        assert!(!relabel_alone(&db, agent, b.id, "key k", "key parted:").await.unwrap());
        assert!(labelled(&db, agent, "key k").await.unwrap().is_none(), "neither keeps it");
        for parted in [&a, &b] {
            let label = get(&db, parted.id).await.unwrap().unwrap().label;
            assert_eq!(label, Some(format!("key parted:{}", parted.id)));
        }
    }
}
