//! The kernel's wall clock. Schedules read the time through it, so a test (or a simulation)
//! can move time forward and watch a cron job fire without waiting for the minute to turn.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use tokio::sync::Notify;

#[derive(Clone, Default)]
pub enum Clock {
    /// The system's time.
    #[default]
    System,
    /// Time that moves only when told to.
    Manual(Arc<ManualClock>),
}

impl Clock {
    pub fn now(&self) -> DateTime<Utc> {
        match self {
            Clock::System => Utc::now(),
            Clock::Manual(m) => *m.now.lock().expect("clock lock"),
        }
    }

    /// Now as the stores write times (RFC 3339, UTC): what fronts compare stored times with.
    pub fn now_text(&self) -> String {
        crate::db::timestamp(self.now())
    }

    /// Resolves when a manual clock is moved; never for the system clock.
    pub async fn jumped(&self) {
        match self {
            Clock::System => std::future::pending().await,
            Clock::Manual(m) => m.jumped.notified().await,
        }
    }
}

/// A clock that stands still until [`ManualClock::advance`] or [`ManualClock::set`].
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
    jumped: Notify,
}

impl ManualClock {
    pub fn starting_at(now: DateTime<Utc>) -> Arc<ManualClock> {
        Arc::new(ManualClock { now: Mutex::new(now), jumped: Notify::new() })
    }

    pub fn set(&self, now: DateTime<Utc>) {
        *self.now.lock().expect("clock lock") = now;
        self.jumped.notify_waiters();
        self.jumped.notify_one();
    }

    pub fn advance(&self, by: chrono::Duration) {
        let now = *self.now.lock().expect("clock lock") + by;
        self.set(now);
    }
}
