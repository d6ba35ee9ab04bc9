//! Writing `config.toml` back with the operator's comments and layout kept (toml_edit): the
//! providers' edits from the dashboard, the API and the CLI. Every edit is checked by the
//! load a start does, on the whole new text, before the file is replaced; a refused edit
//! leaves the file as it was.

use std::io::Write;
use std::path::Path;

use toml_edit::{DocumentMut, Item, Table};

use super::Config;
use crate::error::{Error, Result};

/// Reads `path` (a missing file is an empty one), lets `change` edit it, checks the result as
/// a start would and replaces the file with it in one rename. The new config is returned, with
/// what `change` answered.
pub fn edit<R>(path: &Path, change: impl FnOnce(&mut DocumentMut) -> Result<R>) -> Result<(Config, R)> {
    let before = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::failed(format!("cannot read {}: {e}", path.display()))),
    };
    let mut doc: DocumentMut = before
        .parse()
        .map_err(|e| Error::invalid(format!("{} is not valid TOML, so it was not changed: {e}", path.display())))?;
    let done = change(&mut doc)?;
    let after = doc.to_string();
    let config = Config::parse(path, &after)
        .map_err(|e| Error::invalid(format!("the change was not saved: config.toml would not load: {e}")))?;
    replace(path, &after)?;
    Ok((config, done))
}

/// Writes `text` beside `path` and renames it over `path`: a reader sees the old file or the
/// new one, never half of one. The old file's permissions are kept.
fn replace(path: &Path, text: &str) -> Result<()> {
    let failed = |e: std::io::Error| Error::failed(format!("cannot write {}: {e}", path.display()));
    // A name of its own: two writers (the daemon and a CLI without one) never share it.
    let temporary = path.with_extension(format!("toml.{}.writing", uuid::Uuid::new_v4().simple()));
    let written = (|| {
        let mut file = std::fs::File::create_new(&temporary)?;
        if let Ok(old) = std::fs::metadata(path) {
            file.set_permissions(old.permissions())?;
        }
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.map_err(failed)
}

/// The table at `keys` (`["providers", "local"]`), made when missing. A table made only to
/// hold others writes no header of its own (`[providers.local]`, never a bare `[providers]`).
pub(crate) fn table_at<'a>(doc: &'a mut DocumentMut, keys: &[&str]) -> Result<&'a mut Table> {
    let mut table = doc.as_table_mut();
    for (i, key) in keys.iter().enumerate() {
        let item = table.entry(key).or_insert_with(|| {
            let mut made = Table::new();
            made.set_implicit(i + 1 < keys.len());
            Item::Table(made)
        });
        table = item
            .as_table_mut()
            .ok_or_else(|| Error::invalid(format!("`{}` in config.toml is not a table", keys[..=i].join("."))))?;
    }
    Ok(table)
}

/// Makes `old` say what `new` says, keeping what it can of how `old` is written: a key both
/// have keeps its place and comments (a table is merged key by key, a value keeps its
/// decoration and, when equal, its spelling); keys only `new` has are added at the end; keys
/// it lacks are removed.
pub(crate) fn merge(old: &mut Table, new: &Table) {
    let gone: Vec<String> = old.iter().map(|(k, _)| k.to_string()).filter(|k| !new.contains_key(k)).collect();
    for key in gone {
        old.remove(&key);
    }
    for (key, item) in new.iter() {
        match (old.get_mut(key), item) {
            (Some(Item::Table(o)), Item::Table(n)) => merge(o, n),
            (Some(Item::Value(o)), Item::Value(n)) => {
                if !same(o, n) {
                    let decor = o.decor().clone();
                    *o = n.clone();
                    *o.decor_mut() = decor;
                }
            }
            _ => {
                old.insert(key, item.clone());
            }
        }
    }
}

/// Whether two values say the same, however each is spelled (`'a'` and `"a"`, `1e3` and
/// `1000.0`); arrays and tables compare as written.
fn same(a: &toml_edit::Value, b: &toml_edit::Value) -> bool {
    use toml_edit::Value::{Boolean, Float, Integer, String};
    match (a, b) {
        (String(x), String(y)) => x.value() == y.value(),
        (Integer(x), Integer(y)) => x.value() == y.value(),
        (Float(x), Float(y)) => x.value() == y.value(),
        (Boolean(x), Boolean(y)) => x.value() == y.value(),
        _ => bare(a) == bare(b),
    }
}

/// A value as written, without the spaces and comments around it.
fn bare(value: &toml_edit::Value) -> std::string::String {
    let mut value = value.clone();
    value.decor_mut().clear();
    value.to_string()
}

/// `value` (a settings struct) as a TOML table, to [`merge`] into the file.
pub(crate) fn as_table<T: serde::Serialize>(value: &T) -> Result<Table> {
    let text = toml::to_string(value).map_err(Error::internal)?;
    let doc: DocumentMut = text.parse().map_err(Error::internal)?;
    Ok(doc.as_table().clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(old: &str, new: &str) -> String {
        let mut doc: DocumentMut = old.parse().unwrap();
        let new: DocumentMut = new.parse().unwrap();
        merge(doc.as_table_mut(), new.as_table());
        doc.to_string()
    }

    #[test]
    fn a_merge_keeps_comments_places_and_spellings_and_drops_what_the_new_text_lacks() {
        let old = "# my provider\nkind = 'openai' # the local one\nbase_url = \"http://a\"\nmax_in_flight = 2\n\n# its model\n[models.small]\ncontext_tokens = 800\n";
        let new = "kind = \"openai\"\nbase_url = \"http://b\"\nstream = false\n[models.small]\ncontext_tokens = 900\n[models.big]\nimages = true\n";
        assert_eq!(
            merged(old, new),
            "# my provider\nkind = 'openai' # the local one\nbase_url = \"http://b\"\nstream = false\n\n# its model\n[models.small]\ncontext_tokens = 900\n[models.big]\nimages = true\n"
        );
    }

    #[test]
    fn a_table_made_to_hold_others_writes_no_header_of_its_own() {
        let mut doc: DocumentMut = "# top\n[kernel]\n".parse().unwrap();
        table_at(&mut doc, &["providers", "local"]).unwrap().insert("kind", toml_edit::value("openai"));
        assert_eq!(doc.to_string(), "# top\n[kernel]\n\n[providers.local]\nkind = \"openai\"\n");
        let mut doc: DocumentMut = "providers = 3\n".parse().unwrap();
        let refused = table_at(&mut doc, &["providers", "local"]).unwrap_err();
        assert!(refused.message.contains("`providers` in config.toml is not a table"), "{}", refused.message);
    }

    #[test]
    fn a_refused_edit_leaves_the_file_as_it_was() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("config.toml");
        std::fs::write(&path, "# mine\n[kernel]\n").unwrap();
        let refused = edit(&path, |doc| {
            doc["kernel"]["default_provider"] = toml_edit::value("nowhere");
            Ok(())
        })
        .unwrap_err();
        assert!(
            refused.message.contains("default_provider `nowhere` is not a configured provider"),
            "{}",
            refused.message
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "# mine\n[kernel]\n");
        edit(&path, |doc| {
            table_at(doc, &["providers", "local"])?.insert("kind", toml_edit::value("openai"));
            Ok(())
        })
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# mine\n[kernel]\n\n[providers.local]\nkind = \"openai\"\n"
        );
    }
}
