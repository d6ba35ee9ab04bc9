//! Applying an update's hunks to a file's text, in memory: the pure half of `apply_patch`
//! (reading, writing and renaming files is the caller's).

use std::fmt;

use super::grammar::Hunk;
use super::matcher::{self, Found, MatchFailure, MatchOptions};

/// Why a hunk could not be applied; the whole update is then refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkError {
    /// The hunk, from 1, in the order of the update.
    pub hunk: usize,
    /// What went wrong with it.
    pub failure: HunkFailure,
}

/// What went wrong with one hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkFailure {
    /// No line after the previous hunk contains the hunk's `@@` context.
    ContextNotFound {
        /// The `@@` text looked for.
        context: String,
    },
    /// The matcher did not find the hunk's lines in exactly one place.
    Refused(MatchFailure),
}

impl fmt::Display for HunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failure {
            HunkFailure::ContextNotFound { context } => write!(
                f,
                "hunk {}: no line after the previous hunk contains the `@@ {context}` context; \
                 hunks must be in file order and `@@` must quote a line of the file",
                self.hunk
            ),
            HunkFailure::Refused(refusal) => write!(f, "hunk {}: {refusal}", self.hunk),
        }
    }
}

impl std::error::Error for HunkError {}

/// Applies `hunks` to `content` in order and returns the new text; the first hunk that cannot
/// be applied refuses the whole change.
///
/// Each hunk is looked for after the end of the previous one. Its `@@` context, when given,
/// first moves the search to just after the first line (from there) that contains it; if the
/// hunk is not found after that line it is looked for from the line itself, for hunks that
/// repeat their `@@` line as context. The hunk's lines are found with
/// [`MatchOptions::for_code_hunks`] (every strategy but block-anchor). A hunk closed by
/// `*** End of File` is first looked for in the last lines of the text. A hunk without context
/// or removed lines inserts its lines: at the end of the text when it is closed by
/// `*** End of File`, otherwise at the start of the line where the search starts. Inserted and
/// replaced lines take the text's line endings.
pub fn apply_hunks(content: &str, hunks: &[Hunk]) -> Result<String, HunkError> {
    let mut text = content.to_string();
    let mut cursor = 0;
    for (index, hunk) in hunks.iter().enumerate() {
        let (span, replacement) =
            place_hunk(&text, cursor, hunk).map_err(|failure| HunkError { hunk: index + 1, failure })?;
        text = matcher::splice(&text, &span, &replacement);
        cursor = span.start + replacement.len();
    }
    Ok(text)
}

/// Where `hunk` goes in `text` (searching from byte `cursor`) and what goes there.
fn place_hunk(text: &str, cursor: usize, hunk: &Hunk) -> Result<(std::ops::Range<usize>, String), HunkFailure> {
    let context_line = match hunk.context.as_deref().map(str::trim).filter(|context| !context.is_empty()) {
        Some(context) => Some(
            line_containing(text, cursor, context)
                .ok_or_else(|| HunkFailure::ContextNotFound { context: context.to_string() })?,
        ),
        None => None,
    };
    let search_from = context_line.map_or(cursor, |line| line.end);
    if hunk.old.is_empty() {
        return Ok(insertion(text, search_from, hunk));
    }
    let found = match locate(text, search_from, hunk) {
        Err(MatchFailure::NoMatch { .. }) if context_line.is_some() => {
            let context_start = context_line.map_or(cursor, |line| line.start);
            locate(text, context_start, hunk)
        }
        result => result,
    }
    .map_err(HunkFailure::Refused)?;
    Ok((found.span, found.replacement))
}

/// Finds the hunk's `old` at or after `from`; an end-of-file hunk is tried against the last
/// lines of the text first.
fn locate(text: &str, from: usize, hunk: &Hunk) -> Result<Found, MatchFailure> {
    let options = MatchOptions::for_code_hunks();
    if hunk.end_of_file {
        let tail_start = start_of_last_lines(text, hunk.old.lines().count()).max(from);
        if let Ok(found) = matcher::find(text, tail_start, &hunk.old, &hunk.new, &options) {
            return Ok(found);
        }
    }
    matcher::find(text, from, &hunk.old, &hunk.new, &options)
}

/// The empty span where a hunk with nothing to find puts its lines, and those lines.
fn insertion(text: &str, search_from: usize, hunk: &Hunk) -> (std::ops::Range<usize>, String) {
    let at = if hunk.end_of_file { text.len() } else { line_start_at_or_after(text, search_from) };
    let eol = matcher::line_ending_of(text);
    let mut lines = matcher::with_line_ending(&hunk.new, eol);
    // Lines appended after a last line without a newline would join it.
    if at == text.len() && !text.is_empty() && !text.ends_with('\n') {
        lines.insert_str(0, eol);
    }
    (at..at, lines)
}

/// The byte range of a line, its line ending included.
#[derive(Debug, Clone, Copy)]
struct LineSpan {
    start: usize,
    end: usize,
}

/// The first line starting at or after `from` whose text contains `needle`.
fn line_containing(text: &str, from: usize, needle: &str) -> Option<LineSpan> {
    let mut start = line_start_at_or_after(text, from);
    for line in text[start..].split_inclusive('\n') {
        let end = start + line.len();
        if line.contains(needle) {
            return Some(LineSpan { start, end });
        }
        start = end;
    }
    None
}

/// `offset` when a line starts there, else the start of the next line (or the end of `text`).
fn line_start_at_or_after(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    if offset == 0 || text.as_bytes().get(offset - 1) == Some(&b'\n') {
        return offset;
    }
    text[offset..].find('\n').map_or(text.len(), |newline| offset + newline + 1)
}

/// Where the last `count` lines of `text` start (0 when it has no more than that).
fn start_of_last_lines(text: &str, count: usize) -> usize {
    // A final line ending closes the last line rather than opening an empty one.
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut start = body.len();
    for _ in 0..count {
        match body[..start].rfind('\n') {
            Some(newline) => start = newline,
            None => return 0,
        }
    }
    // `start` is at the newline before the first of the lines.
    if count == 0 { text.len() } else { start + 1 }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    use super::super::grammar::{FileOp, parse};
    use super::super::matcher::Strategy;
    use super::*;

    fn hunk(context: Option<&str>, old: &str, new: &str) -> Hunk {
        Hunk { context: context.map(Into::into), old: old.into(), new: new.into(), end_of_file: false }
    }

    fn at_end(old: &str, new: &str) -> Hunk {
        Hunk { end_of_file: true, ..hunk(None, old, new) }
    }

    /// The hunks of the single update in `patch`.
    fn hunks_of(patch: &str) -> Vec<Hunk> {
        match parse(patch).unwrap().ops.into_iter().next() {
            Some(FileOp::Update { hunks, .. }) => hunks,
            other => panic!("expected an update, got {other:?}"),
        }
    }

    #[test]
    fn hunks_from_a_parsed_patch_apply_in_order() {
        let content = "fn a() {\n    one();\n}\n\nfn b() {\n    two();\n}\n";
        let hunks = hunks_of(
            "*** Begin Patch\n*** Update File: f.rs\n@@ fn a() {\n-    one();\n+    uno();\n@@ fn b() {\n-    two();\n+    dos();\n*** End Patch",
        );
        let expected = "fn a() {\n    uno();\n}\n\nfn b() {\n    dos();\n}\n";
        assert_eq!(apply_hunks(content, &hunks).unwrap(), expected);
    }

    #[test]
    fn the_context_line_picks_between_identical_places() {
        let content = "fn a() {\n    go();\n}\nfn b() {\n    go();\n}\n";
        let hunks = [hunk(Some("fn b()"), "    go();\n", "    stop();\n")];
        assert_eq!(apply_hunks(content, &hunks).unwrap(), "fn a() {\n    go();\n}\nfn b() {\n    stop();\n}\n");
        let refusal = apply_hunks(content, &[hunk(None, "    go();\n", "    stop();\n")]).unwrap_err();
        assert_eq!(refusal.hunk, 1);
        assert!(matches!(refusal.failure, HunkFailure::Refused(MatchFailure::Ambiguous { .. })), "{refusal:?}");
    }

    #[test]
    fn a_hunk_repeating_its_context_line_is_found_from_that_line() {
        let content = "fn a() {\n    go();\n}\n";
        let hunks = [hunk(Some("fn a() {"), "fn a() {\n    go();\n", "fn a() {\n    stop();\n")];
        assert_eq!(apply_hunks(content, &hunks).unwrap(), "fn a() {\n    stop();\n}\n");
    }

    #[test]
    fn each_hunk_is_searched_after_the_previous_one() {
        let content = "x\ny\nz\n";
        let hunks = [hunk(None, "y\n", "Y\n"), hunk(None, "x\n", "X\n")];
        let error = apply_hunks(content, &hunks).unwrap_err();
        assert_eq!(error.hunk, 2);
        let HunkFailure::Refused(MatchFailure::NoMatch { .. }) = error.failure else { panic!("{error:?}") };
        assert!(error.to_string().starts_with("hunk 2: `old` was not found"), "{error}");
    }

    #[test]
    fn a_missing_context_line_is_named() {
        let error = apply_hunks("a\nb\n", &[hunk(Some("fn missing"), "b\n", "c\n")]).unwrap_err();
        assert_eq!(
            error,
            HunkError { hunk: 1, failure: HunkFailure::ContextNotFound { context: "fn missing".into() } }
        );
        assert!(error.to_string().contains("`@@ fn missing`"), "{error}");
    }

    #[test]
    fn an_end_of_file_hunk_prefers_the_last_lines() {
        let content = "}\nfn b() {\n}\n";
        assert_eq!(apply_hunks(content, &[at_end("}\n", "}\n// end\n")]).unwrap(), "}\nfn b() {\n}\n// end\n");
        // Not at the end: found elsewhere as usual.
        assert_eq!(apply_hunks("a\nb\nc\n", &[at_end("a\n", "A\n")]).unwrap(), "A\nb\nc\n");
    }

    #[test]
    fn an_empty_end_of_file_hunk_appends() {
        assert_eq!(apply_hunks("a\n", &[at_end("", "b\n")]).unwrap(), "a\nb\n");
        assert_eq!(apply_hunks("a", &[at_end("", "b\n")]).unwrap(), "a\nb\n");
        assert_eq!(apply_hunks("a\r\n", &[at_end("", "b\nc\n")]).unwrap(), "a\r\nb\r\nc\r\n");
        assert_eq!(apply_hunks("", &[at_end("", "b\n")]).unwrap(), "b\n");
    }

    #[test]
    fn an_empty_hunk_inserts_after_its_context_line() {
        let content = "use a;\nfn main() {}\n";
        assert_eq!(
            apply_hunks(content, &[hunk(Some("use a;"), "", "use b;\n")]).unwrap(),
            "use a;\nuse b;\nfn main() {}\n"
        );
        assert_eq!(apply_hunks(content, &[hunk(None, "", "// top\n")]).unwrap(), "// top\nuse a;\nfn main() {}\n");
        assert_eq!(apply_hunks("x", &[hunk(Some("x"), "", "y\n")]).unwrap(), "x\ny\n");
    }

    #[test]
    fn inserts_follow_the_cursor() {
        let content = "a\nb\nc\n";
        let hunks = [hunk(None, "b\n", "B\n"), hunk(None, "", "after b\n")];
        assert_eq!(apply_hunks(content, &hunks).unwrap(), "a\nB\nafter b\nc\n");
    }

    #[test]
    fn hunks_match_fuzzily_but_never_by_block_anchor() {
        let content = "if x {\n\tgo();  \n}\n";
        let hunks = [hunk(None, "    go();\n", "    stop();\n")];
        assert_eq!(apply_hunks(content, &hunks).unwrap(), "if x {\n\tstop();\n}\n");
        let content = "a\nb\nc\nMIDDLE\nx\ny\nz\n";
        let error = apply_hunks(content, &[hunk(None, "a\nb\nc\nmiddle\nx\ny\nz\n", "gone\n")]).unwrap_err();
        let HunkFailure::Refused(MatchFailure::NoMatch { closest: Some(region), diff }) = &error.failure else {
            panic!("{error:?}")
        };
        assert_eq!((region.start_line, region.end_line), (1, 7));
        assert!(diff.contains("-middle\n+MIDDLE"), "{diff}");
        assert!(!Strategy::WITHOUT_BLOCK_ANCHOR.contains(&Strategy::BlockAnchor));
    }

    #[test]
    fn crlf_content_keeps_crlf() {
        let content = "a\r\nb\r\nc\r\n";
        let hunks = hunks_of("*** Begin Patch\n*** Update File: f\n@@\n a\n-b\n+B\n+B2\n*** End Patch");
        assert_eq!(apply_hunks(content, &hunks).unwrap(), "a\r\nB\r\nB2\r\nc\r\n");
    }

    #[test]
    fn a_last_line_without_a_newline_can_be_changed() {
        let hunks = hunks_of("*** Begin Patch\n*** Update File: f\n@@\n a\n-b\n+c\n*** End of File\n*** End Patch");
        assert_eq!(apply_hunks("a\nb", &hunks).unwrap(), "a\nc");
    }

    #[test]
    fn no_hunks_leave_the_content_as_it_is() {
        assert_eq!(apply_hunks("a\n", &[]).unwrap(), "a\n");
    }

    #[test]
    fn line_position_helpers() {
        assert_eq!(line_start_at_or_after("ab\ncd", 0), 0);
        assert_eq!(line_start_at_or_after("ab\ncd", 1), 3);
        assert_eq!(line_start_at_or_after("ab\ncd", 3), 3);
        assert_eq!(line_start_at_or_after("ab\ncd", 4), 5);
        assert_eq!(line_start_at_or_after("ab", 9), 2);
        assert_eq!(start_of_last_lines("a\nb\nc\n", 2), 2);
        assert_eq!(start_of_last_lines("a\nb\nc", 1), 4);
        assert_eq!(start_of_last_lines("a\nb\n", 5), 0);
        assert_eq!(start_of_last_lines("a\n", 0), 2);
    }

    #[test]
    fn arbitrary_hunks_never_panic() {
        const PIECES: &[&str] = &["a", "b", " ", "\t", "\n", "\r\n", "é", "🦀", "{", "}"];
        let text = |rng: &mut StdRng, max: usize| -> String {
            (0..rng.random_range(0..max)).map(|_| PIECES[rng.random_range(0..PIECES.len())]).collect()
        };
        let mut rng = StdRng::seed_from_u64(5);
        for _ in 0..1500 {
            let content = text(&mut rng, 60);
            let hunks: Vec<Hunk> = (0..rng.random_range(0..4))
                .map(|_| Hunk {
                    context: rng.random_bool(0.3).then(|| text(&mut rng, 4)),
                    old: text(&mut rng, 12),
                    new: text(&mut rng, 12),
                    end_of_file: rng.random_bool(0.3),
                })
                .collect();
            match apply_hunks(&content, &hunks) {
                Ok(_) => {}
                Err(error) => assert!(error.hunk >= 1 && error.hunk <= hunks.len() && !error.to_string().is_empty()),
            }
        }
    }
}
