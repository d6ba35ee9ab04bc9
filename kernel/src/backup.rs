//! Backups of a home (`kennel backup FILE`, `kennel restore FILE`): one gzipped tar archive
//! with a consistent copy of the SQLite database and the home's files.
//!
//! - **The database** is copied with SQLite's `VACUUM INTO` over a connection of its own, so a
//!   running daemon goes on writing meanwhile: the copy is the database as of one moment (one
//!   read transaction), never a file copy of a live WAL database. On PostgreSQL the archive
//!   holds the files only, and says so: the database is `pg_dump`'s.
//! - **The files** (workspaces, skills, artifacts, canvases, config.toml, …) follow, read as
//!   they are then: a file an agent writes during the backup is in it as it was when read.
//!   Left out: the database's own files (its copy stands for them), one run's files
//!   (`daemon.json`, `daemon.lock`, `cli.token`, `run/`), Chromium's profile (`browser/`,
//!   made again), and anything not a file, directory or symlink. Symlinks are kept as links,
//!   never followed; a file is opened without following links and checked to be a regular
//!   file, so a workspace's FIFO or a link swapped in meanwhile cannot stall or widen the copy.
//! - **The archive** is written beside `FILE` and renamed onto it once complete (mode 0600:
//!   it holds the database). Its first entry, `kennel-backup.json`, says what it is.
//! - **Restoring** needs an empty (or absent) home: it never merges into or overwrites a home.
//!   Entries that would land outside the home are refused, the database is checked
//!   (`PRAGMA quick_check`), and on any failure what was unpacked is removed again.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, fstat, openat, readlinkat, statat};
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The archive's first entry.
const MANIFEST: &str = "kennel-backup.json";
/// The database's name in the home and in the archive.
const DATABASE: &str = "kennel.db";
/// The format [`Manifest::format`] this version writes and reads.
const FORMAT: u32 = 1;

/// Top-level entries of the home a backup leaves out (see the module's notes).
const LEFT_OUT: &[&str] = &[
    "kennel.db",
    "kennel.db-wal",
    "kennel.db-shm",
    "kennel.db-journal",
    "daemon.json",
    "daemon.lock",
    "cli.token",
    "run",
    "browser",
];

/// How many folders deep the walk goes: an agent nesting folders without end neither
/// exhausts the backup's stack or open files nor stops it; what is deeper is left out.
const MAX_DEPTH: usize = 128;

/// The longest path in the home a backup archives: a restore makes each by its whole path,
/// which the system refuses past 4096 bytes with the home's own path in front.
const MAX_NAME: usize = 3072;

/// The staging folders of backups written into the home (this one's is left out by inode;
/// another running at once, or one a killed backup left, holds a database copy).
const STAGING_PREFIX: &str = ".kennel-backup-";

/// What an archive says of itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    pub kennel_version: String,
    pub created_at: String,
    /// `sqlite` (the archive holds `kennel.db`) or `postgres` (it does not).
    pub database: String,
}

/// What a backup or restore did.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub manifest: Manifest,
    /// Files, directories and links, the database included.
    pub entries: u64,
    /// Bytes of file content.
    pub bytes: u64,
    /// Entries left out, each named in the log: neither files, directories nor links,
    /// unreadable or changed while read, nested deeper than [`MAX_DEPTH`] folders, paths over
    /// [`MAX_NAME`] bytes, sparse files (see [`is_mostly_holes`]), other backups' staging.
    pub skipped: u64,
}

/// Writes a backup of `home` to `out`. `postgres`: the home's database is on PostgreSQL.
pub async fn backup(home: &Path, out: &Path, postgres: bool) -> Result<Report> {
    if !home.join("config.toml").exists() && !home.join(DATABASE).exists() {
        return Err(Error::not_found(format!("{} is not a Kennel home (no config.toml or kennel.db)", home.display())));
    }
    let out = absolute(out)?;
    let dir = out.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let staging = Staging::new(dir)?;
    let snapshot = staging.path().join(DATABASE);
    let database = if postgres {
        "postgres"
    } else {
        let live = home.join(DATABASE);
        if !live.exists() {
            return Err(Error::not_found(format!("there is no database at {}", live.display())));
        }
        crate::db::snapshot::vacuum_into(&live, &snapshot).await?;
        "sqlite"
    };
    let manifest = Manifest {
        format: FORMAT,
        kennel_version: env!("CARGO_PKG_VERSION").to_string(),
        created_at: crate::db::now(),
        database: database.to_string(),
    };
    let (home, partial) = (home.to_path_buf(), staging.path().join("archive.tar.gz"));
    let (written, archive) = (partial.clone(), out.clone());
    let report = tokio::task::spawn_blocking(move || {
        let snapshot = (!postgres).then_some(snapshot.as_path());
        write_archive(&home, &written, &manifest, snapshot, &archive)
    })
    .await
    .map_err(|e| Error::internal(format_args!("the backup's task ended abnormally: {e}")))??;
    std::fs::rename(&partial, &out).map_err(|e| Error::unavailable(format!("cannot write {}: {e}", out.display())))?;
    Ok(report)
}

/// A directory beside the archive for the database's copy and the archive being written,
/// removed with what is left in it.
struct Staging(PathBuf);

impl Staging {
    fn new(beside: &Path) -> Result<Staging> {
        let path = beside.join(format!("{STAGING_PREFIX}{}", uuid::Uuid::new_v4().simple()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| Error::unavailable(format!("cannot write in {}: {e}", beside.display())))?;
        Ok(Staging(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).map_err(|e| Error::invalid(format!("{}: {e}", path.display())))
}

fn write_archive(
    home: &Path,
    partial: &Path,
    manifest: &Manifest,
    snapshot: Option<&Path>,
    out: &Path,
) -> Result<Report> {
    let io = |e: std::io::Error| Error::unavailable(format!("cannot write {}: {e}", partial.display()));
    let file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(partial).map_err(io)?;
    let gz = flate2::write::GzEncoder::new(BufWriter::new(file), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    tar.follow_symlinks(false);
    let mut report = Report { manifest: manifest.clone(), entries: 0, bytes: 0, skipped: 0 };

    let text = serde_json::to_vec_pretty(manifest).map_err(Error::internal)?;
    let mut header = file_header(text.len() as u64, 0o600);
    tar.append_data(&mut header, MANIFEST, text.as_slice()).map_err(io)?;
    if let Some(snapshot) = snapshot {
        let db = File::open(snapshot).map_err(io)?;
        let size = db.metadata().map_err(io)?.len();
        tar.append_data(&mut file_header(size, 0o600), DATABASE, db).map_err(io)?;
        report.entries += 1;
        report.bytes += size;
    }
    let home_dir = rustix::fs::open(home, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| Error::unavailable(format!("cannot read {}: {e}", home.display())))?;
    let inode = |path: &Path| std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
    let own = [partial.parent(), Some(out)].into_iter().flatten().filter_map(inode).collect();
    let mut walk = Walk { tar: &mut tar, report: &mut report, own };
    walk.dir(&home_dir, Path::new(""), 0)?;
    let gz = tar.into_inner().map_err(io)?;
    let mut file = gz.finish().map_err(io)?.into_inner().map_err(|e| io(e.into_error()))?;
    file.flush().map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok(report)
}

fn file_header(size: u64, mode: u32) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(size);
    header.set_mode(mode);
    header.set_mtime(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()));
    header
}

/// Whether `file` (`size` bytes, `blocks` of 512 on disk) is over 64 MiB with less than an
/// eighth of it on disk, and has a hole: a sparse file (`truncate -s 10T`), which the archive
/// would hold as terabytes of zeros, read for hours. (Few blocks alone can be compression.)
/// A file cut shorter since `size` was read counts too: the archive has promised `size`
/// bytes, and what the file no longer has would be written as zeros. The file is read from
/// its start afterwards.
fn is_mostly_holes(file: &File, size: u64, blocks: u64) -> std::io::Result<bool> {
    use rustix::fs::{SeekFrom, seek};
    if size <= 64 * 1024 * 1024 || blocks.saturating_mul(512) >= size / 8 {
        return Ok(false);
    }
    // No hole past the end: ENXIO, when the file is now empty.
    let first_hole = seek(file, SeekFrom::Hole(0));
    seek(file, SeekFrom::Start(0))?;
    Ok(first_hole.map_or(true, |at| at < size))
}

/// Walks the home into the archive by directory descriptor: each name is looked up in the
/// directory already opened (`openat`, `statat` without following links), so an agent that
/// swaps a folder of its workspace for a link meanwhile cannot lead the walk out of the home.
struct Walk<'a, W: Write> {
    tar: &'a mut tar::Builder<W>,
    report: &'a mut Report,
    /// Device and inode of what must not be copied: the staging directory (with the archive
    /// being written) and an earlier archive at the same place, if inside the home.
    own: Vec<(u64, u64)>,
}

/// Flags for opening a name in an opened directory: never through a link, never waiting on a
/// FIFO.
fn beneath() -> OFlags {
    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC
}

impl<W: Write> Walk<'_, W> {
    /// The folder `dir` (`name` in the home, `depth` folders down) and what is in it.
    fn dir(&mut self, dir: &OwnedFd, name: &Path, depth: usize) -> Result<()> {
        let unreadable = |e: rustix::io::Errno| Error::unavailable(format!("cannot read {}: {e}", name.display()));
        let mut names: Vec<OsString> = Vec::new();
        for entry in Dir::read_from(dir).map_err(unreadable)? {
            let entry = entry.map_err(unreadable)?;
            let entry_name = OsStr::from_bytes(entry.file_name().to_bytes());
            if entry_name != "." && entry_name != ".." {
                names.push(entry_name.to_owned());
            }
        }
        names.sort();
        let top = name.as_os_str().is_empty();
        for entry in names {
            if top && LEFT_OUT.iter().any(|n| entry == *n) {
                continue;
            }
            self.entry(dir, &entry, &name.join(&entry), depth)?;
        }
        Ok(())
    }

    fn entry(&mut self, dir: &OwnedFd, entry: &OsStr, name: &Path, depth: usize) -> Result<()> {
        let io = |e: std::io::Error| Error::unavailable(format!("cannot back up {}: {e}", name.display()));
        let seen = match statat(dir, entry, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(seen) => seen,
            // Gone since the directory was read: an agent removed it meanwhile.
            Err(rustix::io::Errno::NOENT) => return Ok(()),
            // A folder its agent made unsearchable (`chmod 600`), and the like.
            Err(e) => {
                self.leave_out(name, &format!("cannot be read ({e})"));
                return Ok(());
            }
        };
        if self.own.contains(&(seen.st_dev, seen.st_ino)) {
            return Ok(());
        }
        if name.as_os_str().len() > MAX_NAME {
            self.leave_out(name, &format!("its path is over {MAX_NAME} bytes, more than a restore could make"));
            return Ok(());
        }
        if name.components().count() == 1 && entry.as_bytes().starts_with(STAGING_PREFIX.as_bytes()) {
            self.leave_out(name, "another backup's staging folder (a copy of the database)");
            return Ok(());
        }
        let mode = seen.st_mode & 0o777;
        let mtime = seen.st_mtime.max(0) as u64;
        match FileType::from_raw_mode(seen.st_mode) {
            FileType::Directory => {
                if depth >= MAX_DEPTH {
                    self.leave_out(name, &format!("nested deeper than the {MAX_DEPTH} folders a backup goes down"));
                    return Ok(());
                }
                // Opened as a directory, never through a link: one swapped in since `statat`
                // is refused here, and a different directory is skipped.
                let Some(sub) = self.same(dir, entry, name, &seen, OFlags::DIRECTORY) else { return Ok(()) };
                let mut header = tar::Header::new_gnu();
                header.set_entry_type(tar::EntryType::Directory);
                header.set_size(0);
                header.set_mode(mode);
                header.set_mtime(mtime);
                self.tar.append_data(&mut header, name, std::io::empty()).map_err(io)?;
                self.report.entries += 1;
                self.dir(&sub, name, depth + 1)
            }
            FileType::Symlink => {
                let Ok(target) = readlinkat(dir, entry, Vec::new()) else {
                    self.leave_out(name, "a link removed while read");
                    return Ok(());
                };
                let mut header = tar::Header::new_gnu();
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_size(0);
                header.set_mode(0o777);
                header.set_mtime(mtime);
                let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
                self.tar.append_link(&mut header, name, target).map_err(io)?;
                self.report.entries += 1;
                Ok(())
            }
            FileType::RegularFile => {
                let Some(fd) = self.same(dir, entry, name, &seen, OFlags::empty()) else { return Ok(()) };
                let file = File::from(fd);
                // The size read is the opened file's, checked for holes: what `statat` saw may
                // have been truncated to a terabyte since.
                let opened = file.metadata().map_err(io)?;
                let size = opened.len();
                if is_mostly_holes(&file, size, opened.blocks()).map_err(io)? {
                    self.leave_out(name, "a sparse file, mostly holes");
                    return Ok(());
                }
                let mut header = file_header(size, mode);
                header.set_mtime(mtime);
                // Exactly `size` bytes, whatever the file does meanwhile: one cut short is padded.
                let content = file.take(size).chain(std::io::repeat(0)).take(size);
                self.tar.append_data(&mut header, name, content).map_err(io)?;
                self.report.entries += 1;
                self.report.bytes += size;
                Ok(())
            }
            // FIFOs, sockets, devices: nothing to copy, and opening one could wait or act.
            _ => {
                self.leave_out(name, "neither a file, a folder nor a link");
                Ok(())
            }
        }
    }

    /// `entry` of `dir` opened (with `extra` flags) if it is still what `statat` saw: the same
    /// inode, not a link. Anything else was swapped meanwhile, and is left out.
    fn same(
        &mut self,
        dir: &OwnedFd,
        entry: &OsStr,
        name: &Path,
        seen: &rustix::fs::Stat,
        extra: OFlags,
    ) -> Option<OwnedFd> {
        let opened = openat(dir, entry, beneath() | extra, Mode::empty()).ok();
        let same = opened.filter(|fd| {
            fstat(fd).is_ok_and(|now| (now.st_dev, now.st_ino, now.st_mode) == (seen.st_dev, seen.st_ino, seen.st_mode))
        });
        if same.is_none() {
            self.leave_out(name, "changed while read");
        }
        same
    }

    /// Counts `name` as left out, and says why in the log.
    fn leave_out(&mut self, name: &Path, why: &str) {
        tracing::warn!(entry = %name.display(), "left out of the backup: {why}");
        self.report.skipped += 1;
    }
}

/// Unpacks the backup `archive` into `home`, which must be empty or absent.
pub async fn restore(archive: &Path, home: &Path) -> Result<Report> {
    let (archive, home) = (absolute(archive)?, absolute(home)?);
    refuse_unless_empty(&home)?;
    let created = !home.exists();
    std::fs::create_dir_all(&home).map_err(|e| Error::unavailable(format!("cannot make {}: {e}", home.display())))?;
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| Error::unavailable(format!("cannot set {}'s mode: {e}", home.display())))?;
    let target = home.clone();
    let unpacked = tokio::task::spawn_blocking(move || unpack(&archive, &target))
        .await
        .map_err(|e| Error::internal(format_args!("the restore's task ended abnormally: {e}")));
    let checked = match unpacked {
        Ok(Ok(report)) => check_database(&home, &report).await.map(|()| report),
        Ok(Err(e)) | Err(e) => Err(e),
    };
    if checked.is_err() {
        empty_again(&home, created);
    }
    checked
}

fn refuse_unless_empty(home: &Path) -> Result<()> {
    match std::fs::read_dir(home).map(|mut entries| entries.next().is_none()) {
        Ok(false) => Err(Error::conflict(format!(
            "{} is not empty: a backup is restored into an empty (or new) home only, so nothing there is overwritten",
            home.display()
        ))),
        Ok(true) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            Err(Error::conflict(format!("{} is a file, not a home", home.display())))
        }
        Err(e) => Err(Error::unavailable(format!("cannot read {}: {e}", home.display()))),
    }
}

/// Removes what a failed restore unpacked (the home was empty, or did not exist).
fn empty_again(home: &Path, created: bool) {
    open_folders(home);
    if created {
        let _ = std::fs::remove_dir_all(home);
        return;
    }
    if let Ok(entries) = std::fs::read_dir(home) {
        for entry in entries.flatten() {
            let path = entry.path();
            let removed = match entry.file_type() {
                Ok(kind) if kind.is_dir() => std::fs::remove_dir_all(&path),
                _ => std::fs::remove_file(&path),
            };
            if let Err(e) = removed {
                tracing::warn!(path = %path.display(), error = %e, "could not remove what a failed restore unpacked");
            }
        }
    }
}

/// Gives the owner every right on `folder` and the folders under it (links not followed), so
/// what a failed restore unpacked into a read-only folder can be removed.
fn open_folders(folder: &Path) {
    let _ = std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o700));
    for entry in std::fs::read_dir(folder).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            open_folders(&entry.path());
        }
    }
}

fn unpack(archive: &Path, home: &Path) -> Result<Report> {
    let not_a_backup = |why: String| Error::invalid(format!("{} is not a Kennel backup: {why}", archive.display()));
    let file = File::open(archive).map_err(|e| Error::not_found(format!("cannot open {}: {e}", archive.display())))?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(std::io::BufReader::new(file)));
    // Modes as archived, never set-id bits (an archive is read as untrusted).
    tar.set_preserve_permissions(false);
    tar.set_overwrite(false);
    let mut entries = tar.entries().map_err(|e| not_a_backup(e.to_string()))?;
    let mut first =
        entries.next().ok_or_else(|| not_a_backup("it is empty".into()))?.map_err(|e| not_a_backup(e.to_string()))?;
    if first.path().map_err(|e| not_a_backup(e.to_string()))?.as_os_str() != MANIFEST {
        return Err(not_a_backup(format!("its first entry is not {MANIFEST}")));
    }
    let mut text = String::new();
    first.by_ref().take(64 * 1024).read_to_string(&mut text).map_err(|e| not_a_backup(e.to_string()))?;
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| not_a_backup(format!("{MANIFEST}: {e}")))?;
    if manifest.format != FORMAT {
        return Err(Error::invalid(format!(
            "{} is a backup of format {}; this Kennel ({}) reads format {FORMAT}",
            archive.display(),
            manifest.format,
            env!("CARGO_PKG_VERSION")
        )));
    }
    let mut report = Report { manifest, entries: 0, bytes: 0, skipped: 0 };
    // Folders stay open to their owner while the rest unpacks, and get their archived modes
    // at the end, deepest first: one archived read-only (an agent's `chmod 555`, Go's module
    // cache) would refuse its own files otherwise.
    let mut folders = Vec::new();
    for entry in entries {
        let mut entry = entry.map_err(|e| not_a_backup(e.to_string()))?;
        let name = entry.path().map_err(|e| not_a_backup(e.to_string()))?.into_owned();
        let kind = entry.header().entry_type();
        never_written_by_a_backup(&name, kind).map_err(not_a_backup)?;
        let size = entry.size();
        let folder_mode = match kind {
            tar::EntryType::Directory => Some(entry.header().mode().map_err(|e| not_a_backup(e.to_string()))? & 0o777),
            _ => None,
        };
        let inside =
            entry.unpack_in(home).map_err(|e| Error::unavailable(format!("cannot restore {}: {e}", name.display())))?;
        if !inside {
            return Err(not_a_backup(format!("its entry {} would land outside the home", name.display())));
        }
        if let Some(mode) = folder_mode {
            // The path `unpack_in` used: the name's plain parts (it refused `..`).
            let path = home.join(name.components().filter(|c| matches!(c, Component::Normal(_))).collect::<PathBuf>());
            set_folder_mode(&path, 0o700)?;
            folders.push((path, mode));
        }
        report.entries += 1;
        report.bytes += size;
    }
    for (path, mode) in folders.iter().rev() {
        set_folder_mode(path, *mode)?;
    }
    Ok(report)
}

/// Why an archive's entry `name` of kind `kind` is not one a backup writes, if it is not:
/// anything but files, folders and links, and the names a backup leaves out (the database
/// only as a file).
fn never_written_by_a_backup(name: &Path, kind: tar::EntryType) -> std::result::Result<(), String> {
    use tar::EntryType::{Directory, Regular, Symlink};
    if !matches!(kind, Regular | Directory | Symlink) {
        return Err(format!("its entry {} is a {kind:?}; backups hold files, folders and links only", name.display()));
    }
    let top = name.components().find_map(|c| match c {
        Component::Normal(part) => Some(part),
        _ => None,
    });
    let is_database = name.components().eq(Path::new(DATABASE).components()) && kind == Regular;
    match top.and_then(OsStr::to_str) {
        Some(top) if LEFT_OUT.contains(&top) && !is_database => {
            Err(format!("its entry {} is one a backup never holds", name.display()))
        }
        _ => Ok(()),
    }
}

/// Sets the folder `path`'s permission bits, never through a link.
fn set_folder_mode(path: &Path, mode: u32) -> Result<()> {
    let cannot = |e: std::io::Error| Error::unavailable(format!("cannot set {}'s mode: {e}", path.display()));
    if std::fs::symlink_metadata(path).map_err(cannot)?.is_dir() {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(cannot)?;
    }
    Ok(())
}

/// The restored database opens and SQLite finds nothing wrong in it.
async fn check_database(home: &Path, report: &Report) -> Result<()> {
    let path = home.join(DATABASE);
    if report.manifest.database != "sqlite" {
        return Ok(());
    }
    if !path.exists() {
        return Err(Error::invalid(format!("the backup says it holds {DATABASE}, and it does not")));
    }
    let verdict = crate::db::snapshot::quick_check(&path).await?;
    match verdict.as_str() {
        "ok" => Ok(()),
        problem => Err(Error::invalid(format!("the restored database is damaged: {problem}"))),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn home_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let home = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = home.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        home
    }

    /// The archive's entries (name, kind) and all its bytes, unzipped.
    fn read_archive(path: &Path) -> (Vec<(String, tar::EntryType)>, Vec<u8>) {
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(File::open(path).unwrap()).read_to_end(&mut bytes).unwrap();
        let mut tar = tar::Archive::new(bytes.as_slice());
        let entries = tar
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.path().unwrap().display().to_string(), e.header().entry_type())
            })
            .collect();
        (entries, bytes)
    }

    #[tokio::test]
    async fn a_fifo_or_a_link_in_a_workspace_neither_stalls_nor_widens_a_backup() {
        let outside = home_with(&[("secret.txt", "the operator's secret")]);
        let home = home_with(&[("config.toml", ""), ("workspaces/a/notes.md", "mine")]);
        let ws = home.path().join("workspaces/a");
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), ws.join("link")).unwrap();
        let fifo = std::ffi::CString::new(ws.join("pipe").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path and creates a FIFO there.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        std::fs::write(home.path().join("cli.token"), "kn_of_this_run").unwrap();
        let out = home.path().join("backup.tar.gz");

        let report = tokio::time::timeout(std::time::Duration::from_secs(10), backup(home.path(), &out, true))
            .await
            .expect("a FIFO does not stall the backup")
            .unwrap();
        assert_eq!(report.skipped, 1, "the FIFO is left out");
        let (entries, bytes) = read_archive(&out);
        let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [MANIFEST, "config.toml", "workspaces", "workspaces/a", "workspaces/a/link", "workspaces/a/notes.md"]
        );
        assert_eq!(entries[4].1, tar::EntryType::Symlink, "a link stays a link");
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("the operator's secret"), "a link is never followed");
        assert!(!text.contains("kn_of_this_run"), "one run's token is not kept");
        let stale: Vec<_> = std::fs::read_dir(home.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(!stale.iter().any(|n| n.to_string_lossy().starts_with(".kennel-backup-")), "{stale:?}");
    }

    /// What an agent can make to stop, stall or spoil backups (folders nested without end,
    /// paths too long to restore, a file of a terabyte of holes) is left out, counted, and the
    /// backup finishes at once; another backup's staging folder (a database copy) is not
    /// archived.
    #[tokio::test]
    async fn folders_without_end_paths_too_long_and_a_sparse_terabyte_are_left_out_and_the_backup_finishes() {
        let home = home_with(&[("config.toml", ""), (".kennel-backup-old/kennel.db", "an old copy")]);
        let mut deep = home.path().join("workspaces/a");
        for _ in 0..200 {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        // Paths too long to unpack again: fifteen folders of 250-byte names.
        let mut long = home.path().join("workspaces/b");
        for i in 0..15 {
            long.push(format!("{i:0>250}"));
        }
        std::fs::create_dir_all(&long).unwrap();
        let sparse = File::create(home.path().join("workspaces/a/huge.img")).unwrap();
        sparse.set_len(1 << 40).unwrap();
        let out = home.path().join("backup.tar.gz");

        let report = tokio::time::timeout(std::time::Duration::from_secs(20), backup(home.path(), &out, true))
            .await
            .expect("the backup finishes")
            .unwrap();
        assert_eq!(report.skipped, 4, "too deep, too long, the sparse file, the staging folder: {report:?}");
        let (entries, _) = read_archive(&out);
        let depths: Vec<usize> = entries.iter().map(|(n, _)| Path::new(n).components().count()).collect();
        assert_eq!(depths.iter().max(), Some(&MAX_DEPTH), "folders down to the cap, none below it");
        assert!(entries.iter().all(|(n, _)| n.len() <= MAX_NAME), "no path a restore could not make");
        assert!(entries.iter().any(|(n, _)| n.len() > MAX_NAME - 251), "paths up to the cap are kept");
        assert!(!entries.iter().any(|(n, _)| n.contains("huge.img") || n.starts_with(STAGING_PREFIX)), "{entries:?}");
        assert!(std::fs::metadata(&out).unwrap().len() < 1 << 20, "no terabyte of zeros");
    }

    /// An agent truncating a file to nothing and to a terabyte of holes, as fast as it can,
    /// beside backups for a second: whichever size a backup finds on the file it opened, it
    /// never reads the terabyte (checked on the opened file, not on what was seen before).
    #[tokio::test]
    async fn a_file_swinging_between_empty_and_a_sparse_terabyte_never_stalls_a_backup() {
        let home = home_with(&[("config.toml", ""), ("workspaces/a/f.img", "")]);
        let path = home.path().join("workspaces/a/f.img");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let truncater = {
            let (file, stop) = (std::fs::OpenOptions::new().write(true).open(&path).unwrap(), stop.clone());
            std::thread::spawn(move || {
                let mut swings = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = file.set_len(0);
                    let _ = file.set_len(1 << 40);
                    swings += 1;
                }
                swings
            })
        };
        let out = tempfile::tempdir().unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_millis(1000);
        let mut backups = 0;
        while std::time::Instant::now() < until {
            let archive = out.path().join(format!("{backups}.tar.gz"));
            let took = tokio::time::timeout(std::time::Duration::from_secs(10), backup(home.path(), &archive, true));
            took.await.expect("the backup never reads the terabyte").unwrap();
            assert!(std::fs::metadata(&archive).unwrap().len() < 1 << 20, "backup {backups}");
            std::fs::remove_file(&archive).unwrap();
            backups += 1;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let swings = truncater.join().unwrap();
        assert!(backups > 10 && swings > 1000, "{backups} backups beside {swings} swings");
    }

    /// An agent swapping a folder of its workspace for a link to a secret, as fast as it can,
    /// for a second and a half of backups: no archive ever holds what the link leads to.
    #[tokio::test]
    async fn a_folder_swapped_for_a_link_during_backups_never_leads_out_of_the_home() {
        let outside = home_with(&[("d/secret.txt", "the operator's secret")]);
        let home = home_with(&[("config.toml", ""), ("workspaces/a/d/mine.txt", "mine")]);
        let ws = home.path().join("workspaces/a");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (ws, target, stop) = (ws.clone(), outside.path().join("d"), stop.clone());
            std::thread::spawn(move || {
                let mut swaps = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::fs::rename(ws.join("d"), ws.join("real"));
                    let _ = std::os::unix::fs::symlink(&target, ws.join("link"));
                    let _ = std::fs::rename(ws.join("link"), ws.join("d"));
                    let _ = std::fs::remove_file(ws.join("d"));
                    let _ = std::fs::rename(ws.join("real"), ws.join("d"));
                    swaps += 1;
                }
                swaps
            })
        };
        let out = tempfile::tempdir().unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_millis(1500);
        let mut backups = 0;
        while std::time::Instant::now() < until {
            let archive = out.path().join(format!("{backups}.tar.gz"));
            backup(home.path(), &archive, true).await.unwrap();
            let (_, bytes) = read_archive(&archive);
            assert!(
                !String::from_utf8_lossy(&bytes).contains("the operator's secret"),
                "backup {backups} followed the link"
            );
            std::fs::remove_file(&archive).unwrap();
            backups += 1;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        assert!(backups > 20 && swaps > 1000, "{backups} backups beside {swaps} swaps");
    }

    /// A hand-made backup at `archive`: the manifest and a `config.toml`, then what `add`
    /// writes (an attacker's entries).
    fn hand_made_archive(archive: &Path, add: impl FnOnce(&mut tar::Builder<flate2::write::GzEncoder<File>>)) {
        let manifest = Manifest {
            format: FORMAT,
            kennel_version: "0".into(),
            created_at: "2026-12-06T00:00:00Z".into(),
            database: "postgres".into(),
        };
        let gz = flate2::write::GzEncoder::new(File::create(archive).unwrap(), flate2::Compression::fast());
        let mut tar = tar::Builder::new(gz);
        let text = serde_json::to_vec(&manifest).unwrap();
        tar.append_data(&mut file_header(text.len() as u64, 0o600), MANIFEST, text.as_slice()).unwrap();
        tar.append_data(&mut file_header(2, 0o600), "config.toml", "#\n".as_bytes()).unwrap();
        add(&mut tar);
        tar.into_inner().unwrap().finish().unwrap();
    }

    /// An archive that would write through a link it made, or above the home, is refused,
    /// and the home is left empty again.
    #[tokio::test]
    async fn a_restore_that_would_write_outside_the_home_is_refused_and_undone() {
        let outside = tempfile::tempdir().unwrap();
        for attack in ["through a link", "above the home"] {
            let dir = tempfile::tempdir().unwrap();
            let archive = dir.path().join("evil.tar.gz");
            hand_made_archive(&archive, |tar| {
                if attack == "through a link" {
                    let mut link = tar::Header::new_gnu();
                    link.set_entry_type(tar::EntryType::Symlink);
                    link.set_size(0);
                    tar.append_link(&mut link, "workspaces", outside.path()).unwrap();
                    tar.append_data(&mut file_header(4, 0o600), "workspaces/x", "evil".as_bytes()).unwrap();
                } else {
                    let mut header = file_header(4, 0o600);
                    // `append_data` refuses `..` itself: the name is written into the header.
                    header.as_gnu_mut().unwrap().name[..7].copy_from_slice(b"../x.sh");
                    header.set_cksum();
                    tar.append(&header, "evil".as_bytes()).unwrap();
                }
            });

            let home = dir.path().join("home");
            let e = restore(&archive, &home).await.unwrap_err();
            assert!(e.message.contains("outside the home") || e.message.contains("cannot restore"), "{attack}: {e:?}");
            assert!(!home.exists(), "{attack}: what was unpacked is removed");
            assert!(!outside.path().join("x").exists(), "{attack}: nothing written outside");
            assert!(!dir.path().join("x.sh").exists(), "{attack}: nothing written above the home");
        }
    }

    /// Entries a backup never writes (a FIFO, a device, the names it leaves out, the database
    /// as a link) are refused, and nothing of the archive stays.
    #[tokio::test]
    async fn a_restore_refuses_what_a_backup_never_holds() {
        let special = |kind: tar::EntryType| {
            let mut header = file_header(0, 0o600);
            header.set_entry_type(kind);
            header
        };
        for (name, header, says) in [
            ("workspaces/a/pipe", special(tar::EntryType::Fifo), "Fifo"),
            ("workspaces/a/disk", special(tar::EntryType::Block), "Block"),
            ("cli.token", file_header(0, 0o600), "never holds"),
            ("daemon.json", file_header(0, 0o600), "never holds"),
            ("run/x.sock", file_header(0, 0o600), "never holds"),
            ("kennel.db-wal", file_header(0, 0o600), "never holds"),
            ("kennel.db", special(tar::EntryType::Symlink), "never holds"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let archive = dir.path().join("odd.tar.gz");
            hand_made_archive(&archive, |tar| {
                let mut header = header;
                if header.entry_type() == tar::EntryType::Symlink {
                    tar.append_link(&mut header, name, "/etc/passwd").unwrap();
                } else {
                    tar.append_data(&mut header, name, std::io::empty()).unwrap();
                }
            });

            let home = dir.path().join("home");
            let e = restore(&archive, &home).await.unwrap_err();
            assert!(e.message.contains(says) && e.message.contains(name), "{name}: {e:?}");
            assert!(!home.exists(), "{name}: what was unpacked is removed");
        }
    }

    #[tokio::test]
    async fn a_home_that_is_not_empty_is_never_restored_into() {
        let home = home_with(&[("config.toml", "# mine")]);
        let source = home_with(&[("config.toml", "# theirs")]);
        let out = source.path().join("b.tar.gz");
        backup(source.path(), &out, true).await.unwrap();
        let e = restore(&out, home.path()).await.unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::Conflict);
        assert_eq!(std::fs::read_to_string(home.path().join("config.toml")).unwrap(), "# mine");
        let fresh = tempfile::tempdir().unwrap();
        let report = restore(&out, &fresh.path().join("new")).await.unwrap();
        assert_eq!((report.manifest.database.as_str(), report.entries), ("postgres", 1));
        assert_eq!(std::fs::read_to_string(fresh.path().join("new/config.toml")).unwrap(), "# theirs");
    }
}
