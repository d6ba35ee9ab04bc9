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
        match super::store::interrupt_open_turns(kernel.db()).await {
            Ok(sessions) => {
                for session in &sessions {
                    if let Err(e) = kernel.sessions().record_interrupted(*session, INTERRUPTED).await {
                        tracing::warn!(session = %session, error = %e, "marking an interrupted turn failed");
                    }
                }
                if !sessions.is_empty() {
                    tracing::info!(
                        turns = sessions.len(),
                        "turns the previous run left unfinished were marked interrupted"
                    );
                }
            }
            Err(e) => tracing::warn!(error = %e, "finding the turns the previous run left unfinished failed"),
        }
        match crate::agent::delivery::resume(&kernel).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(deliveries = n, "agent_send deliveries the previous run left were resumed"),
            Err(e) => tracing::warn!(error = %e, "resuming agent_send deliveries failed"),
        }
    });
}
