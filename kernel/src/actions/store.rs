//! SQL for the operator-action log.

use super::{ActionRecord, NewAction};
use crate::db::{self, Db};
use crate::error::Result;

/// Longer subjects and details are cut to this many characters.
const TEXT_LIMIT: usize = 2_000;

pub(super) async fn insert(db: &Db, new: NewAction) -> Result<()> {
    let cut = |text: Option<String>| text.map(|t| t.chars().take(TEXT_LIMIT).collect::<String>());
    db::query(
        "INSERT INTO operator_actions (at, actor, action, subject, outcome, detail) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(db::now())
    .bind(&new.actor)
    .bind(&new.action)
    .bind(cut(new.subject))
    .bind(&new.outcome)
    .bind(cut(new.detail))
    .execute(db)
    .await?;
    Ok(())
}

/// Records newest first (the `(actor, id)` and `(action, id)` indexes serve the filters), of `actor` and `action` when given, older than the record `before`,
/// at most `limit`.
pub(super) async fn list(
    db: &Db,
    actor: Option<&str>,
    action: Option<&str>,
    before: Option<i64>,
    limit: i64,
) -> Result<Vec<ActionRecord>> {
    let mut query =
        db::QueryBuilder::new("SELECT id, at, actor, action, subject, outcome, detail FROM operator_actions");
    db::where_filters(&mut query, &[("actor = ", actor), ("action = ", action)], before);
    query.push(" ORDER BY id DESC LIMIT ").push_bind(limit);
    let rows = query.build().fetch_all(db).await?;
    rows.iter()
        .map(|r| {
            Ok(ActionRecord {
                id: r.try_get("id")?,
                at: r.try_get("at")?,
                actor: r.try_get("actor")?,
                action: r.try_get("action")?,
                subject: r.try_get("subject")?,
                outcome: r.try_get("outcome")?,
                detail: r.try_get("detail")?,
            })
        })
        .collect()
}

pub(super) async fn count(db: &Db, actor: Option<&str>, action: Option<&str>) -> Result<u64> {
    let mut query = db::QueryBuilder::new("SELECT count(*) FROM operator_actions");
    db::where_filters(&mut query, &[("actor = ", actor), ("action = ", action)], None);
    let n: i64 = query.build_query_scalar().fetch_one(db).await?;
    Ok(n as u64)
}
