//! Rules for free text that every validator shares, stated so the API's JSON Schema can carry
//! them exactly: lengths count characters (as JSON Schema's `maxLength` does), and "blank"
//! means only spaces, tabs and line breaks (the `[^ \t\n\r\f\v]` pattern's complement).

/// Whether `text` holds nothing but spaces, tabs and line breaks (or nothing at all). The
/// schema twin of "not blank" is the pattern `[^ \t\n\r\f\v]`.
pub fn is_blank(text: &str) -> bool {
    text.chars().all(is_space)
}

/// A space, tab or line break: what [`is_blank`] text is made of (`[ \t\n\r\f\v]`).
pub fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// The line and column (both from 1; the column in characters) of byte `offset` in `text`,
/// as editors count them: where config and manifest errors point.
pub fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (before.matches('\n').count() + 1, before[line_start..].chars().count() + 1)
}

/// Unicode's bidirectional embedding, override and isolate controls (U+202A–U+202E,
/// U+2066–U+2069). They reorder what follows them, so a title holding one can show an operator
/// other words than it holds (U+202E before `gnp.exe` shows `exe.png`); titles refuse them. The marks
/// right-to-left writing needs (U+200E, U+200F, U+061C) are not among them.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// A title: one line, not blank, at most `max` characters, no bidirectional controls.
pub fn is_title(text: &str, max: usize) -> bool {
    !is_blank(text) && !longer_than(text, max) && !text.chars().any(|c| c.is_control() || is_bidi_control(c))
}

/// The JSON Schema twin of [`is_title`] (its length aside): something not blank, no line
/// break or other control character, no bidirectional control.
pub const TITLE_PATTERN: &str = r"^[^\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]*[^ \t\n\r\f\v\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069][^\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]*$";

/// Whether `text` is longer than `max` characters.
pub fn longer_than(text: &str, max: usize) -> bool {
    text.chars().nth(max).is_some()
}

/// The short form of an id, as operators see and type it: its last 8 hex digits (the random
/// part of a UUIDv7).
pub fn short_id(id: &str) -> String {
    let hex: Vec<char> = id.chars().filter(char::is_ascii_hexdigit).collect();
    hex[hex.len().saturating_sub(8)..].iter().collect()
}

/// `text` cut to its first `max` characters, with `…` when something was left out.
pub fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Dollars as an operator reads them: cents above a dollar, more digits below.
pub fn dollars(usd: f64) -> String {
    if usd >= 1.0 { format!("${usd:.2}") } else { format!("${usd:.4}") }
}

/// A count with its thousands separated (`12,345,678`), as refusals and pages write numbers.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_one_line_of_text_without_bidirectional_controls() {
        for title in ["Deploy", "نشر الإصدار", "mixed \u{200F}mark", "a\u{a0}b"] {
            assert!(is_title(title, 200), "{title:?}");
        }
        for bad in ["", "  ", "two\nlines", "tab\there", "\u{202E}gnp.exe", "x\u{2066}y", "nul\0"] {
            assert!(!is_title(bad, 200), "{bad:?}");
        }
        assert!(!is_title(&"x".repeat(201), 200));
    }

    #[test]
    fn blank_is_only_ascii_spaces_and_line_breaks() {
        for blank in ["", " ", "\t\r\n", "\x0b\x0c "] {
            assert!(is_blank(blank), "{blank:?}");
        }
        for text in ["a", " x ", "\u{a0}", "\u{3000}"] {
            assert!(!is_blank(text), "{text:?}");
        }
    }

    #[test]
    fn lengths_count_characters_not_bytes() {
        assert!(!longer_than("ééé", 3));
        assert!(longer_than("éééé", 3));
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(1_000), "1,000");
        assert_eq!(super::thousands(12_345_678), "12,345,678");
    }
}
