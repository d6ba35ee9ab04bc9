//! The kernel's one error type. Every front maps it the same way: tools show the model a
//! short text (`Forbidden: …`), the REST API answers `{ "error": { "kind", "message" } }`.
//!
//! # Design notes
//!
//! ## Layout
//!
//! `Error`, `ErrorKind`, `FieldError`, `from_value` (JSON → typed value with the JSON path of the
//! first problem; `strict.rs`: structs take objects only).
//!
//! ## Input and failures
//!
//! - **Input is read as its schema describes it** (`error::from_value`, used for every JSON input):
//!   a struct takes only an object at any depth (serde alone takes an array of its fields;
//!   `error/strict.rs`), and `6.0` is the integer 6, as JSON Schema reads it.
//! - **A tool's failure is not a server error.** `Failed` is a tool (or the provider or remote
//!   agent it called) that ran and failed: 502. Only the daemon's own faults are 500:
//!   `Error::internal(detail)` — and every `sqlx::Error` and `io::Error` through `From` — logs
//!   the detail with `tracing::error!` under a ref of 8 hex digits and carries only
//!   `internal error (ref ID)`, so SQL text, stored values and file paths never reach a client,
//!   the dashboard or a model (tool results use the same `Error`). Startup errors
//!   (`OpenError`) keep their detail: they go to the operator's terminal.

mod strict;

use serde::Serialize;
use utoipa::ToSchema;

/// The error kinds of the tool contract (spec §0.4). Fronts choose a status code from this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema)]
pub enum ErrorKind {
    NotFound,
    Forbidden,
    InvalidArguments,
    ResourceExhausted,
    /// The input is too large for what it goes to (a message over a model's context window).
    TooLarge,
    Timeout,
    Conflict,
    /// A prerequisite is missing: a config section, a provider, a binary.
    Unavailable,
    /// The tool (or the remote it talks to) ran and failed; not the daemon's fault.
    Failed,
    /// A fault of this daemon (storage, decoding a stored row, I/O). The caller sees only
    /// `internal error (ref ID)`; the full error is in the log under that ref.
    Internal,
}

impl ErrorKind {
    /// Every kind, in the order the status table lists them.
    pub const ALL: [ErrorKind; 10] = [
        ErrorKind::InvalidArguments,
        ErrorKind::NotFound,
        ErrorKind::Forbidden,
        ErrorKind::Conflict,
        ErrorKind::ResourceExhausted,
        ErrorKind::TooLarge,
        ErrorKind::Unavailable,
        ErrorKind::Failed,
        ErrorKind::Timeout,
        ErrorKind::Internal,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "NotFound",
            ErrorKind::Forbidden => "Forbidden",
            ErrorKind::InvalidArguments => "InvalidArguments",
            ErrorKind::ResourceExhausted => "ResourceExhausted",
            ErrorKind::TooLarge => "TooLarge",
            ErrorKind::Timeout => "Timeout",
            ErrorKind::Conflict => "Conflict",
            ErrorKind::Unavailable => "Unavailable",
            ErrorKind::Failed => "Failed",
            ErrorKind::Internal => "Internal",
        }
    }
}

/// One problem with one field of an input, named by its path (`capabilities.tools[2]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

#[derive(Debug, Clone, thiserror::Error, Serialize, serde::Deserialize, ToSchema)]
#[error("{kind:?}: {message}")]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    /// Per-field problems of an invalid input; empty for other errors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldError>,
    /// The session a failed turn was in (its message is stored there: retry in it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<uuid::Uuid>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into(), fields: Vec::new(), session_id: None }
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Forbidden, message)
    }
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, message)
    }
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unavailable, message)
    }
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Failed, message)
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArguments, message)
    }
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Timeout, message)
    }
    pub fn exhausted(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::ResourceExhausted, message)
    }

    /// A fault of this daemon. `detail` (SQL, file paths, stored values) goes only to the log,
    /// under a short ref that the caller — a client, the dashboard, a model — gets instead.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        let reference = new_ref();
        tracing::error!(reference = %reference, error = %detail, "internal error");
        Self::new(ErrorKind::Internal, format!("internal error (ref {reference})"))
    }

    /// An invalid input with every problem found, so a form can show each next to its field.
    pub fn invalid_fields(fields: Vec<FieldError>) -> Self {
        let message = fields.iter().map(|f| format!("{}: {}", f.field, f.message)).collect::<Vec<_>>().join("; ");
        Error { kind: ErrorKind::InvalidArguments, message, fields, session_id: None }
    }

    /// An invalid input, as a problem of `field` (a form shows it there); other errors, and
    /// invalid ones that already name their fields, as they are.
    pub fn with_field(self, field: &str) -> Self {
        if self.kind != ErrorKind::InvalidArguments || !self.fields.is_empty() {
            return self;
        }
        Error::invalid_fields(vec![FieldError { field: field.into(), message: self.message }])
    }

    /// A `NotFound` for what an input field names (an agent type, an agent), as an invalid
    /// value of that field; other errors as they are.
    pub fn on_field(self, field: &str) -> Self {
        if self.kind != ErrorKind::NotFound {
            return self;
        }
        Error::invalid_fields(vec![FieldError { field: field.into(), message: self.message }])
    }

    /// The error of a turn that failed in `session`.
    pub fn in_session(self, session: uuid::Uuid) -> Self {
        Error { session_id: Some(session), ..self }
    }

    /// The short text form a model sees as a tool result.
    pub fn model_text(&self) -> String {
        format!("{}: {}", self.kind.as_str(), self.message)
    }
}

/// Eight hex digits naming one internal error in the log.
fn new_ref() -> String {
    format!("{:08x}", rand::random::<u32>())
}

/// Storage failures are not the caller's fault and carry no detail worth showing anyone: a
/// decode mismatch or an SQL error is `Internal`, with the full text only in the log.
impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::internal(format_args!("database error: {e}"))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::internal(format_args!("i/o error: {e}"))
    }
}

/// Deserialises a JSON value into `T`, naming the JSON path of the first problem
/// (`capabilities.tools[2]`); a missing required field is named itself (`tools`), not its
/// parent. Used for every input that arrives as JSON: tool arguments, manifests, request bodies.
/// Read as the schemas describe it: a struct takes only an object (never an array of its
/// fields), and `6.0` is the integer 6.
pub fn from_value<T: serde::de::DeserializeOwned>(mut value: serde_json::Value) -> Result<T> {
    whole_numbers(&mut value);
    serde_path_to_error::deserialize(strict::Strict(value)).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        let field = match (missing_field(&message), path.as_str()) {
            (Some(name), ".") => name.to_string(),
            (Some(name), parent) => format!("{parent}.{name}"),
            (None, ".") => "(arguments)".to_string(),
            (None, _) => path,
        };
        Error::invalid_fields(vec![FieldError { field, message }])
    })
}

/// Writes numbers without a fractional part (`6.0`) as the whole numbers they are, as JSON
/// Schema reads them, so an integer field takes `6.0` like `6`.
fn whole_numbers(value: &mut serde_json::Value) {
    /// Floats up to 2^53 hold every whole number exactly.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match value {
        serde_json::Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() <= EXACT) {
                *value = serde_json::Value::from(f as i64);
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(whole_numbers),
        serde_json::Value::Object(fields) => fields.values_mut().for_each(whole_numbers),
        _ => {}
    }
}

/// The field named by serde's "missing field `x`" message.
fn missing_field(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.split_once('`').map(|(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        inner: Inner,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        tools: Vec<String>,
    }

    /// A missing required field is named itself, so a form can show the problem next to it.
    #[test]
    fn a_missing_field_is_named_by_its_own_path() {
        let top = from_value::<Inner>(serde_json::json!({})).unwrap_err();
        assert_eq!(top.fields[0].field, "tools");
        assert!(top.message.contains("missing field `tools`"), "{top}");
        let nested = from_value::<Outer>(serde_json::json!({"inner": {}})).unwrap_err();
        assert_eq!(nested.fields[0].field, "inner.tools");
        let wrong_type = from_value::<Outer>(serde_json::json!({"inner": {"tools": [1]}})).unwrap_err();
        assert_eq!(wrong_type.fields[0].field, "inner.tools[0]");
    }

    /// A struct is an object at every depth: serde alone would take an array of its fields.
    #[test]
    fn structs_take_objects_only_at_any_depth() {
        let top = from_value::<Inner>(serde_json::json!([["a"]])).unwrap_err();
        assert_eq!(top.fields[0].field, "(arguments)", "{top}");
        let nested = from_value::<Outer>(serde_json::json!({"inner": [["a"]]})).unwrap_err();
        assert_eq!(nested.fields[0].field, "inner", "{nested}");
        assert!(nested.message.contains("expected struct Inner"), "{nested}");
        let ok = from_value::<Outer>(serde_json::json!({"inner": {"tools": ["a"]}}));
        assert!(ok.is_ok());
    }

    /// JSON Schema counts `6.0` as the integer 6; so does every integer field here.
    #[test]
    fn whole_floats_are_integers_and_fractions_are_not() {
        #[derive(Debug, serde::Deserialize)]
        struct P {
            priority: i64,
        }
        assert_eq!(from_value::<P>(serde_json::json!({"priority": 6.0})).unwrap().priority, 6);
        assert_eq!(from_value::<P>(serde_json::json!({"priority": -0.0})).unwrap().priority, 0);
        assert!(from_value::<P>(serde_json::json!({"priority": 6.5})).is_err());
        assert!(from_value::<P>(serde_json::json!({"priority": 1e300})).is_err());
    }
}
