//! What a restart finds in flight: turns the previous run was in the middle of (a stop or a
//! crash cut them off) and the async `agent_send` deliveries waiting on them.

use crate::Kernel;

/// What the chat shows where a turn was cut off.
pub const INTERRUPTED: &str =
    "The daemon stopped during this turn (a restart or a crash), so it did not finish. Send a message to go on.";

/// Marks every turn left open as interrupted in its session, then resumes the deliveries.
/// Only the daemon calls this, before it serves (a CLI opening the same home must not mark
/// the daemon's running turns).
pub(crate) fn recover(kernel: &Kernel) {
    let kernel = kernel.clone();
    tokio::spawn(async move {
        match interrupt_left_turns(&kernel).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(turns = n, "turns the previous run left unfinished were marked interrupted"),
            Err(e) => tracing::warn!(error = %e, "marking the turns the previous run left unfinished failed"),
        }
        match crate::agent::delivery::resume(&kernel).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(deliveries = n, "agent_send deliveries the previous run left were resumed"),
            Err(e) => tracing::warn!(error = %e, "resuming agent_send deliveries failed"),
        }
    });
}

/// Closes the turns left open by the previous run as interrupted, each noted in its session.
/// A turn of this run is registered before its row is written, so one that is open and not
/// registered here was the last run's.
async fn interrupt_left_turns(kernel: &Kernel) -> crate::error::Result<usize> {
    let mut closed = 0;
    for (turn, session) in super::store::open_turns(kernel.db()).await? {
        if kernel.turns().is_running(turn) {
            continue;
        }
        super::store::end_turn(kernel.db(), turn, "interrupted").await?;
        kernel.sessions().record_interrupted(session, INTERRUPTED).await?;
        closed += 1;
    }
    Ok(closed)
}
