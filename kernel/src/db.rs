//! The database: SQLite (one WAL file under `$KENNEL_HOME`) or PostgreSQL, migrations
//! embedded per back end and applied at open, and a watcher that notices commits made by
//! another process (the CLI).
//!
//! SQL lives only here (with `db/`) and in each domain's `store.rs` (`kernel/tests/consistency.rs`
//! checks). Stores reach the database through [`Db`] and the query layer of `db/query.rs`,
//! and write SQL both back ends run (`$N` placeholders, integers as `i64`); where one text
//! cannot serve both, [`Db::dialect`] picks.
//!
//! # Design notes
//!
//! ## Layout
//!
//! `Db` (SQLite: WAL, `synchronous=NORMAL`, foreign keys; or PostgreSQL), migrations per back end
//! (a fresh database gets the whole schema in one transaction instead, a new SQLite file an
//! image of it: `baseline.rs`),
//! `watch_changes` (below), `stored_enum!`; `query.rs` the query layer
//! every store uses, `copy.rs` `kennel migrate-to-postgres`, `schema_parity.rs` and
//! `test_postgres.rs` the PostgreSQL tests' (below).
//!
//! ## State shared with the CLI
//!
//! The CLI (`kennel token …`, `kennel agent grant …`) writes to the same SQLite file as a
//! running daemon. The daemon serves reads from in-memory copies (agent types, agents and their
//! grants, token hashes) so that the hot paths never wait on SQLite. To pick up the CLI's
//! writes, a watcher polls `PRAGMA data_version` on its own connection every 200 ms; after a
//! commit it reads `cached_tables_version`, a counter that SQL triggers on `agent_types`,
//! `agents` and `api_tokens` move, and reloads only if it moved — audit rows, claims and fires
//! cause no reload. The counter is read before the kernel loads its copies and the watcher
//! starts from that mark, so a commit between the load and the watcher's first look is not
//! missed (its connection is opened by its own task, after the daemon serves). Writes and
//! reloads are serialised by one lock per service, so a reload can never put back a stale
//! copy. **Decision:** a CLI change reaches a running daemon within about 0.2 s; changes made
//! through the API are visible at once. On PostgreSQL the daemon listens instead
//! (`kennel_cached`, see `crate::db`) and the CLI's change arrives at once.
//!
//! ## Storage back ends
//!
//! SQLite in `$KENNEL_HOME/kennel.db` is the default. `[database] url = "postgres://…"` or
//! `KENNEL_DATABASE_URL` (which wins) puts every store on a PostgreSQL database instead. The URL
//! is checked when the config loads (a wrong scheme or an unreadable URL stops start-up with its
//! line), is never serialised, is shown with its password left out, and `KENNEL_DATABASE_URL` is
//! one of the variables no child process gets.
//!
//! - **One query layer** (`db/query.rs`). Stores call `db::query`, `db::query_scalar`,
//!   `db::query_as` and `db::QueryBuilder`, which read like sqlx's, on `&Db` or `&mut db::Tx`. A
//!   query keeps its arguments as values (`Arg`: text, integer, real, bytes, each with a typed
//!   NULL, since PostgreSQL types every parameter) and becomes a SQLite or a PostgreSQL query
//!   only when it runs, so each store function is compiled once (binary size) and no store
//!   knows which back end it is on. Rows come back as `db::Row`; `try_get` reads the few types
//!   stores keep (`Stored`: text, borrowed text, `i64`, `i32`, `f64`, bytes, `bool`, options).
//!   **Decision:** not sqlx's `Any` driver: it decodes by the value's own type (a SQLite 0/1 is
//!   not a `bool`), its builder writes `?` placeholders that PostgreSQL refuses, it copies
//!   every row into its own form, and it hides the `SqliteConnection` whose hooks feed the live
//!   pages.
//! - **One schema, two migration folders.** `migrations/sqlite/` holds every SQLite migration
//!   (0001–0027 were moved from `migrations/`, unchanged: sqlx checks a migration's version and
//!   checksum, not its path, so existing homes start as before). `migrations/postgres/` starts
//!   with `0027_baseline.sql`, the PostgreSQL form of SQLite's 0001–0027 in one file, so a
//!   version number names one schema on both back ends; every later migration is written once
//!   per back end under the same number. Mapping: `TEXT` → `TEXT COLLATE "C"` (byte order, as
//!   SQLite compares, so keyset pages and RFC 3339 times sort the same), `INTEGER` → `BIGINT`
//!   (the code reads every integer as `i64`; flags stay 0/1 integers, and `Stored for bool`
//!   also takes PostgreSQL's own booleans, as `EXISTS (…)` gives), `REAL` → `DOUBLE
//!   PRECISION`, `BLOB` → `BYTEA`, `AUTOINCREMENT` → an identity column `BY DEFAULT`, triggers
//!   → PL/pgSQL trigger functions of the same names, foreign keys `DEFERRABLE` (see the copy).
//! - **The parity test** (`db/schema_parity.rs`) applies both folders — SQLite's through the
//!   daemon's own `db::open` — and compares every table's columns (order, type, nullability,
//!   default, primary key), foreign keys (with their `ON DELETE`), indexes (columns,
//!   uniqueness, partial or not) and triggers; a second test checks the numbering rule.
//! - **Where the back ends behave apart**, each handled in one place:
//!   - *Writes one at a time.* `Db::begin_write` is `BEGIN IMMEDIATE` on SQLite and a
//!     transaction holding one advisory lock (`pg_advisory_xact_lock`) on PostgreSQL, so
//!     count-then-insert limits and the first operator's set-up hold across daemons.
//!   - *Task claims* lock the row they pick and pass over rows another claim holds (`FOR UPDATE
//!     SKIP LOCKED`, `Db::dialect` picks the text), and the update checks the task is still
//!     pending; SQLite runs writes one at a time and needs neither.
//!   - *Change topics.* SQLite's connections note the tables each transaction writes (update
//!     and commit hooks); on PostgreSQL, statement triggers `pg_notify` the topic
//!     (`kennel_changes`), sent at commit, once per transaction per topic, to every daemon's
//!     listener. The cached tables (agent types, agents, tokens) notify `kennel_cached`, which
//!     replaces the `PRAGMA data_version` poll: a CLI write reaches a running daemon at once
//!     rather than within 0.2 s. Each listener holds one of the pool's ten connections and ends
//!     when the pool closes.
//!   - *Types.* PostgreSQL sums `BIGINT`s into `NUMERIC` (the usage sums cast back), refuses a
//!     value of the wrong type at the door (SQLite stores it and the read fails), and its text
//!     cannot hold U+0000: **decision** — such a character is stored as U+FFFD rather than the
//!     write failing (only text that came with a NUL is touched; SQLite keeps it).
//!   - *Bare column names in an upsert* are ambiguous to PostgreSQL (`event/store.rs` names
//!     them with the table).
//! - **`kennel migrate-to-postgres URL`** (`db/copy.rs`, the CLI in `server/src/cli/mod.rs`).
//!   Refused while the home's daemon runs and for a database that is not empty (another
//!   application's table, or rows in Kennel's; Kennel's schema with no rows — a copy that
//!   failed after the migrations ran — counts as empty, so it can be run again). The SQLite side
//!   is brought to this version by its own migrations and read in one transaction (one
//!   snapshot), a page of 1,000 rows at a time by `rowid`; the PostgreSQL side gets the same
//!   version's migrations, then, in one transaction: user triggers off on every table (the copy
//!   brings the rows they wrote: task history, version counters) and the migrations' seed rows
//!   removed, every table copied with its ids, the foreign keys checked (`SET CONSTRAINTS ALL
//!   IMMEDIATE`), triggers on again, each identity sequence set past the largest copied id, and
//!   each table's count compared with SQLite's; any difference or error rolls all of it back.
//!   It prints each table's rows. The SQLite file is left as it was.
//! - **Tests on both.** `./scripts/test` uses `KENNEL_TEST_DATABASE_URL` if given; otherwise it
//!   installs Debian's `postgresql` if missing and starts a throwaway cluster (`initdb` into a
//!   temp dir, loopback port, `fsync=off`, as `postgres` when run as root since PostgreSQL
//!   refuses root), removed at exit; about 2 s. After the usual pass it runs the kernel's unit
//!   tests and the system-test modules of stored state (`tests/postgres-modules`) again with
//!   `KENNEL_TEST_BACKEND=postgres`: kernel tests open their database with `db::open_for_test` (a database of their own, dropped with the
//!   last `Db` clone), and each system-test `Home` gets a database of its own that every daemon
//!   and CLI run of that home is given as `KENNEL_DATABASE_URL` (`tests/src/postgres.rs`, made
//!   and dropped with `psql`). Tests that looked at `kennel.db` itself ask the home instead
//!   (`Home::stored_bytes`: the file and its WAL, or `pg_dump`). `KENNEL_REQUIRE_POSTGRES=1`
//!   (set by the script) makes a missing server fail the PostgreSQL-only tests (the parity test,
//!   the migration) instead of skipping them.
//!
//! `MAX() + 1` numbering (a session's message numbers, an agent's canvas versions, a skill's
//! history) takes `Tx::lock_key` first: on PostgreSQL a transaction-scoped advisory lock on the
//! key's hash, so two daemons (or two connections of one) never take one number; on SQLite
//! nothing, writes being one at a time.
//!
//! ## Stored rows
//!
//! - **Stored rows never panic.** Every column is read with `Row::try_get` (its error becomes
//!   `Internal`); `clippy.toml` disallows `sqlx::Row::get`. A stored value that does not parse
//!   (an id, a manifest, an enum: `db::stored_enum!`) is `Internal` too.

use std::future::Future;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection, SqliteConnection, SqlitePool};

use crate::changes::{Changes, Topic};
use crate::error::Result;

mod baseline;
mod copy;
mod query;
pub(crate) mod snapshot;

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
    /// Set while start-up runs its queries one after another ([`Db::one_connection`]).
    one_connection: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// A test's own PostgreSQL database, dropped with the last clone ([`open_for_test`]).
    #[cfg(test)]
    test_database: Option<std::sync::Arc<test_postgres::TestDatabase>>,
}

/// How long a query of [`Db::one_connection`] waits at most for a connection to come back. A
/// ping (and the rollback of a transaction dropped unfinished) on SQLite's worker thread takes
/// microseconds, but a loaded machine can leave that thread waiting for a core for some
/// milliseconds. While the kernel opens, nothing else holds a connection (the audit and
/// usage writers wait for work), so the bound is only a backstop: past it, the queries of that
/// guard stop waiting and open connections as they would have.
const SETTLE_AT_MOST: Duration = Duration::from_millis(100);

/// [`Db::one_connection`]'s guard.
pub(crate) struct OneConnection(Db);

impl Drop for OneConnection {
    fn drop(&mut self) {
        self.0.one_connection.store(false, std::sync::atomic::Ordering::Relaxed);
    }
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

    /// Until the guard is dropped, every query on the pool first waits for the connections
    /// earlier queries used to be back in it, for at most [`SETTLE_AT_MOST`]. For a run of
    /// queries one after another, as the kernel's opening makes: sqlx gives a finished
    /// query's connection back in a task of its own (after a ping), so the next query,
    /// finding none idle yet, would open another. On SQLite a connection's first query parses
    /// the whole schema, about a millisecond: the kernel's opening made two where one does.
    pub(crate) fn one_connection(&self) -> OneConnection {
        self.one_connection.store(true, std::sync::atomic::Ordering::Relaxed);
        OneConnection(self.clone())
    }

    /// What [`Db::one_connection`] waits for before a query (nothing once it is dropped, nor
    /// on PostgreSQL, whose listeners hold connections of the pool for good).
    pub(crate) async fn settle(&self) {
        let Pool::Sqlite(pool) = &self.pool else { return };
        if !self.one_connection.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let deadline = std::time::Instant::now() + SETTLE_AT_MOST;
        while pool.num_idle() < pool.size() as usize {
            if std::time::Instant::now() > deadline {
                self.one_connection.store(false, std::sync::atomic::Ordering::Relaxed);
                return;
            }
            tokio::task::yield_now().await;
        }
    }

    /// The pool's connections: idle, and in use.
    pub(crate) fn connections_in_use(&self) -> (u32, u32) {
        let (size, idle) = match &self.pool {
            Pool::Sqlite(pool) => (pool.size(), pool.num_idle()),
            Pool::Postgres(pool) => (pool.size(), pool.num_idle()),
        };
        let idle = idle as u32;
        (idle, size.saturating_sub(idle))
    }

    /// The connections the pool holds (SQLite's, for tests of [`Db::one_connection`]).
    #[cfg(test)]
    pub(crate) fn connections(&self) -> u32 {
        match &self.pool {
            Pool::Sqlite(pool) => pool.size(),
            Pool::Postgres(pool) => pool.size(),
        }
    }

    pub(crate) async fn begin(&self) -> Result<Tx> {
        self.settle().await;
        Ok(match &self.pool {
            Pool::Sqlite(pool) => Tx::Sqlite(pool.begin().await?),
            Pool::Postgres(pool) => Tx::Postgres(pool.begin().await?),
        })
    }

    /// A transaction whose statements all see one snapshot: a read and the writes that depend
    /// on it agree on which rows there are (SQLite: the write lock from the start; PostgreSQL:
    /// `REPEATABLE READ`, where a row changed meanwhile fails the transaction instead).
    pub(crate) async fn begin_snapshot(&self) -> Result<Tx> {
        self.settle().await;
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
        self.settle().await;
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
    baseline::write_sqlite_image_if_absent(path)?;
    let db = connect_sqlite(path).await?;
    {
        let _one = db.one_connection();
        migrate(&db).await?;
    }
    Ok(db)
}

/// A SQLite pool whose connections tell [`Changes`] of their commits, nothing applied yet.
async fn connect_sqlite(path: &Path) -> Result<Db, sqlx::Error> {
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
    Ok(Db {
        pool: Pool::Sqlite(pool),
        changes,
        one_connection: Default::default(),
        #[cfg(test)]
        test_database: None,
    })
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
        one_connection: Default::default(),
        #[cfg(test)]
        test_database: None,
    })
}

use baseline::migrate;

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

/// Where the tables the kernel keeps in memory (agent types, agents, API tokens) stood: read
/// before the kernel loads them, and given to [`watch_changes`], so a commit made between the
/// load and the watcher's start is still noticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachedMark(i64);

const CACHED_VERSION: &str = "SELECT version FROM cached_tables_version";

/// The [`CachedMark`] now.
pub async fn cached_mark(db: &Db) -> Result<CachedMark> {
    Ok(CachedMark(query_scalar(CACHED_VERSION).fetch_one(db).await?))
}

/// Calls `on_change` whenever a commit — by another process, or this one's pool — changed a
/// table the kernel keeps in memory (agent types, agents, API tokens) since `loaded` was
/// read. Looks every `every` with `PRAGMA data_version` on a connection of its own (one tiny
/// query, no table scan), and on a commit reads the `cached_tables_version` counter that
/// triggers on those tables move, so the many commits that touch nothing cached (audit,
/// claims, fires) cause no reload. That connection is opened by the watcher's own task, not
/// here: opening one parses the whole schema, time the daemon's start need not wait for.
///
/// On PostgreSQL it listens instead: the `*_cached_notify` triggers tell every daemon of a
/// commit to those tables, made by any daemon or CLI (`loaded` is not looked at: a commit
/// between the load and the `LISTEN` goes unheard until the next one, as before).
pub async fn watch_changes<F>(db: &Db, path: &Path, every: Duration, loaded: CachedMark, mut on_change: F) -> Result<()>
where
    F: FnMut() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Send + 'static,
{
    if let Pool::Postgres(pool) = &db.pool {
        listen(pool, "kennel_cached", move |_| on_change()).await?;
        return Ok(());
    }
    let options = options(path)?;
    tokio::spawn(async move {
        if let Err(e) = poll_changes(&options, every, loaded, &mut on_change).await {
            tracing::warn!(error = %e, "change watcher stopped");
        }
    });
    Ok(())
}

/// [`watch_changes`] on SQLite: runs until its connection fails.
async fn poll_changes<F>(
    options: &SqliteConnectOptions,
    every: Duration,
    loaded: CachedMark,
    on_change: &mut F,
) -> Result<(), sqlx::Error>
where
    F: FnMut() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Send + 'static,
{
    let mut conn = SqliteConnection::connect_with(options).await?;
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut cached = loaded.0;
    // Read first: a commit after it moves `data_version`, so the loop looks again.
    let mut seen: i64 = sqlx::query_scalar("PRAGMA data_version").fetch_one(&mut conn).await?;
    loop {
        let now: i64 = sqlx::query_scalar(CACHED_VERSION).fetch_one(&mut conn).await?;
        if now != cached {
            cached = now;
            on_change().await;
        }
        loop {
            tick.tick().await;
            let version: i64 = sqlx::query_scalar("PRAGMA data_version").fetch_one(&mut conn).await?;
            if version != seen {
                seen = version;
                break;
            }
        }
    }
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

    async fn add_token(db: &Db, name: &str) {
        query("INSERT INTO api_tokens (name, token_hash, created_at) VALUES ($1, $2, '')")
            .bind(name)
            .bind(format!("hash-of-{name}"))
            .execute(db)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn the_watcher_hears_of_a_cached_table_written_before_it_started_and_after_but_not_of_others() {
        // SQLite's poll: PostgreSQL's listener hears only what is committed after its `LISTEN`.
        let dir = tempfile::tempdir().unwrap();
        let db = open(&dir.path().join("kennel.db")).await.unwrap();
        let loaded = cached_mark(&db).await.unwrap();
        // Written after the kernel read its copy, before the watcher began: the window a
        // watcher that took its own mark at start would miss.
        add_token(&db, "before").await;
        let (told, mut heard) = tokio::sync::mpsc::unbounded_channel();
        watch_changes(&db, &dir.path().join("kennel.db"), Duration::from_millis(20), loaded, move || {
            let told = told.clone();
            Box::pin(async move {
                let _ = told.send(());
            })
        })
        .await
        .unwrap();
        let within = Duration::from_secs(5);
        assert!(tokio::time::timeout(within, heard.recv()).await.unwrap().is_some(), "the earlier write is heard");

        query("INSERT INTO tasks (id, title, body, priority, status, posted_by, retries, created_at, updated_at) VALUES ('t1', 't', '', 5, 'pending', 'x', 0, '', '')")
            .execute(&db)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(heard.try_recv().is_err(), "a write to nothing cached reloads nothing");

        add_token(&db, "after").await;
        assert!(tokio::time::timeout(within, heard.recv()).await.unwrap().is_some(), "a later write is heard");
    }

    #[tokio::test]
    async fn queries_one_after_another_share_one_connection_while_asked_to() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(&dir.path().join("kennel.db")).await.unwrap();
        let one = db.one_connection();
        for _ in 0..20 {
            query_scalar::<i64>("SELECT count(*) FROM agents").fetch_one(&db).await.unwrap();
            query("UPDATE cached_tables_version SET version = version").execute(&db).await.unwrap();
            // Dropped unfinished: rolled back on its way back to the pool.
            let mut tx = db.begin_write().await.unwrap();
            query("DELETE FROM agents").execute(&mut tx).await.unwrap();
        }
        assert_eq!(db.connections(), 1);
        drop(one);
    }

    #[tokio::test]
    async fn opening_a_kernel_on_a_new_and_an_existing_home_uses_one_connection_of_the_pool() {
        let home = tempfile::tempdir().unwrap();
        for _ in 0..2 {
            let kernel = crate::Kernel::open(home.path()).await.unwrap();
            assert_eq!(kernel.db().connections(), 1, "the change watcher's own is not the pool's");
            kernel.close().await;
        }
    }
}
