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
//!
//! # Design notes
//!
//! ## Layout
//!
//! Patching text in memory, no I/O (issue 22): `matcher.rs` `replace` — the bounded five-strategy
//! matcher (exact, line-trimmed, whitespace-normalised, indent-flexible with re-indent,
//! block-anchor), first match wins, several matches in one strategy refused with every location,
//! no match refused with the closest region and a unified diff; `grammar.rs` `parse` — the `***
//! Begin Patch` format, errors naming the line; `apply.rs` `apply_hunks` — one file's hunks in
//! order through the matcher (strategies 1–4); `diff.rs` `unified`. Used by the `files` and
//! `skills` families (below).
//!
//! ## Patching
//!
//! One matcher for every "replace this text with that" a model asks for, pure and bounded:
//!
//! - **Five strategies, strict to loose, the first that matches wins**: exact bytes; lines with
//!   trailing whitespace and `\r` ignored; in-line whitespace runs folded (tabs = spaces) with the
//!   indentation still byte-identical; indentation ignored (the replacement is re-indented by the
//!   difference between the body's and `old`'s first non-blank line); block-anchor (the first
//!   and last `anchor_lines` = 3 lines of an `old` of at least 6 lines, compared trimmed, and a
//!   region between them of ½ to 2 times `old`'s length). Each strategy only loosens the one
//!   before it, so the body is scanned once with the loosest line comparison and the stricter
//!   ones check only what it found.
//! - **Never a best-effort merge.** Several matches within one strategy → refused with every
//!   location (line numbers and text); a later strategy is not tried. No match → refused with
//!   the body region most like `old` (a cheap shared-words pass, then `similar`'s line ratio on
//!   the best four) and a unified diff from `old` to it, so the next turn sees the drift.
//! - Strategies 2–5 replace whole lines and keep the body's line endings (LF or CRLF) and its
//!   final newline or lack of one; exact replaces bytes as given. Whitespace-only `old` is
//!   matched exactly or not at all.
//! - `apply_patch` hunks use strategies 1–4 (block-anchor is for prose, not code), searched in
//!   order after the previous hunk and after the hunk's `@@` context line when it has one.
//! - Cost: a 100 KB body with no match (the slowest path) is about 1 ms (`benches/patch.rs`,
//!   `BENCHMARKS.md`, "Patch matcher").

mod apply;
mod diff;
mod grammar;
mod matcher;

pub use apply::{HunkError, HunkFailure, apply_hunks};
pub use diff::unified;
pub use grammar::{FileOp, Hunk, ParseError, Patch, parse};
pub use matcher::{MatchFailure, MatchOptions, Region, Replaced, Strategy, replace, worst_case_body, worst_case_old};
