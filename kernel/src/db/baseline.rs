//! A fresh database gets its whole schema in one transaction instead of replaying every
//! migration: replaying SQLite's 39 took about 25 of a first start's 50 ms, each migration
//! its own transaction with two bookkeeping statements, several rebuilding a table.
//!
//! - **SQLite** runs `migrations/baseline/sqlite.sql`: the schema (and seed rows) the
//!   migrations leave, as SQLite itself prints it, through [`BASELINE_VERSION`]. A test
//!   (`a_fresh_databases_baseline_is_what_the_migrations_make`) replays the migrations on an
//!   empty database and fails unless the file is exactly what they made; it says how to write
//!   the file again after a new migration.
//! - **PostgreSQL** runs its migrations' own text, joined, as one script: one round trip
//!   instead of six per migration. Its schema is checked against SQLite's by the parity test.
//!
//! Either way, sqlx's bookkeeping table then lists every migration the baseline stands for,
//! with its checksum, so sqlx's migrator — which every existing database goes through, and
//! which applies any newer migration afterwards — sees them as applied. "Fresh" means the
//! database has no table at all; it is looked at inside the write lock (SQLite's `BEGIN
//! IMMEDIATE`, PostgreSQL's advisory lock), so two processes opening one new database lay the
//! baseline once and the second finds it laid.
//!
//! A new SQLite home skips even that: its database file is written from an image of the
//! database the baseline makes ([`write_sqlite_image_if_absent`]), about a millisecond instead
//! of SQLite's 14 for the baseline's 108 statements of DDL, which were half of a first start.

use std::io::Write;
use std::path::Path;

use sqlx::migrate::{Migrate, MigrateError, Migrator};

use super::{Db, Pool, Tx, query, query_scalar};

/// SQLite's migrations, each applied once to an existing database.
pub(super) static SQLITE: Migrator = sqlx::migrate!("../migrations/sqlite");
/// PostgreSQL's: a baseline of SQLite's first 27, then one per later SQLite migration.
pub(super) static POSTGRES: Migrator = sqlx::migrate!("../migrations/postgres");

/// The newest migration `migrations/baseline/sqlite.sql` contains.
pub(super) const BASELINE_VERSION: i64 = 46;
const SQLITE_BASELINE: &str = include_str!("../../../migrations/baseline/sqlite.sql");

/// The database file the SQLite baseline makes, bookkeeping rows included, LZ4-compressed
/// (151 pages, mostly the empty roots of tables and indexes: 604 KiB in, 23 KiB out).
/// Written by the same test command as the baseline; `the_fresh_database_image_is_the_baseline`
/// checks it holds exactly the baseline's schema and every migration's bookkeeping row.
const SQLITE_IMAGE: &[u8] = include_bytes!("../../../migrations/baseline/sqlite.db.lz4");

/// sqlx's bookkeeping table.
const MIGRATIONS_TABLE: &str = "_sqlx_migrations";

/// Brings the database to the newest schema: the baseline if it has no table yet, then
/// whatever migrations it lacks.
pub(super) async fn migrate(db: &Db) -> Result<(), MigrateError> {
    if lay_baseline_if_fresh(db).await? == Laid::Newest {
        return Ok(());
    }
    match &db.pool {
        Pool::Sqlite(pool) => {
            db.settle().await;
            SQLITE.run(pool).await
        }
        Pool::Postgres(pool) => POSTGRES.run(pool).await,
    }
}

/// What [`lay_baseline_if_fresh`] found.
/// Writes the baseline database's image at `path` if no database is there (neither the file
/// nor a write-ahead log someone left without it, which SQLite would replay into it). The
/// image goes to a file of its own first, reaches the disk, and is then linked at
/// `path`, which fails rather than replaces: a crash leaves no half-written database, and of two
/// processes opening one new home (the daemon and a CLI command) one links its image and the
/// other opens that one. Migrations newer than the image are applied by [`migrate`] as on any
/// existing database. Only a staged file that cannot be made at all (the home not writable)
/// is an error.
pub(super) fn write_sqlite_image_if_absent(path: &Path) -> std::io::Result<()> {
    let wal = path.with_file_name(format!("{}-wal", path.file_name().unwrap_or_default().to_string_lossy()));
    if path.symlink_metadata().is_ok() || wal.symlink_metadata().is_ok() {
        return Ok(());
    }
    let image = lz4_flex::decompress_size_prepended(SQLITE_IMAGE).map_err(std::io::Error::other)?;
    let staged = path.with_file_name(format!(
        ".{}.{}.new",
        path.file_name().unwrap_or_default().to_string_lossy(),
        uuid::Uuid::now_v7()
    ));
    let mut file = new_private_file(&staged)?;
    let linked =
        file.write_all(&image).and_then(|()| file.sync_data()).and_then(|()| std::fs::hard_link(&staged, path));
    let _ = std::fs::remove_file(&staged);
    // Another opener's image is as good as ours. Any other failure (a file system without hard
    // links, a full disk) leaves the database to SQLite, which creates it and gets the baseline
    // as SQL, or says itself why it cannot.
    if let Err(e) = linked
        && e.kind() != std::io::ErrorKind::AlreadyExists
    {
        tracing::debug!(error = %e, "no baseline image written: SQLite creates the database");
    }
    Ok(())
}

/// A file only its owner may read: the database holds the operator's tokens' hashes and
/// every agent's conversations.
fn new_private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

#[derive(Debug, PartialEq)]
enum Laid {
    /// A database with tables: left for the migrator.
    Nothing,
    /// The baseline, which is not the newest migration: the migrator applies the rest.
    Older,
    /// The baseline, which is the newest migration: nothing is left to apply.
    Newest,
}

/// Lays the baseline on a database with no table; leaves any other alone.
async fn lay_baseline_if_fresh(db: &Db) -> Result<Laid, MigrateError> {
    let count_tables = db.dialect(
        "SELECT count(*) FROM sqlite_master",
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()",
    );
    // Looked at first without the write lock: every start but the first finds tables.
    if query_scalar::<i64>(count_tables).fetch_one(db).await? > 0 {
        return Ok(Laid::Nothing);
    }
    let mut tx = db.begin_write().await.map_err(store_error)?;
    // Again under the lock: another process may have laid it meanwhile.
    let tables: i64 = query_scalar(count_tables).fetch_one(&mut tx).await?;
    if tables > 0 {
        return Ok(Laid::Nothing);
    }
    let (migrator, through) = match &mut tx {
        Tx::Sqlite(conn) => {
            conn.ensure_migrations_table(MIGRATIONS_TABLE).await?;
            sqlx::raw_sql(sqlx::AssertSqlSafe(SQLITE_BASELINE)).execute(&mut **conn).await?;
            (&SQLITE, BASELINE_VERSION)
        }
        Tx::Postgres(conn) => {
            conn.ensure_migrations_table(MIGRATIONS_TABLE).await?;
            let script: String = POSTGRES.iter().map(|m| m.sql.as_str()).collect::<Vec<_>>().join("\n;\n");
            sqlx::raw_sql(sqlx::AssertSqlSafe(script)).execute(&mut **conn).await?;
            (&POSTGRES, i64::MAX)
        }
    };
    for migration in migrator.iter().filter(|m| m.version <= through && !m.migration_type.is_down_migration()) {
        query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES ($1, $2, TRUE, $3, 0)",
        )
        .bind(migration.version)
        .bind(migration.description.to_string())
        .bind(migration.checksum.to_vec())
        .execute(&mut tx)
        .await?;
    }
    tx.commit().await?;
    let newest = migrator.iter().map(|m| m.version).max().unwrap_or(0);
    Ok(if through >= newest { Laid::Newest } else { Laid::Older })
}

fn store_error(e: crate::error::Error) -> MigrateError {
    MigrateError::Execute(sqlx::Error::Protocol(format!("laying the baseline schema: {}", e.message)))
}

/// The schema and rows of a SQLite database as the baseline file holds them: each table,
/// index and trigger's `CREATE` statement in the order SQLite made them, then each table's
/// rows as `INSERT`s (sqlx's own table left out: the baseline's code writes it).
#[cfg(test)]
pub(super) async fn sqlite_dump(db: &Db) -> String {
    let statements: Vec<String> = query_scalar(
        "SELECT sql || ';' FROM sqlite_master \
         WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' AND tbl_name <> '_sqlx_migrations' ORDER BY rowid",
    )
    .fetch_all(db)
    .await
    .expect("read the schema");
    let tables: Vec<String> = query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name <> '_sqlx_migrations' ORDER BY name",
    )
    .fetch_all(db)
    .await
    .expect("read the tables");
    let newest = SQLITE.iter().map(|m| m.version).max().unwrap_or(0);
    let mut dump = format!(
        "-- The schema SQLite's migrations 0001–{newest:04} make, laid at once on a fresh database\n\
         -- (kernel/src/db/baseline.rs). Written by a test, never by hand: after a new migration,\n\
         -- KENNEL_WRITE_BASELINE=1 cargo test -p kennel-kernel --lib db::baseline\n",
    );
    for statement in statements {
        dump.push_str(&statement);
        dump.push('\n');
    }
    for table in tables {
        let columns: Vec<String> = query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT 'quote(\"' || name || '\")' FROM pragma_table_info('{table}') ORDER BY cid"
        )))
        .fetch_all(db)
        .await
        .expect("read the columns");
        let rows: Vec<String> = query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT 'INSERT INTO \"{table}\" VALUES (' || {} || ');' FROM \"{table}\" ORDER BY rowid",
            columns.join(" || ', ' || ")
        )))
        .fetch_all(db)
        .await
        .expect("read the rows");
        for row in rows {
            dump.push_str(&row);
            dump.push('\n');
        }
    }
    dump
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASELINE_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../migrations/baseline/sqlite.sql");
    const IMAGE_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../migrations/baseline/sqlite.db.lz4");

    fn sqlite_pool(db: &Db) -> &sqlx::SqlitePool {
        match &db.pool {
            Pool::Sqlite(pool) => pool,
            Pool::Postgres(_) => unreachable!("these tests open SQLite files"),
        }
    }

    /// Every migration's bookkeeping row as sqlx's migrator checks it.
    async fn applied_migrations(db: &Db) -> Vec<(i64, Vec<u8>, bool)> {
        sqlx::query_as("SELECT version, checksum, success FROM _sqlx_migrations ORDER BY version")
            .fetch_all(sqlite_pool(db))
            .await
            .unwrap()
    }

    fn every_migration() -> Vec<(i64, Vec<u8>, bool)> {
        SQLITE.iter().map(|m| (m.version, m.checksum.to_vec(), true)).collect()
    }

    /// A SQLite database brought up by replaying every migration, as an old home was.
    async fn replayed(path: &std::path::Path) -> Db {
        let db = super::super::connect_sqlite(path).await.unwrap();
        let Pool::Sqlite(pool) = &db.pool else { unreachable!() };
        SQLITE.run(pool).await.expect("the migrations apply one by one");
        db
    }

    #[tokio::test]
    async fn a_fresh_databases_baseline_is_what_the_migrations_make() {
        let dir = tempfile::tempdir().unwrap();
        let replayed = sqlite_dump(&replayed(&dir.path().join("replayed.db")).await).await;
        if std::env::var_os("KENNEL_WRITE_BASELINE").is_some() {
            // The test binary holds the file it was built with: the check runs on the next build.
            std::fs::write(BASELINE_PATH, &replayed).unwrap();
            return;
        }
        let newest = SQLITE.iter().map(|m| m.version).max().unwrap();
        assert_eq!(
            (newest, SQLITE_BASELINE),
            (BASELINE_VERSION, replayed.as_str()),
            "migrations/baseline/sqlite.sql is not what the migrations make: set BASELINE_VERSION to the newest \
             migration and run KENNEL_WRITE_BASELINE=1 cargo test -p kennel-kernel --lib db::baseline"
        );
        // Laid on a fresh database, the baseline makes that schema again, and sqlx's migrator
        // finds nothing left to do.
        // (An empty file: a missing one would be written from the image instead.)
        let path = dir.path().join("laid.db");
        std::fs::File::create(&path).unwrap();
        let laid = super::super::open(&path).await.unwrap();
        assert_eq!(sqlite_dump(&laid).await, replayed);
        assert_eq!(applied_migrations(&laid).await, every_migration());
    }

    #[tokio::test]
    async fn the_fresh_database_image_is_the_baseline() {
        let dir = tempfile::tempdir().unwrap();
        if std::env::var_os("KENNEL_WRITE_BASELINE").is_some() {
            // Made the way an old home's database was, one migration at a time (not compacted:
            // VACUUM renumbers the schema's rows, and the dump follows their order). Closing the
            // last connection moves the write-ahead log into the file.
            let path = dir.path().join("made.db");
            replayed(&path).await.close().await;
            let image = std::fs::read(&path).unwrap();
            // As above: the check runs on the next build.
            std::fs::write(IMAGE_PATH, lz4_flex::compress_prepend_size(&image)).unwrap();
            return;
        }
        // The image itself, opened as it is: no migration runs on it here.
        let path = dir.path().join("image.db");
        std::fs::write(&path, lz4_flex::decompress_size_prepended(SQLITE_IMAGE).expect("the image decompresses"))
            .unwrap();
        let image = super::super::connect_sqlite(&path).await.unwrap();
        let check: String = query_scalar("PRAGMA integrity_check").fetch_one(&image).await.unwrap();
        assert_eq!(check, "ok");
        assert_eq!(
            (sqlite_dump(&image).await, applied_migrations(&image).await),
            (SQLITE_BASELINE.to_string(), every_migration()),
            "migrations/baseline/sqlite.db.lz4 is not the baseline with every migration applied: \
             run KENNEL_WRITE_BASELINE=1 cargo test -p kennel-kernel --lib db::baseline"
        );
    }

    #[tokio::test]
    async fn a_new_database_is_the_image_written_for_its_owner_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kennel.db");
        let db = super::super::open(&path).await.unwrap();
        assert_eq!(sqlite_dump(&db).await, SQLITE_BASELINE);
        assert_eq!(applied_migrations(&db).await, every_migration());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "the database file is its owner's alone");
        }
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["kennel.db", "kennel.db-shm", "kennel.db-wal"], "no staged image is left behind");
    }

    #[tokio::test]
    async fn processes_opening_one_new_database_together_share_one_image() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kennel.db");
        let writers: Vec<_> = (0..8)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || write_sqlite_image_if_absent(&path))
            })
            .collect();
        for writer in writers {
            writer.join().unwrap().expect("every opener finds a database, its own or another's");
        }
        let db = super::super::open(&path).await.unwrap();
        assert_eq!(applied_migrations(&db).await, every_migration());
        let staged = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".new"));
        assert_eq!(staged.count(), 0, "no staged image is left behind");
    }

    #[tokio::test]
    async fn a_write_ahead_log_without_its_database_gets_no_image_under_it() {
        // SQLite would replay a log it finds beside the file into whatever file is there.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kennel.db");
        std::fs::write(dir.path().join("kennel.db-wal"), b"").unwrap();
        write_sqlite_image_if_absent(&path).unwrap();
        assert!(!path.exists(), "the image is written only where there is no database at all");
    }

    #[tokio::test]
    async fn an_existing_database_is_migrated_not_laid_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.db");
        let first = super::super::open(&path).await.unwrap();
        query(
            "INSERT INTO agent_types (name, manifest, made_by, created_at, updated_at) VALUES ('t', '{}', 'x', '', '')",
        )
        .execute(&first)
        .await
        .unwrap();
        first.close().await;
        let again = super::super::open(&path).await.unwrap();
        let kept: i64 = query_scalar("SELECT count(*) FROM agent_types").fetch_one(&again).await.unwrap();
        assert_eq!(kept, 1, "a second open keeps the rows the first wrote");
    }
}
