//! Family `knowledge`: the tools, thin over [`super::Knowledge`], each on the calling agent's
//! own graph.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::sync::Arc;

use super::{Direction, Walk};
use crate::error::Result;
use crate::family::Services;
use crate::knowledge::Knowledge;
use crate::tool::{CallContext, Registry, Tool, ToolDef};

const FAMILY: &str = "knowledge";

/// What this family's tools reach, taken from the kernel's services when they are registered.
#[derive(Clone)]
pub(super) struct Uses {
    knowledge: Arc<Knowledge>,
}

pub(crate) fn register(r: &mut Registry, services: &Services) {
    let uses = Uses { knowledge: services.need() };
    r.add(AddEntity(uses.clone()));
    r.add(AddRelation(uses.clone()));
    r.add(Query(uses.clone()));
}

pub struct AddEntity(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddEntityArgs {
    /// The entity's name: what it is known by in your graph, matched exactly (1–200
    /// characters, one line).
    pub name: String,
    /// What kind of thing it is (`project`, `library`, `person`…; 1–64 characters).
    #[serde(rename = "type")]
    pub entity_type: String,
    /// Facts about it, a JSON object (at most 8 KiB). On an entity you already have they are
    /// merged: the keys given replace theirs, a key set to null is removed, others stay.
    pub attributes: Option<Map<String, Value>>,
}

impl Tool for AddEntity {
    type Args = AddEntityArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "knowledge_add_entity",
            FAMILY,
            "Add an entity to your private knowledge graph, or update it (type replaced, attributes merged).",
        )
        .tags(&["knowledge", "graph", "entity", "remember", "upsert"])
    }

    async fn run(&self, ctx: CallContext, args: AddEntityArgs) -> Result<Value> {
        let added = self.0.knowledge.add_entity(ctx.agent.id, &args.name, &args.entity_type, args.attributes).await?;
        Ok(json!({ "entity": added.item, "created": added.created }))
    }
}

pub struct AddRelation(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddRelationArgs {
    /// The name of the entity it starts at (it must exist: knowledge_add_entity).
    pub from: String,
    /// The name of the entity it points to (it must exist too).
    pub to: String,
    /// What the relation is (`uses`, `depends_on`, `works_on`…; 1–64 characters).
    #[serde(rename = "type")]
    pub relation_type: String,
    /// How strong it is; 1 for a new relation when not given. Adding the same relation again
    /// sets it.
    pub weight: Option<f64>,
}

impl Tool for AddRelation {
    type Args = AddRelationArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "knowledge_add_relation",
            FAMILY,
            "Add a directed, typed relation between two entities of your knowledge graph (again: sets its weight).",
        )
        .tags(&["knowledge", "graph", "relation", "link", "remember"])
    }

    async fn run(&self, ctx: CallContext, args: AddRelationArgs) -> Result<Value> {
        let added =
            self.0.knowledge.add_relation(ctx.agent.id, &args.from, &args.to, &args.relation_type, args.weight).await?;
        Ok(json!({ "relation": added.item, "created": added.created }))
    }
}

pub struct Query(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryArgs {
    /// The name of the entity to start from.
    pub start: String,
    /// How many relations away to go: 0 (the entity alone) to 4; default 2.
    #[schemars(range(max = 4))]
    pub depth: Option<u32>,
    /// Follow only relations of these types (at most 32); all types when absent or empty.
    pub relation_filter: Option<Vec<String>>,
    /// `both` (default: what it points to and what points to it), `out` or `in`.
    pub direction: Option<Direction>,
}

impl Tool for Query {
    type Args = QueryArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "knowledge_query",
            FAMILY,
            "Walk your knowledge graph breadth first from an entity: the entities reached (with distance) and relations.",
        )
        .tags(&["knowledge", "graph", "query", "recall", "bfs", "related"])
        .read_only()
    }

    async fn run(&self, ctx: CallContext, args: QueryArgs) -> Result<Value> {
        let walk = Walk {
            start: args.start,
            depth: args.depth,
            direction: args.direction.unwrap_or_default(),
            relation_filter: args.relation_filter.unwrap_or_default(),
        };
        Ok(json!(self.0.knowledge.query(ctx.agent.id, &walk).await?))
    }
}
