//! The operator-action log: every change a person or an API token asks for (spawn, stop,
//! grant, a type saved, a token revoked, a schedule paused, a task reassigned, …), with who
//! asked, what it was done to and how it ended, refusals included. Agents' own tool calls are
//! the other log ([`crate::tool::audit`]).
//!
//! A record is written before the request is answered. If that write fails (the database that
//! just took the change refusing the next row), the answer still goes out, since the change
//! stands either way and a new token is shown only once, and the daemon's log says which
//! record is missing. The fronts decide what a request is called (`server/src/actions.rs`);
//! this is only the store.
//!
//! # Design notes
//!
//! ## Layout
//!
//! The operator-action log: `Actions` (record, list with actor/action filters), `store.rs` (table
//! `operator_actions`). What a request is called lives in the server (`server/src/actions.rs`).

mod store;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::db::Db;
use crate::error::Result;
use crate::page::{Key, Page, PageRequest, bad_cursor};

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
        store::insert(&self.db, new).await
    }

    /// A page of the records matching the filter, newest first (the cursor is the last
    /// record's id).
    pub async fn list(&self, filter: &ActionFilter, page: &PageRequest) -> Result<Page<ActionRecord>> {
        let actor = filter.actor.as_deref().map(str::trim).filter(|a| !a.is_empty());
        let action = filter.action.as_deref().map(str::trim).filter(|a| !a.is_empty());
        let before = page.after(Key::Number)?.map(|c| c.parse::<i64>().map_err(|_| bad_cursor())).transpose()?;
        let records = store::list(&self.db, actor, action, before, page.fetch_limit()).await?;
        let total = store::count(&self.db, actor, action).await?;
        Ok(Page::from_rows(records, page, total, |r| r.id.to_string()))
    }
}
