//! Group commit for claims. Claims that arrive together are run one after another inside one
//! transaction, so a burst of N claims writes the pages it changed (the task, its index, the
//! history row) to the WAL once instead of N times. Each claim is still its own
//! `UPDATE … RETURNING`, run in order, so two claims can never take the same task.

use tokio::sync::{mpsc, oneshot};

use super::{Task, task_from};
use crate::db::{self, Db};
use crate::error::{Error, Result};

/// Claims folded into one transaction at most.
const MAX_BATCH: usize = 64;

const CLAIM: &str = "UPDATE tasks SET status = 'claimed', claimed_by = ?1, claimed_at = ?2, updated_at = ?2
     WHERE id = (SELECT id FROM tasks
                 WHERE status = 'pending' AND (assignee IS NULL OR assignee = ?1) AND priority >= ?3
                 ORDER BY priority DESC, id ASC LIMIT 1)
     RETURNING *";

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
        match claim_all(&db, &batch).await {
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
        let released = sqlx::query(
            "UPDATE tasks SET status = 'pending', claimed_by = NULL, claimed_at = NULL, updated_at = ?
             WHERE id = ? AND status = 'claimed'",
        )
        .bind(db::now())
        .bind(id)
        .execute(db)
        .await;
        if let Err(e) = released {
            tracing::warn!(task = %id, error = %e, "a claim nobody received stays until its TTL");
        }
    }
}

/// Runs the claims in order in one transaction; all commit or none do.
async fn claim_all(db: &Db, batch: &[Request]) -> Result<Vec<Option<Task>>> {
    let now = db::now();
    let mut tx = db.begin().await?;
    let mut claimed = Vec::with_capacity(batch.len());
    for request in batch {
        let row = sqlx::query(CLAIM)
            .bind(&request.agent)
            .bind(&now)
            .bind(request.min_priority)
            .fetch_optional(&mut *tx)
            .await?;
        claimed.push(row.as_ref().map(task_from).transpose()?);
    }
    tx.commit().await?;
    Ok(claimed)
}
