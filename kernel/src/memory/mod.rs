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

pub mod kv;
pub mod semantic;

use crate::config::Config;
use crate::tool::Registry;

pub(crate) fn register(r: &mut Registry, config: &Config) {
    kv::register(r, config);
    semantic::register(r, config);
}
