//! "Something changed" signals for pages that show live state (the task board, the schedule
//! manager, the overview): coarse topics, not the changes themselves, since a page that hears
//! one reads itself again.
//!
//! The database raises them ([`crate::db`]): every connection notes which tables a
//! transaction wrote and, when it commits, sends their topics, so every writer of this daemon
//! (an agent's tool, an operator, the sweeper, the scheduler) is covered with nothing to
//! remember at each write. A rolled-back transaction sends nothing. Another process's commits
//! (the CLI's) reach the daemon through its change watcher, whose reload raises `Agents`.

use serde::Serialize;
use tokio::sync::broadcast;

/// What changed, as the live pages subscribe to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Topic {
    /// Tasks and their history.
    Tasks,
    /// Schedules, cron jobs and their fires.
    Schedules,
    /// Agents and agent types.
    Agents,
    /// The owner inbox: notes and their read state.
    Inbox,
}

impl Topic {
    pub const ALL: [Topic; 4] = [Topic::Tasks, Topic::Schedules, Topic::Agents, Topic::Inbox];

    /// The topic of a write to `table`, if pages follow it.
    pub(crate) fn of_table(table: &str) -> Option<Topic> {
        match table {
            "tasks" | "task_events" => Some(Topic::Tasks),
            "schedules" | "schedule_fires" => Some(Topic::Schedules),
            "agents" | "agent_types" => Some(Topic::Agents),
            "inbox_notes" | "inbox_reads" => Some(Topic::Inbox),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Topic::Tasks => "tasks",
            Topic::Schedules => "schedules",
            Topic::Agents => "agents",
            Topic::Inbox => "inbox",
        }
    }

    pub fn parse(name: &str) -> Option<Topic> {
        Topic::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

/// The broadcast of committed changes. Cheap to clone.
#[derive(Clone)]
pub struct Changes(broadcast::Sender<Topic>);

impl Default for Changes {
    fn default() -> Self {
        Changes(broadcast::channel(256).0)
    }
}

impl Changes {
    pub(crate) fn send(&self, topic: Topic) {
        // No subscriber (no page open) is not an error.
        let _ = self.0.send(topic);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Topic> {
        self.0.subscribe()
    }
}
