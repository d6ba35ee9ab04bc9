//! `music_generate`, `video_generate` and `video_status` (spec §13) on a Replicate-style
//! predictions API. Music waits for its prediction; a video is a job the agent polls: it is
//! stored (`media_jobs`), so a restart loses none, and `video_status` reads the prediction
//! again and, once it succeeded, downloads the video into the workspace's `output/` (once).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Uses;
use super::{generate::output_path, replicate, store};
use crate::error::{Error, Result};
use crate::tool::{CallContext, Tool, ToolDef};

const DEFAULT_VIDEO_MODEL: &str = "minimax/video-01";
const DEFAULT_MUSIC_MODEL: &str = "meta/musicgen";
/// How often `music_generate` looks again while it waits.
const POLL: Duration = Duration::from_millis(500);
const MAX_PROMPT_CHARS: usize = 4_000;

/// A stored video job.
pub struct Job {
    pub id: String,
    pub agent_id: String,
    pub tool: String,
    pub provider: String,
    pub prediction_id: String,
    pub status: String,
    pub path: Option<String>,
    pub bytes: Option<i64>,
    pub error: Option<String>,
}

fn check_prompt(prompt: &str) -> Result<()> {
    if crate::text::is_blank(prompt) || crate::text::longer_than(prompt, MAX_PROMPT_CHARS) {
        return Err(Error::invalid(format!("a prompt of 1 to {MAX_PROMPT_CHARS} characters")).with_field("prompt"));
    }
    Ok(())
}

/// Downloads a finished prediction's output into the workspace as `kind`.`ext`.
/// `ext`, or (for `None`) the type read from the file's first bytes: a provider's music may
/// be MP3, WAV, FLAC or Ogg.
async fn keep_output(
    uses: &Uses,
    ctx: &CallContext,
    provider: &str,
    prediction: &replicate::Prediction,
    kind: &str,
    ext: Option<&str>,
) -> Result<crate::workspace::FileEntry> {
    let url = prediction
        .output_url()
        .ok_or_else(|| Error::failed(format!("media provider `{provider}` finished without an output URL")))?;
    let max = uses.workspaces.max_file_bytes();
    let bytes = replicate::download(provider, url, &uses.media.allowed_hosts, max).await?;
    let ext = ext.unwrap_or_else(|| super::transcribe::audio_extension_of(&bytes));
    uses.workspaces.write(ctx.agent.id, &output_path(kind, ext), bytes).await
}

/// `music_generate(prompt, lyrics?)`.
pub struct MusicGenerate(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MusicGenerateArgs {
    /// The music: genre, mood, instruments, tempo.
    pub prompt: String,
    /// Words to sing, if the model sings.
    pub lyrics: Option<String>,
}

impl Tool for MusicGenerate {
    type Args = MusicGenerateArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "music_generate",
            "media",
            "Generate a piece of music from a description (and lyrics); it is saved in your workspace under output/.",
        )
        .tags(&["music", "song", "audio", "generate", "compose", "lyrics"])
    }

    async fn run(&self, ctx: CallContext, args: MusicGenerateArgs) -> Result<Value> {
        const TOOL: &str = "music_generate";
        check_prompt(&args.prompt)?;
        if args.lyrics.as_ref().is_some_and(|l| crate::text::longer_than(l, MAX_PROMPT_CHARS)) {
            return Err(Error::invalid(format!("lyrics of at most {MAX_PROMPT_CHARS} characters")).with_field("lyrics"));
        }
        let media = &self.0.media;
        let (name, provider) = media.provider_for(TOOL)?;
        let model = media.model_for(TOOL, DEFAULT_MUSIC_MODEL);
        let mut input = json!({ "prompt": args.prompt });
        if let Some(lyrics) = &args.lyrics {
            input["lyrics"] = Value::from(lyrics.as_str());
        }
        let mut prediction = replicate::create(name, provider, &model, input).await?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(provider.timeout_secs);
        while !prediction.is_done() {
            if tokio::time::Instant::now() > deadline {
                return Err(Error::new(
                    crate::ErrorKind::Timeout,
                    format!(
                        "media provider `{name}` did not finish the music in {} s (prediction {})",
                        provider.timeout_secs, prediction.id
                    ),
                ));
            }
            tokio::time::sleep(POLL).await;
            prediction = replicate::get(name, provider, &prediction.id).await?;
        }
        if prediction.status != "succeeded" {
            return Err(Error::failed(format!(
                "media provider `{name}` could not make the music ({}): {}",
                prediction.status,
                prediction.error_text().unwrap_or_else(|| "no reason given".into())
            )));
        }
        let entry = keep_output(&self.0, &ctx, name, &prediction, "music", None).await?;
        let mime = super::transcribe::audio_mime_of(&entry.path);
        Ok(json!({ "path": entry.path, "bytes": entry.bytes, "mime": mime }))
    }
}

/// `video_generate(prompt, duration_secs?)`.
pub struct VideoGenerate(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VideoGenerateArgs {
    /// What happens in the video.
    pub prompt: String,
    /// How long it should be, in seconds (1 to 60).
    #[schemars(range(min = 1, max = 60))]
    pub duration_secs: Option<u32>,
}

impl Tool for VideoGenerate {
    type Args = VideoGenerateArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "video_generate",
            "media",
            "Start generating a video from a prompt; returns a task_id to poll with video_status.",
        )
        .tags(&["video", "clip", "movie", "generate", "animation"])
    }

    async fn run(&self, ctx: CallContext, args: VideoGenerateArgs) -> Result<Value> {
        const TOOL: &str = "video_generate";
        check_prompt(&args.prompt)?;
        if args.duration_secs.is_some_and(|d| !(1..=60).contains(&d)) {
            return Err(Error::invalid("a duration from 1 to 60 seconds").with_field("duration_secs"));
        }
        let media = &self.0.media;
        let (name, provider) = media.provider_for(TOOL)?;
        let model = media.model_for(TOOL, DEFAULT_VIDEO_MODEL);
        let mut input = json!({ "prompt": args.prompt });
        if let Some(d) = args.duration_secs {
            input["duration"] = Value::from(d);
        }
        let prediction = replicate::create(name, provider, &model, input).await?;
        let job = Job {
            id: uuid::Uuid::now_v7().to_string(),
            agent_id: ctx.agent.id.to_string(),
            tool: TOOL.into(),
            provider: name.into(),
            prediction_id: prediction.id,
            status: prediction.status,
            path: None,
            bytes: None,
            error: None,
        };
        store::insert(media.db(), &job).await?;
        Ok(
            json!({ "task_id": job.id, "status": job.status, "next": "call video_status with this task_id until it is done" }),
        )
    }
}

/// `video_status(task_id)`.
pub struct VideoStatus(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VideoStatusArgs {
    /// The `task_id` video_generate gave.
    pub task_id: String,
}

impl Tool for VideoStatus {
    type Args = VideoStatusArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "video_status",
            "media",
            "Check a video job; once it is done the video is in your workspace under output/.",
        )
        .tags(&["video", "status", "poll", "job"])
    }

    async fn run(&self, ctx: CallContext, args: VideoStatusArgs) -> Result<Value> {
        let media = &self.0.media;
        let not_found = || Error::not_found(format!("you have no video job `{}`", args.task_id));
        let mut job = store::get(media.db(), &ctx.agent.id.to_string(), &args.task_id).await?.ok_or_else(not_found)?;
        if job.path.is_none() && job.error.is_none() {
            let provider = media.provider_named(&job.provider).ok_or_else(|| {
                Error::unavailable(format!(
                    "media provider `{}`, which runs this job, is no longer configured",
                    job.provider
                ))
            })?;
            let prediction = replicate::get(&job.provider, provider, &job.prediction_id).await?;
            job.status = prediction.status.clone();
            match prediction.status.as_str() {
                // A download that fails ends the job with why (a host the guard refuses, a
                // file too large, an expired URL): polling again would only fail again.
                "succeeded" => match keep_output(&self.0, &ctx, &job.provider, &prediction, "video", Some("mp4")).await
                {
                    Ok(entry) => {
                        job.path = Some(entry.path);
                        job.bytes = Some(entry.bytes as i64);
                    }
                    Err(e) => {
                        job.status = "download_failed".into();
                        job.error = Some(format!("the video was made but not downloaded: {}", e.message));
                        store::update(media.db(), &job).await?;
                        return Err(e);
                    }
                },
                "failed" | "canceled" => {
                    job.error = Some(prediction.error_text().unwrap_or_else(|| prediction.status.clone()))
                }
                _ => {}
            }
            store::update(media.db(), &job).await?;
        }
        let done = job.path.is_some() || job.error.is_some();
        Ok(json!({
            "task_id": job.id,
            "status": job.status,
            "done": done,
            "path": job.path,
            "bytes": job.bytes,
            "mime": job.path.as_ref().map(|_| "video/mp4"),
            "error": job.error,
        }))
    }
}
