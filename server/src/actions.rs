//! Which requests are operator actions, and their record in the kernel's action log. One
//! layer, on the API and on the dashboard, so no handler records anything itself: a
//! state-changing request by an operator or an API token is written, named as its route
//! declared (`routes.rs`) and with its outcome, before it is answered.

use std::sync::Arc;

use axum::extract::{FromRequestParts, MatchedPath, RawPathParams, Request, State};
use axum::http::StatusCode;
use axum::http::header::LOCATION;
use axum::middleware::Next;
use axum::response::Response;
use kennel_kernel::actions::NewAction;
use kennel_kernel::tool::Caller;
use kennel_kernel::{Error, Kernel};

use crate::dashboard::Operator;
use crate::http::Bearer;
use crate::routes::{Action, Declared};

/// Why a request was refused, left on its response by the API's and the dashboard's error
/// answers for the log to read.
#[derive(Clone)]
pub struct Refused {
    pub kind: &'static str,
    pub message: String,
}

impl Refused {
    pub fn of(e: &Error) -> Refused {
        Refused { kind: e.kind.as_str(), message: e.message.clone() }
    }
}

/// Left on a response to a request that changed nothing though its method could (an API
/// preview: `dry_run`), so the log does not list it as a change.
#[derive(Clone, Copy)]
pub struct Unchanged;

/// What the action layer needs: the log, and what each route of its front declared its
/// state-changing requests to be (`routes.rs`).
#[derive(Clone)]
pub struct Log {
    kernel: Kernel,
    declared: Arc<Declared>,
}

impl Log {
    pub fn new(kernel: Kernel, declared: Arc<Declared>) -> Log {
        Log { kernel, declared }
    }
}

/// Records each state-changing request of an operator or an API token, under the name its
/// route declared. Runs inside the fronts' sign-in checks (it reads who they let in) and
/// outside every handler.
pub async fn record(State(Log { kernel, declared }): State<Log>, req: Request, next: Next) -> Response {
    // A read is not an action: it goes through with nothing looked at (the route, its
    // parameters and the caller are read only for a change).
    let method = req.method().clone();
    if !crate::routes::changes(&method) {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let route = parts.extensions.get::<MatchedPath>().cloned();
    let params = RawPathParams::from_request_parts(&mut parts, &()).await;
    let req = Request::from_parts(parts, body);
    let (Some(route), Some(actor)) = (route, actor(&req)) else {
        return next.run(req).await;
    };
    let route = route.as_str().to_string();
    let action = match declared.action(&method, &route) {
        Action::Logged => return next.run(req).await,
        Action::Named(action) => action.to_string(),
        Action::Unnamed => format!("{method} {route}"),
    };
    let subject = params.ok().and_then(|p| p.iter().next().map(|(_, value)| value.to_string()));

    let response = next.run(req).await;
    if response.extensions().get::<Unchanged>().is_some() {
        return response;
    }
    let (outcome, detail) = outcome(&response);
    let subject = subject.or_else(|| created(&route, &response));
    let refused = outcome != "ok";
    if let Err(e) = kernel.actions().record(NewAction { actor, action, subject, outcome, detail }).await {
        // The answer stands (a change made, or a refusal); hiding it behind an error would
        // lose what it says (a new token is shown only once). The log says what is missing.
        tracing::error!(error = %e.message, refused, "an operator action could not be recorded in the action log");
    }
    response
}

/// Who made a request, as the logs name callers: the signed-in operator, the API token, or
/// `cli` for the CLI's token.
fn actor(req: &Request) -> Option<String> {
    let extensions = req.extensions();
    let caller = match (extensions.get::<Operator>(), extensions.get::<Bearer>()) {
        (Some(op), _) => Caller::Operator(op.name.clone()),
        (None, Some(Bearer(caller))) => caller.clone(),
        (None, None) => return None,
    };
    Some(caller.audit_label())
}

/// How a request ended, and what its maker was told: the refusal's kind and message, a
/// status in words for a form sent back with its errors, or `ok` with the next page's notice.
fn outcome(response: &Response) -> (String, Option<String>) {
    if let Some(refused) = response.extensions().get::<Refused>() {
        return (refused.kind.to_string(), Some(refused.message.clone()));
    }
    let status = response.status();
    if status.is_client_error() || status.is_server_error() {
        return (status.canonical_reason().unwrap_or("refused").to_string(), None);
    }
    ("ok".into(), response.extensions().get::<crate::dashboard::NoticePending>().map(|n| n.text.clone()))
}

/// What a create made: the item its answer leads to (`/agents` → `/agents/ID`).
fn created(route: &str, response: &Response) -> Option<String> {
    if response.status() == StatusCode::UNPROCESSABLE_ENTITY {
        return None;
    }
    let location = location(response)?;
    let path = location.split(['?', '#']).next()?;
    let rest = path.strip_prefix(route)?.strip_prefix('/')?;
    rest.split('/').next().filter(|s| !s.is_empty()).map(str::to_string)
}

fn location(response: &Response) -> Option<String> {
    response.headers().get(LOCATION)?.to_str().ok().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use axum::http::Method;

    use super::*;

    #[test]
    fn each_front_names_the_same_action_alike() {
        let api = crate::http::api_routes().served().1;
        let dashboard = crate::dashboard::signed_in(0).served().1;
        for (on_api, on_dashboard, action) in [
            ((Method::POST, "/api/agents/{id}/stop"), (Method::POST, "/agents/{id}/stop"), "agent.stop"),
            (
                (Method::POST, "/api/agents/{id}/sessions/{session}/cancel"),
                (Method::POST, "/agents/{id}/sessions/{session}/cancel"),
                "turn.cancel",
            ),
            ((Method::DELETE, "/api/agents/{id}"), (Method::POST, "/agents/{id}/remove"), "agent.delete"),
            ((Method::PUT, "/api/templates/{name}"), (Method::POST, "/agent-types/{name}"), "type.update"),
            ((Method::DELETE, "/api/schedules/{id}"), (Method::POST, "/schedules/{id}/delete"), "schedule.delete"),
            ((Method::POST, "/api/tasks/{id}/reassign"), (Method::POST, "/tasks/{id}/reassign"), "task.reassign"),
            ((Method::PUT, "/api/skills/{name}"), (Method::POST, "/skills/{name}"), "skill.update"),
            (
                (Method::POST, "/api/skills/{name}/rollback"),
                (Method::POST, "/skills/{name}/rollback"),
                "skill.rollback",
            ),
            (
                (Method::POST, "/api/skill-proposals/{id}/accept"),
                (Method::POST, "/skill-proposals/{id}/accept"),
                "skill.accept",
            ),
        ] {
            assert_eq!(api.action(&on_api.0, on_api.1), Action::Named(action));
            assert_eq!(dashboard.action(&on_dashboard.0, on_dashboard.1), Action::Named(action));
        }
        assert_eq!(dashboard.action(&Method::POST, "/agents/{id}/chat"), Action::Logged);
        assert_eq!(dashboard.action(&Method::POST, "/agents/{id}/lift"), Action::Unnamed);
        assert_eq!(api.action(&Method::POST, "/api/something/new"), Action::Unnamed);
    }

    #[test]
    fn a_creates_subject_is_read_from_its_location() {
        let response = Response::builder()
            .status(303)
            .header(LOCATION, "/agents/0190abc?notice=hi")
            .body(axum::body::Body::empty())
            .unwrap();
        assert_eq!(created("/agents", &response).as_deref(), Some("0190abc"));
        assert_eq!(created("/settings/tokens", &response), None);
    }
}
