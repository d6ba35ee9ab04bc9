//! Agent-type manifests read from a file a person edits (`kennel type apply FILE`): every
//! problem, a syntax error or one the validator finds, comes with the line and column it is
//! at, so an editor can jump there.

use std::fmt;

use super::manifest::{Manifest, ManifestFormat, ManifestInput, validate};
use crate::error::{Error, FieldError, from_value};
use crate::text::line_and_column;

/// One problem in a manifest file: where it is, the field it is about (absent for a syntax
/// error) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: usize,
    pub column: usize,
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: ", self.line, self.column)?;
        match &self.field {
            Some(field) => write!(f, "{field}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Reads and validates a manifest file's text with the one validator, [`validate`]. On
/// success both the input as written (what `create_type`/`replace_type` take) and the
/// validated manifest; otherwise every problem, in file order.
pub fn read(text: &str, format: ManifestFormat) -> Result<(ManifestInput, Manifest), Vec<Problem>> {
    let value = parse(text, format).map_err(|p| vec![p])?;
    let input: ManifestInput = from_value(value).map_err(|e| locate_error(text, format, e))?;
    let manifest = validate(input.clone()).map_err(|e| locate_error(text, format, e))?;
    Ok((input, manifest))
}

/// Every field's problem at its place in the file (refusals that come from beyond the
/// validator: a provider this daemon does not have, a name in use), in file order.
pub fn locate(text: &str, format: ManifestFormat, fields: Vec<FieldError>) -> Vec<Problem> {
    let mut problems: Vec<Problem> = fields
        .into_iter()
        .map(|f| {
            let (line, column) = line_and_column(text, offset_of(text, format, &f.field));
            let field = (!f.field.is_empty()).then_some(f.field);
            Problem { line, column, field, message: f.message }
        })
        .collect();
    problems.sort_by_key(|p| (p.line, p.column));
    problems
}

/// Which format a file is in, by its extension, else by its first character.
pub fn format_of(path: &std::path::Path, text: &str) -> ManifestFormat {
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => ManifestFormat::Json,
        Some("toml") => ManifestFormat::Toml,
        _ if text.trim_start().starts_with('{') => ManifestFormat::Json,
        _ => ManifestFormat::Toml,
    }
}

fn parse(text: &str, format: ManifestFormat) -> Result<serde_json::Value, Problem> {
    let problem = |(line, column): (usize, usize), message: String| Problem { line, column, field: None, message };
    match format {
        ManifestFormat::Json => serde_json::from_str(text).map_err(|e| {
            // serde_json counts the column in bytes; editors count characters.
            let line_start: usize = text.split_inclusive('\n').take(e.line().saturating_sub(1)).map(str::len).sum();
            let at = line_and_column(text, line_start + e.column().saturating_sub(1));
            problem(at, format!("not valid JSON: {e}"))
        }),
        ManifestFormat::Toml => toml::from_str(text).map_err(|e| {
            let at = line_and_column(text, e.span().map(|s| s.start).unwrap_or(0));
            problem(at, format!("not valid TOML: {}", e.message().trim()))
        }),
    }
}

fn locate_error(text: &str, format: ManifestFormat, error: Error) -> Vec<Problem> {
    let fields = if error.fields.is_empty() {
        vec![FieldError { field: String::new(), message: error.message }]
    } else {
        error.fields
    };
    locate(text, format, fields)
}

/// A step of a field path as the validator and `from_value` write them: `fallbacks[1].model`.
#[derive(Debug, PartialEq)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

fn steps(path: &str) -> Vec<Step<'_>> {
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, indexes) = part.split_once('[').map_or((part, ""), |(k, rest)| (k, rest));
        if !key.is_empty() {
            out.push(Step::Key(key));
        }
        for index in indexes.split('[') {
            if let Ok(i) = index.trim_end_matches(']').parse() {
                out.push(Step::Index(i));
            }
        }
    }
    out
}

/// Where the field `path` is written: the deepest part of the path the file has (a missing
/// field is reported where its table starts; a missing top-level field at the file's start).
fn offset_of(text: &str, format: ManifestFormat, path: &str) -> usize {
    let steps = steps(path);
    match format {
        ManifestFormat::Toml => toml_offset(text, &steps),
        ManifestFormat::Json => json_offset(text, &steps),
    }
}

fn toml_offset(text: &str, steps: &[Step]) -> usize {
    use toml::de::{DeTable, DeValue};
    let Ok(root) = DeTable::parse(text) else { return 0 };
    let mut at = 0;
    let mut table = Some(root.get_ref());
    let mut array: Option<&[toml::Spanned<DeValue>]> = None;
    for step in steps {
        let value = match (step, table, array) {
            (Step::Key(key), Some(t), _) => match t.iter().find(|(k, _)| k.get_ref() == key) {
                Some((k, v)) => {
                    at = k.span().start;
                    v
                }
                None => break,
            },
            (Step::Index(i), _, Some(items)) => match items.get(*i) {
                Some(v) => {
                    at = v.span().start;
                    v
                }
                None => break,
            },
            _ => break,
        };
        (table, array) = match value.get_ref() {
            DeValue::Table(t) => (Some(t), None),
            DeValue::Array(a) => (None, Some(&a[..])),
            _ => (None, None),
        };
    }
    at
}

/// The offset of `steps` in JSON text that is known to parse: a small scanner that follows
/// the path through objects and arrays, skipping everything else.
fn json_offset(text: &str, steps: &[Step]) -> usize {
    let mut scan = JsonScan { bytes: text.as_bytes(), at: 0 };
    let mut found = 0;
    scan.space();
    for step in steps {
        let hit = match step {
            Step::Key(key) => scan.find_key(key),
            Step::Index(i) => scan.find_index(*i),
        };
        match hit {
            Some(at) => found = at,
            None => break,
        }
    }
    found
}

struct JsonScan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl JsonScan<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    /// Reads a string at the cursor (its raw text between the quotes).
    fn string(&mut self) -> Option<&str> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.at + 1;
        self.at = start;
        while let Some(b) = self.peek() {
            match b {
                b'\\' => self.at += 2,
                b'"' => {
                    let raw = std::str::from_utf8(&self.bytes[start..self.at]).ok();
                    self.at += 1;
                    return raw;
                }
                _ => self.at += 1,
            }
        }
        None
    }

    /// Skips the value at the cursor.
    fn skip_value(&mut self) {
        self.space();
        match self.peek() {
            Some(b'"') => {
                self.string();
            }
            Some(open @ (b'{' | b'[')) => {
                let close = if open == b'{' { b'}' } else { b']' };
                self.at += 1;
                loop {
                    self.space();
                    match self.peek() {
                        Some(b) if b == close => {
                            self.at += 1;
                            return;
                        }
                        Some(b',' | b':') => self.at += 1,
                        None => return,
                        _ => self.skip_value(),
                    }
                }
            }
            _ => {
                while self.peek().is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace()) {
                    self.at += 1;
                }
            }
        }
    }

    /// In the object at the cursor, moves to the value of `key`; the key's offset.
    fn find_key(&mut self, key: &str) -> Option<usize> {
        self.space();
        if self.peek() != Some(b'{') {
            return None;
        }
        self.at += 1;
        loop {
            self.space();
            let key_at = self.at;
            let name = self.string()?.to_string();
            self.space();
            (self.peek() == Some(b':')).then_some(())?;
            self.at += 1;
            self.space();
            if name == key {
                return Some(key_at);
            }
            self.skip_value();
            self.space();
            (self.peek() == Some(b',')).then_some(())?;
            self.at += 1;
        }
    }

    /// In the array at the cursor, moves to item `index`; its offset.
    fn find_index(&mut self, index: usize) -> Option<usize> {
        self.space();
        if self.peek() != Some(b'[') {
            return None;
        }
        self.at += 1;
        for _ in 0..index {
            self.skip_value();
            self.space();
            (self.peek() == Some(b',')).then_some(())?;
            self.at += 1;
        }
        self.space();
        (self.peek() != Some(b']')).then_some(self.at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str, format: ManifestFormat) -> Vec<Problem> {
        read(text, format).expect_err("the text has problems")
    }

    #[test]
    fn paths_split_into_keys_and_indexes() {
        assert_eq!(steps("fallbacks[1].model"), [Step::Key("fallbacks"), Step::Index(1), Step::Key("model")]);
        assert_eq!(steps("capabilities.tools[0]"), [Step::Key("capabilities"), Step::Key("tools"), Step::Index(0)]);
        assert_eq!(steps(""), []);
    }

    #[test]
    fn toml_problems_name_their_line_and_column() {
        let text = "name = \"ok\"\n\n[capabilities]\ntools = [\"system_time\", \"not a glob!\"]\n\n[[cron]]\nschedule = \"0 9 * * 1\"\nprompt = \"x\"\n\n[[cron]]\nschedule = \"61 * * * *\"\nprompt = \"y\"\n";
        let found = problems(text, ManifestFormat::Toml);
        let tools = found.iter().find(|p| p.field.as_deref() == Some("capabilities.tools[1]")).expect("tools[1]");
        assert_eq!((tools.line, tools.column), (4, 25), "{found:?}");
        let cron =
            found.iter().find(|p| p.field.as_deref().is_some_and(|f| f.starts_with("cron[1]"))).expect("cron[1]");
        assert_eq!(cron.line, 11, "{found:?}");
    }

    #[test]
    fn toml_syntax_and_type_errors_are_located_too() {
        let syntax = problems("name = \"a\"\ndescription = \n", ManifestFormat::Toml);
        assert_eq!(syntax[0].line, 2, "{syntax:?}");
        assert!(syntax[0].message.starts_with("not valid TOML"), "{syntax:?}");
        let typed = problems("name = \"a\"\n\n[capabilities]\ntools = 3\n", ManifestFormat::Toml);
        assert_eq!((typed[0].line, typed[0].field.as_deref()), (4, Some("capabilities.tools")), "{typed:?}");
    }

    #[test]
    fn a_missing_name_points_at_the_start() {
        let found = problems("description = \"no name\"\n", ManifestFormat::Toml);
        assert_eq!(found, [Problem { line: 1, column: 1, field: Some("name".into()), message: "is required".into() }]);
    }

    #[test]
    fn json_problems_name_their_line() {
        let text = "{\n  \"name\": \"ok\",\n  \"description\": \"has \\\"quotes\\\" and {braces}\",\n  \"fallbacks\": [\n    {\"model\": \"a\"},\n    {\"provider\": \"Bad Name\", \"model\": \"b\"}\n  ]\n}\n";
        let found = problems(text, ManifestFormat::Json);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].line, found[0].column), (6, 6), "{found:?}");
        assert_eq!(found[0].field.as_deref(), Some("fallbacks[1].provider"));
        let syntax = problems("{\n  \"name\": \"é\",,\n}", ManifestFormat::Json);
        assert_eq!((syntax[0].line, syntax[0].column), (2, 15), "the second comma, counted in characters: {syntax:?}");
    }

    #[test]
    fn a_valid_file_reads() {
        let (input, manifest) = read("name = \"helper\"\ntools = [\"system_time\"]\n", ManifestFormat::Toml).unwrap();
        assert_eq!(manifest.name, "helper");
        assert_eq!(input.name.as_deref(), Some("helper"));
    }

    #[test]
    fn format_follows_the_extension_then_the_text() {
        use std::path::Path;
        assert_eq!(format_of(Path::new("a.json"), "name = 1"), ManifestFormat::Json);
        assert_eq!(format_of(Path::new("a.toml"), "{"), ManifestFormat::Toml);
        assert_eq!(format_of(Path::new("a"), "  {\"name\": 1}"), ManifestFormat::Json);
        assert_eq!(format_of(Path::new("-"), "name = 1"), ManifestFormat::Toml);
    }
}
