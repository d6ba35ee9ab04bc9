//! One output stream of a child: the bytes kept (at most `[exec_policy] output_buffer_bytes`,
//! the oldest dropped first), where the agent's polls have read up to, and how much was
//! dropped before it read it.

use std::collections::VecDeque;

pub(crate) struct Stream {
    kept: VecDeque<u8>,
    /// How many bytes the stream has produced before `kept`'s first one.
    start: u64,
    /// The offset the agent's next poll reads from.
    cursor: u64,
    capacity: usize,
}

/// What one poll read of a stream.
pub(crate) struct Read {
    pub text: String,
    /// Output produced since the last poll that was dropped before this one could read it.
    pub dropped: u64,
    /// Unread output remains (the poll's `max_bytes` was reached).
    pub more: bool,
}

impl Stream {
    pub fn new(capacity: usize) -> Stream {
        Stream { kept: VecDeque::new(), start: 0, cursor: 0, capacity }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.kept.extend(bytes);
        let over = self.kept.len().saturating_sub(self.capacity);
        self.kept.drain(..over);
        self.start += over as u64;
    }

    fn end(&self) -> u64 {
        self.start + self.kept.len() as u64
    }

    pub fn unread(&self) -> u64 {
        self.end() - self.cursor.max(self.start)
    }

    /// Reads up to `max` bytes new since the last read, cut back to a whole character.
    pub fn read(&mut self, max: usize) -> Read {
        let dropped = self.start.saturating_sub(self.cursor);
        let from = self.cursor.max(self.start);
        let offset = (from - self.start) as usize;
        let available = self.kept.len() - offset;
        // A limit smaller than the character it would cut: that one character goes out whole.
        let first_char = self.kept.get(offset).map_or(1, |b| utf8_length(*b)).min(available);
        let max = max.max(first_char);
        let bytes: Vec<u8> = self.kept.range(offset..offset + available.min(max)).copied().collect();
        let whole = whole_characters(&bytes, available > max);
        self.cursor = from + whole as u64;
        Read { text: String::from_utf8_lossy(&bytes[..whole]).into_owned(), dropped, more: self.unread() > 0 }
    }

    /// The last `max` bytes kept, whatever the polls read (what the dashboard shows).
    pub fn tail(&self, max: usize) -> String {
        let skip = self.kept.len().saturating_sub(max);
        let bytes: Vec<u8> = self.kept.range(skip..).copied().collect();
        // A cut at the start may split a character: start at the next whole one.
        let first = bytes.iter().position(|b| (*b as i8) >= -0x40).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[first..]).into_owned()
    }
}

/// The length of the UTF-8 sequence `first` starts (1 for anything that starts none).
fn utf8_length(first: u8) -> usize {
    match first {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => 1,
    }
}

/// How many of `bytes` to hand out: all of them, except that a character cut by the read's
/// limit (`cut`) waits for the next read. Invalid UTF-8 is handed out (as U+FFFD) rather than
/// held back for ever.
fn whole_characters(bytes: &[u8], cut: bool) -> usize {
    if !cut {
        return bytes.len();
    }
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        // An incomplete character at the end (no error length) after some whole ones.
        Err(e) if e.error_len().is_none() && e.valid_up_to() > 0 => e.valid_up_to(),
        Err(_) => bytes.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_read_returns_only_what_is_new() {
        let mut s = Stream::new(100);
        s.push(b"one ");
        assert_eq!(s.read(100).text, "one ");
        assert_eq!(s.read(100).text, "");
        s.push(b"two");
        let r = s.read(2);
        assert_eq!((r.text.as_str(), r.more), ("tw", true));
        let r = s.read(100);
        assert_eq!((r.text.as_str(), r.more, r.dropped), ("o", false, 0));
    }

    #[test]
    fn the_oldest_unread_output_is_dropped_and_counted() {
        let mut s = Stream::new(4);
        s.push(b"abcdef");
        let r = s.read(100);
        assert_eq!((r.text.as_str(), r.dropped), ("cdef", 2));
        s.push(b"ghijkl");
        let r = s.read(100);
        assert_eq!((r.text.as_str(), r.dropped), ("ijkl", 2));
        assert_eq!(s.read(100).dropped, 0);
    }

    #[test]
    fn a_character_cut_by_the_limit_waits_for_the_next_read() {
        let mut s = Stream::new(100);
        s.push("aé".as_bytes()); // 'é' is two bytes
        let r = s.read(2);
        assert_eq!((r.text.as_str(), r.more), ("a", true));
        assert_eq!(s.read(2).text, "é");
        s.push("é".as_bytes());
        assert_eq!(s.read(1).text, "é", "a limit below one character reads that character");
        s.push(&[0xff, b'x']);
        assert_eq!(s.read(1).text, "\u{fffd}", "invalid bytes are not held back");
    }

    #[test]
    fn the_tail_starts_at_a_whole_character_and_ignores_the_cursor() {
        let mut s = Stream::new(100);
        s.push("ééé".as_bytes());
        s.read(100);
        assert_eq!(s.tail(3), "é");
        assert_eq!(s.tail(100), "ééé");
    }
}
