//! Group commit for claims. Claims that arrive together are run one after another inside one
//! transaction, so a burst of N claims writes the pages it changed (the task, its index, the
//! history row) to the WAL once instead of N times. Each claim is still its own
//! `UPDATE … RETURNING`, run in order, so two claims can never take the same task.

use tokio::sync::{mpsc, oneshot};

use super::{Task, store};
use crate::db::Db;
use crate::error::{Error, Result};

/// Claims folded into one transaction at most.
const MAX_BATCH: usize = 64;

struct Request {
    agent: String,
    min_priority: i64,
    reply: oneshot::Sender<Result<Option<Task>>>,
}

/// The queue every claim goes through, and the task that drains it.
pub(super) struct ClaimQueue {
    requests: mpsc::Sender<Request>,
}

impl ClaimQueue {
    pub(super) fn start(db: Db) -> ClaimQueue {
        let (requests, rx) = mpsc::channel(1024);
        tokio::spawn(drain(db, rx));
        ClaimQueue { requests }
    }

    pub(super) async fn claim(&self, agent: &str, min_priority: i64) -> Result<Option<Task>> {
        let (reply, answer) = oneshot::channel();
        let request = Request { agent: agent.to_string(), min_priority, reply };
        self.requests.send(request).await.map_err(|_| Error::unavailable("the task board is shutting down"))?;
        answer.await.map_err(|_| Error::unavailable("the task board is shutting down; the claim was not made"))?
    }
}

async fn drain(db: Db, mut rx: mpsc::Receiver<Request>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        match store::claim_all(&db, batch.iter().map(|r| (r.agent.as_str(), r.min_priority))).await {
            Ok(claimed) => {
                let mut orphaned = Vec::new();
                for (request, task) in batch.drain(..).zip(claimed) {
                    if let Err(Ok(Some(task))) = request.reply.send(Ok(task)) {
                        orphaned.push(task.id.to_string());
                    }
                }
                release(&db, &orphaned).await;
            }
            Err(e) => {
                for request in batch.drain(..) {
                    let _ = request.reply.send(Err(e.clone()));
                }
            }
        }
    }
}

/// Puts back tasks claimed for callers that went away before hearing of it (a client
/// disconnected mid-call), instead of leaving them claimed until the TTL runs out.
async fn release(db: &Db, tasks: &[String]) {
    for id in tasks {
        if let Err(e) = store::release(db, id).await {
            tracing::warn!(task = %id, error = %e.message, "a claim nobody received stays until its TTL");
        }
    }
}
