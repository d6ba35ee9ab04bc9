//! The one status table: which HTTP status answers each error kind. The REST API, the
//! dashboard's pages and the OpenAPI document all read it from here; the README repeats it
//! (a test checks).
//!
//! # Design notes
//!
//! ## Errors are typed once
//!
//! - **Errors are typed once.** `kennel_kernel::Error { kind, message, fields }` with the spec's
//!   kinds plus `Internal`; `server/src/status.rs` maps each kind to one status code
//!   (`status_for`, used by the API and the dashboard). Every `/api/*` route, and every unknown
//!   path under `/api/`, `/a2a` or `/.well-known/` (the dashboard's fallback hands those to
//!   `http::not_found`), answers `{ "error": { "kind", "message", "fields"?, "session_id"? } }`; other unknown paths get the dashboard's HTML
//!   404, and the dashboard answers the same error as a page with the same status. The table: `InvalidArguments` 422, `NotFound` 404,
//!   `Forbidden` 403, `Conflict` 409, `ResourceExhausted` 429, `TooLarge` 413, `Unavailable` 503, `Failed` 502,
//!   `Timeout` 504, `Internal` 500 (and `Unauthorized` 401). `status_table()` renders it from
//!   `status_for` into the OpenAPI description; a unit test checks the README's "Errors" section
//!   repeats it.

use axum::http::StatusCode;
use kennel_kernel::ErrorKind;

/// The one status table (the README's "Errors" section and the OpenAPI description repeat it):
/// a tool's or a remote's own failure is a bad gateway, not a server error; only the daemon's
/// own faults (`Internal`) are 500.
pub fn status_for(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Forbidden => StatusCode::FORBIDDEN,
        ErrorKind::InvalidArguments => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorKind::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        ErrorKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorKind::Timeout => StatusCode::GATEWAY_TIMEOUT,
        ErrorKind::Conflict => StatusCode::CONFLICT,
        ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Failed => StatusCode::BAD_GATEWAY,
        ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// When each kind is answered, for the status table.
pub fn meaning(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidArguments => {
            "a bad body, argument or query parameter (also a missing required field); `fields` names each problem; nothing changed"
        }
        ErrorKind::NotFound => "no such agent, agent type, tool, session, task, schedule or route",
        ErrorKind::Forbidden => "not granted or not allowed; nothing ran",
        ErrorKind::Conflict => {
            "a name is taken, or the thing is in a state that does not allow this (a stopped agent, a finished task)"
        }
        ErrorKind::ResourceExhausted => "a limit was reached (call depth, a count, sign-in attempts)",
        ErrorKind::TooLarge => {
            "the input is too large for what takes it (a message over the model's context window: the message says both sizes)"
        }
        ErrorKind::Unavailable => "a prerequisite is missing: a config section, a provider, a model, an API key",
        ErrorKind::Failed => {
            "a tool ran and failed, or the provider or remote agent it called did (not a fault of this daemon)"
        }
        ErrorKind::Timeout => "a tool, provider or remote agent did not finish in time",
        ErrorKind::Internal => {
            "a fault of this daemon (storage, a stored row it cannot read, I/O); the message is only `internal error (ref ID)`, the full error is in the daemon's log under that ref"
        }
    }
}

/// The status table as Markdown, built from [`status_for`] so the documents cannot drift
/// from the code. The OpenAPI description carries it; the README repeats it (a test checks).
pub fn status_table() -> String {
    let mut table = String::from("| kind | status | when |\n|---|---|---|\n");
    for kind in ErrorKind::ALL {
        table += &format!("| `{}` | {} | {} |\n", kind.as_str(), status_for(kind).as_u16(), meaning(kind));
    }
    table + "| `Unauthorized` | 401 | no token, or a token that is not (or no longer) valid |\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readme_repeats_the_status_table() {
        let readme = include_str!("../../README.md");
        for row in status_table().lines() {
            assert!(readme.contains(row), "README.md lacks the status table row\n{row}");
        }
    }

    #[test]
    fn only_the_daemons_own_faults_are_server_errors() {
        assert_eq!(status_for(ErrorKind::Failed), StatusCode::BAD_GATEWAY);
        assert_eq!(status_for(ErrorKind::Timeout), StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(status_for(ErrorKind::Internal), StatusCode::INTERNAL_SERVER_ERROR);
        let server_errors = ErrorKind::ALL.into_iter().filter(|k| status_for(*k) == StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(server_errors.collect::<Vec<_>>(), [ErrorKind::Internal]);
    }
}
