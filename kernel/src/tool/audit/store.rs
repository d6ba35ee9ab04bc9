//! SQL for the audit log.

use super::{AuditRecord, Queued};
use crate::db::{self, Db};
use crate::error::{Error, Result};

/// A message is cut to this many characters in the log.
const MESSAGE_LIMIT: usize = 2_000;

/// Writes a batch as one multi-row `INSERT`: one statement is one round trip to the database
/// and its own transaction (all rows or none), where BEGIN, an INSERT per row and COMMIT were
/// several. A durable call waits for this, so it is its latency. A batch holds at most
/// `super::BATCH` rows, 10 parameters each: far below SQLite's 32,766 parameters.
pub(super) async fn insert_batch(db: &Db, entries: &[Queued]) -> Result<(), Error> {
    let mut insert = db::QueryBuilder::new(
        "INSERT INTO audit (at, agent_id, session_id, caller, tool, args_digest, outcome, message, duration_us, artifact_id) ",
    );
    insert.push_values(entries, |mut row, Queued { entry: e, at, .. }| {
        let message = e.message.as_ref().map(|m| m.chars().take(MESSAGE_LIMIT).collect::<String>());
        row.push_bind(at.as_str())
            .push_bind(e.agent_id.to_string())
            .push_bind(e.session_id.map(|s| s.to_string()))
            .push_bind(e.caller.as_str())
            .push_bind(e.tool.as_str())
            .push_bind(e.args_digest.as_str())
            .push_bind(e.outcome)
            .push_bind(message)
            .push_bind(e.duration_us as i64)
            .push_bind(e.artifact_id.as_deref());
    });
    insert.build().execute(db).await?;
    Ok(())
}

/// The conditions a list or count of records is filtered by: a column and its comparison,
/// with the value (a condition whose value is `None` is left out).
pub(super) type Filters<'a> = [(&'static str, Option<&'a str>)];

/// Records newest first (`audit_agent(agent_id, id)` and `audit_tool(tool, id)` serve the
/// agent and tool filters) that meet `filters`, older than the record `before`, at most
/// `limit`.
pub(super) async fn list(
    db: &Db,
    filters: &Filters<'_>,
    tool_prefix: Option<&str>,
    before: Option<i64>,
    limit: i64,
) -> Result<Vec<AuditRecord>> {
    let mut query = db::QueryBuilder::new(
        "SELECT id, at, agent_id, session_id, caller, tool, args_digest, outcome, message, duration_us, artifact_id FROM audit",
    );
    push_where(&mut query, filters, tool_prefix, before);
    query.push(" ORDER BY id DESC LIMIT ").push_bind(limit);
    let rows = query.build().fetch_all(db).await?;
    rows.iter()
        .map(|r| {
            Ok(AuditRecord {
                id: r.try_get("id")?,
                at: r.try_get("at")?,
                agent_id: r.try_get("agent_id")?,
                session_id: r.try_get("session_id")?,
                caller: r.try_get("caller")?,
                tool: r.try_get("tool")?,
                args_digest: r.try_get("args_digest")?,
                outcome: r.try_get("outcome")?,
                message: r.try_get("message")?,
                duration_us: r.try_get("duration_us")?,
                artifact_id: r.try_get("artifact_id")?,
            })
        })
        .collect()
}

pub(super) async fn count(db: &Db, filters: &Filters<'_>, tool_prefix: Option<&str>) -> Result<u64> {
    let mut query = db::QueryBuilder::new("SELECT count(*) FROM audit");
    push_where(&mut query, filters, tool_prefix, None);
    let n: i64 = query.build_query_scalar().fetch_one(db).await?;
    Ok(n as u64)
}

/// The filters' `WHERE`, a tool-name prefix (compared as text, so `_` and `%` are no
/// wildcards) and where a page continues.
fn push_where(query: &mut db::QueryBuilder, filters: &Filters<'_>, tool_prefix: Option<&str>, before: Option<i64>) {
    let mut and = if db::push_conditions(query, filters.iter().copied()) { " AND " } else { " WHERE " };
    if let Some(prefix) = tool_prefix {
        // Binds are 64-bit; PostgreSQL's substr takes a 32-bit length.
        let length = prefix.chars().count() as i64;
        query
            .push(and)
            .push("substr(tool, 1, CAST(")
            .push_bind(length)
            .push(" AS INTEGER)) = ")
            .push_bind(prefix.to_string());
        and = " AND ";
    }
    if let Some(before) = before {
        query.push(and).push("id < ").push_bind(before);
    }
}

/// Tool calls per UTC hour since `since` (`YYYY-MM-DDTHH`), oldest first; the rows that are
/// not tool calls (a trigger's fire, a budget's pause) are left out.
pub(super) async fn calls_per_hour(db: &Db, since: &str) -> Result<Vec<(String, u64)>> {
    let rows = db::query(
        "SELECT substr(at, 1, 13) AS hour, count(*) AS calls FROM audit
         WHERE at >= $1 AND tool NOT IN ('trigger', 'budget') GROUP BY substr(at, 1, 13) ORDER BY hour",
    )
    .bind(since)
    .fetch_all(db)
    .await?;
    rows.iter().map(|r| Ok((r.try_get("hour")?, r.try_get::<i64, _>("calls")?.max(0) as u64))).collect()
}
