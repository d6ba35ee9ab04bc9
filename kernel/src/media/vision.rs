//! `image_analyze` and `media_describe` (spec §13): questions about images in the agent's
//! workspace, answered by a chat model that takes image input. A video is described from four
//! frames ffmpeg takes at even intervals (the middles of its four quarters).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Uses;
use super::openai;
use crate::error::{Error, Result};
use crate::tool::{CallContext, Tool, ToolDef};

const DEFAULT_MODEL: &str = "gpt-4o-mini";
/// The largest image sent (before base64).
const MAX_IMAGE_BYTES: u64 = 20_000_000;
/// Frames a video is described from.
const FRAMES: usize = 4;
const MAX_QUESTION_CHARS: usize = 4_000;
const DESCRIBE: &str = "Describe this image in a few sentences: what it shows, any text in it, and anything notable.";
const DESCRIBE_VIDEO: &str = "These are four frames of one video, in order, at even intervals. Describe the video in a few sentences: what happens, any text shown, anything notable.";

const IMAGES: &[(&str, &str)] = &[
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("webp", "image/webp"),
    ("gif", "image/gif"),
];
const VIDEOS: &[&str] = &["mp4", "m4v", "mov", "mkv", "webm", "avi", "mpeg", "mpg"];

fn extension(path: &str) -> String {
    path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default()
}

fn image_mime(path: &str) -> Option<&'static str> {
    let ext = extension(path);
    IMAGES.iter().find(|(e, _)| *e == ext).map(|(_, m)| *m)
}

/// An image of the workspace: its bytes and MIME type, refused when too large or not an image.
async fn read_image(uses: &Uses, ctx: &CallContext, field: &str, path: &str) -> Result<(Vec<u8>, &'static str)> {
    let Some(mime) = image_mime(path) else {
        let known = IMAGES.iter().map(|(e, _)| format!(".{e}")).collect::<Vec<_>>().join(" ");
        return Err(Error::invalid(format!("`{path}` is not an image it reads: {known}")).with_field(field));
    };
    let (_, entry) = uses.workspaces.open(ctx.agent.id, path).await?;
    if entry.bytes > MAX_IMAGE_BYTES {
        return Err(Error::invalid(format!(
            "`{path}` is {} bytes; images of at most {MAX_IMAGE_BYTES} bytes are sent",
            entry.bytes
        ))
        .with_field(field));
    }
    let (bytes, _) = uses.workspaces.read(ctx.agent.id, path).await?;
    Ok((bytes, mime))
}

/// `image_analyze(image, question)`.
pub struct ImageAnalyze(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageAnalyzeArgs {
    /// An image in your workspace (.png .jpg .webp .gif).
    pub image: String,
    /// What to find out about it.
    pub question: String,
}

impl Tool for ImageAnalyze {
    type Args = ImageAnalyzeArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("image_analyze", "media", "Ask a question about an image in your workspace (vision).").tags(&[
            "image",
            "vision",
            "picture",
            "photo",
            "screenshot",
            "ocr",
            "analyze",
        ])
    }

    async fn run(&self, ctx: CallContext, args: ImageAnalyzeArgs) -> Result<Value> {
        const TOOL: &str = "image_analyze";
        if crate::text::is_blank(&args.question) || crate::text::longer_than(&args.question, MAX_QUESTION_CHARS) {
            return Err(
                Error::invalid(format!("a question of 1 to {MAX_QUESTION_CHARS} characters")).with_field("question")
            );
        }
        super::file_argument("image", &args.image)?;
        let media = &self.0.media;
        let (name, provider) = media.provider_for(TOOL)?;
        let image = read_image(&self.0, &ctx, "image", &args.image).await?;
        let model = media.model_for(TOOL, DEFAULT_MODEL);
        let answer = openai::vision(name, provider, &model, &args.question, &[image]).await?;
        Ok(json!({ "answer": answer }))
    }
}

/// `media_describe(image_or_video)`.
pub struct MediaDescribe(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MediaDescribeArgs {
    /// An image (.png .jpg .webp .gif) or a video (.mp4 .mov .mkv .webm …) in your workspace.
    pub image_or_video: String,
}

impl Tool for MediaDescribe {
    type Args = MediaDescribeArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "media_describe",
            "media",
            "Describe an image or a video in your workspace (a video from four frames across it).",
        )
        .tags(&["image", "video", "describe", "caption", "vision", "summary"])
    }

    async fn run(&self, ctx: CallContext, args: MediaDescribeArgs) -> Result<Value> {
        const TOOL: &str = "media_describe";
        let path = &args.image_or_video;
        super::file_argument("image_or_video", path)?;
        let media = &self.0.media;
        let (name, provider) = media.provider_for(TOOL)?;
        let model = media.model_for(TOOL, DEFAULT_MODEL);
        if !VIDEOS.contains(&extension(path).as_str()) {
            let image = read_image(&self.0, &ctx, "image_or_video", path).await?;
            let description = openai::vision(name, provider, &model, DESCRIBE, &[image]).await?;
            return Ok(json!({ "description": description, "kind": "image" }));
        }
        let workspaces = &self.0.workspaces;
        let (file, entry) = workspaces.open(ctx.agent.id, path).await?;
        if entry.bytes > super::transcribe::MAX_INPUT_BYTES {
            return Err(Error::invalid(format!(
                "`{path}` is {} bytes; media_describe reads videos of at most {} bytes",
                entry.bytes,
                super::transcribe::MAX_INPUT_BYTES
            )));
        }
        let secs = media.ffmpeg().duration(file.try_clone()?).await?;
        let mut frames = Vec::with_capacity(FRAMES);
        let mut at = Vec::with_capacity(FRAMES);
        for i in 0..FRAMES {
            let t = secs * (i as f64 + 0.5) / FRAMES as f64;
            frames.push((media.ffmpeg().frame(file.try_clone()?, t).await?, "image/jpeg"));
            at.push((t * 1000.0).round() / 1000.0);
        }
        let description = openai::vision(name, provider, &model, DESCRIBE_VIDEO, &frames).await?;
        Ok(
            json!({ "description": description, "kind": "video", "duration_sec": (secs * 1000.0).round() / 1000.0, "frames_at_sec": at }),
        )
    }
}
