//! Workspace file tools (family `files`, spec §14 and §15): `apply_patch`, `read_file`,
//! `edit_file`, `find_files`, `remove_file`, `restore_file`. Each works on the calling
//! agent's own workspace; every path goes through [`crate::workspace::Workspaces`], which
//! refuses anything that would leave it (`..`, absolute or encoded-looking names are only
//! names, links are never followed). Text is edited in memory with [`crate::patch`].
//!
//! Destructive tools are separate (`remove_file`, `restore_file`) so a grant of
//! `files.read_file` or `files.find_files` reads without changing anything.
//!
//! # Design notes
//!
//! ## Layout
//!
//! Family `files` (spec §14, §15, issue 22): `tools.rs` (`apply_patch`, `read_file`, `edit_file`
//! mode write/patch, `find_files` mode list/glob/search, `remove_file`, `restore_file`),
//! `apply.rs` (`apply_patch`'s check-then-write with rollback), `glob.rs` (the glob matcher).
//! Paths through `workspace/`, text through `patch/`.
//!
//! ## Files
//!
//! Six tools over the calling agent's own workspace, family `files` (grant `files.*`, or single
//! tools by name: `read_file` alone reads and cannot remove). Every path goes through
//! `Workspaces` (see `crate::workspace`), so the tools hold no path logic of their own.
//!
//! - **`apply_patch(patch)`**: the `*** Begin Patch` format (`patch::parse`; an error names the
//!   line). At most 1 MiB of patch and 100 files; each resulting file within `[workspace]
//!   max_file_bytes`; at most 256 MiB of originals and results held in memory. **Check, then
//!   write**: every operation is checked against the workspace as it is before the patch (an
//!   added file must not exist → `Conflict`; a deleted or updated one must → `NotFound`; a move's
//!   target must not → `Conflict`; every update's hunks are applied in memory, and a failure names
//!   the file and hunk with the matcher's refusal → `InvalidArguments`); no path may be named by
//!   two operations (a move's target included), so no operation depends on another. Then the
//!   operations are written in order, each original kept in memory; if a write fails (a folder
//!   the patch itself made a file, a full disk), the ones done are undone in reverse order
//!   (updated files rewritten, deleted ones re-created, added ones removed, moves moved back) and
//!   the error says so; folders made on the way stay.
//! - **Ordering**: the four writing tools (`apply_patch`, `edit_file`, `remove_file`,
//!   `restore_file`) are `exclusive`, so the calls of one model response run one after another
//!   and two edits of one file both land. Calls from different turns (or a process writing the
//!   same file) are not serialised with them: the last write wins, whole.
//! - **Atomic moves** (`Workspaces::rename`): the new content goes to a temporary file in the
//!   target folder, is synced, then *hard-linked* to the new name (a link, unlike a rename,
//!   fails if the name is taken, so a file that appears meanwhile is a `Conflict`, never
//!   replaced), the temporary name is dropped, then the old path is removed. The new path only
//!   ever shows the new content, whole. Empty hunks + `Move to` is a pure rename and keeps the
//!   bytes (binary files too); hunks need UTF-8 text. The result lists each file with `action`
//!   (`added`, `updated`, `moved`, `deleted`), `move_to`, and lines added/removed.
//! - **`read_file(path, offset?, limit?)`** (read-only): numbered lines from 1, default and at
//!   most 2,000, lines cut at 2,000 characters; says `total_lines` and `truncated`. A file with a
//!   NUL byte or invalid UTF-8 is refused as not text; files over `max_file_bytes` are refused.
//! - **`edit_file(path, mode, …)`**, one tool with a `mode` (spec §15) and flat optional fields
//!   (`content` for `write`, `old`/`new` for `patch`) rather than a tagged union, so the schema
//!   stays one plain object; a field of the other mode is refused. `write` creates or replaces
//!   the file atomically (temp + rename). `patch` is `patch::replace` with the default options
//!   (all five strategies); no match and several matches are both `InvalidArguments` on `old`
//!   (the argument is wrong, not the file's state), with the matcher's text (every location, or
//!   the closest region and its diff). The result names the strategy and the replaced and new
//!   line ranges. Read-then-write: a concurrent writer's change in between is lost.
//! - **`find_files(mode, …)`** (read-only): `list` a folder (its files and sub-folders;
//!   `recursive` for all files below), `glob` (our own small matcher, `glob.rs`: `*` and `?`
//!   within a name, `**` any folders; matched from `path`, so `*.md` is the top level and
//!   `**/*.md` every depth; no `[…]` classes — no glob crate was in the lock file), `search`
//!   (the `regex` crate, pattern ≤ 1,000 bytes and a 1 MiB compiled-size limit, over each text
//!   file's first 1 MiB and at most 64 MiB a call; binaries skipped and counted; `include` glob
//!   filters files). Results default to 200, at most 1,000, and say `truncated`. Walks
//!   (`Workspaces::find`) never follow links, look at 100,000 entries at most and skip
//!   half-written temp files.
//! - **`remove_file(path)`** moves the file into the agent's trash,
//!   `$KENNEL_HOME/workspaces/.trash/AGENT_ID/` — *beside* the workspaces, not in one, so no
//!   path argument, listing or child process of the agent can reach it, and `.trash` can never
//!   be an agent id. Each removal is `ID` (a UUIDv7, so ordered by time) plus `ID.json`
//!   (original path, time, size). **`restore_file(path)`** brings back the most recent removal
//!   of that path, byte for byte (a hard link, so `Conflict` if anything is there now,
//!   `NotFound` if nothing was removed there). They are separate tools so destructive actions are
//!   granted separately. The trash is not pruned yet; `apply_patch`'s `Delete File` deletes for
//!   good (the patch's rollback keeps the original in memory).
//! - Tests: `files::apply`, `files::glob` and `workspace` unit tests; `tests/system/files.rs`
//!   through the daemon (one patch doing everything, a failing second file, a write failing
//!   midway rolled back, a reader thread polling the moved file seeing only absent or the whole
//!   new content, a traversal corpus against every path-taking tool with the workspace and an
//!   outside folder compared on disk, trash round trip, grants).

mod apply;
mod glob;
mod tools;

pub(crate) use tools::register;

use crate::family::Family;

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family::tools_only("files", register);
