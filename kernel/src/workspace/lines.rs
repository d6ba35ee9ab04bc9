//! Reading a part of a text file line by line without holding the file: what `read_file`
//! answers from. Memory stays within the lines asked for (each kept to a bounded length),
//! whatever the file's size or the length of its lines; the rest of the file is only scanned,
//! to count its lines and to find a NUL byte (not text).

use std::io::{BufRead, BufReader, Read};

/// The lines `first..first + count` (numbered from 1) of a file, each at most `max_bytes`
/// bytes kept, and how many lines the file has.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Lines {
    /// The lines asked for, without their line ends; a line longer than the bound is kept
    /// to its first `max_bytes` bytes (cut at a character's end) and flagged.
    pub shown: Vec<(String, bool)>,
    pub total: usize,
}

/// Why a file's lines could not be read as text.
#[derive(Debug)]
pub enum NotLines {
    /// A NUL byte, or a shown line that is not UTF-8.
    Binary,
    Io(std::io::Error),
}

impl From<std::io::Error> for NotLines {
    fn from(e: std::io::Error) -> Self {
        NotLines::Io(e)
    }
}

/// Reads `source` to its end, keeping lines `first..first + count` (from 1) to `max_bytes`.
pub fn read(source: impl Read, first: usize, count: usize, max_bytes: usize) -> Result<Lines, NotLines> {
    let mut reader = BufReader::with_capacity(64 * 1024, source);
    let mut lines = Lines::default();
    let mut kept = Vec::new();
    loop {
        let number = lines.total + 1;
        let keep = if number >= first && number < first.saturating_add(count) { max_bytes } else { 0 };
        kept.clear();
        let Some(cut) = next_line(&mut reader, keep, &mut kept)? else { break };
        lines.total = number;
        if keep > 0 {
            lines.shown.push((text_of(&kept, cut)?, cut));
        }
    }
    Ok(lines)
}

/// Reads one line (through its `\n`, or to the end), keeping at most `keep` bytes of it in
/// `kept` without its line end. `None` at the end of the file; otherwise whether the line was
/// longer than what was kept.
fn next_line(reader: &mut impl BufRead, keep: usize, kept: &mut Vec<u8>) -> Result<Option<bool>, NotLines> {
    let (mut seen, mut longer) = (false, false);
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        seen = true;
        let (piece, ends) = match memchr(b'\n', chunk) {
            Some(at) => (&chunk[..at], at + 1),
            None => (chunk, chunk.len()),
        };
        if piece.contains(&0) {
            return Err(NotLines::Binary);
        }
        let room = keep.saturating_sub(kept.len());
        kept.extend_from_slice(&piece[..piece.len().min(room)]);
        longer |= piece.len() > room;
        let found_end = ends > piece.len();
        reader.consume(ends);
        if found_end {
            break;
        }
    }
    if !seen {
        return Ok(None);
    }
    if !longer && kept.last() == Some(&b'\r') {
        kept.pop();
    }
    Ok(Some(longer))
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|b| *b == needle)
}

/// The kept bytes as text: a line cut in the middle of a character ends before it.
fn text_of(kept: &[u8], cut: bool) -> Result<String, NotLines> {
    match std::str::from_utf8(kept) {
        Ok(text) => Ok(text.to_string()),
        Err(e) if cut && e.error_len().is_none() => Ok(String::from_utf8_lossy(&kept[..e.valid_up_to()]).into_owned()),
        Err(_) => Err(NotLines::Binary),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[u8], first: usize, count: usize, max: usize) -> Lines {
        read(text, first, count, max).unwrap()
    }

    #[test]
    fn counts_and_keeps_lines_as_str_lines_does() {
        for text in ["", "a", "a\n", "a\nb", "a\r\nb\r\n", "\n\n", "a\n\nb\n"] {
            let expected: Vec<(String, bool)> = text.lines().map(|l| (l.to_string(), false)).collect();
            let read = lines(text.as_bytes(), 1, 100, 100);
            assert_eq!((read.shown, read.total), (expected.clone(), expected.len()), "{text:?}");
        }
        let read = lines(b"one\ntwo\nthree\nfour\n", 2, 2, 100);
        assert_eq!(read.shown, [("two".to_string(), false), ("three".to_string(), false)]);
        assert_eq!(read.total, 4);
    }

    #[test]
    fn a_long_line_is_kept_to_the_bound_at_a_characters_end() {
        let text = format!("{}\nshort\n", "é".repeat(100_000));
        let read = lines(text.as_bytes(), 1, 2, 7);
        assert_eq!(read.shown, [("ééé".to_string(), true), ("short".to_string(), false)]);
        assert_eq!(read.total, 2);
    }

    #[test]
    fn a_nul_anywhere_or_a_shown_line_that_is_not_utf8_is_not_text() {
        assert!(matches!(read(&b"a\nb\0\nc"[..], 1, 1, 10), Err(NotLines::Binary)));
        assert!(matches!(read(&b"ok\n\xff\xfe\n"[..], 2, 1, 10), Err(NotLines::Binary)));
    }

    #[test]
    fn a_file_of_one_huge_line_is_read_to_its_bound() {
        // 64 MiB without a line end (the daemon's memory over such reads: `limits.rs`).
        let huge = std::io::repeat(b'x').take(64 << 20);
        let read = read(huge, 1, 1, 10).unwrap();
        assert_eq!(read.shown, [("x".repeat(10), true)]);
        assert_eq!(read.total, 1);
    }
}
