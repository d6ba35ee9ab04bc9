//! Family `memory`: the key/value store's tools, thin over [`super::KvStore`].
//!
//! The agent layer withdraws them when the agent's memory scopes do not reach the store at
//! all (`memory_write` for `memory_store`, `memory_read` for the other two); within the
//! store, `kv:GLOB` scopes limit which keys a call may touch and which `memory_list` shows.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

use crate::agent::Agent;
use crate::capability::{MemoryAccess, MemoryStore};
use crate::error::{Error, Result};
use crate::family::Services;
use crate::memory::kv::KvStore;
use crate::tool::{CallContext, Registry, Tool, ToolDef};

const FAMILY: &str = "memory";

/// What this family's tools reach, taken from the kernel's services when they are registered.
#[derive(Clone)]
pub(super) struct Uses {
    kv: Arc<KvStore>,
}

pub(crate) fn register(r: &mut Registry, services: &Services) {
    let uses = Uses { kv: services.need() };
    r.add(MemoryStoreTool(uses.clone()));
    r.add(MemoryRecall(uses.clone()));
    r.add(MemoryList(uses.clone()));
}

/// Refuses a key outside the agent's scopes for `access`.
fn check_key(agent: &Agent, access: MemoryAccess, key: &str) -> Result<()> {
    let caps = &agent.manifest.capabilities;
    if caps.memory_allows(access, MemoryStore::Kv, key) {
        Ok(())
    } else {
        Err(caps.memory_refusal(access, MemoryStore::Kv, key))
    }
}

pub struct MemoryStoreTool(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryStoreArgs {
    /// The exact key (1–256 bytes); `memory_recall` needs the same bytes.
    pub key: String,
    /// The text to keep (at most 64 KiB).
    pub value: String,
}

impl Tool for MemoryStoreTool {
    type Args = MemoryStoreArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "memory_store",
            FAMILY,
            "Persist a value under an exact key (replacing what the key held). Recall it with memory_recall and the same key.",
        )
        .tags(&["memory", "kv", "store", "save", "remember"])
    }

    fn excluded_for(&self, agent: &Agent) -> Option<String> {
        agent.manifest.capabilities.memory_withdrawn(MemoryAccess::Write, MemoryStore::Kv)
    }

    async fn run(&self, ctx: CallContext, args: MemoryStoreArgs) -> Result<Value> {
        check_key(&ctx.agent, MemoryAccess::Write, &args.key)?;
        // A value a tainted turn wrote carries what it had read, to whoever recalls it.
        let written_by = ctx.provenance.as_ref().map(crate::approval::Provenance::labels).unwrap_or_default();
        let written = self.0.kv.store(ctx.agent.id, &args.key, &args.value, &written_by).await?;
        Ok(json!({ "key": args.key, "written": written, "bytes": args.value.len() }))
    }
}

pub struct MemoryRecall(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryRecallArgs {
    /// The exact key it was stored under.
    pub key: String,
}

impl Tool for MemoryRecall {
    type Args = MemoryRecallArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "memory_recall",
            FAMILY,
            "Fetch the value stored under an exact key. Only a byte-identical key matches; there is no search (use memory_list for the key names).",
        )
        .tags(&["memory", "kv", "recall", "get", "fetch"])
        .read_only()
    }

    fn excluded_for(&self, agent: &Agent) -> Option<String> {
        agent.manifest.capabilities.memory_withdrawn(MemoryAccess::Read, MemoryStore::Kv)
    }

    async fn run(&self, ctx: CallContext, args: MemoryRecallArgs) -> Result<Value> {
        check_key(&ctx.agent, MemoryAccess::Read, &args.key)?;
        match self.0.kv.recall(ctx.agent.id, &args.key).await? {
            Some(e) => {
                if !e.provenance.is_empty()
                    && let Some(provenance) = &ctx.provenance
                {
                    provenance.add(crate::approval::Label::new("memory", format!("memory `{}`", e.key)));
                }
                Ok(json!({ "key": e.key, "value": e.value, "updated_at": e.updated_at }))
            }
            None => Err(Error::not_found(format!(
                "no value is stored under the key `{}` (keys match byte for byte; memory_list shows the names)",
                crate::text::shorten(&args.key, 80)
            ))),
        }
    }
}

pub struct MemoryList(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryListArgs {
    /// How many names (1–1000, default 100).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<u32>,
    /// How many names to skip (default 0).
    pub offset: Option<u32>,
}

impl Tool for MemoryList {
    type Args = MemoryListArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "memory_list",
            FAMILY,
            "List the key names of the key/value memory (not their values), in byte order.",
        )
        .tags(&["memory", "kv", "list", "keys"])
        .read_only()
    }

    fn excluded_for(&self, agent: &Agent) -> Option<String> {
        agent.manifest.capabilities.memory_withdrawn(MemoryAccess::Read, MemoryStore::Kv)
    }

    async fn run(&self, ctx: CallContext, args: MemoryListArgs) -> Result<Value> {
        let limit = args.limit.unwrap_or(100);
        if !(1..=1000).contains(&limit) {
            return Err(Error::invalid("limit must be 1 to 1000").with_field("limit"));
        }
        let offset = args.offset.unwrap_or(0) as usize;
        let caps = &ctx.agent.manifest.capabilities;
        let keys = self.0.kv.keys(ctx.agent.id, |k| caps.memory_allows(MemoryAccess::Read, MemoryStore::Kv, k)).await?;
        let total = keys.len();
        let page: Vec<&String> = keys.iter().skip(offset).take(limit as usize).collect();
        let more = offset + page.len() < total;
        Ok(json!({ "keys": page, "total": total, "offset": offset, "more": more }))
    }
}
