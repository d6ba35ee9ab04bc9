//! One error type for every route: `{ "error": { "kind", "message", "fields"? } }` with the
//! status that matches the kind.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kennel_kernel::Error;

use crate::status::status_for;
use serde::Serialize;
use utoipa::ToSchema;

pub enum ApiError {
    Kernel(Error),
    /// No token, or a token that is not (or no longer) valid.
    Unauthorized(&'static str),
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        ApiError::Kernel(e)
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

/// The error body every route answers with.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
struct ErrorDetail {
    /// `NotFound`, `Forbidden`, `InvalidArguments`, `ResourceExhausted`, `TooLarge`,
    /// `Timeout`, `Conflict`, `Unavailable`, `Failed`, `Internal` or `Unauthorized`.
    kind: &'static str,
    message: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fields: Vec<kennel_kernel::error::FieldError>,
    /// The session of a turn that failed: its message is stored there, to retry in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<uuid::Uuid>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut refused = None;
        let (status, detail) = match self {
            ApiError::Kernel(e) => {
                refused = Some(crate::actions::Refused::of(&e));
                (
                    status_for(e.kind),
                    ErrorDetail {
                        kind: e.kind.as_str(),
                        message: e.message,
                        fields: e.fields,
                        session_id: e.session_id,
                    },
                )
            }
            ApiError::Unauthorized(message) => (
                StatusCode::UNAUTHORIZED,
                ErrorDetail { kind: "Unauthorized", message: message.into(), fields: Vec::new(), session_id: None },
            ),
        };
        let mut response = (status, Json(ErrorBody { error: detail })).into_response();
        if let Some(refused) = refused {
            response.extensions_mut().insert(refused);
        }
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert("www-authenticate", axum::http::HeaderValue::from_static("Bearer"));
        }
        response
    }
}
