//! The bounded fuzzy find-and-replace behind `skill_evolve_patch`, `edit_file mode=patch` and
//! each hunk of `apply_patch`.
//!
//! `old` is looked for with up to five [`Strategy`]s, from strict to loose; the first strategy
//! that finds it wins. Fuzziness is bounded on purpose: a strategy that finds `old` in more than
//! one place refuses rather than guess (and no looser strategy is tried after it), and when no
//! strategy finds it the refusal shows the closest region of the body and the diff from `old`
//! to it, so the next turn can see the drift instead of receiving a best-effort merge.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;

use similar::TextDiff;

use super::diff;
use crate::text::shorten;

/// One way of finding `old` in a body, from strict to loose. Every strategy but [`Exact`]
/// compares whole lines and replaces whole lines.
///
/// [`Exact`]: Strategy::Exact
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// `old` is a byte-identical substring of the body.
    Exact,
    /// Whole lines equal once trailing whitespace (and so a `\r`) is dropped from each.
    LineTrimmed,
    /// Whole lines equal once, on each line, the runs of spaces and tabs after the indentation
    /// fold to one space and trailing whitespace is dropped. The indentation itself must still
    /// be identical: a difference there is [`IndentFlexible`](Strategy::IndentFlexible)'s job,
    /// which also re-indents the replacement.
    WhitespaceNormalised,
    /// Whole lines equal once each line's indentation is ignored too (and in-line whitespace
    /// folded as in `WhitespaceNormalised`). `new` is re-indented to sit at the body's
    /// indentation.
    IndentFlexible,
    /// Only the first and last `anchor_lines` lines of `old` (trimmed) are found in the body;
    /// everything between them is replaced. Bounded by the region's size.
    BlockAnchor,
}

impl Strategy {
    /// All five strategies in the order they are tried: the default for skill bodies.
    pub const ALL: &'static [Strategy] = &[
        Strategy::Exact,
        Strategy::LineTrimmed,
        Strategy::WhitespaceNormalised,
        Strategy::IndentFlexible,
        Strategy::BlockAnchor,
    ];

    /// The first four strategies: code hunks carry their whole context, so an anchor-only
    /// match would replace lines the hunk never showed.
    pub const WITHOUT_BLOCK_ANCHOR: &'static [Strategy] =
        &[Strategy::Exact, Strategy::LineTrimmed, Strategy::WhitespaceNormalised, Strategy::IndentFlexible];

    /// The strategy's name as refusals print it.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Exact => "exact",
            Strategy::LineTrimmed => "line-trimmed",
            Strategy::WhitespaceNormalised => "whitespace-normalised",
            Strategy::IndentFlexible => "indent-flexible",
            Strategy::BlockAnchor => "block-anchor",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How [`replace`] looks for `old`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatchOptions {
    /// How many lines at each end of `old` anchor a [`Strategy::BlockAnchor`] match; 0 turns
    /// that strategy off.
    pub anchor_lines: usize,
    /// The strategies to try, in this order.
    pub strategies: &'static [Strategy],
}

impl MatchOptions {
    /// Anchor lines at each end when nothing else is asked for.
    pub const DEFAULT_ANCHOR_LINES: usize = 3;

    /// Options for one hunk of `apply_patch`: every strategy but block-anchor.
    pub fn for_code_hunks() -> Self {
        MatchOptions { anchor_lines: Self::DEFAULT_ANCHOR_LINES, strategies: Strategy::WITHOUT_BLOCK_ANCHOR }
    }
}

impl Default for MatchOptions {
    /// All five strategies, anchored by 3 lines at each end.
    fn default() -> Self {
        MatchOptions { anchor_lines: Self::DEFAULT_ANCHOR_LINES, strategies: Strategy::ALL }
    }
}

/// A body after a successful replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    /// The whole body with `old` replaced by `new`.
    pub body: String,
    /// The strategy that found `old`.
    pub strategy: Strategy,
    /// The first line (from 1) of the original body that was replaced.
    pub start_line: usize,
    /// The last line (from 1, inclusive) of the original body that was replaced.
    pub end_line: usize,
    /// The bytes of the original body that were replaced. For every strategy but `Exact` they
    /// are whole lines, with the line ending of the last one.
    pub span: Range<usize>,
}

/// Lines of a body: where `old` was found, or the place closest to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// The first line, from 1.
    pub start_line: usize,
    /// The last line, from 1, inclusive.
    pub end_line: usize,
    /// The region's text. In an ambiguity's locations it is cut to
    /// [`Region::MAX_LOCATION_CHARS`] characters.
    pub text: String,
}

impl Region {
    /// How many characters of each ambiguous location's text are kept.
    pub const MAX_LOCATION_CHARS: usize = 200;

    fn lines_label(&self) -> String {
        if self.start_line == self.end_line {
            format!("line {}", self.start_line)
        } else {
            format!("lines {}-{}", self.start_line, self.end_line)
        }
    }
}

/// Why [`replace`] changed nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchFailure {
    /// `old` was empty, which would match everywhere.
    EmptyOld,
    /// `strategy` found `old` in several places; every one is listed. Looser strategies were not
    /// tried: they would only find more.
    Ambiguous {
        /// The strategy that found several places.
        strategy: Strategy,
        /// Every place it found, in body order.
        locations: Vec<Region>,
    },
    /// No strategy found `old`.
    NoMatch {
        /// The region of the body, as many lines long as `old`, most like `old`; `None` when no
        /// line of the body shares a word with `old`.
        closest: Option<Region>,
        /// The unified diff from `old` to `closest` (empty without one).
        diff: String,
    },
}

/// Ambiguous locations a refusal prints with their text; the rest are listed by line only.
const LOCATIONS_SHOWN_IN_FULL: usize = 10;

impl fmt::Display for MatchFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchFailure::EmptyOld => {
                f.write_str("`old` is empty, so it would match everywhere; copy the exact text to replace into `old`")
            }
            MatchFailure::Ambiguous { strategy, locations } => write_ambiguous(f, *strategy, locations),
            MatchFailure::NoMatch { closest: Some(region), diff } if diff.is_empty() => write!(
                f,
                "`old` was not found, so nothing was changed. The text at {} differs from `old` only in \
                 line endings or whitespace that the strategies tried do not ignore; copy `old` from it exactly.",
                region.lines_label()
            ),
            MatchFailure::NoMatch { closest: Some(region), diff } => write!(
                f,
                "`old` was not found, so nothing was changed. The closest text is at {} (1-based); \
                 the diff from `old` to it shows where the text drifted:\n{diff}\
                 Copy `old` from the current text and try again.",
                region.lines_label()
            ),
            MatchFailure::NoMatch { closest: None, .. } => f.write_str(
                "`old` was not found, and no line of the text shares a word with it, so nothing was changed; \
                 re-read the current text and copy `old` from it",
            ),
        }
    }
}

fn write_ambiguous(f: &mut fmt::Formatter<'_>, strategy: Strategy, locations: &[Region]) -> fmt::Result {
    writeln!(
        f,
        "`old` matches {} places (strategy {strategy}), so nothing was changed; \
         add neighbouring lines to `old` until it matches exactly one:",
        locations.len()
    )?;
    for region in locations.iter().take(LOCATIONS_SHOWN_IN_FULL) {
        writeln!(f, "- {}: {:?}", region.lines_label(), region.text)?;
    }
    if locations.len() > LOCATIONS_SHOWN_IN_FULL {
        let rest: Vec<String> = locations[LOCATIONS_SHOWN_IN_FULL..].iter().map(Region::lines_label).collect();
        writeln!(f, "- and {} more: {}", rest.len(), rest.join(", "))?;
    }
    Ok(())
}

impl std::error::Error for MatchFailure {}

/// Replaces the one place in `body` where `old` is found by `new`, trying
/// `options.strategies` in order.
///
/// An `Exact` match replaces exactly the bytes of `old` with `new`, byte for byte. The other
/// strategies replace whole lines; there `new` is read as lines too: one final line ending of
/// `new` is dropped and the body's own ending of the last replaced line is kept (so a match on a
/// last line without a newline stays without one), `new`'s line endings follow the body's (LF
/// or CRLF), and an empty `new` deletes the lines with their endings. `IndentFlexible` and
/// `BlockAnchor` also re-indent `new` (see [`Strategy::IndentFlexible`]).
pub fn replace(body: &str, old: &str, new: &str, options: &MatchOptions) -> Result<Replaced, MatchFailure> {
    let found = find(body, 0, old, new, options)?;
    Ok(Replaced {
        body: splice(body, &found.span, &found.replacement),
        strategy: found.strategy,
        start_line: found.start_line,
        end_line: found.end_line,
        span: found.span,
    })
}

/// Where `old` was found and the text that replaces it, before it is spliced in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Found {
    pub(super) span: Range<usize>,
    pub(super) replacement: String,
    pub(super) strategy: Strategy,
    pub(super) start_line: usize,
    pub(super) end_line: usize,
}

/// Finds `old` in `body` at or after byte `from` (line strategies: in lines starting at or after
/// it), with line numbers counted from the start of `body` so refusals point at real lines.
pub(super) fn find(
    body: &str,
    from: usize,
    old: &str,
    new: &str,
    options: &MatchOptions,
) -> Result<Found, MatchFailure> {
    if old.is_empty() {
        return Err(MatchFailure::EmptyOld);
    }
    let search = Search::new(body, from, old);
    for &strategy in options.strategies {
        let spots = search.spots(strategy, options.anchor_lines);
        match spots.as_slice() {
            [] => continue,
            [spot] => return Ok(search.found(strategy, spot, new)),
            _ => {
                let locations = spots.iter().map(|spot| search.location(spot)).collect();
                return Err(MatchFailure::Ambiguous { strategy, locations });
            }
        }
    }
    Err(search.no_match())
}

/// `body` with the bytes in `span` replaced by `replacement`.
pub(super) fn splice(body: &str, span: &Range<usize>, replacement: &str) -> String {
    let mut out = String::with_capacity(body.len() - span.len() + replacement.len());
    out.push_str(&body[..span.start]);
    out.push_str(replacement);
    out.push_str(&body[span.end..]);
    out
}

/// The line ending `text` uses, judged by its first line: `"\r\n"` or `"\n"` (also for a text
/// with a single unterminated line).
pub(super) fn line_ending_of(text: &str) -> &'static str {
    match text.find('\n') {
        Some(newline) if text[..newline].ends_with('\r') => "\r\n",
        _ => "\n",
    }
}

/// `text` with every line ending, LF or CRLF, turned into `eol`.
pub(super) fn with_line_ending(text: &str, eol: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    let mut pieces = text.split('\n').peekable();
    while let Some(piece) = pieces.next() {
        if pieces.peek().is_some() {
            out.push_str(piece.strip_suffix('\r').unwrap_or(piece));
            out.push_str(eol);
        } else {
            out.push_str(piece);
        }
    }
    out
}

/// One line of the body, as byte offsets: `start..content_end` is its text, `content_end..end`
/// its line ending (`"\n"`, `"\r\n"`, or nothing on a last line without one).
#[derive(Debug, Clone, Copy)]
struct Line {
    start: usize,
    content_end: usize,
    end: usize,
}

fn split_lines(body: &str) -> Vec<Line> {
    let mut lines = Vec::with_capacity(body.len() / 32 + 1);
    let mut start = 0;
    for piece in body.split_inclusive('\n') {
        let end = start + piece.len();
        let ending = if piece.ends_with("\r\n") { 2 } else { usize::from(piece.ends_with('\n')) };
        lines.push(Line { start, content_end: end - ending, end });
        start = end;
    }
    lines
}

/// Where one strategy found `old`: bytes for `Exact`, whole lines (indices into the body's
/// lines, inclusive) for the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Spot {
    Bytes(Range<usize>),
    Lines { first: usize, last: usize },
}

/// One search for `old` in a body, with the body's lines split once for every strategy.
struct Search<'a> {
    body: &'a str,
    lines: Vec<Line>,
    from: usize,
    /// The first line a line strategy may match: the first starting at or after `from`.
    first_line: usize,
    old: &'a str,
    old_lines: Vec<&'a str>,
    /// First lines of the windows where `IndentFlexible` finds `old`, computed once.
    indent_flexible_starts: OnceCell<Vec<usize>>,
}

impl<'a> Search<'a> {
    fn new(body: &'a str, from: usize, old: &'a str) -> Self {
        let from = char_boundary_at_or_after(body, from);
        let lines = split_lines(body);
        let first_line = lines.partition_point(|line| line.start < from);
        Search {
            body,
            lines,
            from,
            first_line,
            old,
            old_lines: old.lines().collect(),
            indent_flexible_starts: OnceCell::new(),
        }
    }

    fn line_text(&self, index: usize) -> &'a str {
        let line = self.lines[index];
        &self.body[line.start..line.content_end]
    }

    fn spots(&self, strategy: Strategy, anchor_lines: usize) -> Vec<Spot> {
        // A whitespace-only `old` would fuzzily match any run of blank lines: only `Exact` may
        // find it.
        let old_is_blank = self.old.trim().is_empty();
        match strategy {
            Strategy::Exact => self.exact_spots(),
            _ if old_is_blank => Vec::new(),
            Strategy::LineTrimmed | Strategy::WhitespaceNormalised | Strategy::IndentFlexible => {
                self.line_spots(strategy)
            }
            Strategy::BlockAnchor => self.anchor_spots(anchor_lines),
        }
    }

    /// Every occurrence of `old` at or after `from`, overlapping ones included: two overlapping
    /// occurrences are as ambiguous as two apart.
    fn exact_spots(&self) -> Vec<Spot> {
        let mut spots = Vec::new();
        let mut at = self.from;
        while let Some(offset) = self.body[at..].find(self.old) {
            let start = at + offset;
            spots.push(Spot::Bytes(start..start + self.old.len()));
            at = start + self.body[start..].chars().next().map_or(1, char::len_utf8);
        }
        spots
    }

    /// Windows of whole lines equal to `old` under `strategy`'s line key.
    ///
    /// The line keys only loosen from `LineTrimmed` to `WhitespaceNormalised` to
    /// `IndentFlexible`, so a window the stricter two find, `IndentFlexible` finds too. The body
    /// is therefore scanned once, with the loosest key, and the stricter strategies only check
    /// those few windows: on a repetitive body this saves two full scans.
    fn line_spots(&self, strategy: Strategy) -> Vec<Spot> {
        let old_keys: Vec<Cow<str>> = self.old_lines.iter().map(|line| line_key(strategy, line)).collect();
        let loose_starts = self.indent_flexible_starts.get_or_init(|| {
            let old_keys: Vec<Cow<str>> =
                self.old_lines.iter().map(|line| line_key(Strategy::IndentFlexible, line)).collect();
            let body_keys: Vec<Cow<str>> = (self.first_line..self.lines.len())
                .map(|index| line_key(Strategy::IndentFlexible, self.line_text(index)))
                .collect();
            window_matches(&body_keys, &old_keys).map(|offset| self.first_line + offset).collect()
        });
        loose_starts
            .iter()
            .filter(|&&first| {
                old_keys
                    .iter()
                    .enumerate()
                    .all(|(offset, key)| line_key(strategy, self.line_text(first + offset)) == *key)
            })
            .map(|&first| Spot::Lines { first, last: first + old_keys.len() - 1 })
            .collect()
    }

    /// Head blocks paired with the nearest tail block after each, kept when the region between
    /// them is no less than half and no more than twice as long as `old`.
    fn anchor_spots(&self, anchor_lines: usize) -> Vec<Spot> {
        let old_len = self.old_lines.len();
        if anchor_lines == 0 || old_len < anchor_lines.saturating_mul(2) {
            return Vec::new();
        }
        let head: Vec<&str> = self.old_lines[..anchor_lines].iter().map(|line| line.trim()).collect();
        let tail: Vec<&str> = self.old_lines[old_len - anchor_lines..].iter().map(|line| line.trim()).collect();
        // Blank anchors pin nothing down.
        if head.iter().all(|line| line.is_empty()) || tail.iter().all(|line| line.is_empty()) {
            return Vec::new();
        }
        let body: Vec<&str> = (self.first_line..self.lines.len()).map(|index| self.line_text(index).trim()).collect();
        let heads: Vec<usize> = window_matches(&body, &head).collect();
        if heads.is_empty() {
            return Vec::new();
        }
        let tails: Vec<usize> = window_matches(&body, &tail).collect();
        let allowed = old_len / 2..=old_len * 2;
        heads
            .into_iter()
            .filter_map(|head_start| {
                let after_head = head_start + anchor_lines;
                let tail_start = tails.get(tails.partition_point(|&tail_start| tail_start < after_head))?;
                let region_len = tail_start + anchor_lines - head_start;
                allowed.contains(&region_len).then_some(Spot::Lines {
                    first: self.first_line + head_start,
                    last: self.first_line + tail_start + anchor_lines - 1,
                })
            })
            .collect()
    }

    fn found(&self, strategy: Strategy, spot: &Spot, new: &str) -> Found {
        match spot {
            Spot::Bytes(span) => Found {
                span: span.clone(),
                replacement: new.to_string(),
                strategy,
                start_line: self.line_number_at(span.start),
                end_line: self.line_number_at(span.end.saturating_sub(1).max(span.start)),
            },
            &Spot::Lines { first, last } => Found {
                span: self.lines[first].start..self.lines[last].end,
                replacement: self.lines_replacement(strategy, first, last, new),
                strategy,
                start_line: first + 1,
                end_line: last + 1,
            },
        }
    }

    /// `new` made to replace body lines `first..=last`: see [`replace`] for the rules.
    fn lines_replacement(&self, strategy: Strategy, first: usize, last: usize, new: &str) -> String {
        if new.is_empty() {
            return String::new();
        }
        let core = strip_one_line_ending(new);
        let core = match strategy {
            Strategy::IndentFlexible | Strategy::BlockAnchor => match self.indents(first) {
                Some((old_indent, body_indent)) => Cow::Owned(reindent(core, old_indent, body_indent)),
                None => Cow::Borrowed(core),
            },
            _ => Cow::Borrowed(core),
        };
        let last_line = self.lines[last];
        let mut replacement = with_line_ending(&core, self.line_ending_near(first, last));
        replacement.push_str(&self.body[last_line.content_end..last_line.end]);
        replacement
    }

    /// The indentation of `old`'s first non-blank line and of the body line it matched (the
    /// match starting at body line `first` pairs lines one to one up to there).
    fn indents(&self, first: usize) -> Option<(&'a str, &'a str)> {
        let offset = self.old_lines.iter().position(|line| !line.trim().is_empty())?;
        let body_line = self.line_text(first + offset);
        Some((indentation(self.old_lines[offset]), indentation(body_line)))
    }

    /// The line ending of the replaced lines, or of the line before them when none of them has
    /// one (a single last line without a newline).
    fn line_ending_near(&self, first: usize, last: usize) -> &'a str {
        let ending_of = |line: Line| &self.body[line.content_end..line.end];
        (first..=last)
            .rev()
            .chain(first.checked_sub(1))
            .map(|index| ending_of(self.lines[index]))
            .find(|ending| !ending.is_empty())
            .unwrap_or("\n")
    }

    fn location(&self, spot: &Spot) -> Region {
        let (span, start_line, end_line) = match spot {
            Spot::Bytes(span) => {
                (span.clone(), self.line_number_at(span.start), self.line_number_at(span.end.saturating_sub(1)))
            }
            &Spot::Lines { first, last } => {
                (self.lines[first].start..self.lines[last].content_end, first + 1, last + 1)
            }
        };
        Region { start_line, end_line, text: shorten(&self.body[span], Region::MAX_LOCATION_CHARS) }
    }

    fn line_number_at(&self, offset: usize) -> usize {
        self.lines.partition_point(|line| line.start <= offset).max(1)
    }

    fn no_match(&self) -> MatchFailure {
        let Some((first, last)) = self.closest_lines() else {
            return MatchFailure::NoMatch { closest: None, diff: String::new() };
        };
        let text = &self.body[self.lines[first].start..self.lines[last].content_end];
        let region = Region { start_line: first + 1, end_line: last + 1, text: text.to_string() };
        let diff = diff::unified(
            &with_final_newline(&with_line_ending(self.old, "\n")),
            &with_final_newline(&with_line_ending(text, "\n")),
            "old",
            &format!("current text, {}", region.lines_label()),
        );
        MatchFailure::NoMatch { closest: Some(region), diff }
    }

    /// The body lines, as many as `old` has, most like `old`: a cheap score picks a few
    /// candidate windows, a line diff ranks them.
    fn closest_lines(&self) -> Option<(usize, usize)> {
        let available = self.lines.len().checked_sub(self.first_line)?;
        let window = self.old_lines.len().min(available);
        if window == 0 {
            return None;
        }
        let body: Vec<&str> = (self.first_line..self.lines.len()).map(|index| self.line_text(index)).collect();
        let old = self.old_lines.join("\n");
        let best = best_windows(&body, &self.old_lines, window)
            .into_iter()
            .map(|candidate| {
                let text = body[candidate.start..candidate.start + window].join("\n");
                (TextDiff::from_lines(old.as_str(), text.as_str()).ratio(), candidate)
            })
            // Most similar first, then the best cheap score, then the earliest.
            .max_by(|(a_ratio, a), (b_ratio, b)| {
                a_ratio.total_cmp(b_ratio).then(a.score.cmp(&b.score)).then(b.start.cmp(&a.start))
            })
            .map(|(_, candidate)| candidate)?;
        let first = self.first_line + best.start;
        Some((first, first + window - 1))
    }
}

/// Starting offsets of every window of `haystack` equal, element by element, to `needle`.
fn window_matches<'n, T: PartialEq>(haystack: &'n [T], needle: &'n [T]) -> impl Iterator<Item = usize> + 'n {
    // `windows(0)` panics; an empty needle matches nothing here.
    let size = needle.len().max(1);
    haystack
        .windows(size)
        .enumerate()
        .filter(move |(_, window)| !needle.is_empty() && *window == needle)
        .map(|(offset, _)| offset)
}

/// A line as `strategy` compares it.
fn line_key(strategy: Strategy, line: &str) -> Cow<'_, str> {
    match strategy {
        Strategy::Exact => Cow::Borrowed(line),
        Strategy::LineTrimmed => Cow::Borrowed(line.trim_end()),
        Strategy::WhitespaceNormalised => {
            let indent = indentation(line);
            let rest = &line[indent.len()..];
            if rest.is_empty() {
                Cow::Borrowed("")
            } else if is_folded(rest) {
                Cow::Borrowed(line)
            } else {
                Cow::Owned(format!("{indent}{}", fold_whitespace(rest)))
            }
        }
        Strategy::IndentFlexible => {
            let rest = line.trim_start();
            if is_folded(rest) { Cow::Borrowed(rest) } else { Cow::Owned(fold_whitespace(rest)) }
        }
        Strategy::BlockAnchor => Cow::Borrowed(line.trim()),
    }
}

/// Whether `text` has no leading or trailing whitespace and single spaces between its words,
/// so folding would not change it (saves an allocation on almost every line).
fn is_folded(text: &str) -> bool {
    let mut previous_was_space = true;
    for c in text.chars() {
        if c.is_whitespace() {
            if c != ' ' || previous_was_space {
                return false;
            }
            previous_was_space = true;
        } else {
            previous_was_space = false;
        }
    }
    !previous_was_space || text.is_empty()
}

fn fold_whitespace(text: &str) -> String {
    let mut folded = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !folded.is_empty() {
            folded.push(' ');
        }
        folded.push_str(word);
    }
    folded
}

fn indentation(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// `text` re-indented from `old_indent` (where `old` had its first non-blank line) to
/// `body_indent` (where the body has it). When one indentation extends the other, the
/// difference is added to, or taken from, the front of every non-blank line; otherwise (tabs
/// against spaces, say) lines starting with `old_indent` get `body_indent` in its place and other
/// lines are left alone. Blank lines stay as they are.
fn reindent(text: &str, old_indent: &str, body_indent: &str) -> String {
    if old_indent == body_indent {
        return text.to_string();
    }
    let lines: Vec<Cow<str>> = text.split('\n').map(|line| reindent_line(line, old_indent, body_indent)).collect();
    lines.join("\n")
}

fn reindent_line<'l>(line: &'l str, old_indent: &str, body_indent: &str) -> Cow<'l, str> {
    if line.trim().is_empty() {
        return Cow::Borrowed(line);
    }
    if let Some(extra) = body_indent.strip_prefix(old_indent) {
        return Cow::Owned(format!("{extra}{line}"));
    }
    if let Some(rest) = line.strip_prefix(old_indent) {
        return Cow::Owned(format!("{body_indent}{rest}"));
    }
    if let Some(extra) = old_indent.strip_prefix(body_indent) {
        // Shallower than `old`'s first line (a closing brace, say): take off as much of the
        // difference as the line has.
        let removable = common_prefix_len(line, extra);
        return Cow::Borrowed(&line[removable..]);
    }
    Cow::Borrowed(line)
}

fn common_prefix_len(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .take_while(|((_, x), y)| x == y)
        .map(|((index, x), _)| index + x.len_utf8())
        .last()
        .unwrap_or(0)
}

fn strip_one_line_ending(text: &str) -> &str {
    text.strip_suffix("\r\n").or_else(|| text.strip_suffix('\n')).unwrap_or(text)
}

fn with_final_newline(text: &str) -> String {
    if text.ends_with('\n') { text.to_string() } else { format!("{text}\n") }
}

fn char_boundary_at_or_after(text: &str, offset: usize) -> usize {
    (offset.min(text.len())..=text.len()).find(|&at| text.is_char_boundary(at)).unwrap_or(text.len())
}

/// A window of body lines and its cheap similarity score.
#[derive(Debug, Clone, Copy)]
struct Window {
    start: usize,
    score: usize,
}

/// How many windows the cheap score hands on to the line diff.
const CANDIDATE_WINDOWS: usize = 4;

/// An aligned identical line is worth this many shared words: it says the window is placed
/// right, not merely nearby.
const ALIGNED_LINE_WEIGHT: usize = 2;

/// The few `size`-line windows of `body` with the best cheap score (none when every score is
/// 0): shared words (split at ASCII whitespace; a multiset count, so typos and reflowed lines
/// still score), plus identical
/// non-blank lines at the same offset in the window as in `old`. One pass over the body.
fn best_windows(body: &[&str], old: &[&str], size: usize) -> Vec<Window> {
    let starts = body.len() + 1 - size;
    let mut scores = shared_word_scores(body, old, size);
    for (start, aligned) in aligned_line_counts(body, old, starts).into_iter().enumerate() {
        scores[start] += aligned * ALIGNED_LINE_WEIGHT;
    }
    let mut best: Vec<Window> = Vec::with_capacity(CANDIDATE_WINDOWS + 1);
    for (start, &score) in scores.iter().enumerate() {
        if score == 0 || best.len() == CANDIDATE_WINDOWS && best.last().is_some_and(|w| w.score >= score) {
            continue;
        }
        // Kept sorted by score, earlier windows first among equals.
        let at = best.partition_point(|w| w.score >= score);
        best.insert(at, Window { start, score });
        best.truncate(CANDIDATE_WINDOWS);
    }
    best
}

/// A map keyed by words and lines of text. The closest-region search looks up every word of a
/// 100 KB body; the standard SipHash (built to resist chosen keys, which matters little for a
/// bounded, one-off search) was most of its time, so this uses FNV-1a.
type WordMap<'w, V> = HashMap<&'w str, V, BuildHasherDefault<Fnv1a>>;

/// The FNV-1a hash, 64-bit.
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// For each window start, how many words the window shares with `old` (each word counted as
/// often as both have it), kept up to date as the window slides.
fn shared_word_scores(body: &[&str], old: &[&str], size: usize) -> Vec<usize> {
    let mut ids: WordMap<'_, usize> = WordMap::default();
    let mut wanted: Vec<usize> = Vec::new();
    for word in old.iter().flat_map(|line| line.split_ascii_whitespace()) {
        let next_id = ids.len();
        let id = *ids.entry(word).or_insert(next_id);
        if id == wanted.len() {
            wanted.push(0);
        }
        wanted[id] += 1;
    }
    // The ids of each body line's words that `old` has, flattened: line `i`'s are
    // `words[line_ends[i - 1]..line_ends[i]]`.
    let mut words: Vec<usize> = Vec::new();
    let mut line_ends: Vec<usize> = Vec::with_capacity(body.len());
    for line in body {
        words.extend(line.split_ascii_whitespace().filter_map(|word| ids.get(word).copied()));
        line_ends.push(words.len());
    }
    let line_words =
        |index: usize| &words[index.checked_sub(1).map_or(0, |previous| line_ends[previous])..line_ends[index]];
    let mut held = vec![0usize; wanted.len()];
    let mut shared = 0usize;
    let mut scores = Vec::with_capacity(body.len() + 1 - size);
    for index in 0..body.len() {
        for &id in line_words(index) {
            if held[id] < wanted[id] {
                shared += 1;
            }
            held[id] += 1;
        }
        if index >= size {
            for &id in line_words(index - size) {
                held[id] -= 1;
                if held[id] < wanted[id] {
                    shared -= 1;
                }
            }
        }
        if index + 1 >= size {
            scores.push(shared);
        }
    }
    scores
}

/// For each of the `starts` window starts, how many non-blank lines of `old` appear trimmed
/// at the same offset in the window.
fn aligned_line_counts(body: &[&str], old: &[&str], starts: usize) -> Vec<usize> {
    let mut offsets_of: WordMap<'_, Vec<usize>> = WordMap::default();
    for (offset, line) in old.iter().enumerate() {
        let line = line.trim();
        if !line.is_empty() {
            offsets_of.entry(line).or_default().push(offset);
        }
    }
    let mut counts = vec![0usize; starts];
    for (index, line) in body.iter().enumerate() {
        let Some(offsets) = offsets_of.get(line.trim()) else { continue };
        for &offset in offsets {
            if let Some(count) = index.checked_sub(offset).and_then(|start| counts.get_mut(start)) {
                *count += 1;
            }
        }
    }
    counts
}

/// A body of about 100 KB for timing the matcher's slowest path with [`worst_case_old`]: no
/// strategy finds `old`; the line strategies and block-anchor find its first three lines every
/// 40 lines (so each compares several lines there), block-anchor finds its tail only before
/// every head; and every window shares words with `old`, so the closest-region search has real
/// work to do. Deterministic.
pub fn worst_case_body() -> String {
    let mut body = String::with_capacity(110_000);
    for line in WORST_CASE_TAIL {
        body.push_str(line);
        body.push('\n');
    }
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut block = 0;
    while body.len() < 100_000 {
        for line in WORST_CASE_HEAD {
            body.push_str(line);
            body.push('\n');
        }
        for _ in 0..37 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let (a, b) = ((seed >> 33) % 50, (seed >> 45) % 50);
            body.push_str(&format!("        let value_{a} = compute(state, {b}, \"block {block}\");\n"));
        }
        block += 1;
    }
    body
}

/// The 40-line `old` that goes with [`worst_case_body`].
pub fn worst_case_old() -> String {
    let mut old: String = WORST_CASE_HEAD.iter().map(|line| format!("{line}\n")).collect();
    for n in 0..34 {
        old.push_str(&format!("        let value_{n} = compute(state, {}, \"block 7\"); // drifted\n", n + 1));
    }
    old.extend(WORST_CASE_TAIL.iter().map(|line| format!("{line}\n")));
    old
}

const WORST_CASE_HEAD: [&str; 3] =
    ["fn handle(state: &mut State) {", "    let ready = state.ready();", "    if ready {"];
const WORST_CASE_TAIL: [&str; 3] = ["    }", "    finish(state)", "}"];

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    use super::*;

    fn only(strategy: &'static [Strategy]) -> MatchOptions {
        MatchOptions { anchor_lines: MatchOptions::DEFAULT_ANCHOR_LINES, strategies: strategy }
    }

    /// Asserts that none of `strategies` alone finds `old` in `body`.
    fn assert_not_found_by(body: &str, old: &str, strategies: &[&'static [Strategy]]) {
        for &strategy in strategies {
            let result = replace(body, old, "unused", &only(strategy));
            assert!(matches!(result, Err(MatchFailure::NoMatch { .. })), "{strategy:?} should not match: {result:?}");
        }
    }

    const EXACT: &[Strategy] = &[Strategy::Exact];
    const LINE_TRIMMED: &[Strategy] = &[Strategy::LineTrimmed];
    const NORMALISED: &[Strategy] = &[Strategy::WhitespaceNormalised];
    const INDENT: &[Strategy] = &[Strategy::IndentFlexible];

    // Each strategy: a case only it matches, with the exact body it leaves.

    #[test]
    fn exact_replaces_a_substring_inside_a_line() {
        let body = "fn a() {\n    let x = 1;\n}\n";
        assert_not_found_by(body, "x = 1;", &[LINE_TRIMMED, NORMALISED, INDENT]);
        let replaced = replace(body, "x = 1;", "x = 2;", &MatchOptions::default()).unwrap();
        assert_eq!(replaced.strategy, Strategy::Exact);
        assert_eq!(replaced.body, "fn a() {\n    let x = 2;\n}\n");
        assert_eq!((replaced.start_line, replaced.end_line), (2, 2));
        assert_eq!(replaced.span, 17..23);
    }

    #[test]
    fn line_trimmed_ignores_trailing_whitespace() {
        let body = "alpha  \nbeta\t\ngamma\n";
        let old = "alpha\nbeta\n";
        assert_not_found_by(body, old, &[EXACT]);
        let replaced = replace(body, old, "ALPHA\nBETA\n", &MatchOptions::default()).unwrap();
        assert_eq!(replaced.strategy, Strategy::LineTrimmed);
        assert_eq!(replaced.body, "ALPHA\nBETA\ngamma\n");
        assert_eq!((replaced.start_line, replaced.end_line), (1, 2));
    }

    #[test]
    fn line_trimmed_keeps_crlf_line_endings() {
        let body = "one\r\ntwo\r\nthree\r\n";
        let old = "one\ntwo\n";
        assert_not_found_by(body, old, &[EXACT]);
        let replaced = replace(body, old, "1\n2\n", &MatchOptions::default()).unwrap();
        assert_eq!(replaced.strategy, Strategy::LineTrimmed);
        assert_eq!(replaced.body, "1\r\n2\r\nthree\r\n");
    }

    #[test]
    fn whitespace_normalised_folds_in_line_runs_and_tabs() {
        let body = "fn f() {\n    let  x =\t1;\n    y( );\n}\n";
        let old = "    let x = 1;\n    y( );\n";
        assert_not_found_by(body, old, &[EXACT, LINE_TRIMMED]);
        let replaced = replace(body, old, "    let x = 2;\n    y( );\n", &MatchOptions::default()).unwrap();
        assert_eq!(replaced.strategy, Strategy::WhitespaceNormalised);
        assert_eq!(replaced.body, "fn f() {\n    let x = 2;\n    y( );\n}\n");
        assert_eq!((replaced.start_line, replaced.end_line), (2, 3));
    }

    #[test]
    fn whitespace_normalised_still_requires_the_same_indentation() {
        let body = "  a  b\n";
        assert!(replace(body, "    a b\n", "x\n", &only(NORMALISED)).is_err());
        assert!(replace(body, "  a b\n", "x\n", &only(NORMALISED)).is_ok());
    }

    #[test]
    fn indent_flexible_reindents_new_to_the_body() {
        let body = "impl A {\n    fn f() {\n        go();\n    }\n}\n";
        let old = "fn f() {\n    go();\n}\n";
        assert_not_found_by(body, old, &[EXACT, LINE_TRIMMED, NORMALISED]);
        let replaced = replace(body, old, "fn f() {\n    stop();\n\n    go();\n}\n", &MatchOptions::default()).unwrap();
        assert_eq!(replaced.strategy, Strategy::IndentFlexible);
        assert_eq!(replaced.body, "impl A {\n    fn f() {\n        stop();\n\n        go();\n    }\n}\n");
        assert_eq!((replaced.start_line, replaced.end_line), (2, 4));
    }

    #[test]
    fn indent_flexible_removes_indentation_when_the_body_is_shallower() {
        let body = "fn f() {\n    go();\n}\n";
        let old = "        fn f() {\n            go();\n        }\n";
        let new = "        fn f() {\n            stop();\n        }\n    // shallower than old\n";
        let replaced = replace(body, old, new, &MatchOptions::default()).unwrap();
        assert_eq!(replaced.strategy, Strategy::IndentFlexible);
        assert_eq!(replaced.body, "fn f() {\n    stop();\n}\n// shallower than old\n");
    }

    #[test]
    fn indent_flexible_swaps_tabs_for_spaces_where_the_prefix_matches() {
        let body = "\tif x {\n\t\ty();\n\t}\n";
        let old = "    if x {\n        y();\n    }\n";
        let replaced = replace(body, old, "    if x {\n        z();\n    }\n", &MatchOptions::default()).unwrap();
        assert_eq!(replaced.strategy, Strategy::IndentFlexible);
        // Only the first line's indentation is known to correspond: "    " becomes "\t" wherever
        // a line starts with it, the rest of the line is kept.
        assert_eq!(replaced.body, "\tif x {\n\t    z();\n\t}\n");
    }

    fn anchored_body() -> &'static str {
        "intro\n## Steps\n1. open\n2. edit\n3. new middle\n4. other\n5. save\n6. close\n## End\noutro\n"
    }

    #[test]
    fn block_anchor_replaces_between_head_and_tail() {
        let old = "## Steps\n1. open\n2. edit\n3. drifted middle\n5. save\n6. close\n## End\n";
        let body = anchored_body();
        assert_not_found_by(body, old, &[EXACT, LINE_TRIMMED, NORMALISED, INDENT]);
        let replaced = replace(body, old, "## Steps\n1. do it\n## End\n", &MatchOptions::default()).unwrap();
        assert_eq!(replaced.strategy, Strategy::BlockAnchor);
        assert_eq!(replaced.body, "intro\n## Steps\n1. do it\n## End\noutro\n");
        assert_eq!((replaced.start_line, replaced.end_line), (2, 9));
    }

    #[test]
    fn block_anchor_needs_twice_anchor_lines() {
        let old = "## Steps\n1. open\n2. drift\n6. close\n## End\n";
        assert!(matches!(
            replace(anchored_body(), old, "x", &MatchOptions::default()),
            Err(MatchFailure::NoMatch { .. })
        ));
        let two = MatchOptions { anchor_lines: 2, ..MatchOptions::default() };
        let replaced = replace(anchored_body(), old, "x\n", &two).unwrap();
        assert_eq!(replaced.body, "intro\nx\noutro\n");
    }

    #[test]
    fn block_anchor_refuses_a_region_more_than_twice_as_long() {
        let filler: String = (0..20).map(|n| format!("filler {n}\n")).collect();
        let body = format!("a\nb\nc\n{filler}x\ny\nz\n");
        let old = "a\nb\nc\nmiddle\nx\ny\nz\n";
        let refusal = replace(&body, old, "new\n", &MatchOptions::default()).unwrap_err();
        assert!(matches!(refusal, MatchFailure::NoMatch { .. }), "{refusal:?}");
        let short_filler: String = (0..8).map(|n| format!("filler {n}\n")).collect();
        let body = format!("a\nb\nc\n{short_filler}x\ny\nz\n");
        assert_eq!(replace(&body, old, "new\n", &MatchOptions::default()).unwrap().body, "new\n");
    }

    #[test]
    fn block_anchor_refuses_a_region_less_than_half_as_long() {
        let middle: String = (0..20).map(|n| format!("old middle {n}\n")).collect();
        let old = format!("a\nb\nc\n{middle}x\ny\nz\n");
        let refusal = replace("a\nb\nc\nx\ny\nz\n", &old, "new\n", &MatchOptions::default()).unwrap_err();
        assert!(matches!(refusal, MatchFailure::NoMatch { .. }), "{refusal:?}");
    }

    #[test]
    fn block_anchor_pairs_each_head_with_the_nearest_tail() {
        let body = "a\nb\nc\n1\nx\ny\nz\nmid\na\nb\nc\n2\nx\ny\nz\n";
        let old = "a\nb\nc\n?\nx\ny\nz\n";
        let refusal = replace(body, old, "new\n", &MatchOptions::default()).unwrap_err();
        let MatchFailure::Ambiguous { strategy, locations } = refusal else { panic!("{refusal:?}") };
        assert_eq!(strategy, Strategy::BlockAnchor);
        let lines: Vec<(usize, usize)> = locations.iter().map(|l| (l.start_line, l.end_line)).collect();
        assert_eq!(lines, [(1, 7), (9, 15)]);
    }

    #[test]
    fn anchor_lines_zero_turns_block_anchor_off() {
        let old = "## Steps\n1. open\n2. edit\n3. drifted middle\n5. save\n6. close\n## End\n";
        let options = MatchOptions { anchor_lines: 0, ..MatchOptions::default() };
        assert!(matches!(replace(anchored_body(), old, "x", &options), Err(MatchFailure::NoMatch { .. })));
    }

    // Line handling.

    #[test]
    fn a_last_line_without_a_newline_stays_without_one() {
        let replaced = replace("a\nb  ", "b\n", "c\n", &MatchOptions::default()).unwrap();
        assert_eq!(replaced.strategy, Strategy::LineTrimmed);
        assert_eq!(replaced.body, "a\nc");
        assert_eq!(replaced.span, 2..5);
    }

    #[test]
    fn an_empty_new_deletes_whole_lines() {
        let replaced = replace("a\nb \nc\n", "b\n", "", &MatchOptions::default()).unwrap();
        assert_eq!(replaced.body, "a\nc\n");
    }

    #[test]
    fn new_without_a_final_newline_still_keeps_the_line_ending() {
        let replaced = replace("a\nb \nc\n", "b", "B1\nB2", &only(LINE_TRIMMED)).unwrap();
        assert_eq!(replaced.body, "a\nB1\nB2\nc\n");
    }

    #[test]
    fn a_crlf_new_follows_an_lf_body() {
        let replaced = replace("a\nb \nc\n", "b\n", "x\r\ny\r\n", &MatchOptions::default()).unwrap();
        assert_eq!(replaced.body, "a\nx\ny\nc\n");
    }

    #[test]
    fn exact_keeps_new_byte_for_byte() {
        let replaced = replace("a\r\nb\r\n", "a\r\n", "x\ny\n", &MatchOptions::default()).unwrap();
        assert_eq!(replaced.body, "x\ny\nb\r\n");
    }

    #[test]
    fn a_blank_old_is_only_matched_exactly() {
        assert!(matches!(
            replace("a\n\nb\n", "  \n", "x", &MatchOptions::default()),
            Err(MatchFailure::NoMatch { .. })
        ));
        let replaced = replace("a\n  \nb\n", "  \n", "x\n", &MatchOptions::default()).unwrap();
        assert_eq!((replaced.strategy, replaced.body.as_str()), (Strategy::Exact, "a\nx\nb\n"));
    }

    #[test]
    fn an_empty_old_is_refused() {
        assert_eq!(replace("abc", "", "x", &MatchOptions::default()), Err(MatchFailure::EmptyOld));
        assert!(MatchFailure::EmptyOld.to_string().contains("`old` is empty"));
    }

    #[test]
    fn strategies_are_tried_in_the_order_given() {
        let body = "x  \nx\n";
        let line_first: &'static [Strategy] = &[Strategy::LineTrimmed, Strategy::Exact];
        let refusal = replace(body, "x\n", "y\n", &only(line_first)).unwrap_err();
        assert!(matches!(refusal, MatchFailure::Ambiguous { strategy: Strategy::LineTrimmed, .. }), "{refusal:?}");
    }

    // Ambiguity.

    #[test]
    fn exact_ambiguity_lists_every_location() {
        let body = "let a = 1;\nlet b = 1;\nlet c = 2;\nlet d = 1;\n";
        let refusal = replace(body, "= 1;", "= 9;", &MatchOptions::default()).unwrap_err();
        let MatchFailure::Ambiguous { strategy, locations } = &refusal else { panic!("{refusal:?}") };
        assert_eq!(*strategy, Strategy::Exact);
        let lines: Vec<(usize, usize)> = locations.iter().map(|l| (l.start_line, l.end_line)).collect();
        assert_eq!(lines, [(1, 1), (2, 2), (4, 4)]);
        assert!(locations.iter().all(|l| l.text == "= 1;"));
        let message = refusal.to_string();
        assert!(message.contains("3 places (strategy exact)"), "{message}");
        assert!(message.contains("- line 1: \"= 1;\"") && message.contains("- line 4:"), "{message}");
    }

    #[test]
    fn overlapping_exact_occurrences_are_ambiguous() {
        let refusal = replace("aaa", "aa", "b", &MatchOptions::default()).unwrap_err();
        let MatchFailure::Ambiguous { locations, .. } = refusal else { panic!("{refusal:?}") };
        assert_eq!(locations.len(), 2);
    }

    #[test]
    fn an_ambiguous_strategy_does_not_fall_through_to_a_looser_one() {
        // Exact finds "x" twice; line-trimmed would find only line 1.
        let refusal = replace("x\nyx\n", "x", "z", &MatchOptions::default()).unwrap_err();
        assert!(matches!(refusal, MatchFailure::Ambiguous { strategy: Strategy::Exact, .. }), "{refusal:?}");
    }

    #[test]
    fn line_strategy_ambiguity_names_whole_line_ranges() {
        let body = "start\n  a \n  b\nmid\n  a\n  b  \nend\n";
        let refusal = replace(body, "  a\n  b\n", "c\n", &MatchOptions::default()).unwrap_err();
        let MatchFailure::Ambiguous { strategy, locations } = &refusal else { panic!("{refusal:?}") };
        assert_eq!(*strategy, Strategy::LineTrimmed);
        assert_eq!(locations[0], Region { start_line: 2, end_line: 3, text: "  a \n  b".into() });
        assert_eq!(locations[1], Region { start_line: 5, end_line: 6, text: "  a\n  b  ".into() });
        assert!(refusal.to_string().contains("lines 2-3") && refusal.to_string().contains("lines 5-6"));
    }

    #[test]
    fn indent_flexible_ambiguity_is_refused() {
        let body = "  go();\n        go();\n";
        let refusal = replace(body, "\tgo();\n", "stop();\n", &MatchOptions::default()).unwrap_err();
        assert!(matches!(refusal, MatchFailure::Ambiguous { strategy: Strategy::IndentFlexible, .. }), "{refusal:?}");
    }

    #[test]
    fn many_locations_are_all_kept_but_only_some_printed_in_full() {
        let body = "x\n".repeat(30);
        let refusal = replace(&body, "x", "y", &MatchOptions::default()).unwrap_err();
        let MatchFailure::Ambiguous { locations, .. } = &refusal else { panic!("{refusal:?}") };
        assert_eq!(locations.len(), 30);
        let message = refusal.to_string();
        assert!(message.contains("- and 20 more: line 11, line 12,") && message.ends_with("line 30\n"), "{message}");
    }

    #[test]
    fn location_text_is_bounded() {
        let long = "y".repeat(500);
        let body = format!("{long}\n{long}\n");
        let refusal = replace(&body, &long, "z", &MatchOptions::default()).unwrap_err();
        let MatchFailure::Ambiguous { locations, .. } = refusal else { panic!("{refusal:?}") };
        assert!(locations.iter().all(|l| l.text.chars().count() == Region::MAX_LOCATION_CHARS + 1));
    }

    // No match.

    #[test]
    fn no_match_shows_the_closest_region_and_the_drift() {
        let body =
            "# Title\n\nintro text\n\n## Usage\nrun the tool\nwith --fast\nthen check output\n\n## Notes\nnone\n";
        let old = "## Usage\nrun the tool\nwith --slow\nthen check output\n";
        let refusal = replace(body, old, "x", &MatchOptions::default()).unwrap_err();
        let MatchFailure::NoMatch { closest: Some(region), diff } = &refusal else { panic!("{refusal:?}") };
        assert_eq!((region.start_line, region.end_line), (5, 8));
        assert_eq!(region.text, "## Usage\nrun the tool\nwith --fast\nthen check output");
        assert!(diff.contains("\n-with --slow\n+with --fast\n"), "{diff}");
        let message = refusal.to_string();
        assert!(message.contains("lines 5-8") && message.contains("+with --fast"), "{message}");
    }

    #[test]
    fn no_match_finds_a_single_line_with_a_typo() {
        let body = "fn main() {\n    let total = add(1, 2);\n    println!(\"{total}\");\n}\n";
        let refusal = replace(body, "let totl = add(1, 2);", "x", &MatchOptions::default()).unwrap_err();
        let MatchFailure::NoMatch { closest: Some(region), diff } = &refusal else { panic!("{refusal:?}") };
        assert_eq!((region.start_line, region.end_line), (2, 2));
        assert!(diff.contains("-let totl = add(1, 2);\n+    let total = add(1, 2);"), "{diff}");
        assert!(refusal.to_string().contains("line 2 "), "{refusal}");
    }

    #[test]
    fn no_match_with_nothing_in_common_has_no_closest_region() {
        let refusal = replace("alpha beta\n", "gamma", "x", &MatchOptions::default()).unwrap_err();
        assert_eq!(refusal, MatchFailure::NoMatch { closest: None, diff: String::new() });
        assert!(refusal.to_string().contains("shares a word"));
        let refusal = replace("", "gamma", "x", &MatchOptions::default()).unwrap_err();
        assert_eq!(refusal, MatchFailure::NoMatch { closest: None, diff: String::new() });
    }

    #[test]
    fn no_match_prefers_the_aligned_window() {
        let old = "a1\na2\na3\na4\n";
        let body = "a1\nzz\nzz\nzz\nq\na1\na2\nX\na4\nq\n";
        let Err(MatchFailure::NoMatch { closest: Some(region), .. }) =
            replace(body, old, "x", &MatchOptions::default())
        else {
            panic!("expected no match")
        };
        assert_eq!((region.start_line, region.end_line), (6, 9));
    }

    #[test]
    fn no_match_that_differs_only_in_line_endings_says_so() {
        let exact_only = only(EXACT);
        let refusal = replace("a\r\nb\r\n", "a\nb\n", "x", &exact_only).unwrap_err();
        let MatchFailure::NoMatch { closest: Some(region), diff } = &refusal else { panic!("{refusal:?}") };
        assert_eq!(((region.start_line, region.end_line), diff.as_str()), ((1, 2), ""));
        assert!(refusal.to_string().contains("only in line endings"), "{refusal}");
    }

    #[test]
    fn no_match_in_a_body_shorter_than_old_uses_the_whole_body() {
        let Err(MatchFailure::NoMatch { closest: Some(region), .. }) =
            replace("one two\n", "one three\nfour\nfive\n", "x", &MatchOptions::default())
        else {
            panic!("expected no match")
        };
        assert_eq!((region.start_line, region.end_line), (1, 1));
    }

    #[test]
    fn the_worst_case_input_is_refused_after_every_strategy() {
        let (body, old) = (worst_case_body(), worst_case_old());
        assert!(body.len() >= 100_000);
        assert_eq!(old.lines().count(), 40);
        let Err(MatchFailure::NoMatch { closest: Some(region), diff }) =
            replace(&body, &old, "x", &MatchOptions::default())
        else {
            panic!("the worst case must end in a no-match with a closest region")
        };
        assert_eq!(region.end_line - region.start_line + 1, 40);
        assert!(!diff.is_empty());
    }

    // Search start (used by apply_hunks).

    #[test]
    fn find_from_an_offset_ignores_earlier_matches_and_keeps_absolute_lines() {
        let body = "x\ny\nx\ny\n";
        let found = find(body, 2, "x\n", "z\n", &MatchOptions::default()).unwrap();
        assert_eq!((found.start_line, found.span), (3, 4..6));
        let found = find("x \ny\nx \n", 2, "x\n", "z\n", &MatchOptions::default()).unwrap();
        assert_eq!((found.strategy, found.start_line), (Strategy::LineTrimmed, 3));
        let refusal = find(body, 5, "y\nq\n", "z", &MatchOptions::default()).unwrap_err();
        let MatchFailure::NoMatch { closest: Some(region), .. } = refusal else { panic!("{refusal:?}") };
        assert_eq!(region.start_line, 4);
    }

    #[test]
    fn find_from_inside_a_multibyte_character_does_not_panic() {
        let body = "é\né\n";
        let found = find(body, 1, "é", "e", &MatchOptions::default()).unwrap();
        assert_eq!(found.start_line, 2);
    }

    #[test]
    fn line_ending_helpers() {
        assert_eq!(line_ending_of("a\r\nb\n"), "\r\n");
        assert_eq!(line_ending_of("a\nb\r\n"), "\n");
        assert_eq!(line_ending_of("a"), "\n");
        assert_eq!(with_line_ending("a\nb\r\nc", "\r\n"), "a\r\nb\r\nc");
        assert_eq!(with_line_ending("a\r\nb\n", "\n"), "a\nb\n");
    }

    #[test]
    fn line_keys_only_loosen_from_strategy_to_strategy() {
        // `line_spots` relies on this: equal under a stricter key means equal under the looser.
        let mut rng = StdRng::seed_from_u64(6);
        let strict_to_loose = [Strategy::LineTrimmed, Strategy::WhitespaceNormalised, Strategy::IndentFlexible];
        for _ in 0..3000 {
            let (a, b) = (random_line(&mut rng), random_line(&mut rng));
            for pair in strict_to_loose.windows(2) {
                if line_key(pair[0], &a) == line_key(pair[0], &b) {
                    assert_eq!(line_key(pair[1], &a), line_key(pair[1], &b), "{a:?} {b:?} {pair:?}");
                }
            }
        }
    }

    #[test]
    fn whitespace_folding_helpers() {
        assert!(is_folded("a b c") && is_folded(""));
        assert!(!is_folded("a  b") && !is_folded("a\tb") && !is_folded(" a") && !is_folded("a "));
        assert_eq!(fold_whitespace(" a \t b  "), "a b");
        assert_eq!(line_key(Strategy::WhitespaceNormalised, "\t a  b \r"), "\t a b");
        assert_eq!(line_key(Strategy::WhitespaceNormalised, " \t "), "");
        assert_eq!(line_key(Strategy::IndentFlexible, "\t a  b \r"), "a b");
    }

    // Randomised properties, with fixed seeds.

    const WORDS: &[&str] = &["fn", "let", "x", "=", "1;", "{", "}", "é", "名前", "🦀", "return", "if", "ok", ""];

    fn random_line(rng: &mut StdRng) -> String {
        let indent = ["", " ", "  ", "    ", "\t", "\t "][rng.random_range(0..6)];
        let words: Vec<&str> = (0..rng.random_range(0..5)).map(|_| WORDS[rng.random_range(0..WORDS.len())]).collect();
        let separator = if rng.random_bool(0.2) { "  " } else { " " };
        let trailing = if rng.random_bool(0.2) { " \t" } else { "" };
        format!("{indent}{}{trailing}", words.join(separator))
    }

    fn random_body(rng: &mut StdRng, lines: Range<usize>) -> String {
        let lines = rng.random_range(lines);
        let eol = if rng.random_bool(0.3) { "\r\n" } else { "\n" };
        let mut body: String = (0..lines).map(|_| format!("{}{eol}", random_line(rng))).collect();
        if !body.is_empty() && rng.random_bool(0.3) {
            body.truncate(body.len() - eol.len());
        }
        body
    }

    /// Byte ranges of each line, line ending included, counted independently of the matcher.
    fn line_ranges(text: &str) -> Vec<Range<usize>> {
        let mut start = 0;
        text.split_inclusive('\n')
            .map(|line| {
                let range = start..start + line.len();
                start = range.end;
                range
            })
            .collect()
    }

    /// `old` taken from lines `first..=last` of `body`, disturbed the way a model's copy drifts.
    fn drifted_copy(rng: &mut StdRng, body: &str, first: usize, last: usize) -> String {
        let lines: Vec<&str> = body.lines().collect();
        let region = &lines[first..=last];
        match rng.random_range(0..5) {
            0 => region.join("\n"),
            1 => region.iter().map(|line| format!("{}\n", line.trim_end())).collect(),
            2 => region.iter().map(|line| format!("{}{}\n", indentation(line), fold_whitespace(line))).collect(),
            3 => region.iter().map(|line| format!("  {}\n", line.trim_start())).collect(),
            _ => {
                let mut copy: Vec<String> = region.iter().map(|line| line.to_string()).collect();
                let middle = copy.len() / 2;
                copy[middle] = "drifted line".into();
                copy.join("\n")
            }
        }
    }

    #[test]
    fn property_a_replacement_changes_only_the_matched_lines() {
        let mut rng = StdRng::seed_from_u64(1);
        let mut applied: HashMap<Strategy, usize> = HashMap::new();
        for _ in 0..600 {
            let body = random_body(&mut rng, 1..30);
            let line_count = body.lines().count();
            let first = rng.random_range(0..line_count);
            let last = rng.random_range(first..line_count.min(first + 8));
            let old = drifted_copy(&mut rng, &body, first, last);
            let new = random_body(&mut rng, 0..4);
            let anchor_lines = rng.random_range(0..3);
            let Ok(replaced) = replace(&body, &old, &new, &MatchOptions { anchor_lines, strategies: Strategy::ALL })
            else {
                continue;
            };
            *applied.entry(replaced.strategy).or_default() += 1;
            let ranges = line_ranges(&body);
            let before = &body[..ranges[replaced.start_line - 1].start];
            let after = &body[ranges[replaced.end_line - 1].end..];
            assert!(replaced.body.starts_with(before), "{body:?} {old:?} {new:?} -> {replaced:?}");
            assert!(replaced.body.ends_with(after), "{body:?} {old:?} {new:?} -> {replaced:?}");
            assert!(replaced.body.len() >= before.len() + after.len());
            let span = replaced.span.clone();
            assert!(replaced.body.starts_with(&body[..span.start]) && replaced.body.ends_with(&body[span.end..]));
        }
        // Every strategy must have been exercised, and most cases applied.
        assert!(Strategy::ALL.iter().all(|strategy| applied.get(strategy).is_some_and(|&n| n >= 5)), "{applied:?}");
        assert!(applied.values().sum::<usize>() > 300, "{applied:?}");
    }

    /// Occurrences of `needle` in `haystack`, overlapping ones included.
    fn occurrences(haystack: &str, needle: &str) -> usize {
        haystack.char_indices().filter(|(at, _)| haystack[*at..].starts_with(needle)).count()
    }

    fn random_substring(rng: &mut StdRng, text: &str) -> String {
        let boundaries: Vec<usize> = (0..=text.len()).filter(|&at| text.is_char_boundary(at)).collect();
        let start = boundaries[rng.random_range(0..boundaries.len())];
        let end = boundaries[rng.random_range(0..boundaries.len())];
        text[start.min(end)..start.max(end)].to_string()
    }

    #[test]
    fn property_b_exact_replacement_round_trips() {
        let mut rng = StdRng::seed_from_u64(2);
        let mut round_trips = 0;
        for _ in 0..800 {
            let body = random_body(&mut rng, 1..20);
            let old = random_substring(&mut rng, &body);
            let new = if rng.random_bool(0.5) { random_body(&mut rng, 1..3) } else { format!("<{old}>") };
            let Ok(forward) = replace(&body, &old, &new, &only(EXACT)) else { continue };
            if new.is_empty() || occurrences(&forward.body, &new) != 1 {
                continue;
            }
            let back = replace(&forward.body, &new, &old, &only(EXACT)).unwrap();
            assert_eq!(back.body, body, "old {old:?} new {new:?}");
            round_trips += 1;
        }
        assert!(round_trips > 300, "only {round_trips} round trips");
    }

    fn arbitrary_text(rng: &mut StdRng, max_chars: usize) -> String {
        const ALPHABET: &[&str] =
            &["a", "b", " ", "  ", "\t", "\n", "\r\n", "\r", "é", "名", "🦀", "{", "}", "-", "+", "@@"];
        (0..rng.random_range(0..max_chars)).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())]).collect()
    }

    #[test]
    fn property_c_arbitrary_input_never_panics() {
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..2000 {
            let body = arbitrary_text(&mut rng, 80);
            let old =
                if rng.random_bool(0.5) { random_substring(&mut rng, &body) } else { arbitrary_text(&mut rng, 20) };
            let new = arbitrary_text(&mut rng, 20);
            let options = MatchOptions { anchor_lines: rng.random_range(0..4), strategies: Strategy::ALL };
            match replace(&body, &old, &new, &options) {
                Ok(replaced) => assert!(replaced.start_line <= replaced.end_line),
                Err(refusal) => assert!(!refusal.to_string().is_empty()),
            }
            let from = rng.random_range(0..=body.len());
            let _ = find(&body, from, &old, &new, &options);
        }
    }
}
