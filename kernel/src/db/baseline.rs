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

use sqlx::migrate::{Migrate, MigrateError, Migrator};

use super::{Db, Pool, Tx, query, query_scalar};

/// SQLite's migrations, each applied once to an existing database.
pub(super) static SQLITE: Migrator = sqlx::migrate!("../migrations/sqlite");
/// PostgreSQL's: a baseline of SQLite's first 27, then one per later SQLite migration.
pub(super) static POSTGRES: Migrator = sqlx::migrate!("../migrations/postgres");

/// The newest migration `migrations/baseline/sqlite.sql` contains.
pub(super) const BASELINE_VERSION: i64 = 39;
const SQLITE_BASELINE: &str = include_str!("../../../migrations/baseline/sqlite.sql");

/// sqlx's bookkeeping table.
const MIGRATIONS_TABLE: &str = "_sqlx_migrations";

/// Brings the database to the newest schema: the baseline if it has no table yet, then
/// whatever migrations it lacks.
pub(super) async fn migrate(db: &Db) -> Result<(), MigrateError> {
    if lay_baseline_if_fresh(db).await? == Laid::Newest {
        return Ok(());
    }
    match &db.pool {
        Pool::Sqlite(pool) => SQLITE.run(pool).await,
        Pool::Postgres(pool) => POSTGRES.run(pool).await,
    }
}

/// What [`lay_baseline_if_fresh`] found.
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
    let mut tx = db.begin_write().await.map_err(store_error)?;
    let tables: i64 = query_scalar(db.dialect(
        "SELECT count(*) FROM sqlite_master",
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()",
    ))
    .fetch_one(&mut tx)
    .await?;
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
        let laid = super::super::open(&dir.path().join("laid.db")).await.unwrap();
        assert_eq!(sqlite_dump(&laid).await, replayed);
        let applied: Vec<(i64, Vec<u8>)> =
            sqlx::query_as("SELECT version, checksum FROM _sqlx_migrations ORDER BY version")
                .fetch_all(match &laid.pool {
                    Pool::Sqlite(pool) => pool,
                    Pool::Postgres(_) => unreachable!(),
                })
                .await
                .unwrap();
        let expected: Vec<(i64, Vec<u8>)> = SQLITE.iter().map(|m| (m.version, m.checksum.to_vec())).collect();
        assert_eq!(applied, expected);
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
