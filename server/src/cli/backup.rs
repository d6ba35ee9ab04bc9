//! `kennel backup FILE` and `kennel restore FILE`: the kernel's backups
//! (`kennel_kernel::backup`) from the command line.

use std::path::Path;

use anyhow::anyhow;
use kennel_kernel::backup::{self, Report};

/// Backs up `home` (its daemon may be running) to `file`.
pub async fn backup(home: &Path, file: &Path) -> anyhow::Result<()> {
    let postgres = on_postgres(home).await?;
    let report = backup::backup(home, file, postgres).await.map_err(|e| anyhow!(e.message))?;
    println!("backed up {} to {}: {}", home.display(), file.display(), summary(&report));
    if postgres {
        println!(
            "the database is on PostgreSQL and is not in the archive: back it up with pg_dump \
             (e.g. `pg_dump --format=custom --file=kennel.dump \"$KENNEL_DATABASE_URL\"`)"
        );
    }
    Ok(())
}

/// Restores the backup `file` into `home`, which must be empty or absent.
pub async fn restore(home: &Path, file: &Path) -> anyhow::Result<()> {
    let report = backup::restore(file, home).await.map_err(|e| anyhow!(e.message))?;
    println!(
        "restored {} (made {} by Kennel {}) into {}: {}",
        file.display(),
        report.manifest.created_at,
        report.manifest.kennel_version,
        home.display(),
        summary(&report)
    );
    if report.manifest.database == "postgres" {
        println!("the backup holds no database (it was on PostgreSQL): restore it with pg_restore, then start");
    } else {
        println!("start it with: kennel --home {} start", home.display());
    }
    Ok(())
}

/// Whether the home's database is on PostgreSQL: as its running daemon says (the daemon's
/// environment may name a database this command's does not, and a `kennel.db` left by
/// `migrate-to-postgres` would be a stale copy), else as this command's settings say.
async fn on_postgres(home: &Path) -> anyhow::Result<bool> {
    if let Some(daemon) = super::daemon::Daemon::running(home).await? {
        let status: kennel_kernel::status::DaemonStatus = daemon.get("/api/status").await?;
        return Ok(status.database == "postgres");
    }
    let config = kennel_kernel::config::Config::load(&home.join("config.toml")).map_err(|e| anyhow!("{e}"))?;
    Ok(config.database.postgres_url().is_some())
}

fn summary(report: &Report) -> String {
    let mut line = format!("{} entries, {} bytes of files", report.entries, report.bytes);
    if report.skipped > 0 {
        line.push_str(&format!(
            " ({} left out, each named in the log: FIFOs, sockets and devices, what changed while read, folders nested too deep, sparse files)",
            report.skipped
        ));
    }
    line
}
