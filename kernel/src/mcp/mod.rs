//! MCP (spec §15): the tools of the servers in `[mcp.servers]`, offered as
//! `mcp__SERVER__TOOL` while each is connected ([`servers`]); their resources and prompts
//! through two tools ([`meta`]).

pub mod config;
mod connect;
pub mod meta;
pub mod names;
mod request;
pub mod serve;
pub mod servers;
mod tools;

pub(crate) use request::{answer_forwarded, ready_here};
pub use servers::{Mcp, McpReload, ServerState, ServerView};
