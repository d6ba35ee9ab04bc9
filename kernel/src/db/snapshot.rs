//! A SQLite database copied while in use, and checked (`crate::backup`), over connections of
//! their own rather than a daemon's pool: the CLI runs them beside a running daemon.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::Connection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};

use crate::error::{Error, Result};

async fn connect(path: &Path, read_only: bool) -> Result<SqliteConnection> {
    let options = SqliteConnectOptions::from_str("sqlite://")
        .map_err(Error::internal)?
        .filename(path)
        .create_if_missing(false)
        .read_only(read_only)
        // A busy daemon holds the write lock for moments; these only read.
        .busy_timeout(Duration::from_secs(30));
    SqliteConnection::connect_with(&options)
        .await
        .map_err(|e| Error::unavailable(format!("cannot open {}: {e}", path.display())))
}

/// A consistent copy of the database at `from` into the new file `to`: `VACUUM INTO`, the
/// data as of one read transaction while others go on writing.
pub async fn vacuum_into(from: &Path, to: &Path) -> Result<()> {
    // SQLite takes the path as text: one that is not UTF-8 would name another file.
    let Some(target) = to.to_str() else {
        return Err(Error::invalid(format!("{} is not a UTF-8 path: back up to a folder whose path is", to.display())));
    };
    let mut conn = connect(from, false).await?;
    let copied = sqlx::query("VACUUM INTO ?").bind(target.to_string()).execute(&mut conn).await;
    let _ = conn.close().await;
    copied.map_err(|e| Error::unavailable(format!("cannot copy the database {}: {e}", from.display())))?;
    Ok(())
}

/// SQLite's `PRAGMA quick_check` of the database at `path`: `ok`, or what is wrong.
pub async fn quick_check(path: &Path) -> Result<String> {
    let mut conn = connect(path, true).await?;
    let verdict = sqlx::query_scalar("PRAGMA quick_check").fetch_one(&mut conn).await;
    let _ = conn.close().await;
    verdict.map_err(|e| Error::unavailable(format!("cannot check {}: {e}", path.display())))
}
