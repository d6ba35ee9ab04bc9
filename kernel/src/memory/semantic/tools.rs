//! Family `memory_semantic`: the semantic store's tools, thin over [`super::SemanticMemory`].
//!
//! Withdrawn on a daemon with `[proactive_memory] enabled = false`, and for an agent whose
//! memory scopes do not reach the semantic store (`memory_read` for search and stats,
//! `memory_write` for add and forget). Within the store, `semantic:GLOB` scopes limit the
//! categories a call reads or writes.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{Scope, SearchOptions, SemanticMemory};
use crate::agent::Agent;
use crate::capability::{MemoryAccess, MemoryStore};
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::family::Services;
use crate::tool::{CallContext, Needs, Registry, Tool, ToolDef};
use crate::usage::Meter;

const FAMILY: &str = "memory_semantic";

/// What the semantic tools reach, taken from the kernel's services when they are registered.
#[derive(Clone)]
pub struct Uses {
    /// `None` when the store is switched off (the tools are then excluded).
    semantic: Option<Arc<SemanticMemory>>,
    /// Bills the extractor's model calls to the agent.
    meter: Arc<Meter>,
    clock: Clock,
}

impl Uses {
    fn semantic(&self) -> Result<&SemanticMemory> {
        self.semantic.as_deref().ok_or_else(super::switched_off)
    }
}

pub(crate) fn register(r: &mut Registry, services: &Services) {
    let uses = Uses { semantic: services.shared(), meter: services.need(), clock: services.get::<Clock>().clone() };
    let config = services.config();
    let needs = Needs::switched_on(
        config.proactive_memory.enabled,
        "[proactive_memory] enabled = false in config.toml: the semantic store is switched off",
    );
    r.add_needing(SemanticSearch(uses.clone()), &needs);
    r.add_needing(SemanticAdd(uses.clone()), &needs);
    r.add_needing(SemanticForget(uses.clone()), &needs);
    r.add_needing(SemanticStats(uses.clone()), &needs);
}

/// Whether `agent` may read (or write) memories of `category`.
pub(crate) fn may(agent: &Agent, access: MemoryAccess) -> impl Fn(&str) -> bool + Sync + '_ {
    move |category| agent.manifest.capabilities.memory_allows(access, MemoryStore::Semantic, category)
}

pub struct SemanticSearch(Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SemanticSearchArgs {
    /// What to look for, in words.
    pub query: String,
    /// How many hits at most (1–50, default 5).
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u32>,
    /// Leave out memories whose confidence has decayed below this (0–1): nothing rather
    /// than noise.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_confidence: Option<f64>,
}

impl Tool for SemanticSearch {
    type Args = SemanticSearchArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "memory_semantic_search",
            FAMILY,
            "Search your long-term memory by meaning. Each hit has an id (for memory_semantic_forget), content, category, tier and confidence.",
        )
        .tags(&["memory", "semantic", "search", "recall", "remember"])
        .read_only()
    }

    fn excluded_for(&self, agent: &Agent) -> Option<String> {
        agent.manifest.capabilities.memory_withdrawn(MemoryAccess::Read, MemoryStore::Semantic)
    }

    async fn run(&self, ctx: CallContext, args: SemanticSearchArgs) -> Result<Value> {
        let options = SearchOptions::checked(args.limit.map(|l| l as usize), args.min_confidence, 5)?;
        let hits = self
            .0
            .semantic()?
            .search(ctx.agent.id, &args.query, &options, &may(&ctx.agent, MemoryAccess::Read))
            .await?;
        let note = hits.is_empty().then_some("no memory matches (above min_confidence, if given)");
        Ok(json!({ "hits": hits, "note": note }))
    }
}

pub struct SemanticAdd(Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SemanticAddArgs {
    /// The fact (or a few, one per sentence) to remember, at most 8 KiB.
    pub content: String,
}

impl Tool for SemanticAdd {
    type Args = SemanticAddArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "memory_semantic_add",
            FAMILY,
            "Record a lasting fact in long-term memory. The extractor may refine it, merge it into an existing memory, or reject it as redundant; the answer says exactly what was written, including nothing.",
        )
        .tags(&["memory", "semantic", "add", "remember", "learn"])
    }

    fn excluded_for(&self, agent: &Agent) -> Option<String> {
        agent.manifest.capabilities.memory_withdrawn(MemoryAccess::Write, MemoryStore::Semantic)
    }

    async fn run(&self, ctx: CallContext, args: SemanticAddArgs) -> Result<Value> {
        let (read, write) = (may(&ctx.agent, MemoryAccess::Read), may(&ctx.agent, MemoryAccess::Write));
        let scope = Scope { read: &read, write: &write };
        let metered =
            super::metered_for(self.0.meter.clone(), self.0.clock.clone(), ctx.agent.id, ctx.turn, ctx.session);
        let outcome = self.0.semantic()?.add(ctx.agent.id, &args.content, "tool", scope, &metered).await?;
        Ok(json!(outcome))
    }
}

pub struct SemanticForget(Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SemanticForgetArgs {
    /// The `id` of a hit of memory_semantic_search (or of a recalled memory).
    pub memory_id: String,
}

impl Tool for SemanticForget {
    type Args = SemanticForgetArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "memory_semantic_forget",
            FAMILY,
            "Withdraw a memory so it is never recalled again: the fix when a stale memory contradicts what you observe.",
        )
        .tags(&["memory", "semantic", "forget", "delete", "stale"])
    }

    fn excluded_for(&self, agent: &Agent) -> Option<String> {
        agent.manifest.capabilities.memory_withdrawn(MemoryAccess::Write, MemoryStore::Semantic)
    }

    async fn run(&self, ctx: CallContext, args: SemanticForgetArgs) -> Result<Value> {
        let id = Uuid::parse_str(args.memory_id.trim()).map_err(|_| {
            Error::invalid("memory_id is not a memory id (a UUID from a search hit)").with_field("memory_id")
        })?;
        let (read, write) = (may(&ctx.agent, MemoryAccess::Read), may(&ctx.agent, MemoryAccess::Write));
        let scope = Scope { read: &read, write: &write };
        let forgotten = self.0.semantic()?.forget(ctx.agent.id, id, &ctx.actor(), scope).await?;
        Ok(json!({ "forgotten": forgotten.id, "content": forgotten.content }))
    }
}

pub struct SemanticStats(Uses);

impl Tool for SemanticStats {
    type Args = crate::tool::NoArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "memory_semantic_stats",
            FAMILY,
            "Counts of your long-term memories by tier and category, and whether auto-recall, auto-memorize and LLM extraction are on, and which embedder is active.",
        )
        .tags(&["memory", "semantic", "stats", "status"])
        .read_only()
    }

    fn excluded_for(&self, agent: &Agent) -> Option<String> {
        agent.manifest.capabilities.memory_withdrawn(MemoryAccess::Read, MemoryStore::Semantic)
    }

    async fn run(&self, ctx: CallContext, _: crate::tool::NoArgs) -> Result<Value> {
        let stats = self.0.semantic()?.stats(ctx.agent.id, &may(&ctx.agent, MemoryAccess::Read)).await?;
        Ok(json!(stats))
    }
}
