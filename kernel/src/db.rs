//! The SQLite database: one WAL file under `$KENNEL_HOME`, migrations embedded and applied at
//! open, and a watcher that notices commits made by another process (the CLI).

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection, SqliteConnection, SqlitePool};

use crate::error::Result;

pub type Db = SqlitePool;

fn options(path: &Path) -> Result<SqliteConnectOptions, sqlx::Error> {
    Ok(SqliteConnectOptions::from_str("sqlite://")?
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(5))
        // Checkpoint less often: hot pages (the task board's) are then written back once for
        // many commits instead of once per thousand WAL pages.
        .pragma("wal_autocheckpoint", "10000")
        // 16 MB of page cache per connection (SQLite's default is 2 MB); it fills only as
        // pages are used.
        .pragma("cache_size", "-16000"))
}

/// Opens (creating if needed) the database and applies the embedded migrations. The error
/// keeps its detail: it goes to the operator starting the daemon, never to a client.
pub async fn open(path: &Path) -> Result<Db, sqlx::Error> {
    let pool = SqlitePoolOptions::new().max_connections(4).connect_with(options(path)?).await?;
    sqlx::migrate!("../migrations").run(&pool).await?;
    Ok(pool)
}

/// Calls `on_change` whenever a commit — by another process, or this one's pool — changed a
/// table the kernel keeps in memory (agent types, agents, API tokens). Looks every `every`
/// with `PRAGMA data_version` on a connection of its own (one tiny query, no table scan), and
/// on a commit reads the `cached_tables_version` counter that triggers on those tables move,
/// so the many commits that touch nothing cached (audit, claims, fires) cause no reload.
pub async fn watch_changes<F>(path: &Path, every: Duration, mut on_change: F) -> Result<()>
where
    F: FnMut() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Send + 'static,
{
    const CACHED_VERSION: &str = "SELECT version FROM cached_tables_version";
    let mut conn = SqliteConnection::connect_with(&options(path)?).await?;
    let mut seen: i64 = sqlx::query_scalar("PRAGMA data_version").fetch_one(&mut conn).await?;
    let mut cached: i64 = sqlx::query_scalar(CACHED_VERSION).fetch_one(&mut conn).await?;
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let version = match sqlx::query_scalar::<_, i64>("PRAGMA data_version").fetch_one(&mut conn).await {
                Ok(v) if v == seen => continue,
                Ok(v) => v,
                Err(e) => {
                    tracing::warn!(error = %e, "change watcher stopped");
                    return;
                }
            };
            seen = version;
            match sqlx::query_scalar::<_, i64>(CACHED_VERSION).fetch_one(&mut conn).await {
                Ok(v) if v == cached => {}
                Ok(v) => {
                    cached = v;
                    on_change().await;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "change watcher stopped");
                    return;
                }
            }
        }
    });
    Ok(())
}

/// Current time as the RFC 3339 UTC text stored in every table.
pub fn now() -> String {
    timestamp(chrono::Utc::now())
}

/// A time as stored: RFC 3339 UTC with milliseconds, so text order is time order.
pub fn timestamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A unique-constraint violation as a `Conflict` with `message`; other errors as they are.
pub fn unique_or<T>(result: std::result::Result<T, sqlx::Error>, message: impl FnOnce() -> String) -> Result<T> {
    match result {
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Err(crate::Error::conflict(message())),
        other => other.map_err(crate::Error::from),
    }
}
