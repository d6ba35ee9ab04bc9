//! `[media]` of `config.toml`: its types, defaults, check at load and lines in the default file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{Config, default_max_retries, in_range};
use crate::net::guard::AllowedHosts;

/// `[media]`: who serves each media tool (spec §13). A tool no provider serves is excluded,
/// with that reason, and so are those that need `ffmpeg` when it is missing.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct MediaConfig {
    /// Media APIs by name: `[media.providers.NAME]`.
    pub providers: BTreeMap<String, MediaProviderConfig>,
    /// Which provider serves each tool: `media_transcribe = "openai"`.
    pub tools: BTreeMap<String, String>,
    /// The model each tool asks its provider for, where the provider's default will not do:
    /// `media_transcribe = "gpt-4o-transcribe"`.
    pub models: BTreeMap<String, String>,
    /// `ffmpeg` to run (its `ffprobe` beside it); found on `PATH` when not set.
    pub ffmpeg: Option<std::path::PathBuf>,
    /// Where finished music and videos may be downloaded from (the URLs a provider answers
    /// with), checked by `net::guard` like `[a2a] allowed_hosts`: empty, any public host;
    /// private and loopback addresses only through an IP or CIDR entry.
    pub allowed_hosts: AllowedHosts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaProviderKind {
    /// OpenAI-compatible media endpoints (`/audio/transcriptions`, `/audio/speech`,
    /// `/images/generations`, chat with image input).
    Openai,
    /// A Replicate-style predictions API (create, then poll): music and video.
    Replicate,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MediaProviderConfig {
    pub kind: MediaProviderKind,
    /// The API's base URL, such as `https://api.openai.com/v1`.
    pub base_url: String,
    /// The environment variable holding the API key; `""` for a local server that needs none.
    pub api_key_env: Option<String>,
    #[serde(default = "default_media_timeout_secs", deserialize_with = "in_range::<_, 1, 3600>")]
    pub timeout_secs: u64,
    /// Times a call is tried again after a 429, a 5xx or a dropped connection (waiting as
    /// `Retry-After` says, else backing off).
    #[serde(default = "default_max_retries", deserialize_with = "in_range::<_, 0, 10>")]
    pub max_retries: u64,
}

fn default_media_timeout_secs() -> u64 {
    300
}

/// The media tools `[media.tools]` may name, with the kind of provider that serves each.
const TOOLS: &[(&str, MediaProviderKind)] = &[
    ("image_analyze", MediaProviderKind::Openai),
    ("image_generate", MediaProviderKind::Openai),
    ("media_describe", MediaProviderKind::Openai),
    ("music_generate", MediaProviderKind::Replicate),
    ("media_transcribe", MediaProviderKind::Openai),
    ("speech_to_text", MediaProviderKind::Openai),
    ("text_to_speech", MediaProviderKind::Openai),
    ("video_generate", MediaProviderKind::Replicate),
];

/// Checks `[media]` beyond its types: the tools named exist, each names a configured provider
/// of the kind that serves it, provider names are names. `Err((key, message))` names the key
/// to point at.
pub(crate) fn check(config: &Config) -> Result<(), (String, String)> {
    let media = &config.media;
    let tool_names = || TOOLS.iter().map(|(t, _)| *t).collect::<Vec<_>>().join(", ");
    for name in media.providers.keys() {
        if !crate::agent::is_valid_name(name) {
            return Err((
                format!("providers.{name}"),
                format!("media provider name `{name}` must be 1-64 lowercase letters, digits, `-` or `_`"),
            ));
        }
    }
    for (tool, provider) in &media.tools {
        let Some((_, kind)) = TOOLS.iter().find(|(t, _)| t == tool) else {
            return Err((
                tool.clone(),
                format!("`{tool}` is not a media tool this daemon has; [media.tools] takes {}", tool_names()),
            ));
        };
        let Some(configured) = media.providers.get(provider) else {
            return Err((
                tool.clone(),
                format!("`{tool}` names media provider `{provider}`, which no [media.providers.{provider}] defines"),
            ));
        };
        if configured.kind != *kind {
            return Err((
                tool.clone(),
                format!(
                    "`{tool}` needs a provider of kind `{}`; `{provider}` is `{}`",
                    kind_name(*kind),
                    kind_name(configured.kind)
                ),
            ));
        }
    }
    for tool in media.models.keys() {
        if !TOOLS.iter().any(|(t, _)| t == tool) {
            return Err((
                tool.clone(),
                format!("`{tool}` is not a media tool this daemon has; [media.models] takes {}", tool_names()),
            ));
        }
    }
    Ok(())
}

fn kind_name(kind: MediaProviderKind) -> &'static str {
    match kind {
        MediaProviderKind::Openai => "openai",
        MediaProviderKind::Replicate => "replicate",
    }
}

/// `[media]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [media]                   # who serves each media tool (none by default: they are excluded)
# [media.providers.openai]
# kind = "openai"           # or "replicate" (music_generate, video_generate)
# base_url = "https://api.openai.com/v1"
# api_key_env = "OPENAI_API_KEY"
# timeout_secs = 300
# max_retries = 3           # after 429 / 5xx / a dropped connection, waiting as Retry-After says
# [media.tools]
# media_transcribe = "openai"
# speech_to_text = "openai"
# [media.models]            # where a provider's default model will not do
# media_transcribe = "whisper-1"
# video_generate = "minimax/video-01"   # Replicate models are owner/name
# [media] allowed_hosts = []  # where finished music and videos may be downloaded from
#                             # (empty: any public host; loopback only through an IP entry)
# [media] ffmpeg = "/usr/bin/ffmpeg"    # found on PATH when not set
"#;

#[cfg(test)]
mod tests {
    use crate::config::parse_for_test as parse;

    #[test]
    fn media_tools_name_configured_providers_of_the_kind_that_serves_them() {
        let provider = "[media.providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";
        let ok = parse(&format!("{provider}[media.tools]\nmedia_transcribe = \"local\"\n")).unwrap();
        assert_eq!(ok.media.tools["media_transcribe"], "local");
        let e = parse(&format!("{provider}[media.tools]\nmedia_transcribe = \"cloud\"\n")).unwrap_err();
        assert!(e.message.contains("`cloud`") && e.message.contains("no [media.providers.cloud]"), "{}", e.message);
        assert_eq!(e.line, 5, "points at the line: {e}");
        let e = parse(&format!("{provider}[media.tools]\nimage_paint = \"local\"\n")).unwrap_err();
        assert!(e.message.contains("not a media tool") && e.message.contains("speech_to_text"), "{}", e.message);
        let replicate = "[media.providers.rep]\nkind = \"replicate\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[media.tools]\nspeech_to_text = \"rep\"\n";
        let e = parse(replicate).unwrap_err();
        assert!(e.message.contains("kind `openai`"), "{}", e.message);
        let e = parse("[media.providers.local]\nkind = \"openai\"\n").unwrap_err();
        assert!(e.message.contains("base_url"), "a provider needs its URL: {}", e.message);
    }
}
