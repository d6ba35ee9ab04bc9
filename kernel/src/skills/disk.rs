//! Skills on disk: `ROOT/NAME/skill.toml`, `ROOT/NAME/SKILL.md` and the support folders.
//! Blocking file work, run by [`super::Skills`] on the blocking pool. Writes go to a temporary
//! file in the same folder that is synced and renamed into place, so a reader never sees half
//! a body.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::{MAX_FILES, Manifest, Skill};
use crate::error::{Error, Result};

/// The folders support files live in.
pub const SUPPORT_FOLDERS: [&str; 4] = ["references", "templates", "scripts", "assets"];
const MANIFEST: &str = "skill.toml";
const BODY: &str = "SKILL.md";
/// Where deleted skills wait for an operator to restore them.
const DELETED: &str = ".deleted";

pub(super) fn list(root: &Path) -> Result<Vec<Manifest>> {
    let mut manifests = Vec::new();
    let Ok(entries) = std::fs::read_dir(root) else { return Ok(manifests) };
    for entry in entries {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else { continue };
        if super::check_name(&name).is_err() || !entry.file_type()?.is_dir() {
            continue;
        }
        match read_manifest(&entry.path()) {
            Ok(manifest) => manifests.push(manifest),
            Err(e) => tracing::warn!(skill = %name, error = %e.message, "a skill folder without a readable manifest"),
        }
    }
    manifests.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(manifests)
}

pub(super) fn read(dir: &Path) -> Result<Skill> {
    let manifest = read_manifest(dir)?;
    let body = read_text(&dir.join(BODY))?.unwrap_or_default();
    let mut files = Vec::new();
    for folder in SUPPORT_FOLDERS {
        collect_files(&dir.join(folder), folder, &mut files)?;
    }
    files.sort();
    Ok(Skill { manifest, body, files, version: 0 })
}

fn read_manifest(dir: &Path) -> Result<Manifest> {
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
    let text = read_text(&dir.join(MANIFEST))?
        .ok_or_else(|| Error::not_found(format!("there is no skill `{name}`")).with_field("name"))?;
    toml::from_str(&text).map_err(|e| Error::invalid(format!("`{name}/{MANIFEST}` does not parse: {e}")))
}

pub(super) fn create(root: &Path, dir: &Path, manifest: &Manifest, body: &str) -> Result<()> {
    std::fs::DirBuilder::new().recursive(true).create(root)?;
    match std::fs::DirBuilder::new().create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(Error::conflict(format!(
                "a skill `{}` exists: change it with skill_evolve_update or skill_evolve_patch",
                manifest.name
            ))
            .with_field("name"));
        }
        Err(e) => return Err(e.into()),
    }
    for folder in SUPPORT_FOLDERS {
        std::fs::create_dir(dir.join(folder))?;
    }
    write_skill(dir, manifest, body)
}

/// Writes the manifest and the body, each atomically.
pub(super) fn write_skill(dir: &Path, manifest: &Manifest, body: &str) -> Result<()> {
    let text = super::manifest_text(manifest)?;
    write_atomically(&dir.join(MANIFEST), text.as_bytes())?;
    write_atomically(&dir.join(BODY), body.as_bytes())
}

pub(super) fn read_file(dir: &Path, rel: &str) -> Result<String> {
    let (path, rel) = support_path(dir, rel)?;
    read_text(&path)?.ok_or_else(|| Error::not_found(format!("the skill has no file `{rel}`")).with_field("file"))
}

/// Writes a support file; returns its path as written back and its text before, if any.
pub(super) fn write_file(dir: &Path, rel: &str, text: &str) -> Result<(String, Option<String>)> {
    let (path, rel) = support_path(dir, rel)?;
    let before = read_text(&path)?;
    if before.is_none() {
        let mut count = Vec::new();
        for folder in SUPPORT_FOLDERS {
            collect_files(&dir.join(folder), folder, &mut count)?;
        }
        if count.len() >= MAX_FILES {
            return Err(Error::exhausted(format!("a skill holds at most {MAX_FILES} support files")));
        }
    }
    if let Some(parent) = path.parent() {
        std::fs::DirBuilder::new().recursive(true).create(parent)?;
        // Made just now or before: still no link on the way (a link made in between is refused
        // by the open below, which does not follow one).
        support_path(dir, &rel)?;
    }
    write_atomically(&path, text.as_bytes())?;
    Ok((rel, before))
}

/// Removes a support file; returns its path as written back and its text.
pub(super) fn remove_file(dir: &Path, rel: &str) -> Result<(String, String)> {
    let (path, rel) = support_path(dir, rel)?;
    let before = read_text(&path)?
        .ok_or_else(|| Error::not_found(format!("the skill has no file `{rel}`")).with_field("path"))?;
    std::fs::remove_file(&path)?;
    Ok((rel, before))
}

pub(super) fn move_aside(root: &Path, name: &str, version: i64) -> Result<()> {
    let deleted = root.join(DELETED);
    std::fs::DirBuilder::new().recursive(true).create(&deleted)?;
    std::fs::rename(root.join(name), deleted.join(format!("{name}.{version}")))?;
    Ok(())
}

/// Removes a deleted skill's folder put aside as `version`; whether it was there.
pub(super) fn remove_aside(root: &Path, name: &str, version: i64) -> Result<bool> {
    super::check_name(name)?;
    match std::fs::remove_dir_all(root.join(DELETED).join(format!("{name}.{version}"))) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e.into()),
    }
}

pub(super) fn bring_back(root: &Path, name: &str, deleted_at: i64) -> Result<()> {
    let target = root.join(name);
    if target.exists() {
        return Err(Error::conflict(format!("a skill `{name}` exists again: delete or rename it first")));
    }
    let aside = root.join(DELETED).join(format!("{name}.{deleted_at}"));
    std::fs::rename(&aside, &target).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::not_found(format!("the files of deleted skill `{name}` are gone from {}", aside.display()))
        } else {
            e.into()
        }
    })
}

/// Where support file `rel` is inside skill folder `dir`: `FOLDER/NAME…` with FOLDER one of
/// [`SUPPORT_FOLDERS`], each part a plain name, and no part of it that exists a symbolic link.
fn support_path(dir: &Path, rel: &str) -> Result<(PathBuf, String)> {
    let parts = crate::workspace::check_relative(rel).map_err(|e| {
        Error::invalid(e.message.replace("workspace path", "support file path").replace("the workspace", "the skill"))
            .with_field("path")
    })?;
    if parts.len() < 2 || !SUPPORT_FOLDERS.contains(&parts[0].as_str()) {
        return Err(Error::invalid(format!(
            "`{rel}` is not a support file: name it inside one of {} (like `references/api.md`)",
            SUPPORT_FOLDERS.join("/, ") + "/"
        ))
        .with_field("path"));
    }
    let mut path = dir.to_path_buf();
    for part in &parts {
        path.push(part);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(Error::forbidden(format!("`{rel}` goes through a symbolic link: links are not followed")));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => return Err(e.into()),
        }
    }
    Ok((parts.iter().fold(dir.to_path_buf(), |p, part| p.join(part)), parts.join("/")))
}

fn collect_files(folder: &Path, rel: &str, files: &mut Vec<String>) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(folder) else { return Ok(()) };
    for entry in entries {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else { continue };
        let kind = entry.file_type()?;
        let path = format!("{rel}/{name}");
        if kind.is_dir() {
            collect_files(&entry.path(), &path, files)?;
        } else if kind.is_file() && !name.ends_with(".part") {
            files.push(path);
        }
    }
    Ok(())
}

/// A file's text (`None`: there is no such file), read without following a link at its last
/// part. Errors name the file, never where the home is on this machine.
fn read_text(path: &Path) -> Result<Option<String>> {
    let shown = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut file = match OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(Error::forbidden(format!("`{shown}` is a symbolic link: links are not followed")));
        }
        Err(e) => return Err(e.into()),
    };
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > super::MAX_FILE_BYTES.max(super::MAX_BODY_BYTES) as u64 {
        return Err(Error::invalid(format!("`{shown}` is not a text file Kennel reads")));
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut file, &mut text)
        .map_err(|_| Error::invalid(format!("`{shown}` is not UTF-8 text")))?;
    Ok(Some(text))
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let parent = path.parent().ok_or_else(|| Error::internal("a skill file has no folder"))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = parent.join(format!(".{name}.{}.part", uuid::Uuid::now_v7()));
    let mut file = OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_NOFOLLOW).open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_data()?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}
