//! The inbox's SQL: notes and each reader's read marks.

use super::{NewNote, Note, Urgency};
use crate::db::{self, Db};
use crate::error::Result;

/// Which notes, for whom.
pub(super) struct Query<'a> {
    /// Whose read state: `operator:NAME`, `token:NAME`, `cli`.
    pub reader: &'a str,
    pub agent: Option<&'a str>,
    pub urgency: Option<Urgency>,
    pub unread: bool,
}

/// Inserts a note unless its agent left `limit` notes of its own (`source = 'agent'`) since
/// `since`; the count and the insert hold the write lock together, so notes sent at once
/// cannot pass the limit. The note's id, or `None` when it was over the limit.
pub(super) async fn insert_within(db: &Db, n: &NewNote, at: &str, since: &str, limit: u64) -> Result<Option<i64>> {
    let mut tx = db.begin_write().await?;
    if let Some((agent, _)) = &n.agent
        && n.source == "agent"
    {
        let left: i64 =
            db::query_scalar("SELECT count(*) FROM inbox_notes WHERE agent_id = $1 AND source = 'agent' AND at >= $2")
                .bind(agent.to_string())
                .bind(since)
                .fetch_one(&mut tx)
                .await?;
        if left as u64 >= limit {
            return Ok(None);
        }
    }
    let id = insert(&mut tx, n, at).await?;
    tx.commit().await?;
    Ok(Some(id))
}

async fn insert(tx: &mut db::Tx, n: &NewNote, at: &str) -> Result<i64> {
    let (agent_id, agent_name) = match &n.agent {
        Some((id, name)) => (Some(id.to_string()), Some(name.clone())),
        None => (None, None),
    };
    Ok(db::query_scalar(
        "INSERT INTO inbox_notes (at, source, agent_id, agent_name, reason, summary, urgency) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
    )
    .bind(at)
    .bind(n.source)
    .bind(agent_id)
    .bind(agent_name)
    .bind(&n.reason)
    .bind(&n.summary)
    .bind(n.urgency.as_str())
    .fetch_one(tx)
    .await?)
}

/// Every column of a note, and whether `$1` (the reader) has read it.
const SELECT: &str = "SELECT n.*, EXISTS (SELECT 1 FROM inbox_reads r WHERE r.note_id = n.id AND r.reader = ";

fn filtered(query: &mut db::QueryBuilder, q: &Query<'_>, before: Option<i64>) {
    let mut and = " WHERE ";
    if let Some(agent) = q.agent {
        query.push(and).push("n.agent_id = ").push_bind(agent.to_string());
        and = " AND ";
    }
    if let Some(urgency) = q.urgency {
        query.push(and).push("n.urgency = ").push_bind(urgency.as_str());
        and = " AND ";
    }
    if q.unread {
        query
            .push(and)
            .push("NOT EXISTS (SELECT 1 FROM inbox_reads r WHERE r.note_id = n.id AND r.reader = ")
            .push_bind(q.reader.to_string())
            .push(")");
        and = " AND ";
    }
    if let Some(before) = before {
        query.push(and).push("n.id < ").push_bind(before);
    }
}

pub(super) async fn list(db: &Db, q: &Query<'_>, before: Option<i64>, limit: i64) -> Result<Vec<Note>> {
    let mut query = db::QueryBuilder::new(SELECT);
    query.push_bind(q.reader.to_string()).push(") AS read FROM inbox_notes n");
    filtered(&mut query, q, before);
    query.push(" ORDER BY n.id DESC LIMIT ").push_bind(limit);
    let rows = query.build().fetch_all(db).await?;
    rows.iter().map(note).collect()
}

pub(super) async fn count(db: &Db, q: &Query<'_>) -> Result<u64> {
    let mut query = db::QueryBuilder::new("SELECT count(*) FROM inbox_notes n");
    filtered(&mut query, q, None);
    let n: i64 = query.build_query_scalar().fetch_one(db).await?;
    Ok(n as u64)
}

pub(super) async fn get(db: &Db, id: i64, reader: &str) -> Result<Option<Note>> {
    let mut query = db::QueryBuilder::new(SELECT);
    query.push_bind(reader.to_string()).push(") AS read FROM inbox_notes n WHERE n.id = ").push_bind(id);
    query.build().fetch_optional(db).await?.as_ref().map(note).transpose()
}

pub(super) async fn mark_read(db: &Db, reader: &str, ids: Option<&[i64]>, at: &str) -> Result<u64> {
    let mut query = db::QueryBuilder::new("INSERT INTO inbox_reads (note_id, reader, read_at) SELECT id, ");
    query.push_bind(reader.to_string()).push(", ").push_bind(at.to_string()).push(" FROM inbox_notes");
    if let Some(ids) = ids {
        if ids.is_empty() {
            return Ok(0);
        }
        query.push(" WHERE id IN (");
        let mut list = query.separated(", ");
        for id in ids {
            list.push_bind(*id);
        }
        query.push(")");
    } else {
        // SQLite reads `FROM t ON CONFLICT` as a join's `ON` without a WHERE between them.
        query.push(" WHERE true");
    }
    query.push(" ON CONFLICT (note_id, reader) DO NOTHING");
    Ok(query.build().execute(db).await?.rows_affected())
}

pub(super) async fn set_telegram(db: &Db, id: i64, outcome: &str) -> Result<()> {
    db::query("UPDATE inbox_notes SET telegram = $2 WHERE id = $1").bind(id).bind(outcome).execute(db).await?;
    Ok(())
}

pub(super) async fn set_email(db: &Db, id: i64, outcome: &str) -> Result<()> {
    db::query("UPDATE inbox_notes SET email = $2 WHERE id = $1").bind(id).bind(outcome).execute(db).await?;
    Ok(())
}

fn note(r: &db::Row) -> Result<Note> {
    Ok(Note {
        id: r.try_get("id")?,
        at: r.try_get("at")?,
        source: r.try_get("source")?,
        agent_id: r.try_get("agent_id")?,
        agent_name: r.try_get("agent_name")?,
        reason: r.try_get("reason")?,
        summary: r.try_get("summary")?,
        urgency: Urgency::parse(r.try_get("urgency")?)?,
        telegram: r.try_get("telegram")?,
        email: r.try_get("email")?,
        read: r.try_get("read")?,
    })
}
