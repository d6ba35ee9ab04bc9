//! Turns asked of an agent that another daemon holds. The asking daemon writes the request
//! to `cluster_turns` and `NOTIFY`s; the holder takes it (`SKIP LOCKED`), runs the turn as
//! its own, writes the result and `NOTIFY`s back. Nothing is lost when the holder dies: the
//! request stays in the table, and whoever takes the agent's lease next runs it (the half-run
//! one again, as a retry). Both sides also look every heartbeat, in case a notification was
//! missed.
//!
//! A cancel token cannot cross, so the asker's cancel (an A2A `tasks/cancel`) is written to the
//! row and told as `cancel:<id>`: the runner cancels the turn's own token, and a turn still
//! queued starts cancelled. Stopping the agent, on any daemon, cancels the turn as well.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::store;
use crate::Kernel;
use crate::agent::Agent;
use crate::db;
use crate::error::{Error, Result};
use crate::tool::{Caller, ChannelContext};
use crate::turn::{TurnRequest, TurnResult};

/// A [`TurnRequest`] as it crosses to another daemon, without its cancel token (the module
/// says how a cancel crosses).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ForwardedTurn {
    message: String,
    session: Option<Uuid>,
    new_session_label: Option<String>,
    caller: Caller,
    headless: bool,
    channel: Option<ChannelContext>,
    depth: u32,
    chain: Vec<Uuid>,
    retry: bool,
    turn_id: Option<Uuid>,
    /// Absent in a turn forwarded by a daemon from before approvals.
    #[serde(default)]
    taint: Vec<crate::approval::Label>,
}

impl ForwardedTurn {
    fn of(req: TurnRequest) -> ForwardedTurn {
        ForwardedTurn {
            message: req.message,
            session: req.session,
            new_session_label: req.new_session_label,
            caller: req.caller,
            headless: req.headless,
            channel: req.channel,
            depth: req.depth,
            chain: req.chain,
            retry: req.retry,
            turn_id: req.turn_id,
            taint: req.taint,
        }
    }

    fn into_request(self, again: bool, cancel: CancellationToken) -> TurnRequest {
        TurnRequest {
            message: self.message,
            session: self.session,
            new_session_label: self.new_session_label,
            caller: self.caller,
            headless: self.headless,
            channel: self.channel,
            depth: self.depth,
            chain: self.chain,
            cancel: Some(cancel),
            retry: self.retry || again,
            turn_id: self.turn_id,
            taint: self.taint,
        }
    }
}

/// How a forwarded turn ended, as stored for the daemon that asked.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Ok(Box<TurnResult>),
    Error(Error),
}

/// How long the asker waits between looks at the table when no notification comes.
const LOOK_AGAIN: Duration = Duration::from_secs(1);

/// Has the daemon holding `agent` run `req`, and waits for its result.
pub(crate) async fn run_elsewhere(kernel: &Kernel, agent: &Agent, req: TurnRequest) -> Result<TurnResult> {
    let cluster = kernel.cluster();
    let id = Uuid::new_v4().to_string();
    let mut cancel = req.cancel.clone();
    let request = serde_json::to_string(&ForwardedTurn::of(req))
        .map_err(|e| Error::internal(format_args!("a turn request did not serialise: {e}")))?;
    let waiting = cluster.wait_for(&id);
    store::ask_turn(kernel.db(), &id, &agent.id.to_string(), &cluster.id, &request, &db::now()).await?;
    loop {
        let cancelled = async {
            match &cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = waiting.woken.notified() => {}
            () = tokio::time::sleep(LOOK_AGAIN) => {}
            () = cancelled => {
                // Told once; the turn then ends as a cancelled one, and its result comes back.
                cancel = None;
                store::cancel_turn(kernel.db(), &id).await?;
            }
        }
        if let Some(result) = store::take_result(kernel.db(), store::Queue::Turns, &id).await? {
            return match serde_json::from_str(&result) {
                Ok(Outcome::Ok(result)) => Ok(*result),
                Ok(Outcome::Error(e)) => Err(e),
                Err(e) => Err(Error::internal(format_args!("a forwarded turn's result is unreadable: {e}"))),
            };
        }
        if !store::turn_exists(kernel.db(), &id).await? {
            // Deleted by a daemon that took this one for dead (its heartbeat failed too long).
            return Err(Error::unavailable(format!(
                "agent `{}`'s turn was dropped: this daemon lost its place in the cluster; send the message again",
                agent.name
            )));
        }
    }
}

/// Runs the turns forwarded to this daemon's agents, and answers the requests for the
/// other leases it holds ([`super::calls`]): when told of one, and every third of
/// the lease (a notification missed, an agent just taken over with turns waiting).
pub(super) async fn serve_forever(kernel: Kernel) {
    let cluster = kernel.cluster();
    loop {
        if let Err(e) = serve(&kernel).await
            && !kernel.db().is_closed()
        {
            tracing::warn!(error = %e.message, "running forwarded turns failed");
        }
        if let Err(e) = super::calls::serve(&kernel).await
            && !kernel.db().is_closed()
        {
            tracing::warn!(error = %e.message, "answering forwarded requests failed");
        }
        tokio::select! {
            () = tokio::time::sleep(cluster.lease / 3) => {}
            () = cluster.work.notified() => {}
            () = cluster.stopped.cancelled() => return,
        }
    }
}

/// Takes and starts the forwarded turns waiting for the agents this daemon holds.
async fn serve(kernel: &Kernel) -> Result<()> {
    let cluster = kernel.cluster();
    for agent in store::agents_with_queued_turns(kernel.db()).await? {
        if !cluster.holds(&format!("agent:{agent}")) {
            continue;
        }
        for taken in store::take_turns(kernel.db(), &agent, &cluster.id).await? {
            let kernel = kernel.clone();
            let agent = agent.clone();
            let cancel = cluster.running_forwarded(&taken.id);
            if taken.cancelled {
                cancel.cancel();
            }
            tokio::spawn(async move {
                run_here(&kernel, &taken.id, &agent, &taken.request, taken.attempts > 1, cancel).await;
                kernel.cluster().finished_forwarded(&taken.id);
            });
        }
    }
    // A cancel whose notification was missed.
    for id in store::cancelled_turns(kernel.db(), &cluster.id).await? {
        cluster.cancel_forwarded(&id);
    }
    Ok(())
}

/// Runs one forwarded turn here and stores how it ended. A turn taken again after its runner
/// died is a retry: it answers the message that runner stored rather than adding it twice.
async fn run_here(kernel: &Kernel, id: &str, agent: &str, request: &str, again: bool, cancel: CancellationToken) {
    let outcome = match (serde_json::from_str::<ForwardedTurn>(request), Uuid::parse_str(agent)) {
        (Ok(turn), Ok(agent_id)) => match kernel.agents().get_by_id(agent_id) {
            Some(agent) => match crate::turn::run_here(kernel, agent, turn.into_request(again, cancel)).await {
                Ok(result) => Outcome::Ok(Box::new(result)),
                Err(e) => Outcome::Error(e),
            },
            None => Outcome::Error(Error::not_found(format!("no agent `{agent}`"))),
        },
        (Err(e), _) => Outcome::Error(Error::internal(format_args!("a forwarded turn is unreadable: {e}"))),
        (_, Err(e)) => Outcome::Error(Error::internal(format_args!("a forwarded turn names no agent: {e}"))),
    };
    let stored = match serde_json::to_string(&outcome) {
        Ok(json) => store::finish(kernel.db(), store::Queue::Turns, id, kernel.cluster().id(), &json, &db::now()).await,
        Err(e) => Err(Error::internal(format_args!("a forwarded turn's result did not serialise: {e}"))),
    };
    if let Err(e) = stored {
        tracing::warn!(turn = id, error = %e.message, "could not store a forwarded turn's result");
    }
}
