//! What a daemon that stopped or died leaves in flight: turns it was in the middle of (a
//! stop or a crash cut them off). The daemon that takes its work over (`crate::cluster`, at
//! the next start on SQLite) marks them interrupted, and resumes its `agent_send` deliveries.
//!
//! # Design notes
//!
//! ## What a restart finds in flight
//!
//! - **Whose work a row is:** `turns`, `schedule_fires`, `a2a_tasks` and `agent_deliveries`
//!   carry the `daemon_id` of the daemon run that started them (a new id every start; see
//!   `crate::cluster`). What a stopped or dead daemon left is taken over by the daemon that reaps
//!   it: on SQLite the next start, at once; on PostgreSQL the first live daemon to see its
//!   heartbeat older than the lease. Rows from before daemon ids (`NULL`) go with the first reap.
//! - **Interrupted turns:** every turn the dead daemon left open in `turns` is closed as
//!   `interrupted` and its session gets a failure of kind `Interrupted` after its last message
//!   ("The daemon stopped during this turn…"), shown in the chat like a failed turn. The next
//!   message continues cleanly: calls left without results are repaired when the history is
//!   sent. Its `running` fires become `interrupted`, its working A2A tasks `FAILED`.

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
