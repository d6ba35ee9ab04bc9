//! The knowledge graph (spec §12): each agent's private graph of entities and directed, typed
//! relations, for recall that flat memory expresses badly ("which projects use this
//! library"). Stored in SQLite (`knowledge_entities`, `knowledge_relations`), so it outlives
//! sessions and restarts; every query names its agent, so no agent ever reads another's.
//!
//! The rules, decided here once for the tools, the REST API and the dashboard:
//! - An entity is its agent's by **name**, compared byte for byte (no trimming, no case or
//!   Unicode folding); its type is a label, not part of its identity. Adding an entity that
//!   exists replaces its type and **merges** its attributes: the new keys win, a key set to
//!   `null` is removed, keys not named stay.
//! - A relation is one per (from, to, type): adding it again sets its weight (left as it was
//!   when no weight is given; a new relation weighs 1). Both ends must exist: an unknown one
//!   is `NotFound` naming it, never created on the fly.
//! - A walk ([`Knowledge::query`]) goes breadth first from an entity, along relations in
//!   both directions unless told `out` or `in`, to at most [`MAX_DEPTH`] relations away; a
//!   larger depth is refused, not clamped. Each entity is reached once (cycles end there),
//!   and a walk returns at most [`MAX_NODES`] entities and [`MAX_EDGES`] relations, saying
//!   `truncated` when it stopped early.
//! - Sizes: names up to [`MAX_NAME`] characters, types up to [`MAX_TYPE`], both on one line
//!   and not blank; an entity's attributes up to [`MAX_ATTRIBUTES_BYTES`] of JSON; an agent
//!   holds at most [`Limits::default`]'s entities and relations (`ResourceExhausted`).
//!
//! # Design notes
//!
//! ## Layout
//!
//! The knowledge graph (spec §12, family `knowledge`): `Knowledge` (`add_entity` upserting by name
//! with merged attributes, `add_relation` one per (from, to, type), `query` the bounded
//! breadth-first walk, `entities`/`relations` pages, `overview` the best-connected part for the
//! picture; `Limits` per agent), `store.rs` (`knowledge_entities`, `knowledge_relations`: every
//! query names its agent), `tools.rs` (`knowledge_add_entity`, `knowledge_add_relation`,
//! `knowledge_query`).
//!
//! ## The knowledge graph
//!
//! - **Private, by construction.** Every row carries its agent's id and every query of
//!   `knowledge/store.rs` names it: the tools act on the calling agent's graph only, so another
//!   agent's entity reads exactly like a missing one (`NotFound`). Operators read any agent's
//!   graph (`GET /api/agents/{id}/knowledge/entities`, `…/relations`, paged like every list;
//!   `…/query?start=&depth=&direction=&relation=` with `relation` repeated) and the dashboard's
//!   `/agents/{id}/knowledge`, through the same `Knowledge` service as the tools. Stored in
//!   SQLite (migration `0022_knowledge.sql`), so it outlives sessions and restarts.
//! - **Decisions.** An entity's identity is its name alone, compared byte for byte (no trimming,
//!   case or Unicode folding); its type is a label. Adding an entity that exists replaces its
//!   type and merges its attributes (the keys given win, `null` removes a key, keys not named
//!   stay); attributes absent leave them as they are. A relation is one per (from, to, type):
//!   adding it again sets its weight (left as it was when no weight is given; a new relation
//!   weighs 1). Both ends must already exist: an unknown one is `NotFound` naming it and
//!   pointing at `knowledge_add_entity`, never created on the fly. Self-relations are allowed.
//! - **The walk** (`knowledge_query`) is breadth first from `start`, following relations in both
//!   directions by default (so a library reaches the projects that use it) or `out`/`in` only,
//!   and only the types in `relation_filter` when given (at most 32; empty: every type). Depth
//!   defaults to 2; 0 returns the entity alone; above 4 is refused (`InvalidArguments` on
//!   `depth`), not clamped, so a caller never mistakes a cut walk for the whole. Each entity is
//!   reached once at its shortest distance (a visited set ends cycles); it returns the entities
//!   by distance (the start first) and each relation it followed between returned entities
//!   once. At most 200 entities and 1,000 relations: beyond, `truncated: true` with a note; the
//!   pipeline's spill takes care of a large result.
//! - **Bounds** (`InvalidArguments` naming the field, nothing stored): names 1–200 characters,
//!   types 1–64, both on one line and not blank; attributes a JSON object of at most 8 KiB, also
//!   once merged (the refusal says to remove keys with `null`); a weight a finite number. An
//!   agent holds at most 100,000 entities and 500,000 relations (`ResourceExhausted`; updates
//!   still go in). The count and the insert share a write transaction (`Db::begin_write`).
//! - **The picture** (`app/src/graph.rs`): layout is presentation, so it is a pure function in
//!   `app` (`graph::layout`, unit-tested: 50 nodes fit the box with room for their labels, the
//!   same every time). Nodes start on a circle grouped by type (a neighbourhood: on rings by
//!   distance around the pinned entity), a Fruchterman–Reingold pass spreads them (no
//!   randomness: the same graph is drawn the same way), and a last pass pushes apart nodes whose
//!   labels would overlap. The SVG is drawn on the
//!   server: names, types and relation types are SVG `<text>` and `<title>` set as text, colours
//!   are classes (`kg-kind-N`, eight, by type), no style attributes; each node is an `<a>` to
//!   `?entity=NAME` with the name percent-encoded in the query. The whole graph draws the 60
//!   best-connected entities (and up to 400 relations between them) with every entity listed
//!   in a paged table under it; an entity's page draws its neighbourhood (1 or 2 away) with
//!   tables of its attributes and relations. A name that is not there shows the whole graph with
//!   the refusal, as a 404.
//!
//! ## Tests
//!
//! - The knowledge graph: `tests/tests/system/knowledge.rs` (the tools through the invoke
//!   endpoint and a model's turn, privacy between agents, the grant gate, a restart, the REST
//!   reads and their refusals, the dashboard's picture); the store's rules and the walk in
//!   `kernel/src/knowledge/mod.rs`'s tests, the layout in `app/src/graph.rs`'s.

mod store;
mod tools;

use std::collections::{HashMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

pub(crate) use tools::register;

use crate::db::Db;
use crate::error::{Error, ErrorKind, FieldError, Result};
use crate::family::Family;
use crate::page::{Key, Page, PageRequest};
use crate::text::{is_title, thousands};

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "knowledge",
    open: |s| {
        s.provide(Knowledge::new(s.get::<Db>().clone(), Limits::default()));
        Ok(())
    },
    register,
};

/// The longest entity name, in characters.
pub const MAX_NAME: usize = 200;
/// The longest entity or relation type, in characters.
pub const MAX_TYPE: usize = 64;
/// The most an entity's attributes may take, as JSON text.
pub const MAX_ATTRIBUTES_BYTES: usize = 8 * 1024;
/// How far a walk may go, in relations; and how far it goes when not told.
pub const MAX_DEPTH: u32 = 4;
pub const DEFAULT_DEPTH: u32 = 2;
/// The most entities and relations one walk returns.
pub const MAX_NODES: usize = 200;
pub const MAX_EDGES: usize = 1000;
/// The most relation types one walk may be told to follow.
pub const MAX_FILTER: usize = 32;

/// An entity as stored.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Entity {
    pub name: String,
    #[serde(rename = "type")]
    pub entity_type: String,
    /// A JSON object: the agent's facts about it.
    #[schema(value_type = Object)]
    pub attributes: Map<String, Value>,
    pub created_at: String,
    pub updated_at: String,
}

/// A relation as stored, its ends by name.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Relation {
    pub from: String,
    pub to: String,
    #[serde(rename = "type")]
    pub relation_type: String,
    pub weight: f64,
    pub created_at: String,
    pub updated_at: String,
}

/// What an add did: made it new, or changed the one there was.
#[derive(Debug, Clone, PartialEq)]
pub struct Added<T> {
    pub item: T,
    pub created: bool,
}

/// Which way a walk follows relations from the entities it reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Out of and into them (`library` reaches the projects that use it).
    #[default]
    Both,
    /// Only relations that start at them.
    Out,
    /// Only relations that end at them.
    In,
}

/// A walk: where it starts, how far it goes, which relations it follows.
#[derive(Debug, Clone, Default)]
pub struct Walk {
    /// The entity's name.
    pub start: String,
    /// 0 to [`MAX_DEPTH`]; [`DEFAULT_DEPTH`] when `None`.
    pub depth: Option<u32>,
    pub direction: Direction,
    /// The relation types to follow; empty: every type.
    pub relation_filter: Vec<String>,
}

/// An entity a walk reached, `distance` relations from its start.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Node {
    pub name: String,
    #[serde(rename = "type")]
    pub entity_type: String,
    #[schema(value_type = Object)]
    pub attributes: Map<String, Value>,
    pub distance: u32,
}

/// A relation between two entities of a walk or a picture.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Edge {
    pub from: String,
    pub to: String,
    #[serde(rename = "type")]
    pub relation_type: String,
    pub weight: f64,
}

/// What a walk found: the entities by distance (the start first), and the relations it
/// followed between them.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Subgraph {
    pub start: String,
    pub depth: u32,
    pub direction: Direction,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    /// The walk stopped at its bounds (200 entities, 1,000 relations): there is more.
    pub truncated: bool,
    /// What to do about it, when truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The best-connected part of an agent's graph, for a picture of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Overview {
    /// The entities with the most relations, most first.
    pub entities: Vec<Entity>,
    /// The relations between them.
    pub edges: Vec<Edge>,
    /// How many the agent holds in all.
    pub total_entities: u64,
    pub total_relations: u64,
}

/// How much one agent may hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_entities: u64,
    pub max_relations: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_entities: 100_000, max_relations: 500_000 }
    }
}

/// Every agent's knowledge graph.
pub struct Knowledge {
    db: Db,
    limits: Limits,
}

impl Knowledge {
    pub(crate) fn new(db: Db, limits: Limits) -> Knowledge {
        Knowledge { db, limits }
    }

    /// Adds the entity `name`, or updates it: its type replaced, its attributes merged (new
    /// keys win, `null` removes a key).
    pub async fn add_entity(
        &self,
        agent: Uuid,
        name: &str,
        entity_type: &str,
        attributes: Option<Map<String, Value>>,
    ) -> Result<Added<Entity>> {
        let mut problems = Vec::new();
        check_label(&mut problems, "name", name, MAX_NAME);
        check_label(&mut problems, "type", entity_type, MAX_TYPE);
        let patch = attributes.unwrap_or_default();
        if json_len(&patch) > MAX_ATTRIBUTES_BYTES {
            problems.push(FieldError {
                field: "attributes".into(),
                message: format!(
                    "{} bytes of JSON; an entity's attributes take at most {}",
                    thousands(json_len(&patch) as u64),
                    thousands(MAX_ATTRIBUTES_BYTES as u64)
                ),
            });
        }
        if !problems.is_empty() {
            return Err(Error::invalid_fields(problems));
        }
        let merge = |old: Option<Map<String, Value>>| {
            let merged = merged(old.unwrap_or_default(), patch);
            if json_len(&merged) > MAX_ATTRIBUTES_BYTES {
                return Err(Error::invalid(format!(
                    "merged with the attributes `{name}` has, they would take {} bytes of JSON, over {}: \
                     remove keys by setting them to null",
                    thousands(json_len(&merged) as u64),
                    thousands(MAX_ATTRIBUTES_BYTES as u64)
                ))
                .with_field("attributes"));
            }
            Ok(merged)
        };
        let agent = agent.to_string();
        match store::upsert_entity(&self.db, &agent, name, entity_type, merge, self.limits.max_entities).await? {
            store::Upsert::Done(item, created) => Ok(Added { item, created }),
            store::Upsert::Full => Err(Error::new(
                ErrorKind::ResourceExhausted,
                format!(
                    "your knowledge graph holds {} entities, the most an agent may keep: update existing ones instead",
                    thousands(self.limits.max_entities)
                ),
            )),
        }
    }

    /// Adds the relation `from → to` of `relation_type`, or sets its weight if it exists.
    /// Both entities must exist.
    pub async fn add_relation(
        &self,
        agent: Uuid,
        from: &str,
        to: &str,
        relation_type: &str,
        weight: Option<f64>,
    ) -> Result<Added<Relation>> {
        let mut problems = Vec::new();
        check_label(&mut problems, "type", relation_type, MAX_TYPE);
        if weight.is_some_and(|w| !w.is_finite()) {
            problems.push(FieldError { field: "weight".into(), message: "a finite number".into() });
        }
        if !problems.is_empty() {
            return Err(Error::invalid_fields(problems));
        }
        let agent = agent.to_string();
        match store::upsert_relation(&self.db, &agent, [from, to], relation_type, weight, self.limits.max_relations)
            .await?
        {
            store::Link::Done(item, created) => Ok(Added { item, created }),
            store::Link::Missing(names) => {
                let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                Err(Error::not_found(format!(
                    "no entity {} in your knowledge graph: add it first with knowledge_add_entity",
                    names.join(" or ")
                )))
            }
            store::Link::Full => Err(Error::new(
                ErrorKind::ResourceExhausted,
                format!(
                    "your knowledge graph holds {} relations, the most an agent may keep",
                    thousands(self.limits.max_relations)
                ),
            )),
        }
    }

    /// Walks the agent's graph breadth first from `walk.start` (see the module's rules).
    pub async fn query(&self, agent: Uuid, walk: &Walk) -> Result<Subgraph> {
        let depth = walk.depth.unwrap_or(DEFAULT_DEPTH);
        if depth > MAX_DEPTH {
            return Err(Error::invalid(format!(
                "a walk goes at most {MAX_DEPTH} relations deep: ask for less, or start nearer"
            ))
            .with_field("depth"));
        }
        let mut filter: Vec<String> = Vec::new();
        for t in &walk.relation_filter {
            if !filter.contains(t) {
                filter.push(t.clone());
            }
        }
        if filter.len() > MAX_FILTER {
            return Err(Error::invalid(format!("at most {MAX_FILTER} relation types")).with_field("relation_filter"));
        }
        let agent = agent.to_string();
        let (start_id, start) = store::entity(&self.db, &agent, &walk.start).await?.ok_or_else(|| {
            Error::not_found(format!("no entity `{}` in your knowledge graph (names are matched exactly)", walk.start))
        })?;

        let mut distance: HashMap<i64, u32> = HashMap::from([(start_id, 0)]);
        let mut order = vec![start_id];
        let mut seen_edges = HashSet::new();
        let mut steps = Vec::new();
        let mut truncated = false;
        let mut frontier = vec![start_id];
        for level in 0..depth {
            if frontier.is_empty() || truncated {
                break;
            }
            let found =
                store::relations_touching(&self.db, &agent, &frontier, walk.direction, &filter, MAX_EDGES as i64 + 1)
                    .await?;
            let complete = found.len() <= MAX_EDGES;
            let mut found = found;
            found.truncate(MAX_EDGES);
            let mut next = Vec::new();
            for step in found {
                if !seen_edges.insert(step.id) {
                    continue;
                }
                let ends = match walk.direction {
                    Direction::Out => vec![step.to],
                    Direction::In => vec![step.from],
                    Direction::Both => vec![step.from, step.to],
                };
                for end in ends {
                    if distance.contains_key(&end) {
                        continue;
                    }
                    if order.len() == MAX_NODES {
                        truncated = true;
                        continue;
                    }
                    distance.insert(end, level + 1);
                    order.push(end);
                    next.push(end);
                }
                let both_in = distance.contains_key(&step.from) && distance.contains_key(&step.to);
                if !both_in {
                    continue;
                }
                if steps.len() == MAX_EDGES {
                    truncated = true;
                    break;
                }
                steps.push(step);
            }
            truncated |= !complete;
            frontier = next;
        }

        let mut entities: HashMap<i64, Entity> = store::entities_by_id(&self.db, &agent, &order[1..])
            .await?
            .into_iter()
            .chain([(start_id, start)])
            .collect();
        let names: HashMap<i64, String> = entities.iter().map(|(id, e)| (*id, e.name.clone())).collect();
        let edges = named_edges(steps, &names);
        let nodes = order
            .iter()
            .filter_map(|id| {
                let e = entities.remove(id)?;
                Some(Node {
                    name: e.name,
                    entity_type: e.entity_type,
                    attributes: e.attributes,
                    distance: distance[id],
                })
            })
            .collect();
        Ok(Subgraph {
            start: walk.start.clone(),
            depth,
            direction: walk.direction,
            nodes,
            edges,
            truncated,
            note: truncated.then(|| {
                format!(
                    "the walk stopped at {MAX_NODES} entities or {MAX_EDGES} relations: ask for a smaller depth, \
                     a direction or a relation_filter"
                )
            }),
        })
    }

    /// A page of the agent's entities, oldest first (the cursor is a row number).
    pub async fn entities(&self, agent: Uuid, page: &PageRequest) -> Result<Page<Entity>> {
        let after = page.after(Key::Number)?.map(|c| c.parse().unwrap_or(i64::MAX));
        let agent = agent.to_string();
        let rows = store::entities_page(&self.db, &agent, after, page.fetch_limit()).await?;
        let (total, _) = store::counts(&self.db, &agent).await?;
        Ok(Page::from_rows(rows, page, total, |(id, _)| id.to_string()).map(|(_, e)| e))
    }

    /// A page of the agent's relations, oldest first (the cursor is a row number).
    pub async fn relations(&self, agent: Uuid, page: &PageRequest) -> Result<Page<Relation>> {
        let after = page.after(Key::Number)?.map(|c| c.parse().unwrap_or(i64::MAX));
        let agent = agent.to_string();
        let rows = store::relations_page(&self.db, &agent, after, page.fetch_limit()).await?;
        let (_, total) = store::counts(&self.db, &agent).await?;
        Ok(Page::from_rows(rows, page, total, |(id, _)| id.to_string()).map(|(_, r)| r))
    }

    /// The agent's `max_nodes` best-connected entities and up to `max_edges` relations between
    /// them, with its totals: what a picture of the whole graph can show.
    pub async fn overview(&self, agent: Uuid, max_nodes: u32, max_edges: u32) -> Result<Overview> {
        let agent = agent.to_string();
        let (total_entities, total_relations) = store::counts(&self.db, &agent).await?;
        let top = store::most_connected(&self.db, &agent, i64::from(max_nodes)).await?;
        let ids: Vec<i64> = top.iter().map(|(id, _)| *id).collect();
        let names: HashMap<i64, String> = top.iter().map(|(id, e)| (*id, e.name.clone())).collect();
        let steps = store::relations_among(&self.db, &agent, &ids, i64::from(max_edges)).await?;
        let edges = named_edges(steps, &names);
        Ok(Overview { entities: top.into_iter().map(|(_, e)| e).collect(), edges, total_entities, total_relations })
    }
}

/// Relations between rows, as edges between the entities' names; a relation whose end is not
/// among `names` is left out.
fn named_edges(steps: Vec<store::Step>, names: &HashMap<i64, String>) -> Vec<Edge> {
    steps
        .into_iter()
        .filter_map(|s| {
            Some(Edge {
                from: names.get(&s.from)?.clone(),
                to: names.get(&s.to)?.clone(),
                relation_type: s.relation_type,
                weight: s.weight,
            })
        })
        .collect()
}

/// A name or type: not blank, on one line, at most `max` characters.
fn check_label(problems: &mut Vec<FieldError>, field: &str, text: &str, max: usize) {
    if !is_title(text, max) {
        problems.push(FieldError {
            field: field.into(),
            message: format!("1 to {max} characters on one line, not blank, without bidirectional controls"),
        });
    }
}

/// `old` with `patch` applied: its keys set, those set to `null` removed.
fn merged(mut old: Map<String, Value>, patch: Map<String, Value>) -> Map<String, Value> {
    for (key, value) in patch {
        if value.is_null() {
            old.remove(&key);
        } else {
            old.insert(key, value);
        }
    }
    old
}

fn json_len(map: &Map<String, Value>) -> usize {
    serde_json::to_string(map).map_or(usize::MAX, |s| s.len())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    async fn knowledge(limits: Limits) -> (tempfile::TempDir, Knowledge) {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::db::open_for_test(dir.path()).await;
        (dir, Knowledge::new(db, limits))
    }

    fn attrs(v: Value) -> Option<Map<String, Value>> {
        v.as_object().cloned()
    }

    fn names(g: &Subgraph) -> Vec<(&str, u32)> {
        g.nodes.iter().map(|n| (n.name.as_str(), n.distance)).collect()
    }

    #[tokio::test]
    async fn adding_an_entity_again_replaces_its_type_and_merges_its_attributes() {
        let (_dir, k) = knowledge(Limits::default()).await;
        let a = Uuid::now_v7();
        let first = k.add_entity(a, "serde", "library", attrs(json!({"lang": "rust", "stars": 9}))).await.unwrap();
        assert!(first.created);
        let again =
            k.add_entity(a, "serde", "crate", attrs(json!({"stars": 10, "lang": null, "v": "1"}))).await.unwrap();
        assert!(!again.created);
        assert_eq!(again.item.entity_type, "crate");
        assert_eq!(Value::Object(again.item.attributes), json!({"stars": 10, "v": "1"}));
        let kept = k.add_entity(a, "serde", "crate", None).await.unwrap();
        assert_eq!(Value::Object(kept.item.attributes), json!({"stars": 10, "v": "1"}), "no attributes: kept");
        // Byte-exact names: these are other entities.
        assert!(k.add_entity(a, "Serde", "crate", None).await.unwrap().created);
        assert!(k.add_entity(a, "serde ", "crate", None).await.unwrap().created);
    }

    #[tokio::test]
    async fn bounds_are_refused_naming_the_field() {
        let (_dir, k) = knowledge(Limits { max_entities: 2, max_relations: 1 }).await;
        let a = Uuid::now_v7();
        let long = "x".repeat(MAX_NAME + 1);
        let e = k.add_entity(a, &long, &"t".repeat(MAX_TYPE + 1), None).await.unwrap_err();
        let fields: Vec<&str> = e.fields.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, ["name", "type"], "{e}");
        for bad in ["", "  ", "two\nlines"] {
            assert_eq!(k.add_entity(a, bad, "t", None).await.unwrap_err().fields[0].field, "name");
        }
        let big = attrs(json!({"blob": "y".repeat(MAX_ATTRIBUTES_BYTES)}));
        assert_eq!(k.add_entity(a, "n", "t", big).await.unwrap_err().fields[0].field, "attributes");
        // Each half fits; merged they do not.
        let half = |key: &str| attrs(json!({ key: "z".repeat(MAX_ATTRIBUTES_BYTES / 2) }));
        k.add_entity(a, "n", "t", half("a")).await.unwrap();
        let e = k.add_entity(a, "n", "t", half("b")).await.unwrap_err();
        assert_eq!(e.fields[0].field, "attributes", "{e}");
        assert!(e.message.contains("null"), "{e}");

        k.add_entity(a, "m", "t", None).await.unwrap();
        let full = k.add_entity(a, "o", "t", None).await.unwrap_err();
        assert_eq!(full.kind, ErrorKind::ResourceExhausted, "{full}");
        assert!(!k.add_entity(a, "m", "t2", None).await.unwrap().created, "updates still go in");
        assert!(k.add_entity(Uuid::now_v7(), "o", "t", None).await.unwrap().created, "the cap is per agent");

        k.add_relation(a, "n", "m", "uses", None).await.unwrap();
        assert!(!k.add_relation(a, "n", "m", "uses", Some(3.0)).await.unwrap().created, "an update is no new one");
        let full = k.add_relation(a, "m", "n", "uses", None).await.unwrap_err();
        assert_eq!(full.kind, ErrorKind::ResourceExhausted, "{full}");
        let deep = k.query(a, &Walk { start: "n".into(), depth: Some(MAX_DEPTH + 1), ..Walk::default() }).await;
        assert_eq!(deep.unwrap_err().fields[0].field, "depth");
    }

    #[tokio::test]
    async fn relations_need_both_ends_and_are_one_per_from_to_and_type() {
        let (_dir, k) = knowledge(Limits::default()).await;
        let a = Uuid::now_v7();
        k.add_entity(a, "kennel", "project", None).await.unwrap();
        let e = k.add_relation(a, "kennel", "sqlx", "uses", None).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::NotFound);
        assert!(e.message.contains("`sqlx`") && e.message.contains("knowledge_add_entity"), "{e}");
        let both = k.add_relation(a, "ghost", "sqlx", "uses", None).await.unwrap_err();
        assert!(both.message.contains("`ghost` or `sqlx`"), "{both}");
        k.add_entity(a, "sqlx", "library", None).await.unwrap();
        let r = k.add_relation(a, "kennel", "sqlx", "uses", None).await.unwrap();
        assert!(r.created && r.item.weight == 1.0);
        let r = k.add_relation(a, "kennel", "sqlx", "uses", Some(0.5)).await.unwrap();
        assert!(!r.created && r.item.weight == 0.5);
        let r = k.add_relation(a, "kennel", "sqlx", "uses", None).await.unwrap();
        assert_eq!(r.item.weight, 0.5, "no weight: left as it was");
        assert!(k.add_relation(a, "kennel", "sqlx", "depends_on", None).await.unwrap().created);
        let page = k.relations(a, &PageRequest::default()).await.unwrap();
        assert_eq!(page.total, 2);
        // Another agent has neither entity.
        let other = k.add_relation(Uuid::now_v7(), "kennel", "sqlx", "uses", None).await.unwrap_err();
        assert_eq!(other.kind, ErrorKind::NotFound);
    }

    #[tokio::test]
    async fn a_walk_reaches_each_entity_once_by_distance_following_the_filter_and_direction() {
        let (_dir, k) = knowledge(Limits::default()).await;
        let a = Uuid::now_v7();
        for n in ["a", "b", "c", "d", "lib"] {
            k.add_entity(a, n, "thing", None).await.unwrap();
        }
        // A cycle a → b → c → a, c → d, and a and b use lib.
        for (from, to, t) in [("a", "b", "next"), ("b", "c", "next"), ("c", "a", "next"), ("c", "d", "next")] {
            k.add_relation(a, from, to, t, None).await.unwrap();
        }
        k.add_relation(a, "a", "lib", "uses", None).await.unwrap();
        k.add_relation(a, "b", "lib", "uses", None).await.unwrap();

        let walk = |start: &str, depth: u32| Walk { start: start.into(), depth: Some(depth), ..Walk::default() };
        let g = k.query(a, &walk("a", 4)).await.unwrap();
        assert_eq!(names(&g), [("a", 0), ("b", 1), ("c", 1), ("lib", 1), ("d", 2)]);
        assert_eq!(g.edges.len(), 6, "every relation once: {:?}", g.edges);
        assert!(!g.truncated);

        let out = k.query(a, &Walk { direction: Direction::Out, ..walk("a", 1) }).await.unwrap();
        assert_eq!(names(&out), [("a", 0), ("b", 1), ("lib", 1)]);
        let users = k.query(a, &Walk { direction: Direction::In, ..walk("lib", 1) }).await.unwrap();
        assert_eq!(names(&users), [("lib", 0), ("a", 1), ("b", 1)], "which things use lib");

        let next_only = Walk { relation_filter: vec!["next".into()], ..walk("a", 1) };
        let g = k.query(a, &next_only).await.unwrap();
        assert_eq!(names(&g), [("a", 0), ("b", 1), ("c", 1)]);
        assert!(g.edges.iter().all(|e| e.relation_type == "next"));

        let g = k.query(a, &walk("d", 0)).await.unwrap();
        assert_eq!((names(&g), g.edges.len()), (vec![("d", 0)], 0), "depth 0: the entity alone");
        assert_eq!(k.query(a, &walk("zz", 1)).await.unwrap_err().kind, ErrorKind::NotFound);
        assert_eq!(k.query(Uuid::now_v7(), &walk("a", 1)).await.unwrap_err().kind, ErrorKind::NotFound);
    }

    #[tokio::test]
    async fn a_walk_stops_at_its_bounds_and_says_so() {
        let (_dir, k) = knowledge(Limits::default()).await;
        let a = Uuid::now_v7();
        k.add_entity(a, "hub", "t", None).await.unwrap();
        for i in 0..(MAX_NODES + 10) {
            k.add_entity(a, &format!("n{i}"), "t", None).await.unwrap();
            k.add_relation(a, "hub", &format!("n{i}"), "has", None).await.unwrap();
        }
        let g = k.query(a, &Walk { start: "hub".into(), ..Walk::default() }).await.unwrap();
        assert_eq!(g.nodes.len(), MAX_NODES);
        assert_eq!(g.edges.len(), MAX_NODES - 1, "only relations between returned entities");
        assert!(g.truncated && g.note.is_some());

        let overview = k.overview(a, 20, 1000).await.unwrap();
        assert_eq!((overview.total_entities, overview.total_relations), (MAX_NODES as u64 + 11, MAX_NODES as u64 + 10));
        assert_eq!(overview.entities[0].name, "hub", "the best connected first");
        assert_eq!(overview.entities.len(), 20);
        assert_eq!(overview.edges.len(), 19);
    }
}
