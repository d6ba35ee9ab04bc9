//! A2A (spec §2) as the official SDK speaks it, in version 1.0 and in 0.3: Kennel as a
//! server for the agents an operator exposes (agent cards; JSON-RPC sends, streaming, task
//! reads, lists, cancels and subscriptions) and as a client (`a2a_discover`, `a2a_send`).
//!
//! - `card.rs`: who may reach which agent, and the cards;
//! - `server.rs`: the JSON-RPC endpoint and its dialects;
//! - `task.rs`: the tasks, run in the background and streamed to subscribers;
//! - `wire/`: the 1.0 and 0.3 shapes; `error.rs`: the JSON-RPC errors;
//! - `client.rs`: the tools; `store.rs`: the SQL.

mod card;
mod client;
mod error;
mod server;
mod store;
mod task;
mod wire;

pub use card::{agent_card, daemon_card};
pub use server::{Answer, handle};
pub use task::A2aTasks;

use crate::config::Config;
use crate::tool::Registry;

pub(crate) fn register(r: &mut Registry, _: &Config) {
    r.add(client::A2aDiscover);
    r.add(client::A2aSend);
}

/// Who is calling the A2A endpoint.
#[derive(Debug, Clone)]
pub enum Inbound {
    /// A valid API token with this name.
    Token(String),
    Anonymous,
}

/// Why an A2A request is refused before JSON-RPC is even read.
#[derive(Debug)]
pub enum AccessRefusal {
    /// No exposed agent answers at this path (HTTP 404).
    NotFound(String),
    /// The agent is exposed, but not publicly, and no valid token came (HTTP 401).
    Unauthorized,
}
