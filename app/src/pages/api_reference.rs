//! `/api-reference`: the REST API's reference, read from this daemon's own OpenAPI document
//! (`/api/openapi.json`) and drawn here, so no script or stylesheet comes from elsewhere:
//! each operation by tag with its parameters, body and answers, then every schema's fields.

use leptos::prelude::*;
use serde_json::Value;

use crate::shell::{PageMeta, Shell};
use crate::widgets::{IntoRendered, Rendered, rich_text};

/// The document's operations by tag, and its schemas, as the page shows them.
pub struct Reference {
    pub version: String,
    pub tags: Vec<(String, Vec<Operation>)>,
    pub schemas: Vec<Schema>,
}

pub struct Operation {
    pub method: String,
    pub path: String,
    pub summary: String,
    pub description: String,
    /// Name, where (`path`, `query`), required, type, description.
    pub parameters: Vec<(String, String, bool, String, String)>,
    /// The body's schema as a type name, when it takes one.
    pub body: Option<String>,
    /// Status and what it means, with the answer's type when it has one.
    pub responses: Vec<(String, String, Option<String>)>,
}

pub struct Schema {
    pub name: String,
    pub description: String,
    /// Name, type, required, description.
    pub fields: Vec<(String, String, bool, String)>,
}

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

impl Reference {
    /// Reads an OpenAPI 3.1 document; what it lacks is left blank, never refused.
    pub fn from_document(doc: &Value) -> Reference {
        let mut tags: Vec<(String, Vec<Operation>)> = Vec::new();
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            for method in METHODS {
                let Some(op) = item.get(method) else { continue };
                let tag = op["tags"][0].as_str().unwrap_or("other").to_string();
                let operation = Operation::read(method, path, op, &item["parameters"]);
                match tags.iter_mut().find(|(t, _)| *t == tag) {
                    Some((_, ops)) => ops.push(operation),
                    None => tags.push((tag, vec![operation])),
                }
            }
        }
        tags.sort_by(|a, b| a.0.cmp(&b.0));
        let schemas = doc["components"]["schemas"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, s)| Schema::read(name, s))
            .collect();
        Reference { version: doc["info"]["version"].as_str().unwrap_or_default().to_string(), tags, schemas }
    }
}

impl Operation {
    fn read(method: &str, path: &str, op: &Value, shared: &Value) -> Operation {
        let parameters = op["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(shared.as_array().into_iter().flatten())
            .map(|p| {
                (
                    text(&p["name"]),
                    text(&p["in"]),
                    p["required"].as_bool().unwrap_or(false),
                    type_of(&p["schema"]),
                    text(&p["description"]),
                )
            })
            .collect();
        let body = op["requestBody"]["content"]
            .as_object()
            .and_then(|c| c.values().next())
            .map(|media| type_of(&media["schema"]));
        let responses = op["responses"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(status, r)| {
                let answer = r["content"].as_object().and_then(|c| c.values().next()).map(|m| type_of(&m["schema"]));
                (status.clone(), text(&r["description"]), answer.filter(|t| !t.is_empty()))
            })
            .collect();
        Operation {
            method: method.to_uppercase(),
            path: path.to_string(),
            summary: text(&op["summary"]),
            description: text(&op["description"]),
            parameters,
            body,
            responses,
        }
    }
}

impl Schema {
    fn read(name: &str, s: &Value) -> Schema {
        let required: Vec<&str> = s["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let fields = s["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(field, p)| (field.clone(), type_of(p), required.contains(&field.as_str()), text(&p["description"])))
            .collect();
        Schema { name: name.to_string(), description: text(&s["description"]), fields }
    }
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

/// A schema in a few words: its reference's name, `array of T`, a type, or its choices.
fn type_of(schema: &Value) -> String {
    if let Some(r) = schema["$ref"].as_str() {
        return r.rsplit('/').next().unwrap_or(r).to_string();
    }
    if let Some(choices) = schema["oneOf"].as_array().or_else(|| schema["anyOf"].as_array()) {
        return choices.iter().map(type_of).filter(|t| !t.is_empty()).collect::<Vec<_>>().join(" or ");
    }
    if let Some(values) = schema["enum"].as_array() {
        return values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" | ");
    }
    match &schema["type"] {
        Value::String(t) if t == "array" => format!("array of {}", type_of(&schema["items"])),
        Value::String(t) => t.clone(),
        Value::Array(types) => types.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" or "),
        _ => String::new(),
    }
}

/// The anchor of a schema's section.
fn schema_anchor(name: &str) -> String {
    format!("schema-{name}")
}

pub fn render(meta: PageMeta, r: Reference) -> String {
    let index = r
        .tags
        .iter()
        .map(|(tag, ops)| view! { <li><a href=format!("#tag-{}", tag.replace(' ', "-"))>{tag.clone()}</a>{format!(" ({})", ops.len())}</li> })
        .collect::<Vec<_>>();
    let sections = r
        .tags
        .into_iter()
        .map(|(tag, ops)| {
            let ops = ops.into_iter().map(operation).collect::<Vec<_>>();
            let id = format!("tag-{}", tag.replace(' ', "-"));
            view! { <section class="card" id=id><h2>{tag}</h2>{ops}</section> }
        })
        .collect::<Vec<_>>();
    let schemas = r.schemas.into_iter().map(schema).collect::<Vec<_>>();
    crate::document(
        view! {
            <Shell meta>
                <h1>"API reference"</h1>
                <section class="card">
                    <p>{format!("The REST API of this daemon (version {}), from its OpenAPI 3.1 document. ", r.version)}
                        "Scripts send an API token ("<a href="/settings">"Settings"</a>") as "<code>"Authorization: Bearer TOKEN"</code>". "
                        <a href="/api-reference/openapi.json">"The document itself"</a>" (as "<code>"GET /api/openapi.json"</code>" gives it)."</p>
                    <ul class="inline-list">{index}</ul>
                </section>
                {sections}
                <section class="card" id="schemas"><h2>"Schemas"</h2>{schemas}</section>
            </Shell>
        }
        .to_html(),
    )
}

fn type_link(t: String) -> Rendered {
    // A schema's name (no spaces, capitalised) links to its section.
    if t.starts_with(|c: char| c.is_ascii_uppercase()) && !t.contains(' ') {
        let href = format!("#{}", schema_anchor(&t));
        view! { <a href=href><code>{t}</code></a> }.rendered()
    } else {
        view! { <code>{t}</code> }.rendered()
    }
}

fn operation(op: Operation) -> impl IntoView {
    let params = (!op.parameters.is_empty()).then(|| {
        let rows = op
            .parameters
            .into_iter()
            .map(|(name, place, required, kind, description)| {
                view! { <tr><td><code>{name}</code></td><td>{place}</td><td>{if required { "yes" } else { "" }}</td><td>{type_link(kind)}</td><td>{rich_text(&description)}</td></tr> }
            })
            .collect::<Vec<_>>();
        view! { <div class="scroll"><table><thead><tr><th>"Parameter"</th><th>"In"</th><th>"Required"</th><th>"Type"</th><th>"Description"</th></tr></thead><tbody>{rows}</tbody></table></div> }
    });
    let body = op.body.map(|t| view! { <p>"Body: "{type_link(t)}</p> });
    let responses = op
        .responses
        .into_iter()
        .map(|(status, description, answer)| {
            view! { <tr><td>{status}</td><td>{rich_text(&description)}</td><td>{answer.map(type_link)}</td></tr> }
        })
        .collect::<Vec<_>>();
    let id = format!("{}-{}", op.method.to_lowercase(), op.path.replace(['/', '{', '}'], "-"));
    view! {
        <details class="operation" id=id>
            <summary><code class="method">{op.method}</code>" "<code>{op.path}</code>" "<span class="hint">{op.summary}</span></summary>
            <p>{rich_text(&op.description)}</p>
            {params}
            {body}
            <div class="scroll"><table><thead><tr><th>"Status"</th><th>"Meaning"</th><th>"Answer"</th></tr></thead><tbody>{responses}</tbody></table></div>
        </details>
    }
}

fn schema(s: Schema) -> impl IntoView {
    let rows = s
        .fields
        .into_iter()
        .map(|(name, kind, required, description)| {
            view! { <tr><td><code>{name}</code></td><td>{type_link(kind)}</td><td>{if required { "yes" } else { "" }}</td><td>{rich_text(&description)}</td></tr> }
        })
        .collect::<Vec<_>>();
    let fields = (!rows.is_empty()).then(|| {
        view! { <div class="scroll"><table><thead><tr><th>"Field"</th><th>"Type"</th><th>"Required"</th><th>"Description"</th></tr></thead><tbody>{rows}</tbody></table></div> }
    });
    view! {
        <details class="schema" id=schema_anchor(&s.name)>
            <summary><code>{s.name.clone()}</code></summary>
            <p>{rich_text(&s.description)}</p>
            {fields}
        </details>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_document_reads_as_operations_by_tag_and_schemas_with_their_fields() {
        let doc = json!({
            "info": {"version": "1.2.3"},
            "paths": {"/api/tasks/{id}": {"get": {"tags": ["tasks"], "summary": "One task.",
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "The task", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Task"}}}}}}}},
            "components": {"schemas": {"Task": {"required": ["id"], "properties": {
                "id": {"type": "string", "description": "Its id."},
                "tags": {"type": "array", "items": {"type": "string"}},
                "status": {"enum": ["pending", "done"]}}}}}
        });
        let r = Reference::from_document(&doc);
        assert_eq!(r.version, "1.2.3");
        let (tag, ops) = &r.tags[0];
        assert_eq!((tag.as_str(), ops[0].method.as_str(), ops[0].path.as_str()), ("tasks", "GET", "/api/tasks/{id}"));
        assert_eq!(ops[0].parameters[0], ("id".into(), "path".into(), true, "string".into(), String::new()));
        assert_eq!(ops[0].responses[0], ("200".into(), "The task".into(), Some("Task".into())));
        let fields = &r.schemas[0].fields;
        assert!(fields.contains(&("tags".into(), "array of string".into(), false, String::new())));
        assert!(fields.contains(&("status".into(), "\"pending\" | \"done\"".into(), false, String::new())));
        assert!(fields.contains(&("id".into(), "string".into(), true, "Its id.".into())));
    }
}
