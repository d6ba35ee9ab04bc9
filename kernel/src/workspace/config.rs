//! `[workspace]` of `config.toml`: its type, defaults and lines in the default file.

use serde::{Deserialize, Serialize};

use crate::config::in_range;

/// `[workspace]`: each agent's folder under `$KENNEL_HOME/workspaces/`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkspaceConfig {
    /// The largest file a workspace takes (an upload, a tool's output) or hands out whole.
    #[serde(deserialize_with = "in_range::<_, 1024, 4294967296>")]
    pub max_file_bytes: u64,
    /// MiB of files the daemon reads whole into memory at once (file tools, vision, patches);
    /// a read of a large file waits for its share.
    #[serde(deserialize_with = "in_range::<_, 1, 1048576>")]
    pub max_reading_mib: u64,
    /// The bytes one agent's workspace (and its trash) may hold; a tool's write past it is
    /// refused. A process writing into the workspace itself is bounded by the disk only.
    #[serde(deserialize_with = "in_range::<_, 1024, 1099511627776>")]
    pub max_agent_bytes: u64,
}

impl Default for WorkspaceConfig {
    fn default() -> Self {
        WorkspaceConfig { max_file_bytes: 64 * 1024 * 1024, max_reading_mib: 256, max_agent_bytes: 1024 * 1024 * 1024 }
    }
}

/// `[workspace]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [workspace]
# Each agent's files live in workspaces/AGENT_ID/ under this home.
# max_file_bytes = 67108864    # the largest file a workspace takes or hands out whole
# max_reading_mib = 256        # MiB of files read whole into memory at once, daemon-wide; larger reads wait
# max_agent_bytes = 1073741824 # one agent's workspace and trash together, as the file tools write
"#;
