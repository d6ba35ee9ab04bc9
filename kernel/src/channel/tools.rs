//! Family `channel` (spec §6): `channel_send`, `channel_dm`, `channel_members`, thin over
//! [`super::Channels`], which holds their guards.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::platform::{FileSource, Outgoing};
use crate::channel::Channels;
use crate::error::{Error, Result};
use crate::family::Services;
use crate::tool::{CallContext, Registry, Tool, ToolDef};
use crate::workspace::Workspaces;

const FAMILY: &str = "channel";
/// The largest workspace file `channel_send` uploads.
const MAX_UPLOAD_BYTES: u64 = 20 * 1024 * 1024;
const MAX_POLL_OPTIONS: usize = 10;

/// What the tools take from the kernel: the channels, and the workspaces `channel_send`
/// uploads files from.
#[derive(Clone)]
pub(super) struct Uses {
    channels: Arc<Channels>,
    workspaces: Arc<Workspaces>,
}

pub(crate) fn register(r: &mut Registry, services: &Services) {
    let uses = Uses { channels: services.need(), workspaces: services.need() };
    r.add(Send(uses.clone()));
    r.add(Dm(uses.clone()));
    r.add(Members(uses));
}

impl Uses {
    /// Why the family is left out while no channel is configured. Asked at each turn, since
    /// channels are added and removed while the daemon runs.
    fn no_channel(&self) -> Option<String> {
        self.channels.is_empty().then(|| "no channel is configured: add one on the Channels page, with `kennel channel set`, or as a [channels.NAME] section".to_string())
    }
}

pub struct Send(Uses);

/// What to send.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Content {
    Text {
        text: String,
    },
    /// An image: a public `url` the platform fetches, or a `path` in your workspace to upload.
    Image {
        url: Option<String>,
        path: Option<String>,
        caption: Option<String>,
    },
    /// A file: a public `url`, or a `path` in your workspace to upload.
    File {
        url: Option<String>,
        path: Option<String>,
        caption: Option<String>,
    },
    /// A poll (2–10 options); platforms without polls get it as a numbered list.
    Poll {
        question: String,
        options: Vec<String>,
    },
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendArgs {
    /// The channel's name (`[channels.NAME]`).
    pub channel: String,
    /// The chat to send to (a platform chat, channel or user id). Omitted: the conversation
    /// this turn answers, or the channel's default target. In a conversation turn only that
    /// conversation can be named.
    pub target: Option<String>,
    pub content: Content,
}

impl Tool for Send {
    type Args = SendArgs;

    fn excluded_for(&self, _agent: &crate::agent::Agent) -> Option<String> {
        self.0.no_channel()
    }

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "channel_send",
            FAMILY,
            "Send text, an image, a file or a poll to a channel chat without a turn (alerts, results, notices). While answering a conversation, only that conversation.",
        )
        .tags(&["channel", "send", "message", "telegram", "slack", "discord", "notify", "post"])
    }

    async fn run(&self, ctx: CallContext, args: SendArgs) -> Result<Value> {
        let out = outgoing(&self.0.workspaces, &ctx, args.content).await?;
        let sent = self.0.channels.send_from(&ctx, &args.channel, args.target.as_deref(), out).await?;
        Ok(json!({ "sent": true, "channel": sent.channel, "target": sent.target }))
    }
}

/// The tool's content as the adapters take it: files read from the workspace, sizes checked.
async fn outgoing(workspaces: &Workspaces, ctx: &CallContext, content: Content) -> Result<Outgoing> {
    Ok(match content {
        Content::Text { text } => {
            if crate::text::is_blank(&text) {
                return Err(Error::invalid("the text is empty").with_field("content.text"));
            }
            Outgoing::Text(text)
        }
        Content::Image { url, path, caption } => {
            Outgoing::Image { media: media(workspaces, ctx, url, path).await?, caption }
        }
        Content::File { url, path, caption } => {
            Outgoing::File { media: media(workspaces, ctx, url, path).await?, caption }
        }
        Content::Poll { question, options } => {
            if crate::text::is_blank(&question) {
                return Err(Error::invalid("a poll needs a question").with_field("content.question"));
            }
            if !(2..=MAX_POLL_OPTIONS).contains(&options.len()) || options.iter().any(|o| crate::text::is_blank(o)) {
                return Err(Error::invalid(format!("a poll has 2 to {MAX_POLL_OPTIONS} options, none blank"))
                    .with_field("content.options"));
            }
            Outgoing::Poll { question, options }
        }
    })
}

async fn media(
    workspaces: &Workspaces,
    ctx: &CallContext,
    url: Option<String>,
    path: Option<String>,
) -> Result<FileSource> {
    match (url, path) {
        (Some(url), None) => {
            let parsed = reqwest::Url::parse(&url)
                .map_err(|e| Error::invalid(format!("`{url}` is not a URL: {e}")).with_field("content.url"))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(Error::invalid("the url must be http(s)").with_field("content.url"));
            }
            Ok(FileSource::Url(url))
        }
        (None, Some(path)) => {
            let (head, entry, cut) = workspaces.read_head(ctx.agent.id, &path, MAX_UPLOAD_BYTES).await?;
            if cut {
                return Err(Error::invalid(format!(
                    "`{path}` is {} bytes; channel_send uploads at most {MAX_UPLOAD_BYTES}",
                    entry.bytes
                ))
                .with_field("content.path"));
            }
            let file_name = path.rsplit('/').next().unwrap_or(&path).to_string();
            Ok(FileSource::Bytes { mime: mime_of(&file_name).to_string(), file_name, bytes: head })
        }
        _ => {
            Err(Error::invalid("give exactly one of `url` (public) and `path` (in your workspace)")
                .with_field("content"))
        }
    }
}

/// A file's MIME type by its extension (platforms show images and play media by it).
fn mime_of(file_name: &str) -> &'static str {
    let ext = file_name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "txt" | "md" | "log" => "text/plain",
        "csv" => "text/csv",
        "json" => "application/json",
        "mp3" => "audio/mpeg",
        "ogg" => "audio/ogg",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
}

pub struct Dm(Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DmArgs {
    /// A member of this turn's group conversation (see channel_members).
    pub user_id: String,
    pub message: String,
}

impl Tool for Dm {
    type Args = DmArgs;

    fn excluded_for(&self, _agent: &crate::agent::Agent) -> Option<String> {
        self.0.no_channel()
    }

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "channel_dm",
            FAMILY,
            "Privately message one member of the group conversation this turn answers (someone on its roster), instead of the whole group.",
        )
        .tags(&["channel", "dm", "direct", "private", "message", "member"])
        .needs_conversation()
    }

    async fn run(&self, ctx: CallContext, args: DmArgs) -> Result<Value> {
        if crate::text::is_blank(&args.message) {
            return Err(Error::invalid("the message is empty").with_field("message"));
        }
        let sent = self.0.channels.dm(&ctx, &args.user_id, &args.message).await?;
        Ok(json!({ "sent": true, "channel": sent.channel, "user_id": args.user_id }))
    }
}

pub struct Members(Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MembersArgs {
    /// Defaults to this turn's channel.
    pub channel: Option<String>,
    /// Defaults to this turn's conversation; another conversation is refused.
    pub chat_id: Option<String>,
}

impl Tool for Members {
    type Args = MembersArgs;

    fn excluded_for(&self, _agent: &crate::agent::Agent) -> Option<String> {
        self.0.no_channel()
    }

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "channel_members",
            FAMILY,
            "List the known members of a group conversation (people who spoke in it): user_id, display_name, username.",
        )
        .tags(&["channel", "members", "roster", "group", "people", "list"])
        .read_only()
    }

    async fn run(&self, ctx: CallContext, args: MembersArgs) -> Result<Value> {
        let members = self.0.channels.members(&ctx, args.channel.as_deref(), args.chat_id.as_deref()).await?;
        let members: Vec<Value> = members
            .into_iter()
            .map(|m| json!({ "user_id": m.user_id, "display_name": m.display_name, "username": m.username, "last_seen": m.last_seen }))
            .collect();
        Ok(json!({ "members": members }))
    }
}
