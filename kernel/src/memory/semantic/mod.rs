//! The semantic store (family `memory_semantic`): lasting facts an agent finds again by
//! meaning, not by key.
//!
//! - **Writing** goes through the extractor ([`extract`]): a text becomes candidate facts
//!   with a category; each is compared with what the agent holds (the embedder's
//!   similarity): one that says nothing new is rejected as redundant (and the memory it
//!   repeats is refreshed), one that restates a memory of its category is merged — it
//!   replaces that memory, which is kept, marked `merged_into` — and the rest are added.
//!   The answer says exactly which of these happened, "nothing" included.
//! - **Confidence** decays with time since last access (spec §4's formula, `decay_rate`);
//!   a search or recall that returns a memory refreshes it. Ranking is the embedder's score
//!   weighted by confidence (`score × (0.5 + 0.5 × confidence)`), so a stale memory sinks
//!   without vanishing; `min_confidence` drops it. Each hit also carries a `relevance` (0–1,
//!   comparable across queries; see [`index::Scored`]), on which auto-recall keeps a floor.
//! - **Tiers** name where a memory is on the decay curve: `fresh` (never returned), `recalled`
//!   (returned 1–6 times), `core` (7 or more: the formula slows its decay no further).
//! - **Indexes** ([`index`]) are built per agent on first use, not at start, so an idle daemon
//!   holds none. Vectors are stored as blobs beside the text; a store whose embedder changed
//!   has its vectors made again when the agent's index loads.

pub mod embed;
mod extract;
pub mod index;
mod recall;
mod store;
mod tools;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio::sync::{OnceCell, RwLock};
use utoipa::ToSchema;
use uuid::Uuid;

pub use embed::Embedder;
pub use extract::{Extraction, Extractor, ExtractorCall, Metered};
pub use recall::RECALL_HEADER;

/// The answer to any use of the semantic store when `[proactive_memory] enabled = false`.
pub fn switched_off() -> crate::Error {
    crate::Error::unavailable("the semantic store is switched off: [proactive_memory] enabled = false in config.toml")
}
pub(crate) use recall::{memorize, recall_block};
pub(crate) use tools::register;

use self::index::{AgentIndex, Entry};
use crate::agent::AgentId;
use crate::clock::Clock;
use crate::config::Config;
use crate::db::{self, Db};
use crate::error::{Error, Result};
use crate::memory::ProactiveMemoryConfig;
use crate::page::{Key, Page, PageRequest};

/// The longest text one `memory_semantic_add` takes, in bytes.
pub const MAX_INPUT_BYTES: usize = 8 * 1024;
/// The most memories one agent may hold (live ones).
pub const MAX_MEMORIES_PER_AGENT: usize = 1_000_000;
/// The most hits one search returns.
pub const MAX_LIMIT: usize = 50;

/// Where a memory is on the decay curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Never returned by a search or recall since it was written.
    Fresh,
    /// Returned 1–6 times.
    Recalled,
    /// Returned 7 times or more: its decay is as slow as the formula makes it.
    Core,
}

impl Tier {
    /// The tier's name as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Fresh => "fresh",
            Tier::Recalled => "recalled",
            Tier::Core => "core",
        }
    }

    fn of(hits: u32) -> Tier {
        match hits {
            0 => Tier::Fresh,
            1..=6 => Tier::Recalled,
            _ => Tier::Core,
        }
    }
}

/// A memory as searches, lists and the dashboard show it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Memory {
    pub id: Uuid,
    pub content: String,
    pub category: String,
    pub tier: Tier,
    /// 0–1: its base confidence decayed by the time since it was last returned.
    pub confidence: f64,
    /// How well it matches the query (0–1); absent outside a search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relevance: Option<f64>,
    pub hits: u32,
    /// `tool` (memory_semantic_add), `turn` (auto-memorize) or `operator`.
    pub source: String,
    pub created_at: String,
    pub last_accessed_at: String,
}

/// What a search asks for.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    pub limit: usize,
    /// Hits whose decayed confidence is below this are left out.
    pub min_confidence: f64,
    /// Hits less relevant than this are left out (auto-recall's floor against noise).
    pub min_relevance: f64,
    /// Whether returning a hit refreshes it (an agent's search and recall do; an
    /// operator's look does not change what the agent will remember).
    pub refresh: bool,
}

impl SearchOptions {
    /// A search as a caller asks for it: `limit` 1–50 (default `default_limit`),
    /// `min_confidence` 0–1 (default 0). The one check of both, for the tool and the
    /// operator's API and page.
    pub fn checked(limit: Option<usize>, min_confidence: Option<f64>, default_limit: usize) -> Result<SearchOptions> {
        let limit = limit.unwrap_or(default_limit);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(Error::invalid(format!("limit must be 1 to {MAX_LIMIT}")).with_field("limit"));
        }
        let min_confidence = min_confidence.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&min_confidence) {
            return Err(Error::invalid("min_confidence must be from 0 to 1").with_field("min_confidence"));
        }
        Ok(SearchOptions { limit, min_confidence, ..SearchOptions::default() })
    }

    /// An operator's search (the API's, the dashboard's): bounded like the tool's, and
    /// refreshing nothing, so looking does not change what the agent will remember.
    pub fn for_operator(limit: Option<usize>, min_confidence: Option<f64>) -> Result<SearchOptions> {
        Ok(SearchOptions { refresh: false, ..SearchOptions::checked(limit, min_confidence, 10)? })
    }
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions { limit: 5, min_confidence: 0.0, min_relevance: 0.0, refresh: true }
    }
}

/// How a candidate fact was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum WriteAction {
    Added,
    /// It restated a memory of its category and replaced it.
    Merged,
}

/// A fact that was written.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Written {
    pub id: Uuid,
    pub content: String,
    pub category: String,
    pub action: WriteAction,
    /// The memories it replaced (a merge), kept as they were and no longer recalled.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replaced: Vec<Replaced>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Replaced {
    pub id: Uuid,
    pub content: String,
}

/// A piece of the input that was not written, and why.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Rejected {
    pub content: String,
    pub reason: String,
    /// The memory that already says it (a redundant fact).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub existing: Option<Uuid>,
}

/// What `memory_semantic_add` did: exactly what was written, and what was not.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct AddOutcome {
    pub written: Vec<Written>,
    pub rejected: Vec<Rejected>,
    /// Which extractor read the text.
    pub extractor: String,
    /// One sentence: what was written, "nothing" included.
    pub summary: String,
}

/// Counts and switches of one agent's semantic store.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Stats {
    /// Whether the store exists on this daemon (`[proactive_memory] enabled`).
    pub enabled: bool,
    /// Live memories (recalled and searched).
    pub memories: u64,
    pub by_tier: BTreeMap<String, u64>,
    pub by_category: BTreeMap<String, u64>,
    /// Withdrawn by `memory_semantic_forget` (or an operator).
    pub forgotten: u64,
    /// Replaced by a later memory that restated them.
    pub merged: u64,
    pub auto_recall: bool,
    pub auto_memorize: bool,
    /// Whether an LLM extracts facts (else the rule-based extractor).
    pub llm_extraction: bool,
    pub extractor: String,
    pub embedder: String,
}

impl Stats {
    /// What the stats say on a daemon whose store is switched off.
    pub fn switched_off() -> Stats {
        Stats {
            enabled: false,
            memories: 0,
            by_tier: BTreeMap::new(),
            by_category: BTreeMap::new(),
            forgotten: 0,
            merged: 0,
            auto_recall: false,
            auto_memorize: false,
            llm_extraction: false,
            extractor: "none: [proactive_memory] enabled = false".into(),
            embedder: "none: [proactive_memory] enabled = false".into(),
        }
    }
}

/// A predicate over categories.
pub type Categories<'a> = &'a (dyn Fn(&str) -> bool + Sync);

fn every_category(_: &str) -> bool {
    true
}

/// What a caller may touch in the semantic store: the categories it may read and write (an
/// agent's `semantic:` scopes; everything for an operator).
#[derive(Clone, Copy)]
pub struct Scope<'a> {
    pub read: Categories<'a>,
    pub write: Categories<'a>,
}

impl Scope<'static> {
    /// An operator's: people are not bound by an agent's scopes.
    pub fn everything() -> Scope<'static> {
        Scope { read: &every_category, write: &every_category }
    }
}

/// Similarities at which a candidate repeats or restates a memory, per kind of embedder:
/// (redundant, merge). The local embedder's lexical cosine runs lower for the same
/// sentence reworded than a model's.
/// A merge replaces a memory, so it asks for more than a shared subject: "Bob's birthday is
/// March 3" must not replace "Alice's birthday is March 3" (0.75 with the local embedder).
fn thresholds(sparse: bool) -> (f32, f32) {
    if sparse { (0.9, 0.85) } else { (0.95, 0.9) }
}

/// Relevance below which auto-recall adds nothing, per kind of embedder.
fn recall_floor(sparse: bool) -> f64 {
    if sparse { 0.12 } else { 0.35 }
}

type Shared = Arc<RwLock<AgentIndex>>;

/// Every agent's semantic store.
pub struct SemanticMemory {
    db: Db,
    clock: Clock,
    config: ProactiveMemoryConfig,
    embedder: Embedder,
    extractor: Extractor,
    indexes: Mutex<HashMap<AgentId, Arc<OnceCell<Shared>>>>,
}

/// An agent's index changed ahead of a commit: dropped from the cache (so the next use loads
/// it from the database) unless [`Unsaved::saved`] says the commit happened.
struct Unsaved<'a> {
    indexes: &'a Mutex<HashMap<AgentId, Arc<OnceCell<Shared>>>>,
    agent: AgentId,
    saved: bool,
}

impl Unsaved<'_> {
    fn saved(mut self) {
        self.saved = true;
    }
}

impl Drop for Unsaved<'_> {
    fn drop(&mut self) {
        if !self.saved {
            tracing::warn!(agent = %self.agent, "a memory add did not commit; the agent's index is reloaded");
            self.indexes.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.agent);
        }
    }
}

impl SemanticMemory {
    /// The store `config` describes, or `None` when `[proactive_memory] enabled = false`.
    pub fn new(db: Db, clock: Clock, config: &Config) -> Result<Option<SemanticMemory>> {
        let memory = &config.proactive_memory;
        if !memory.enabled {
            return Ok(None);
        }
        let provider = |name: &str| {
            let p = config.providers.get(name).ok_or_else(|| {
                Error::unavailable(format!(
                    "[proactive_memory] names provider `{name}`, which config.toml does not define"
                ))
            })?;
            crate::llm::Provider::new(name, p.clone())
        };
        let embedder = match &memory.embeddings_provider {
            Some(name) => Embedder::Provider {
                provider: Box::new(provider(name)?),
                model: memory.embeddings_model.clone().unwrap_or_else(|| embed::DEFAULT_EMBEDDINGS_MODEL.into()),
            },
            None => Embedder::Local,
        };
        let extractor = match &memory.extraction_provider {
            Some(name) => Extractor::Llm {
                provider: Box::new(provider(name)?),
                model: memory.extraction_model.clone().ok_or_else(|| {
                    Error::unavailable(
                        "[proactive_memory] extraction_provider needs extraction_model (the chat model to ask)",
                    )
                })?,
            },
            None => Extractor::Rules,
        };
        Ok(Some(SemanticMemory { db, clock, config: memory.clone(), embedder, extractor, indexes: Mutex::default() }))
    }

    pub fn config(&self) -> &ProactiveMemoryConfig {
        &self.config
    }

    pub fn embedder(&self) -> &Embedder {
        &self.embedder
    }

    /// `agent`'s index, loaded from the database on first use.
    async fn index(&self, agent: AgentId) -> Result<Shared> {
        let cell = self.indexes.lock().expect("indexes lock").entry(agent).or_default().clone();
        cell.get_or_try_init(|| self.load(agent)).await.cloned()
    }

    async fn load(&self, agent: AgentId) -> Result<Shared> {
        let name = self.embedder.name();
        let sparse = self.embedder.is_sparse();
        let mut index = AgentIndex::new(sparse);
        // Rows another embedder made (or whose vector does not fit) are embedded again, in
        // one batch after the others are in.
        let mut stale: Vec<Entry> = Vec::new();
        store::each_live(&self.db, agent, |row| {
            let entry = Entry::new(row.id, &row.content, &row.category, &row.source, &row.created_at).with_use(
                row.confidence as f32,
                row.hits.max(0) as u32,
                seconds(&row.accessed_at),
            );
            match (row.embedder == name).then(|| embed::Vector::from_bytes(sparse, &row.embedding)).flatten() {
                Some(vector) if index.fits(&vector) => index.insert(entry, vector).map_err(Error::internal),
                _ => {
                    stale.push(entry);
                    Ok(())
                }
            }
        })
        .await?;
        if !stale.is_empty() {
            tracing::info!(%agent, memories = stale.len(), embedder = %name, "embedding memories again for a changed embedder");
            let texts: Vec<&str> = stale.iter().map(|e| e.content.as_ref()).collect();
            let mut fresh = self.embedder.embed(&texts).await?;
            if fresh.iter().any(|v| !index.fits(v)) {
                // The model behind the name changed its dimensions: every vector is made again.
                let all: Vec<Entry> = index.into_entries().chain(stale).collect();
                let texts: Vec<&str> = all.iter().map(|e| e.content.as_ref()).collect();
                fresh = self.embedder.embed(&texts).await?;
                stale = all;
                index = AgentIndex::new(sparse);
            }
            let updates: Vec<(Uuid, Vec<u8>)> = stale.iter().zip(&fresh).map(|(e, v)| (e.id, v.to_bytes())).collect();
            store::set_embeddings(&self.db, &name, &updates).await?;
            for (entry, vector) in stale.into_iter().zip(fresh) {
                index.insert(entry, vector).map_err(Error::internal)?;
            }
        }
        index.shrink();
        Ok(Arc::new(RwLock::new(index)))
    }

    /// Confidence of `entry` now: `base × exp(−rate × days / min(1 + log2(1 + hits), 4))`.
    fn confidence(&self, entry: &Entry, now: i64) -> f64 {
        let days = (now - entry.accessed.load(Ordering::Relaxed)).max(0) as f64 / 86_400.0;
        let hits = f64::from(entry.hits.load(Ordering::Relaxed));
        let slowing = (1.0 + (1.0 + hits).log2()).min(4.0);
        f64::from(entry.base) * (-self.config.decay_rate * days / slowing).exp()
    }

    fn memory(&self, entry: &Entry, now: i64, relevance: Option<f64>) -> Memory {
        let hits = entry.hits.load(Ordering::Relaxed);
        Memory {
            id: entry.id,
            content: entry.content.to_string(),
            category: entry.category.to_string(),
            tier: Tier::of(hits),
            confidence: round(self.confidence(entry, now)),
            relevance: relevance.map(round),
            hits,
            source: entry.source.to_string(),
            created_at: entry.created_at.to_string(),
            last_accessed_at: db::timestamp(
                chrono::DateTime::from_timestamp(entry.accessed.load(Ordering::Relaxed), 0).unwrap_or_default(),
            ),
        }
    }

    fn now(&self) -> i64 {
        self.clock.now().timestamp()
    }

    /// The memories of `agent` that best match `query`, among the categories `readable`
    /// lets through.
    pub async fn search(
        &self,
        agent: AgentId,
        query: &str,
        options: &SearchOptions,
        readable: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<Vec<Memory>> {
        if crate::text::is_blank(query) {
            return Err(Error::invalid("the query is empty").with_field("query"));
        }
        let limit = options.limit.clamp(1, MAX_LIMIT);
        let vector = self.embedder.embed(&[query]).await?.remove(0);
        let index = self.index(agent).await?;
        let index = index.read().await;
        let now = self.now();
        // Confidence reorders the best matches, so look a little past the limit.
        let mut ranked: Vec<(f64, u32, f64)> = index
            .search(&vector, limit * 3 + 10, |e| readable(&e.category))
            .into_iter()
            .filter(|s| f64::from(s.relevance) >= options.min_relevance)
            .filter_map(|s| {
                let confidence = self.confidence(index.entry(s.doc), now);
                let rank = f64::from(s.score) * (0.5 + 0.5 * confidence);
                (confidence >= options.min_confidence).then_some((rank, s.doc, f64::from(s.relevance)))
            })
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        ranked.truncate(limit);
        let hits: Vec<Memory> =
            ranked.iter().map(|&(_, doc, rel)| self.memory(index.entry(doc), now, Some(rel))).collect();
        if options.refresh && !ranked.is_empty() {
            let refreshed: Vec<Uuid> = ranked
                .iter()
                .map(|&(_, doc, _)| {
                    let entry = index.entry(doc);
                    index::refresh(entry, now);
                    entry.id
                })
                .collect();
            self.persist_refresh(refreshed, now);
        }
        Ok(hits)
    }

    /// Writes refreshed hits off the caller's path: bookkeeping a kill may lose, like the
    /// meter's rows, never a promise made to a caller.
    /// Each write adds one hit and moves the last access only forward, so writes that land
    /// out of order still add up.
    fn persist_refresh(&self, refreshed: Vec<Uuid>, now: i64) {
        let db = self.db.clone();
        let at = db::timestamp(chrono::DateTime::from_timestamp(now, 0).unwrap_or_default());
        tokio::spawn(async move {
            if let Err(e) = store::refresh(&db, &refreshed, &at).await {
                tracing::warn!(error = %e, "recording which memories a search returned failed");
            }
        });
    }

    /// Reads `text` with the extractor and writes what is new (see the module's doc). A
    /// candidate in a category `scope` may not write fails the whole call before anything is
    /// written; memories it may not read are neither compared with nor shown.
    pub async fn add(
        &self,
        agent: AgentId,
        text: &str,
        source: &str,
        scope: Scope<'_>,
        metered: extract::Metered<'_>,
    ) -> Result<AddOutcome> {
        if crate::text::is_blank(text) {
            return Err(Error::invalid("the content is empty").with_field("content"));
        }
        if text.len() > MAX_INPUT_BYTES {
            return Err(Error::invalid(format!(
                "the content is {} bytes; one call takes at most {MAX_INPUT_BYTES} bytes (add long notes fact by fact)",
                text.len()
            ))
            .with_field("content"));
        }
        let extraction = self.extractor.facts(text, metered).await?;
        if let Some(c) = extraction.candidates.iter().find(|c| !(scope.write)(&c.category)) {
            return Err(Error::forbidden(format!(
                "the extractor filed this under the category `{}`, which is outside this agent's capabilities.memory_write; nothing was written",
                c.category
            )));
        }
        self.write(agent, extraction, source, scope).await
    }

    /// Writes the facts of a finished turn (auto-memorize), leaving out categories `scope`
    /// may not write. `speaker` (who said them, as records name callers) goes before each fact
    /// the rules keep, so a later recall does not take "my" for anyone else's.
    pub async fn memorize_turn(
        &self,
        agent: AgentId,
        (speaker, message, reply): (&str, &str, &str),
        scope: Scope<'_>,
        metered: extract::Metered<'_>,
    ) -> Result<AddOutcome> {
        let mut extraction = self.extractor.from_turn(speaker, message, reply, metered).await?;
        extraction.candidates.retain(|c| (scope.write)(&c.category));
        extraction.dropped.clear();
        self.write(agent, extraction, "turn", scope).await
    }

    async fn write(
        &self,
        agent: AgentId,
        extraction: Extraction,
        source: &str,
        scope: Scope<'_>,
    ) -> Result<AddOutcome> {
        // Embedded before the agent's lock is taken: a slow provider holds up no search.
        let texts: Vec<&str> = extraction.candidates.iter().map(|c| c.content.as_str()).collect();
        let vectors = self.embedder.embed(&texts).await?;
        let index = self.index(agent).await?;
        let mut index = index.write().await;
        if index.len() + extraction.candidates.len() > MAX_MEMORIES_PER_AGENT {
            return Err(Error::new(
                crate::ErrorKind::ResourceExhausted,
                format!(
                    "this agent holds {} memories and may hold {MAX_MEMORIES_PER_AGENT}: forget some first; nothing was written",
                    index.len()
                ),
            ));
        }
        if let Some(v) = vectors.iter().find(|v| !index.fits(v)) {
            return Err(Error::failed(format!(
                "the embeddings provider answered with {} dimensions, other than the store's; nothing was written (the store is embedded again when the daemon restarts)",
                v.dims()
            )));
        }
        let now = self.now();
        let at = db::timestamp(self.clock.now());
        let mut outcome = AddOutcome {
            written: Vec::new(),
            rejected: extraction
                .dropped
                .into_iter()
                .map(|d| Rejected { content: d.text, reason: d.reason, existing: None })
                .collect(),
            extractor: self.extractor.describe(),
            summary: String::new(),
        };
        let (redundant_at, merge_at) = thresholds(self.embedder.is_sparse());
        let embedder = self.embedder.name();
        // Every candidate is written in one transaction: an add is whole or not at all. The
        // index follows each write at once (a later candidate is compared with an earlier
        // one); until the commit, `unsaved` drops it if the add fails or is abandoned, so the
        // next use reloads it from the database.
        let mut tx = self.db.begin().await?;
        let unsaved = Unsaved { indexes: &self.indexes, agent, saved: false };
        for (candidate, vector) in extraction.candidates.into_iter().zip(vectors) {
            let nearest = self.nearest(&index, &vector, scope.read);
            if let Some((doc, similarity)) = nearest {
                let existing = index.entry(doc);
                let nothing_new = stems_within(&candidate.content, &existing.content);
                if similarity >= redundant_at || (nothing_new && similarity >= merge_at) {
                    index::refresh(existing, now);
                    self.persist_refresh(vec![existing.id], now);
                    outcome.rejected.push(Rejected {
                        reason: format!("redundant: memory {} already says this", existing.id),
                        existing: Some(existing.id),
                        content: candidate.content,
                    });
                    continue;
                }
            }
            let merge = nearest.filter(|&(doc, similarity)| {
                similarity >= merge_at && *index.entry(doc).category == *candidate.category
            });
            let replaced: Vec<Replaced> = merge
                .map(|(doc, _)| index.entry(doc))
                .map(|e| Replaced { id: e.id, content: e.content.to_string() })
                .into_iter()
                .collect();
            let hits = merge.map_or(0, |(doc, _)| index.entry(doc).hits.load(Ordering::Relaxed));
            let id = Uuid::now_v7();
            let replaces: Vec<Uuid> = replaced.iter().map(|r| r.id).collect();
            let new = store::NewMemory {
                id,
                agent,
                content: &candidate.content,
                category: &candidate.category,
                source,
                confidence: 1.0,
                hits: i64::from(hits),
                at: &at,
                embedder: &embedder,
                embedding: &vector.to_bytes(),
            };
            store::insert(&mut tx, new, &replaces).await?;
            for old in &replaces {
                index.remove(*old);
            }
            let entry = Entry::new(id, &candidate.content, &candidate.category, source, &at).with_use(1.0, hits, now);
            index.insert(entry, vector).map_err(Error::internal)?;
            outcome.written.push(Written {
                id,
                content: candidate.content,
                category: candidate.category,
                action: if replaced.is_empty() { WriteAction::Added } else { WriteAction::Merged },
                replaced,
            });
        }
        tx.commit().await?;
        unsaved.saved();
        if index.wants_compaction() {
            let sparse = self.embedder.is_sparse();
            let old = std::mem::replace(&mut *index, AgentIndex::new(sparse));
            *index = old.compacted();
        }
        outcome.summary = summary(&outcome);
        Ok(outcome)
    }

    /// Writes `facts` (content, category) as they are — no extractor, no duplicate check —
    /// in one transaction: restoring a store from an export, and the benchmarks' fixtures.
    /// How many were written.
    pub async fn import(&self, agent: AgentId, facts: &[(&str, &str)], source: &str) -> Result<usize> {
        let index = self.index(agent).await?;
        let mut index = index.write().await;
        if index.len() + facts.len() > MAX_MEMORIES_PER_AGENT {
            return Err(Error::new(
                crate::ErrorKind::ResourceExhausted,
                format!("this agent may hold {MAX_MEMORIES_PER_AGENT} memories; the import would go over"),
            ));
        }
        let texts: Vec<&str> = facts.iter().map(|(content, _)| *content).collect();
        let vectors = self.embedder.embed(&texts).await?;
        let at = db::timestamp(self.clock.now());
        let now = self.now();
        let embedder = self.embedder.name();
        let rows: Vec<(Uuid, Vec<u8>)> = vectors.iter().map(|v| (Uuid::now_v7(), v.to_bytes())).collect();
        let new: Vec<store::NewMemory<'_>> = facts
            .iter()
            .zip(&rows)
            .map(|(&(content, category), (id, bytes))| store::NewMemory {
                id: *id,
                agent,
                content,
                category,
                source,
                confidence: 1.0,
                hits: 0,
                at: &at,
                embedder: &embedder,
                embedding: bytes,
            })
            .collect();
        store::insert_all(&self.db, &new).await?;
        for ((&(content, category), (id, _)), vector) in facts.iter().zip(&rows).zip(vectors) {
            let entry = Entry::new(*id, content, category, source, &at).with_use(1.0, 0, now);
            index.insert(entry, vector).map_err(Error::internal)?;
        }
        Ok(facts.len())
    }

    /// The live memory most like `vector` among those `readable` lets through, and how alike
    /// they are (0–1). What the caller may not read is never compared, so a write cannot be
    /// used to learn what an unreadable memory says.
    fn nearest(&self, index: &AgentIndex, vector: &embed::Vector, readable: Categories<'_>) -> Option<(u32, f32)> {
        let candidates = index.search(vector, 5, |e| readable(&e.category));
        match vector {
            // The index's BM25 finds the candidates; the cosine of the two texts' features
            // says how alike they are, the same whichever is the longer.
            embed::Vector::Sparse(features) => candidates
                .into_iter()
                .map(|s| (s.doc, cosine(features, &embed::features(&index.entry(s.doc).content))))
                .max_by(|a, b| a.1.total_cmp(&b.1)),
            embed::Vector::Dense(_) => candidates.first().map(|s| (s.doc, s.relevance)),
        }
    }

    /// Withdraws memory `id` of `agent` so nothing recalls it again, if `scope` may write
    /// its category. The answer shows its content only where `scope` may read it.
    pub async fn forget(&self, agent: AgentId, id: Uuid, by: &str, scope: Scope<'_>) -> Result<Memory> {
        let index = self.index(agent).await?;
        let mut index = index.write().await;
        let now = self.now();
        let Some(entry) = index.find(id) else {
            return Err(Error::not_found(format!(
                "this agent has no memory `{id}` to forget (it may already be forgotten, or merged into a later one)"
            )));
        };
        if !(scope.write)(&entry.category) {
            return Err(Error::forbidden(format!(
                "memory `{id}` is in the category `{}`, outside this agent's capabilities.memory_write",
                entry.category
            )));
        }
        let mut memory = self.memory(entry, now, None);
        if !(scope.read)(&entry.category) {
            memory.content = "(not shown: the category is outside capabilities.memory_read)".into();
        }
        if !store::forget(&self.db, agent, id, by, &db::timestamp(self.clock.now())).await? {
            return Err(Error::not_found(format!("memory `{id}` was withdrawn meanwhile")));
        }
        index.remove(id);
        Ok(memory)
    }

    /// Counts by tier and category (of the categories `readable` lets through) and the
    /// switches.
    pub async fn stats(&self, agent: AgentId, readable: &(dyn Fn(&str) -> bool + Sync)) -> Result<Stats> {
        let index = self.index(agent).await?;
        let (forgotten, merged) = store::withdrawn_counts(&self.db, agent)
            .await?
            .into_iter()
            .filter(|(category, ..)| readable(category))
            .fold((0, 0), |(f, m), (_, forgotten, merged)| (f + forgotten, m + merged));
        let index = index.read().await;
        let mut by_tier = BTreeMap::new();
        let mut by_category = BTreeMap::new();
        let mut memories = 0;
        for e in index.entries().filter(|e| readable(&e.category)) {
            memories += 1;
            *by_tier.entry(Tier::of(e.hits.load(Ordering::Relaxed)).as_str().to_string()).or_default() += 1;
            *by_category.entry(e.category.to_string()).or_default() += 1;
        }
        Ok(Stats {
            enabled: true,
            memories,
            by_tier,
            by_category,
            forgotten,
            merged,
            auto_recall: self.config.auto_recall,
            auto_memorize: self.config.auto_memorize,
            llm_extraction: self.extractor.is_llm(),
            extractor: self.extractor.describe(),
            embedder: self.embedder.describe(),
        })
    }

    /// A page of `agent`'s live memories, newest first (the cursor is the last id shown:
    /// ids grow with time), for operators: looking does not refresh them.
    pub async fn list(&self, agent: AgentId, page: &PageRequest) -> Result<Page<Memory>> {
        let after = match page.after(Key::Id)? {
            Some(c) => Some(Uuid::parse_str(c).map_err(|_| crate::page::bad_cursor())?),
            None => None,
        };
        let index = self.index(agent).await?;
        let index = index.read().await;
        let now = self.now();
        let rows: Vec<Memory> = index
            .entries_newest_first()
            .filter(|e| after.is_none_or(|a| e.id < a))
            .take(page.fetch_limit() as usize)
            .map(|e| self.memory(e, now, None))
            .collect();
        Ok(Page::from_rows(rows, page, index.len() as u64, |m| m.id.to_string()))
    }

    /// How many bytes `agent`'s loaded index holds (0 when not loaded), for benchmarks.
    pub async fn index_bytes(&self, agent: AgentId) -> usize {
        let cell = self.indexes.lock().expect("indexes lock").get(&agent).cloned();
        match cell.and_then(|c| c.get().cloned()) {
            Some(index) => index.read().await.heap_bytes(),
            None => 0,
        }
    }
}

/// Cosine of two sparse feature vectors (each sorted by feature).
fn cosine(a: &[(u32, f32)], b: &[(u32, f32)]) -> f32 {
    let (mut i, mut j, mut dot) = (0, 0, 0.0f32);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                dot += a[i].1 * b[j].1;
                i += 1;
                j += 1;
            }
        }
    }
    let norm = |v: &[(u32, f32)]| v.iter().map(|(_, w)| w * w).sum::<f32>().sqrt();
    let denominator = norm(a) * norm(b);
    if denominator > 0.0 { dot / denominator } else { 0.0 }
}

/// Whether every content word of `new` is already in `old`: it adds nothing.
fn stems_within(new: &str, old: &str) -> bool {
    let old: HashSet<String> = embed::stems(old).into_iter().collect();
    embed::stems(new).iter().all(|s| old.contains(s))
}

fn summary(outcome: &AddOutcome) -> String {
    let added = outcome.written.iter().filter(|w| w.action == WriteAction::Added).count();
    let merged = outcome.written.len() - added;
    if outcome.written.is_empty() {
        return match outcome.rejected.first() {
            Some(r) => format!("nothing was written: {}", r.reason),
            None => "nothing was written: the extractor found no lasting fact in the text".into(),
        };
    }
    let mut parts = Vec::new();
    if added > 0 {
        parts.push(format!("{added} new {}", if added == 1 { "memory" } else { "memories" }));
    }
    if merged > 0 {
        parts.push(format!("{merged} merged into an existing memory (which it replaced)"));
    }
    if !outcome.rejected.is_empty() {
        parts.push(format!("{} left out", outcome.rejected.len()));
    }
    format!("written: {}", parts.join(", "))
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn seconds(rfc3339: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(rfc3339).map_or(0, |t| t.timestamp())
}

/// Records the extractor's calls in the meter as made for `agent` (and the turn and session
/// they serve; the nil id when none), `purpose = memory`: counted in `/api/usage` and against
/// the agent's and the daemon's budgets like a turn's own calls.
pub fn metered_for(
    meter: Arc<crate::usage::Meter>,
    clock: Clock,
    agent: AgentId,
    turn: Option<Uuid>,
    session: Option<Uuid>,
) -> impl Fn(ExtractorCall<'_>) + Send + Sync + use<> {
    move |call: ExtractorCall<'_>| {
        // Outside a turn or a session the meter records the nil id (Uuid's default).
        meter.record(crate::usage::ModelCall {
            turn: turn.unwrap_or_default(),
            agent,
            session: session.unwrap_or_default(),
            provider: call.provider.to_string(),
            model: call.model.to_string(),
            purpose: "memory",
            compaction: None,
            first_seq: None,
            messages: 1,
            estimated_tokens: 0,
            tokens: call.tokens,
            outcome: call.outcome.to_string(),
            at: crate::db::timestamp(clock.now()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An add whose second fact the database refuses writes neither, says so, and leaves no
    /// trace in the index: the first fact can be added again at once.
    #[tokio::test]
    async fn an_add_that_fails_midway_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::db::open_for_test(dir.path()).await;
        if db.dialect("sqlite", "postgres") == "postgres" {
            return; // the refusal below is a SQLite trigger
        }
        db::query(
            "CREATE TRIGGER refuse_gates BEFORE INSERT ON memories WHEN NEW.content LIKE '%gate%'
             BEGIN SELECT RAISE(ABORT, 'the disk is full'); END",
        )
        .execute(&db)
        .await
        .unwrap();
        let memory = SemanticMemory::new(db.clone(), Clock::System, &Config::default()).unwrap().expect("enabled");
        let agent = Uuid::now_v7();
        let metered = |_: extract::ExtractorCall<'_>| {};
        let two_facts = "The kennel opens at seven every morning. The side gate code is 4417.";
        let failed = memory.add(agent, two_facts, "tool", Scope::everything(), &metered).await;
        assert!(failed.is_err(), "{failed:?}");
        let stored: i64 = db::query_scalar("SELECT count(*) FROM memories").fetch_one(&db).await.unwrap();
        assert_eq!(stored, 0, "neither fact was written");

        let again =
            memory.add(agent, "The kennel opens at seven every morning.", "tool", Scope::everything(), &metered).await;
        let again = again.expect("the first fact alone is written");
        assert_eq!(again.written.len(), 1, "not taken for a repeat of a memory that was never written: {again:?}");
    }
}
