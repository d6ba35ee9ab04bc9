//! `/agents` (list, spawn, stop) and `/agents/{id}` (manifest, grants, sessions, chat).
//!
//! `list.rs` the list and the spawn form; `agent.rs` one agent's page; `chat.rs` the entries
//! of its chat and the questions waiting in it; `files.rs` its workspace: the card on its
//! page, one file's page and where a file is served; `lifecycle.rs` the Start, Stop and
//! Delete buttons both the list and an agent's page show.

use crate::shell::Section;

mod agent;
mod chat;
mod files;
mod lifecycle;
mod list;

pub use agent::{AgentPage, render_agent};
pub use files::{FilePage, file_url, render_file};
pub use list::{AgentsPage, SpawnForm, render_list};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/agents", "Agents");
