//! Memory (spec §4): two stores with two tool sets, kept apart in code as the spec keeps
//! them apart.
//!
//! - [`kv`]: family `memory` — exact keys (`memory_store`, `memory_recall`, `memory_list`);
//!   anything but a byte-identical key is "not found", never a search.
//! - [`semantic`]: family `memory_semantic` — facts found by meaning, through an embedder and
//!   an extractor, with decaying confidence, auto-recall before turns and (optionally)
//!   auto-memorize after them.
//!
//! Both are private to an agent and both answer to the agent's memory scopes
//! (`capabilities.memory_read` / `memory_write`, [`crate::capability::MemoryScope`]): a scope
//! that does not reach a store withdraws that store's tools in the agent layer of
//! availability, and within a store `kv:GLOB` limits the keys and `semantic:GLOB` the
//! categories a call may touch.
//!
//! # Design notes
//!
//! ## Layout
//!
//! Memory (spec §4), two families kept apart: `kv/` (family `memory`: `KvStore` — exact keys per
//! agent, bounds, `store.rs` `memory_kv` — and its three tools) and `semantic/` (family
//! `memory_semantic`: `SemanticMemory` — `add` through the extractor with the duplicate check,
//! `search` ranked by score × confidence, `forget`, `stats`, `list`, `import` — `embed.rs` the
//! local embedder and the provider's `/embeddings`, `index.rs` each agent's in-process index,
//! `extract.rs` the rule-based and LLM extractors, `recall.rs` auto-recall and auto-memorize,
//! `store.rs` `memories`, `tools.rs`). `llm/embeddings.rs` is the provider's
//! embeddings call.
//!
//! ## Memory
//!
//! Two stores, two families, two REST subtrees (`/api/agents/{id}/memory/kv…`,
//! `/api/agents/{id}/memory/semantic…`) and two halves of the agent's **Memory** page
//! (`/agents/{id}/memory`, linked from the agent page). They share nothing but the scopes.
//!
//! - **Scopes** (`capability.rs`): `memory_read` / `memory_write` in `[capabilities]`, absent =
//!   open. `Capabilities::memory_withdrawn(access, store)` — declared scopes none of which names
//!   the store — is the agent layer of availability for every memory tool (reads:
//!   `memory_recall`, `memory_list`, `memory_semantic_search`, `memory_semantic_stats`; writes:
//!   `memory_store`, `memory_semantic_add`, `memory_semantic_forget`), so the inspector shows
//!   why a tool is withdrawn and the gate answers `Forbidden` with the same words.
//!   `memory_allows(access, store, name)` is the per-call check: `kv:GLOB` against the key,
//!   `semantic:GLOB` against the category. `memory_list` lists only readable keys; a search
//!   returns and the stats count only readable categories; an add whose extracted category is
//!   not writable is refused whole (nothing written); forget checks the memory's category.
//!   Operators (REST, dashboard) are not bound by an agent's scopes.
//! - **Key/value**: keys 1–256 bytes compared byte for byte (`memory_recall` of anything else
//!   is `NotFound`, never a fuzzy match), values up to 64 KiB, 10,000 keys an agent
//!   (`ResourceExhausted`; count and insert under one write lock). Names only in `memory_list`
//!   (`limit` 1–1000, `offset`); values through the operator's REST and page.
//! - **The semantic store** is built only when `[proactive_memory] enabled` (the default);
//!   `enabled = false` excludes the four tools in the daemon layer, provides no
//!   `SemanticMemory` service, and every use of it is `Unavailable` (`semantic::switched_off`). Each agent's index is loaded from `memories` on first use, never at start
//!   (an idle daemon holds none): entries with content, category, base confidence, hits and
//!   last access (atomics, so a search refreshes under a read lock), and the vectors.
//! - **The local embedder** (`embed.rs`, stored as `local-v1`): lower-cased words minus English
//!   function words, Snowball stems (`rust-stemmers`), the first five letters of longer words,
//!   and adjacent stem pairs, FNV-hashed to 32 bits with weights 1, 0.4, 0.5. The index is an
//!   inverted one; ranking is BM25 (k1 1.2, b 0.75) with document frequencies from the agent's
//!   own memories. **Decision:** no synonym tables — it finds what shares words or word forms
//!   with the query. `relevance` (0–1) is the share of the query's features (weighted `1 +
//!   idf`) a memory has, so it compares across queries and small stores. A provider's dense
//!   vectors (`[proactive_memory] embeddings_provider`, OpenAI wire protocol `/embeddings`,
//!   `embeddings_model` default `text-embedding-3-small`) are searched exhaustively by cosine.
//!   Vectors are blobs beside the text (no SQLite extension); rows of another embedder are
//!   embedded again when the index loads, so switching embedders needs no migration step.
//! - **Writing** (`add`): the extractor reads the text — rules by default (sentences; openings
//!   like "remember that" dropped; questions and fragments of fewer than three content words
//!   rejected with the reason; a category by its words: `preference`, `decision`, `schedule`,
//!   `person`, else `fact`), or an LLM (`extraction_provider` + `extraction_model`: JSON facts
//!   with categories; a reply that is not that JSON fails the call, nothing written). Each
//!   candidate is compared with the agent's nearest memory among the categories the caller may
//!   *read* (so a write never reveals an unreadable memory): cosine of the features, or of the
//!   dense vectors. **Redundant** at ≥ 0.9 (dense 0.95), or ≥ 0.85 (0.9) when it has no
//!   content word the memory lacks — rejected, naming the memory, which is refreshed;
//!   **merged** at ≥ 0.85 (0.9) in the same category — written as a new memory that replaces
//!   the old (`merged_into`, kept, reported in `replaced`; the hits carry over); otherwise
//!   **added**. **Decision:** the merge bar is high because a merge withdraws a memory: "Bob's
//!   birthday is March 3" (0.75 to Alice's) is added beside "Alice's birthday is March 3", and
//!   negations (`no`, `not`, `never`) are features, so "not on Fridays" is news. The result lists
//!   `written` and `rejected` and a `summary` that says "nothing was written: …" when that is
//!   so. Writes of one agent are serialised by its index's lock; a provider's embeddings are
//!   fetched before it is taken, and a capacity or dimension problem refuses the call before
//!   anything is written.
//! - **Confidence** = base × exp(−`decay_rate` × days since last access / min(1 + log2(1 +
//!   hits), 4)), on the kernel clock. An agent's search and auto-recall refresh what they
//!   return (hits + 1, accessed now; written to the database off the call's path); an
//!   operator's look does not. **Tiers** name the place on that curve: `fresh` (0 hits),
//!   `recalled` (1–6), `core` (7+, where the formula's slowing is at its cap). Ranking is
//!   score × (0.5 + 0.5 × confidence); `min_confidence` drops decayed hits.
//! - **Forget** marks the row `forgotten_at`/`forgotten_by` and drops it from the index: no
//!   search or recall returns it again; a second forget is `NotFound`.
//! - **Auto-recall** (`auto_recall = true`) before a turn, for an agent that may call
//!   `memory_semantic_search` (grant and scope): up to eight hits above
//!   `recall_min_confidence` (0.3) and a relevance floor (0.12 local, 0.35 dense), as whole
//!   lines within `recall_max_bytes` (2048; a line that does not fit is skipped, a shorter one
//!   after it may still fit), each with its id. **Decision:** the block (header
//!   `RECALL_HEADER`) is built once per turn and sent as a message just before the turn's first
//!   message in each of its model calls; it is not stored in the history and not in the system
//!   prompt. So a memory forgotten later is never sent again, even in the same session; the
//!   history before the turn is sent unchanged from turn to turn and the system prompt stays
//!   the same, so the provider's prompt cache keeps its prefix; and this turn's block is never
//!   compacted (it counts with the fixed part of the request). What was recalled is a
//!   `Recalled` note of the session (`GET /api/sessions/{id}` lists it with the failures and
//!   fallbacks), which the chat shows folded as "Recalled from long-term memory", so every
//!   call can still be rebuilt from the session.
//! - **Auto-memorize** (`auto_memorize = false` by default): after a turn that ended with a
//!   reply, for an agent that may call `memory_semantic_add`, the extractor reads the turn —
//!   rules: only the person's first-person statements ("my …", "I prefer …", "we use …"),
//!   each written as "`CALLER` said: …" (the caller as records name it), so a later recall in
//!   another conversation does not take "my" for its own speaker's; an LLM: the message and
//!   the reply, told the speaker's name — and writes through the same duplicate check, off the
//!   turn's path, in the categories the agent may write (`source = "turn"`).
//! - The operator's list of memories pages newest first by id (ids grow with time), building
//!   only the page.
//! - Bounds: 8 KiB per add, facts clipped at 1,000 bytes at a word, 50 hits per search,
//!   1,000,000 memories an agent. The extractor's calls are metered for the agent (`semantic::metered_for`,
//!   `purpose = memory`); the embedder's are not. Both use a `Provider` of their own built from
//!   the same `[providers.NAME]`, so that provider's `max_in_flight` and last-error display do
//!   not count them.
//!
//! ## Tests
//!
//! - Memory: `tests/tests/system/memory.rs` (both stores through the invoke endpoint and the
//!   agent loop, every scope combination including `kv:*`, `enabled = false`, the honest
//!   "nothing written", merge, forget out of search and recall, recall bounded, auto-memorize,
//!   the embeddings provider over its wire protocol against the fake provider's
//!   `/v1/embeddings`, decay on a `ManualClock`, a restart); `kernel/tests/memory_quality.rs`
//!   (recall@5 on the labelled set `tests/memory-quality/`, kept at ≥ 0.7 for the local
//!   embedder; its ignored twin measures a real model through `scripts/bench-memory-quality`);
//!   `kernel/benches/memory.rs` (search at 100,000, adds at 10,000).

pub(crate) mod config;
pub mod kv;
pub mod semantic;

pub use config::ProactiveMemoryConfig;

use crate::clock::Clock;
use crate::db::Db;
use crate::family::{Family, Services};
use crate::tool::Registry;

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "memory",
    open: |s| {
        let db = s.get::<Db>().clone();
        s.provide(kv::KvStore::new(db.clone()));
        if let Some(semantic) = semantic::SemanticMemory::new(db, s.get::<Clock>().clone(), s.config())? {
            s.provide(semantic);
        }
        Ok(())
    },
    register,
};

pub(crate) fn register(r: &mut Registry, services: &Services) {
    kv::register(r, services);
    semantic::register(r, services);
}
