//! The multi-file patch format `apply_patch` takes, parsed into [`Patch`] without touching any
//! file:
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path/a.txt
//! +line one
//! *** Delete File: path/b.txt
//! *** Update File: path/c.txt
//! *** Move to: path/d.txt
//! @@ optional context text (e.g. a function signature)
//!  context line
//! -removed line
//! +added line
//! *** End of File
//! *** End Patch
//! ```
//!
//! Errors name the 1-based line and what was expected there, so a model can fix its patch.

use std::collections::HashMap;
use std::fmt;

/// A parsed patch: its file operations in the order written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// One operation per path; no two touch the same path.
    pub ops: Vec<FileOp>,
}

/// One file operation of a [`Patch`]. Paths are returned as written (trimmed): whether they are
/// relative and stay inside the workspace is the caller's check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    /// Create `path` with `content` (each `+` line, joined with `'\n'` and ending in one).
    Add {
        /// The file to create.
        path: String,
        /// Its whole content.
        content: String,
    },
    /// Delete `path`.
    Delete {
        /// The file to delete.
        path: String,
    },
    /// Change `path`: rename it to `move_to` when given, then apply `hunks` in order. No hunks
    /// with a `move_to` is a pure rename.
    Update {
        /// The file to change.
        path: String,
        /// Its new path, if it moves.
        move_to: Option<String>,
        /// The changes, in file order.
        hunks: Vec<Hunk>,
    },
}

impl FileOp {
    /// The path the operation acts on (for an update, the path before any move).
    pub fn path(&self) -> &str {
        match self {
            FileOp::Add { path, .. } | FileOp::Delete { path } | FileOp::Update { path, .. } => path,
        }
    }
}

/// One change inside an updated file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The text after `@@`, when there is any: a line (such as a function signature) that the
    /// change comes after, to tell apart places that look alike.
    pub context: Option<String>,
    /// The context and removed lines, in order, each ending in `'\n'`: the text to find.
    pub old: String,
    /// The context and added lines, in order, each ending in `'\n'`: the text to put in its place.
    pub new: String,
    /// Whether `*** End of File` closed the hunk: `old` is at the end of the file, and an empty
    /// `old` means "append".
    pub end_of_file: bool,
}

/// Why a patch could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The line at fault, from 1.
    pub line: usize,
    /// What was wrong and what was expected there.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "patch line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const BEGIN_WORDS: &str = "Begin Patch";
const END_WORDS: &str = "End Patch";
const ADD: &str = "Add File:";
const DELETE: &str = "Delete File:";
const UPDATE: &str = "Update File:";
const MOVE: &str = "Move to:";
const END_OF_FILE: &str = "End of File";

/// Parses a patch. Blank lines before `*** Begin Patch` and after `*** End Patch` are ignored,
/// and CRLF line endings are read as LF. Inside a hunk a completely empty line is an empty
/// context line; empty lines at the very start or end of a hunk are dropped (they would be
/// context on both sides, so the change is the same).
pub fn parse(text: &str) -> Result<Patch, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut parser = Parser { lines: &lines, at: 0 };
    parser.skip_blank_lines();
    parser.expect_begin()?;
    let mut ops = Vec::new();
    let mut claimed: HashMap<String, usize> = HashMap::new();
    loop {
        let Some(line) = parser.peek() else {
            return Err(parser.error_at_end(&format!("the patch ends without `{END}`")));
        };
        if matches!(header(line), Some(Header::EndPatch)) {
            break;
        }
        let header_line = parser.line_number();
        let op = parser.file_op()?;
        claim_paths(&op, header_line, &mut claimed)?;
        ops.push(op);
    }
    let end_line = parser.line_number();
    parser.at += 1;
    parser.expect_only_blank_lines_left()?;
    if ops.is_empty() {
        return Err(ParseError {
            line: end_line,
            message: "the patch has no file operation before `*** End Patch`".into(),
        });
    }
    Ok(Patch { ops })
}

/// Records the paths `op` touches (its path and any move target), refusing one already taken.
fn claim_paths(op: &FileOp, header_line: usize, claimed: &mut HashMap<String, usize>) -> Result<(), ParseError> {
    // A move to the file's own path is no second path.
    let move_to = match op {
        FileOp::Update { path, move_to: Some(target), .. } if target != path => Some(target.as_str()),
        _ => None,
    };
    for path in std::iter::once(op.path()).chain(move_to) {
        if let Some(earlier) = claimed.get(path) {
            return Err(ParseError {
                line: header_line,
                message: format!(
                    "`{path}` is already changed by the operation at line {earlier}; put all changes to one file in one operation"
                ),
            });
        }
        claimed.insert(path.to_string(), header_line);
    }
    Ok(())
}

/// The kinds of line a patch is made of, once `***` headers are told apart.
enum Header<'l> {
    Add(&'l str),
    Delete(&'l str),
    Update(&'l str),
    MoveTo(&'l str),
    EndOfFile,
    EndPatch,
    BeginPatch,
    Unknown,
}

fn header(line: &str) -> Option<Header<'_>> {
    let rest = line.strip_prefix("***")?.trim();
    let header = match rest {
        BEGIN_WORDS => Header::BeginPatch,
        END_WORDS => Header::EndPatch,
        END_OF_FILE => Header::EndOfFile,
        _ => {
            if let Some(path) = rest.strip_prefix(ADD) {
                Header::Add(path.trim())
            } else if let Some(path) = rest.strip_prefix(DELETE) {
                Header::Delete(path.trim())
            } else if let Some(path) = rest.strip_prefix(UPDATE) {
                Header::Update(path.trim())
            } else if let Some(path) = rest.strip_prefix(MOVE) {
                Header::MoveTo(path.trim())
            } else {
                Header::Unknown
            }
        }
    };
    Some(header)
}

/// What may come after a file's operation: named in errors.
const EXPECTED_OP: &str =
    "expected `*** Add File: PATH`, `*** Delete File: PATH`, `*** Update File: PATH` or `*** End Patch`";

struct Parser<'p> {
    lines: &'p [&'p str],
    /// Index of the next line to read.
    at: usize,
}

impl<'p> Parser<'p> {
    fn peek(&self) -> Option<&'p str> {
        self.lines.get(self.at).copied()
    }

    /// The 1-based number of the next line.
    fn line_number(&self) -> usize {
        self.at + 1
    }

    fn error(&self, message: impl Into<String>) -> ParseError {
        ParseError { line: self.line_number(), message: message.into() }
    }

    /// An error about the input running out, pinned to its last line.
    fn error_at_end(&self, message: &str) -> ParseError {
        ParseError { line: self.lines.len().max(1), message: message.into() }
    }

    fn skip_blank_lines(&mut self) {
        while self.peek().is_some_and(|line| line.trim().is_empty()) {
            self.at += 1;
        }
    }

    fn expect_begin(&mut self) -> Result<(), ParseError> {
        match self.peek() {
            Some(line) if matches!(header(line.trim_start()), Some(Header::BeginPatch)) => {
                self.at += 1;
                Ok(())
            }
            Some(_) => Err(self.error(format!("expected `{BEGIN}` as the first line"))),
            None => Err(self.error_at_end(&format!("the patch is empty; expected `{BEGIN}`"))),
        }
    }

    fn expect_only_blank_lines_left(&mut self) -> Result<(), ParseError> {
        self.skip_blank_lines();
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.error(format!("unexpected text after `{END}`; the patch must end there"))),
        }
    }

    fn file_op(&mut self) -> Result<FileOp, ParseError> {
        let line = self.peek().unwrap_or_default();
        match header(line) {
            Some(Header::Add(path)) => {
                let path = self.path_of(path, ADD)?;
                self.at += 1;
                Ok(FileOp::Add { path, content: self.added_content()? })
            }
            Some(Header::Delete(path)) => {
                let path = self.path_of(path, DELETE)?;
                self.at += 1;
                Ok(FileOp::Delete { path })
            }
            Some(Header::Update(path)) => {
                let path = self.path_of(path, UPDATE)?;
                self.update(path)
            }
            Some(Header::MoveTo(_)) => {
                Err(self.error(format!("`*** {MOVE}` must come right after `*** {UPDATE} PATH`")))
            }
            Some(Header::EndOfFile) => Err(self.error(format!("`*** {END_OF_FILE}` must close a hunk of an update"))),
            Some(Header::BeginPatch) => Err(self.error(format!("a second `{BEGIN}`; {EXPECTED_OP}"))),
            Some(Header::Unknown) => Err(self.error(format!("unknown header `{}`; {EXPECTED_OP}", line.trim_end()))),
            Some(Header::EndPatch) | None => Err(self.error(EXPECTED_OP)),
        }
    }

    fn path_of(&self, path: &str, header: &str) -> Result<String, ParseError> {
        if path.is_empty() {
            return Err(self.error(format!("expected a path after `*** {header}`")));
        }
        Ok(path.to_string())
    }

    /// The `+` lines of an added file, up to the next `***` header.
    fn added_content(&mut self) -> Result<String, ParseError> {
        let mut content = String::new();
        while let Some(line) = self.peek() {
            if line.starts_with("***") {
                break;
            }
            let Some(text) = line.strip_prefix('+') else {
                return Err(self.error("every line of an added file starts with `+` (or a `***` header ends the file)"));
            };
            content.push_str(text);
            content.push('\n');
            self.at += 1;
        }
        Ok(content)
    }

    fn update(&mut self, path: String) -> Result<FileOp, ParseError> {
        let header_line = self.line_number();
        self.at += 1;
        let move_to = match self.peek().and_then(header) {
            Some(Header::MoveTo(target)) => {
                let target = self.path_of(target, MOVE)?;
                self.at += 1;
                Some(target)
            }
            _ => None,
        };
        let hunks = self.hunks()?;
        if hunks.is_empty() && move_to.is_none() {
            return Err(ParseError {
                line: header_line,
                message: format!(
                    "`*** {UPDATE} {path}` has no hunk and no `*** {MOVE}`; add a hunk (`@@` then ` `, `-`, `+` lines)"
                ),
            });
        }
        Ok(FileOp::Update { path, move_to, hunks })
    }

    /// The hunks of an update, up to the next file operation or `*** End Patch`. The first hunk
    /// may leave out its `@@` line.
    fn hunks(&mut self) -> Result<Vec<Hunk>, ParseError> {
        let mut hunks = Vec::new();
        loop {
            let Some(line) = self.peek() else { return Ok(hunks) };
            let context = if let Some(text) = line.strip_prefix("@@") {
                self.at += 1;
                Some(context_of(text))
            } else if line.starts_with("***") {
                return Ok(hunks);
            } else if hunks.is_empty() {
                None
            } else {
                // Only `*** End of File` ends a hunk on anything but `@@` or a header.
                return Err(self.error(format!(
                    "expected `@@` to start the next hunk after `*** {END_OF_FILE}`, or a `***` header"
                )));
            };
            let hunk_line = self.line_number().saturating_sub(usize::from(context.is_some()));
            let body = self.hunk_body()?;
            match (context, body) {
                (context, Some(mut hunk)) => {
                    hunk.context = context.flatten();
                    hunks.push(hunk);
                }
                // Nothing but empty lines after the header: not a hunk, just spacing.
                (None, None) => {}
                (Some(_), None) => {
                    return Err(ParseError {
                        line: hunk_line,
                        message: "this hunk has no lines; expected ` ` (context), `-` (removed) or `+` (added) lines after `@@`"
                            .into(),
                    });
                }
            }
        }
    }

    /// The lines of one hunk, up to `@@` or a `***` header (`*** End of File` is taken as the
    /// hunk's last line). `None` when it has no line but empty ones.
    fn hunk_body(&mut self) -> Result<Option<Hunk>, ParseError> {
        let mut lines: Vec<HunkLine> = Vec::new();
        let mut end_of_file = false;
        while let Some(line) = self.peek() {
            if line.starts_with("@@") {
                break;
            }
            if line.starts_with("***") {
                if matches!(header(line), Some(Header::EndOfFile)) {
                    self.at += 1;
                    end_of_file = true;
                }
                break;
            }
            lines.push(self.hunk_line(line)?);
            self.at += 1;
        }
        // Completely empty lines at either end are spacing a model left between sections; as
        // context on both sides they would change nothing but what must match.
        let trailing = lines.iter().rev().take_while(|line| line.kind == LineKind::Unprefixed).count();
        lines.truncate(lines.len() - trailing);
        let leading = lines.iter().take_while(|line| line.kind == LineKind::Unprefixed).count();
        lines.drain(..leading);
        if lines.is_empty() {
            return Ok(None);
        }
        let mut hunk = Hunk { context: None, old: String::new(), new: String::new(), end_of_file };
        for line in lines {
            if line.kind != LineKind::Added {
                hunk.old.push_str(line.text);
                hunk.old.push('\n');
            }
            if line.kind != LineKind::Removed {
                hunk.new.push_str(line.text);
                hunk.new.push('\n');
            }
        }
        Ok(Some(hunk))
    }

    fn hunk_line(&self, line: &'p str) -> Result<HunkLine<'p>, ParseError> {
        let (kind, text) = if line.is_empty() {
            (LineKind::Unprefixed, "")
        } else if let Some(text) = line.strip_prefix(' ') {
            (LineKind::Context, text)
        } else if let Some(text) = line.strip_prefix('-') {
            (LineKind::Removed, text)
        } else if let Some(text) = line.strip_prefix('+') {
            (LineKind::Added, text)
        } else {
            return Err(self.error(
                "a hunk line starts with ` ` (context), `-` (removed) or `+` (added); \
                 a new hunk starts with `@@` and a new file with `***`",
            ));
        };
        Ok(HunkLine { kind, text })
    }
}

/// One line of a hunk, without its prefix.
struct HunkLine<'p> {
    kind: LineKind,
    text: &'p str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    Context,
    Removed,
    Added,
    /// A completely empty line: an empty context line.
    Unprefixed,
}

/// The context of a `@@` line: its text, trimmed; none when empty. A unified-diff range such
/// as `-12,7 +12,8 @@` is dropped (its numbers say nothing the matcher could use), keeping any
/// text after it as `git diff` writes a function name there.
fn context_of(text: &str) -> Option<String> {
    let text = text.trim();
    let text = match text.split_once("@@") {
        Some((range, after)) if is_unified_range(range) => after.trim(),
        _ => text,
    };
    (!text.is_empty()).then(|| text.to_string())
}

fn is_unified_range(text: &str) -> bool {
    let mut parts = text.split_whitespace();
    let is_range = |part: Option<&str>, sign: char| {
        part.and_then(|part| part.strip_prefix(sign))
            .is_some_and(|numbers| numbers.split(',').all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
    };
    is_range(parts.next(), '-') && is_range(parts.next(), '+') && parts.next().is_none()
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    use super::*;

    fn update(path: &str, move_to: Option<&str>, hunks: Vec<Hunk>) -> FileOp {
        FileOp::Update { path: path.into(), move_to: move_to.map(Into::into), hunks }
    }

    fn hunk(context: Option<&str>, old: &str, new: &str, end_of_file: bool) -> Hunk {
        Hunk { context: context.map(Into::into), old: old.into(), new: new.into(), end_of_file }
    }

    /// The error `text` fails with, as (line, message).
    fn error_of(text: &str) -> (usize, String) {
        let error = parse(text).unwrap_err();
        (error.line, error.message)
    }

    #[test]
    fn parses_every_operation() {
        let text = "*** Begin Patch
*** Add File: path/a.txt
+line one
+line two
*** Delete File: path/b.txt
*** Update File: path/c.txt
*** Move to: path/d.txt
@@ fn main() {
 context line
-removed line
+added line
*** End of File
*** End Patch
";
        let patch = parse(text).unwrap();
        assert_eq!(
            patch.ops,
            [
                FileOp::Add { path: "path/a.txt".into(), content: "line one\nline two\n".into() },
                FileOp::Delete { path: "path/b.txt".into() },
                update(
                    "path/c.txt",
                    Some("path/d.txt"),
                    vec![hunk(Some("fn main() {"), "context line\nremoved line\n", "context line\nadded line\n", true)]
                ),
            ]
        );
        assert_eq!(patch.ops[2].path(), "path/c.txt");
    }

    #[test]
    fn several_hunks_and_a_first_hunk_without_at_at() {
        let text = "*** Begin Patch\n*** Update File: f\n a\n-b\n+B\n@@\n c\n-d\n@@ section two\n+e\n*** End Patch";
        let patch = parse(text).unwrap();
        let hunks = vec![
            hunk(None, "a\nb\n", "a\nB\n", false),
            hunk(None, "c\nd\n", "c\n", false),
            hunk(Some("section two"), "", "e\n", false),
        ];
        assert_eq!(patch.ops, [update("f", None, hunks)]);
    }

    #[test]
    fn a_pure_rename_has_no_hunks() {
        let patch = parse("*** Begin Patch\n*** Update File: old.md\n*** Move to: new.md\n*** End Patch\n").unwrap();
        assert_eq!(patch.ops, [update("old.md", Some("new.md"), vec![])]);
    }

    #[test]
    fn end_of_file_closes_a_hunk_and_another_may_follow_only_after_at_at() {
        let text = "*** Begin Patch\n*** Update File: f\n@@\n+tail\n*** End of File\n@@ x\n-y\n*** End Patch\n";
        let patch = parse(text).unwrap();
        let hunks = vec![hunk(None, "", "tail\n", true), hunk(Some("x"), "y\n", "", false)];
        assert_eq!(patch.ops, [update("f", None, hunks)]);
    }

    #[test]
    fn an_empty_add_creates_an_empty_file() {
        let patch = parse("*** Begin Patch\n*** Add File: empty\n*** End Patch").unwrap();
        assert_eq!(patch.ops, [FileOp::Add { path: "empty".into(), content: String::new() }]);
    }

    #[test]
    fn crlf_and_surrounding_blank_lines_are_tolerated() {
        let lf = "*** Begin Patch\n*** Update File: f\n@@ ctx\n a\n-b\n+c\n*** End Patch\n";
        let crlf = format!("\r\n  \n{}\r\n\r\n", lf.replace('\n', "\r\n"));
        assert_eq!(parse(&crlf).unwrap(), parse(lf).unwrap());
    }

    #[test]
    fn an_empty_line_inside_a_hunk_is_an_empty_context_line() {
        let text = "*** Begin Patch\n*** Update File: f\n@@\n a\n\n-b\n+c\n*** End Patch";
        let patch = parse(text).unwrap();
        assert_eq!(patch.ops, [update("f", None, vec![hunk(None, "a\n\nb\n", "a\n\nc\n", false)])]);
    }

    #[test]
    fn empty_lines_at_the_ends_of_a_hunk_are_dropped() {
        let text =
            "*** Begin Patch\n*** Update File: f\n\n-b\n+c\n\n\n*** Update File: g\n@@\n\n+d\n\n@@\n-e\n*** End Patch";
        let patch = parse(text).unwrap();
        assert_eq!(
            patch.ops,
            [
                update("f", None, vec![hunk(None, "b\n", "c\n", false)]),
                update("g", None, vec![hunk(None, "", "d\n", false), hunk(None, "e\n", "", false)]),
            ]
        );
    }

    #[test]
    fn paths_are_trimmed_and_returned_as_written() {
        let patch = parse("*** Begin Patch\n*** Delete File:   /abs/../x y.txt  \n*** End Patch").unwrap();
        assert_eq!(patch.ops, [FileOp::Delete { path: "/abs/../x y.txt".into() }]);
    }

    #[test]
    fn a_unified_diff_range_is_not_taken_as_context() {
        let text = "*** Begin Patch\n*** Update File: f\n@@ -1,3 +1,4 @@\n-a\n@@ -9 +10 @@ fn g()\n-b\n*** End Patch";
        let Some(FileOp::Update { hunks, .. }) = parse(text).unwrap().ops.into_iter().next() else { panic!() };
        assert_eq!(hunks[0].context, None);
        assert_eq!(hunks[1].context.as_deref(), Some("fn g()"));
        assert_eq!(context_of(" @@ odd @@ "), Some("@@ odd @@".into()));
    }

    #[test]
    fn hunk_lines_keep_their_own_whitespace() {
        let text = "*** Begin Patch\n*** Update File: f\n@@\n-\tx  \n+  y\t\n*** End Patch";
        let Some(FileOp::Update { hunks, .. }) = parse(text).unwrap().ops.into_iter().next() else { panic!() };
        assert_eq!((hunks[0].old.as_str(), hunks[0].new.as_str()), ("\tx  \n", "  y\t\n"));
    }

    // Errors name the line.

    #[test]
    fn a_missing_begin_is_refused_at_the_first_text_line() {
        let (line, message) = error_of("\n\nhello\n*** End Patch");
        assert_eq!(line, 3);
        assert!(message.contains("expected `*** Begin Patch`"), "{message}");
        assert_eq!(error_of("").0, 1);
        assert!(error_of("  \n").1.contains("empty"));
    }

    #[test]
    fn a_missing_end_is_refused_at_the_last_line() {
        let (line, message) = error_of("*** Begin Patch\n*** Delete File: a\n");
        assert_eq!(line, 2);
        assert!(message.contains("without `*** End Patch`"), "{message}");
        let (line, _) = error_of("*** Begin Patch\n*** Update File: a\n@@\n-x\n");
        assert_eq!(line, 4);
    }

    #[test]
    fn an_unknown_header_is_refused() {
        let (line, message) = error_of("*** Begin Patch\n*** Delete File: a\n*** Rename File: b\n*** End Patch");
        assert_eq!(line, 3);
        assert!(message.contains("unknown header `*** Rename File: b`"), "{message}");
        let (line, _) = error_of("*** Begin Patch\n*** Update File: a\n@@\n-x\n*** Nope\n*** End Patch");
        assert_eq!(line, 5);
    }

    #[test]
    fn a_hunk_line_without_a_prefix_is_refused() {
        let (line, message) = error_of("*** Begin Patch\n*** Update File: a\n@@\n x\nnot prefixed\n*** End Patch");
        assert_eq!(line, 5);
        assert!(message.contains("` ` (context), `-` (removed) or `+` (added)"), "{message}");
    }

    #[test]
    fn an_add_line_without_plus_is_refused() {
        let (line, message) = error_of("*** Begin Patch\n*** Add File: a\n+ok\n\n*** End Patch");
        assert_eq!(line, 4);
        assert!(message.contains("starts with `+`"), "{message}");
        assert_eq!(error_of("*** Begin Patch\n*** Add File: a\n ok\n*** End Patch").0, 3);
    }

    #[test]
    fn two_operations_on_one_path_are_refused() {
        let (line, message) = error_of("*** Begin Patch\n*** Delete File: a\n*** Add File: a\n+x\n*** End Patch");
        assert_eq!(line, 3);
        assert!(message.contains("`a` is already changed by the operation at line 2"), "{message}");
        let text = "*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** Add File: b\n*** End Patch";
        assert_eq!(error_of(text).0, 4);
    }

    #[test]
    fn a_move_to_the_same_path_is_no_conflict() {
        let patch = parse("*** Begin Patch\n*** Update File: a\n*** Move to: a\n*** End Patch").unwrap();
        assert_eq!(patch.ops, [update("a", Some("a"), vec![])]);
    }

    #[test]
    fn empty_paths_are_refused() {
        let (line, message) = error_of("*** Begin Patch\n*** Delete File:   \n*** End Patch");
        assert_eq!(line, 2);
        assert!(message.contains("expected a path after `*** Delete File:`"), "{message}");
        assert_eq!(error_of("*** Begin Patch\n*** Add File:\n*** End Patch").0, 2);
        assert_eq!(error_of("*** Begin Patch\n*** Update File: a\n*** Move to:\n*** End Patch").0, 3);
    }

    #[test]
    fn an_update_with_no_hunk_and_no_move_is_refused() {
        let (line, message) = error_of("*** Begin Patch\n*** Update File: a\n\n*** End Patch");
        assert_eq!(line, 2);
        assert!(message.contains("has no hunk and no `*** Move to:`"), "{message}");
    }

    #[test]
    fn a_hunk_with_no_lines_is_refused() {
        let (line, message) = error_of("*** Begin Patch\n*** Update File: a\n@@ one\n@@ two\n-x\n*** End Patch");
        assert_eq!(line, 3);
        assert!(message.contains("no lines"), "{message}");
    }

    #[test]
    fn move_to_out_of_place_is_refused() {
        let (line, message) = error_of("*** Begin Patch\n*** Update File: a\n@@\n-x\n*** Move to: b\n*** End Patch");
        assert_eq!(line, 5);
        assert!(message.contains("right after `*** Update File: PATH`"), "{message}");
    }

    #[test]
    fn end_of_file_outside_a_hunk_is_refused() {
        let (line, message) = error_of("*** Begin Patch\n*** Delete File: a\n*** End of File\n*** End Patch");
        assert_eq!(line, 3);
        assert!(message.contains("must close a hunk"), "{message}");
    }

    #[test]
    fn a_line_after_end_of_file_must_start_a_hunk() {
        let (line, message) =
            error_of("*** Begin Patch\n*** Update File: a\n@@\n+x\n*** End of File\n y\n*** End Patch");
        assert_eq!(line, 6);
        assert!(message.contains("expected `@@`"), "{message}");
    }

    #[test]
    fn text_after_end_patch_is_refused() {
        let (line, message) = error_of("*** Begin Patch\n*** Delete File: a\n*** End Patch\n\nmore\n");
        assert_eq!(line, 5);
        assert!(message.contains("after `*** End Patch`"), "{message}");
    }

    #[test]
    fn a_second_begin_and_an_empty_patch_are_refused() {
        assert_eq!(error_of("*** Begin Patch\n*** Begin Patch\n*** End Patch").0, 2);
        let (line, message) = error_of("*** Begin Patch\n*** End Patch");
        assert_eq!(line, 2);
        assert!(message.contains("no file operation"), "{message}");
    }

    #[test]
    fn a_stray_line_between_operations_is_refused() {
        let (line, message) = error_of("*** Begin Patch\n*** Delete File: a\nstray\n*** End Patch");
        assert_eq!(line, 3);
        assert!(message.contains("expected `*** Add File: PATH`"), "{message}");
    }

    #[test]
    fn the_error_display_names_the_line() {
        let error = parse("nope").unwrap_err();
        assert_eq!(error.to_string(), "patch line 1: expected `*** Begin Patch` as the first line");
    }

    #[test]
    fn arbitrary_input_never_panics_and_errors_point_at_real_lines() {
        const PIECES: &[&str] = &[
            "*** Begin Patch",
            "*** End Patch",
            "*** Add File: a",
            "*** Delete File: b",
            "*** Update File: c",
            "*** Move to: d",
            "*** End of File",
            "*** ",
            "@@",
            "@@ ctx",
            "@@ -1 +1 @@",
            " x",
            "-é",
            "+🦀",
            "",
            "\t",
            "plain",
            "\r",
        ];
        let mut rng = StdRng::seed_from_u64(4);
        for _ in 0..2000 {
            let mut lines: Vec<&str> =
                (0..rng.random_range(0..12)).map(|_| PIECES[rng.random_range(0..PIECES.len())]).collect();
            if rng.random_bool(0.7) {
                lines.insert(0, "*** Begin Patch");
            }
            if rng.random_bool(0.7) {
                lines.push("*** End Patch");
            }
            let eol = if rng.random_bool(0.2) { "\r\n" } else { "\n" };
            let text = lines.join(eol);
            if let Err(error) = parse(&text) {
                assert!(error.line >= 1 && error.line <= text.lines().count().max(1), "{text:?}: {error}");
            }
        }
    }
}
