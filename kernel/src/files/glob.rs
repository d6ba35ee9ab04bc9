//! The glob patterns of `find_files mode=glob`: `/`-separated like workspace paths, where `*`
//! matches any run of characters within one name, `?` one character, and a part that is just
//! `**` any number of folders (none included). Everything else matches itself. A pattern
//! matches whole paths from the workspace's top (or from the folder given): `*.md` finds
//! only top-level files, `**/*.md` finds them at any depth.

use crate::error::{Error, Result};

/// The longest pattern, in bytes.
const MAX_PATTERN_BYTES: usize = 1024;

/// A checked glob pattern.
#[derive(Debug, Clone)]
pub(crate) struct Glob {
    parts: Vec<String>,
}

impl Glob {
    pub(crate) fn new(pattern: &str) -> Result<Glob> {
        let refuse = |why: &str| Err(Error::invalid(format!("the glob `{pattern}` {why}")).with_field("pattern"));
        if pattern.is_empty() || pattern.len() > MAX_PATTERN_BYTES {
            return refuse(&format!("must have 1 to {MAX_PATTERN_BYTES} bytes"));
        }
        if pattern.starts_with('/') || pattern.chars().any(char::is_control) {
            return refuse("must be relative (like `**/*.rs`) and on one line");
        }
        let parts: Vec<String> = pattern.split('/').map(str::to_string).collect();
        if parts.iter().any(|p| p.is_empty() || p == "." || p == "..") {
            return refuse("has an empty, `.` or `..` part");
        }
        Ok(Glob { parts })
    }

    /// Whether `path` (`/`-separated, relative) matches the whole pattern.
    pub(crate) fn matches(&self, path: &str) -> bool {
        let names: Vec<&str> = path.split('/').collect();
        let parts: Vec<&str> = self.parts.iter().map(String::as_str).collect();
        parts_match(&parts, &names)
    }
}

fn parts_match(parts: &[&str], names: &[&str]) -> bool {
    // Positions reachable in `names` after each part: a set, so `**` never backtracks
    // exponentially.
    let mut at = vec![false; names.len() + 1];
    at[0] = true;
    for part in parts {
        let mut next = vec![false; names.len() + 1];
        for i in (0..=names.len()).filter(|&i| at[i]) {
            if *part == "**" {
                next[i..].iter_mut().for_each(|n| *n = true);
                break;
            }
            if i < names.len() && name_matches(part.as_bytes(), names[i]) {
                next[i + 1] = true;
            }
        }
        at = next;
    }
    at[names.len()]
}

/// `*` and `?` within one name, by characters; linear with one saved `*` position.
fn name_matches(pattern: &[u8], name: &str) -> bool {
    let pattern: Vec<char> = String::from_utf8_lossy(pattern).chars().collect();
    let name: Vec<char> = name.chars().collect();
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(c) if *c == '?' || *c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, path: &str) -> bool {
        Glob::new(pattern).unwrap().matches(path)
    }

    #[test]
    fn files_glob_star_question_and_double_star() {
        assert!(m("*.md", "notes.md"));
        assert!(!m("*.md", "a/notes.md"), "`*` stays within one name");
        assert!(m("**/*.md", "notes.md"), "`**` may be no folder");
        assert!(m("**/*.md", "a/b/c/notes.md"));
        assert!(m("src/**", "src/a/b.rs"));
        assert!(m("src/**/mod.rs", "src/mod.rs"));
        assert!(!m("src/**/mod.rs", "lib/src/mod.rs"));
        assert!(m("a?c.txt", "abc.txt"));
        assert!(m("a?c.txt", "aéc.txt"), "`?` is one character, not one byte");
        assert!(!m("a?c.txt", "ac.txt"));
        assert!(m("*a*b*", "xxaxxbxx"));
        assert!(!m("*a*b*", "xxbxxaxx"));
        assert!(m("report", "report") && !m("report", "reports"));
    }

    #[test]
    fn files_glob_refuses_patterns_that_could_leave_the_folder() {
        for bad in ["", "/etc/*", "../*", "a/../b", "a//b", "a\nb"] {
            assert!(Glob::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn files_glob_many_stars_stay_fast() {
        let name = "a".repeat(200);
        assert!(!m(&"*a".repeat(50).replace("*a*a", "*a*b"), &name));
        assert!(m("**/**/**/**/**/*", "a/b/c"));
        assert!(!m("**/**/**/**/**/x", "a/".repeat(15).trim_end_matches('/')));
    }
}
