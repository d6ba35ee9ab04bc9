//! Media tools (spec §13, family `media`): transcription, images, speech, vision, music and
//! video (jobs polled with `video_status`). `[media]` in `config.toml` names the providers and which serves each
//! tool; a tool no provider serves is excluded with that reason, and so is one that needs
//! `ffmpeg` when ffmpeg is missing (conditional registration, spec §0.8). `canvas_present`,
//! the family's other member, lives in `crate::canvas`.
//!
//! Every file argument is a workspace path (`crate::workspace`): URLs are refused, and ffmpeg
//! reads the file the workspace opened (its standard input), never a path of its own choosing.
//!
//! # Design notes
//!
//! ## Layout
//!
//! The media family (issue 15): `Media` (providers from `[media]`, who serves which tool, ffmpeg),
//! `ffmpeg.rs` (ffprobe for a recording's length, ffmpeg for a window of its audio as 16 kHz mono
//! WAV; the child reads the file the workspace opened, as its standard input, and only through the
//! `file` protocol and single-file formats, so a playlist saved as `.mp4` cannot make it fetch
//! URLs or read other files), `openai.rs` (the multipart upload to `/audio/transcriptions`),
//! `transcribe.rs` (`media_transcribe` by window with `out_path`, `speech_to_text`), `generate.rs`
//! (`image_generate`, `text_to_speech`: the file goes to the workspace's `output/`, the answer has
//! its path, size, type, width and height or length). `vision.rs` (`image_analyze`,
//! `media_describe`: a chat model with image input; a video from four frames at the middles of its
//! quarters). `replicate.rs` + `jobs.rs` + `store.rs` (`music_generate` waits for its prediction;
//! `video_generate` stores a job in `media_jobs`, so a restart loses none, and `video_status`
//! polls it and downloads the finished video once, through the address guard and `[media]
//! allowed_hosts`). A tool no provider serves is excluded with that reason, and both when ffmpeg
//! is missing. `canvas_present` is in `canvas/`.

pub(crate) mod config;
mod ffmpeg;
mod generate;
mod jobs;
mod openai;
mod replicate;
mod store;
mod transcribe;
mod vision;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::db::Db;
use crate::error::{Error, Result};
use crate::family::{Family, Services};
use crate::tool::Registry;
use crate::tool::availability::Needs;
use crate::workspace::Workspaces;

pub use config::{MediaConfig, MediaProviderConfig, MediaProviderKind};
pub use ffmpeg::Ffmpeg;

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "media",
    open: |s| {
        s.provide(Media::new(s.get::<Db>().clone(), &s.config().media));
        Ok(())
    },
    register,
};

/// What the media tools reach, taken from the kernel's services when they are registered.
#[derive(Clone)]
struct Uses {
    media: Arc<Media>,
    workspaces: Arc<Workspaces>,
}

pub(crate) fn register(r: &mut Registry, services: &Services) {
    let uses = Uses { media: services.need(), workspaces: services.need() };
    let media = &services.config().media;
    let ffmpeg =
        Needs::binary("ffmpeg", media.ffmpeg.as_deref()).and(Needs::binary("ffprobe", ffprobe_path(media).as_deref()));
    r.add_needing(transcribe::MediaTranscribe(uses.clone()), &served(media, "media_transcribe").and(ffmpeg.clone()));
    r.add_needing(transcribe::SpeechToText(uses.clone()), &served(media, "speech_to_text").and(ffmpeg));
    r.add_needing(generate::ImageGenerate(uses.clone()), &served(media, "image_generate"));
    r.add_needing(generate::TextToSpeech(uses.clone()), &served(media, "text_to_speech"));
    r.add_needing(vision::ImageAnalyze(uses.clone()), &served(media, "image_analyze"));
    r.add_needing(jobs::MusicGenerate(uses.clone()), &served(media, "music_generate"));
    r.add_needing(jobs::VideoGenerate(uses.clone()), &served(media, "video_generate"));
    // Jobs are polled with the provider that runs them: served when video_generate is.
    r.add_needing(jobs::VideoStatus(uses.clone()), &served(media, "video_generate"));
    // Videos are described from frames ffmpeg takes; images need no ffmpeg, but one tool
    // has one availability, so media_describe needs it.
    r.add_needing(vision::MediaDescribe(uses.clone()), &served(media, "media_describe").and(ffmpeg_needs(media)));
}

/// ffmpeg and ffprobe, where `[media] ffmpeg` says or on `PATH`.
fn ffmpeg_needs(media: &MediaConfig) -> Needs {
    Needs::binary("ffmpeg", media.ffmpeg.as_deref()).and(Needs::binary("ffprobe", ffprobe_path(media).as_deref()))
}

/// A workspace path argument that names a file; a URL is refused with what to do instead.
fn file_argument(field: &str, path: &str) -> Result<()> {
    if path.contains("://") || path.starts_with("data:") {
        return Err(Error::invalid(format!(
            "`{field}` takes a file in your workspace, not a URL: save the file there first"
        ))
        .with_field(field));
    }
    Ok(())
}

/// Whether `[media.tools]` names a provider for `tool`.
fn served(media: &MediaConfig, tool: &str) -> Needs {
    Needs::unless(
        (!media.tools.contains_key(tool))
            .then(|| format!("no media provider serves it: set [media.tools] {tool} = \"NAME\"")),
    )
}

/// `ffprobe` beside a configured `ffmpeg` (Debian installs both together).
fn ffprobe_path(media: &MediaConfig) -> Option<PathBuf> {
    media.ffmpeg.as_ref().map(|f| f.with_file_name("ffprobe"))
}

/// The media side of the kernel: the providers, who serves which tool, and ffmpeg.
pub struct Media {
    db: crate::db::Db,
    allowed_hosts: crate::net::guard::AllowedHosts,
    providers: BTreeMap<String, MediaProviderConfig>,
    tools: BTreeMap<String, String>,
    models: BTreeMap<String, String>,
    ffmpeg: Ffmpeg,
}

impl Media {
    pub(crate) fn new(db: crate::db::Db, config: &MediaConfig) -> Media {
        let ffmpeg = Ffmpeg::new(
            config.ffmpeg.clone().unwrap_or_else(|| "ffmpeg".into()),
            ffprobe_path(config).unwrap_or_else(|| "ffprobe".into()),
        );
        Media {
            db,
            allowed_hosts: config.allowed_hosts.clone(),
            providers: config.providers.clone(),
            tools: config.tools.clone(),
            models: config.models.clone(),
            ffmpeg,
        }
    }

    pub fn ffmpeg(&self) -> &Ffmpeg {
        &self.ffmpeg
    }

    /// The provider that serves `tool`, with its name. (Registration excluded the tool when
    /// none does, so a call only finds none if the config changed under it.)
    fn provider_for(&self, tool: &str) -> Result<(&str, &MediaProviderConfig)> {
        self.tools
            .get(tool)
            .and_then(|name| self.providers.get_key_value(name))
            .map(|(name, p)| (name.as_str(), p))
            .ok_or_else(|| {
                Error::unavailable(format!(
                    "no media provider serves `{tool}`: set [media.tools] {tool} in config.toml"
                ))
            })
    }

    fn db(&self) -> &crate::db::Db {
        &self.db
    }

    /// A provider by its `[media.providers]` name (the one a stored job was sent to).
    fn provider_named(&self, name: &str) -> Option<&MediaProviderConfig> {
        self.providers.get(name)
    }

    /// The model to ask for `tool`: `[media.models]`, else the provider's usual one.
    fn model_for(&self, tool: &str, default: &str) -> String {
        self.models.get(tool).cloned().unwrap_or_else(|| default.to_string())
    }
}
