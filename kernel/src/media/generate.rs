//! `image_generate` and `text_to_speech` (spec §13): what a provider makes lands in the
//! agent's workspace under `output/`, and the answer gives its path, size, type and what is
//! known of it (an image's width and height, a sound's length), never the bytes.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Uses;
use super::openai;
use crate::error::{Error, Result};
use crate::tool::{CallContext, Tool, ToolDef};

/// The sizes `image_generate` asks for (what OpenAI-compatible image APIs take).
const SIZES: &[&str] = &["256x256", "512x512", "1024x1024", "1024x1536", "1536x1024", "1792x1024", "1024x1792"];
const DEFAULT_IMAGE_MODEL: &str = "gpt-image-1";
const DEFAULT_SPEECH_MODEL: &str = "tts-1";
const DEFAULT_VOICE: &str = "alloy";
/// The longest text `text_to_speech` takes (OpenAI's limit for one request).
const MAX_SPEECH_CHARS: usize = 4_096;
const MAX_PROMPT_CHARS: usize = 4_000;

/// `output/KIND-20261201-153012-1a2b3c4d.EXT`: a new file's place in the workspace.
pub(super) fn output_path(kind: &str, ext: &str) -> String {
    let id = uuid::Uuid::now_v7().to_string();
    format!("output/{kind}-{}-{}.{ext}", chrono::Utc::now().format("%Y%m%d-%H%M%S"), crate::text::short_id(&id))
}

/// A PNG's width and height, from its header.
fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.len() < 24 || &bytes[..8] != b"\x89PNG\r\n\x1a\n" || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let int = |at: usize| bytes[at..at + 4].try_into().ok().map(u32::from_be_bytes);
    Some((int(16)?, int(20)?))
}

fn image_type(bytes: &[u8]) -> Option<(&'static str, &'static str)> {
    match bytes {
        [0x89, b'P', b'N', b'G', ..] => Some(("image/png", "png")),
        [0xFF, 0xD8, 0xFF, ..] => Some(("image/jpeg", "jpg")),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some(("image/webp", "webp")),
        _ => None,
    }
}

/// `image_generate(prompt, size?, style?)`.
pub struct ImageGenerate(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageGenerateArgs {
    /// What the image shows.
    pub prompt: String,
    /// `1024x1024` (the default), `1024x1536`, `1536x1024`, `512x512`, `256x256`, …
    pub size: Option<String>,
    /// A style the provider knows, such as `vivid` or `natural`.
    pub style: Option<String>,
}

impl Tool for ImageGenerate {
    type Args = ImageGenerateArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "image_generate",
            "media",
            "Generate an image from a text prompt; it is saved in your workspace under output/.",
        )
        .tags(&["image", "picture", "draw", "generate", "illustration", "art"])
    }

    async fn run(&self, ctx: CallContext, args: ImageGenerateArgs) -> Result<Value> {
        const TOOL: &str = "image_generate";
        if crate::text::is_blank(&args.prompt) || crate::text::longer_than(&args.prompt, MAX_PROMPT_CHARS) {
            return Err(Error::invalid(format!("a prompt of 1 to {MAX_PROMPT_CHARS} characters")).with_field("prompt"));
        }
        let size = args.size.as_deref().unwrap_or("1024x1024");
        if !SIZES.contains(&size) {
            return Err(
                Error::invalid(format!("`{size}` is not a size it takes: {}", SIZES.join(", "))).with_field("size")
            );
        }
        if let Some(style) = &args.style
            && (style.is_empty()
                || style.len() > 32
                || !style.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        {
            return Err(Error::invalid("a style is one word, like `vivid` or `natural`").with_field("style"));
        }
        let media = &self.0.media;
        let (name, provider) = media.provider_for(TOOL)?;
        let model = media.model_for(TOOL, DEFAULT_IMAGE_MODEL);
        let (bytes, revised) = openai::image(name, provider, &model, &args.prompt, size, args.style.as_deref()).await?;
        let (mime, ext) = image_type(&bytes).ok_or_else(|| {
            Error::failed(format!("media provider `{name}` sent something that is not a PNG, JPEG or WebP image"))
        })?;
        let dimensions = png_size(&bytes);
        let entry = self.0.workspaces.write(ctx.agent.id, &output_path("image", ext), bytes).await?;
        Ok(json!({
            "path": entry.path,
            "bytes": entry.bytes,
            "mime": mime,
            "width": dimensions.map(|d| d.0),
            "height": dimensions.map(|d| d.1),
            "revised_prompt": revised,
        }))
    }
}

/// `text_to_speech(text, voice?)`.
pub struct TextToSpeech(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextToSpeechArgs {
    /// What to say: at most 4,096 characters.
    pub text: String,
    /// A voice the provider has, such as `alloy` (the default), `nova` or `onyx`.
    pub voice: Option<String>,
}

impl Tool for TextToSpeech {
    type Args = TextToSpeechArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "text_to_speech",
            "media",
            "Speak a text aloud: the recording is saved in your workspace under output/ as MP3.",
        )
        .tags(&["speech", "voice", "audio", "speak", "tts", "read aloud"])
    }

    async fn run(&self, ctx: CallContext, args: TextToSpeechArgs) -> Result<Value> {
        const TOOL: &str = "text_to_speech";
        if crate::text::is_blank(&args.text) || crate::text::longer_than(&args.text, MAX_SPEECH_CHARS) {
            return Err(Error::invalid(format!("a text of 1 to {MAX_SPEECH_CHARS} characters")).with_field("text"));
        }
        let voice = args.voice.as_deref().unwrap_or(DEFAULT_VOICE);
        if voice.is_empty()
            || voice.len() > 32
            || !voice.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(Error::invalid("a voice is one word, like `alloy` or `nova`").with_field("voice"));
        }
        let media = &self.0.media;
        let (name, provider) = media.provider_for(TOOL)?;
        let model = media.model_for(TOOL, DEFAULT_SPEECH_MODEL);
        let max = self.0.workspaces.max_file_bytes();
        let audio = openai::speech(name, provider, &model, &args.text, voice, "mp3", max).await?;
        if audio.is_empty() {
            return Err(Error::failed(format!("media provider `{name}` sent no audio")));
        }
        let entry = self.0.workspaces.write(ctx.agent.id, &output_path("speech", "mp3"), audio).await?;
        // Its length, when ffprobe can tell (it is there when ffmpeg is).
        let (file, _) = self.0.workspaces.open(ctx.agent.id, &entry.path).await?;
        let secs = media.ffmpeg().duration(file).await.ok();
        Ok(json!({
            "path": entry.path,
            "bytes": entry.bytes,
            "mime": "audio/mpeg",
            "voice": voice,
            "duration_sec": secs.map(|s| (s * 1000.0).round() / 1000.0),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_png_says_its_size_and_outputs_go_under_output() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend(640u32.to_be_bytes());
        png.extend(480u32.to_be_bytes());
        assert_eq!(png_size(&png), Some((640, 480)));
        assert_eq!(image_type(&png), Some(("image/png", "png")));
        assert_eq!(png_size(b"GIF89a"), None);
        let path = output_path("image", "png");
        assert!(path.starts_with("output/image-") && path.ends_with(".png"), "{path}");
        crate::workspace::check_relative(&path).unwrap();
    }
}
