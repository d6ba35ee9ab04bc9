//! Request bodies: JSON with errors that name the field's path, and manifests as JSON or
//! TOML by `Content-Type`.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use kennel_kernel::Error;
use kennel_kernel::agent::{Manifest, ManifestFormat, ManifestInput, parse_manifest, to_toml};
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// Largest body any route accepts.
const BODY_LIMIT: usize = 1024 * 1024;

async fn read_text(req: Request) -> Result<String, ApiError> {
    let bytes = Bytes::from_request(req, &())
        .await
        .map_err(|e| Error::invalid(format!("cannot read the request body: {e}")))?;
    if bytes.len() > BODY_LIMIT {
        return Err(Error::invalid(format!("the body is over {BODY_LIMIT} bytes")).into());
    }
    String::from_utf8(bytes.to_vec()).map_err(|_| Error::invalid("the body is not UTF-8 text").into())
}

/// A JSON body parsed into `T`. An empty body (or `null`) stands for `{}` and nothing more: a
/// type with a required field refuses it (422 naming the field), so a forgotten body can never
/// reach a service as defaults. Types whose fields are all optional accept it.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, _: &S) -> Result<Self, ApiError> {
        let text = read_text(req).await?;
        // No body, or JSON `null` (how clients write "no body" for an optional one).
        if text.is_empty() || text.trim() == "null" {
            let empty = serde_json::Value::Object(Default::default());
            return kennel_kernel::error::from_value(empty).map(JsonBody).map_err(|mut e| {
                e.message = format!("the body is empty: {}", e.message);
                e.into()
            });
        }
        let value =
            serde_json::from_str(&text).map_err(|e| Error::invalid(format!("the body is not valid JSON: {e}")))?;
        Ok(JsonBody(kennel_kernel::error::from_value(value)?))
    }
}

fn is_toml(value: Option<&HeaderValue>) -> bool {
    value.and_then(|v| v.to_str().ok()).is_some_and(|v| v.contains("application/toml") || v.contains("text/toml"))
}

/// A manifest body, JSON or TOML (`Content-Type: application/toml`).
pub struct ManifestBody(pub ManifestInput);

impl<S: Send + Sync> FromRequest<S> for ManifestBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, _: &S) -> Result<Self, ApiError> {
        let format = if is_toml(req.headers().get(CONTENT_TYPE)) { ManifestFormat::Toml } else { ManifestFormat::Json };
        let text = read_text(req).await?;
        Ok(ManifestBody(parse_manifest(&text, format)?))
    }
}

/// Whether the client asked for TOML (`Accept: application/toml`).
pub fn wants_toml(headers: &HeaderMap) -> bool {
    is_toml(headers.get(ACCEPT))
}

/// A manifest as TOML text.
pub fn toml_response(manifest: &Manifest) -> Response {
    ([(CONTENT_TYPE, "application/toml; charset=utf-8")], to_toml(manifest)).into_response()
}

/// Query parameters parsed into `T`; a bad parameter is a 422 like any other invalid input.
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> axum::extract::FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::try_from_uri(&parts.uri)
            .map(|q| QueryParams(q.0))
            .map_err(|e| Error::invalid(format!("bad query parameters: {}", e.body_text())).into())
    }
}
