//! Paged lists over HTTP: `?limit=&cursor=` in, the items as the JSON array body (as before
//! paging existed, so older clients read the first page unchanged), `X-Total-Count` and
//! `Link: <…>; rel="next"` out.

use axum::Json;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use std::sync::Arc;

use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, Uri};
use axum::response::{IntoResponse, Response};
use kennel_kernel::page::{Page, PageQuery, PageRequest};
use serde::Serialize;
use serde_json::value::RawValue;

use super::body::QueryParams;
use super::error::ApiError;

pub const TOTAL_COUNT: &str = "x-total-count";

/// The page a list request asks for, and where it was asked (for the next page's link).
pub struct PageParams {
    pub request: PageRequest,
    uri: Uri,
}

impl<S: Send + Sync> FromRequestParts<S> for PageParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let QueryParams(query) = QueryParams::<PageQuery>::from_request_parts(parts, state).await?;
        Ok(PageParams { request: PageRequest::try_from(query)?, uri: parts.uri.clone() })
    }
}

impl PageParams {
    /// The answer for `page`: its items, the total and the next page's link.
    pub fn answer<T: Serialize>(&self, page: Page<T>) -> Response {
        let response = Json(&page.items).into_response();
        self.with_page_headers(response, &page)
    }

    /// [`PageParams::answer`] for items kept serialised: the array is their JSON joined, in a
    /// body allocated once at its size (serialising them again into a growing buffer was a
    /// tenth of `GET /api/templates`'s time, most of it reallocating and copying).
    pub fn answer_serialised(&self, page: Page<Arc<RawValue>>) -> Response {
        let length = 2 + page.items.iter().map(|item| item.get().len() + 1).sum::<usize>();
        let mut body = Vec::with_capacity(length);
        body.push(b'[');
        for (i, item) in page.items.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(item.get().as_bytes());
        }
        body.push(b']');
        let response = ([(CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response();
        self.with_page_headers(response, &page)
    }

    fn with_page_headers<T>(&self, mut response: Response, page: &Page<T>) -> Response {
        let headers = response.headers_mut();
        headers.insert(TOTAL_COUNT, HeaderValue::from(page.total));
        if let Some(next) = &page.next
            && let Ok(link) = HeaderValue::from_str(&format!("<{}>; rel=\"next\"", self.next_url(next)))
        {
            headers.insert(axum::http::header::LINK, link);
        }
        response
    }

    /// This request's path and query with `cursor` set to `next` (every other parameter kept).
    fn next_url(&self, next: &str) -> String {
        let kept: Vec<(String, String)> = self
            .uri
            .query()
            .map(|q| serde_urlencoded::from_str::<Vec<(String, String)>>(q).unwrap_or_default())
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| k != "cursor")
            .chain([("cursor".to_string(), next.to_string())])
            .collect();
        let query = serde_urlencoded::to_string(kept).unwrap_or_default();
        format!("{}?{query}", self.uri.path())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(uri: &str) -> PageParams {
        PageParams { request: PageRequest::default(), uri: uri.parse().unwrap() }
    }

    #[test]
    fn the_next_link_keeps_the_filters_and_replaces_the_cursor() {
        let p = params("/api/tasks?status=pending&cursor=5%3Aold&limit=2");
        assert_eq!(p.next_url("3:abc"), "/api/tasks?status=pending&limit=2&cursor=3%3Aabc");
        assert_eq!(params("/api/agents").next_url("x y"), "/api/agents?cursor=x+y");
    }
}
