//! One agent's memories in memory, searched in the process (no database extension, so any
//! back end can hold the vectors): an inverted index of the local embedder's features, or
//! a flat array of a provider's dense vectors searched exhaustively.
//!
//! Memories are only ever added here; one that is forgotten or merged away is marked dead
//! and skipped, and the index is rebuilt without the dead once they are a quarter of it.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};

use uuid::Uuid;

use super::embed::{Features, Vector};

/// BM25's term-frequency saturation and length normalisation.
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// A live memory as the index holds it.
pub struct Entry {
    pub id: Uuid,
    pub content: Arc<str>,
    pub category: Arc<str>,
    pub source: Arc<str>,
    /// Confidence before decay.
    pub base: f32,
    /// Searches and recalls that returned it.
    pub hits: AtomicU32,
    /// When it was last returned (or written), Unix seconds.
    pub accessed: AtomicI64,
    pub created_at: Arc<str>,
    dead: bool,
}

impl Entry {
    /// A memory never returned yet, at full confidence (what [`Entry::with_use`] changes).
    pub fn new(id: Uuid, content: &str, category: &str, source: &str, created_at: &str) -> Entry {
        Entry {
            id,
            content: content.into(),
            category: category.into(),
            source: source.into(),
            base: 1.0,
            hits: AtomicU32::new(0),
            accessed: AtomicI64::new(0),
            created_at: created_at.into(),
            dead: false,
        }
    }

    /// Its base confidence, hits and last access (Unix seconds) as stored.
    pub fn with_use(mut self, base: f32, hits: u32, accessed: i64) -> Entry {
        self.base = base;
        self.hits = AtomicU32::new(hits);
        self.accessed = AtomicI64::new(accessed);
        self
    }
}

enum Vectors {
    Sparse {
        /// Feature → (document, weight).
        postings: HashMap<u32, Vec<(u32, f32)>>,
        /// Each document's summed weights (its length, for BM25).
        lengths: Vec<f32>,
        total_length: f64,
    },
    Dense {
        dims: usize,
        /// Document `d`'s vector is `flat[d * dims..(d + 1) * dims]`.
        flat: Vec<f32>,
    },
}

/// One agent's searchable memories.
pub struct AgentIndex {
    entries: Vec<Entry>,
    by_id: HashMap<Uuid, u32>,
    vectors: Vectors,
    live: usize,
    /// Categories and sources, held once each: a store has a handful of them.
    names: std::collections::HashSet<Arc<str>>,
}

/// A document and how well it matches the query.
#[derive(Debug, Clone, Copy)]
pub struct Scored {
    pub doc: u32,
    /// What ranks it: BM25 (the local embedder) or the cosine of the vectors (a provider's).
    pub score: f32,
    /// 0–1, comparable across queries: the share of what the query says that the document
    /// says too — its features weighted by `1 + idf`, so a word every memory has still
    /// counts and a small store does not make everything look irrelevant (the local
    /// embedder) — or the cosine (a provider's).
    pub relevance: f32,
}

impl AgentIndex {
    pub fn new(sparse: bool) -> AgentIndex {
        let vectors = if sparse {
            Vectors::Sparse { postings: HashMap::new(), lengths: Vec::new(), total_length: 0.0 }
        } else {
            Vectors::Dense { dims: 0, flat: Vec::new() }
        };
        AgentIndex { entries: Vec::new(), by_id: HashMap::new(), vectors, live: 0, names: Default::default() }
    }

    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    pub fn entry(&self, doc: u32) -> &Entry {
        &self.entries[doc as usize]
    }

    pub fn find(&self, id: Uuid) -> Option<&Entry> {
        self.by_id.get(&id).map(|&d| &self.entries[d as usize])
    }

    /// The live entries, oldest first.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| !e.dead)
    }

    /// The live entries, newest first.
    pub fn entries_newest_first(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().rev().filter(|e| !e.dead)
    }

    /// Whether `vector` can join this index: of its kind and, if dense, of its dimensions.
    pub fn fits(&self, vector: &Vector) -> bool {
        match (&self.vectors, vector) {
            (Vectors::Sparse { .. }, Vector::Sparse(_)) => true,
            (Vectors::Dense { dims, .. }, Vector::Dense(v)) => *dims == 0 || v.len() == *dims,
            _ => false,
        }
    }

    fn intern(&mut self, name: &Arc<str>) -> Arc<str> {
        match self.names.get(name) {
            Some(held) => held.clone(),
            None => {
                self.names.insert(name.clone());
                name.clone()
            }
        }
    }

    /// Gives back what growing left spare (after a load, where nothing is added for a while).
    pub fn shrink(&mut self) {
        self.entries.shrink_to_fit();
        if let Vectors::Sparse { postings, lengths, .. } = &mut self.vectors {
            postings.values_mut().for_each(Vec::shrink_to_fit);
            postings.shrink_to_fit();
            lengths.shrink_to_fit();
        }
    }

    /// Adds a memory. A dense vector of other dimensions than the index's is refused.
    pub fn insert(&mut self, mut entry: Entry, vector: Vector) -> Result<(), String> {
        entry.category = self.intern(&entry.category);
        entry.source = self.intern(&entry.source);
        let doc = self.entries.len() as u32;
        match (&mut self.vectors, vector) {
            (Vectors::Sparse { postings, lengths, total_length }, Vector::Sparse(features)) => {
                let length: f32 = features.iter().map(|(_, w)| w).sum();
                for (f, w) in features {
                    postings.entry(f).or_default().push((doc, w));
                }
                lengths.push(length);
                *total_length += f64::from(length);
            }
            (Vectors::Dense { dims, flat }, Vector::Dense(v)) => {
                if *dims == 0 {
                    *dims = v.len();
                } else if v.len() != *dims {
                    return Err(format!("an embedding of {} dimensions in a store of {}", v.len(), dims));
                }
                flat.extend_from_slice(&v);
            }
            _ => return Err("a vector of the other kind of embedder".into()),
        }
        self.by_id.insert(entry.id, doc);
        self.entries.push(entry);
        self.live += 1;
        Ok(())
    }

    /// Marks a memory dead (forgotten, or merged into another); whether it was live.
    pub fn remove(&mut self, id: Uuid) -> bool {
        let Some(doc) = self.by_id.remove(&id) else { return false };
        self.entries[doc as usize].dead = true;
        self.live -= 1;
        true
    }

    /// The live entries, taken out (the vectors are dropped).
    pub fn into_entries(self) -> impl Iterator<Item = Entry> {
        self.entries.into_iter().filter(|e| !e.dead)
    }

    /// Whether dead entries are so many that [`AgentIndex::compacted`] is worth its cost.
    pub fn wants_compaction(&self) -> bool {
        let dead = self.entries.len() - self.live;
        dead > 64 && dead * 4 > self.entries.len()
    }

    /// The index without its dead entries.
    pub fn compacted(self) -> AgentIndex {
        let sparse = matches!(self.vectors, Vectors::Sparse { .. });
        let mut vectors_of: Vec<Option<Vector>> = (0..self.entries.len()).map(|_| None).collect();
        match &self.vectors {
            Vectors::Sparse { postings, .. } => {
                let mut features: Vec<Features> = vec![Vec::new(); self.entries.len()];
                for (&f, list) in postings {
                    for &(d, w) in list {
                        features[d as usize].push((f, w));
                    }
                }
                for (d, mut f) in features.into_iter().enumerate() {
                    f.sort_unstable_by_key(|&(k, _)| k);
                    vectors_of[d] = Some(Vector::Sparse(f));
                }
            }
            Vectors::Dense { dims, flat } => {
                for (d, v) in vectors_of.iter_mut().enumerate() {
                    *v = Some(Vector::Dense(flat[d * dims..(d + 1) * dims].to_vec()));
                }
            }
        }
        let mut fresh = AgentIndex::new(sparse);
        for (entry, vector) in self.entries.into_iter().zip(vectors_of) {
            if let (false, Some(vector)) = (entry.dead, vector) {
                // Vectors come from this index, so they fit it.
                let _ = fresh.insert(entry, vector);
            }
        }
        fresh
    }

    /// The `limit` live documents that best match `query` among those `keep` lets through,
    /// best first, with their relevance; only documents that share something with the query.
    pub fn search(&self, query: &Vector, limit: usize, keep: impl Fn(&Entry) -> bool) -> Vec<Scored> {
        if limit == 0 || self.live == 0 {
            return Vec::new();
        }
        let (scores, relevances) = match (&self.vectors, query) {
            (Vectors::Sparse { postings, lengths, total_length }, Vector::Sparse(q)) => {
                self.bm25(postings, lengths, *total_length, q)
            }
            (Vectors::Dense { dims, flat }, Vector::Dense(q)) if q.len() == *dims => {
                let cosines: Vec<f32> = flat.chunks_exact(*dims).map(|v| dot(v, q).max(0.0)).collect();
                (cosines.clone(), cosines)
            }
            _ => return Vec::new(),
        };
        let mut best: Vec<Scored> = scores
            .into_iter()
            .zip(relevances)
            .enumerate()
            .filter(|&(d, (s, _))| s > 0.0 && !self.entries[d].dead && keep(&self.entries[d]))
            .map(|(d, (score, relevance))| Scored { doc: d as u32, score, relevance })
            .collect();
        let by_relevance = |a: &Scored, b: &Scored| b.score.total_cmp(&a.score);
        if best.len() > limit {
            best.select_nth_unstable_by(limit - 1, by_relevance);
            best.truncate(limit);
        }
        best.sort_by(by_relevance);
        best
    }

    /// BM25 of every document against `query`, and the share of the query each covers.
    fn bm25(
        &self,
        postings: &HashMap<u32, Vec<(u32, f32)>>,
        lengths: &[f32],
        total: f64,
        query: &Features,
    ) -> (Vec<f32>, Vec<f32>) {
        let n = self.entries.len() as f32;
        let average = (total / lengths.len().max(1) as f64) as f32;
        let saturate = |tf: f32, length: f32| tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average.max(1e-6)));
        let mut scores = vec![0.0f32; lengths.len()];
        let mut covered = vec![0.0f32; lengths.len()];
        let mut whole = 0.0f32;
        for &(f, qw) in query {
            let list = postings.get(&f).map_or(&[][..], Vec::as_slice);
            let idf = |df: f32| (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            // A feature no memory has weighs like the rarest one a memory has.
            let weight = qw * (1.0 + idf(list.len().max(1) as f32));
            whole += weight;
            let idf = idf(list.len() as f32);
            for &(d, w) in list {
                scores[d as usize] += qw * idf * saturate(w, lengths[d as usize]);
                covered[d as usize] += weight;
            }
        }
        if whole > 0.0 {
            covered.iter_mut().for_each(|c| *c /= whole);
        }
        (scores, covered)
    }

    /// Approximate bytes held, for the benchmark's report.
    pub fn heap_bytes(&self) -> usize {
        let entries: usize =
            self.entries.iter().map(|e| std::mem::size_of::<Entry>() + e.content.len() + e.created_at.len()).sum();
        let vectors = match &self.vectors {
            Vectors::Sparse { postings, lengths, .. } => {
                postings.values().map(|l| l.capacity() * 8 + 32).sum::<usize>()
                    + postings.capacity() * 40
                    + lengths.capacity() * 4
            }
            Vectors::Dense { flat, .. } => flat.capacity() * 4,
        };
        entries + vectors + self.by_id.capacity() * 24
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Hits and last access, refreshed by a search that returned the entry.
pub fn refresh(entry: &Entry, now: i64) {
    entry.hits.fetch_add(1, Ordering::Relaxed);
    entry.accessed.store(now, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::super::embed::features;
    use super::*;

    fn index(texts: &[&str]) -> AgentIndex {
        let mut index = AgentIndex::new(true);
        for t in texts {
            index.insert(Entry::new(Uuid::now_v7(), t, "fact", "tool", ""), Vector::Sparse(features(t))).unwrap();
        }
        index
    }

    #[test]
    fn the_best_match_comes_first_and_unrelated_memories_not_at_all() {
        let index = index(&[
            "The billing service stores invoices in PostgreSQL",
            "Priya leads the payments team",
            "Lunch is at noon",
        ]);
        let hits = index.search(&Vector::Sparse(features("which database does billing use")), 5, |_| true);
        assert_eq!(index.entry(hits[0].doc).content.as_ref(), "The billing service stores invoices in PostgreSQL");
        assert!(hits.iter().all(|h| !index.entry(h.doc).content.contains("Lunch")), "no shared word, no hit");
        let itself = index.search(&Vector::Sparse(features("Priya leads the payments team")), 1, |_| true);
        assert!(itself[0].relevance > 0.99, "all the query says: {:?}", itself[0]);
        let part = index.search(&Vector::Sparse(features("Priya's birthday")), 1, |_| true);
        assert!(part[0].relevance > 0.1 && part[0].relevance < 0.9, "some of it: {:?}", part[0]);
    }

    #[test]
    fn removed_entries_are_never_found_and_compaction_keeps_the_rest() {
        let mut index = index(&["alpha beta", "alpha gamma"]);
        let first = index.entry(0).id;
        assert!(index.remove(first));
        assert!(!index.remove(first), "once");
        let hits = index.search(&Vector::Sparse(features("alpha")), 5, |_| true);
        assert_eq!(hits.len(), 1);
        let index = index.compacted();
        assert_eq!(index.len(), 1);
        let hits = index.search(&Vector::Sparse(features("gamma")), 5, |_| true);
        assert_eq!(index.entry(hits[0].doc).content.as_ref(), "alpha gamma");
    }

    #[test]
    fn dense_vectors_rank_by_cosine_and_keep_one_dimension() {
        let mut index = AgentIndex::new(false);
        let add = |index: &mut AgentIndex, v: Vec<f32>| {
            index.insert(Entry::new(Uuid::now_v7(), "x", "fact", "tool", ""), Vector::Dense(v))
        };
        add(&mut index, vec![1.0, 0.0]).unwrap();
        add(&mut index, vec![0.6, 0.8]).unwrap();
        assert!(add(&mut index, vec![1.0, 0.0, 0.0]).is_err());
        let hits = index.search(&Vector::Dense(vec![0.0, 1.0]), 5, |_| true);
        assert_eq!(hits.len(), 1, "an orthogonal vector shares nothing");
        assert!((hits[0].relevance - 0.8).abs() < 1e-6);
    }
}
