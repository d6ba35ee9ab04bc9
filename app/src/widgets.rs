//! Small pieces several pages use.

use std::collections::HashMap;
use std::sync::Arc;

use kennel_kernel::agent::Agent;
use kennel_kernel::error::FieldError;
use kennel_kernel::tool::audit::AuditRecord;
use leptos::prelude::*;
use serde_json::Value;

/// The hidden CSRF field every form carries.
#[component]
pub fn Csrf(token: String) -> impl IntoView {
    view! { <input type="hidden" name="csrf" value=token/> }
}

/// The message for `field` among `errors`, shown under its input.
pub fn field_error(errors: &[FieldError], field: &str) -> Option<impl IntoView + use<>> {
    let messages: Vec<String> = errors
        .iter()
        .filter(|e| {
            e.field == field || e.field.starts_with(&format!("{field}[")) || e.field.starts_with(&format!("{field}."))
        })
        .map(|e| if e.field == field { e.message.clone() } else { format!("{}: {}", e.field, e.message) })
        .collect();
    (!messages.is_empty()).then(|| {
        let id = format!("{}-error", field.replace('.', "-"));
        view! { <p class="field-error" id=id>{messages.join("; ")}</p> }
    })
}

/// One row of a tool's argument table.
pub struct ArgRow {
    pub name: String,
    pub kind: String,
    pub required: bool,
    pub description: String,
}

/// The arguments of a tool as rows, read from its JSON Schema.
pub fn argument_rows(schema: &Value) -> Vec<ArgRow> {
    let required: Vec<&str> =
        schema["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let Some(props) = schema["properties"].as_object() else { return Vec::new() };
    props
        .iter()
        .map(|(name, prop)| ArgRow {
            name: name.clone(),
            kind: type_label(prop),
            required: required.contains(&name.as_str()),
            description: prop["description"].as_str().unwrap_or_default().to_string(),
        })
        .collect()
}

fn type_label(prop: &Value) -> String {
    // `true` and `{}` are schemas that accept anything.
    if prop == &Value::Bool(true) || prop.as_object().is_some_and(|o| o.is_empty()) {
        return "any".into();
    }
    match &prop["type"] {
        Value::String(t) if t == "array" => format!("array of {}", type_label(&prop["items"])),
        Value::String(t) => t.clone(),
        Value::Array(types) => {
            types.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect::<Vec<_>>().join(" | ")
        }
        _ => "object".into(),
    }
}

/// Agent names by id, to show names where records hold ids.
pub fn agent_names(agents: &[Arc<Agent>]) -> HashMap<String, String> {
    agents.iter().map(|a| (a.id.to_string(), a.name.clone())).collect()
}

/// Tool calls from the audit log as a table (the overview's recent calls and `/audit`).
pub fn audit_table(records: Vec<AuditRecord>, agents: &[Arc<Agent>]) -> impl IntoView + use<> {
    let names = agent_names(agents);
    let rows = records
        .into_iter()
        .map(|r| {
            let agent = names.get(&r.agent_id).cloned().unwrap_or_else(|| r.agent_id.clone());
            let class = if r.outcome == "ok" { "ok" } else { "bad" };
            view! {
                <tr>
                    <td>{short_time(&r.at)}</td>
                    <td><a href=format!("/agents/{}", r.agent_id)>{agent}</a></td>
                    <td>{r.tool}</td>
                    <td class=class>{r.outcome}</td>
                    <td>{r.message.unwrap_or_default()}</td>
                    <td class="num">{format!("{:.2} ms", r.duration_us as f64 / 1000.0)}</td>
                    <td>{r.caller}</td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    view! {
        <div class="scroll">
            <table>
                <thead><tr><th>"When"</th><th>"Agent"</th><th>"Tool"</th><th>"Outcome"</th><th>"Message"</th><th>"Took"</th><th>"Caller"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
}

/// A timestamp as a person reads it: `2026-11-30 14:02:11`.
pub fn short_time(rfc3339: &str) -> String {
    rfc3339.get(..19).map(|s| s.replace('T', " ")).unwrap_or_else(|| rfc3339.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_rows_read_types_requirement_and_descriptions() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words"},
                "limit": {"type": ["integer", "null"]},
                "names": {"type": "array", "items": {"type": "string"}},
                "args": {},
                "anything": true
            },
            "required": ["query"]
        });
        let rows = argument_rows(&schema);
        let by = |n: &str| rows.iter().find(|r| r.name == n).unwrap();
        assert!(by("query").required && by("query").description == "Words");
        assert_eq!(by("limit").kind, "integer");
        assert!(!by("limit").required);
        assert_eq!(by("names").kind, "array of string");
        assert_eq!(by("args").kind, "any");
        assert_eq!(by("anything").kind, "any");
    }
}
