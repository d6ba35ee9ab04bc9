//! Turn events crossing between daemons on `kennel_events`, so a chat or an event stream
//! open on any daemon follows turns wherever they run.
//!
//! A notification's payload is at most 8,000 bytes. A larger event (a long reply, a big tool
//! result) crosses in parts: `part:<daemon>:<n>:<i>:<count>:` and a slice of the JSON, all
//! sent in one transaction, so they are delivered together and in order; each listener puts
//! them back together ([`Parts`]). Past [`MAX_RELAYED`] an event is not relayed, and the
//! followers elsewhere see its turn's stored result instead.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::store;
use crate::Kernel;
use crate::turn::AgentEvent;

/// The channel the events cross on.
pub(super) const EVENTS_CHANNEL: &str = "kennel_events";

/// At most this many bytes of an event's JSON in one notification (8,000 less the prefix).
const PART_BYTES: usize = 7_800;

/// Events larger than this are not relayed.
const MAX_RELAYED: usize = 4 << 20;

/// Parts of an event still missing after this are dropped (their sender died mid-way).
const PARTS_KEPT: Duration = Duration::from_secs(30);

/// A turn event as it crosses to the other daemons.
#[derive(Serialize, Deserialize)]
pub(super) struct Relayed {
    pub from: String,
    pub event: AgentEvent,
}

/// Tells the other daemons this daemon's turn events, while there are any others.
pub(super) async fn relay_events(kernel: Kernel, mut events: crate::turn::RelayQueue) {
    let mut sent: u64 = 0;
    while let Some(event) = events.recv().await {
        let cluster = kernel.cluster();
        if !cluster.others_alive.load(Ordering::Relaxed) {
            continue;
        }
        let Ok(payload) = serde_json::to_string(&Relayed { from: cluster.id.clone(), event }) else { continue };
        if payload.len() > MAX_RELAYED {
            tracing::debug!(bytes = payload.len(), "a turn event too large to relay was not relayed");
            continue;
        }
        sent += 1;
        let notifications = split(&cluster.id, sent, &payload);
        if let Err(e) = store::notify_all(kernel.db(), EVENTS_CHANNEL, &notifications).await {
            if kernel.db().is_closed() {
                return;
            }
            tracing::debug!(error = %e.message, "a turn event was not relayed to the other daemons");
        }
    }
}

/// `payload` as notifications: itself when it fits in one, else its parts.
fn split(from: &str, n: u64, payload: &str) -> Vec<String> {
    if payload.len() <= PART_BYTES {
        return vec![payload.to_string()];
    }
    let mut slices = Vec::new();
    let mut rest = payload;
    while !rest.is_empty() {
        let mut end = rest.len().min(PART_BYTES);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        slices.push(&rest[..end]);
        rest = &rest[end..];
    }
    let count = slices.len();
    slices.iter().enumerate().map(|(i, slice)| format!("part:{from}:{n}:{i}:{count}:{slice}")).collect()
}

/// Events arriving in parts, put back together.
#[derive(Default)]
pub(super) struct Parts {
    /// By sender and number: the parts so far, how many there are, when the first came.
    partial: HashMap<String, (Vec<String>, usize, Instant)>,
}

impl Parts {
    /// A notification: the whole event's JSON when it completes one, else `None`.
    pub(super) fn accept(&mut self, notification: &str) -> Option<String> {
        let Some(part) = notification.strip_prefix("part:") else { return Some(notification.to_string()) };
        let mut fields = part.splitn(5, ':');
        let (from, n, i, count, slice) =
            (fields.next()?, fields.next()?, fields.next()?, fields.next()?, fields.next()?);
        let (i, count) = (i.parse::<usize>().ok()?, count.parse::<usize>().ok()?);
        if count == 0 || count > MAX_RELAYED / PART_BYTES + 1 || i >= count {
            return None;
        }
        let key = format!("{from}:{n}");
        if i == 0 {
            self.partial.retain(|_, (_, _, first)| first.elapsed() < PARTS_KEPT);
            self.partial.insert(key.clone(), (Vec::with_capacity(count), count, Instant::now()));
        }
        let (parts, expected, _) = self.partial.get_mut(&key)?;
        if parts.len() != i {
            // A part missed (a listener that reconnected): the event is lost, not garbled.
            self.partial.remove(&key);
            return None;
        }
        parts.push(slice.to_string());
        if parts.len() < *expected {
            return None;
        }
        self.partial.remove(&key).map(|(parts, _, _)| parts.concat())
    }

    /// The listener reconnected: parts missed meanwhile never come.
    pub(super) fn clear(&mut self) {
        self.partial.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_event_crosses_in_parts_and_is_put_back_together() {
        let payload = format!("{{\"text\":\"{}\"}}", "é".repeat(20_000));
        let notifications = split("d1", 7, &payload);
        assert!(notifications.len() > 5, "{} parts", notifications.len());
        assert!(notifications.iter().all(|n| n.len() <= 8_000), "each fits a notification");
        let mut parts = Parts::default();
        let small = split("d2", 1, "{\"small\":1}");
        assert_eq!(small, ["{\"small\":1}"]);
        let (last, first) = notifications.split_last().unwrap();
        for n in first {
            assert_eq!(parts.accept(n), None);
            // Another sender's whole event between the parts changes nothing.
            assert_eq!(parts.accept(&small[0]).as_deref(), Some("{\"small\":1}"));
        }
        assert_eq!(parts.accept(last), Some(payload.clone()));

        // A part missing: nothing comes out, and the next event still does.
        let mut lossy = Parts::default();
        assert_eq!(lossy.accept(&notifications[0]), None);
        assert_eq!(lossy.accept(&notifications[2]), None);
        assert_eq!(lossy.accept(last), None);
        let again = split("d1", 8, &payload);
        let whole = again.iter().filter_map(|n| lossy.accept(n)).collect::<Vec<_>>();
        assert_eq!(whole, [payload]);
    }

    #[test]
    fn a_malformed_part_is_dropped_without_harm() {
        let mut parts = Parts::default();
        for bad in
            ["part:d1:1:0:18446744073709551615:{", "part:d1:1:0:0:{", "part:d1:1:3:2:{", "part:d1:1:x:2:{", "part:d1:1"]
        {
            assert_eq!(parts.accept(bad), None, "{bad}");
        }
        assert!(parts.partial.is_empty(), "nothing kept for them");
    }
}
