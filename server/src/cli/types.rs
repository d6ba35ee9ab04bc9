//! `kennel type apply|export|list`: agent types from files a person edits.

use std::io::{IsTerminal, Read};
use std::path::Path;

use anyhow::Context;
use kennel_kernel::Kernel;
use kennel_kernel::agent::{ManifestFormat, ManifestInput, source, to_toml};
use kennel_kernel::error::FieldError;

use super::daemon::Daemon;

/// Creates or replaces the agent type FILE describes. The file is checked here with the one
/// validator, so every problem is shown with its line; with a daemon running, the change goes
/// through its API (its agents see the type at once), otherwise straight into the store.
/// Refusals from beyond the validator (a provider this daemon lacks, a name in use) are shown
/// at their lines too.
pub async fn apply(home: &Path, file: &Path, json_out: bool) -> anyhow::Result<()> {
    let (shown, text) = read_source(file)?;
    let format = source::format_of(file, &text);
    let (input, manifest) = match source::read(&text, format) {
        Ok(read) => read,
        Err(problems) => return Err(refused(&shown, &problems)),
    };
    let name = manifest.name.clone();
    let saved = match Daemon::running(home).await? {
        Some(daemon) => apply_through(&daemon, &name, format, text.clone()).await,
        None => apply_to_store(home, input).await,
    };
    let (created, stored) = match saved {
        Ok(saved) => saved,
        Err(NotSaved::Fields(fields)) => return Err(refused(&shown, &source::locate(&text, format, fields))),
        Err(NotSaved::Other(e)) => return Err(e),
    };
    if json_out {
        return super::print_json(&stored);
    }
    let verb = if created { "created" } else { "updated" };
    println!("agent type `{name}` {verb}");
    if !created {
        println!("agents already made from it keep their own copy; apply it to them on its dashboard page");
    }
    Ok(())
}

/// Why a type was not saved: problems of its fields (to be shown at their lines), or
/// anything else.
enum NotSaved {
    Fields(Vec<FieldError>),
    Other(anyhow::Error),
}

impl From<anyhow::Error> for NotSaved {
    fn from(e: anyhow::Error) -> Self {
        match e.downcast::<super::daemon::Refused>() {
            Ok(super::daemon::Refused(error)) if !error.fields.is_empty() => NotSaved::Fields(error.fields),
            Ok(refused) => NotSaved::Other(refused.into()),
            Err(e) => NotSaved::Other(e),
        }
    }
}

impl From<kennel_kernel::Error> for NotSaved {
    fn from(e: kennel_kernel::Error) -> Self {
        if e.fields.is_empty() { NotSaved::Other(e.into()) } else { NotSaved::Fields(e.fields) }
    }
}

/// Prints each problem as `FILE:LINE:COLUMN: field: message` (made safe for the terminal:
/// messages repeat the file's values) and says nothing changed.
fn refused(shown: &str, problems: &[source::Problem]) -> anyhow::Error {
    for p in problems {
        eprintln!("{}", super::terminal_safe(&format!("{shown}:{p}")));
    }
    let count = problems.len();
    anyhow::anyhow!("{shown}: {count} problem{}; nothing was changed", if count == 1 { "" } else { "s" })
}

/// The file's name as errors show it, and its text (`-` reads standard input).
fn read_source(file: &Path) -> anyhow::Result<(String, String)> {
    let mut text = String::new();
    if file == Path::new("-") {
        std::io::stdin().read_to_string(&mut text).context("cannot read standard input")?;
        return Ok(("<stdin>".into(), text));
    }
    text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    Ok((file.display().to_string(), text))
}

/// Sends the file as written (the API reads JSON and TOML): a replacement, or, for a type the
/// daemon does not have, a new one. Which one is asked first (a read, which the operator-action
/// log does not record), so the log holds one row for the change, not a refused replacement
/// before every creation.
async fn apply_through(
    daemon: &Daemon,
    name: &str,
    format: ManifestFormat,
    text: String,
) -> Result<(bool, serde_json::Value), NotSaved> {
    let content_type = match format {
        ManifestFormat::Json => "application/json",
        ManifestFormat::Toml => "application/toml",
    };
    let body = |text: String| super::daemon::Body { content_type, text };
    let path = format!("/api/templates/{name}");
    let exists = match daemon.get::<serde_json::Value>(&path).await {
        Ok(_) => true,
        Err(e)
            if e.downcast_ref::<super::daemon::Refused>()
                .is_some_and(|r| r.0.kind == kennel_kernel::ErrorKind::NotFound) =>
        {
            false
        }
        Err(e) => return Err(e.into()),
    };
    let warning = crate::http::templates::GRANT_WARNING_HEADER;
    let (method, target) =
        if exists { (reqwest::Method::PUT, path.as_str()) } else { (reqwest::Method::POST, "/api/templates") };
    let (stored, warned) = daemon.send_noting(method, target, body(text), warning).await?;
    // The same words as without a daemon (`apply_to_store`), from the daemon's own tool list.
    if let Some(warning) = warned {
        eprintln!("warning: {}", super::terminal_safe(&warning));
    }
    Ok((!exists, stored))
}

async fn apply_to_store(home: &Path, input: ManifestInput) -> Result<(bool, serde_json::Value), NotSaved> {
    let kernel = super::open(home).await?;
    let saved = kernel.agents().save_type(input).await;
    let outcome = match saved {
        Ok((created, stored)) => {
            let name = &stored.manifest.name;
            let action = if created { "type.create" } else { "type.update" };
            super::record(&kernel, action, name, format!("agent type `{name}` applied from a file")).await?;
            if let Some(warning) = kernel.tools().grant_warning(&stored.manifest.capabilities.tools) {
                eprintln!("warning: {}", super::terminal_safe(&warning));
            }
            Ok((created, serde_json::to_value(&*stored).map_err(anyhow::Error::from)?))
        }
        Err(e) => Err(e.into()),
    };
    kernel.close().await;
    outcome
}

/// Prints one agent type as TOML (the format `apply` reads back) or JSON.
pub async fn export(kernel: &Kernel, name: &str, json_out: bool) -> anyhow::Result<()> {
    let t = kernel.agents().get_type(name)?;
    if json_out {
        return super::print_json(&t.manifest);
    }
    let toml = to_toml(&t.manifest);
    // Piped to a file it is the manifest as stored; on a terminal, made safe to show.
    if std::io::stdout().is_terminal() {
        print!("{}", super::terminal_safe(&toml));
    } else {
        print!("{toml}");
    }
    Ok(())
}

pub fn list(kernel: &Kernel, json_out: bool) -> anyhow::Result<()> {
    let types = kernel.agents().types();
    if json_out {
        let manifests: Vec<_> = types.iter().map(|t| &t.manifest).collect();
        return super::print_json(&manifests);
    }
    let mut rows = vec![["NAME", "PROVIDER", "MODEL", "TOOLS", "DESCRIPTION"].map(String::from).to_vec()];
    for t in &types {
        let m = &t.manifest;
        let grants: Vec<_> = m.capabilities.tools.iter().map(|g| g.as_str()).collect();
        rows.push(vec![
            m.name.clone(),
            m.provider.clone().unwrap_or_else(|| "-".into()),
            m.model.clone().unwrap_or_else(|| "-".into()),
            grants.join(","),
            kennel_kernel::text::shorten(&m.description, 60),
        ]);
    }
    super::print_table(&rows);
    Ok(())
}
