//! Agent workspaces: one folder per agent under `$KENNEL_HOME/workspaces/AGENT_ID/` (a child
//! agent has its own id, so its own folder). Every front and every family that takes a path
//! goes through [`Workspaces`], which turns an agent's path argument into a file inside that
//! agent's folder and nowhere else:
//!
//! - the path is relative, each part a plain name (no `..`, no `.`, no empty part, no control
//!   character, nothing that looks percent-encoded), and short ([`check_relative`]);
//! - the folder it lands in is resolved (symbolic links followed) and must still be inside the
//!   workspace;
//! - the file itself is opened with `O_NOFOLLOW` (a symbolic link there is refused, not
//!   followed), and the opened file's real path is checked once more, so a link swapped in
//!   between the check and the open cannot lead out either;
//! - reads and writes are bounded by `[workspace] max_file_bytes`.
//!
//! Files appear whole: a write goes to a synced temporary file in the target folder that is
//! renamed (replacing) or hard-linked (never replacing: [`Workspaces::create`],
//! [`Workspaces::rename`], [`Workspaces::restore`]) into place. Removed files go to the
//! agent's trash beside the workspaces (`workspaces/.trash/AGENT_ID/`), out of every path's
//! reach.

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
    /// The sub-folders seen, by path, when a listing is not recursive ([`Workspaces::find`]).
    pub folders: Vec<String>,
}

/// A file in the agent's trash, as `remove_file` put it there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Trashed {
    /// Where it was in the workspace.
    pub path: String,
    /// When it was removed, RFC 3339 UTC.
    pub trashed_at: String,
    pub bytes: u64,
}

/// The most directory entries one [`Workspaces::find`] looks at.
pub const MAX_VISITED: usize = 100_000;

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
        self.find(agent, None, true, MAX_LISTED, |_| true).await
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
        self.check_size(bytes.len())?;
        let dir = self.folder(agent)?;
        let parts = check_relative(path)?;
        blocking(move || {
            let (parent, name, rel) = parent_for_write(&dir, &parts)?;
            let target = parent.join(&name);
            if std::fs::symlink_metadata(&target).is_ok_and(|m| !m.is_file()) {
                return Err(Error::invalid(format!("`{rel}` exists and is not a regular file")));
            }
            let tmp = write_temp(&parent, &name, &bytes)?;
            std::fs::rename(&tmp, &target).inspect_err(|_| drop(std::fs::remove_file(&tmp)))?;
            let (_, entry) = open_inside(&dir, &target, &rel)?;
            Ok(entry)
        })
        .await
    }

    /// Makes a new file, never replacing one: `Conflict` if anything is at that path. Its
    /// folders are made as needed. Like [`Workspaces::write`], the file appears whole: the
    /// bytes are written to a temporary file in the target folder, synced, and then linked
    /// into place (a link, unlike a rename, fails when the name is taken).
    pub async fn create(&self, agent: Uuid, path: &str, bytes: Vec<u8>) -> Result<FileEntry> {
        self.check_size(bytes.len())?;
        let dir = self.folder(agent)?;
        let parts = check_relative(path)?;
        blocking(move || create_in(&dir, &parts, &bytes)).await
    }

    /// Moves the file at `from` to the new path `to` with `bytes` as its content: the new
    /// file is made as by [`Workspaces::create`] (so `to` only ever appears with the new
    /// content, and a file already at `to` is a `Conflict`), then `from` is removed. If `from`
    /// cannot be removed, the new file is removed again and the error returned.
    pub async fn rename(&self, agent: Uuid, from: &str, to: &str, bytes: Vec<u8>) -> Result<FileEntry> {
        self.check_size(bytes.len())?;
        let (dir, source, from_rel) = self.target(agent, from)?;
        let parts = check_relative(to)?;
        blocking(move || {
            open_inside(&dir, &source, &from_rel)?;
            let entry = create_in(&dir, &parts, &bytes)?;
            let source = inside(&dir, source.parent().unwrap_or(&dir), &from_rel)?.join(file_name(&source, &from_rel)?);
            if let Err(e) = std::fs::remove_file(&source) {
                let made = parts.iter().fold(dir.clone(), |p, part| p.join(part));
                let _ = std::fs::remove_file(made);
                return Err(e.into());
            }
            Ok(entry)
        })
        .await
    }

    /// Removes a regular file for good (links are refused, not followed; folders stay).
    pub async fn delete(&self, agent: Uuid, path: &str) -> Result<()> {
        let (dir, target, rel) = self.target(agent, path)?;
        blocking(move || {
            open_inside(&dir, &target, &rel)?;
            let parent = inside(&dir, target.parent().unwrap_or(&dir), &rel)?;
            std::fs::remove_file(parent.join(file_name(&target, &rel)?)).map_err(|e| not_found_or(e, &rel))
        })
        .await
    }

    /// Whether a regular file is at `path`: `false` when nothing is there, an error when the
    /// path is refused or something else (a link, a folder) is there.
    pub async fn exists(&self, agent: Uuid, path: &str) -> Result<bool> {
        let (dir, target, rel) = self.target(agent, path)?;
        blocking(move || match open_inside(&dir, &target, &rel) {
            Ok(_) => Ok(true),
            Err(e) if e.kind == crate::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        })
        .await
    }

    /// Reads at most `max` bytes from the start of a file; also says whether there was more.
    pub async fn read_head(&self, agent: Uuid, path: &str, max: u64) -> Result<(Vec<u8>, FileEntry, bool)> {
        let (dir, target, rel) = self.target(agent, path)?;
        blocking(move || {
            let (file, entry) = open_inside(&dir, &target, &rel)?;
            let mut bytes = Vec::with_capacity(usize::try_from(entry.bytes.min(max)).unwrap_or(0));
            file.take(max).read_to_end(&mut bytes)?;
            let more = entry.bytes > bytes.len() as u64;
            Ok((bytes, entry, more))
        })
        .await
    }

    /// Lists the files under the folder `under` (the whole workspace when `None`), only its
    /// own files and sub-folders unless `recursive`, keeping the files whose path `keep`
    /// accepts, at most `max` of them (and at most [`MAX_VISITED`] entries looked at).
    /// Links are neither followed nor listed.
    pub async fn find(
        &self,
        agent: Uuid,
        under: Option<&str>,
        recursive: bool,
        max: usize,
        keep: impl Fn(&str) -> bool + Send + 'static,
    ) -> Result<Listing> {
        let dir = self.folder(agent)?;
        let under = under.map(str::to_string);
        blocking(move || {
            let start = match &under {
                Some(rel) => {
                    let start = folder_inside(&dir, rel)?;
                    // Links are not followed here either, even one that stays inside.
                    if start != rel.split('/').fold(dir.clone(), |p, part| p.join(part)) {
                        return Err(Error::forbidden(format!(
                            "`{rel}` goes through a symbolic link: links are not followed"
                        )));
                    }
                    start
                }
                None => dir.clone(),
            };
            let mut walk = Walk { dir: &dir, recursive, max, keep: &keep, visited: 0, listing: Listing::default() };
            walk.folder(&start, 0)?;
            let mut listing = walk.listing;
            listing.files.sort_by(|a, b| a.path.cmp(&b.path));
            listing.folders.sort();
            Ok(listing)
        })
        .await
    }

    /// Moves a file into the agent's trash (see [`Trashed`]), from where
    /// [`Workspaces::restore`] brings it back.
    pub async fn trash(&self, agent: Uuid, path: &str) -> Result<Trashed> {
        let (dir, target, rel) = self.target(agent, path)?;
        let bin = self.trash_folder(agent);
        blocking(move || {
            let (_, entry) = open_inside(&dir, &target, &rel)?;
            std::fs::DirBuilder::new().recursive(true).mode_owner_only().create(&bin)?;
            let parent = inside(&dir, target.parent().unwrap_or(&dir), &rel)?;
            let id = Uuid::now_v7().simple().to_string();
            let trashed = Trashed { path: rel.clone(), trashed_at: now_rfc3339(), bytes: entry.bytes };
            let record = bin.join(format!("{id}.json"));
            std::fs::write(&record, serde_json::to_vec(&trashed).map_err(Error::internal)?)?;
            if let Err(e) = std::fs::rename(parent.join(file_name(&target, &rel)?), bin.join(&id)) {
                let _ = std::fs::remove_file(&record);
                return Err(not_found_or(e, &rel));
            }
            Ok(trashed)
        })
        .await
    }

    /// Brings back the most recently trashed file of `path`, byte for byte, making its
    /// folders as needed: `NotFound` if none is in the trash, `Conflict` if something is at
    /// the path now.
    pub async fn restore(&self, agent: Uuid, path: &str) -> Result<(FileEntry, Trashed)> {
        let dir = self.folder(agent)?;
        let parts = check_relative(path)?;
        let bin = self.trash_folder(agent);
        blocking(move || {
            let rel = parts.join("/");
            let mut latest: Option<(String, Trashed)> = None;
            let items = match std::fs::read_dir(&bin) {
                Ok(items) => items.collect::<std::io::Result<Vec<_>>>()?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                Err(e) => return Err(e.into()),
            };
            for item in items {
                let Some(id) = item.file_name().to_str().and_then(|n| n.strip_suffix(".json")).map(str::to_string)
                else {
                    continue;
                };
                let Ok(trashed) = serde_json::from_slice::<Trashed>(&std::fs::read(item.path())?) else { continue };
                if trashed.path == rel && latest.as_ref().is_none_or(|(best, _)| id > *best) {
                    latest = Some((id, trashed));
                }
            }
            let Some((id, trashed)) = latest else {
                return Err(Error::not_found(format!("`{rel}` is not in the trash: nothing removed at that path")));
            };
            let (parent, name, _) = parent_for_write(&dir, &parts)?;
            let target = parent.join(&name);
            std::fs::hard_link(bin.join(&id), &target).map_err(|e| taken_or(e, &rel))?;
            std::fs::remove_file(bin.join(&id))?;
            std::fs::remove_file(bin.join(format!("{id}.json")))?;
            let (_, entry) = open_inside(&dir, &target, &rel)?;
            Ok((entry, trashed))
        })
        .await
    }

    /// The agent's trash: `$KENNEL_HOME/workspaces/.trash/AGENT_ID/`, beside the workspaces
    /// rather than in one, so no path argument, listing or child process of the agent reaches
    /// it (and `.trash` is never an agent id).
    /// (Made by the first removal.)
    fn trash_folder(&self, agent: Uuid) -> PathBuf {
        self.root.join(".trash").join(agent.to_string())
    }

    fn check_size(&self, bytes: usize) -> Result<()> {
        if bytes as u64 > self.max_file_bytes {
            return Err(Error::invalid(format!(
                "the file is {bytes} bytes; a workspace takes files of at most {} bytes ([workspace] max_file_bytes)",
                self.max_file_bytes
            )));
        }
        Ok(())
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
            p if looks_encoded(p) => {
                return refuse(
                    "it looks percent-encoded (`%2e`, `%2f`…): paths are taken as written, so write the name plainly",
                );
            }
            _ => {}
        }
    }
    Ok(parts.into_iter().map(str::to_string).collect())
}

/// Whether a name holds a `%` and two hex digits. Nothing decodes paths, so `%2e%2e` would
/// only be a strange name, but from an agent it is nearly always an attempt to leave the
/// folder: refused with the reason rather than made.
fn looks_encoded(part: &str) -> bool {
    part.as_bytes().windows(3).any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit())
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

/// One bounded walk of a workspace folder for [`Workspaces::find`].
struct Walk<'a> {
    dir: &'a Path,
    recursive: bool,
    max: usize,
    keep: &'a dyn Fn(&str) -> bool,
    visited: usize,
    listing: Listing,
}

impl Walk<'_> {
    /// Lists regular files under `folder`, not following links, to [`MAX_PARTS`] deep. Names
    /// that are not UTF-8 cannot be named by a path argument and are left out; so are the
    /// half-written files of [`Workspaces::write`].
    fn folder(&mut self, folder: &Path, depth: usize) -> Result<()> {
        for item in std::fs::read_dir(folder)? {
            let item = item?;
            self.visited += 1;
            if self.visited > MAX_VISITED || self.listing.files.len() > self.max {
                self.listing.truncated = true;
                return Ok(());
            }
            let Ok(name) = item.file_name().into_string() else { continue };
            let kind = item.file_type()?;
            let rel =
                || item.path().strip_prefix(self.dir).map(|p| p.to_string_lossy().into_owned()).unwrap_or(name.clone());
            if kind.is_dir() {
                if !self.recursive {
                    self.listing.folders.push(rel());
                } else if depth + 1 < MAX_PARTS {
                    self.folder(&item.path(), depth + 1)?;
                }
            } else if kind.is_file() && !(name.starts_with('.') && name.ends_with(".part")) {
                let rel = rel();
                if !(self.keep)(&rel) {
                    continue;
                }
                if self.listing.files.len() == self.max {
                    self.listing.truncated = true;
                    return Ok(());
                }
                self.listing.files.push(entry(rel, &item.metadata()?));
            }
        }
        Ok(())
    }
}

/// The folder a new file at `parts` goes in (made as needed, and checked to be inside `dir`),
/// the file's name, and the path as written back.
fn parent_for_write(dir: &Path, parts: &[String]) -> Result<(PathBuf, String, String)> {
    let rel = parts.join("/");
    let (name, folders) = parts.split_last().expect("a checked path has a part");
    let mut parent = dir.to_path_buf();
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
    Ok((inside(dir, &parent, &rel)?, name.clone(), rel))
}

/// A new temporary file beside `name` in `parent` holding `bytes`, synced to disk.
fn write_temp(parent: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf> {
    let tmp = parent.join(format!(".{name}.{}.part", Uuid::now_v7()));
    let mut file = OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_NOFOLLOW).open(&tmp)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_data());
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.into());
    }
    Ok(tmp)
}

/// [`Workspaces::create`] once the path is checked.
fn create_in(dir: &Path, parts: &[String], bytes: &[u8]) -> Result<FileEntry> {
    let (parent, name, rel) = parent_for_write(dir, parts)?;
    let target = parent.join(&name);
    let tmp = write_temp(&parent, &name, bytes)?;
    let linked = std::fs::hard_link(&tmp, &target);
    let _ = std::fs::remove_file(&tmp);
    linked.map_err(|e| taken_or(e, &rel))?;
    let (_, entry) = open_inside(dir, &target, &rel)?;
    Ok(entry)
}

fn file_name<'a>(target: &'a Path, rel: &str) -> Result<&'a std::ffi::OsStr> {
    target.file_name().ok_or_else(|| Error::invalid(format!("`{rel}` names no file")))
}

fn taken_or(e: std::io::Error, rel: &str) -> Error {
    if e.kind() == std::io::ErrorKind::AlreadyExists {
        Error::conflict(format!("`{rel}` already exists in the workspace"))
    } else {
        e.into()
    }
}

fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn escapes(rel: &str) -> Error {
    Error::forbidden(format!("`{rel}` leads outside the workspace"))
}

fn not_found_or(e: std::io::Error, rel: &str) -> Error {
    if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) {
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
        for encoded in ["%2e%2e/x", "..%2fx", "a/%2F"] {
            assert_eq!(check_relative(encoded).unwrap_err().kind, ErrorKind::InvalidArguments, "{encoded}");
        }
        assert_eq!(check_relative("50% off.txt").unwrap(), ["50% off.txt"]);
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

    #[tokio::test]
    async fn create_never_replaces_and_rename_shows_the_new_path_only_with_new_content() {
        let (_home, ws) = workspaces();
        let agent = Uuid::now_v7();
        ws.create(agent, "a/new.txt", b"v1".to_vec()).await.unwrap();
        assert_eq!(ws.create(agent, "a/new.txt", b"v2".to_vec()).await.unwrap_err().kind, ErrorKind::Conflict);
        assert_eq!(ws.read(agent, "a/new.txt").await.unwrap().0, b"v1");
        ws.write(agent, "taken.txt", b"t".to_vec()).await.unwrap();
        let taken = ws.rename(agent, "a/new.txt", "taken.txt", b"v3".to_vec()).await.unwrap_err();
        assert_eq!(taken.kind, ErrorKind::Conflict);
        assert_eq!(ws.read(agent, "taken.txt").await.unwrap().0, b"t", "never replaced");
        ws.rename(agent, "a/new.txt", "b/c/moved.txt", b"v3".to_vec()).await.unwrap();
        assert_eq!(ws.read(agent, "b/c/moved.txt").await.unwrap().0, b"v3");
        assert!(!ws.exists(agent, "a/new.txt").await.unwrap());
        let listed: Vec<_> = ws.list(agent).await.unwrap().files.into_iter().map(|f| f.path).collect();
        assert_eq!(listed, ["b/c/moved.txt", "taken.txt"], "no temporary file is left");
        ws.delete(agent, "taken.txt").await.unwrap();
        assert_eq!(ws.delete(agent, "taken.txt").await.unwrap_err().kind, ErrorKind::NotFound);
    }

    #[tokio::test]
    async fn trashed_files_live_outside_the_workspace_and_come_back_byte_for_byte() {
        let (home, ws) = workspaces();
        let agent = Uuid::now_v7();
        ws.write(agent, "d/x.bin", vec![0, 1, 2, 255]).await.unwrap();
        ws.trash(agent, "d/x.bin").await.unwrap();
        assert!(!ws.exists(agent, "d/x.bin").await.unwrap());
        let bin = home.path().join("workspaces/.trash").join(agent.to_string());
        assert_eq!(std::fs::read_dir(&bin).unwrap().count(), 2, "the file and its record");
        ws.write(agent, "d/x.bin", b"newer".to_vec()).await.unwrap();
        assert_eq!(ws.restore(agent, "d/x.bin").await.unwrap_err().kind, ErrorKind::Conflict);
        ws.trash(agent, "d/x.bin").await.unwrap();
        let (entry, _) = ws.restore(agent, "d/x.bin").await.unwrap();
        assert_eq!(entry.bytes, 5, "the most recent removal comes back first");
        ws.trash(agent, "d/x.bin").await.unwrap();
        ws.restore(agent, "d/x.bin").await.unwrap();
        ws.trash(agent, "d/x.bin").await.unwrap();
        ws.restore(agent, "d/x.bin").await.unwrap();
        assert_eq!(ws.read(agent, "d/x.bin").await.unwrap().0, b"newer");
        assert_eq!(std::fs::read_dir(&bin).unwrap().count(), 2, "the older one is still there");
        assert_eq!(ws.restore(agent, "nothing.txt").await.unwrap_err().kind, ErrorKind::NotFound);
    }

    #[tokio::test]
    async fn find_is_bounded_and_lists_folders_when_not_recursive() {
        let (_home, ws) = workspaces();
        let agent = Uuid::now_v7();
        for path in ["top.md", "a/one.md", "a/two.txt", "a/b/three.md"] {
            ws.write(agent, path, b"x".to_vec()).await.unwrap();
        }
        let flat = ws.find(agent, None, false, 10, |_| true).await.unwrap();
        assert_eq!(flat.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["top.md"]);
        assert_eq!(flat.folders, ["a"]);
        let md = ws.find(agent, Some("a"), true, 10, |p| p.ends_with(".md")).await.unwrap();
        assert_eq!(md.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["a/b/three.md", "a/one.md"]);
        let one = ws.find(agent, None, true, 1, |_| true).await.unwrap();
        assert!(one.truncated && one.files.len() == 1);
        assert_eq!(ws.find(agent, Some("../"), true, 1, |_| true).await.unwrap_err().kind, ErrorKind::InvalidArguments);
        std::os::unix::fs::symlink(ws.folder(agent).unwrap().join("a"), ws.folder(agent).unwrap().join("alias"))
            .unwrap();
        assert_eq!(ws.find(agent, Some("alias"), true, 10, |_| true).await.unwrap_err().kind, ErrorKind::Forbidden);
    }
}
