//! ffmpeg and ffprobe as child processes: how long a recording is, and a window of its audio
//! as 16 kHz mono 16-bit WAV (what transcription APIs take best, and whose length is exact:
//! 32,000 bytes a second). The input is the file the workspace opened, handed over as the
//! child's standard input and named `/dev/stdin`, so the child reads exactly that file (and can
//! seek in it). ffmpeg guesses a file's format from its content, and some formats name other
//! inputs (an HLS or DASH playlist, a concat list): an agent could save one as `x.mp4` to
//! have ffmpeg fetch URLs past the address guard or read another agent's files. So every run
//! takes only the `file` protocol and the single-file formats of [`FORMATS`].

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use crate::error::{Error, ErrorKind, Result};

/// Bytes of WAV audio per second: 16,000 samples of 2 bytes, one channel.
pub const WAV_BYTES_PER_SEC: u64 = 32_000;

/// The demuxers ffmpeg and ffprobe may use: formats that hold their media themselves. None of
/// them opens another input (HLS, DASH, concat and image sequences are left out).
const FORMATS: &str = "mov,matroska,mp3,wav,ogg,flac,aac,avi,mpeg,mpegts,asf,amr";

/// What goes before `-i` in every run: the input's allowed protocol and formats.
fn confined(cmd: &mut Command) {
    cmd.args(["-protocol_whitelist", "file", "-format_whitelist", FORMATS]);
}

/// ffmpeg or ffprobe with the environment every helper gets, never the daemon's own.
fn command(program: &std::path::Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear().envs(crate::process::base_environment(|name| std::env::var(name).ok()));
    cmd
}

/// The longest an ffmpeg or ffprobe run may take: a window of a 50 MB file takes seconds.
const RUN_LIMIT: Duration = Duration::from_secs(120);

pub struct Ffmpeg {
    ffmpeg: PathBuf,
    ffprobe: PathBuf,
}

/// A window of a recording's audio, as WAV.
pub struct Window {
    /// The WAV file, header included.
    pub wav: Vec<u8>,
    /// How long the audio produced is, in seconds: what advances the next window.
    pub secs: f64,
}

impl Ffmpeg {
    pub(super) fn new(ffmpeg: PathBuf, ffprobe: PathBuf) -> Ffmpeg {
        Ffmpeg { ffmpeg, ffprobe }
    }

    /// How long the recording in `file` is, in seconds.
    pub async fn duration(&self, file: std::fs::File) -> Result<f64> {
        let mut cmd = command(&self.ffprobe);
        cmd.args([
            "-v",
            "error",
            "-show_entries",
            "format=duration",
            "-of",
            "default=noprint_wrappers=1:nokey=1",
            "/dev/stdin",
        ]);
        let (out, err) = run(cmd, file, "ffprobe", u64::MAX)
            .await?
            .map_err(|_| Error::internal("ffprobe printed more than any limit"))?;
        let text = String::from_utf8_lossy(&out);
        text.trim().parse::<f64>().ok().filter(|d| d.is_finite() && *d >= 0.0).ok_or_else(|| {
            Error::invalid(format!(
                "the file is not a recording ffmpeg can read: {}",
                first_line(&err).unwrap_or("it reports no duration")
            ))
        })
    }

    /// The audio of `file` from `start` for at most `secs` seconds (all of it when `None`), as
    /// WAV; `Err(bytes)` inside when it comes to more than `max_bytes` (`bytes` is how much).
    pub async fn audio_window(
        &self,
        file: std::fs::File,
        start: f64,
        secs: Option<f64>,
        max_bytes: u64,
    ) -> Result<std::result::Result<Window, u64>> {
        let mut cmd = command(&self.ffmpeg);
        cmd.args(["-nostdin", "-v", "error", "-ss", &format!("{start:.3}")]);
        confined(&mut cmd);
        cmd.args(["-i", "/dev/stdin"]);
        if let Some(secs) = secs {
            cmd.args(["-t", &format!("{secs:.3}")]);
        }
        cmd.args(["-vn", "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", "-f", "wav", "pipe:1"]);
        let (wav, err) = match run(cmd, file, "ffmpeg", max_bytes).await? {
            Ok(done) => done,
            Err(measured) => return Ok(Err(measured)),
        };
        let data = wav_data_len(&wav).ok_or_else(|| {
            Error::invalid(format!(
                "ffmpeg found no audio track to take: {}",
                first_line(&err).unwrap_or("the file has no audio")
            ))
        })?;
        Ok(Ok(Window { secs: data as f64 / WAV_BYTES_PER_SEC as f64, wav }))
    }

    /// One frame of the video in `file` at `at` seconds, as a JPEG at most 768 pixels wide.
    pub async fn frame(&self, file: std::fs::File, at: f64) -> Result<Vec<u8>> {
        let mut cmd = command(&self.ffmpeg);
        cmd.args(["-nostdin", "-v", "error", "-ss", &format!("{at:.3}")]);
        confined(&mut cmd);
        cmd.args(["-i", "/dev/stdin"]);
        cmd.args(["-frames:v", "1", "-vf", "scale='min(768,iw)':-2", "-f", "image2pipe", "-c:v", "mjpeg", "pipe:1"]);
        let (jpeg, err) = run(cmd, file, "ffmpeg", 20_000_000)
            .await?
            .map_err(|bytes| Error::invalid(format!("a frame came to {bytes} bytes")))?;
        if jpeg.is_empty() {
            return Err(Error::invalid(format!(
                "ffmpeg found no picture at {at:.1} s: {}",
                first_line(&err).unwrap_or("the file has no video track")
            )));
        }
        Ok(jpeg)
    }
}

/// Runs a child with `input` as its standard input: its output and error text, or (inside)
/// how many bytes it wrote when that was more than `max_out`.
async fn run(
    mut cmd: Command,
    input: std::fs::File,
    name: &str,
    max_out: u64,
) -> Result<std::result::Result<(Vec<u8>, String), u64>> {
    cmd.stdin(Stdio::from(input)).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| Error::unavailable(format!("cannot run {name}: {e}")))?;
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    // Both pipes at once: a child blocked writing a full stderr would never finish stdout.
    let read_out = async {
        let mut out = Vec::new();
        (&mut stdout).take(max_out.saturating_add(1)).read_to_end(&mut out).await?;
        // Past the limit: count the rest without keeping it, for the refusal's measured size.
        let rest =
            if out.len() as u64 > max_out { tokio::io::copy(&mut stdout, &mut tokio::io::sink()).await? } else { 0 };
        Ok::<_, std::io::Error>((out, rest))
    };
    let read_err = async {
        let mut err = Vec::new();
        (&mut stderr).take(64 * 1024).read_to_end(&mut err).await?;
        tokio::io::copy(&mut stderr, &mut tokio::io::sink()).await?;
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&err).into_owned())
    };
    let work = async {
        let ((out, rest), err) = tokio::try_join!(read_out, read_err)?;
        let status = child.wait().await?;
        Ok::<_, std::io::Error>((out, rest, err, Some(status)))
    };
    let (out, rest, err, status) = tokio::time::timeout(RUN_LIMIT, work)
        .await
        .map_err(|_| Error::new(ErrorKind::Timeout, format!("{name} took more than {} s", RUN_LIMIT.as_secs())))??;
    if out.len() as u64 > max_out {
        return Ok(Err(out.len() as u64 + rest));
    }
    match status {
        Some(s) if s.success() => Ok(Ok((out, err))),
        _ => Err(Error::invalid(format!(
            "{name} could not read the file: {}",
            first_line(&err).unwrap_or("it gave no reason")
        ))),
    }
}

fn first_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|l| !l.is_empty())
}

/// The length of a WAV file's sample data: the bytes after its `data` chunk header (its size
/// field is not to be trusted from a pipe, where ffmpeg cannot go back to fill it in).
pub fn wav_data_len(wav: &[u8]) -> Option<u64> {
    if wav.len() < 12 || &wav[..4] != b"RIFF" || &wav[8..12] != b"WAVE" {
        return None;
    }
    let mut at = 12;
    while at + 8 <= wav.len() {
        let id = &wav[at..at + 4];
        let size = u32::from_le_bytes(wav[at + 4..at + 8].try_into().ok()?) as usize;
        if id == b"data" {
            return Some((wav.len() - (at + 8)) as u64);
        }
        at = at.checked_add(8 + size + (size & 1))?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_length_is_what_follows_the_data_header_whatever_its_size_field_says() {
        let mut wav = b"RIFF\xff\xff\xff\xffWAVEfmt \x10\x00\x00\x00".to_vec();
        wav.extend([0u8; 16]);
        wav.extend(b"LIST\x04\x00\x00\x00INFO");
        wav.extend(b"data\xff\xff\xff\xff");
        wav.extend([0u8; 64_000]);
        assert_eq!(wav_data_len(&wav), Some(64_000));
        assert_eq!(wav_data_len(b"RIFF\0\0\0\0WAVE"), None, "no data chunk");
        assert_eq!(wav_data_len(b"ID3\x03not a wav at all"), None);
    }
}
