//! Turning text into vectors: the built-in local embedder, or an OpenAI-compatible
//! `/embeddings` provider.
//!
//! The local embedder needs no network and no model file, so a fresh install has a working
//! semantic store. It is lexical: a text becomes sparse features — each content word's
//! Snowball stem, the first five letters of longer words (so `postgres` meets `postgresql`
//! and `deploy` meets `deployment` where the stemmer keeps them apart), and adjacent stem
//! pairs — hashed to 32 bits and weighted. Scoring (in [`super::index`]) is BM25 over those
//! features, with document frequencies from the agent's own store. It finds what shares
//! words or word forms with the query; it does not know synonyms. A provider's dense vectors
//! do, at the cost of a model call per search.

use std::collections::HashMap;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

use crate::error::{Error, Result};
use crate::llm::Provider;

/// The name stored with each vector of the local embedder; a change to the features
/// changes it, and vectors of another name are made again when an agent's store loads.
pub const LOCAL: &str = "local-v1";

/// A text's sparse features: (hashed feature, weight), sorted by feature, each once.
pub type Features = Vec<(u32, f32)>;

/// Weights of the three kinds of feature.
const WORD: f32 = 1.0;
const PREFIX: f32 = 0.4;
const PAIR: f32 = 0.5;
/// Words at least this long also give their first `PREFIX_LEN` letters.
const PREFIX_LEN: usize = 5;

/// Words that carry no meaning of their own in a fact or a question. General English
/// function words, not a list fitted to any data set. Negations (`no`, `not`, `never`) are
/// not among them: "the deploy is not on Fridays" must not read as "the deploy is on Fridays".
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "before", "being",
    "both", "but", "by", "can", "could", "did", "do", "does", "doing", "done", "for", "from", "had", "has", "have",
    "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
    "just", "me", "more", "most", "my", "myself", "of", "off", "on", "once", "only", "or", "other", "our", "ours",
    "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs",
    "them", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "us",
    "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "whose", "why", "will",
    "with", "would", "you", "your", "yours", "s", "t", "d", "ll", "m", "re", "ve",
];

fn is_stopword(word: &str) -> bool {
    static SET: OnceLock<std::collections::HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| STOPWORDS.iter().copied().collect()).contains(word)
}

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// The content words of `text`, lower-cased and stemmed, in order.
pub fn stems(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !is_stopword(w))
        .map(|w| stemmer().stem(w).into_owned())
        .collect()
}

/// The local embedder's features of `text`.
pub fn features(text: &str) -> Features {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let mut weights: HashMap<u32, f32> = HashMap::new();
    let mut previous: Option<String> = None;
    for word in words {
        if is_stopword(word) {
            previous = None;
            continue;
        }
        let stem = stemmer().stem(word);
        *weights.entry(hash(b'w', stem.as_bytes())).or_default() += WORD;
        if word.chars().count() > PREFIX_LEN {
            let cut = word.char_indices().nth(PREFIX_LEN).map_or(word.len(), |(i, _)| i);
            *weights.entry(hash(b'p', &word.as_bytes()[..cut])).or_default() += PREFIX;
        }
        if let Some(prev) = &previous {
            let pair = format!("{prev} {stem}");
            *weights.entry(hash(b'b', pair.as_bytes())).or_default() += PAIR;
        }
        previous = Some(stem.into_owned());
    }
    let mut features: Features = weights.into_iter().collect();
    features.sort_unstable_by_key(|&(f, _)| f);
    features
}

/// FNV-1a of a kind byte and the feature's bytes, folded to 32 bits: stable across builds,
/// since the hashes are stored.
fn hash(kind: u8, bytes: &[u8]) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in std::iter::once(&kind).chain(bytes) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h ^ (h >> 32)) as u32
}

/// A vector as one embedder made it.
#[derive(Debug, Clone, PartialEq)]
pub enum Vector {
    Sparse(Features),
    /// L2-normalised.
    Dense(Vec<f32>),
}

impl Vector {
    /// A dense vector's dimensions; 0 for a sparse one.
    pub fn dims(&self) -> usize {
        match self {
            Vector::Sparse(_) => 0,
            Vector::Dense(v) => v.len(),
        }
    }

    /// Little-endian bytes for the `embedding` column: (u32, f32) pairs, or f32s.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Vector::Sparse(f) => {
                f.iter().flat_map(|(k, w)| k.to_le_bytes().into_iter().chain(w.to_le_bytes())).collect()
            }
            Vector::Dense(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    /// Reads the bytes [`Vector::to_bytes`] wrote for a sparse (`sparse`) or dense vector.
    pub fn from_bytes(sparse: bool, bytes: &[u8]) -> Option<Vector> {
        let word = |c: &[u8]| [c[0], c[1], c[2], c[3]];
        if sparse {
            bytes.len().is_multiple_of(8).then(|| {
                Vector::Sparse(
                    bytes
                        .chunks_exact(8)
                        .map(|c| (u32::from_le_bytes(word(&c[..4])), f32::from_le_bytes(word(&c[4..]))))
                        .collect(),
                )
            })
        } else {
            (bytes.len().is_multiple_of(4) && !bytes.is_empty())
                .then(|| Vector::Dense(bytes.chunks_exact(4).map(|c| f32::from_le_bytes(word(c))).collect()))
        }
    }
}

/// Which embedder a store uses.
pub enum Embedder {
    Local,
    /// An OpenAI-compatible `/embeddings` endpoint.
    Provider {
        provider: Box<Provider>,
        model: String,
    },
}

/// The embedding model asked for when `[proactive_memory] embeddings_model` is not set.
pub const DEFAULT_EMBEDDINGS_MODEL: &str = "text-embedding-3-small";

impl Embedder {
    /// The name stored with each vector it makes.
    pub fn name(&self) -> String {
        match self {
            Embedder::Local => LOCAL.to_string(),
            Embedder::Provider { provider, model } => format!("{}/{model}", provider.name()),
        }
    }

    /// What the stats say of it.
    pub fn describe(&self) -> String {
        match self {
            Embedder::Local => "local (hashed word stems, prefixes and word pairs; no network)".to_string(),
            Embedder::Provider { provider, model } => format!("provider `{}`, model `{model}`", provider.name()),
        }
    }

    pub fn is_sparse(&self) -> bool {
        matches!(self, Embedder::Local)
    }

    /// The vectors of `texts`, in order.
    pub async fn embed(&self, texts: &[&str]) -> Result<Vec<Vector>> {
        match self {
            Embedder::Local => Ok(texts.iter().map(|t| Vector::Sparse(features(t))).collect()),
            Embedder::Provider { provider, model } => {
                let vectors = provider.embed(model, texts).await?;
                if vectors.len() != texts.len() {
                    return Err(Error::failed(format!(
                        "provider `{}` returned {} embeddings for {} texts",
                        provider.name(),
                        vectors.len(),
                        texts.len()
                    )));
                }
                Ok(vectors.into_iter().map(|v| Vector::Dense(normalised(v))).collect())
            }
        }
    }
}

fn normalised(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_forms_meet_through_stems_and_prefixes() {
        let shared = |a: &str, b: &str| {
            let b: std::collections::HashSet<u32> = features(b).into_iter().map(|(f, _)| f).collect();
            features(a).into_iter().filter(|(f, _)| b.contains(f)).count()
        };
        assert!(shared("We deploy on Fridays", "Deployments happen on Friday") >= 2);
        assert!(shared("the postgres cluster", "PostgreSQL") >= 1, "a shared prefix");
        assert_eq!(shared("What is the", "who was there"), 0, "function words are not features");
    }

    #[test]
    fn features_are_stable_and_round_trip_through_bytes() {
        let a = features("Billing runs PostgreSQL 15 on db-2");
        assert_eq!(a, features("Billing runs PostgreSQL 15 on db-2"));
        assert!(a.windows(2).all(|w| w[0].0 < w[1].0), "sorted, each feature once");
        let v = Vector::Sparse(a);
        assert_eq!(Vector::from_bytes(true, &v.to_bytes()), Some(v));
        let d = Vector::Dense(vec![0.6, 0.8]);
        assert_eq!(Vector::from_bytes(false, &d.to_bytes()), Some(d));
        assert_eq!(Vector::from_bytes(true, &[1, 2, 3]), None);
    }
}
