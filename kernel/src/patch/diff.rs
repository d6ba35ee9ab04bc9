//! Unified diffs between two texts: what a skill's history stores for each change and what a
//! refused patch shows, so the next turn can see exactly where the text drifted.

use similar::TextDiff;

/// Lines of unchanged context around each change, as `diff -u` and `git diff` print them.
const CONTEXT_LINES: usize = 3;

/// The unified diff from `old` to `new`, compared line by line, with 3 lines of context and the
/// headers `--- old_name` and `+++ new_name`. Identical texts give an empty string. A text that
/// does not end in a newline is marked `\ No newline at end of file`, as `diff -u` does.
pub fn unified(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    TextDiff::from_lines(old, new).unified_diff().context_radius(CONTEXT_LINES).header(old_name, new_name).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_texts_have_an_empty_diff() {
        assert_eq!(unified("a\nb\n", "a\nb\n", "before", "after"), "");
    }

    #[test]
    fn a_changed_line_shows_with_headers_and_three_lines_of_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        let expected = "--- v1\n+++ v2\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n";
        assert_eq!(unified(old, new, "v1", "v2"), expected);
    }

    #[test]
    fn a_missing_final_newline_is_marked() {
        let diff = unified("a\n", "a\nb", "old", "new");
        assert!(diff.contains("+b\n\\ No newline at end of file"), "{diff}");
    }

    #[test]
    fn distant_changes_make_separate_hunks() {
        let old: String = (1..=20).map(|n| format!("{n}\n")).collect();
        let new: String = (1..=20)
            .map(|n| match n {
                2 => "two\n".to_string(),
                19 => "nineteen\n".to_string(),
                _ => format!("{n}\n"),
            })
            .collect();
        let diff = unified(&old, &new, "a", "b");
        assert_eq!(diff.lines().filter(|line| line.starts_with("@@ ")).count(), 2, "{diff}");
    }
}
