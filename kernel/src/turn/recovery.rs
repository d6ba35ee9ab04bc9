//! What a daemon that stopped or died leaves in flight: turns it was in the middle of (a
//! stop or a crash cut them off). The daemon that takes its work over (`crate::cluster`, at
//! the next start on SQLite) marks them interrupted, and resumes its `agent_send` deliveries.

use crate::Kernel;

/// What the chat shows where a turn was cut off.
pub const INTERRUPTED: &str =
    "The daemon stopped during this turn (a restart or a crash), so it did not finish. Send a message to go on.";

/// Closes the turns `daemon` left open as interrupted, each noted in its session; how many.
pub(crate) async fn interrupt_turns_of(kernel: &Kernel, daemon: &str) -> crate::error::Result<u64> {
    let mut closed = 0;
    for (turn, session) in super::store::open_turns_of(kernel.db(), daemon).await? {
        super::store::end_turn(kernel.db(), turn, "interrupted").await?;
        kernel.sessions().record_interrupted(session, INTERRUPTED).await?;
        closed += 1;
    }
    Ok(closed)
}
