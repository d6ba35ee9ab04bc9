//! The key/value store (family `memory`): a value under an exact key, per agent, stored in
//! SQLite. Keys are compared byte for byte; there is no search and no fuzzy match.

mod store;
mod tools;

use serde::Serialize;
use utoipa::ToSchema;

pub(crate) use tools::register;

use crate::agent::AgentId;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::page::{Key, Page, PageRequest};

/// The longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 256;
/// The largest value, in bytes.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
/// The most keys one agent may hold.
pub const MAX_KEYS_PER_AGENT: u64 = 10_000;

/// One stored value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct KvEntry {
    pub key: String,
    pub value: String,
    pub created_at: String,
    pub updated_at: String,
    /// Written by a turn that had read these untrusted sources (`crate::approval`): a turn
    /// that recalls it reads them too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provenance: Vec<crate::approval::Label>,
}

/// What [`KvStore::store`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum KvWrite {
    /// The key was new.
    Created,
    /// The key held a value, which this one replaced.
    Replaced,
}

/// The key/value store of every agent.
pub struct KvStore {
    db: Db,
}

impl KvStore {
    pub fn new(db: Db) -> KvStore {
        KvStore { db }
    }

    /// Stores `value` under `key` for `agent`, replacing what the key held; `written_by`: the
    /// untrusted sources the writing turn had read (none: an operator, or a clean turn).
    pub async fn store(
        &self,
        agent: AgentId,
        key: &str,
        value: &str,
        written_by: &[crate::approval::Label],
    ) -> Result<KvWrite> {
        check_key(key)?;
        if value.len() > MAX_VALUE_BYTES {
            return Err(Error::invalid(format!(
                "the value is {} bytes; a value holds at most {MAX_VALUE_BYTES} bytes",
                value.len()
            ))
            .with_field("value"));
        }
        match store::upsert_within(&self.db, agent, key, value, written_by, MAX_KEYS_PER_AGENT).await? {
            Some(true) => Ok(KvWrite::Replaced),
            Some(false) => Ok(KvWrite::Created),
            None => Err(Error::new(
                crate::ErrorKind::ResourceExhausted,
                format!("this agent holds {MAX_KEYS_PER_AGENT} keys, the most it may: replace or remove one first"),
            )),
        }
    }

    /// The value under exactly `key`, or `None`.
    pub async fn recall(&self, agent: AgentId, key: &str) -> Result<Option<KvEntry>> {
        check_key(key)?;
        store::get(&self.db, agent, key).await
    }

    /// Removes `key`; whether it was there.
    pub async fn remove(&self, agent: AgentId, key: &str) -> Result<bool> {
        check_key(key)?;
        store::delete(&self.db, agent, key).await
    }

    /// Every key of `agent` that `visible` lets through, in byte order.
    pub async fn keys(&self, agent: AgentId, visible: impl Fn(&str) -> bool) -> Result<Vec<String>> {
        let mut keys = store::keys(&self.db, agent).await?;
        keys.retain(|k| visible(k));
        Ok(keys)
    }

    /// A page of entries with their values, in key order (the cursor is the position).
    pub async fn entries(&self, agent: AgentId, page: &PageRequest) -> Result<Page<KvEntry>> {
        let start = match page.after(Key::Position)? {
            Some(c) => c.parse::<i64>().map_err(|_| crate::page::bad_cursor())?,
            None => 0,
        };
        let rows = store::entries(&self.db, agent, start, page.fetch_limit()).await?;
        let total = store::count(&self.db, agent).await?;
        let mut at = start;
        let rows = rows
            .into_iter()
            .map(|e| {
                at += 1;
                (at, e)
            })
            .collect();
        Ok(Page::from_rows(rows, page, total, |(at, _)| format!("{at:06}")).map(|(_, e)| e))
    }

    /// How many keys `agent` holds.
    pub async fn count(&self, agent: AgentId) -> Result<u64> {
        store::count(&self.db, agent).await
    }
}

fn check_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(Error::invalid("the key is empty").with_field("key"));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(Error::invalid(format!(
            "the key is {} bytes; a key holds at most {MAX_KEY_BYTES} bytes",
            key.len()
        ))
        .with_field("key"));
    }
    Ok(())
}
