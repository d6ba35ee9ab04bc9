//! A2A (spec §2) as the official SDK speaks it, in version 1.0 and in 0.3: Kennel as a
//! server for the agents an operator exposes (agent cards; JSON-RPC sends, streaming, task
//! reads, lists, cancels and subscriptions) and as a client (`a2a_discover`, `a2a_send`).
//!
//! - `card.rs`: who may reach which agent, and the cards;
//! - `server.rs`: the JSON-RPC endpoint and its dialects;
//! - `task.rs`: the tasks, run in the background and streamed to subscribers;
//! - `wire/`: the 1.0 and 0.3 shapes; `error.rs`: the JSON-RPC errors;
//! - `client.rs`: the tools; `store.rs`: the SQL.
//!
//! # Design notes
//!
//! ## Layout
//!
//! A2A 1.0 and 0.3 (the official SDK's two versions): `mod.rs` registers the tools and provides
//! `A2aServer` (the cards and the endpoint, over `A2aTasks`); `card.rs` the agent cards (per
//! caller); `server.rs` the JSON-RPC endpoint (method table of both versions, `A2A-Version`,
//! streaming answers, `ListTasks`); `task.rs` `A2aTasks` (start, wait, get, cancel, subscribe,
//! list; each task's turn runs detached and publishes `TaskEvent`s); `store.rs` (`a2a_tasks`,
//! keyset paging); `error.rs` the spec's error codes; `wire/` the two dialects' shapes (`v1.rs`
//! protobuf-JSON, `v0_3.rs` the 0.3 `kind`-tagged JSON, mapped to and from 1.0); `client.rs`
//! `a2a_discover`/`a2a_send` through the address guard, speaking 1.0 or 0.3 as the remote's card
//! says.
//!
//! ## A2A
//!
//! - **A2A server.** `[a2a] expose` lists the agents other daemons and A2A clients may reach,
//!   `public` those that need no API token. Cards: `/.well-known/agent-card.json` (and the older
//!   `/.well-known/agent.json`) describe the daemon, one skill and one JSON-RPC endpoint per
//!   agent the *caller* may reach (`/a2a/NAME`, plus `/a2a` when only one is exposed): an
//!   anonymous caller sees only public agents. Each agent also has its own card at
//!   `/a2a/NAME/.well-known/agent-card.json` (401 for a token-only agent without a token, 404 for
//!   one not exposed — as is its `/a2a/NAME`). One card serves both versions: 1.0 reads
//!   `supportedInterfaces` (one entry per URL for `JSONRPC` 1.0 and one for 0.3), 0.3 reads `url`,
//!   `protocolVersion: "0.3.0"` and `preferredTransport`; `capabilities.streaming` is true and the
//!   bearer scheme is declared in both spellings, required per skill for non-public agents.
//! - **Which version a request speaks: the method's name.** `SendMessage`, `SendStreamingMessage`,
//!   `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask` are 1.0; `message/send`,
//!   `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe` are 0.3, and each answer is
//!   shaped in its request's dialect (`wire::Dialect`). `A2A-Version` is validated, not needed:
//!   `1`, `1.x` and `0.3`, `0.3.x` are spoken, anything else is `-32009`, and a 1.0 method under `0.3` is
//!   `-32009` too. **Decision:** a request without the header is served by its method's name
//!   (the SDK's server treats a missing header as 0.3; we accept 1.0 names without it because
//!   hand-written clients omit it). The spec's other errors: push-notification methods `-32003`,
//!   the extended card `-32004`, `acceptedOutputModes` without a text type `-32005`, unknown
//!   method `-32601`, bad params `-32602`, unknown task `-32001`, a finished task cancelled
//!   `-32002`. 0.3 has no `tasks/list`.
//! - **Tasks run detached.** `SendMessage` starts the task's turn in a tokio task of its own (a
//!   session per `contextId`, labelled `a2a:{owner}:{context}`) and waits for its end event, so a
//!   client that disconnects leaves a task that still finishes; `returnImmediately` (0.3:
//!   `blocking: false`) answers at once in WORKING. Streams (`SendStreamingMessage`,
//!   `SubscribeToTask` and their 0.3 names) are SSE: the task, a WORKING status update per tool
//!   call the turn makes, then the artifact and the final status; a keep-alive comment every 2 s.
//!   An error of a streaming method is sent as one SSE event (the 0.3 SDK reads nothing else
//!   there). Stopping the agent cancels its running tasks (CANCELED, told to their streams); a stopped
//!   agent's path is then 404, as its name is free for a new agent. On start the daemon fails
//!   every task still SUBMITTED or WORKING: the turn that ran it
//!   died with the last process.
//! - **Owners.** Each task is owned by its caller: `token:NAME` for an API token, `anonymous` for
//!   a public agent's tokenless caller. `GetTask`, `CancelTask` and `SubscribeToTask` of another
//!   owner's task are "task not found" (`-32001`); tasks from before owners (NULL) are readable
//!   with a token. `ListTasks` lists the caller's own tasks on that agent (filters `contextId`,
//!   `status`, `statusTimestampAfter`; `pageSize` 1–100, default 50; an opaque `pageToken`;
//!   `historyLength`, `includeArtifacts`) and is refused to anonymous callers (`-32004`): they
//!   share one owner. For the same reason (issue 43) an anonymous caller may send a `contextId`
//!   only if the agent gave it to an anonymous caller (`store::has_context`), else `-32602`;
//!   contexts the server makes are random UUIDv4, and so are anonymous callers' task ids (no
//!   time in them): holding one is the proof. `historyLength` 0 means "all" in 0.3 and "none" in 1.0, as each SDK reads it.
//! - **Follow-ups.** A message naming a `taskId` is refused: a task here is one turn and ends with
//!   it, so a follow-up to a finished task is `-32004` (the spec's "task in a terminal state"
//!   answer), an unknown task `-32001`, and a `contextId` that is not the task's `-32602`. The
//!   client continues the conversation with the same `contextId` and no `taskId`. A client's
//!   `contextId` is at most 128 characters with no control characters (it names a session).
//!
//! ## Tests
//!
//! - A2A: `tests/tests/system/a2a_sdk.rs` runs the official Python SDK as a client of Kennel and
//!   as a server for `a2a_send`, in both versions: `tests/a2a/peer.py` (`a2a-sdk` 1.3.0, installed
//!   by `scripts/test` into the system Python) and `tests/a2a/peer03.py` (0.3.26, in its own venv
//!   `target/a2a-0.3-venv`, found through `KENNEL_A2A_0_3_PYTHON`: the two versions are one
//!   package). `a2a_server.rs` speaks the raw protocol (errors, paging, streams, owners);
//!   `a2a.rs` runs two Kennel daemons against each other (and the address guard).

mod card;
mod client;
pub(crate) mod config;
mod error;
mod server;
mod store;
mod task;
mod wire;

pub use config::A2aConfig;
pub use server::Answer;
pub use task::A2aTasks;

use std::sync::Arc;

use crate::agent::Agents;
use crate::config::Config;
use crate::family::{Family, Services};
use crate::tool::Registry;

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family { name: "a2a", open, register };

fn open(s: &mut Services) -> crate::error::Result<()> {
    let tasks = s.provide(A2aTasks::new(s));
    s.provide(A2aServer { config: s.need(), agents: s.need(), tasks });
    Ok(())
}

pub(crate) fn register(r: &mut Registry, s: &Services) {
    let uses = client::Uses::new(s);
    r.add(client::A2aDiscover(uses.clone()));
    r.add(client::A2aSend(uses));
}

/// The A2A server: who may reach which exposed agent and the cards that say so (`card.rs`),
/// and the JSON-RPC endpoint (`server.rs`) over the tasks it runs.
pub struct A2aServer {
    /// `[a2a]`: which agents are exposed, and which of them publicly.
    config: Arc<Config>,
    agents: Arc<Agents>,
    tasks: Arc<A2aTasks>,
}

/// Who is calling the A2A endpoint.
#[derive(Debug, Clone)]
pub enum Inbound {
    /// A valid API token with this name.
    Token(String),
    Anonymous,
}

/// Why an A2A request is refused before JSON-RPC is even read.
#[derive(Debug)]
pub enum AccessRefusal {
    /// No exposed agent answers at this path (HTTP 404).
    NotFound(String),
    /// The agent is exposed, but not publicly, and no valid token came (HTTP 401).
    Unauthorized,
}
