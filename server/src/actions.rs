//! Which requests are operator actions, and their record in the kernel's action log. One
//! layer, on the API and on the dashboard, so no handler records anything itself: a
//! state-changing request by an operator or an API token is written, named and with its
//! outcome, before it is answered.

use std::sync::Arc;

use axum::extract::{MatchedPath, RawPathParams, Request, State};
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
pub async fn record(
    State(Log { kernel, declared }): State<Log>,
    route: Option<MatchedPath>,
    params: Result<RawPathParams, axum::extract::rejection::RawPathParamsRejection>,
    req: Request,
    next: Next,
) -> Response {
    let method = req.method().clone();
    let changes = crate::routes::changes(&method);
    let actor = actor(&req);
    let (Some(route), Some(actor), true) = (route, actor, changes) else {
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
    ("ok".into(), response.extensions().get::<crate::dashboard::NoticePending>().map(|n| n.0.clone()))
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

    mod old_table {
        use axum::http::Method;
        /// What a request is in the log.
        #[derive(Debug, PartialEq)]
        pub enum Named {
            Action(&'static str),
            /// A tool call or a chat message: each has its own record (the audit log, the session).
            Logged,
            /// A state-changing route this table does not name: recorded under its route.
            Unnamed,
        }

        /// The name of each operator action, by method and route, for both fronts.
        pub fn name(method: &Method, route: &str) -> Named {
            use Named::*;
            let post = *method == Method::POST;
            match (route, method.as_str()) {
                ("/api/templates", "POST") | ("/agent-types", "POST") => Action("type.create"),
                ("/api/templates/{name}", "PUT") => Action("type.update"),
                ("/agent-types/{name}" | "/agent-types/{name}/toml", _) if post => Action("type.update"),
                ("/api/templates/{name}", "DELETE") | ("/agent-types/{name}/delete", "POST") => Action("type.delete"),
                ("/api/templates/{name}/apply" | "/agent-types/{name}/apply", _) if post => Action("type.apply"),
                ("/api/agents", "POST") | ("/agents", "POST") => Action("agent.spawn"),
                ("/api/agents/{id}/stop" | "/agents/{id}/stop", _) if post => Action("agent.stop"),
                ("/api/agents/{id}/start" | "/agents/{id}/start", _) if post => Action("agent.start"),
                ("/api/agents/{id}", "DELETE") | ("/agents/{id}/remove", "POST") => Action("agent.delete"),
                ("/api/agents/{id}/capabilities", "PUT") => Action("agent.grants"),
                ("/agents/{id}/grant", "POST") => Action("agent.grant"),
                ("/agents/{id}/revoke", "POST") => Action("agent.revoke"),
                ("/agents/{id}/files", "POST") => Action("workspace.upload"),
                ("/api/tasks" | "/tasks", _) if post => Action("task.post"),
                ("/api/tasks/{id}/reassign" | "/tasks/{id}/reassign", _) if post => Action("task.reassign"),
                ("/api/tasks/{id}/cancel" | "/tasks/{id}/cancel", _) if post => Action("task.cancel"),
                ("/api/tasks/{id}/retry" | "/tasks/{id}/retry", _) if post => Action("task.retry"),
                ("/api/schedules/{id}/pause" | "/schedules/{id}/pause", _) if post => Action("schedule.pause"),
                ("/api/schedules/{id}/resume" | "/schedules/{id}/resume", _) if post => Action("schedule.resume"),
                ("/api/schedules/{id}", "DELETE") | ("/schedules/{id}/delete", "POST") => Action("schedule.delete"),
                ("/api/skills", "POST") => Action("skill.create"),
                ("/api/skills/{name}", "PUT") | ("/skills/{name}", "POST") => Action("skill.update"),
                ("/api/skills/{name}", "DELETE") | ("/skills/{name}/delete", "POST") => Action("skill.delete"),
                ("/api/skills/{name}/files", "PUT") => Action("skill.write_file"),
                ("/api/skills/{name}/files", "DELETE") => Action("skill.remove_file"),
                ("/api/skills/{name}/rollback" | "/skills/{name}/rollback", _) if post => Action("skill.rollback"),
                ("/api/skills/{name}/restore" | "/skills/{name}/restore", _) if post => Action("skill.restore"),
                ("/api/skill-proposals/{id}/accept" | "/skill-proposals/{id}/accept", _) if post => {
                    Action("skill.accept")
                }
                ("/api/skill-proposals/{id}/reject" | "/skill-proposals/{id}/reject", _) if post => {
                    Action("skill.reject")
                }
                ("/api/inbox/read" | "/inbox/read", _) if post => Action("inbox.read"),
                ("/settings/tokens", "POST") => Action("token.create"),
                ("/settings/tokens/{name}/revoke", "POST") => Action("token.revoke"),
                ("/api/agents/{id}/memory/kv/{key}", "PUT") => Action("memory.store"),
                ("/api/agents/{id}/memory/kv/{key}", "DELETE") => Action("memory.remove"),
                ("/api/agents/{id}/memory/semantic", "POST") => Action("memory.add"),
                ("/api/agents/{id}/memory/semantic/{memory_id}", "DELETE")
                | ("/agents/{id}/memory/{memory_id}/forget", "POST") => Action("memory.forget"),
                ("/api/agents/{id}/processes/{process_id}/kill" | "/agents/{id}/processes/{process_id}/kill", _)
                    if post =>
                {
                    Action("process.kill")
                }
                ("/api/events", "POST") => Action("event.publish"),
                ("/api/mcp/servers/{name}/reconnect" | "/mcp/{name}/reconnect", _) if post => Action("mcp.reconnect"),
                ("/api/reload", "POST") => Action("config.reload"),
                ("/api/workflows", "POST") => Action("workflow.create"),
                ("/api/workflows/{id}", "PUT") => Action("workflow.update"),
                ("/api/workflows/{id}", "DELETE") => Action("workflow.delete"),
                ("/api/workflows/{id}/runs", "POST") => Action("workflow.run"),
                ("/api/agents/{id}/tools/{name}/invoke" | "/tools/{name}/try", _) if post => Logged,
                // MCP messages; the tool calls among them are in the audit log.
                ("/api/agents/{id}/mcp", _) => Logged,
                ("/api/agents/{id}/sessions" | "/api/agents/{id}/messages" | "/agents/{id}/chat", _) if post => Logged,
                // The answer is the `ask_user` call's result in the session.
                ("/api/questions/{id}/answer" | "/agents/{id}/questions/{question_id}", _) if post => Logged,
                ("/logout", "POST") => Logged,
                _ => Unnamed,
            }
        }
    }

    #[test]
    fn each_front_names_the_same_action_alike() {
        let api = crate::http::api_routes().served().1;
        let dashboard = crate::dashboard::signed_in(0).served().1;
        for (on_api, on_dashboard, action) in [
            ((Method::POST, "/api/agents/{id}/stop"), (Method::POST, "/agents/{id}/stop"), "agent.stop"),
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

    /// TEMPORARY: the declared tables say what the old central table said, for every route
    /// and state-changing method.
    #[test]
    fn declared_tables_match_the_old_table() {
        use old_table::{Named, name};
        let (api_served, api) = crate::http::api_routes().served();
        let (dash_served, dashboard) = crate::dashboard::signed_in(0).served();
        let mut checked = 0;
        for (served, table) in [(api_served, &api), (dash_served, &dashboard)] {
            for (_, route) in served {
                for method in [Method::POST, Method::PUT, Method::DELETE, Method::PATCH] {
                    let old = match name(&method, &route) {
                        Named::Action(a) => Action::Named(a),
                        Named::Logged => Action::Logged,
                        Named::Unnamed => Action::Unnamed,
                    };
                    assert_eq!(table.action(&method, &route), old, "{method} {route}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 400, "{checked}");
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
