//! MCP (spec §15): the tools of the servers in `[mcp.servers]`, offered as
//! `mcp__SERVER__TOOL` while each is connected ([`servers`]); their resources and prompts
//! through two tools ([`meta`]).
//!
//! # Design notes
//!
//! ## Layout
//!
//! MCP servers' tools (spec §15, issue 25): `config.rs` (`[mcp]`, checked at load and on reload),
//! `names.rs` (`mcp__SERVER__TOOL` in the form model APIs take), `connect.rs` (one rmcp client
//! over a child's stdio or streamable HTTP; the `ClientHandler` that hears `list_changed`),
//! `servers.rs` (`Mcp`: a supervisor per server — background connect, backoff, crash-loop limit,
//! reload, reconnect; `ServerView` for the page and API), `tools.rs` (listing into the tool list,
//! calling), `meta.rs` (`mcp_resources`, `mcp_prompts`).
//!
//! ## MCP client
//!
//! **MCP client** (`mcp/`, the official SDK `rmcp`). `[mcp.servers.NAME]` is a stdio server
//! (`command`, `args`, `env`, `pass_env`, `cwd`) or a streamable-HTTP one (`url`, `headers`,
//! `header_env` — header values from named environment variables, read at connect, never
//! stored or shown); `timeout_secs` per call (60). `[mcp] allowed_hosts` is the address guard's
//! list for HTTP servers; the connection is a pinned reqwest client, so what was checked is what
//! is reached. Decisions:
//! - **Environment.** A stdio server gets `PATH`, `HOME`, `LANG`, its `env` and `pass_env`,
//!   nothing else: the daemon's provider keys never reach it by omission. It runs in its own
//!   process group, killed whole when the connection ends (`npx` leaves `node` behind otherwise).
//!   Kennel starts it itself (`tokio::process`, three pipes) and hands rmcp its stdout and stdin
//!   as a reader and a writer (`transport-async-rw`); rmcp's own child-process transport would
//!   add `process-wrap` and `nix` for the same thing.
//! - **Names.** `mcp__SERVER__TOOL` where TOOL is the server's name when it matches
//!   `^[A-Za-z0-9_-]+$` and fits in 64; otherwise its other characters become `_`, it is cut to
//!   fit, and `_` plus six hex digits of its SHA-256 follow. It depends on the name alone, so it
//!   is stable across restarts and list changes; two tools that still meet are reported and the
//!   second left out. Server names are `[a-z0-9_-]`, at most 21, no `__`.
//! - **Lifecycle.** `Mcp::start` spawns one supervisor per server after the daemon is up (start
//!   never waits for a server). Handshake within 30 s with protocol 2025-11-25 (the newest with
//!   `initialize`); tools listed (every page) and offered; `notifications/tools/list_changed`
//!   (and the resource and prompt lists') re-lists. A lost connection (a stdio child's exit; for
//!   HTTP, which has no closing signal, a call that cannot reach the server) withdraws the tools
//!   with the reason — a call then says "no longer available: the MCP server `x` is not
//!   connected: …" — and reconnects after 0.5 s, doubling to 30 s. Five failures within 120 s
//!   and it gives up (`gave_up`) until an operator reconnects it (the MCP page, `POST
//!   /api/mcp/servers/{name}/reconnect`) or the config changes. `kennel reload`, `POST
//!   /api/reload` and SIGHUP re-read `[mcp]` only: removed servers stop, added ones start,
//!   changed ones (and HTTP ones when `allowed_hosts` changed) reconnect, others are untouched;
//!   a config error changes nothing and answers where it is.
//! - **Results.** Structured content when the server gives it, else the text of a text-only
//!   answer, else the content blocks as MCP writes them. `isError: true` is a failed call with
//!   the server's text; a JSON-RPC error a failed call naming the code; a call past
//!   `timeout_secs` `Timeout` (the request is dropped, so rmcp sends `notifications/cancelled`).
//! - **Resources and prompts.** Two tools of family `mcp`, offered while some connected server
//!   has them: `mcp_resources {server, uri?}` (list, or read one) and `mcp_prompts {server,
//!   name?, arguments?}` (list, or get one filled in). An agent reaches a server's resources and
//!   prompts only if it may call at least one of its tools (`mcp__github__*` admits it to
//!   `github`); these are reads, nothing runs on the server's side that a tool grant did not
//!   allow.
//! - **The MCP page** (`/mcp`) and `GET /api/mcp/servers`: each server's state and reason, its
//!   tools under both names, tools left out, connections made, the last 20 errors and stderr
//!   lines. Everything a server says is shown as text (the hostile-text corpus covers it).
//!
//! ## Kennel as an MCP server
//!
//! **Kennel as an MCP server** (`mcp/serve.rs`, `server/src/http/mcp_server.rs`,
//! `server/src/cli/mcp.rs`). `/api/agents/{id}/mcp` speaks streamable HTTP (rmcp's server, one
//! `LocalSessionManager`) behind the API's token check; it is not in the OpenAPI document (it is
//! JSON-RPC, not REST). `tools/list` is the agent's usable tools in a headless scope
//! (`Registry::usable_by`: grants, deny, every availability layer; `ask_user` never), with their
//! schemas; `tools/call` runs `Runtime::call_tool` as the agent with `Caller::Mcp { client, via }`,
//! audited as `mcp:CLIENT (token:NAME)` — the client's name from its `initialize`. Who asks is
//! decided per HTTP request (the path's agent, the bearer token), never from the MCP session id,
//! which proves nothing about its sender. A refusal or failure is the tool's answer (`isError`
//! with the short text a model reads), not a protocol error. rmcp's Host check is off: it exists
//! for unauthenticated local servers, and every request here carries a token a rebinding page
//! cannot know. `kennel mcp --agent NAME` is the stdio form for clients that start their servers:
//! it opens one session to that endpoint with the home's CLI token at the first request, named
//! after the downstream client (`mcp:CLIENT (cli)`), and passes `tools/list` and `tools/call`
//! through, because the agent's browser, processes and sessions live in the daemon.

pub mod config;
mod connect;
pub mod meta;
pub mod names;
mod request;
pub mod serve;
pub mod servers;
mod tools;

pub use servers::{Mcp, McpReload, ServerState, ServerView};

use crate::family::Family;

/// MCP's tools are dynamic: the servers of `[mcp]` provide them while the daemon runs.
pub const FAMILY: Family = Family {
    name: "mcp",
    open: |s| {
        let mcp = Mcp::open(s);
        s.provide(mcp);
        Ok(())
    },
    register: |_, _| {},
};
