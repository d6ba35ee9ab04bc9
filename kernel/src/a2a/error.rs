//! A2A's JSON-RPC errors (A2A 1.0 §5.4 and JSON-RPC 2.0), one variant per code, each with a
//! message a client's operator can act on.

use serde_json::{Value, json};

use crate::error::{Error, ErrorKind};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum A2aError {
    Parse(String),
    InvalidRequest(String),
    MethodNotFound(String),
    InvalidParams(String),
    Internal(String),
    TaskNotFound(String),
    TaskNotCancelable(String),
    PushNotificationNotSupported,
    UnsupportedOperation(String),
    ContentTypeNotSupported(String),
    VersionNotSupported(String),
}

impl A2aError {
    pub fn code(&self) -> i64 {
        match self {
            A2aError::Parse(_) => -32700,
            A2aError::InvalidRequest(_) => -32600,
            A2aError::MethodNotFound(_) => -32601,
            A2aError::InvalidParams(_) => -32602,
            A2aError::Internal(_) => -32603,
            A2aError::TaskNotFound(_) => -32001,
            A2aError::TaskNotCancelable(_) => -32002,
            A2aError::PushNotificationNotSupported => -32003,
            A2aError::UnsupportedOperation(_) => -32004,
            A2aError::ContentTypeNotSupported(_) => -32005,
            A2aError::VersionNotSupported(_) => -32009,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            A2aError::PushNotificationNotSupported => {
                "push notifications are not supported: stream with SendStreamingMessage or poll GetTask"
            }
            A2aError::Parse(m)
            | A2aError::InvalidRequest(m)
            | A2aError::MethodNotFound(m)
            | A2aError::InvalidParams(m)
            | A2aError::Internal(m)
            | A2aError::TaskNotFound(m)
            | A2aError::TaskNotCancelable(m)
            | A2aError::UnsupportedOperation(m)
            | A2aError::ContentTypeNotSupported(m)
            | A2aError::VersionNotSupported(m) => m,
        }
    }

    /// The JSON-RPC response carrying this error.
    pub fn response(&self, id: &Value) -> Value {
        json!({ "jsonrpc": "2.0", "id": id, "error": { "code": self.code(), "message": self.message() } })
    }
}

/// A kernel error met while serving a request: bad input is the caller's, a missing thing is
/// "not found", and anything else is this daemon's (its text is the error's model text, which
/// for `Internal` is only the reference to the log).
impl From<Error> for A2aError {
    fn from(e: Error) -> A2aError {
        match e.kind {
            ErrorKind::InvalidArguments => A2aError::InvalidParams(e.message),
            ErrorKind::NotFound => A2aError::TaskNotFound(e.message),
            _ => A2aError::Internal(e.model_text()),
        }
    }
}
