//! Long text cut into messages a platform accepts.

/// `text` in parts of at most `limit` characters, cut at the last line break within the limit,
/// else the last space, else at the limit itself. The cut whitespace is dropped; nothing else
/// is lost, and the parts are in order. Empty text is one empty part.
pub(super) fn split(text: &str, limit: usize) -> Vec<String> {
    let limit = limit.max(1);
    let mut parts = Vec::new();
    let mut rest = text;
    while rest.chars().count() > limit {
        // The byte offset just past `limit` characters.
        let end = rest.char_indices().nth(limit).map_or(rest.len(), |(i, _)| i);
        let window = &rest[..end];
        let cut = window.rfind('\n').filter(|&i| i > 0).or_else(|| window.rfind(' ').filter(|&i| i > 0));
        match cut {
            Some(i) => {
                parts.push(window[..i].to_string());
                rest = &rest[i + 1..];
            }
            None => {
                parts.push(window.to_string());
                rest = &rest[end..];
            }
        }
    }
    parts.push(rest.to_string());
    parts
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn short_text_is_one_part() {
        assert_eq!(split("hello", 10), ["hello"]);
        assert_eq!(split("", 10), [""]);
    }

    #[test]
    fn long_text_is_cut_at_lines_then_spaces_then_characters() {
        assert_eq!(split("one two\nthree four", 12), ["one two", "three four"]);
        assert_eq!(split("one two three four", 9), ["one two", "three", "four"]);
        assert_eq!(split("abcdefghij", 4), ["abcd", "efgh", "ij"]);
    }

    #[test]
    fn every_part_fits_and_no_word_is_lost() {
        let text = "Die Grüße über 😀 emoji und Umlaute. ".repeat(300);
        for limit in [1, 7, 100, 4096] {
            let parts = split(&text, limit);
            assert!(parts.iter().all(|p| p.chars().count() <= limit), "limit {limit}");
            let words: Vec<&str> = text.split_whitespace().collect();
            let joined = parts.join(" ");
            if limit > 10 {
                assert_eq!(joined.split_whitespace().collect::<Vec<_>>(), words, "limit {limit}");
            } else {
                let no_space = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
                assert_eq!(no_space(&joined), no_space(&text), "limit {limit}");
            }
        }
    }
}
