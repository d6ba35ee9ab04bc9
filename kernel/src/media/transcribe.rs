//! `media_transcribe` and `speech_to_text` (spec §13): audio to text, from audio files and
//! from video containers (ffmpeg takes the audio track).
//!
//! `media_transcribe` works by time window so a long recording never has to come back in one
//! result: it takes `start_sec` and `max_secs`, says whether there is more and where the next
//! window starts — from the length ffmpeg actually produced, never `start_sec + max_secs`
//! (seeks land on key frames, the last window is short) — and can write the text to a
//! workspace file instead of answering with it (`out_path`: the first window creates the file,
//! later ones append). A window that starts more than [`PAST_END_MARGIN_SECS`] after the end
//! is refused: ffmpeg would give up the seek and hand back the beginning.
//!
//! Two limits, checked before the work they guard: the file (the container) against
//! [`MAX_INPUT_BYTES`] before it is read, and the audio to send against [`MAX_AUDIO_BYTES`]
//! before it is sent. Each refusal says the size measured and the limit.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::Uses;
use super::openai::{self, Audio, Transcription};
use crate::error::{Error, Result};
use crate::tool::{CallContext, Tool, ToolDef};
use crate::workspace::FileEntry;

/// The largest file (container) either tool reads.
pub const MAX_INPUT_BYTES: u64 = 50_000_000;
/// The most audio one request sends to the provider.
pub const MAX_AUDIO_BYTES: u64 = 20_000_000;
/// How far past the end of a recording a window may start and still be answered (empty).
pub const PAST_END_MARGIN_SECS: f64 = 10.0;
/// A window's length when `max_secs` is not given: ten minutes of audio, 19.2 MB as WAV.
const DEFAULT_WINDOW_SECS: f64 = 600.0;
/// The longest window: what fits in [`MAX_AUDIO_BYTES`] as 16 kHz mono WAV, with room for
/// the header and a seek landing a little early.
const MAX_WINDOW_SECS: f64 = 620.0;
/// The model asked for when `[media.models]` names none.
const DEFAULT_MODEL: &str = "whisper-1";
// The longest window, as the WAV that is sent (header included), fits the audio limit, and
// the default window is one of the allowed ones: checked when this compiles.
const _: () = assert!(MAX_WINDOW_SECS * super::ffmpeg::WAV_BYTES_PER_SEC as f64 + 44.0 <= MAX_AUDIO_BYTES as f64);
const _: () = assert!(DEFAULT_WINDOW_SECS <= MAX_WINDOW_SECS);

/// How much of a window's text the answer shows when the text went to a file.
const PREVIEW_CHARS: usize = 300;

/// The extensions both tools know, with the MIME type of each (audio first, then video).
const KNOWN: &[(&str, &str)] = &[
    ("mp3", "audio/mpeg"),
    ("mpga", "audio/mpeg"),
    ("m4a", "audio/mp4"),
    ("wav", "audio/wav"),
    ("ogg", "audio/ogg"),
    ("oga", "audio/ogg"),
    ("opus", "audio/ogg"),
    ("flac", "audio/flac"),
    ("aac", "audio/aac"),
    ("weba", "audio/webm"),
    ("webm", "video/webm"),
    ("mp4", "video/mp4"),
    ("m4v", "video/mp4"),
    ("mov", "video/quicktime"),
    ("mkv", "video/x-matroska"),
    ("avi", "video/x-msvideo"),
    ("mpeg", "video/mpeg"),
    ("mpg", "video/mpeg"),
];

fn known_mime(path: &str) -> Option<&'static str> {
    let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
    KNOWN.iter().find(|(e, _)| *e == ext).map(|(_, mime)| *mime)
}

fn known_list() -> String {
    KNOWN.iter().map(|(e, _)| format!(".{e}")).collect::<Vec<_>>().join(" ")
}

/// A loose guess from the first bytes, for `speech_to_text` on an extension it does not know.
fn guessed_mime(head: &[u8]) -> &'static str {
    match head {
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'A', b'V', b'E', ..] => "audio/wav",
        [b'I', b'D', b'3', ..] | [0xFF, 0xFB | 0xF3 | 0xF2, ..] => "audio/mpeg",
        [b'O', b'g', b'g', b'S', ..] => "audio/ogg",
        [b'f', b'L', b'a', b'C', ..] => "audio/flac",
        [_, _, _, _, b'f', b't', b'y', b'p', ..] => "audio/mp4",
        [0x1A, 0x45, 0xDF, 0xA3, ..] => "video/webm",
        _ => "application/octet-stream",
    }
}

/// The extension for audio bytes, from their first bytes (`mp3` when unsure).
pub(super) fn audio_extension_of(bytes: &[u8]) -> &'static str {
    match guessed_mime(&bytes[..bytes.len().min(16)]) {
        "audio/wav" => "wav",
        "audio/ogg" => "ogg",
        "audio/flac" => "flac",
        "audio/mp4" => "m4a",
        _ => "mp3",
    }
}

/// The MIME type of an audio file by its extension.
pub(super) fn audio_mime_of(path: &str) -> &'static str {
    known_mime(path).unwrap_or("audio/mpeg")
}

/// `12,345,678 bytes (12.3 MB)`: a size as a refusal states it.
fn size(bytes: u64) -> String {
    format!("{} bytes ({:.1} MB)", crate::text::thousands(bytes), bytes as f64 / 1e6)
}

fn check_input(tool: &str, entry: &FileEntry) -> Result<()> {
    if entry.bytes > MAX_INPUT_BYTES {
        return Err(Error::invalid(format!(
            "`{}` is {}; {tool} reads files of at most {}",
            entry.path,
            size(entry.bytes),
            size(MAX_INPUT_BYTES)
        )));
    }
    Ok(())
}

fn audio_too_large(tool: &str, measured: u64, hint: &str) -> Error {
    Error::invalid(format!(
        "the audio to send is {} (16 kHz mono WAV); {tool} sends at most {} per request{hint}",
        size(measured),
        size(MAX_AUDIO_BYTES)
    ))
}

fn check_text_args(language: &Option<String>, prompt: &Option<String>) -> Result<()> {
    if let Some(l) = language
        && (l.is_empty() || l.len() > 16 || !l.chars().all(|c| c.is_ascii_alphabetic() || c == '-'))
    {
        return Err(Error::invalid(format!("`{l}` is not a language code: write one like `en` or `pt-BR`"))
            .with_field("language"));
    }
    if prompt.as_ref().is_some_and(|p| crate::text::longer_than(p, 2_000)) {
        return Err(Error::invalid("a prompt is at most 2,000 characters").with_field("prompt"));
    }
    Ok(())
}

/// `media_transcribe(audio_or_video, language?, prompt?, start_sec?, max_secs?, out_path?)`.
pub struct MediaTranscribe(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MediaTranscribeArgs {
    /// A recording in your workspace: audio (.mp3 .m4a .wav .ogg .flac …) or video (.mp4 .mov
    /// .mkv .webm …, whose audio track is taken).
    pub audio_or_video: String,
    /// The spoken language, as a code like `en` (helps accuracy and speed).
    pub language: Option<String>,
    /// Words the recording uses (names, jargon), to guide the transcription.
    pub prompt: Option<String>,
    /// Where the window starts, in seconds (0 when absent). Continue with the answer's
    /// `next_start_sec`.
    #[schemars(range(min = 0))]
    pub start_sec: Option<f64>,
    /// The window's length in seconds: at most 620, 600 when absent.
    #[schemars(range(min = 1, max = 620))]
    pub max_secs: Option<f64>,
    /// A workspace file to write the text to instead of answering with it: the window at 0
    /// creates it, later windows append a line.
    pub out_path: Option<String>,
}

impl Tool for MediaTranscribe {
    type Args = MediaTranscribeArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "media_transcribe",
            "media",
            "Transcribe speech in an audio or video file of your workspace, one time window at a time (use out_path and next_start_sec for long recordings).",
        )
        .tags(&["audio", "video", "speech", "transcribe", "transcript", "meeting", "whisper", "ffmpeg"])
    }

    async fn run(&self, ctx: CallContext, args: MediaTranscribeArgs) -> Result<Value> {
        const TOOL: &str = "media_transcribe";
        check_text_args(&args.language, &args.prompt)?;
        let start = args.start_sec.unwrap_or(0.0);
        if !start.is_finite() || start < 0.0 {
            return Err(Error::invalid("`start_sec` is a number of seconds, 0 or more").with_field("start_sec"));
        }
        let window = args.max_secs.unwrap_or(DEFAULT_WINDOW_SECS);
        if !window.is_finite() || !(1.0..=MAX_WINDOW_SECS).contains(&window) {
            return Err(Error::invalid(format!(
                "`max_secs` is from 1 to {MAX_WINDOW_SECS} seconds (what {} of audio holds)",
                size(MAX_AUDIO_BYTES)
            ))
            .with_field("max_secs"));
        }
        super::file_argument("audio_or_video", &args.audio_or_video)?;
        if let Some(out) = &args.out_path {
            super::file_argument("out_path", out)?;
            crate::workspace::check_relative(out).map_err(|e| e.with_field("out_path"))?;
        }
        let Some(_) = known_mime(&args.audio_or_video) else {
            return Err(Error::invalid(format!(
                "`{}` has an extension media_transcribe does not know; it takes {}",
                args.audio_or_video,
                known_list()
            ))
            .with_field("audio_or_video"));
        };
        let media = &self.0.media;
        let (provider_name, provider) = media.provider_for(TOOL)?;
        let workspaces = &self.0.workspaces;
        let (file, entry) = workspaces.open(ctx.agent.id, &args.audio_or_video).await?;
        check_input(TOOL, &entry)?;
        let total = media.ffmpeg().duration(file.try_clone()?).await?;
        if start > total + PAST_END_MARGIN_SECS {
            return Err(Error::invalid(format!(
                "the recording is {total:.1} s long; a window starting at {start:.1} s is past its end \
                 (more than {PAST_END_MARGIN_SECS:.0} s after it): the transcript is complete"
            ))
            .with_field("start_sec"));
        }
        let hint = ": ask for a shorter window (`max_secs`)";
        let audio = media
            .ffmpeg()
            .audio_window(file, start, Some(window), MAX_AUDIO_BYTES)
            .await?
            .map_err(|measured| audio_too_large(TOOL, measured, hint))?;
        let produced = audio.secs;
        let text = if produced > 0.0 {
            let model = media.model_for(TOOL, DEFAULT_MODEL);
            let req =
                Transcription { model: &model, language: args.language.as_deref(), prompt: args.prompt.as_deref() };
            let sent = Audio { bytes: audio.wav, file_name: "audio.wav".into(), mime: "audio/wav".into() };
            openai::transcribe(provider_name, provider, sent, &req).await?.trim().to_string()
        } else {
            String::new()
        };
        // Advance by what was produced. There is more when the container says so (a sliver
        // under a quarter second is not another window) or when the window came back full:
        // a length ffprobe only estimated (a VBR MP3 without a header) must not cut the
        // transcript short; a full last window is then followed by an empty one.
        let next = start + produced;
        let full = produced + 0.05 >= window;
        let has_more = produced > 0.0 && (next + 0.25 < total || full);
        let mut answer = json!({
            "window": { "start_sec": round_ms(start), "secs": round_ms(produced) },
            "duration_sec": round_ms(total),
            "has_more": has_more,
            "next_start_sec": if has_more { json!(round_ms(next)) } else { Value::Null },
        });
        match &args.out_path {
            None => answer["text"] = Value::from(text),
            Some(out) => {
                let written = write_window(&self.0, &ctx, out, start == 0.0, &text).await?;
                answer["written_to"] = Value::from(written.0.path);
                answer["file_bytes"] = Value::from(written.0.bytes);
                answer["sha256"] = Value::from(written.1);
                answer["window_preview"] = Value::from(text.chars().take(PREVIEW_CHARS).collect::<String>());
            }
        }
        Ok(answer)
    }
}

fn round_ms(secs: f64) -> f64 {
    (secs * 1000.0).round() / 1000.0
}

/// Writes a window's text to `out`: the first window creates (or replaces) the file, a later
/// one appends it as a new line. The file's entry and the sha256 of all of it.
async fn write_window(
    uses: &Uses,
    ctx: &CallContext,
    out: &str,
    first: bool,
    text: &str,
) -> Result<(FileEntry, String)> {
    let workspaces = &uses.workspaces;
    let mut bytes = if first {
        Vec::new()
    } else {
        match workspaces.read(ctx.agent.id, out).await {
            Ok((bytes, _)) => bytes,
            Err(e) if e.kind == crate::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        }
    };
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(text.as_bytes());
    let sha = hex::encode(Sha256::digest(&bytes));
    let entry = workspaces.write(ctx.agent.id, out, bytes).await?;
    Ok((entry, sha))
}

/// `speech_to_text(audio_or_video, language?, prompt?)`.
pub struct SpeechToText(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpeechToTextArgs {
    /// An audio or video file in your workspace. An extension it does not know is sent as it
    /// is, its type guessed from its first bytes.
    pub audio_or_video: String,
    /// The spoken language, as a code like `en`.
    pub language: Option<String>,
    /// Words the recording uses (names, jargon), to guide the transcription.
    pub prompt: Option<String>,
}

impl Tool for SpeechToText {
    type Args = SpeechToTextArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "speech_to_text",
            "media",
            "Transcribe a short audio or video file of your workspace in one go (for long recordings use media_transcribe).",
        )
        .tags(&["audio", "speech", "transcribe", "voice", "dictation", "whisper"])
    }

    async fn run(&self, ctx: CallContext, args: SpeechToTextArgs) -> Result<Value> {
        const TOOL: &str = "speech_to_text";
        check_text_args(&args.language, &args.prompt)?;
        super::file_argument("audio_or_video", &args.audio_or_video)?;
        let media = &self.0.media;
        let (provider_name, provider) = media.provider_for(TOOL)?;
        let workspaces = &self.0.workspaces;
        let (file, entry) = workspaces.open(ctx.agent.id, &args.audio_or_video).await?;
        check_input(TOOL, &entry)?;
        let (audio, secs) = match known_mime(&args.audio_or_video) {
            Some(_) => {
                let hint = ": use media_transcribe, which works by window";
                let window = media
                    .ffmpeg()
                    .audio_window(file, 0.0, None, MAX_AUDIO_BYTES)
                    .await?
                    .map_err(|measured| audio_too_large(TOOL, measured, hint))?;
                let secs = window.secs;
                (Audio { bytes: window.wav, file_name: "audio.wav".into(), mime: "audio/wav".into() }, Some(secs))
            }
            None => {
                // Not a container it knows: sent as it is, under a type guessed loosely.
                if entry.bytes > MAX_AUDIO_BYTES {
                    return Err(audio_too_large(TOOL, entry.bytes, ""));
                }
                let (bytes, _) = workspaces.read(ctx.agent.id, &args.audio_or_video).await?;
                let mime = guessed_mime(&bytes[..bytes.len().min(16)]).to_string();
                let name = entry.path.rsplit('/').next().unwrap_or("audio").to_string();
                (Audio { bytes, file_name: name, mime }, None)
            }
        };
        let mime = audio.mime.clone();
        let model = media.model_for(TOOL, DEFAULT_MODEL);
        let req = Transcription { model: &model, language: args.language.as_deref(), prompt: args.prompt.as_deref() };
        let text = openai::transcribe(provider_name, provider, audio, &req).await?;
        Ok(json!({
            "text": text.trim(),
            "sent_as": mime,
            "duration_sec": secs.map(round_ms),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_are_known_or_guessed_from_the_first_bytes() {
        assert_eq!(known_mime("talks/Meeting.MP4"), Some("video/mp4"));
        assert_eq!(known_mime("notes.txt"), None);
        assert_eq!(known_mime("no-extension"), None);
        assert_eq!(guessed_mime(b"RIFF\0\0\0\0WAVEfmt "), "audio/wav");
        assert_eq!(guessed_mime(b"ID3\x04"), "audio/mpeg");
        assert_eq!(guessed_mime(b"\0\0\0\x20ftypM4A "), "audio/mp4");
        assert_eq!(guessed_mime(b"hello"), "application/octet-stream");
        assert_eq!(size(73_400_320), "73,400,320 bytes (73.4 MB)");
    }
}
