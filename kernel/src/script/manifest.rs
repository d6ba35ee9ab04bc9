//! The manifests of script and extension tools, read from `$KENNEL_HOME/tools/`:
//!
//! - `tools/script/NAME/tool.toml` makes `script_NAME`;
//! - `tools/ext/PACKAGE/package.toml` makes `ext_PACKAGE_TOOL` for each `[tools.TOOL]`.
//!
//! A tool manifest (the whole `tool.toml`, or one `[tools.TOOL]` table):
//!
//! ```toml
//! description = "Counts the words of a text"
//! run = "count.sh"              # in the tool's folder; gets the arguments as JSON on stdin
//! timeout_secs = 10             # wall clock, then the sandbox is killed (default 30)
//! max_output_bytes = 65536      # more on stdout fails the call (default 1 MiB)
//! network = false               # true: the sandbox keeps the host's network
//! [arguments]                   # the JSON Schema of the arguments, written as TOML
//! type = "object"
//! required = ["text"]
//! properties.text = { type = "string" }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// One tool as its manifest describes it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ToolManifest {
    pub description: String,
    /// The executable, relative to the tool's folder.
    pub run: String,
    #[serde(default = "default_timeout_secs", deserialize_with = "crate::config::in_range::<_, 1, 3600>")]
    pub timeout_secs: u64,
    #[serde(default = "default_max_output_bytes", deserialize_with = "crate::config::in_range::<_, 1, 67108864>")]
    pub max_output_bytes: u64,
    #[serde(default)]
    pub network: bool,
    #[serde(default = "empty_object_schema")]
    pub arguments: toml::Table,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// An extension package's manifest: several tools served by its executables.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackageManifest {
    #[serde(default)]
    pub description: String,
    pub tools: BTreeMap<String, ToolManifest>,
}

fn default_timeout_secs() -> u64 {
    30
}

fn default_max_output_bytes() -> u64 {
    1024 * 1024
}

fn empty_object_schema() -> toml::Table {
    let mut table = toml::Table::new();
    table.insert("type".into(), toml::Value::String("object".into()));
    table
}

/// A tool found on disk, ready to offer, or why it cannot be.
#[derive(Debug, Clone)]
pub struct Found {
    /// `script_NAME` or `ext_PACKAGE_TOOL`.
    pub name: String,
    /// `script` or `ext:PACKAGE`.
    pub provider: String,
    /// The folder the manifest is in (the executable's paths are relative to it).
    pub folder: PathBuf,
    pub manifest: std::result::Result<Checked, String>,
}

/// A manifest that passed every check.
#[derive(Debug, Clone)]
pub struct Checked {
    pub manifest: ToolManifest,
    /// The executable's full path.
    pub executable: PathBuf,
    pub schema: Value,
}

const SCRIPT_MANIFEST: &str = "tool.toml";
const PACKAGE_MANIFEST: &str = "package.toml";

/// Every script and extension tool under `root` (`$KENNEL_HOME/tools`), sorted by name.
pub fn scan(root: &Path) -> Vec<Found> {
    let mut found = Vec::new();
    for (folder, name) in folders(&root.join("script")) {
        let tool_name = format!("script_{name}");
        let manifest = if !is_valid_part(&name, true) {
            Err(format!("`{name}` is not a valid script name: use lowercase letters, digits, `-` and `_`"))
        } else {
            read_toml::<ToolManifest>(root, &folder.join(SCRIPT_MANIFEST)).and_then(|m| check(m, &folder))
        };
        found.push(Found { name: tool_name, provider: "script".into(), folder, manifest });
    }
    for (folder, package) in folders(&root.join("ext")) {
        let provider = format!("ext:{package}");
        if !is_valid_part(&package, false) {
            let why = format!("`{package}` is not a valid package name: use lowercase letters, digits and `-`");
            found.push(Found { name: format!("ext_{package}"), provider, folder, manifest: Err(why) });
            continue;
        }
        match read_toml::<PackageManifest>(root, &folder.join(PACKAGE_MANIFEST)) {
            Err(why) => found.push(Found { name: format!("ext_{package}"), provider, folder, manifest: Err(why) }),
            Ok(p) => {
                for (tool, manifest) in p.tools {
                    let manifest = if is_valid_part(&tool, true) {
                        check(manifest, &folder)
                    } else {
                        Err(format!("`{tool}` is not a valid tool name: use lowercase letters, digits, `-` and `_`"))
                    };
                    let name = format!("ext_{package}_{tool}");
                    found.push(Found { name, provider: provider.clone(), folder: folder.clone(), manifest });
                }
            }
        }
    }
    found.retain(|f| f.name.len() <= crate::mcp::names::MAX_TOOL_NAME || f.manifest.is_err());
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// The folders directly under `dir`, with their names (hidden ones skipped).
fn folders(dir: &Path) -> Vec<(PathBuf, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut folders: Vec<(PathBuf, String)> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| Some((e.path(), e.file_name().into_string().ok()?)))
        .filter(|(_, name)| !name.starts_with('.'))
        .collect();
    folders.sort();
    folders
}

/// A script, package or tool name: the model sees it in a tool name. A package name has no
/// `_`, so `ext_PACKAGE_TOOL` reads one way only.
fn is_valid_part(name: &str, underscore: bool) -> bool {
    (1..=48).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || (underscore && b == b'_'))
}

/// Reads a manifest; errors name it from `$KENNEL_HOME` (`tools/script/wc/tool.toml:3:16`).
fn read_toml<T: serde::de::DeserializeOwned>(root: &Path, path: &Path) -> std::result::Result<T, String> {
    let shown = path.strip_prefix(root.parent().unwrap_or(root)).unwrap_or(path).display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    toml::from_str(&text).map_err(|e| {
        let (line, column) = e.span().map(|s| crate::text::line_and_column(&text, s.start)).unwrap_or((0, 0));
        format!("{shown}:{line}:{column}: {}", e.message().trim())
    })
}

/// The checks a manifest passes before its tool is offered: an executable inside its folder,
/// and arguments that are a JSON Schema of an object.
fn check(manifest: ToolManifest, folder: &Path) -> std::result::Result<Checked, String> {
    if manifest.description.trim().is_empty() {
        return Err("`description` is empty: the model chooses tools by it".into());
    }
    let relative = Path::new(&manifest.run);
    if relative.is_absolute() || relative.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err(format!("`run = \"{}\"` must be a path inside the tool's folder", manifest.run));
    }
    let executable = folder.join(relative);
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(&executable) {
        Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => {}
        Ok(_) => return Err(format!("`{}` is not an executable file (chmod +x it)", manifest.run)),
        Err(e) => return Err(format!("`{}`: {e}", manifest.run)),
    }
    let schema = serde_json::to_value(&manifest.arguments).map_err(|e| format!("[arguments]: {e}"))?;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("[arguments] must be the JSON Schema of an object (`type = \"object\"`)".into());
    }
    Ok(Checked { manifest, executable, schema })
}

/// What changes when a tool's files change: each manifest's and executable's size and time.
pub fn fingerprint(root: &Path) -> Vec<(PathBuf, u64, Option<std::time::SystemTime>)> {
    let mut seen = Vec::new();
    for kind in ["script", "ext"] {
        for (folder, _) in folders(&root.join(kind)) {
            let Ok(entries) = std::fs::read_dir(&folder) else { continue };
            for entry in entries.flatten() {
                if let Ok(m) = entry.metadata() {
                    seen.push((entry.path(), m.len(), m.modified().ok()));
                }
            }
        }
    }
    seen.sort();
    seen
}
