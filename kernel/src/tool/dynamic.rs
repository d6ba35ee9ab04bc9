//! Tools whose argument schema arrives at run time (an MCP server's tools, script and
//! extension tools): the schema is data, and arguments are checked against it with a JSON
//! Schema validator before anything runs, as the typed tools' arguments are by their structs.
//!
//! # Design notes
//!
//! ## Dynamic tools
//!
//! Tools that appear and disappear while the daemon runs, all through `Tools::provide` and the
//! one pipeline (grants, the schema, depth, spill, audit) like built-in tools. Their schema is
//! data, so `tool/dynamic.rs` compiles it with the `jsonschema` crate (no resolvers: a remote
//! `$ref` is refused, never fetched; a schema that does not compile leaves the tool listed and
//! excluded with why) and checks each call's arguments before anything runs, every problem at
//! its path (`files[1]`, `(arguments)`). `ToolDef.origin` says where a tool comes from
//! (`mcp:SERVER`, `script`, `ext:PACKAGE`), the server's own name when the model sees another,
//! and a note such as "runs without a sandbox"; the Tools inspector and `GET /api/tools` show it.

use std::sync::Arc;

use serde_json::Value;

use super::{BoxFuture, ErasedTool, PreparedCall, ToolDef};
use crate::error::{Error, FieldError, Result};
use crate::text::shorten;

/// A compiled argument schema.
pub struct ArgSchema {
    validator: jsonschema::Validator,
}

/// How many problems one refusal lists; a model fixes the first few and calls again.
const MAX_PROBLEMS: usize = 5;

impl ArgSchema {
    /// Compiles `schema`; a schema that is not valid JSON Schema (or refers to documents
    /// elsewhere, which are never fetched) is refused with why.
    pub fn compile(schema: &Value) -> std::result::Result<ArgSchema, String> {
        jsonschema::options()
            .should_validate_formats(true)
            .build(schema)
            .map(|validator| ArgSchema { validator })
            .map_err(|e| shorten(&e.to_string(), 300))
    }

    /// `args` as the tool receives them, or `InvalidArguments` naming each problem's JSON path.
    pub fn check(&self, args: Value) -> Result<Value> {
        let args = super::call_arguments(args)?;
        let problems: Vec<FieldError> = self
            .validator
            .iter_errors(&args)
            .take(MAX_PROBLEMS)
            .map(|e| FieldError {
                field: field_path(&e.instance_path().to_string()),
                message: shorten(&e.to_string(), 300),
            })
            .collect();
        if problems.is_empty() { Ok(args) } else { Err(Error::invalid_fields(problems)) }
    }
}

/// A JSON pointer (`/files/0/name`) as the field paths of other refusals read (`files[0].name`).
fn field_path(pointer: &str) -> String {
    let mut path = String::new();
    for part in pointer.split('/').skip(1) {
        let part = part.replace("~1", "/").replace("~0", "~");
        if part.parse::<usize>().is_ok() {
            path.push_str(&format!("[{part}]"));
        } else {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&part);
        }
    }
    if path.is_empty() { "(arguments)".into() } else { path }
}

/// What runs a dynamic tool once its arguments passed the schema.
pub(crate) trait DynamicRun: Send + Sync + 'static {
    fn run(self: Arc<Self>, ctx: super::CallContext, args: Value) -> BoxFuture<Result<Value>>;
}

/// A dynamic tool: its definition (with the schema the model sees), the compiled schema, and
/// what runs it.
pub(crate) struct DynamicTool<R> {
    schema: ArgSchema,
    runner: Arc<R>,
}

impl<R: DynamicRun> ErasedTool for DynamicTool<R> {
    fn excluded_for(&self, _agent: &crate::agent::Agent) -> Option<String> {
        None
    }

    fn gate(&self, _ctx: &super::CallContext) -> Result<()> {
        Ok(())
    }

    fn prepare(self: Arc<Self>, args: Value) -> Result<PreparedCall> {
        let args = self.schema.check(args)?;
        let runner = self.runner.clone();
        Ok(Box::new(move |ctx| runner.run(ctx, args)))
    }
}

impl super::Provided {
    /// A tool whose schema is `def.schema`, run by `runner`. A schema that does not compile
    /// leaves the tool listed but excluded, with why.
    pub(crate) fn dynamic<R: DynamicRun>(def: ToolDef, runner: Arc<R>) -> super::Provided {
        match ArgSchema::compile(&def.schema) {
            Ok(schema) => super::Provided::erased(def, Arc::new(DynamicTool { schema, runner }), None),
            Err(why) => {
                let reason = format!("its argument schema is not valid JSON Schema: {why}");
                let schema = ArgSchema::compile(&serde_json::json!({})).expect("the empty schema compiles");
                super::Provided::erased(def, Arc::new(DynamicTool { schema, runner }), Some(reason))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_checked_against_the_schema_with_each_problem_at_its_path() {
        let schema = ArgSchema::compile(&json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "minimum": 1},
                "files": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}
            },
            "required": ["count"],
            "additionalProperties": false
        }))
        .unwrap();
        assert_eq!(schema.check(json!({"count": 2})).unwrap(), json!({"count": 2}));
        let e = schema.check(json!({"count": 0, "files": [{"name": "a"}, {}]})).unwrap_err();
        let fields: Vec<&str> = e.fields.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, ["count", "files[1]"], "{e:?}");
        assert!(e.fields[1].message.contains("\"name\" is a required property"), "{e:?}");
        let e = schema.check(Value::Null).unwrap_err();
        assert_eq!(e.fields[0].field, "(arguments)");
        assert!(schema.check(json!("{not json")).unwrap_err().message.contains("not JSON"));
    }

    #[test]
    fn a_schema_that_is_not_json_schema_or_points_elsewhere_is_refused() {
        assert!(ArgSchema::compile(&json!({"type": "no-such-type"})).is_err());
        let remote = ArgSchema::compile(&json!({"$ref": "https://example.com/schema.json"}));
        assert!(remote.is_err(), "remote documents are never fetched");
    }
}
