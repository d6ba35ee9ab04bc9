//! The kernel's one error type. Every front maps it the same way: tools show the model a
//! short text (`Forbidden: …`), the REST API answers `{ "error": { "kind", "message" } }`.

use serde::Serialize;
use utoipa::ToSchema;

/// The error kinds of the tool contract (spec §0.4). Fronts choose a status code from this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub enum ErrorKind {
    NotFound,
    Forbidden,
    InvalidArguments,
    ResourceExhausted,
    Timeout,
    Conflict,
    /// A prerequisite is missing: a config section, a provider, a binary.
    Unavailable,
    Failed,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "NotFound",
            ErrorKind::Forbidden => "Forbidden",
            ErrorKind::InvalidArguments => "InvalidArguments",
            ErrorKind::ResourceExhausted => "ResourceExhausted",
            ErrorKind::Timeout => "Timeout",
            ErrorKind::Conflict => "Conflict",
            ErrorKind::Unavailable => "Unavailable",
            ErrorKind::Failed => "Failed",
        }
    }
}

/// One problem with one field of an input, named by its path (`capabilities.tools[2]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

#[derive(Debug, Clone, thiserror::Error, Serialize, ToSchema)]
#[error("{kind:?}: {message}")]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    /// Per-field problems of an invalid input; empty for other errors.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldError>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into(), fields: Vec::new() }
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

    /// An invalid input with every problem found, so a form can show each next to its field.
    pub fn invalid_fields(fields: Vec<FieldError>) -> Self {
        let message = fields.iter().map(|f| format!("{}: {}", f.field, f.message)).collect::<Vec<_>>().join("; ");
        Error { kind: ErrorKind::InvalidArguments, message, fields }
    }

    /// The short text form a model sees as a tool result.
    pub fn model_text(&self) -> String {
        format!("{}: {}", self.kind.as_str(), self.message)
    }
}

/// Storage failures are not the caller's fault and carry no detail worth showing a model;
/// the full error goes to the log.
impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        tracing::error!(error = %e, "database error");
        Error::failed(format!("database error: {e}"))
    }
}

impl From<sqlx::migrate::MigrateError> for Error {
    fn from(e: sqlx::migrate::MigrateError) -> Self {
        Error::failed(format!("database migration failed: {e}"))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::failed(format!("i/o error: {e}"))
    }
}

/// Deserialises a JSON value into `T`, naming the JSON path of the first problem
/// (`capabilities.tools[2]`). Used for every input that arrives as JSON: tool arguments,
/// manifests, request bodies.
pub fn from_value<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { "(arguments)".to_string() } else { path };
        let message = e.into_inner().to_string();
        Error::invalid_fields(vec![FieldError { field, message }])
    })
}
