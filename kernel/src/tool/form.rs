//! A tool's arguments from a form a person filled in (the dashboard's "try it"): one field per
//! argument of the tool's schema, typed as the schema says, over a raw JSON object for what
//! the fields cannot say. The pipeline validates the result against the schema as it does
//! every call; this only turns text fields into JSON values, with errors that name the field.

use serde_json::{Map, Value};

use crate::error::{Error, FieldError, Result};

/// The prefix of a form field holding one argument: `arg.query`.
pub const FIELD_PREFIX: &str = "arg.";

/// What a form field for an argument of this schema is: how it is shown and read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldKind {
    Text,
    Integer,
    Number,
    Boolean,
    /// One of these strings.
    Choice(Vec<String>),
    /// Anything else (an array, an object, a union): written as JSON.
    Json,
}

impl FieldKind {
    /// The field for the property `prop` of a tool's schema.
    pub fn of(prop: &Value) -> FieldKind {
        if let Some(choices) = prop["enum"].as_array() {
            let strings: Vec<String> = choices.iter().filter_map(Value::as_str).map(str::to_string).collect();
            if strings.len() == choices.len() {
                return FieldKind::Choice(strings);
            }
        }
        let kind = match &prop["type"] {
            Value::String(t) => Some(t.as_str()),
            // `["integer", "null"]`: an optional value of one type.
            Value::Array(types) => {
                let mut not_null = types.iter().filter_map(Value::as_str).filter(|t| *t != "null");
                not_null.next().filter(|_| not_null.next().is_none())
            }
            _ => None,
        };
        match kind {
            Some("string") => FieldKind::Text,
            Some("integer") => FieldKind::Integer,
            Some("number") => FieldKind::Number,
            Some("boolean") => FieldKind::Boolean,
            _ => FieldKind::Json,
        }
    }

    /// The value `text` stands for, or why it cannot be one.
    fn read(&self, text: &str) -> std::result::Result<Value, String> {
        let trimmed = text.trim();
        match self {
            FieldKind::Text | FieldKind::Choice(_) => Ok(Value::String(text.to_string())),
            FieldKind::Integer => {
                trimmed.parse::<i64>().map(Value::from).map_err(|_| format!("`{trimmed}` is not a whole number"))
            }
            FieldKind::Number => trimmed
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| format!("`{trimmed}` is not a number")),
            FieldKind::Boolean => match trimmed {
                "true" => Ok(Value::Bool(true)),
                "false" => Ok(Value::Bool(false)),
                _ => Err(format!("`{trimmed}` is neither true nor false")),
            },
            FieldKind::Json => serde_json::from_str(trimmed).map_err(|e| format!("is not valid JSON: {e}")),
        }
    }
}

/// The arguments a "try it" form stands for: the raw JSON object (blank: `{}`), then each
/// argument field that is filled in, read as its schema's type, over it. An empty field is an
/// argument left out. Every field that cannot be read is named in the error.
pub fn arguments(schema: &Value, raw: &str, fields: &[(String, String)]) -> Result<Value> {
    let mut args: Map<String, Value> = if raw.trim().is_empty() {
        Map::new()
    } else {
        match serde_json::from_str::<Value>(raw.trim()) {
            Ok(Value::Object(object)) => object,
            Ok(_) => return Err(Error::invalid("the raw arguments are not a JSON object (`{…}`)")),
            Err(e) => return Err(Error::invalid(format!("the raw arguments are not valid JSON: {e}"))),
        }
    };
    let mut problems = Vec::new();
    for (key, text) in fields {
        let Some(name) = key.strip_prefix(FIELD_PREFIX) else { continue };
        if text.is_empty() {
            continue;
        }
        let Some(prop) = schema["properties"].get(name) else {
            problems.push(FieldError { field: name.into(), message: "is not an argument of this tool".into() });
            continue;
        };
        match FieldKind::of(prop).read(text) {
            Ok(value) => {
                args.insert(name.to_string(), value);
            }
            Err(message) => problems.push(FieldError { field: name.into(), message }),
        }
    }
    if problems.is_empty() { Ok(Value::Object(args)) } else { Err(Error::invalid_fields(problems)) }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": ["integer", "null"]},
                "ratio": {"type": "number"},
                "exact": {"type": "boolean"},
                "order": {"type": "string", "enum": ["asc", "desc"]},
                "names": {"type": "array", "items": {"type": "string"}}
            }
        })
    }

    fn fields(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (format!("{FIELD_PREFIX}{k}"), v.to_string())).collect()
    }

    #[test]
    fn each_field_is_read_as_its_schema_says_and_empty_ones_are_left_out() {
        let form = fields(&[
            ("query", " tea time "),
            ("limit", "5"),
            ("ratio", "0.5"),
            ("exact", "true"),
            ("order", "desc"),
            ("names", r#"["a", "b"]"#),
        ]);
        let args = arguments(&schema(), "", &form).unwrap();
        assert_eq!(
            args,
            json!({"query": " tea time ", "limit": 5, "ratio": 0.5, "exact": true, "order": "desc", "names": ["a", "b"]})
        );
        assert_eq!(arguments(&schema(), "", &fields(&[("query", ""), ("limit", "")])).unwrap(), json!({}));
    }

    #[test]
    fn fields_go_over_the_raw_json_which_must_be_an_object() {
        let args = arguments(&schema(), r#"{"query": "old", "extra": 1}"#, &fields(&[("query", "new")])).unwrap();
        assert_eq!(args, json!({"query": "new", "extra": 1}));
        assert!(arguments(&schema(), "[1]", &[]).unwrap_err().message.contains("not a JSON object"));
        assert!(arguments(&schema(), "{", &[]).unwrap_err().message.contains("not valid JSON"));
    }

    #[test]
    fn every_unreadable_field_is_named() {
        let form = fields(&[("limit", "five"), ("exact", "yes"), ("names", "a, b"), ("colour", "red")]);
        let error = arguments(&schema(), "", &form).unwrap_err();
        let named: Vec<(&str, &str)> = error.fields.iter().map(|f| (f.field.as_str(), f.message.as_str())).collect();
        assert_eq!(named[0], ("limit", "`five` is not a whole number"));
        assert_eq!(named[1], ("exact", "`yes` is neither true nor false"));
        assert_eq!(named[2].0, "names");
        assert_eq!(named[3], ("colour", "is not an argument of this tool"));
    }

    #[test]
    fn a_field_is_shown_as_its_type() {
        let props = &schema()["properties"];
        assert_eq!(FieldKind::of(&props["limit"]), FieldKind::Integer);
        assert_eq!(FieldKind::of(&props["order"]), FieldKind::Choice(vec!["asc".into(), "desc".into()]));
        assert_eq!(FieldKind::of(&props["names"]), FieldKind::Json);
        assert_eq!(FieldKind::of(&json!({"type": ["string", "integer"]})), FieldKind::Json);
    }
}
