//! Family `system`: the daemon's own facts.

use serde_json::{Value, json};

use crate::error::Result;
use crate::family::{Family, Services};
use crate::tool::{CallContext, NoArgs, Registry, Tool, ToolDef};

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family::tools_only("system", register);

pub(crate) fn register(r: &mut Registry, _: &Services) {
    r.add(SystemTime);
}

/// `system_time()`: the wall clock, RFC 3339 UTC.
pub struct SystemTime;

impl Tool for SystemTime {
    type Args = NoArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "system_time",
            "system",
            "The daemon's wall clock as RFC 3339 UTC, with the Unix time in milliseconds.",
        )
        .tags(&["time", "clock", "date", "now"])
        .read_only()
    }

    async fn run(&self, _ctx: CallContext, _args: NoArgs) -> Result<Value> {
        let now = chrono::Utc::now();
        Ok(json!({
            "utc": now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "unix_ms": now.timestamp_millis(),
        }))
    }
}
