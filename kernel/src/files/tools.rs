//! The six `files` tools. Each is a few lines over the workspace service and the patch module.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

use super::apply;
use super::glob::Glob;
use crate::error::{Error, Result};
use crate::family::Services;
use crate::patch::{MatchOptions, replace};
use crate::tool::{CallContext, Registry, Tool, ToolDef};
use crate::workspace::Workspaces;

const FAMILY: &str = "files";
/// Lines `read_file` returns when no `limit` is given, and the most it returns.
const DEFAULT_LINES: usize = 2000;
/// Characters of one line `read_file` and `find_files mode=search` show; longer lines are cut.
const MAX_LINE_CHARS: usize = 2000;
const MAX_HIT_CHARS: usize = 300;
/// `find_files`: results by default and at most.
const DEFAULT_RESULTS: usize = 200;
const MAX_RESULTS: usize = 1000;
/// `find_files mode=search`: bytes read from the start of each file, and the longest regex.
const MAX_SEARCH_FILE_BYTES: u64 = 1 << 20;
/// `find_files mode=search`: bytes read over all files of one call.
const MAX_SEARCH_TOTAL_BYTES: u64 = 64 << 20;
const MAX_REGEX_BYTES: usize = 1000;

/// What this family's tools reach, taken from the kernel's services when they are registered.
#[derive(Clone)]
pub(super) struct Uses {
    workspaces: Arc<Workspaces>,
}

pub(crate) fn register(r: &mut Registry, services: &Services) {
    let uses = Uses { workspaces: services.need() };
    r.add(ApplyPatch(uses.clone()));
    r.add(ReadFile(uses.clone()));
    r.add(EditFile(uses.clone()));
    r.add(FindFiles(uses.clone()));
    r.add(RemoveFile(uses.clone()));
    r.add(RestoreFile(uses.clone()));
}

fn def(name: &str, description: &str, tags: &[&str]) -> ToolDef {
    ToolDef::new(name, FAMILY, description).tags(tags)
}

/// A tool that changes files: run alone and in order when one model response asks for several
/// calls, so two edits of one file in a response both land (each reads what the last wrote).
fn writer(name: &str, description: &str, tags: &[&str]) -> ToolDef {
    def(name, description, tags).exclusive()
}

fn path_error(e: Error) -> Error {
    e.with_field("path")
}

/// The text of a file, or why it is not text.
fn text_of(bytes: Vec<u8>, path: &str) -> Result<String> {
    if bytes.contains(&0) {
        return Err(binary(path));
    }
    String::from_utf8(bytes).map_err(|_| binary(path))
}

fn binary(path: &str) -> Error {
    Error::invalid(format!(
        "`{path}` is not a text file (it has NUL bytes or is not UTF-8); these tools read and edit text only"
    ))
    .with_field("path")
}

fn cut(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}… [line cut at {max} characters]", &line[..at]),
        None => line.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------

pub(crate) struct ApplyPatch(pub(super) Uses);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApplyPatchArgs {
    /// The whole patch, from `*** Begin Patch` to `*** End Patch`, with `*** Add File: PATH`
    /// (then `+` lines), `*** Delete File: PATH`, or `*** Update File: PATH` (optionally
    /// `*** Move to: NEW_PATH`, then `@@` hunks of ` ` context, `-` removed and `+` added
    /// lines). Paths are relative to your workspace. At most 1 MiB and 100 files.
    patch: String,
}

impl Tool for ApplyPatch {
    type Args = ApplyPatchArgs;

    fn def(&self) -> ToolDef {
        writer(
            "apply_patch",
            "Apply a multi-file patch (`*** Begin Patch` … `*** End Patch`: add, delete, update with @@ hunks, \
             move/rename) to your workspace, all or nothing: every file is checked before any is written, and a \
             failed write rolls back the others. Returns what happened to each file.",
            &["files", "patch", "diff", "edit", "code", "rename", "move", "write", "multi-file"],
        )
    }

    async fn run(&self, ctx: CallContext, args: ApplyPatchArgs) -> Result<Value> {
        let ws = &self.0.workspaces;
        let steps = apply::plan(ws, ctx.agent.id, &args.patch).await?;
        let files = apply::write(ws, ctx.agent.id, steps).await?;
        Ok(json!({ "files": files }))
    }
}

// ---------------------------------------------------------------------------------------------

pub(crate) struct ReadFile(pub(super) Uses);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadFileArgs {
    /// A file of your workspace, like `notes/today.md`.
    path: String,
    /// The first line to return, from 1 (default 1).
    #[schemars(range(min = 1))]
    offset: Option<usize>,
    /// The most lines to return (default and at most 2000).
    #[schemars(range(min = 1, max = 2000))]
    limit: Option<usize>,
}

impl Tool for ReadFile {
    type Args = ReadFileArgs;

    fn def(&self) -> ToolDef {
        def(
            "read_file",
            "Read a text file of your workspace with numbered lines (from 1); `offset` and `limit` read a part. \
             Says how many lines the file has and whether more follow.",
            &["files", "read", "open", "cat", "view", "text", "lines"],
        )
        .read_only()
    }

    async fn run(&self, ctx: CallContext, args: ReadFileArgs) -> Result<Value> {
        let offset = args.offset.unwrap_or(1);
        let limit = args.limit.unwrap_or(DEFAULT_LINES);
        if offset == 0 {
            return Err(Error::invalid("lines are numbered from 1").with_field("offset"));
        }
        if !(1..=DEFAULT_LINES).contains(&limit) {
            return Err(Error::invalid(format!("limit is 1 to {DEFAULT_LINES} lines")).with_field("limit"));
        }
        // Line by line: the daemon holds the lines asked for, never the whole file.
        let (read, entry) = self
            .0
            .workspaces
            .read_lines(ctx.agent.id, &args.path, offset, limit, MAX_LINE_CHARS * 4)
            .await
            .map_err(path_error)?;
        let total = read.total;
        if offset > total.max(1) {
            return Err(Error::invalid(format!("`{}` has {total} lines; offset {offset} is past its end", entry.path))
                .with_field("offset"));
        }
        let shown: Vec<String> = read
            .shown
            .iter()
            .enumerate()
            .map(|(i, (line, read_short))| {
                // Kept to a number of bytes, a line of wide characters can be cut short of
                // MAX_LINE_CHARS: it says so all the same.
                let line = if *read_short && line.chars().nth(MAX_LINE_CHARS).is_none() {
                    format!("{line}… [line cut at {MAX_LINE_CHARS} characters]")
                } else {
                    cut(line, MAX_LINE_CHARS)
                };
                format!("{:>6}\t{line}", offset + i)
            })
            .collect();
        let last = offset - 1 + shown.len();
        Ok(json!({
            "path": entry.path,
            "content": shown.join("\n"),
            "first_line": offset,
            "last_line": last,
            "total_lines": total,
            "truncated": last < total,
            "bytes": entry.bytes,
        }))
    }
}

// ---------------------------------------------------------------------------------------------

pub(crate) struct EditFile(pub(super) Uses);

/// How `edit_file` changes the file.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum EditMode {
    /// Create the file, or replace its whole content, with `content`.
    Write,
    /// Replace the one place where `old` is found by `new`.
    Patch,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditFileArgs {
    /// A file of your workspace, like `notes/today.md`; folders are made as needed.
    path: String,
    /// `write`: the whole new content in `content`. `patch`: replace `old` by `new`.
    mode: EditMode,
    /// mode=write: the file's whole new content.
    content: Option<String>,
    /// mode=patch: the text to replace, copied from the file (a few lines around the change,
    /// enough to be found in one place only).
    old: Option<String>,
    /// mode=patch: what goes in its place (empty deletes it).
    new: Option<String>,
}

impl Tool for EditFile {
    type Args = EditFileArgs;

    fn def(&self) -> ToolDef {
        writer(
            "edit_file",
            "Change a text file of your workspace. mode=write creates or replaces it with `content` (atomically). \
             mode=patch replaces the one place where `old` is found by `new` (exact match first, then tolerant of \
             whitespace and indentation); several places or none are refused with where they are.",
            &["files", "edit", "write", "create", "save", "replace", "patch", "modify"],
        )
    }

    async fn run(&self, ctx: CallContext, args: EditFileArgs) -> Result<Value> {
        let ws = &self.0.workspaces;
        let agent = ctx.agent.id;
        match args.mode {
            EditMode::Write => {
                if args.old.is_some() || args.new.is_some() {
                    return Err(Error::invalid("mode=write takes `content`, not `old`/`new`").with_field("mode"));
                }
                let content = args.content.ok_or_else(|| {
                    Error::invalid("mode=write needs `content`: the file's whole text").with_field("content")
                })?;
                let existed = ws.exists(agent, &args.path).await.map_err(path_error)?;
                let lines = content.lines().count();
                let entry = ws.write(agent, &args.path, content.into_bytes()).await.map_err(path_error)?;
                Ok(json!({
                    "path": entry.path, "mode": "write", "created": !existed, "bytes": entry.bytes, "lines": lines,
                }))
            }
            EditMode::Patch => {
                if args.content.is_some() {
                    return Err(Error::invalid("mode=patch takes `old` and `new`, not `content`").with_field("mode"));
                }
                let old = args.old.ok_or_else(|| Error::invalid("mode=patch needs `old`").with_field("old"))?;
                let new = args.new.ok_or_else(|| Error::invalid("mode=patch needs `new`").with_field("new"))?;
                let (bytes, entry) = ws.read(agent, &args.path).await.map_err(path_error)?;
                let body = text_of(bytes, &entry.path)?;
                // No match and several matches are both a wrong `old`: InvalidArguments, with the
                // matcher's text (the locations, or the closest region and its diff).
                let replaced = replace(&body, &old, &new, &MatchOptions::default())
                    .map_err(|refusal| Error::invalid(format!("`{}`: {refusal}", entry.path)).with_field("old"))?;
                let new_len = replaced.body.len() + replaced.span.len() - body.len();
                let region = &replaced.body[replaced.span.start..replaced.span.start + new_len];
                let new_lines = region.lines().count();
                let entry = ws.write(agent, &entry.path, replaced.body.into_bytes()).await.map_err(path_error)?;
                Ok(json!({
                    "path": entry.path,
                    "mode": "patch",
                    "strategy": replaced.strategy.name(),
                    "replaced_lines": { "start": replaced.start_line, "end": replaced.end_line },
                    "new_lines": { "start": replaced.start_line, "count": new_lines },
                    "bytes": entry.bytes,
                }))
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------

pub(crate) struct FindFiles(pub(super) Uses);

/// What `find_files` looks for.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum FindMode {
    /// The files (and, unless `recursive`, sub-folders) of the folder `path`.
    List,
    /// Files whose path matches the glob `pattern`.
    Glob,
    /// Lines of text files that match the regular expression `pattern`.
    Search,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FindFilesArgs {
    /// `list`, `glob` or `search`.
    mode: FindMode,
    /// The folder to look in (default: the top of your workspace).
    path: Option<String>,
    /// mode=glob: a glob from `path` (`*` and `?` within a name, `**` any folders: `**/*.md`).
    /// mode=search: a regular expression (Rust syntax) matched against each line.
    pattern: Option<String>,
    /// mode=list: include sub-folders' files (default false). glob and search always look in
    /// sub-folders.
    #[serde(default)]
    recursive: bool,
    /// mode=search: only files whose path matches this glob (like `**/*.rs`).
    include: Option<String>,
    /// The most files (list, glob) or matching lines (search) to return (default 200, at most 1000).
    #[schemars(range(min = 1, max = 1000))]
    max_results: Option<usize>,
}

impl Tool for FindFiles {
    type Args = FindFilesArgs;

    fn def(&self) -> ToolDef {
        def(
            "find_files",
            "Find files in your workspace: mode=list lists a folder, mode=glob matches paths (`**/*.md`), \
             mode=search finds lines matching a regular expression in text files (path, line number, line). \
             Bounded; says when there were more. Links are not followed.",
            &["files", "find", "list", "ls", "glob", "search", "grep", "regex"],
        )
        .read_only()
    }

    async fn run(&self, ctx: CallContext, args: FindFilesArgs) -> Result<Value> {
        let max = args.max_results.unwrap_or(DEFAULT_RESULTS);
        if !(1..=MAX_RESULTS).contains(&max) {
            return Err(Error::invalid(format!("max_results is 1 to {MAX_RESULTS}")).with_field("max_results"));
        }
        let ws = &self.0.workspaces;
        let agent = ctx.agent.id;
        let under = args.path.as_deref();
        // Globs and `include` are matched from `path`, so strip it from each listed path.
        let prefix = under.map(|p| format!("{}/", p.trim_end_matches('/')));
        let relative = move |path: &str| match &prefix {
            Some(prefix) => path.strip_prefix(prefix.as_str()).unwrap_or(path).to_string(),
            None => path.to_string(),
        };
        match args.mode {
            FindMode::List => {
                if args.pattern.is_some() || args.include.is_some() {
                    return Err(Error::invalid("mode=list takes no `pattern` or `include`").with_field("mode"));
                }
                let listing = ws.find(agent, under, args.recursive, max, |_| true).await.map_err(path_error)?;
                Ok(json!({ "files": listing.files, "folders": listing.folders, "truncated": listing.truncated }))
            }
            FindMode::Glob => {
                let pattern =
                    args.pattern.ok_or_else(|| Error::invalid("mode=glob needs a `pattern`").with_field("pattern"))?;
                let glob = Glob::new(&pattern)?;
                let listing =
                    ws.find(agent, under, true, max, move |p| glob.matches(&relative(p))).await.map_err(path_error)?;
                Ok(json!({ "files": listing.files, "truncated": listing.truncated }))
            }
            FindMode::Search => {
                let pattern = args
                    .pattern
                    .ok_or_else(|| Error::invalid("mode=search needs a `pattern`").with_field("pattern"))?;
                if pattern.len() > MAX_REGEX_BYTES {
                    return Err(
                        Error::invalid(format!("a pattern is at most {MAX_REGEX_BYTES} bytes")).with_field("pattern")
                    );
                }
                let regex = regex::RegexBuilder::new(&pattern)
                    .size_limit(1 << 20)
                    .build()
                    .map_err(|e| Error::invalid(format!("not a regular expression: {e}")).with_field("pattern"))?;
                let include =
                    args.include.as_deref().map(Glob::new).transpose().map_err(|e| e.with_field("include"))?;
                let keep = move |p: &str| include.as_ref().is_none_or(|g| g.matches(&relative(p)));
                let listing = ws.find(agent, under, true, MAX_RESULTS, keep).await.map_err(path_error)?;
                search(&self.0.workspaces, ctx.agent.id, &regex, listing, max).await
            }
        }
    }
}

/// The lines of `listing`'s files that `regex` matches, at most `max`; binary files and the
/// part of a file past [`MAX_SEARCH_FILE_BYTES`] are skipped (and said), and the search stops
/// (truncated) once [`MAX_SEARCH_TOTAL_BYTES`] were read.
async fn search(
    ws: &Workspaces,
    agent: uuid::Uuid,
    regex: &regex::Regex,
    listing: crate::workspace::Listing,
    max: usize,
) -> Result<Value> {
    let (mut hits, mut searched, mut binary, mut cut_files) = (Vec::new(), 0, 0, Vec::new());
    let mut truncated = listing.truncated;
    let mut read = 0u64;
    'files: for file in &listing.files {
        if read >= MAX_SEARCH_TOTAL_BYTES {
            truncated = true;
            break;
        }
        // A file that vanished or changed into a link since it was listed is passed over.
        let Ok((bytes, _, more)) = ws.read_head(agent, &file.path, MAX_SEARCH_FILE_BYTES).await else {
            continue;
        };
        read += bytes.len() as u64;
        let text = match std::str::from_utf8(&bytes) {
            Ok(text) => text,
            // Only a character cut at the read bound: the text before it.
            Err(e) if more && e.error_len().is_none() => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
            Err(_) => {
                binary += 1;
                continue;
            }
        };
        if text.contains('\0') {
            binary += 1;
            continue;
        }
        searched += 1;
        if more {
            cut_files.push(file.path.clone());
        }
        for (i, line) in text.lines().enumerate() {
            if regex.is_match(line) {
                if hits.len() == max {
                    truncated = true;
                    break 'files;
                }
                hits.push(json!({ "path": file.path, "line": i + 1, "text": cut(line, MAX_HIT_CHARS) }));
            }
        }
    }
    Ok(json!({
        "hits": hits,
        "files_searched": searched,
        "binary_files_skipped": binary,
        "files_searched_in_part": cut_files,
        "truncated": truncated,
    }))
}

// ---------------------------------------------------------------------------------------------

pub(crate) struct RemoveFile(pub(super) Uses);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PathArgs {
    /// A file of your workspace, like `notes/today.md`.
    path: String,
}

impl Tool for RemoveFile {
    type Args = PathArgs;

    fn def(&self) -> ToolDef {
        writer(
            "remove_file",
            "Remove a file from your workspace into its trash; restore_file brings it back.",
            &["files", "remove", "delete", "rm", "trash"],
        )
    }

    async fn run(&self, ctx: CallContext, args: PathArgs) -> Result<Value> {
        let trashed = self.0.workspaces.trash(ctx.agent.id, &args.path).await.map_err(path_error)?;
        Ok(json!({
            "path": trashed.path, "removed": true, "bytes": trashed.bytes, "trashed_at": trashed.trashed_at,
        }))
    }
}

pub(crate) struct RestoreFile(pub(super) Uses);

impl Tool for RestoreFile {
    type Args = PathArgs;

    fn def(&self) -> ToolDef {
        writer(
            "restore_file",
            "Bring back the file most recently removed from `path` by remove_file, byte for byte. Refused if a \
             file is at that path now.",
            &["files", "restore", "undelete", "recover", "trash", "undo"],
        )
    }

    async fn run(&self, ctx: CallContext, args: PathArgs) -> Result<Value> {
        let (entry, trashed) = self.0.workspaces.restore(ctx.agent.id, &args.path).await.map_err(path_error)?;
        Ok(json!({
            "path": entry.path, "restored": true, "bytes": entry.bytes, "trashed_at": trashed.trashed_at,
        }))
    }
}
