//! MCP tool names as model APIs accept them. A model API takes only `^[A-Za-z0-9_-]{1,64}$`;
//! an MCP server may name a tool `files.read` or give it a name of any length. Each tool is
//! offered as `mcp__SERVER__TOOL`, where TOOL is its own name when that fits, and otherwise
//! that name with every other character made `_`, cut to fit, and followed by `_` and six hex
//! digits of its SHA-256. The mapping depends on the name alone, so it is the same after a
//! restart and whatever else the server offers; two names that still meet (a server offering
//! both `a.b` and a literal `a_b_` plus the same digits) are found by [`map_tools`].

use sha2::{Digest, Sha256};

/// The longest tool name a model API accepts.
pub const MAX_TOOL_NAME: usize = 64;

/// `mcp__SERVER__TOOL` for the server's tool `original`.
pub fn model_name(server: &str, original: &str) -> String {
    let prefix = format!("mcp__{server}__");
    let room = MAX_TOOL_NAME - prefix.len();
    let fits = !original.is_empty() && original.len() <= room && original.bytes().all(is_name_byte);
    if fits {
        return prefix + original;
    }
    let digest = hex::encode(&Sha256::digest(original.as_bytes())[..3]);
    let kept: String = original
        .chars()
        .map(|c| if c.is_ascii() && is_name_byte(c as u8) { c } else { '_' })
        .take(room - digest.len() - 1)
        .collect();
    format!("{prefix}{kept}_{digest}")
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The model names of a server's tools, in the order given, each with its original name. A
/// second tool whose model name is taken is left out, with why.
pub fn map_tools<'a>(
    server: &str,
    originals: impl IntoIterator<Item = &'a str>,
) -> (Vec<(String, &'a str)>, Vec<String>) {
    let mut mapped: Vec<(String, &str)> = Vec::new();
    let mut clashes = Vec::new();
    for original in originals {
        let name = model_name(server, original);
        match mapped.iter().find(|(taken, _)| *taken == name) {
            Some((_, first)) => clashes.push(format!(
                "tools `{first}` and `{original}` would both be offered as `{name}`; `{original}` is left out"
            )),
            None => mapped.push((name, original)),
        }
    }
    (mapped, clashes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        (1..=MAX_TOOL_NAME).contains(&name.len()) && name.bytes().all(is_name_byte)
    }

    #[test]
    fn a_name_that_fits_is_kept_and_any_other_is_made_to_fit_stably() {
        assert_eq!(model_name("github", "list_issues"), "mcp__github__list_issues");
        let dotted = model_name("fs", "files.read");
        assert!(dotted.starts_with("mcp__fs__files_read_") && valid(&dotted), "{dotted}");
        assert_eq!(dotted, model_name("fs", "files.read"), "the same name maps the same way every time");
        assert_ne!(dotted, model_name("fs", "files_read"), "a literal files_read keeps its own name");
        let long = "x".repeat(200);
        let cut = model_name("a-server-of-21-chars_", &long);
        assert!(valid(&cut) && cut.len() == MAX_TOOL_NAME, "{cut}");
        assert_ne!(cut, model_name("a-server-of-21-chars_", &"x".repeat(201)));
        for odd in ["", "ünïcödé", "with space", "a/b", "emoji🐕"] {
            assert!(valid(&model_name("s", odd)), "{odd:?}");
        }
    }

    #[test]
    fn tools_whose_names_meet_are_reported_and_the_second_left_out() {
        let dotted = model_name("s", "a.b");
        let literal = dotted.strip_prefix("mcp__s__").unwrap().to_string();
        let (mapped, clashes) = map_tools("s", ["a.b", literal.as_str(), "c"]);
        assert_eq!(mapped.iter().map(|(_, o)| *o).collect::<Vec<_>>(), ["a.b", "c"]);
        assert_eq!(clashes.len(), 1);
        assert!(clashes[0].contains(&format!("`{literal}` is left out")), "{}", clashes[0]);
    }
}
