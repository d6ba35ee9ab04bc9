//! Agent workspaces: one folder per agent under `$KENNEL_HOME/workspaces/AGENT_ID/` (a child
//! agent has its own id, so its own folder). Every front and every family that takes a path
//! goes through [`Workspaces`], which turns an agent's path argument into a file inside that
//! agent's folder and nowhere else:
//!
//! - the path is relative, each part a plain name (no `..`, no `.`, no empty part, no control
//!   character, nothing that looks percent-encoded), and short ([`check_relative`]);
//! - it is walked from the workspace's folder descriptor one name at a time, every folder
//!   opened without following a link and held, and the operation (open, rename, link,
//!   unlink) acts on the folder that was opened (`beneath.rs`): no path string is resolved
//!   twice, so another process swapping a folder for a link mid-call cannot lead out;
//! - a symbolic link anywhere is refused, not followed, and so is a regular file with more
//!   than one hard link (another name of it may be outside the workspace);
//! - reads and writes are bounded by `[workspace] max_file_bytes`.
//!
//! Files appear whole: a write goes to a synced temporary file in the target folder that is
//! renamed (replacing) or hard-linked (never replacing: [`Workspaces::create`],
//! [`Workspaces::rename`], [`Workspaces::restore`]) into place. Removed files go to the
//! agent's trash beside the workspaces (`workspaces/.trash/AGENT_ID/`), out of every path's
//! reach.
//!
//! # Design notes
//!
//! ## Layout
//!
//! Agent workspaces: `Workspaces` (`$KENNEL_HOME/workspaces/AGENT_ID/`, made on first use, 0700):
//! `check_relative` (the path rules), `beneath.rs` (folder descriptors: every operation relative
//! to a folder opened without following links), `lines.rs` (a part of a text file line by line),
//! `list`, `find` (bounded walk), `read` (large reads share `max_reading_mib`), `read_lines`,
//! `read_head`, `exists`, `write` (temp file + rename), `create` (temp file + link: never
//! replaces), `rename` (new content at the new path, then the old removed), `delete`,
//! `trash`/`restore` (the trash beside the workspaces), `open` (for streaming); `Inert` (which
//! types the dashboard may show inline). The one place a path argument becomes a file: every
//! family that takes a path calls it.
//!
//! ## Agent workspaces
//!
//! Every agent has a folder, `$KENNEL_HOME/workspaces/AGENT_ID/` (a child agent has its own id,
//! so its own folder; a removed agent's folder stays with its history). `Workspaces` is the only
//! way from a path argument to a file, for every front and every family that takes a path:
//!
//! - **The path**: relative, `/`-separated, 1–1,024 bytes, at most 16 parts of at most 255
//!   bytes, no empty part, no `.` or `..`, no control character, no part with a `%` followed by two
//!   hex digits (nothing decodes paths, so `%2e%2e` would only be a strange name, but from an
//!   agent it is nearly always an attempt to leave, so it is refused with the reason; an upload
//!   named `a%20b.txt` is refused too), not starting with `/` or `~` (`check_relative`, pure;
//!   skill support files use it too). Refused paths are `InvalidArguments` naming the rule.
//! - **Resolved beneath, never twice** (`beneath.rs`, issue 41): the workspace folder is opened
//!   once (`O_DIRECTORY | O_NOFOLLOW`) and the path walked from that descriptor one name at a
//!   time, each folder opened with `O_NOFOLLOW` and held; the last step acts on the folder that
//!   was opened (`openat`, `renameat`, `linkat`, `unlinkat`, `mkdirat`, `fstatat` without
//!   following). A path string under an agent's control is never handed to the kernel whole, so
//!   another process in the workspace swapping a folder for a link mid-call changes nothing.
//!   **Decision:** a component walk rather than `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`:
//!   the same guarantee on every kernel, missing folders made on the way (writes), and each
//!   refusal named (a link anywhere is `Forbidden`, a file where a folder should be
//!   `InvalidArguments`). A regular file with more than one hard link is refused for reading,
//!   opening and trashing (another name of it may be outside); replacing or deleting it only
//!   touches the workspace's name. `trash` and `rename` check after the move that what moved is
//!   the file that was opened (device and inode), and put anything swapped in back. The trash,
//!   uploads, canvas and media outputs all go through this layer. Tested by a race of a thread
//!   swapping a folder for a link to the home against 3,000 write/trash/read rounds (the old
//!   code wrote into the home at once) and, end to end, by a sandboxed process doing the swap
//!   during 1,200 `edit_file` calls.
//! - **Sizes**: `[workspace] max_file_bytes` (default 64 MiB) bounds uploads, writes and whole
//!   reads; listings stop at 1,000 files and say so.
//!
//! ## Quota
//!
//! - **Workspaces** (`workspace/`): `read_file` reads line by line (`workspace/lines.rs`),
//!   holding the lines it answers with (each kept to 4 × 2,000 bytes), never the file; a whole
//!   read (a patch, an image) of a file over 1 MiB takes one permit per MiB of `[workspace]
//!   max_reading_mib` (256) while it is in memory, so parallel reads wait instead of taking the
//!   daemon's memory. `max_agent_bytes` (1 GiB) bounds a workspace and its trash as the tools
//!   write (counted by walking them at each write; two writes at once may overshoot by a file).
//!   **Decision:** a process writes into its workspace directly and is bounded by the disk, not
//!   by this: a kernel-enforced bound there needs filesystem quotas this machine lacks.

mod beneath;
pub(crate) mod config;
pub mod lines;

pub use config::WorkspaceConfig;

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use beneath::{Dir, Kind, Stat, stat_of};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::family::{Family, Home};

/// Workspaces have no tools of their own: `files`, `process`, `media` and others use them.
pub const FAMILY: Family = Family {
    name: "workspace",
    open: |s| {
        let workspaces = Workspaces::new(s.get::<Home>().path().join("workspaces"), s.config().workspace.clone());
        s.provide(workspaces);
        Ok(())
    },
    register: |_, _| {},
};

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
    limits: WorkspaceConfig,
    /// MiB of whole-file reads the daemon holds at once (`[workspace] max_reading_mib`): a
    /// read of a large file waits for its share, so parallel reads cannot take the daemon's
    /// memory with them.
    reading: std::sync::Arc<tokio::sync::Semaphore>,
}

/// The bytes of the regular files under `dir`, links not followed (what a workspace holds).
/// An entry that changes while it is counted counts as what was seen.
fn bytes_under(dir: &Dir, depth: usize) -> u64 {
    let Ok(entries) = dir.entries() else { return 0 };
    entries
        .iter()
        .map(|(name, kind)| match kind {
            Kind::File => dir.stat(name).ok().flatten().map_or(0, |s| s.bytes),
            Kind::Dir if depth < MAX_PARTS => dir.open_dir(name).map_or(0, |inner| bytes_under(&inner, depth + 1)),
            _ => 0,
        })
        .sum()
}

/// When a UUIDv7 was made (its first 48 bits are Unix milliseconds).
fn made_at(id: &Uuid) -> Option<chrono::DateTime<chrono::Utc>> {
    let (secs, nanos) = id.get_timestamp()?.to_unix();
    chrono::DateTime::from_timestamp(secs as i64, nanos)
}

/// Files smaller than this are read without counting against `max_reading_mib`.
const LARGE_READ: u64 = 1 << 20;

/// Where an agent's trash is, opened or made inside a workspace call.
struct Trash {
    root: PathBuf,
    agent: String,
}

impl Trash {
    fn make(&self) -> Result<Dir> {
        let root = Dir::open_path(&self.root)?;
        root.make_dir(".trash")?;
        let trash = root.open_dir(".trash")?;
        trash.make_dir(&self.agent)?;
        Ok(trash.open_dir(&self.agent)?)
    }

    /// The trash folder, if anything was ever removed.
    fn open(&self) -> Result<Option<Dir>> {
        let opened =
            Dir::open_path(&self.root).and_then(|r| r.open_dir(".trash")).and_then(|t| t.open_dir(&self.agent));
        match opened {
            Ok(bin) => Ok(Some(bin)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// A checked path argument: its folders and its file's name, and the path as written back.
struct Target {
    folders: Vec<String>,
    name: String,
    rel: String,
}

impl Target {
    fn parse(path: &str) -> Result<Target> {
        let mut parts = check_relative(path)?;
        let rel = parts.join("/");
        let name = parts.pop().expect("a checked path has a part");
        Ok(Target { folders: parts, name, rel })
    }
}

impl Workspaces {
    pub(crate) fn new(root: PathBuf, limits: WorkspaceConfig) -> Workspaces {
        let reading = std::sync::Arc::new(tokio::sync::Semaphore::new(limits.max_reading_mib as usize));
        Workspaces { root, limits, reading }
    }

    /// The largest file a workspace takes or hands out.
    pub fn max_file_bytes(&self) -> u64 {
        self.limits.max_file_bytes
    }

    /// The root of every workspace, made (owner-only) if it is not there yet, and opened.
    fn root_dir(&self) -> Result<Dir> {
        std::fs::DirBuilder::new().recursive(true).mode_owner_only().create(&self.root)?;
        Ok(Dir::open_path(&self.root)?)
    }

    /// The agent's workspace folder, made (owner-only) if it is not there yet, and opened.
    fn folder(&self, agent: Uuid) -> Result<Dir> {
        let root = self.root_dir()?;
        let id = agent.to_string();
        root.make_dir(&id)?;
        Ok(root.open_dir(&id)?)
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

    /// Reads a whole file (at most `[workspace] max_file_bytes`). A large file waits for its
    /// share of `[workspace] max_reading_mib` before it is read into memory.
    pub async fn read(&self, agent: Uuid, path: &str) -> Result<(Vec<u8>, FileEntry)> {
        let dir = self.folder(agent)?;
        let target = Target::parse(path)?;
        let max = self.limits.max_file_bytes;
        let (mut file, entry) = blocking(move || {
            let (file, entry) = open_file(&dir, &target)?;
            if entry.bytes > max {
                return Err(Error::invalid(format!(
                    "`{}` is {} bytes; files of at most {max} bytes ([workspace] max_file_bytes) are read",
                    target.rel, entry.bytes
                )));
            }
            Ok((file, entry))
        })
        .await?;
        let _share = self.reading_share(entry.bytes).await?;
        blocking(move || {
            // What was opened, however it grew since: never more than max_file_bytes.
            let mut bytes = Vec::with_capacity(usize::try_from(entry.bytes).unwrap_or(0));
            (&mut file).take(max + 1).read_to_end(&mut bytes)?;
            if bytes.len() as u64 > max {
                return Err(Error::invalid(format!(
                    "`{}` grew past {max} bytes ([workspace] max_file_bytes) while it was read",
                    entry.path
                )));
            }
            Ok((bytes, entry))
        })
        .await
    }

    /// The permits a whole read of `bytes` holds while it is in memory: one per MiB of a large
    /// file (all of them for one larger than the whole budget), none for a small one.
    async fn reading_share(&self, bytes: u64) -> Result<Option<tokio::sync::OwnedSemaphorePermit>> {
        if bytes < LARGE_READ {
            return Ok(None);
        }
        let mib = bytes.div_ceil(1 << 20).min(self.limits.max_reading_mib) as u32;
        let permit = self.reading.clone().acquire_many_owned(mib).await.map_err(Error::internal)?;
        Ok(Some(permit))
    }

    /// Lines `first..first + count` (from 1) of a text file, each kept to `max_line_bytes`,
    /// and how many lines it has: read line by line, never whole (see [`lines`]).
    pub async fn read_lines(
        &self,
        agent: Uuid,
        path: &str,
        first: usize,
        count: usize,
        max_line_bytes: usize,
    ) -> Result<(lines::Lines, FileEntry)> {
        let dir = self.folder(agent)?;
        let target = Target::parse(path)?;
        blocking(move || {
            let (file, entry) = open_file(&dir, &target)?;
            match lines::read(file, first, count, max_line_bytes) {
                Ok(read) => Ok((read, entry)),
                Err(lines::NotLines::Binary) => Err(Error::invalid(format!(
                    "`{}` is not a text file (it has NUL bytes or is not UTF-8); these tools read and edit text only",
                    entry.path
                ))
                .with_field("path")),
                Err(lines::NotLines::Io(e)) => Err(e.into()),
            }
        })
        .await
    }

    /// Writes a whole file, replacing one at that path; its folders are made as needed. The
    /// bytes go to a new file that is renamed into place, so a reader never sees half of it.
    pub async fn write(&self, agent: Uuid, path: &str, bytes: Vec<u8>) -> Result<FileEntry> {
        self.check_size(bytes.len())?;
        let dir = self.folder(agent)?;
        let target = Target::parse(path)?;
        self.ensure_room(agent, Some(path), bytes.len()).await?;
        blocking(move || {
            let parent = walk(&dir, &target, Walking::MakeFolders)?;
            if parent.stat(&target.name)?.is_some_and(|s| s.kind != Kind::File) {
                return Err(Error::invalid(format!("`{}` exists and is not a regular file", target.rel)));
            }
            let (tmp, file) = write_temp(&parent, &target.name, &bytes)?;
            parent.rename(&tmp, &parent, &target.name).inspect_err(|_| drop(parent.unlink(&tmp)))?;
            Ok(entry(target.rel, &stat_of(&file)?))
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
        let target = Target::parse(path)?;
        self.ensure_room(agent, None, bytes.len()).await?;
        blocking(move || create_in(&dir, &target, &bytes).map(|(entry, _)| entry)).await
    }

    /// Moves the file at `from` to the new path `to` with `bytes` as its content: the new
    /// file is made as by [`Workspaces::create`] (so `to` only ever appears with the new
    /// content, and a file already at `to` is a `Conflict`), then `from` is removed. If `from`
    /// cannot be removed, or is no longer the file that was read, the new file is removed
    /// again and the error returned.
    pub async fn rename(&self, agent: Uuid, from: &str, to: &str, bytes: Vec<u8>) -> Result<FileEntry> {
        self.check_size(bytes.len())?;
        let dir = self.folder(agent)?;
        let (source, target) = (Target::parse(from)?, Target::parse(to)?);
        self.ensure_room(agent, Some(from), bytes.len()).await?;
        blocking(move || {
            let source_dir = walk(&dir, &source, Walking::Existing)?;
            let (file, _) = open_in(&source_dir, &source)?;
            let checked = stat_of(&file)?.identity;
            let (entry, made_in) = create_in(&dir, &target, &bytes)?;
            let removed = match source_dir.stat(&source.name)? {
                Some(now) if now.identity == checked => source_dir.unlink(&source.name).map_err(Error::from),
                _ => Err(changed_meanwhile(&source.rel)),
            };
            if let Err(e) = removed {
                let _ = made_in.unlink(&target.name);
                return Err(e);
            }
            Ok(entry)
        })
        .await
    }

    /// Removes a file for good (a link is refused, not followed; folders stay). A file with
    /// several hard links loses only its name here.
    pub async fn delete(&self, agent: Uuid, path: &str) -> Result<()> {
        let dir = self.folder(agent)?;
        let target = Target::parse(path)?;
        blocking(move || {
            let parent = walk(&dir, &target, Walking::Existing)?;
            match parent.stat(&target.name)? {
                None => Err(no_file(&target.rel)),
                Some(s) if s.kind == Kind::Link => Err(is_link(&target.rel)),
                Some(s) if s.kind != Kind::File => {
                    Err(Error::invalid(format!("`{}` is not a regular file", target.rel)))
                }
                Some(_) => parent.unlink(&target.name).map_err(|e| not_found_or(e, &target.rel)),
            }
        })
        .await
    }

    /// Whether a regular file is at `path`: `false` when nothing is there, an error when the
    /// path is refused or something else (a link, a folder) is there.
    pub async fn exists(&self, agent: Uuid, path: &str) -> Result<bool> {
        let dir = self.folder(agent)?;
        let target = Target::parse(path)?;
        blocking(move || match open_file(&dir, &target) {
            Ok(_) => Ok(true),
            Err(e) if e.kind == crate::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        })
        .await
    }

    /// Reads at most `max` bytes from the start of a file; also says whether there was more.
    pub async fn read_head(&self, agent: Uuid, path: &str, max: u64) -> Result<(Vec<u8>, FileEntry, bool)> {
        let dir = self.folder(agent)?;
        let target = Target::parse(path)?;
        blocking(move || {
            let (file, entry) = open_file(&dir, &target)?;
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
        let under = under.map(check_relative).transpose()?;
        blocking(move || {
            let (start, prefix) = match &under {
                Some(parts) => (walk_folders(&dir, parts, &parts.join("/"), Walking::Existing)?, parts.join("/")),
                None => (dir, String::new()),
            };
            let mut walk = Walk { recursive, max, keep: &keep, visited: 0, listing: Listing::default() };
            walk.folder(&start, &prefix, 0)?;
            let mut listing = walk.listing;
            listing.files.sort_by(|a, b| a.path.cmp(&b.path));
            listing.folders.sort();
            Ok(listing)
        })
        .await
    }

    /// Moves a file into the agent's trash (see [`Trashed`]), from where
    /// [`Workspaces::restore`] brings it back. The file moved is checked to be the one that
    /// was opened; anything else swapped in meanwhile goes back where it was.
    pub async fn trash(&self, agent: Uuid, path: &str) -> Result<Trashed> {
        let dir = self.folder(agent)?;
        let target = Target::parse(path)?;
        let trash = self.trash_folder(agent);
        blocking(move || {
            let parent = walk(&dir, &target, Walking::Existing)?;
            let (file, entry) = open_in(&parent, &target)?;
            let bin = trash.make()?;
            let checked = stat_of(&file)?.identity;
            let id = Uuid::now_v7().simple().to_string();
            let trashed = Trashed { path: target.rel.clone(), trashed_at: now_rfc3339(), bytes: entry.bytes };
            let record = format!("{id}.json");
            let (tmp, _) = write_temp(&bin, &record, &serde_json::to_vec(&trashed).map_err(Error::internal)?)?;
            bin.rename(&tmp, &bin, &record)?;
            if let Err(e) = parent.rename(&target.name, &bin, &id) {
                let _ = bin.unlink(&record);
                return Err(not_found_or(e, &target.rel));
            }
            if bin.stat(&id)?.is_none_or(|moved| moved.identity != checked) {
                let _ = bin.rename(&id, &parent, &target.name);
                let _ = bin.unlink(&record);
                return Err(changed_meanwhile(&target.rel));
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
        let target = Target::parse(path)?;
        let trash = self.trash_folder(agent);
        blocking(move || {
            let Some(bin) = trash.open()? else {
                return Err(Error::not_found(format!(
                    "`{}` is not in the trash: nothing was ever removed",
                    target.rel
                )));
            };
            let mut latest: Option<(String, Trashed)> = None;
            for (name, kind) in bin.entries()? {
                let Some(id) = name.strip_suffix(".json").filter(|_| kind == Kind::File) else { continue };
                let mut record = Vec::new();
                bin.open_read(&name)?.take(64 * 1024).read_to_end(&mut record)?;
                let Ok(trashed) = serde_json::from_slice::<Trashed>(&record) else { continue };
                if trashed.path == target.rel && latest.as_ref().is_none_or(|(best, _)| id > best.as_str()) {
                    latest = Some((id.to_string(), trashed));
                }
            }
            let Some((id, trashed)) = latest else {
                return Err(Error::not_found(format!(
                    "`{}` is not in the trash: nothing removed at that path",
                    target.rel
                )));
            };
            let file = bin.open_read(&id)?;
            let parent = walk(&dir, &target, Walking::MakeFolders)?;
            bin.link(&id, &parent, &target.name).map_err(|e| taken_or(e, &target.rel))?;
            bin.unlink(&id)?;
            bin.unlink(&format!("{id}.json"))?;
            Ok((entry(target.rel, &stat_of(&file)?), trashed))
        })
        .await
    }

    /// Removes what every agent put in its trash before `cutoff` (the file and its record;
    /// each is named by a UUIDv7, whose time says when). Returns how many files went.
    pub(crate) async fn sweep_trash(&self, cutoff: chrono::DateTime<chrono::Utc>) -> Result<u64> {
        let root = self.root.clone();
        blocking(move || {
            let Ok(trash) = Dir::open_path(&root).and_then(|r| r.open_dir(".trash")) else { return Ok(0) };
            let mut removed = 0;
            for (agent, kind) in trash.entries()? {
                if kind != Kind::Dir || Uuid::parse_str(&agent).is_err() {
                    continue;
                }
                let bin = trash.open_dir(&agent)?;
                for (name, _) in bin.entries()? {
                    let id = name.strip_suffix(".json").unwrap_or(&name);
                    let Some(at) = Uuid::parse_str(id).ok().and_then(|u| made_at(&u)) else { continue };
                    if at < cutoff {
                        bin.unlink(&name)?;
                        removed += u64::from(!name.ends_with(".json"));
                    }
                }
            }
            Ok(removed)
        })
        .await
    }

    /// The agent's trash: `$KENNEL_HOME/workspaces/.trash/AGENT_ID/`, beside the workspaces
    /// rather than in one, so no path argument, listing or child process of the agent reaches
    /// it (and `.trash` is never an agent id). Made by the first removal.
    fn trash_folder(&self, agent: Uuid) -> Trash {
        Trash { root: self.root.clone(), agent: agent.to_string() }
    }

    /// Refuses a write of `adding` bytes (replacing the file at `replacing`, if any) that would
    /// take the agent's workspace and trash past `[workspace] max_agent_bytes`. Two writes at
    /// once may both pass: the limit is kept to within a file.
    async fn ensure_room(&self, agent: Uuid, replacing: Option<&str>, adding: usize) -> Result<()> {
        let max = self.limits.max_agent_bytes;
        let dir = self.folder(agent)?;
        let trash = self.trash_folder(agent);
        let replacing = replacing.map(Target::parse).transpose()?;
        let held = blocking(move || {
            let replaced = match &replacing {
                Some(target) => match walk(&dir, target, Walking::Existing) {
                    Ok(parent) => parent.stat(&target.name)?.filter(|s| s.kind == Kind::File).map_or(0, |s| s.bytes),
                    Err(_) => 0,
                },
                None => 0,
            };
            let in_trash = trash.open()?.map_or(0, |bin| bytes_under(&bin, 0));
            Ok((bytes_under(&dir, 0) + in_trash).saturating_sub(replaced))
        })
        .await?;
        if held + adding as u64 > max {
            return Err(Error::exhausted(format!(
                "this workspace (with its trash) holds {held} bytes; {adding} more would pass [workspace] max_agent_bytes = {max}: remove files first (remove_file, then empty the trash), or ask the operator for more room"
            )));
        }
        Ok(())
    }

    fn check_size(&self, bytes: usize) -> Result<()> {
        if bytes as u64 > self.limits.max_file_bytes {
            return Err(Error::invalid(format!(
                "the file is {bytes} bytes; a workspace takes files of at most {} bytes ([workspace] max_file_bytes)",
                self.limits.max_file_bytes
            )));
        }
        Ok(())
    }

    /// Opens a file to be streamed (a download), with what lists show of it.
    pub async fn open(&self, agent: Uuid, path: &str) -> Result<(File, FileEntry)> {
        let dir = self.folder(agent)?;
        let target = Target::parse(path)?;
        blocking(move || open_file(&dir, &target)).await
    }

    /// The agent's workspace folder (made if it is not there yet), for a child process to
    /// start in.
    pub(crate) fn dir(&self, agent: Uuid) -> Result<PathBuf> {
        self.folder(agent)?;
        Ok(self.root.join(agent.to_string()))
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

/// Checks that the folder `rel` exists inside the workspace folder `dir`, reached without
/// a symbolic link; its path for a child process to start in.
pub(crate) fn folder_inside(dir: &Path, rel: &str) -> Result<PathBuf> {
    let parts = check_relative(rel)?;
    walk_folders(&Dir::open_path(dir)?, &parts, rel, Walking::Existing)?;
    Ok(parts.iter().fold(dir.to_path_buf(), |p, part| p.join(part)))
}

/// Whether a walk makes the folders it does not find.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Walking {
    Existing,
    MakeFolders,
}

/// The folder `target`'s file is in, walked from `dir`.
fn walk(dir: &Dir, target: &Target, walking: Walking) -> Result<Dir> {
    walk_folders(dir, &target.folders, &target.rel, walking)
}

/// Opens the folders `parts` one below the other from `dir`, never following a link; makes
/// missing ones with `MakeFolders`.
fn walk_folders(dir: &Dir, parts: &[String], rel: &str, walking: Walking) -> Result<Dir> {
    let mut at: Option<Dir> = None;
    for part in parts {
        let parent = at.as_ref().unwrap_or(dir);
        let opened = match parent.open_dir(part) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && walking == Walking::MakeFolders => {
                parent.make_dir(part)?;
                parent.open_dir(part)
            }
            other => other,
        };
        at = Some(opened.map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP | libc::ENOTDIR) => match parent.stat(part) {
                Ok(Some(s)) if s.kind == Kind::Link => {
                    Error::forbidden(format!("`{rel}` goes through a symbolic link (`{part}`): links are not followed"))
                }
                _ => Error::invalid(format!("`{rel}`: `{part}` is not a folder")),
            },
            _ => not_found_or(e, rel),
        })?);
    }
    match at {
        Some(folder) => Ok(folder),
        None => Ok(dir.try_clone()?),
    }
}

/// Opens `target` for reading if it is a regular file with one link, walking from `dir`.
fn open_file(dir: &Dir, target: &Target) -> Result<(File, FileEntry)> {
    open_in(&walk(dir, target, Walking::Existing)?, target)
}

/// Opens `target`'s file in its folder `parent` for reading, if it is a regular file with one
/// link: a symbolic link is refused (not followed), and so is a hard link, which could be a
/// name for a file outside the workspace.
fn open_in(parent: &Dir, target: &Target) -> Result<(File, FileEntry)> {
    let file = parent.open_read(&target.name).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => is_link(&target.rel),
        _ => not_found_or(e, &target.rel),
    })?;
    let stat = stat_of(&file)?;
    if stat.kind != Kind::File {
        return Err(Error::invalid(format!("`{}` is not a regular file", target.rel)));
    }
    if stat.links > 1 {
        return Err(Error::forbidden(format!(
            "`{}` has {} hard links: a file with other names (which may be outside the workspace) is not opened",
            target.rel, stat.links
        )));
    }
    Ok((file, entry(target.rel.clone(), &stat)))
}

fn entry(path: String, stat: &Stat) -> FileEntry {
    let modified = chrono::DateTime::<chrono::Utc>::from_timestamp(stat.modified_secs, 0).unwrap_or_default();
    FileEntry { path, bytes: stat.bytes, modified: modified.to_rfc3339_opts(chrono::SecondsFormat::Secs, true) }
}

/// One bounded walk of a workspace folder for [`Workspaces::find`].
struct Walk<'a> {
    recursive: bool,
    max: usize,
    keep: &'a dyn Fn(&str) -> bool,
    visited: usize,
    listing: Listing,
}

impl Walk<'_> {
    /// Lists regular files under `folder` (at `prefix` in the workspace), not following
    /// links, to [`MAX_PARTS`] deep. Names that are not UTF-8 cannot be named by a path
    /// argument and are left out; so are the half-written files of [`Workspaces::write`].
    fn folder(&mut self, folder: &Dir, prefix: &str, depth: usize) -> Result<()> {
        for (name, kind) in folder.entries()? {
            self.visited += 1;
            if self.visited > MAX_VISITED || self.listing.files.len() > self.max {
                self.listing.truncated = true;
                return Ok(());
            }
            let rel = if prefix.is_empty() { name.clone() } else { format!("{prefix}/{name}") };
            match kind {
                Kind::Dir if !self.recursive => self.listing.folders.push(rel),
                Kind::Dir if depth + 1 < MAX_PARTS => {
                    // A folder swapped for a link since it was listed is skipped, not followed.
                    if let Ok(inner) = folder.open_dir(&name) {
                        self.folder(&inner, &rel, depth + 1)?;
                    }
                }
                Kind::File if !(name.starts_with('.') && name.ends_with(".part")) => {
                    if !(self.keep)(&rel) {
                        continue;
                    }
                    if self.listing.files.len() == self.max {
                        self.listing.truncated = true;
                        return Ok(());
                    }
                    if let Some(stat) = folder.stat(&name)? {
                        self.listing.files.push(entry(rel, &stat));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// A new temporary file beside `name` in `parent` holding `bytes`, synced to disk: its name
/// and the open file.
fn write_temp(parent: &Dir, name: &str, bytes: &[u8]) -> Result<(String, File)> {
    // The name stays within a file system's 255 bytes however long `name` is.
    let short: String = name.chars().take(100).collect();
    let tmp = format!(".{short}.{}.part", Uuid::now_v7().simple());
    let mut file = parent.create_new(&tmp)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_data());
    if let Err(e) = written {
        let _ = parent.unlink(&tmp);
        return Err(e.into());
    }
    Ok((tmp, file))
}

/// [`Workspaces::create`] once the path is checked: the entry, and the folder it was made in.
fn create_in(dir: &Dir, target: &Target, bytes: &[u8]) -> Result<(FileEntry, Dir)> {
    let parent = walk(dir, target, Walking::MakeFolders)?;
    let (tmp, file) = write_temp(&parent, &target.name, bytes)?;
    let linked = parent.link(&tmp, &parent, &target.name);
    let _ = parent.unlink(&tmp);
    linked.map_err(|e| taken_or(e, &target.rel))?;
    Ok((entry(target.rel.clone(), &stat_of(&file)?), parent))
}

fn taken_or(e: std::io::Error, rel: &str) -> Error {
    if e.kind() == std::io::ErrorKind::AlreadyExists {
        Error::conflict(format!("`{rel}` already exists in the workspace"))
    } else {
        not_found_or(e, rel)
    }
}

fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn is_link(rel: &str) -> Error {
    Error::forbidden(format!("`{rel}` is a symbolic link: links are not followed"))
}

fn changed_meanwhile(rel: &str) -> Error {
    Error::conflict(format!(
        "`{rel}` was replaced by something else while this call ran (another process in the workspace?): nothing was moved"
    ))
}

fn no_file(rel: &str) -> Error {
    Error::not_found(format!("no file `{rel}` in the workspace"))
}

fn not_found_or(e: std::io::Error, rel: &str) -> Error {
    if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) {
        no_file(rel)
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
        let ws = Workspaces::new(
            home.path().join("workspaces"),
            WorkspaceConfig { max_file_bytes: 1024, ..Default::default() },
        );
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
        let dir = ws.dir(agent).unwrap();
        std::os::unix::fs::symlink(&secret, dir.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(home.path(), dir.join("out")).unwrap();
        std::os::unix::fs::symlink(dir.join("inside.txt"), dir.join("alias.txt")).unwrap();

        assert_eq!(ws.read(agent, "link.txt").await.unwrap_err().kind, ErrorKind::Forbidden);
        assert_eq!(ws.read(agent, "alias.txt").await.unwrap_err().kind, ErrorKind::Forbidden, "no link at all");
        assert_eq!(ws.read(agent, "out/secret.txt").await.unwrap_err().kind, ErrorKind::Forbidden);
        assert_eq!(ws.write(agent, "out/new.txt", b"x".to_vec()).await.unwrap_err().kind, ErrorKind::Forbidden);
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

    /// The sweep takes what was trashed before its cutoff (file and record), and only that.
    #[tokio::test]
    async fn the_trash_sweep_takes_only_what_was_removed_before_the_cutoff() {
        let (home, ws) = workspaces();
        let agent = Uuid::now_v7();
        ws.write(agent, "old.txt", b"old".to_vec()).await.unwrap();
        ws.trash(agent, "old.txt").await.unwrap();
        let between = chrono::Utc::now();
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        ws.write(agent, "new.txt", b"new".to_vec()).await.unwrap();
        ws.trash(agent, "new.txt").await.unwrap();
        let bin = home.path().join("workspaces/.trash").join(agent.to_string());
        std::fs::write(bin.join("not-a-trash-name"), "left alone").unwrap();

        assert_eq!(ws.sweep_trash(between).await.unwrap(), 1);
        assert_eq!(ws.restore(agent, "old.txt").await.unwrap_err().kind, ErrorKind::NotFound, "gone for good");
        ws.restore(agent, "new.txt").await.expect("the later removal is still in the trash");
        assert!(bin.join("not-a-trash-name").exists(), "what the trash does not name is not touched");
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
        std::os::unix::fs::symlink(ws.dir(agent).unwrap().join("a"), ws.dir(agent).unwrap().join("alias")).unwrap();
        assert_eq!(ws.find(agent, Some("alias"), true, 10, |_| true).await.unwrap_err().kind, ErrorKind::Forbidden);
    }

    #[tokio::test]
    async fn a_hard_link_to_a_file_outside_is_not_opened() {
        let (home, ws) = workspaces();
        let agent = Uuid::now_v7();
        let token = home.path().join("cli.token");
        std::fs::write(&token, "the operator's token").unwrap();
        std::fs::hard_link(&token, ws.dir(agent).unwrap().join("t.txt")).unwrap();
        for refused in [ws.read(agent, "t.txt").await.map(drop), ws.open(agent, "t.txt").await.map(drop)] {
            let e = refused.unwrap_err();
            assert!(e.kind == ErrorKind::Forbidden && e.message.contains("hard links"), "{e}");
        }
        assert_eq!(ws.trash(agent, "t.txt").await.unwrap_err().kind, ErrorKind::Forbidden);
        ws.write(agent, "t.txt", b"mine".to_vec()).await.unwrap();
        assert_eq!(std::fs::read_to_string(&token).unwrap(), "the operator's token", "replaced, not written through");
        assert_eq!(ws.read(agent, "t.txt").await.unwrap().0, b"mine");
    }

    /// The attack of issue 41: a second process in the workspace swaps the folder `d` for a
    /// link to the home while the agent's calls run. Before the descriptor walk, 9 writes in
    /// 1,200 landed in the home and a remove moved a home file into the trash; here every
    /// call either acts inside the workspace or is refused, over more tries than that.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_folder_swapped_for_a_link_mid_call_never_leads_out() {
        let (home, ws) = workspaces();
        let agent = Uuid::now_v7();
        let outside = home.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("decoy.conf"), "decoy").unwrap();
        std::fs::write(outside.join("x"), "home file").unwrap();
        let dir = ws.dir(agent).unwrap();
        std::fs::create_dir(dir.join("d")).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (dir, outside, stop) = (dir.clone(), outside.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut swaps = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::fs::rename(dir.join("d"), dir.join("d.real"));
                    let _ = std::os::unix::fs::symlink(&outside, dir.join("d"));
                    let _ = std::fs::remove_file(dir.join("d"));
                    let _ = std::fs::rename(dir.join("d.real"), dir.join("d"));
                    swaps += 1;
                }
                swaps
            })
        };
        let tries = 3000;
        for i in 0..tries {
            let name = if i % 2 == 0 { "d/x" } else { "d/decoy.conf" };
            let _ = ws.write(agent, name, b"agent wrote this".to_vec()).await;
            let _ = ws.trash(agent, name).await;
            let _ = ws.read(agent, name).await;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        assert!(swaps > 100, "the swapper ran ({swaps} swaps)");
        let mut names: Vec<_> =
            std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        assert_eq!(names, ["decoy.conf", "x"], "nothing made or removed outside");
        assert_eq!(std::fs::read_to_string(outside.join("decoy.conf")).unwrap(), "decoy");
        assert_eq!(std::fs::read_to_string(outside.join("x")).unwrap(), "home file");
        let bin = home.path().join("workspaces/.trash").join(agent.to_string());
        for item in std::fs::read_dir(&bin).unwrap() {
            let content = std::fs::read(item.unwrap().path()).unwrap();
            assert_ne!(content, b"home file", "no home file reached the trash");
        }
    }
}
