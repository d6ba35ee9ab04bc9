//! Requests for whichever daemon holds a lease: what the cluster runs once (a stdio MCP
//! server, under `mcp:<server>`) is reached from every daemon through here. The asking daemon
//! writes the request to `cluster_calls` and `NOTIFY`s; the holder takes it (`SKIP LOCKED`),
//! answers it, writes the result and `NOTIFY`s back. Unlike a forwarded turn, a request is
//! never run twice: one whose runner dies ends with an error saying so, since a tool call
//! may have had its effect already.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::{Cluster, store};
use crate::Kernel;
use crate::db;
use crate::error::{Error, Result};

/// How a request ended, as stored for the daemon that asked.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Outcome {
    Ok(Value),
    Error(Error),
}

impl Outcome {
    pub(super) fn of(result: Result<Value>) -> Outcome {
        match result {
            Ok(value) => Outcome::Ok(value),
            Err(e) => Outcome::Error(e),
        }
    }

    pub(super) fn json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            let message = format!("a result did not serialise: {e}");
            serde_json::json!({"error": {"kind": "Internal", "message": message}}).to_string()
        })
    }
}

/// The result an asker gets for a request whose runner died mid-way.
pub(super) fn cut_off() -> String {
    Outcome::Error(Error::unavailable(
        "the daemon running it stopped during the request; it may or may not have taken effect. Check, then ask again",
    ))
    .json()
}

/// How long the asker waits between looks at the table when no notification comes.
const LOOK_AGAIN: Duration = Duration::from_secs(1);

/// Has the daemon holding `lease` answer `request`, waiting at most `limit` for it (a
/// holder that died is replaced within the lease, and the request waits for the next one).
/// `what` names the request in errors.
pub(crate) async fn ask_holder(
    cluster: &Cluster,
    lease: &str,
    request: &impl Serialize,
    limit: Duration,
    what: &str,
) -> Result<Value> {
    let id = Uuid::new_v4().to_string();
    let request = serde_json::to_string(request)
        .map_err(|e| Error::internal(format_args!("a request for another daemon did not serialise: {e}")))?;
    let waiting = cluster.wait_for(&id);
    store::ask_call(&cluster.db, &id, lease, &cluster.id, &request, &db::now()).await?;
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        tokio::select! {
            () = waiting.woken.notified() => {}
            () = tokio::time::sleep(LOOK_AGAIN.min(left)) => {}
        }
        if let Some(result) = store::take_result(&cluster.db, store::Queue::Calls, &id).await? {
            return match serde_json::from_str(&result) {
                Ok(Outcome::Ok(value)) => Ok(value),
                Ok(Outcome::Error(e)) => Err(e),
                Err(e) => Err(Error::internal(format_args!("{what}: its result is unreadable: {e}"))),
            };
        }
        if Instant::now() >= deadline {
            let secs = limit.as_secs();
            return Err(if store::withdraw_call(&cluster.db, &id).await? {
                Error::unavailable(format!(
                    "{what}: no daemon of the cluster took it within {secs} s (the one running it may have stopped); ask again"
                ))
            } else {
                store::forget_call(&cluster.db, &id).await?;
                Error::timeout(format!("{what}: the daemon running it did not answer within {secs} s"))
            });
        }
    }
}

/// Answers the requests waiting for leases this daemon holds, when their service is ready
/// here (an MCP server still connecting leaves them for its next round).
pub(super) async fn serve(kernel: &Kernel) -> Result<()> {
    let cluster = kernel.cluster();
    for lease in store::leases_with_queued_calls(kernel.db()).await? {
        if !cluster.holds(&lease) || !ready(kernel, &lease) {
            continue;
        }
        for (id, request) in store::take_calls(kernel.db(), &lease, &cluster.id).await? {
            let kernel = kernel.clone();
            let lease = lease.clone();
            tokio::spawn(async move { answer(&kernel, &id, &lease, &request).await });
        }
    }
    Ok(())
}

/// Whether what `lease` names can answer here now.
fn ready(kernel: &Kernel, lease: &str) -> bool {
    if let Some(server) = lease.strip_prefix("mcp:") {
        return kernel.service::<crate::mcp::Mcp>().ready_here(server);
    }
    lease.starts_with("agent:")
}

async fn answer(kernel: &Kernel, id: &str, lease: &str, request: &str) {
    let result = if let Some(server) = lease.strip_prefix("mcp:") {
        kernel.service::<crate::mcp::Mcp>().answer_forwarded(server, request).await
    } else if let Some(agent) = lease.strip_prefix("agent:") {
        answer_for_agent(kernel, agent, request)
    } else {
        Err(Error::internal(format_args!("no daemon answers requests for the lease `{lease}`")))
    };
    let stored = store::finish(
        kernel.db(),
        store::Queue::Calls,
        id,
        kernel.cluster().id(),
        &Outcome::of(result).json(),
        &db::now(),
    )
    .await;
    if let Err(e) = stored {
        tracing::warn!(call = id, error = %e.message, "could not store a forwarded request's result");
    }
}

/// What another daemon asks of the one holding an agent, besides its turns (which have their
/// own queue, `forward.rs`).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AgentRequest {
    /// Cancel the turn running in this session (an operator's Stop on another daemon's page).
    CancelTurn { session: Uuid, by: String },
}

fn answer_for_agent(kernel: &Kernel, agent: &str, request: &str) -> Result<Value> {
    let agent: Uuid = agent.parse().map_err(|_| Error::internal(format_args!("`{agent}` is not an agent id")))?;
    match serde_json::from_str(request) {
        Ok(AgentRequest::CancelTurn { session, by }) => {
            Ok(serde_json::json!({ "cancelled": kernel.turns().cancel_in_session(agent, session, &by) }))
        }
        Err(e) => Err(Error::internal(format_args!("a request for agent {agent} is unreadable: {e}"))),
    }
}
