//! The JSON-RPC endpoint (`/a2a`, `/a2a/NAME`): reads a request, settles its dialect (the
//! method's name; `A2A-Version` where given), and answers with one JSON-RPC response or, for
//! the streaming methods, a stream of them.

use std::sync::Arc;

use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::error::A2aError;
use super::task::{Cursor, ListFilter, Task, TaskEvent, TaskState};
use super::wire::Dialect;
use super::{A2aServer, AccessRefusal, Inbound};
use crate::agent::Agent;

/// What a request is answered with.
pub enum Answer {
    /// One JSON-RPC response (a result or an error).
    Json(Value),
    /// JSON-RPC responses, one per update, until the task ends (served as server-sent events).
    Stream(BoxStream<'static, Value>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Send,
    SendStreaming,
    GetTask,
    ListTasks,
    CancelTask,
    Subscribe,
    PushConfig,
    ExtendedCard,
}

/// Every method name of both versions, and what it asks for.
const METHODS: &[(&str, Method, Dialect)] = &[
    ("SendMessage", Method::Send, Dialect::V1),
    ("SendStreamingMessage", Method::SendStreaming, Dialect::V1),
    ("GetTask", Method::GetTask, Dialect::V1),
    ("ListTasks", Method::ListTasks, Dialect::V1),
    ("CancelTask", Method::CancelTask, Dialect::V1),
    ("SubscribeToTask", Method::Subscribe, Dialect::V1),
    ("CreateTaskPushNotificationConfig", Method::PushConfig, Dialect::V1),
    ("GetTaskPushNotificationConfig", Method::PushConfig, Dialect::V1),
    ("ListTaskPushNotificationConfigs", Method::PushConfig, Dialect::V1),
    ("DeleteTaskPushNotificationConfig", Method::PushConfig, Dialect::V1),
    ("GetExtendedAgentCard", Method::ExtendedCard, Dialect::V1),
    ("message/send", Method::Send, Dialect::V0_3),
    ("message/stream", Method::SendStreaming, Dialect::V0_3),
    ("tasks/get", Method::GetTask, Dialect::V0_3),
    ("tasks/cancel", Method::CancelTask, Dialect::V0_3),
    ("tasks/resubscribe", Method::Subscribe, Dialect::V0_3),
    ("tasks/pushNotificationConfig/set", Method::PushConfig, Dialect::V0_3),
    ("tasks/pushNotificationConfig/get", Method::PushConfig, Dialect::V0_3),
    ("tasks/pushNotificationConfig/list", Method::PushConfig, Dialect::V0_3),
    ("tasks/pushNotificationConfig/delete", Method::PushConfig, Dialect::V0_3),
    ("agent/getAuthenticatedExtendedCard", Method::ExtendedCard, Dialect::V0_3),
];

/// The most tasks one `ListTasks` page holds, and how many it holds when not told (the
/// SDK's bounds).
const MAX_PAGE: u64 = 100;
const DEFAULT_PAGE: usize = 50;

impl A2aServer {
    /// Answers one request for `/a2a` (`path_agent` none) or `/a2a/NAME`. Refused outright (no
    /// JSON-RPC answer) when the agent is not exposed or the caller may not reach it.
    pub async fn handle(
        &self,
        path_agent: Option<&str>,
        inbound: Inbound,
        version: Option<&str>,
        body: &str,
    ) -> Result<Answer, AccessRefusal> {
        let agent = self.target(path_agent, &inbound)?;
        let request: Value = match serde_json::from_str(body) {
            Ok(v) => v,
            Err(e) => {
                return Ok(Answer::Json(A2aError::Parse(format!("the body is not JSON: {e}")).response(&Value::Null)));
            }
        };
        let id = match request.get("id") {
            Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
            _ => Value::Null,
        };
        let call = Call { server: self, agent, inbound, id };
        Ok(match call.answer(version, &request).await {
            Ok(answer) => answer,
            // A client that asked for a stream reads only a stream (the 0.3 SDK refuses a JSON
            // body there): its error is the one event of one.
            Err(e) if asks_for_stream(&request) => {
                let error = e.response(&call.id);
                Answer::Stream(stream::once(async move { error }).boxed())
            }
            Err(e) => Answer::Json(e.response(&call.id)),
        })
    }
}

fn method_named(name: &str) -> Option<(Method, Dialect)> {
    METHODS.iter().find(|(n, ..)| *n == name).map(|&(_, method, dialect)| (method, dialect))
}

fn asks_for_stream(request: &Value) -> bool {
    let method = request["method"].as_str().and_then(method_named).map(|(m, _)| m);
    matches!(method, Some(Method::SendStreaming | Method::Subscribe))
}

/// One request being answered.
struct Call<'a> {
    server: &'a A2aServer,
    agent: Arc<Agent>,
    inbound: Inbound,
    id: Value,
}

impl Call<'_> {
    async fn answer(&self, version: Option<&str>, request: &Value) -> Result<Answer, A2aError> {
        if !request.is_object() {
            return Err(A2aError::InvalidRequest(
                "a request is one JSON-RPC object (batches are not supported)".into(),
            ));
        }
        if request["jsonrpc"] != "2.0" {
            return Err(A2aError::InvalidRequest("`jsonrpc` must be \"2.0\"".into()));
        }
        if request.get("id").is_some_and(|id| !(id.is_string() || id.is_number() || id.is_null())) {
            return Err(A2aError::InvalidRequest("`id` must be a string, a number or null".into()));
        }
        let name = request["method"].as_str().ok_or_else(|| A2aError::InvalidRequest("`method` is required".into()))?;
        let requested = Dialect::requested(version).map_err(|v| {
            A2aError::VersionNotSupported(format!(
                "A2A-Version `{v}` is not spoken here: this daemon speaks 1.0 and 0.3"
            ))
        })?;
        let Some((method, dialect)) = method_named(name) else {
            let d = requested.unwrap_or(Dialect::V1);
            return Err(A2aError::MethodNotFound(format!(
                "no method `{name}` (A2A {}: {})",
                d.version(),
                d.served_methods()
            )));
        };
        if requested == Some(Dialect::V0_3) && dialect == Dialect::V1 {
            return Err(A2aError::VersionNotSupported(format!(
                "`{name}` is an A2A 1.0 method, but this request says A2A-Version 0.3 (whose methods are {})",
                Dialect::V0_3.served_methods()
            )));
        }
        let params = match request.get("params") {
            None | Some(Value::Null) => &Value::Null,
            Some(p @ Value::Object(_)) => p,
            Some(_) => return Err(A2aError::InvalidParams("`params` must be an object".into())),
        };
        let tasks = &self.server.tasks;
        match method {
            Method::Send | Method::SendStreaming => self.send(dialect, params, method == Method::SendStreaming).await,
            Method::GetTask => {
                let task = tasks.get(&self.agent, task_id(params)?, &self.inbound).await?;
                Ok(self.result(dialect.task(&task, history_length(dialect, &params["historyLength"])?, true)))
            }
            Method::ListTasks => self.list(params).await,
            Method::CancelTask => {
                let task = tasks.cancel(&self.agent, task_id(params)?, &self.inbound).await?;
                Ok(self.result(dialect.task(&task, None, true)))
            }
            Method::Subscribe => {
                let (task, events) = tasks.subscribe(&self.agent, task_id(params)?, &self.inbound).await?;
                Ok(Answer::Stream(updates(dialect, self.id.clone(), task, events)))
            }
            Method::PushConfig => Err(A2aError::PushNotificationNotSupported),
            Method::ExtendedCard => Err(A2aError::UnsupportedOperation(
                "this daemon has no extended agent card: its card is at /.well-known/agent-card.json".into(),
            )),
        }
    }

    fn result(&self, result: Value) -> Answer {
        Answer::Json(json!({ "jsonrpc": "2.0", "id": self.id, "result": result }))
    }

    async fn send(&self, dialect: Dialect, params: &Value, streaming: bool) -> Result<Answer, A2aError> {
        let message = params
            .get("message")
            .filter(|m| m.is_object())
            .ok_or_else(|| A2aError::InvalidParams("`params.message` is required".into()))?;
        let message = dialect.incoming_message(message).map_err(A2aError::InvalidParams)?;
        let config = SendConfig::read(dialect, &params["configuration"])?;
        let tasks = &self.server.tasks;
        let started = tasks.start(self.agent.clone(), message, &self.inbound).await?;
        if streaming {
            return Ok(Answer::Stream(updates(dialect, self.id.clone(), started.task, Some(started.events))));
        }
        let task = if config.return_immediately { started.task } else { tasks.wait(started).await? };
        Ok(self.result(dialect.send_result(&task, config.history)))
    }

    async fn list(&self, params: &Value) -> Result<Answer, A2aError> {
        let page_size = match params.get("pageSize") {
            None => DEFAULT_PAGE,
            Some(n) => match n.as_u64() {
                Some(n @ 1..=MAX_PAGE) => n as usize,
                _ => {
                    return Err(A2aError::InvalidParams(format!(
                        "`pageSize` must be a whole number from 1 to {MAX_PAGE}"
                    )));
                }
            },
        };
        let state = match optional_string(params, "status")? {
            None | Some("TASK_STATE_UNSPECIFIED") => None,
            Some(name) => Some(TaskState::ALL.iter().copied().find(|s| s.as_str() == name).ok_or_else(|| {
                A2aError::InvalidParams(format!(
                    "`status` `{name}` is not a task state (TASK_STATE_WORKING, TASK_STATE_COMPLETED, …)"
                ))
            })?),
        };
        let updated_since = optional_string(params, "statusTimestampAfter")?
            .map(|t| {
                chrono::DateTime::parse_from_rfc3339(t).map(|t| crate::db::timestamp(t.to_utc())).map_err(|e| {
                    A2aError::InvalidParams(format!("`statusTimestampAfter` `{t}` is not an RFC 3339 time: {e}"))
                })
            })
            .transpose()?;
        let filter = ListFilter {
            context_id: optional_string(params, "contextId")?.map(str::to_string),
            state,
            updated_since,
            after: optional_string(params, "pageToken")?.map(Cursor::from_token).transpose()?,
            page_size,
        };
        let include_artifacts = match params.get("includeArtifacts") {
            None => false,
            Some(b) => {
                b.as_bool().ok_or_else(|| A2aError::InvalidParams("`includeArtifacts` must be true or false".into()))?
            }
        };
        let history = history_length(Dialect::V1, &params["historyLength"])?;
        let page = self.server.tasks.list(&self.agent, &self.inbound, &filter).await?;
        let tasks: Vec<Value> = page.tasks.iter().map(|t| Dialect::V1.task(t, history, include_artifacts)).collect();
        Ok(self.result(json!({
            "tasks": tasks,
            "nextPageToken": page.next_page_token.unwrap_or_default(),
            "pageSize": page_size,
            "totalSize": page.total,
        })))
    }
}

/// A send's `configuration`, in either version's spelling.
struct SendConfig {
    history: Option<usize>,
    return_immediately: bool,
}

impl SendConfig {
    fn read(dialect: Dialect, config: &Value) -> Result<SendConfig, A2aError> {
        if config.is_null() {
            return Ok(SendConfig { history: None, return_immediately: false });
        }
        if !config.is_object() {
            return Err(A2aError::InvalidParams("`params.configuration` must be an object".into()));
        }
        let (push, wait_flag) = match dialect {
            Dialect::V1 => ("taskPushNotificationConfig", "returnImmediately"),
            Dialect::V0_3 => ("pushNotificationConfig", "blocking"),
        };
        if config.get(push).is_some_and(|p| !p.is_null()) {
            return Err(A2aError::PushNotificationNotSupported);
        }
        if let Some(modes) = config.get("acceptedOutputModes").and_then(Value::as_array).filter(|m| !m.is_empty()) {
            let text = modes.iter().filter_map(Value::as_str).any(|m| matches!(m, "text/plain" | "text/*" | "*/*"));
            if !text {
                return Err(A2aError::ContentTypeNotSupported(
                    "Kennel agents answer in text/plain, which `acceptedOutputModes` leaves out".into(),
                ));
            }
        }
        let flag = match config.get(wait_flag) {
            None | Some(Value::Null) => None,
            Some(b) => Some(b.as_bool().ok_or_else(|| {
                A2aError::InvalidParams(format!("`configuration.{wait_flag}` must be true or false"))
            })?),
        };
        let return_immediately = match dialect {
            Dialect::V1 => flag.unwrap_or(false),
            Dialect::V0_3 => !flag.unwrap_or(true),
        };
        Ok(SendConfig { history: history_length(dialect, &config["historyLength"])?, return_immediately })
    }
}

fn task_id(params: &Value) -> Result<&str, A2aError> {
    params["id"]
        .as_str()
        .filter(|id| !id.is_empty())
        .ok_or_else(|| A2aError::InvalidParams("`params.id` (the task's id) is required".into()))
}

fn optional_string<'v>(params: &'v Value, field: &str) -> Result<Option<&'v str>, A2aError> {
    match params.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(A2aError::InvalidParams(format!("`{field}` must be a string"))),
    }
}

/// `historyLength`: how many of the latest messages to keep (absent: all). In 0.3, as its
/// SDK reads it, 0 also means all; in 1.0 it means none.
fn history_length(dialect: Dialect, value: &Value) -> Result<Option<usize>, A2aError> {
    let n = match value {
        Value::Null => return Ok(None),
        v => v
            .as_u64()
            .ok_or_else(|| A2aError::InvalidParams("`historyLength` must be a whole number of 0 or more".into()))?,
    };
    Ok(match (dialect, n) {
        (Dialect::V0_3, 0) => None,
        (_, n) => Some(n as usize),
    })
}

/// A task's stream: the task as it is now, then each update until it ends.
fn updates(
    dialect: Dialect,
    id: Value,
    task: Task,
    events: Option<broadcast::Receiver<TaskEvent>>,
) -> BoxStream<'static, Value> {
    let respond = move |result: Value| json!({ "jsonrpc": "2.0", "id": id, "result": result });
    let first = respond(dialect.stream_task(&task));
    let live = events.filter(|_| !task.state.is_terminal()).map(|events| (events, task));
    let rest = stream::unfold(live, move |live| {
        let respond = respond.clone();
        async move {
            let (mut events, task) = live?;
            loop {
                match events.recv().await {
                    Ok(event) => {
                        let ended = matches!(event, TaskEvent::Status { state, .. } if state.is_terminal());
                        let update = respond(dialect.stream_event(&task, &event));
                        return Some((update, (!ended).then_some((events, task))));
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        }
    });
    stream::once(async move { first }).chain(rest).boxed()
}
