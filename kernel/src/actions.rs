//! The operator-action log: every change a person or an API token asks for (spawn, stop,
//! grant, a type saved, a token revoked, a schedule paused, a task reassigned, …), with who
//! asked, what it was done to and how it ended, refusals included. Agents' own tool calls are
//! the other log ([`crate::tool::audit`]).
//!
//! A record is written before the request is answered, so an acknowledged change is never
//! missing from the log. The fronts decide what a request is called (`server/src/actions.rs`);
//! this is only the store.

use serde::{Deserialize, Serialize};
use sqlx::Row;
use utoipa::{IntoParams, ToSchema};

use crate::db::{self, Db};
use crate::error::Result;
use crate::page::{Key, Page, PageRequest, bad_cursor};

/// Longer subjects and details are cut to this many characters.
const TEXT_LIMIT: usize = 2_000;

/// An action to record.
pub struct NewAction {
    /// `operator:NAME`, `token:NAME` or `cli` ([`crate::tool::Caller::audit_label`]).
    pub actor: String,
    pub action: String,
    pub subject: Option<String>,
    /// `ok`, or why it was refused.
    pub outcome: String,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ActionRecord {
    pub id: i64,
    pub at: String,
    /// Who asked: `operator:NAME` (the dashboard), `token:NAME` (the API) or `cli`.
    pub actor: String,
    /// What was asked: `agent.spawn`, `agent.stop`, `type.update`, `token.revoke`, …
    pub action: String,
    /// What it was done to: an agent, type, task or schedule id or name, a token's name.
    pub subject: Option<String>,
    /// `ok`, or the kind of refusal (`Conflict`, `NotFound`, `Unprocessable Entity`, …).
    pub outcome: String,
    /// What the operator was told: the notice on success, the message of a refusal.
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ActionFilter {
    /// Exact actor, such as `operator:alice` or `token:deploy`.
    pub actor: Option<String>,
    /// Exact action, such as `agent.stop`.
    pub action: Option<String>,
}

pub struct Actions {
    db: Db,
}

impl Actions {
    pub(crate) fn new(db: Db) -> Actions {
        Actions { db }
    }

    /// Writes one record; it is committed when this returns.
    pub async fn record(&self, new: NewAction) -> Result<()> {
        let cut = |text: Option<String>| text.map(|t| t.chars().take(TEXT_LIMIT).collect::<String>());
        sqlx::query(
            "INSERT INTO operator_actions (at, actor, action, subject, outcome, detail) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(db::now())
        .bind(&new.actor)
        .bind(&new.action)
        .bind(cut(new.subject))
        .bind(&new.outcome)
        .bind(cut(new.detail))
        .execute(self.db.pool())
        .await?;
        Ok(())
    }

    /// A page of the records matching the filter, newest first (the cursor is the last
    /// record's id).
    pub async fn list(&self, filter: &ActionFilter, page: &PageRequest) -> Result<Page<ActionRecord>> {
        let actor = filter.actor.as_deref().map(str::trim).filter(|a| !a.is_empty());
        let action = filter.action.as_deref().map(str::trim).filter(|a| !a.is_empty());
        let before = page.after(Key::Number)?.map(|c| c.parse::<i64>().map_err(|_| bad_cursor())).transpose()?;

        let mut query =
            sqlx::QueryBuilder::new("SELECT id, at, actor, action, subject, outcome, detail FROM operator_actions");
        filtered(&mut query, actor, action, before);
        query.push(" ORDER BY id DESC LIMIT ").push_bind(page.fetch_limit());
        let rows = query.build().fetch_all(self.db.pool()).await?;
        let records = rows
            .iter()
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
            .collect::<Result<Vec<_>>>()?;

        let mut count = sqlx::QueryBuilder::new("SELECT count(*) FROM operator_actions");
        filtered(&mut count, actor, action, None);
        let total: i64 = count.build_query_scalar().fetch_one(self.db.pool()).await?;
        Ok(Page::from_rows(records, page, total as u64, |r| r.id.to_string()))
    }
}

/// The `WHERE` of a list: only the filters given, so the `(actor, id)` and `(action, id)`
/// indexes serve them.
fn filtered(
    query: &mut sqlx::QueryBuilder<sqlx::Sqlite>,
    actor: Option<&str>,
    action: Option<&str>,
    before: Option<i64>,
) {
    let mut and = " WHERE ";
    for (column, value) in [("actor = ", actor), ("action = ", action)] {
        if let Some(value) = value {
            query.push(and).push(column).push_bind(value.to_string());
            and = " AND ";
        }
    }
    if let Some(before) = before {
        query.push(and).push("id < ").push_bind(before);
    }
}
