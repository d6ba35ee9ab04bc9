//! `kennel migrate-to-postgres`: a SQLite home's database copied into an empty PostgreSQL
//! database, all of it or nothing.
//!
//! The SQLite side is read in one transaction (one snapshot, even if something writes), after
//! its own migrations brought it up to this version's schema; the PostgreSQL side gets the
//! same version's migrations, then every table's rows in one transaction with the foreign
//! keys checked after the last row and the tables' own triggers off meanwhile (the copy
//! brings the rows those triggers wrote: task history, version counters); the rows the
//! migrations seeded make way for the copied ones. Identity sequences move past the copied
//! ids, and each table's row count on PostgreSQL must equal SQLite's before the commit.

use std::path::Path;

use super::{Db, QueryBuilder, Row, query, query_scalar};
use crate::error::{Error, Result};

/// Rows per `INSERT`: PostgreSQL takes at most 65,535 arguments, and a table here has fewer
/// than 30 columns.
const BATCH: usize = 1000;

/// One table's copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopiedTable {
    pub table: String,
    pub rows: i64,
}

/// Copies the SQLite database at `sqlite` into the empty PostgreSQL database `url`; the
/// tables copied with their row counts (equal on both sides).
pub async fn sqlite_to_postgres(sqlite: &Path, url: &str) -> Result<Vec<CopiedTable>> {
    if !sqlite.exists() {
        return Err(Error::not_found(format!("there is no database at {}", sqlite.display())));
    }
    let from =
        super::open(sqlite).await.map_err(|e| Error::unavailable(format!("cannot open {}: {e}", sqlite.display())))?;
    let to =
        super::connect_postgres(url).await.map_err(|e| Error::unavailable(format!("cannot reach PostgreSQL: {e}")))?;
    let copied = copy(&from, &to).await;
    from.close().await;
    to.close().await;
    copied
}

async fn copy(from: &Db, to: &Db) -> Result<Vec<CopiedTable>> {
    let tables: Vec<String> = query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations'
         ORDER BY name",
    )
    .fetch_all(from)
    .await?;
    refuse_unless_empty(to, &tables).await?;
    let mut read = from.begin().await?;
    let mut write = to.begin().await?;
    query("SET CONSTRAINTS ALL DEFERRED").execute(&mut write).await.map_err(failed("PostgreSQL"))?;
    // Triggers off everywhere before the first row, on again once the foreign keys were
    // checked: PostgreSQL refuses to alter a table with checks still pending.
    for table in &tables {
        let quoted = quote(table);
        for statement in [format!("ALTER TABLE {quoted} DISABLE TRIGGER USER"), format!("DELETE FROM {quoted}")] {
            query(sqlx::AssertSqlSafe(statement)).execute(&mut write).await.map_err(failed(table))?;
        }
    }
    let mut copied = Vec::new();
    for table in &tables {
        let rows = copy_table(from, &mut read, &mut write, table).await?;
        copied.push(CopiedTable { table: table.clone(), rows });
    }
    query("SET CONSTRAINTS ALL IMMEDIATE").execute(&mut write).await.map_err(failed("the foreign keys"))?;
    for table in &tables {
        let enable = format!("ALTER TABLE {} ENABLE TRIGGER USER", quote(table));
        query(sqlx::AssertSqlSafe(enable)).execute(&mut write).await.map_err(failed(table))?;
    }
    write.commit().await.map_err(failed("the commit"))?;
    Ok(copied)
}

/// Copies one table inside the two transactions; its row count, equal on both sides.
async fn copy_table(from: &Db, read: &mut super::Tx, write: &mut super::Tx, table: &str) -> Result<i64> {
    let columns = columns(from, table).await?;
    let on_table = failed(table);
    // Names come from SQLite's catalogue of this daemon's own schema, quoted.
    let quoted = quote(table);
    let sql = |text: String| sqlx::AssertSqlSafe(text);
    let names = columns.iter().map(|c| quote(&c.name)).collect::<Vec<_>>().join(", ");
    // A page at a time by rowid, all in the read transaction's one snapshot.
    let page =
        format!("SELECT rowid AS kennel_rowid, {names} FROM {quoted} WHERE rowid > $1 ORDER BY rowid LIMIT {BATCH}");
    let (mut after, mut copied) = (i64::MIN, 0_i64);
    loop {
        let rows = query(sql(page.clone())).bind(after).fetch_all(&mut *read).await.map_err(&on_table)?;
        let Some(last) = rows.last() else { break };
        after = last.try_get("kennel_rowid").map_err(&on_table)?;
        let mut insert = QueryBuilder::new(format!("INSERT INTO {quoted} ({names}) "));
        let mut unreadable = None;
        insert.push_values(&rows, |mut values, row| {
            for (i, column) in columns.iter().enumerate() {
                if let Err(e) = column.kind.bind(&mut values, row, i + 1) {
                    unreadable
                        .get_or_insert_with(|| format!("{table}.{}: a stored value cannot be read: {e}", column.name));
                }
            }
        });
        if let Some(message) = unreadable {
            return Err(Error::failed(message));
        }
        insert.build().execute(&mut *write).await.map_err(&on_table)?;
        copied += rows.len() as i64;
    }
    for column in columns.iter().filter(|c| c.identity) {
        // The next id is one past the largest copied.
        let name = quote(&column.name);
        query(sql(format!(
            "SELECT setval(pg_get_serial_sequence($1, $2), COALESCE(max({name}), 0) + 1, false) FROM {quoted}"
        )))
        .bind(&quoted)
        .bind(&column.name)
        .execute(&mut *write)
        .await
        .map_err(&on_table)?;
    }
    let count = format!("SELECT count(*) FROM {quoted}");
    let on_sqlite: i64 = query_scalar(sql(count.clone())).fetch_one(&mut *read).await.map_err(&on_table)?;
    let on_postgres: i64 = query_scalar(sql(count)).fetch_one(&mut *write).await.map_err(&on_table)?;
    if on_sqlite != on_postgres || on_sqlite != copied {
        return Err(Error::failed(format!(
            "{table}: {on_sqlite} rows in SQLite but {on_postgres} in PostgreSQL after copying {copied}; nothing was committed"
        )));
    }
    Ok(on_postgres)
}

/// Refuses a PostgreSQL database that holds anything: tables of something else, or rows in
/// Kennel's tables. A database with Kennel's schema and no rows (a copy that failed after
/// the migrations ran) counts as empty, so the copy can be run again.
async fn refuse_unless_empty(to: &Db, tables: &[String]) -> Result<()> {
    let present: Vec<String> =
        query_scalar("SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()")
            .fetch_all(to)
            .await
            .map_err(failed("PostgreSQL"))?;
    // Without sqlx's migration table, any table is someone else's.
    let migrated = present.iter().any(|t| t == "_sqlx_migrations");
    let ours = |t: &String| migrated && (t == "_sqlx_migrations" || tables.contains(t));
    if let Some(other) = present.iter().find(|t| !ours(t)) {
        return Err(not_empty(&format!("it has the table `{other}`")));
    }
    // Applies this version's migrations, or checks those a failed copy applied.
    super::migrate(to).await.map_err(|e| Error::unavailable(format!("the PostgreSQL migrations failed: {e}")))?;
    for table in tables.iter().filter(|t| *t != "cached_tables_version") {
        let sql = format!("SELECT EXISTS (SELECT 1 FROM {})", quote(table));
        let has_rows: bool = query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(to).await.map_err(failed(table))?;
        if has_rows {
            return Err(not_empty(&format!("`{table}` has rows")));
        }
    }
    Ok(())
}

fn not_empty(why: &str) -> Error {
    Error::conflict(format!(
        "the PostgreSQL database is not empty ({why}): give an empty database, so nothing in it is overwritten"
    ))
}

/// A database error during the copy, with where it happened, for the operator running it.
fn failed(place: &str) -> impl Fn(sqlx::Error) -> Error + '_ {
    move |e| Error::failed(format!("{place}: {e}"))
}

/// A column to copy, with how its values are read.
struct Column {
    name: String,
    kind: Kind,
    /// An `INTEGER PRIMARY KEY AUTOINCREMENT` (an identity column on PostgreSQL).
    identity: bool,
}

/// SQLite's declared type, which the PostgreSQL schema maps one to one.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    Int,
    Real,
    Bytes,
}

impl Kind {
    fn bind(self, values: &mut super::query::Separated<'_>, row: &Row, i: usize) -> Result<(), sqlx::Error> {
        match self {
            Kind::Text => values.push_bind(row.try_get::<Option<String>, _>(i)?),
            Kind::Int => values.push_bind(row.try_get::<Option<i64>, _>(i)?),
            Kind::Real => values.push_bind(row.try_get::<Option<f64>, _>(i)?),
            Kind::Bytes => values.push_bind(row.try_get::<Option<Vec<u8>>, _>(i)?),
        };
        Ok(())
    }
}

async fn columns(db: &Db, table: &str) -> Result<Vec<Column>> {
    let autoincrement: i64 = query_scalar(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = $1 AND sql LIKE '%AUTOINCREMENT%'",
    )
    .bind(table)
    .fetch_one(db)
    .await?;
    let rows = query("SELECT name, type, pk FROM pragma_table_info($1) ORDER BY cid").bind(table).fetch_all(db).await?;
    rows.iter()
        .map(|row| {
            let name: String = row.try_get("name")?;
            let declared: String = row.try_get("type")?;
            let kind = match declared.to_ascii_uppercase().as_str() {
                "TEXT" => Kind::Text,
                "INTEGER" => Kind::Int,
                "REAL" => Kind::Real,
                "BLOB" => Kind::Bytes,
                other => return Err(Error::internal(format_args!("{table}.{name} has the unmapped type `{other}`"))),
            };
            let pk: i64 = row.try_get("pk")?;
            Ok(Column { identity: autoincrement > 0 && pk == 1 && matches!(kind, Kind::Int), name, kind })
        })
        .collect()
}

/// An identifier quoted for SQL (names come from the schema, never from a person).
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
