//! The PostgreSQL schema is the SQLite schema: after both back ends' migrations, the same
//! tables with the same columns (order, type, nullability, default, primary key), the same
//! indexes (columns, uniqueness, partial or not), foreign keys and triggers. A migration
//! written for one back end and forgotten for the other fails here. PostgreSQL's `*_notify`
//! triggers are its own: they stand for SQLite's connection hooks.

use std::collections::BTreeMap;

use super::Pool;
use super::baseline::{POSTGRES, SQLITE};
use super::test_postgres;
use sqlx::Row as _;

/// A table as both back ends are compared: each line one fact, in a stable order.
type Schema = BTreeMap<String, Vec<String>>;

#[test]
fn postgres_migrations_are_a_baseline_then_the_sqlite_numbers() {
    let sqlite: Vec<i64> = SQLITE.iter().map(|m| m.version).collect();
    let postgres: Vec<i64> = POSTGRES.iter().map(|m| m.version).collect();
    // Version 27 is the PostgreSQL baseline (SQLite's 1–27 in one); every later migration is
    // written for both back ends under one number, so a version names one schema.
    let after_baseline: Vec<i64> = sqlite.iter().copied().filter(|v| *v > 27).collect();
    assert_eq!(postgres, [vec![27], after_baseline].concat());
}

#[tokio::test]
async fn postgres_schema_matches_sqlite_schema() {
    let Some(pg) = test_postgres::database("postgres_schema_matches_sqlite_schema").await else { return };
    POSTGRES.run(&pg.pool).await.expect("the PostgreSQL migrations apply");
    let dir = tempfile::tempdir().unwrap();
    let sqlite = super::open(&dir.path().join("k.db")).await.unwrap();

    let (sqlite, postgres) = (sqlite_schema(&sqlite).await, postgres_schema(&pg.pool).await);
    assert_eq!(
        sqlite.keys().collect::<Vec<_>>(),
        postgres.keys().collect::<Vec<_>>(),
        "the same tables, indexes and triggers"
    );
    for (name, facts) in &sqlite {
        assert_eq!(facts, &postgres[name], "{name}");
    }
    // A fresh database opened by the daemon gets the baseline script, not the replay: the
    // same schema.
    let Some(laid) = test_postgres::database("postgres_schema_matches_sqlite_schema, laid").await else { return };
    let laid_db = super::open_postgres(&laid.url).await.expect("the PostgreSQL baseline lays");
    let Pool::Postgres(laid_pool) = &laid_db.pool else { unreachable!("open_postgres makes a PostgreSQL pool") };
    assert_eq!(postgres_schema(laid_pool).await, postgres, "the baseline makes what the migrations make");
    let applied: Vec<(i64, Vec<u8>)> =
        sqlx::query_as("SELECT version, checksum FROM _sqlx_migrations ORDER BY version")
            .fetch_all(laid_pool)
            .await
            .unwrap();
    assert_eq!(applied, POSTGRES.iter().map(|m| (m.version, m.checksum.to_vec())).collect::<Vec<_>>());
    laid_db.close().await;
    // The seed row the cached-tables watcher reads.
    let version: i64 =
        sqlx::query_scalar("SELECT version FROM cached_tables_version").fetch_one(&pg.pool).await.unwrap();
    assert_eq!(version, 0);
}

/// SQLite's declared type as PostgreSQL spells it.
fn postgres_type(sqlite: &str) -> String {
    match sqlite.to_ascii_uppercase().as_str() {
        "INTEGER" => "bigint".into(),
        "TEXT" => "text".into(),
        "REAL" => "double precision".into(),
        "BLOB" => "bytea".into(),
        other => format!("unmapped {other}"),
    }
}

/// A default as written, without PostgreSQL's casts (`'x'::text` is `'x'`).
fn plain_default(default: Option<String>) -> String {
    let default = default.unwrap_or_default();
    default.split("::").next().unwrap_or_default().to_string()
}

/// Foreign keys in one order: the back ends number them differently.
fn sort_foreign_keys(facts: &mut [String]) {
    let first = facts.iter().position(|f| f.starts_with("foreign key")).unwrap_or(facts.len());
    facts[first..].sort();
}

async fn sqlite_schema(db: &super::Db) -> Schema {
    let mut schema = Schema::new();
    let tables: Vec<String> = super::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations'",
    )
    .fetch_all(db)
    .await
    .unwrap();
    for table in tables {
        let mut facts = Vec::new();
        for c in super::query("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info($1) ORDER BY cid")
            .bind(&table)
            .fetch_all(db)
            .await
            .unwrap()
        {
            let pk: i64 = c.try_get("pk").unwrap();
            // A primary key column is never null on PostgreSQL (SQLite allows it for text).
            let not_null = c.try_get::<bool, _>("notnull").unwrap() || pk > 0;
            facts.push(format!(
                "column {} {} not_null={not_null} default={} pk={pk}",
                c.try_get::<String, _>("name").unwrap(),
                postgres_type(&c.try_get::<String, _>("type").unwrap()),
                plain_default(c.try_get("dflt_value").unwrap()),
            ));
        }
        for f in
            super::query("SELECT \"from\", \"table\", \"to\", on_delete FROM pragma_foreign_key_list($1) ORDER BY id")
                .bind(&table)
                .fetch_all(db)
                .await
                .unwrap()
        {
            facts.push(format!(
                "foreign key {} -> {}.{} on delete {}",
                f.try_get::<String, _>("from").unwrap(),
                f.try_get::<String, _>("table").unwrap(),
                f.try_get::<String, _>("to").unwrap(),
                f.try_get::<String, _>("on_delete").unwrap(),
            ));
        }
        sort_foreign_keys(&mut facts);
        schema.insert(format!("table {table}"), facts);
    }
    let indexes = super::query(
        "SELECT m.name, m.tbl_name, l.\"unique\", l.partial FROM sqlite_master m
         JOIN pragma_index_list(m.tbl_name) l ON l.name = m.name
         WHERE m.type = 'index' AND m.sql IS NOT NULL",
    )
    .fetch_all(db)
    .await
    .unwrap();
    for index in indexes {
        let name: String = index.try_get("name").unwrap();
        let columns: Vec<String> = super::query_scalar("SELECT name FROM pragma_index_info($1) ORDER BY seqno")
            .bind(&name)
            .fetch_all(db)
            .await
            .unwrap();
        schema.insert(
            format!("index {name}"),
            vec![format!(
                "on {} ({}) unique={} partial={}",
                index.try_get::<String, _>("tbl_name").unwrap(),
                columns.join(", "),
                index.try_get::<bool, _>("unique").unwrap(),
                index.try_get::<bool, _>("partial").unwrap(),
            )],
        );
    }
    let triggers =
        super::query("SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger'").fetch_all(db).await.unwrap();
    for trigger in triggers {
        schema.insert(
            format!("trigger {}", trigger.try_get::<String, _>("name").unwrap()),
            vec![format!("on {}", trigger.try_get::<String, _>("tbl_name").unwrap())],
        );
    }
    schema
}

async fn postgres_schema(pool: &sqlx::PgPool) -> Schema {
    let mut schema = Schema::new();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables
         WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> '_sqlx_migrations'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for table in tables {
        let mut facts = Vec::new();
        for c in sqlx::query(
            "SELECT c.column_name::text AS name, c.data_type::text AS type, c.is_nullable = 'NO' AS not_null,
                    c.column_default::text AS dflt,
                    COALESCE(array_position(p.conkey, c.ordinal_position::int2), 0)::int8 AS pk
             FROM information_schema.columns c
             LEFT JOIN pg_constraint p ON p.conrelid = $1::regclass AND p.contype = 'p'
             WHERE c.table_schema = 'public' AND c.table_name = $1
             ORDER BY c.ordinal_position",
        )
        .bind(&table)
        .fetch_all(pool)
        .await
        .unwrap()
        {
            facts.push(format!(
                "column {} {} not_null={} default={} pk={}",
                c.try_get::<String, _>("name").unwrap(),
                c.try_get::<String, _>("type").unwrap(),
                c.try_get::<bool, _>("not_null").unwrap(),
                plain_default(c.try_get("dflt").unwrap()),
                c.try_get::<i64, _>("pk").unwrap(),
            ));
        }
        for f in sqlx::query(
            "SELECT a.attname::text AS from_column, rc.relname::text AS to_table, ra.attname::text AS to_column,
                    CASE c.confdeltype WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT'
                                       WHEN 'r' THEN 'RESTRICT' ELSE 'NO ACTION' END AS on_delete
             FROM pg_constraint c
             JOIN pg_class rc ON rc.oid = c.confrelid
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
             JOIN pg_attribute ra ON ra.attrelid = c.confrelid AND ra.attnum = c.confkey[1]
             WHERE c.contype = 'f' AND c.conrelid = $1::regclass
             ORDER BY c.oid",
        )
        .bind(&table)
        .fetch_all(pool)
        .await
        .unwrap()
        {
            facts.push(format!(
                "foreign key {} -> {}.{} on delete {}",
                f.try_get::<String, _>("from_column").unwrap(),
                f.try_get::<String, _>("to_table").unwrap(),
                f.try_get::<String, _>("to_column").unwrap(),
                f.try_get::<String, _>("on_delete").unwrap(),
            ));
        }
        sort_foreign_keys(&mut facts);
        schema.insert(format!("table {table}"), facts);
    }
    // Indexes a constraint made (primary keys, inline UNIQUE) are SQLite's autoindexes: left
    // out on both sides.
    let indexes = sqlx::query(
        "SELECT ic.relname::text AS name, tc.relname::text AS tbl_name, i.indisunique AS is_unique,
                i.indpred IS NOT NULL AS partial,
                ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(attnum, n)
                      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.n) AS columns
         FROM pg_index i
         JOIN pg_class ic ON ic.oid = i.indexrelid
         JOIN pg_class tc ON tc.oid = i.indrelid
         JOIN pg_namespace ns ON ns.oid = tc.relnamespace
         WHERE ns.nspname = 'public' AND tc.relname <> '_sqlx_migrations'
           AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for index in indexes {
        schema.insert(
            format!("index {}", index.try_get::<String, _>("name").unwrap()),
            vec![format!(
                "on {} ({}) unique={} partial={}",
                index.try_get::<String, _>("tbl_name").unwrap(),
                index.try_get::<Vec<String>, _>("columns").unwrap().join(", "),
                index.try_get::<bool, _>("is_unique").unwrap(),
                index.try_get::<bool, _>("partial").unwrap(),
            )],
        );
    }
    let triggers = sqlx::query(
        "SELECT DISTINCT trigger_name::text AS name, event_object_table::text AS tbl_name
         FROM information_schema.triggers WHERE trigger_schema = 'public' AND trigger_name NOT LIKE '%\\_notify'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for trigger in triggers {
        schema.insert(
            format!("trigger {}", trigger.try_get::<String, _>("name").unwrap()),
            vec![format!("on {}", trigger.try_get::<String, _>("tbl_name").unwrap())],
        );
    }
    schema
}
