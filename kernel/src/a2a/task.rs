//! A2A tasks: work other clients give this daemon's agents. A task is one turn of the agent in
//! the session of its context. It runs on its own: a client that disconnects (or asked not to
//! wait) does not stop it; only `CancelTask` or stopping the agent does, and its end is stored
//! for `GetTask`. While it runs, its updates go out to every subscriber (streaming sends,
//! `SubscribeToTask`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::error::A2aError;
use super::store::{self, NewRow};
use super::{Inbound, wire};
use crate::agent::Agent;
use crate::cluster::Cluster;
use crate::db::{self, Db, stored_enum};
use crate::family::Services;
use crate::runtime::{Runtime, TurnEnd, TurnRequest};
use crate::session::{Origin, Sessions};
use crate::tool::Caller;
use crate::turn::{AgentEvent, EventKind, Turns};

/// A task's state, stored by its 1.0 name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    Submitted,
    Working,
    Completed,
    Failed,
    Canceled,
    Rejected,
    InputRequired,
    AuthRequired,
}

stored_enum!(TaskState {
    Submitted = "TASK_STATE_SUBMITTED",
    Working = "TASK_STATE_WORKING",
    Completed = "TASK_STATE_COMPLETED",
    Failed = "TASK_STATE_FAILED",
    Canceled = "TASK_STATE_CANCELED",
    Rejected = "TASK_STATE_REJECTED",
    InputRequired = "TASK_STATE_INPUT_REQUIRED",
    AuthRequired = "TASK_STATE_AUTH_REQUIRED",
});

impl TaskState {
    /// States after which a task changes no more.
    pub fn is_terminal(self) -> bool {
        matches!(self, TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected)
    }

    /// The state in words, for messages (`completed`, `input-required`).
    fn word(self) -> &'static str {
        wire::v0_3::state(self)
    }
}

/// A task as stored; `request` is the user's message in the 1.0 form.
#[derive(Debug, Clone)]
pub struct Task {
    pub id: Uuid,
    pub agent_id: Uuid,
    pub context_id: String,
    /// `token:NAME` or `anonymous`; none for tasks from before owners were kept.
    pub owner: Option<String>,
    pub state: TaskState,
    pub updated_at: String,
    pub request: Value,
    pub reply: Option<String>,
    pub error: Option<String>,
}

/// What a running task tells its subscribers.
#[derive(Debug, Clone)]
pub enum TaskEvent {
    /// Its state changed; `message` says why it failed.
    Status { state: TaskState, message: Option<String>, timestamp: String },
    /// The agent's reply, whole (sent just before the `Completed` status): it replaces the
    /// pieces streamed before it.
    Artifact { text: String },
    /// A piece of the reply's text as the model streams it, into the same artifact: the first
    /// piece starts it (`append: false`), the others add to it.
    ArtifactChunk { text: String, append: bool },
}

/// Which of an agent's tasks `ListTasks` asks for.
#[derive(Debug, Default)]
pub struct ListFilter {
    pub context_id: Option<String>,
    pub state: Option<TaskState>,
    /// Updated at or after this stored timestamp.
    pub updated_since: Option<String>,
    /// Continue after this task (from a page token).
    pub after: Option<Cursor>,
    pub page_size: usize,
}

/// Where a page of tasks ended: the last task's update time and id (the listing's order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub updated_at: String,
    pub id: Uuid,
}

impl Cursor {
    /// The opaque `pageToken` a client sends back.
    pub fn token(&self) -> String {
        hex::encode(format!("{}|{}", self.updated_at, self.id))
    }

    pub fn from_token(token: &str) -> Result<Cursor, A2aError> {
        let refused = || A2aError::InvalidParams(format!("`pageToken` `{token}` is not one this daemon gave out"));
        let text = hex::decode(token).ok().and_then(|b| String::from_utf8(b).ok()).ok_or_else(refused)?;
        let (updated_at, id) = text.split_once('|').ok_or_else(refused)?;
        Ok(Cursor { updated_at: updated_at.to_string(), id: Uuid::parse_str(id).map_err(|_| refused())? })
    }
}

pub struct TaskPage {
    pub tasks: Vec<Task>,
    pub next_page_token: Option<String>,
    pub total: u64,
}

/// A task just started, and its updates from the start.
pub struct Started {
    pub task: Task,
    pub events: broadcast::Receiver<TaskEvent>,
}

/// A running task's handles: its turn's cancel token and its updates' sender.
struct Running {
    cancel: CancellationToken,
    events: broadcast::Sender<TaskEvent>,
}

/// Tasks other clients sent this daemon's agents, and the handles of running ones.
pub struct A2aTasks {
    db: Db,
    sessions: Arc<Sessions>,
    /// The turns' events, for the progress a task's subscribers are told.
    turns: Arc<Turns>,
    runtime: Runtime,
    /// This daemon in the cluster: a task is stored with the daemon that runs it, so another
    /// fails it when this one dies.
    daemon: String,
    running: Mutex<HashMap<Uuid, Running>>,
}

impl Inbound {
    /// Whose the tasks this caller sends are.
    fn owner(&self) -> String {
        match self {
            Inbound::Token(name) => format!("token:{name}"),
            Inbound::Anonymous => "anonymous".to_string(),
        }
    }

    /// Whether this caller may read a task of `owner`: its own; one from before owners were
    /// kept only with a token.
    fn may_read(&self, owner: Option<&str>) -> bool {
        match owner {
            Some(owner) => owner == self.owner(),
            None => matches!(self, Inbound::Token(_)),
        }
    }

    fn caller(&self) -> Caller {
        match self {
            Inbound::Token(name) => Caller::Token(name.clone()),
            Inbound::Anonymous => Caller::A2a("public".into()),
        }
    }
}

impl A2aTasks {
    pub(crate) fn new(services: &Services) -> A2aTasks {
        A2aTasks {
            db: services.get::<Db>().clone(),
            sessions: services.need(),
            turns: services.need(),
            runtime: services.get::<Runtime>().clone(),
            daemon: services.get::<Cluster>().id().to_string(),
            running: Mutex::default(),
        }
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Running>> {
        self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts a task for `message` (1.0 form): the agent's turn runs in the background.
    pub async fn start(
        self: &Arc<Self>,
        agent: Arc<Agent>,
        mut message: Value,
        inbound: &Inbound,
    ) -> Result<Started, A2aError> {
        let text = wire::v1::message_text(&message);
        if crate::text::is_blank(&text) {
            return Err(A2aError::InvalidParams("the message has no text, data or file for the agent".into()));
        }
        if let Some(task_id) = message["taskId"].as_str().filter(|t| !t.is_empty()) {
            return Err(self.follow_up_refusal(&agent, task_id, &message, inbound).await);
        }
        let owner = inbound.owner();
        // Callers without a token share one owner, so one of them may only continue a context
        // this agent gave an anonymous caller: ids made here are random (v4: no time in them),
        // so holding one is the proof. A context of its own choosing ("support") would be any
        // other anonymous caller's too.
        let anonymous = matches!(inbound, Inbound::Anonymous);
        let context_id = match message["contextId"].as_str().filter(|c| !c.is_empty()) {
            Some(context) => {
                let context = checked_context(context)?;
                // A server-made context is a UUID: one an anonymous caller named before this
                // rule ("support") is not continued either.
                if anonymous
                    && (Uuid::parse_str(context).is_err()
                        || !store::has_context(&self.db, agent.id, context, &owner).await?)
                {
                    return Err(A2aError::InvalidParams(format!(
                        "context `{context}` is not one this agent gave you: without a token, leave contextId out to start a conversation and send the contextId of its answer to continue it"
                    )));
                }
                context.to_string()
            }
            None => Uuid::new_v4().to_string(),
        };
        // A context is a conversation of one caller: its session is keyed by both.
        let session = self
            .sessions
            .labelled(agent.id, &Origin::A2a { owner: owner.to_string(), context: context_id.clone() })
            .await?;
        // An anonymous caller's task is read by its id alone: a random one.
        let id = if anonymous { Uuid::new_v4() } else { Uuid::now_v7() };
        message["contextId"] = Value::from(context_id.as_str());
        message["taskId"] = Value::from(id.to_string());
        let row = NewRow {
            id,
            agent: agent.id,
            context_id: &context_id,
            owner: &owner,
            state: TaskState::Working,
            request: &message.to_string(),
            daemon: &self.daemon,
        };
        store::insert_task(&self.db, row).await?;
        let task = self.load(agent.id, id).await?;

        // Room for a streamed reply's pieces: a subscriber that falls this far behind misses
        // some (the whole reply, sent last, makes its artifact right again).
        let (events, receiver) = broadcast::channel(1024);
        let cancel = CancellationToken::new();
        self.running().insert(id, Running { cancel: cancel.clone(), events: events.clone() });
        let turn = TurnRequest {
            session: Some(session.id),
            cancel: Some(cancel),
            // Its events are followed by turn: another task's turn in the same context (waiting
            // for or holding the session) is not this one's.
            turn_id: Some(Uuid::now_v7()),
            // A remote agent wrote the message: the turn starts tainted (issue 48).
            taint: vec![crate::approval::Label::new("a2a", inbound.caller().audit_label())],
            ..TurnRequest::headless(text, inbound.caller())
        };
        tokio::spawn(run(self.clone(), agent, id, turn, events));
        Ok(Started { task, events: receiver })
    }

    /// Why a message naming an existing task is refused: Kennel tasks take no input once
    /// started, and a finished one takes none at all (its context continues the conversation).
    async fn follow_up_refusal(&self, agent: &Agent, task_id: &str, message: &Value, inbound: &Inbound) -> A2aError {
        let task = match self.get(agent, task_id, inbound).await {
            Ok(task) => task,
            Err(refused) => return refused,
        };
        if let Some(context) = message["contextId"].as_str().filter(|c| !c.is_empty() && *c != task.context_id) {
            return A2aError::InvalidParams(format!(
                "context `{context}` is not the context of task `{task_id}` (`{}`)",
                task.context_id
            ));
        }
        if task.state.is_terminal() {
            A2aError::UnsupportedOperation(format!(
                "task `{task_id}` is {}: a finished task takes no more messages; send a new message with contextId `{}` to continue the conversation",
                task.state.word(),
                task.context_id
            ))
        } else {
            A2aError::UnsupportedOperation(format!(
                "task `{task_id}` is {} and takes no input while it runs: wait for it (GetTask, SubscribeToTask) or cancel it",
                task.state.word()
            ))
        }
    }

    /// Waits until a started task has ended; the ended task.
    pub async fn wait(&self, mut started: Started) -> Result<Task, A2aError> {
        loop {
            match started.events.recv().await {
                Ok(TaskEvent::Status { state, .. }) if state.is_terminal() => break,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => break,
            }
        }
        self.load(started.task.agent_id, started.task.id).await
    }

    /// The task `id` of `agent`, if this caller may read it (else, as for a task that does not
    /// exist, `TaskNotFound`).
    pub async fn get(&self, agent: &Agent, id: &str, inbound: &Inbound) -> Result<Task, A2aError> {
        let not_found = || A2aError::TaskNotFound(format!("agent `{}` has no task `{id}`", agent.name));
        let uuid = Uuid::parse_str(id).map_err(|_| not_found())?;
        let task = store::task(&self.db, agent.id, uuid).await?.ok_or_else(not_found)?;
        if !inbound.may_read(task.owner.as_deref()) {
            return Err(not_found());
        }
        Ok(task)
    }

    async fn load(&self, agent: Uuid, id: Uuid) -> Result<Task, A2aError> {
        store::task(&self.db, agent, id)
            .await?
            .ok_or_else(|| A2aError::Internal(format!("task `{id}` was stored but cannot be read back")))
    }

    /// Cancels a task that has not ended: its turn is stopped and it ends `Canceled`.
    pub async fn cancel(&self, agent: &Agent, id: &str, inbound: &Inbound) -> Result<Task, A2aError> {
        let task = self.get(agent, id, inbound).await?;
        let not_cancelable = |task: &Task| {
            A2aError::TaskNotCancelable(format!("task `{id}` is {}: it has already ended", task.state.word()))
        };
        if task.state.is_terminal() {
            return Err(not_cancelable(&task));
        }
        if !store::finish_task(&self.db, task.id, TaskState::Canceled, None, None).await? {
            return Err(not_cancelable(&self.load(agent.id, task.id).await?));
        }
        if let Some(running) = self.running().get(&task.id) {
            running.cancel.cancel();
        }
        self.load(agent.id, task.id).await
    }

    /// A task to stream, with its updates from now on: `None` when it has ended meanwhile
    /// (the task then shows its end).
    pub async fn subscribe(
        &self,
        agent: &Agent,
        id: &str,
        inbound: &Inbound,
    ) -> Result<(Task, Option<broadcast::Receiver<TaskEvent>>), A2aError> {
        let task = self.get(agent, id, inbound).await?;
        if task.state.is_terminal() {
            return Err(A2aError::UnsupportedOperation(format!(
                "task `{id}` is {}: it has ended and nothing more will be streamed; GetTask reads it",
                task.state.word()
            )));
        }
        let events = self.running().get(&task.id).map(|r| r.events.subscribe());
        // Read again after subscribing, so no update falls between the two.
        let task = self.load(agent.id, task.id).await?;
        Ok((task, events))
    }

    /// A page of the tasks this caller sent `agent`, most recently updated first.
    pub async fn list(&self, agent: &Agent, inbound: &Inbound, filter: &ListFilter) -> Result<TaskPage, A2aError> {
        if matches!(inbound, Inbound::Anonymous) {
            return Err(A2aError::UnsupportedOperation(
                "ListTasks lists the tasks sent with your API token; tasks sent without one are not listed (GetTask reads one by its id)".into(),
            ));
        }
        let (mut tasks, total) = store::list(&self.db, agent.id, &inbound.owner(), filter).await?;
        let next_page_token = (tasks.len() > filter.page_size).then(|| {
            tasks.truncate(filter.page_size);
            let last = tasks.last().expect("a full page");
            Cursor { updated_at: last.updated_at.clone(), id: last.id }.token()
        });
        Ok(TaskPage { tasks, next_page_token, total })
    }

    /// Fails the tasks a previous run of the daemon left working (created before `before`):
    /// no turn runs for them any more.
    /// Fails the tasks `daemon` left working (it stopped or died while they ran).
    pub(crate) async fn fail_unfinished(&self, daemon: &str) -> crate::error::Result<u64> {
        store::fail_unfinished(&self.db, daemon, "the daemon stopped while this task ran; send the message again").await
    }
}

/// The longest `contextId` a client may choose: it names the caller's session with the agent.
const MAX_CONTEXT_CHARS: usize = 128;

fn checked_context(context: &str) -> Result<&str, A2aError> {
    if crate::text::longer_than(context, MAX_CONTEXT_CHARS) || context.chars().any(char::is_control) {
        return Err(A2aError::InvalidParams(format!(
            "`contextId` must be at most {MAX_CONTEXT_CHARS} characters, without control characters"
        )));
    }
    Ok(context)
}

/// A task's turn, its progress (each tool call, as a `Working` status with a message), then
/// its end: stored first (unless a cancel ended it already), then told.
async fn run(
    tasks: Arc<A2aTasks>,
    agent: Arc<Agent>,
    id: Uuid,
    turn: TurnRequest,
    events: broadcast::Sender<TaskEvent>,
) {
    let turn_id = turn.turn_id;
    let mut progress = tasks.turns.subscribe();
    let mut listening = true;
    let running = tasks.runtime.run_turn(agent.clone(), turn);
    tokio::pin!(running);
    let streamed = std::sync::atomic::AtomicBool::new(false);
    let tell = |event: &AgentEvent| {
        if Some(event.turn_id) != turn_id {
            return;
        }
        match &event.kind {
            EventKind::TextDelta { text, .. } => {
                let append = streamed.swap(true, std::sync::atomic::Ordering::Relaxed);
                let _ = events.send(TaskEvent::ArtifactChunk { text: text.clone(), append });
                return;
            }
            // The provider's stream broke and is being read again: the next piece starts over.
            EventKind::ReplyReset { .. } => {
                streamed.store(false, std::sync::atomic::Ordering::Relaxed);
                return;
            }
            _ => {}
        }
        if let Some(text) = progress_text(&event.kind) {
            let _ =
                events.send(TaskEvent::Status { state: TaskState::Working, message: Some(text), timestamp: db::now() });
        }
    };
    // Progress first (`biased`), and what is left once the turn ends is still told: a step
    // finished in the same wake-up as the turn must not be lost to the race.
    let outcome = loop {
        tokio::select! {
            biased;
            event = progress.recv(), if listening => match event {
                Ok(event) => tell(&event),
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => listening = false,
            },
            outcome = &mut running => break outcome,
        }
    };
    while let Ok(event) = progress.try_recv() {
        tell(&event);
    }
    let (state, reply, error) = match outcome {
        Ok(turn) if turn.ended == TurnEnd::Cancelled => (TaskState::Canceled, None, None),
        Ok(turn) => (TaskState::Completed, Some(turn.reply), None),
        Err(e) => (TaskState::Failed, None, Some(e.model_text())),
    };
    if let Err(e) = store::finish_task(&tasks.db, id, state, reply.as_deref(), error.as_deref()).await {
        tracing::error!(task = %id, error = %e, "storing the end of an A2A task failed");
    }
    let ended = store::task(&tasks.db, agent.id, id).await.ok().flatten();
    tasks.running().remove(&id);
    // No subscriber is not an error: the end is stored for GetTask.
    match ended {
        Some(task) => {
            if let (TaskState::Completed, Some(text)) = (task.state, task.reply) {
                let _ = events.send(TaskEvent::Artifact { text });
            }
            let _ =
                events.send(TaskEvent::Status { state: task.state, message: task.error, timestamp: task.updated_at });
        }
        None => {
            let _ = events.send(TaskEvent::Status {
                state: TaskState::Failed,
                message: Some("the end of this task could not be stored".into()),
                timestamp: db::now(),
            });
        }
    }
}

/// What a subscriber is told of a step of the turn: the tool calls, as they start and end.
fn progress_text(kind: &EventKind) -> Option<String> {
    match kind {
        EventKind::ToolCallStarted { name, .. } => Some(format!("calling `{name}`")),
        EventKind::ToolCallFinished { name, outcome, .. } => Some(format!("`{name}` finished: {outcome}")),
        _ => None,
    }
}
