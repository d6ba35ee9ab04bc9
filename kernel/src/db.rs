//! The database: SQLite (one WAL file under `$KENNEL_HOME`) or PostgreSQL, migrations
//! embedded per back end and applied at open, and a watcher that notices commits made by
//! another process (the CLI).
//!
//! SQL lives only here (with `db/`) and in each domain's `store.rs` (a unit test in `lib.rs`
//! checks). Stores reach the database through [`Db`] and the query layer of `db/query.rs`,
//! and write SQL both back ends run (`$N` placeholders, integers as `i64`); where one text
//! cannot serve both, [`Db::dialect`] picks.

use std::future::Future;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection, SqliteConnection, SqlitePool};

use crate::changes::{Changes, Topic};
use crate::error::Result;

mod copy;
mod query;

/// What a paged query binds where it has no cursor, so its condition stays one plain range
/// the index serves (`id < $2`; `$2 IS NULL OR id < $2` keeps SQLite from the index): after
/// every stored text key (UUIDs, names), byte-wise as both back ends compare them.
pub(crate) const AFTER_EVERY_KEY: &str = "\u{10FFFF}";

pub use copy::{CopiedTable, sqlite_to_postgres};

pub(crate) use query::{FromRow, QueryBuilder, Row, Tx, from_row, query, query_as, query_scalar};

/// The database every store uses. Cheap to clone (a pool handle).
#[derive(Clone)]
pub struct Db {
    pool: Pool,
    changes: Changes,
    /// A test's own PostgreSQL database, dropped with the last clone ([`open_for_test`]).
    #[cfg(test)]
    test_database: Option<std::sync::Arc<test_postgres::TestDatabase>>,
}

/// The back end a [`Db`] runs on.
#[derive(Clone, Debug)]
enum Pool {
    /// The default: one file under `$KENNEL_HOME`.
    Sqlite(SqlitePool),
    /// `[database] url` or `KENNEL_DATABASE_URL`.
    Postgres(PgPool),
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Db").field(&self.pool).finish()
    }
}

impl Db {
    /// The topics of each committed write ([`crate::changes`]).
    pub fn changes(&self) -> &Changes {
        &self.changes
    }

    /// The SQL for this back end, where one text cannot serve both (kept rare: each use is a
    /// place the back ends behave apart).
    pub(crate) fn dialect(&self, sqlite: &'static str, postgres: &'static str) -> &'static str {
        match self.pool {
            Pool::Sqlite(_) => sqlite,
            Pool::Postgres(_) => postgres,
        }
    }

    pub(crate) async fn begin(&self) -> Result<Tx> {
        Ok(match &self.pool {
            Pool::Sqlite(pool) => Tx::Sqlite(pool.begin().await?),
            Pool::Postgres(pool) => Tx::Postgres(pool.begin().await?),
        })
    }

    /// A transaction whose statements all see one snapshot: a read and the writes that depend
    /// on it agree on which rows there are (SQLite: the write lock from the start; PostgreSQL:
    /// `REPEATABLE READ`, where a row changed meanwhile fails the transaction instead).
    pub(crate) async fn begin_snapshot(&self) -> Result<Tx> {
        Ok(match &self.pool {
            Pool::Sqlite(pool) => Tx::Sqlite(pool.begin_with("BEGIN IMMEDIATE").await?),
            Pool::Postgres(pool) => Tx::Postgres(pool.begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ").await?),
        })
    }

    /// A transaction that holds the write lock from its first statement, for a read that a
    /// write in the same transaction depends on (count, then insert below a limit). On
    /// PostgreSQL every such transaction takes one advisory lock, so they run one at a time
    /// as SQLite's do.
    pub(crate) async fn begin_write(&self) -> Result<Tx> {
        Ok(match &self.pool {
            Pool::Sqlite(pool) => Tx::Sqlite(pool.begin_with("BEGIN IMMEDIATE").await?),
            Pool::Postgres(pool) => {
                let mut tx = pool.begin().await?;
                sqlx::query("SELECT pg_advisory_xact_lock(7026)").execute(&mut *tx).await?;
                Tx::Postgres(tx)
            }
        })
    }

    /// Whether the database is a PostgreSQL server, which several daemons may share (a
    /// SQLite home has one daemon: its lock file sees to that).
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self.pool, Pool::Postgres(_))
    }

    /// Calls `on_notify` with the payload of every `NOTIFY channel` (on PostgreSQL; `None`
    /// after the listener lost its server and may have missed some). Nothing on SQLite.
    pub(crate) async fn listen<F>(&self, channel: &'static str, on_notify: F) -> Result<()>
    where
        F: FnMut(Option<&str>) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send + 'static,
    {
        if let Pool::Postgres(pool) = &self.pool {
            listen(pool, channel, on_notify).await?;
        }
        Ok(())
    }

    /// A pool of its own on the same database, of `connections`, for work that must not wait
    /// behind the main pool's (the cluster's heartbeat while every connection is busy); it
    /// connects when first used. On SQLite, the same pool (one daemon: nothing to be late for).
    pub(crate) fn side_pool(&self, connections: u32) -> Db {
        match &self.pool {
            Pool::Sqlite(_) => self.clone(),
            Pool::Postgres(pool) => Db {
                pool: Pool::Postgres(
                    PgPoolOptions::new()
                        .max_connections(connections)
                        .connect_lazy_with((*pool.connect_options()).clone()),
                ),
                ..self.clone()
            },
        }
    }

    /// Whether [`Db::close`] was called: background work stops rather than fail.
    pub fn is_closed(&self) -> bool {
        match &self.pool {
            Pool::Sqlite(pool) => pool.is_closed(),
            Pool::Postgres(pool) => pool.is_closed(),
        }
    }

    pub async fn close(&self) {
        match &self.pool {
            Pool::Sqlite(pool) => pool.close().await,
            Pool::Postgres(pool) => pool.close().await,
        }
    }
}

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

/// Opens (creating if needed) the SQLite database and applies the embedded migrations. The
/// error keeps its detail: it goes to the operator starting the daemon, never to a client.
pub async fn open(path: &Path) -> Result<Db, sqlx::Error> {
    let changes = Changes::default();
    let told = changes.clone();
    let pool = SqlitePoolOptions::new()
        .max_connections(4)
        .after_connect(move |conn, _| {
            let told = told.clone();
            Box::pin(async move { tell_commits(conn, told).await })
        })
        .connect_with(options(path)?)
        .await?;
    let db = Db {
        pool: Pool::Sqlite(pool),
        changes,
        #[cfg(test)]
        test_database: None,
    };
    migrate(&db).await?;
    Ok(db)
}

/// Connects to the PostgreSQL database `url` names, applies its migrations, and listens for
/// the topics every daemon's commits raise (the `*_notify` triggers of the migrations).
pub async fn open_postgres(url: &str) -> Result<Db, sqlx::Error> {
    let db = connect_postgres(url).await?;
    migrate(&db).await?;
    let Pool::Postgres(pool) = &db.pool else { unreachable!("connect_postgres makes a PostgreSQL pool") };
    let told = db.changes.clone();
    listen(pool, "kennel_changes", move |payload| {
        let told = told.clone();
        let topics = match payload {
            Some(name) => Topic::parse(name).into_iter().collect(),
            // Notifications may have been missed while the connection was down.
            None => Topic::ALL.to_vec(),
        };
        Box::pin(async move { topics.into_iter().for_each(|t| told.send(t)) })
    })
    .await?;
    Ok(db)
}

/// A PostgreSQL pool, nothing applied or listened to yet.
async fn connect_postgres(url: &str) -> Result<Db, sqlx::Error> {
    // Three of the connections are the listeners' (`kennel_changes` in `open_postgres`,
    // `kennel_cached` in `watch_changes`, `kennel_cluster` in `cluster::Cluster::start`); they
    // hold them for the life of the pool.
    let pool = PgPoolOptions::new().max_connections(16).connect_with(PgConnectOptions::from_str(url)?).await?;
    Ok(Db {
        pool: Pool::Postgres(pool),
        changes: Changes::default(),
        #[cfg(test)]
        test_database: None,
    })
}

/// Applies the back end's embedded migrations.
async fn migrate(db: &Db) -> Result<(), sqlx::migrate::MigrateError> {
    match &db.pool {
        Pool::Sqlite(pool) => sqlx::migrate!("../migrations/sqlite").run(pool).await,
        Pool::Postgres(pool) => sqlx::migrate!("../migrations/postgres").run(pool).await,
    }
}

/// Listens on `channel` from a connection of its own, for the life of the pool, handing each
/// notification's payload to `on_notify` (`None`: the connection was lost and made again, so
/// notifications may have been missed).
async fn listen(
    pool: &PgPool,
    channel: &'static str,
    mut on_notify: impl FnMut(Option<&str>) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send + 'static,
) -> Result<(), sqlx::Error> {
    let mut listener = sqlx::postgres::PgListener::connect_with(pool).await?;
    listener.listen(channel).await?;
    let pool = pool.clone();
    tokio::spawn(async move {
        while !pool.is_closed() {
            match listener.try_recv().await {
                Ok(Some(n)) => on_notify(Some(n.payload())).await,
                // Lost; the next `try_recv` connects and listens again.
                Ok(None) => on_notify(None).await,
                // The daemon is closing the database.
                Err(sqlx::Error::PoolClosed) => return,
                Err(e) => {
                    tracing::warn!(error = %e, channel, "PostgreSQL listener lost its server; trying again");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    });
    Ok(())
}

/// Has a connection note the topics of the tables each transaction writes (SQLite's update
/// hook, called for every row) and send them when it commits; a rollback forgets them. The
/// hooks run inside SQLite's calls and only touch a small set and a channel. (A PostgreSQL
/// back end would raise the same topics with `LISTEN`/`NOTIFY`.)
async fn tell_commits(conn: &mut SqliteConnection, changes: Changes) -> Result<(), sqlx::Error> {
    use std::sync::{Arc, Mutex};
    let written: Arc<Mutex<Vec<Topic>>> = Arc::default();
    let mut handle = conn.lock_handle().await?;
    let noted = written.clone();
    handle.set_update_hook(move |row| {
        if let Some(topic) = Topic::of_table(row.table) {
            let mut noted = noted.lock().unwrap_or_else(|e| e.into_inner());
            if !noted.contains(&topic) {
                noted.push(topic);
            }
        }
    });
    let committed = written.clone();
    handle.set_commit_hook(move || {
        for topic in committed.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            changes.send(topic);
        }
        true
    });
    handle.set_rollback_hook(move || written.lock().unwrap_or_else(|e| e.into_inner()).clear());
    Ok(())
}

/// Calls `on_change` whenever a commit — by another process, or this one's pool — changed a
/// table the kernel keeps in memory (agent types, agents, API tokens). Looks every `every`
/// with `PRAGMA data_version` on a connection of its own (one tiny query, no table scan), and
/// on a commit reads the `cached_tables_version` counter that triggers on those tables move,
/// so the many commits that touch nothing cached (audit, claims, fires) cause no reload.
///
/// On PostgreSQL it listens instead: the `*_cached_notify` triggers tell every daemon of a
/// commit to those tables, made by any daemon or CLI.
pub async fn watch_changes<F>(db: &Db, path: &Path, every: Duration, mut on_change: F) -> Result<()>
where
    F: FnMut() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Send + 'static,
{
    if let Pool::Postgres(pool) = &db.pool {
        listen(pool, "kennel_cached", move |_| on_change()).await?;
        return Ok(());
    }
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

/// A time a person or client gave (RFC 3339, any offset) as stored, for comparing with
/// stored times; `field` names it in the refusal.
pub fn parse_time(field: &str, text: &str) -> crate::error::Result<String> {
    chrono::DateTime::parse_from_rfc3339(text).map(|t| timestamp(t.to_utc())).map_err(|e| {
        crate::error::Error::invalid(format!("`{text}` is not an RFC 3339 time (2026-12-01T09:00:00Z): {e}"))
            .on_field(field)
    })
}

/// A time as stored: RFC 3339 UTC with milliseconds, so text order is time order.
pub fn timestamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Pushes ` WHERE c1 AND c2 …`: a condition (`"column op "` then its value) for each filter
/// given and none for the others, so an index on the columns given serves the query (an
/// `$1 IS NULL OR …` form would scan the whole table). Whether it pushed any.
pub(crate) fn push_conditions<'v>(
    query: &mut QueryBuilder,
    conditions: impl IntoIterator<Item = (&'static str, Option<&'v str>)>,
) -> bool {
    let mut and = " WHERE ";
    for (condition, value) in conditions {
        if let Some(value) = value {
            query.push(and).push(condition).push_bind(value);
            and = " AND ";
        }
    }
    and == " AND "
}

/// The `WHERE` of a newest-first log's page: `column = value` for each filter given
/// ([`push_conditions`]; `filters` name `"column = "`), and `id < before` to continue below a
/// page.
pub(crate) fn where_filters(query: &mut QueryBuilder, filters: &[(&'static str, Option<&str>)], before: Option<i64>) {
    let any = push_conditions(query, filters.iter().copied());
    if let Some(before) = before {
        query.push(if any { " AND " } else { " WHERE " }).push("id < ").push_bind(before);
    }
}

/// A table whose ids operators may give in the short form they see ([`crate::text::short_id`]).
#[derive(Clone, Copy)]
pub(crate) enum ShortIds {
    Tasks,
    Schedules,
}

impl ShortIds {
    /// The ids ending in `$1`, two at most (one is the answer, two an ambiguity).
    fn ending_in(self) -> &'static str {
        match self {
            ShortIds::Tasks => "SELECT id FROM tasks WHERE id LIKE '%' || $1 LIMIT 2",
            ShortIds::Schedules => "SELECT id FROM schedules WHERE id LIKE '%' || $1 LIMIT 2",
        }
    }

    fn what(self) -> &'static str {
        match self {
            ShortIds::Tasks => "task",
            ShortIds::Schedules => "schedule",
        }
    }
}

/// The whole id that `id` names in `table`: `id` itself unless it is the 8-hex-digit short
/// form, which names the one id ending in it. `None` when no id does; a short form that
/// several ids end in is a `Conflict` (it happens once tables hold tens of thousands of rows)
/// asking for the whole id. The short form is found by a scan: operators' tables are small,
/// and an id typed by a person is not a hot path.
pub(crate) async fn full_id(db: &Db, ids: ShortIds, id: &str) -> Result<Option<String>> {
    let id = id.trim();
    let short = id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit());
    if !short {
        return Ok(Some(id.to_string()));
    }
    let found: Vec<String> = query_scalar(ids.ending_in()).bind(id.to_ascii_lowercase()).fetch_all(db).await?;
    match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.clone())),
        _ => Err(crate::Error::conflict(format!(
            "more than one {} has an id ending in `{id}`: give the whole id",
            ids.what()
        ))),
    }
}

/// A unique-constraint violation as a `Conflict` with `message`; other errors as they are.
pub fn unique_or<T>(result: std::result::Result<T, sqlx::Error>, message: impl FnOnce() -> String) -> Result<T> {
    match result {
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Err(crate::Error::conflict(message())),
        other => other.map_err(crate::Error::from),
    }
}

/// `as_str` (the text stored) and `parse` (a stored text back; anything else is `Internal`,
/// since only this daemon writes these columns) for an enum stored as text.
macro_rules! stored_enum {
    ($t:ty { $($v:ident = $s:literal),+ $(,)? }) => {
        impl $t {
            /// Every value, in declaration order.
            pub const ALL: &'static [$t] = &[$(<$t>::$v),+];

            pub fn as_str(self) -> &'static str {
                match self { $(Self::$v => $s),+ }
            }

            pub(crate) fn parse(s: &str) -> $crate::error::Result<Self> {
                match s {
                    $($s => Ok(Self::$v),)+
                    other => Err($crate::error::Error::internal(format_args!(
                        "stored value `{other}` is not a {}", stringify!($t)
                    ))),
                }
            }
        }

        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use stored_enum;

/// The database a kernel test uses: SQLite in `dir`, or with `KENNEL_TEST_BACKEND=postgres`
/// (`./scripts/test`'s second pass) a PostgreSQL database of the test's own.
#[cfg(test)]
pub(crate) async fn open_for_test(dir: &Path) -> Db {
    if std::env::var("KENNEL_TEST_BACKEND").as_deref() != Ok("postgres") {
        return open(&dir.join("kennel.db")).await.expect("open the test database");
    }
    let database = test_postgres::database("a kernel test on PostgreSQL")
        .await
        .expect("KENNEL_TEST_BACKEND=postgres needs KENNEL_TEST_DATABASE_URL");
    let mut db = open_postgres(&database.url).await.expect("open the test's PostgreSQL database");
    db.test_database = Some(std::sync::Arc::new(database));
    db
}

#[cfg(test)]
mod schema_parity;
#[cfg(test)]
pub(crate) mod test_postgres;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_short_id_names_the_one_id_ending_in_it_and_an_ambiguous_one_asks_for_the_whole() {
        let dir = tempfile::tempdir().unwrap();
        let db = open_for_test(dir.path()).await;
        for id in [
            "01a2b3c4-0000-7000-8000-0000aaaa1111",
            "01a2b3c4-0000-7000-8000-0000bbbb2222",
            "01a2b3c4-0000-7000-8000-0001bbbb2222",
        ] {
            query("INSERT INTO tasks (id, title, body, priority, status, posted_by, retries, created_at, updated_at) VALUES ($1, 't', '', 5, 'pending', 'x', 0, '', '')")
                .bind(id)
                .execute(&db)
                .await
                .unwrap();
        }
        let full = |id: &'static str| {
            let db = db.clone();
            async move { full_id(&db, ShortIds::Tasks, id).await }
        };
        assert_eq!(full("aaaa1111").await.unwrap().as_deref(), Some("01a2b3c4-0000-7000-8000-0000aaaa1111"));
        assert_eq!(full("AAAA1111").await.unwrap().as_deref(), Some("01a2b3c4-0000-7000-8000-0000aaaa1111"));
        assert_eq!(full("cccc3333").await.unwrap(), None);
        let ambiguous = full("bbbb2222").await.unwrap_err();
        assert_eq!(ambiguous.kind, crate::ErrorKind::Conflict);
        assert!(ambiguous.message.contains("give the whole id"), "{}", ambiguous.message);
        assert_eq!(full("not-an-id").await.unwrap().as_deref(), Some("not-an-id"), "whole ids pass as they are");
    }
}
