//! `kennel type apply|export|list`: agent types from files a person edits.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, bail};
use kennel_kernel::Kernel;
use kennel_kernel::agent::{ManifestFormat, ManifestInput, source, to_toml};

use super::daemon::Daemon;

/// Creates or replaces the agent type FILE describes. The file is checked here with the one
/// validator, so every problem is shown with its line; with a daemon running, the change goes
/// through its API (its agents see the type at once), otherwise straight into the store.
pub async fn apply(home: &Path, file: &Path, json_out: bool) -> anyhow::Result<()> {
    let (shown, text) = read_source(file)?;
    let format = source::format_of(file, &text);
    let (input, manifest) = match source::read(&text, format) {
        Ok(read) => read,
        Err(problems) => {
            for p in &problems {
                eprintln!("{shown}:{p}");
            }
            let count = problems.len();
            bail!("{shown}: {count} problem{}; nothing was changed", if count == 1 { "" } else { "s" });
        }
    };
    let name = manifest.name.clone();
    let (created, stored) = match Daemon::running(home).await? {
        Some(daemon) => apply_through(&daemon, &name, format, text).await?,
        None => apply_to_store(home, &name, input).await?,
    };
    if json_out {
        super::print_json(&stored)
    } else {
        let verb = if created { "created" } else { "updated" };
        println!("agent type `{name}` {verb}");
        if !created {
            println!("agents already made from it keep their own copy; apply it to them on its dashboard page");
        }
        Ok(())
    }
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

/// Sends the file as written (the API reads JSON and TOML) to create or replace the type.
async fn apply_through(
    daemon: &Daemon,
    name: &str,
    format: ManifestFormat,
    text: String,
) -> anyhow::Result<(bool, serde_json::Value)> {
    let path = format!("/api/templates/{name}");
    let content_type = match format {
        ManifestFormat::Json => "application/json",
        ManifestFormat::Toml => "application/toml",
    };
    let body = super::daemon::Body { content_type, text };
    match daemon.get::<serde_json::Value>(&path).await {
        Ok(_) => Ok((false, daemon.send(reqwest::Method::PUT, &path, body).await?)),
        Err(e) if e.downcast_ref::<super::daemon::Refused>().is_some_and(|r| r.kind == "NotFound") => {
            Ok((true, daemon.send(reqwest::Method::POST, "/api/templates", body).await?))
        }
        Err(e) => Err(e),
    }
}

async fn apply_to_store(home: &Path, name: &str, input: ManifestInput) -> anyhow::Result<(bool, serde_json::Value)> {
    let kernel = super::open(home).await?;
    let exists = kernel.agents().get_type(name).is_ok();
    let stored = if exists {
        kernel.agents().replace_type(name, input).await?
    } else {
        kernel.agents().create_type(input).await?
    };
    let action = if exists { "type.update" } else { "type.create" };
    super::record(&kernel, action, name, format!("agent type `{name}` applied from a file")).await?;
    let value = serde_json::to_value(&*stored)?;
    kernel.close().await;
    Ok((!exists, value))
}

/// Prints one agent type as TOML (the format `apply` reads back) or JSON.
pub async fn export(kernel: &Kernel, name: &str, json_out: bool) -> anyhow::Result<()> {
    let t = kernel.agents().get_type(name)?;
    if json_out {
        return super::print_json(&t.manifest);
    }
    print!("{}", to_toml(&t.manifest));
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
