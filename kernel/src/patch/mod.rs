//! Patching text in memory: the bounded fuzzy matcher behind `skill_evolve_patch` and
//! `edit_file mode=patch`, the `apply_patch` format and its hunks, and unified diffs.
//!
//! - `matcher`: find `old` in a body with five strategies, strict to loose, and replace it
//!   by `new`; refuse, with locations or the closest region and a diff, rather than guess.
//! - `grammar`: parse an `apply_patch` patch (`*** Begin Patch` … `*** End Patch`) into file
//!   operations and hunks.
//! - `apply`: apply one file's hunks to its text, in order, through the matcher.
//! - `diff`: unified diffs for skill history and refusals.
//!
//! Invariants: nothing here does I/O (the callers read, write, rename and check paths), and no
//! input, however malformed, makes it panic: every failure is a typed error a model can act on.

mod apply;
mod diff;
mod grammar;
mod matcher;

pub use apply::{HunkError, HunkFailure, apply_hunks};
pub use diff::unified;
pub use grammar::{FileOp, Hunk, ParseError, Patch, parse};
pub use matcher::{MatchFailure, MatchOptions, Region, Replaced, Strategy, replace, worst_case_body, worst_case_old};
