//! Family `notify`: `notify_owner`, thin over [`super::Inbox`].

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{NewNote, Urgency};
use crate::error::Result;
use crate::family::Services;
use crate::notify::Inbox;
use crate::tool::{CallContext, Registry, Tool, ToolDef};

pub(crate) fn register(r: &mut Registry, services: &Services) {
    r.add(NotifyOwner { inbox: services.need() });
}

pub struct NotifyOwner {
    inbox: Arc<Inbox>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotifyArgs {
    /// Why, in a few words (the note's title; at most 200 characters).
    pub reason: String,
    /// What the owner should know or do (at most 4,000 characters).
    pub summary: String,
    /// low, normal (the default), high or critical: high and above may also reach the owner
    /// outside the dashboard.
    #[serde(default)]
    pub urgency: Urgency,
}

impl Tool for NotifyOwner {
    type Args = NotifyArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "notify_owner",
            "notify",
            "Leave a note in the owner's inbox (not in any chat): something they should know or decide. Use urgency for how soon.",
        )
        .tags(&["notify", "owner", "operator", "alert", "inbox", "escalate", "human"])
    }

    async fn run(&self, ctx: CallContext, args: NotifyArgs) -> Result<Value> {
        let new = NewNote {
            source: "agent",
            agent: Some((ctx.agent.id, ctx.agent.name.clone())),
            reason: args.reason,
            summary: args.summary,
            urgency: args.urgency,
        };
        let note = self.inbox.notify(new).await?;
        Ok(json!({ "noted": true, "id": note.id, "urgency": note.urgency }))
    }
}
