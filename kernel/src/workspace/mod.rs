//! Agent workspaces: one folder per agent under `$KENNEL_HOME/workspaces/AGENT_ID/` (a child
//! agent has its own id, so its own folder). Every front and every family that takes a path
//! goes through [`Workspaces`], which turns an agent's path argument into a file inside that
//! agent's folder and nowhere else:
//!
//! - the path is relative, each part a plain name (no `..`, no `.`, no empty part, no control
//!   character), and short ([`check_relative`]);
//! - the folder it lands in is resolved (symbolic links followed) and must still be inside the
//!   workspace;
//! - the file itself is opened with `O_NOFOLLOW` (a symbolic link there is refused, not
//!   followed), and the opened file's real path is checked once more, so a link swapped in
//!   between the check and the open cannot lead out either;
//! - reads and writes are bounded by `[workspace] max_file_bytes`.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::error::{Error, Result};

/// The longest path argument, in bytes, and the most parts it may have.
const MAX_PATH_BYTES: usize = 1024;
const MAX_PARTS: usize = 16;
/// The longest part (a file system's own limit for a name).
const MAX_PART_BYTES: usize = 255;
/// The most files a listing shows; a workspace with more says so.
pub const MAX_LISTED: usize = 1000;

/// A file in a workspace, as lists show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct FileEntry {
    /// The path inside the workspace, `/`-separated.
    pub path: String,
    pub bytes: u64,
    /// Last modified, RFC 3339 UTC.
    pub modified: String,
}

/// What a listing found.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// Files by path, at most [`MAX_LISTED`].
    pub files: Vec<FileEntry>,
    /// Whether more files were found than listed.
    pub truncated: bool,
}

/// How a file may be shown on the dashboard's own origin: only types a browser cannot run
/// (no HTML, no SVG, no PDF, nothing it might sniff into a document).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inert {
    Image(&'static str),
    Audio(&'static str),
    Video(&'static str),
    Text,
}

impl Inert {
    /// The inert kind of a file by its extension; `None`: download only.
    pub fn of(path: &str) -> Option<Inert> {
        let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
        Some(match ext.as_str() {
            "png" => Inert::Image("image/png"),
            "jpg" | "jpeg" => Inert::Image("image/jpeg"),
            "gif" => Inert::Image("image/gif"),
            "webp" => Inert::Image("image/webp"),
            "mp3" => Inert::Audio("audio/mpeg"),
            "wav" => Inert::Audio("audio/wav"),
            "ogg" | "oga" | "opus" => Inert::Audio("audio/ogg"),
            "m4a" => Inert::Audio("audio/mp4"),
            "flac" => Inert::Audio("audio/flac"),
            "mp4" | "m4v" => Inert::Video("video/mp4"),
            "webm" => Inert::Video("video/webm"),
            "txt" | "md" | "log" | "csv" | "tsv" | "json" | "jsonl" | "toml" | "yaml" | "yml" => Inert::Text,
            _ => return None,
        })
    }

    /// The `Content-Type` it is served with.
    pub fn content_type(self) -> &'static str {
        match self {
            Inert::Image(t) | Inert::Audio(t) | Inert::Video(t) => t,
            Inert::Text => "text/plain; charset=utf-8",
        }
    }
}

/// Every agent's workspace.
pub struct Workspaces {
    root: PathBuf,
    max_file_bytes: u64,
}

impl Workspaces {
    pub(crate) fn new(root: PathBuf, max_file_bytes: u64) -> Workspaces {
        Workspaces { root, max_file_bytes }
    }

    /// The largest file a workspace takes or hands out.
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_bytes
    }

    /// The agent's workspace folder, created (owner-only) if it does not exist yet.
    fn folder(&self, agent: Uuid) -> Result<PathBuf> {
        let dir = self.root.join(agent.to_string());
        std::fs::DirBuilder::new().recursive(true).mode_owner_only().create(&dir)?;
        Ok(dir.canonicalize()?)
    }

    /// Lists the files of the agent's workspace, by path. Symbolic links are not followed
    /// (nor listed): what is listed can be opened.
    pub async fn list(&self, agent: Uuid) -> Result<Listing> {
        // Listing makes nothing: an agent that never had a file has an empty workspace.
        if !self.root.join(agent.to_string()).is_dir() {
            return Ok(Listing::default());
        }
        let dir = self.folder(agent)?;
        blocking(move || {
            let mut listing = Listing::default();
            walk(&dir, &dir, 0, &mut listing)?;
            listing.files.sort_by(|a, b| a.path.cmp(&b.path));
            Ok(listing)
        })
        .await
    }

    /// Reads a whole file (at most `[workspace] max_file_bytes`).
    pub async fn read(&self, agent: Uuid, path: &str) -> Result<(Vec<u8>, FileEntry)> {
        let (dir, target, rel) = self.target(agent, path)?;
        let max = self.max_file_bytes;
        blocking(move || {
            let (mut file, entry) = open_inside(&dir, &target, &rel)?;
            if entry.bytes > max {
                return Err(Error::invalid(format!(
                    "`{rel}` is {} bytes; files of at most {max} bytes ([workspace] max_file_bytes) are read",
                    entry.bytes
                )));
            }
            let mut bytes = Vec::with_capacity(usize::try_from(entry.bytes).unwrap_or(0));
            file.read_to_end(&mut bytes)?;
            Ok((bytes, entry))
        })
        .await
    }

    /// Writes a whole file, replacing one at that path; its folders are made as needed. The
    /// bytes go to a new file that is renamed into place, so a reader never sees half of it.
    pub async fn write(&self, agent: Uuid, path: &str, bytes: Vec<u8>) -> Result<FileEntry> {
        if bytes.len() as u64 > self.max_file_bytes {
            return Err(Error::invalid(format!(
                "the file is {} bytes; a workspace takes files of at most {} bytes ([workspace] max_file_bytes)",
                bytes.len(),
                self.max_file_bytes
            )));
        }
        let dir = self.folder(agent)?;
        let parts = check_relative(path)?;
        let rel = parts.join("/");
        blocking(move || {
            let (name, folders) = parts.split_last().expect("a checked path has a part");
            let mut parent = dir.clone();
            for folder in folders {
                parent.push(folder);
                match std::fs::symlink_metadata(&parent) {
                    Ok(m) if m.is_dir() => {}
                    Ok(_) => return Err(Error::invalid(format!("`{rel}`: `{folder}` is not a folder"))),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        std::fs::DirBuilder::new().mode_owner_only().create(&parent)?;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            let parent = inside(&dir, &parent, &rel)?;
            let target = parent.join(name);
            if std::fs::symlink_metadata(&target).is_ok_and(|m| !m.is_file()) {
                return Err(Error::invalid(format!("`{rel}` exists and is not a regular file")));
            }
            let tmp = parent.join(format!(".{name}.{}.part", Uuid::now_v7()));
            let mut file = OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_NOFOLLOW).open(&tmp)?;
            file.write_all(&bytes)?;
            file.sync_data()?;
            std::fs::rename(&tmp, &target)?;
            let (_, entry) = open_inside(&dir, &target, &rel)?;
            Ok(entry)
        })
        .await
    }

    /// Opens a file to be streamed (a download), with what lists show of it.
    pub async fn open(&self, agent: Uuid, path: &str) -> Result<(File, FileEntry)> {
        let (dir, target, rel) = self.target(agent, path)?;
        blocking(move || open_inside(&dir, &target, &rel)).await
    }

    /// The agent's workspace folder (made if it is not there yet), for a child process to
    /// start in.
    pub(crate) fn dir(&self, agent: Uuid) -> Result<PathBuf> {
        self.folder(agent)
    }

    /// The agent's folder, where `path` points in it, and the path as written back.
    fn target(&self, agent: Uuid, path: &str) -> Result<(PathBuf, PathBuf, String)> {
        let dir = self.folder(agent)?;
        let parts = check_relative(path)?;
        let target = parts.iter().fold(dir.clone(), |p, part| p.join(part));
        Ok((dir, target, parts.join("/")))
    }
}

/// The parts of a path argument, or why it is refused. Pure: nothing on disk is looked at.
pub fn check_relative(path: &str) -> Result<Vec<String>> {
    let refuse = |why: &str| Err(Error::invalid(format!("`{path}` is not a workspace path: {why}")));
    if path.is_empty() {
        return refuse("it is empty");
    }
    if path.len() > MAX_PATH_BYTES {
        return refuse(&format!("a path is at most {MAX_PATH_BYTES} bytes"));
    }
    if path.chars().any(char::is_control) {
        return refuse("it has a control character");
    }
    if path.starts_with('/') || path.starts_with('~') {
        return refuse("it must be relative to the workspace (like `notes/today.txt`)");
    }
    let parts: Vec<&str> = path.split('/').collect();
    if parts.len() > MAX_PARTS {
        return refuse(&format!("a path has at most {MAX_PARTS} parts"));
    }
    for part in &parts {
        match *part {
            "" => return refuse("it has an empty part (`//` or a trailing `/`)"),
            "." | ".." => return refuse("`.` and `..` are not allowed: name the file from the workspace's top"),
            p if p.len() > MAX_PART_BYTES => return refuse(&format!("a name is at most {MAX_PART_BYTES} bytes")),
            _ => {}
        }
    }
    Ok(parts.into_iter().map(str::to_string).collect())
}

/// The existing folder `rel` names inside the workspace folder `dir` (links followed, and
/// refused when they lead out).
pub(crate) fn folder_inside(dir: &Path, rel: &str) -> Result<PathBuf> {
    let parts = check_relative(rel)?;
    let folder = inside(dir, &parts.iter().fold(dir.to_path_buf(), |p, part| p.join(part)), rel)?;
    if !folder.is_dir() {
        return Err(Error::invalid(format!("`{rel}` is not a folder of the workspace")));
    }
    Ok(folder)
}

/// `folder` resolved (links followed), if it is still inside `dir`.
fn inside(dir: &Path, folder: &Path, rel: &str) -> Result<PathBuf> {
    let real = folder.canonicalize().map_err(|e| not_found_or(e, rel))?;
    if !real.starts_with(dir) {
        return Err(escapes(rel));
    }
    Ok(real)
}

/// Opens `target` for reading if it is a regular file inside `dir`: its folder checked by
/// [`inside`], the file opened without following a link, and the opened file's real path
/// checked again.
fn open_inside(dir: &Path, target: &Path, rel: &str) -> Result<(File, FileEntry)> {
    let parent = inside(dir, target.parent().unwrap_or(dir), rel)?;
    let name = target.file_name().ok_or_else(|| Error::invalid(format!("`{rel}` names no file")))?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(parent.join(name))
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => Error::forbidden(format!("`{rel}` is a symbolic link: links are not followed")),
            _ => not_found_or(e, rel),
        })?;
    if let Ok(real) = std::fs::read_link(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&file)))
        && !real.starts_with(dir)
    {
        return Err(escapes(rel));
    }
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Error::invalid(format!("`{rel}` is not a regular file")));
    }
    Ok((file, entry(rel.to_string(), &meta)))
}

fn entry(path: String, meta: &std::fs::Metadata) -> FileEntry {
    let modified = meta.modified().map(chrono::DateTime::<chrono::Utc>::from).unwrap_or_default();
    FileEntry { path, bytes: meta.len(), modified: modified.to_rfc3339_opts(chrono::SecondsFormat::Secs, true) }
}

/// Lists regular files under `folder` into `listing`, not following links, to
/// [`MAX_PARTS`] deep. Names that are not UTF-8 cannot be named by a path argument and are
/// left out; so are the half-written files of [`Workspaces::write`].
fn walk(dir: &Path, folder: &Path, depth: usize, listing: &mut Listing) -> Result<()> {
    for item in std::fs::read_dir(folder)? {
        let item = item?;
        let Ok(name) = item.file_name().into_string() else { continue };
        let kind = item.file_type()?;
        if kind.is_dir() && depth + 1 < MAX_PARTS {
            walk(dir, &item.path(), depth + 1, listing)?;
        } else if kind.is_file() && !(name.starts_with('.') && name.ends_with(".part")) {
            if listing.files.len() == MAX_LISTED {
                listing.truncated = true;
                return Ok(());
            }
            let rel = item.path().strip_prefix(dir).map(|p| p.to_string_lossy().into_owned()).unwrap_or(name);
            listing.files.push(entry(rel, &item.metadata()?));
        }
    }
    Ok(())
}

fn escapes(rel: &str) -> Error {
    Error::forbidden(format!("`{rel}` leads outside the workspace"))
}

fn not_found_or(e: std::io::Error, rel: &str) -> Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        Error::not_found(format!("no file `{rel}` in the workspace"))
    } else {
        e.into()
    }
}

async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(work).await.map_err(|e| Error::internal(format!("a workspace task failed: {e}")))?
}

trait OwnerOnly {
    fn mode_owner_only(&mut self) -> &mut Self;
}

impl OwnerOnly for std::fs::DirBuilder {
    fn mode_owner_only(&mut self) -> &mut Self {
        std::os::unix::fs::DirBuilderExt::mode(self, 0o700)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn workspaces() -> (tempfile::TempDir, Workspaces) {
        let home = tempfile::tempdir().unwrap();
        let ws = Workspaces::new(home.path().join("workspaces"), 1024);
        (home, ws)
    }

    #[test]
    fn only_plain_relative_paths_are_taken() {
        assert_eq!(check_relative("notes/today.txt").unwrap(), ["notes", "today.txt"]);
        assert_eq!(check_relative("a b/ünï ☃.txt").unwrap(), ["a b", "ünï ☃.txt"]);
        for bad in ["", "/etc/passwd", "~/x", "../x", "a/../../x", "./a", "a//b", "a/", "a\0b", "a\nb"] {
            assert_eq!(check_relative(bad).unwrap_err().kind, ErrorKind::InvalidArguments, "{bad:?}");
        }
        assert!(check_relative("a/".repeat(17).trim_end_matches('/')).is_err(), "too many parts");
        assert!(check_relative(&"x".repeat(256)).is_err(), "too long a name");
    }

    #[test]
    fn only_inert_types_are_shown_inline() {
        assert_eq!(Inert::of("shots/a.PNG"), Some(Inert::Image("image/png")));
        assert_eq!(Inert::of("talk.webm"), Some(Inert::Video("video/webm")));
        assert_eq!(Inert::of("notes.md").map(Inert::content_type), Some("text/plain; charset=utf-8"));
        for download_only in ["page.html", "page.htm", "logo.svg", "doc.pdf", "x.xhtml", "README", "a.js"] {
            assert_eq!(Inert::of(download_only), None, "{download_only}");
        }
    }

    #[tokio::test]
    async fn files_are_written_listed_and_read_back_inside_the_agents_folder() {
        let (_home, ws) = workspaces();
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let written = ws.write(a, "out/report.txt", b"hello".to_vec()).await.unwrap();
        assert_eq!((written.path.as_str(), written.bytes), ("out/report.txt", 5));
        assert_eq!(ws.read(a, "out/report.txt").await.unwrap().0, b"hello");
        assert_eq!(ws.list(a).await.unwrap().files, vec![written]);
        assert_eq!(ws.read(b, "out/report.txt").await.unwrap_err().kind, ErrorKind::NotFound, "b has its own");
        let big = ws.write(a, "big.bin", vec![0; 1025]).await.unwrap_err();
        assert!(big.message.contains("max_file_bytes"), "{}", big.message);
        assert!(ws.list(a).await.unwrap().files.iter().all(|f| f.path != "big.bin"), "nothing half-written stays");
    }

    #[tokio::test]
    async fn symbolic_links_lead_nowhere_outside() {
        let (home, ws) = workspaces();
        let agent = Uuid::now_v7();
        ws.write(agent, "inside.txt", b"ok".to_vec()).await.unwrap();
        let secret = home.path().join("secret.txt");
        std::fs::write(&secret, "the daemon's secret").unwrap();
        let dir = ws.folder(agent).unwrap();
        std::os::unix::fs::symlink(&secret, dir.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(home.path(), dir.join("out")).unwrap();
        std::os::unix::fs::symlink(dir.join("inside.txt"), dir.join("alias.txt")).unwrap();

        assert_eq!(ws.read(agent, "link.txt").await.unwrap_err().kind, ErrorKind::Forbidden);
        assert_eq!(ws.read(agent, "alias.txt").await.unwrap_err().kind, ErrorKind::Forbidden, "no link at all");
        assert_eq!(ws.read(agent, "out/secret.txt").await.unwrap_err().kind, ErrorKind::Forbidden);
        assert_eq!(ws.write(agent, "out/new.txt", b"x".to_vec()).await.unwrap_err().kind, ErrorKind::InvalidArguments);
        assert_eq!(ws.write(agent, "link.txt", b"x".to_vec()).await.unwrap_err().kind, ErrorKind::InvalidArguments);
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "the daemon's secret", "untouched");
        assert!(!home.path().join("new.txt").exists());
        let listed: Vec<_> = ws.list(agent).await.unwrap().files.into_iter().map(|f| f.path).collect();
        assert_eq!(listed, ["inside.txt"], "links are not listed");
    }
}
