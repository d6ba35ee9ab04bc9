//! `/agents/{id}/knowledge`: an agent's knowledge graph as a picture (its best-connected
//! entities) with every entity listed below, and `?entity=NAME`: that entity's neighbourhood,
//! its attributes and its relations. Everything in it is the agent's text, shown as text.

use std::collections::HashMap;

use kennel_kernel::knowledge::{Edge, Entity, Overview, Subgraph};
use kennel_kernel::text::shorten;
use leptos::prelude::*;
use serde_json::Value;

use crate::graph::{GraphPicture, PictureEdge, PictureNode};
use crate::shell::{PageMeta, Shell};
use crate::widgets::{IntoRendered, Pager, Paging, short_time};

pub struct KnowledgePage {
    pub agent_id: String,
    pub agent_name: String,
    pub view: View,
}

pub enum View {
    /// The whole graph: a picture of its best-connected part, and a page of its entities.
    Whole { overview: Overview, entities: Vec<Entity>, paging: Paging },
    /// One entity and what is around it, `depth` relations away.
    Entity { subgraph: Subgraph, depth: u32 },
}

/// The page of the entity `name` in the agent's graph (a query string of its own, whatever
/// the name holds).
pub fn entity_href(agent_id: &str, name: &str, depth: Option<u32>) -> String {
    let mut query = vec![("entity", name.to_string())];
    query.extend(depth.map(|d| ("depth", d.to_string())));
    format!("/agents/{agent_id}/knowledge?{}", serde_urlencoded::to_string(query).unwrap_or_default())
}

pub fn render(meta: PageMeta, page: KnowledgePage) -> String {
    let id = page.agent_id;
    let whole = format!("/agents/{id}/knowledge");
    let body = match page.view {
        View::Whole { overview, entities, paging } => whole_view(&id, overview, entities, paging).rendered(),
        View::Entity { subgraph, depth } => entity_view(&id, subgraph, depth).rendered(),
    };
    crate::document(
        view! {
            <Shell meta>
                <h1>"Knowledge graph of "<a href=format!("/agents/{id}")>{page.agent_name}</a></h1>
                <form method="get" action=whole class="inline" id="find-entity">
                    <input type="text" name="entity" required aria-label="Entity name" placeholder="An entity's exact name"/>
                    <button type="submit">"Show"</button>
                    " "<a href=whole.clone()>"The whole graph"</a>
                </form>
                {body}
            </Shell>
        }
        .to_html(),
    )
}

/// Nodes and edges of a picture from entities (by name) and the relations between them.
fn picture(id: &str, nodes: Vec<(String, String)>, edges: &[Edge]) -> (Vec<PictureNode>, Vec<PictureEdge>) {
    let index: HashMap<&str, usize> = nodes.iter().enumerate().map(|(i, (name, _))| (name.as_str(), i)).collect();
    let edges = edges
        .iter()
        .filter_map(|e| {
            Some(PictureEdge {
                from: *index.get(e.from.as_str())?,
                to: *index.get(e.to.as_str())?,
                kind: e.relation_type.clone(),
            })
        })
        .collect();
    let nodes =
        nodes.into_iter().map(|(name, kind)| PictureNode { href: entity_href(id, &name, None), name, kind }).collect();
    (nodes, edges)
}

fn whole_view(id: &str, overview: Overview, entities: Vec<Entity>, paging: Paging) -> impl IntoView + use<> {
    if overview.total_entities == 0 {
        return view! {
            <section class="card" id="knowledge-empty">
                <p class="empty">"This agent's knowledge graph is empty."</p>
                <p class="hint">
                    "An agent granted "<code>"knowledge.*"</code>" builds it with "<code>"knowledge_add_entity"</code>
                    " and "<code>"knowledge_add_relation"</code>", and recalls it with "<code>"knowledge_query"</code>
                    ". It is the agent's own: no other agent sees it."
                </p>
            </section>
        }
        .rendered();
    }
    let shown = format!(
        "{} of {} entities and {} of {} relations; the best connected are drawn. Choose one to see its neighbourhood.",
        overview.entities.len(),
        overview.total_entities,
        overview.edges.len(),
        overview.total_relations
    );
    let named = overview.entities.iter().map(|e| (e.name.clone(), e.entity_type.clone())).collect();
    let (nodes, edges) = picture(id, named, &overview.edges);
    let listed = entities.len();
    let rows = entities
        .into_iter()
        .map(|e| {
            let attributes = e
                .attributes
                .iter()
                .map(|(key, value)| {
                    let value = format!(": {}", shorten(&value_text(value), ATTRIBUTE_PREVIEW));
                    view! { <li><strong>{key.clone()}</strong>{value}</li> }
                })
                .collect::<Vec<_>>();
            view! {
                <tr>
                    <td><a href=entity_href(id, &e.name, None)>{e.name.clone()}</a></td>
                    <td>{e.entity_type.clone()}</td>
                    <td><ul class="attributes">{attributes}</ul></td>
                    <td>{short_time(&e.updated_at)}</td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    view! {
        <section class="card" id="knowledge-picture">
            <p class="hint">{shown}</p>
            <GraphPicture title="The agent's knowledge graph".to_string() nodes edges/>
        </section>
        <section class="card" id="knowledge-entities">
            <h2>"Entities"</h2>
            <div class="scroll">
                <table>
                    <thead><tr><th>"Name"</th><th>"Type"</th><th>"Attributes"</th><th>"Updated"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
            <Pager shown=listed paging/>
        </section>
    }
    .rendered()
}

/// How many characters of each attribute's value the entity table shows; the entity's own
/// page shows them whole.
const ATTRIBUTE_PREVIEW: usize = 120;

/// An attribute's value as text: a string as it is, anything else as JSON.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn entity_view(id: &str, subgraph: Subgraph, depth: u32) -> impl IntoView + use<> {
    let Some(centre) = subgraph.nodes.first().cloned() else {
        return view! { <p class="empty">"Nothing to show."</p> }.rendered();
    };
    let rings: Vec<u32> = subgraph.nodes.iter().map(|n| n.distance).collect();
    let named = subgraph.nodes.iter().map(|n| (n.name.clone(), n.entity_type.clone())).collect();
    let (nodes, edges) = picture(id, named, &subgraph.edges);
    let depths = [1, 2]
        .into_iter()
        .map(|d| {
            let current = if d == depth { "page" } else { "false" };
            view! { <a href=entity_href(id, &centre.name, Some(d)) aria-current=current>{format!("{d} away")}</a> }
        })
        .collect::<Vec<_>>();
    let no_attributes = centre.attributes.is_empty().then(|| view! { <p class="hint">"No attributes."</p> });
    let attributes = centre
        .attributes
        .iter()
        .map(|(k, v)| view! { <tr><td><code>{k.clone()}</code></td><td>{value_text(v)}</td></tr> })
        .collect::<Vec<_>>();
    let touching: Vec<&Edge> = subgraph.edges.iter().filter(|e| e.from == centre.name || e.to == centre.name).collect();
    let no_relations = touching.is_empty().then(|| view! { <p class="hint">"No relations."</p> });
    let relations = touching
        .into_iter()
        .map(|e| {
            view! {
                <tr>
                    <td><a href=entity_href(id, &e.from, None)>{e.from.clone()}</a></td>
                    <td>{e.relation_type.clone()}</td>
                    <td><a href=entity_href(id, &e.to, None)>{e.to.clone()}</a></td>
                    <td class="num">{e.weight.to_string()}</td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    let reached =
        format!("{} entities and {} relations within {depth} of it.", subgraph.nodes.len(), subgraph.edges.len());
    let more = subgraph.truncated.then(|| {
        view! { <p class="hint" id="knowledge-truncated">"There is more than a picture holds: only part of the neighbourhood is shown."</p> }
    });
    view! {
        <section class="card" id="knowledge-entity">
            <h2>{centre.name.clone()}" "<span class="hint">{centre.entity_type.clone()}</span></h2>
            <nav class="tabs" aria-label="How far">{depths}</nav>
            <p class="hint">{reached}</p>
            {more}
            <GraphPicture title=format!("The neighbourhood of {}", centre.name) nodes edges rings/>
        </section>
        <div class="columns">
            <section class="card" id="knowledge-attributes">
                <h2>"Attributes"</h2>
                <div class="scroll">
                    <table>
                        <thead><tr><th>"Key"</th><th>"Value"</th></tr></thead>
                        <tbody>{attributes}</tbody>
                    </table>
                </div>
                {no_attributes}
            </section>
            <section class="card" id="knowledge-relations">
                <h2>"Relations"</h2>
                <div class="scroll">
                    <table>
                        <thead><tr><th>"From"</th><th>"Type"</th><th>"To"</th><th>"Weight"</th></tr></thead>
                        <tbody>{relations}</tbody>
                    </table>
                </div>
                {no_relations}
            </section>
        </div>
    }
    .rendered()
}
