//! One module per dashboard page. Each exposes a data struct and a `render` function that
//! returns the whole HTML document.

pub mod agent_types;
pub mod agents;
pub mod api_reference;
pub mod approvals;
pub mod audit;
pub mod browser;
pub mod canvas;
pub mod channels;
pub mod cluster;
pub mod error;
pub mod inbox;
pub mod knowledge;
pub mod mcp;
pub mod memory;
pub mod overview;
pub mod processes;
pub mod providers;
pub mod schedules;
pub mod settings;
pub mod sign_in;
pub mod skills;
pub mod tasks;
pub mod tools;
pub mod usage;

/// The navigation, in order: each section as its page module declares it.
pub(crate) const SECTIONS: &[crate::shell::Section] = &[
    overview::SECTION,
    agents::SECTION,
    agent_types::SECTION,
    tools::SECTION,
    tasks::SECTION,
    schedules::SECTION,
    canvas::SECTION,
    skills::SECTION,
    channels::SECTION,
    mcp::SECTION,
    inbox::SECTION,
    usage::SECTION,
    audit::SECTION,
    cluster::SECTION,
    settings::SECTION,
];
