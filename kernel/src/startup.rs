//! How long each phase of starting took: the kernel marks its own (the home, the store, the
//! loads, the families) and the daemon adds its (the socket, the background work, the
//! router), then logs them on one line (`kennel start`; `scripts/budget` prints it), so a slow
//! start says where its time went.

use std::fmt;
use std::time::{Duration, Instant};

/// Phases in the order they ran, each with its time.
#[derive(Clone, Debug)]
pub struct Phases {
    began: Instant,
    last: Instant,
    done: Vec<(&'static str, Duration)>,
}

impl Phases {
    /// Starts timing now.
    pub fn begin() -> Phases {
        Phases::begin_at(Instant::now())
    }

    /// Starts timing at `began` (the process's start, say).
    pub fn begin_at(began: Instant) -> Phases {
        Phases { began, last: began, done: Vec::new() }
    }

    /// Ends the phase that ran since the last mark.
    pub fn mark(&mut self, phase: &'static str) {
        let now = Instant::now();
        self.done.push((phase, now - self.last));
        self.last = now;
    }

    /// Every phase so far.
    pub fn phases(&self) -> &[(&'static str, Duration)] {
        &self.done
    }

    /// From the start to the last mark.
    pub fn total(&self) -> Duration {
        self.last - self.began
    }
}

/// `home 0.3, store 2.9, … ms; 14.2 ms in all`.
impl fmt::Display for Phases {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (phase, took)) in self.done.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{phase} {:.1}", took.as_secs_f64() * 1000.0)?;
        }
        write!(f, " ms; {:.1} ms in all", self.total().as_secs_f64() * 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_phase_is_the_time_since_the_last_mark_and_the_total_their_sum() {
        let mut phases = Phases::begin();
        std::thread::sleep(Duration::from_millis(5));
        phases.mark("first");
        phases.mark("second");
        let [(first, a), (second, b)] = phases.phases() else { panic!("two phases: {phases:?}") };
        assert_eq!((*first, *second), ("first", "second"));
        assert!(*a >= Duration::from_millis(5) && *b < *a, "{phases:?}");
        assert_eq!(phases.total(), *a + *b);
        let line = phases.to_string();
        assert!(line.starts_with("first ") && line.contains(", second ") && line.ends_with(" ms in all"), "{line}");
    }
}
