//! A PostgreSQL database of its own for one test, on the server `KENNEL_TEST_DATABASE_URL`
//! names (`./scripts/test` starts a throwaway one). Without that variable the PostgreSQL
//! tests are skipped with a line saying so, unless `KENNEL_REQUIRE_POSTGRES=1` (set by
//! `./scripts/test`), where a missing server fails them.

use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{ConnectOptions, Connection};

/// A database made for one test, dropped when the value is.
pub(crate) struct TestDatabase {
    pub(crate) pool: PgPool,
    /// Its URL, for opening it as a [`super::Db`].
    pub(crate) url: String,
    server: PgConnectOptions,
    name: String,
}

/// A fresh, empty database, or `None` (after saying so) when no server was given.
pub(crate) async fn database(test: &str) -> Option<TestDatabase> {
    let Ok(url) = std::env::var("KENNEL_TEST_DATABASE_URL") else {
        assert!(
            std::env::var("KENNEL_REQUIRE_POSTGRES").as_deref() != Ok("1"),
            "KENNEL_REQUIRE_POSTGRES=1 but KENNEL_TEST_DATABASE_URL is not set"
        );
        eprintln!("{test}: skipped, KENNEL_TEST_DATABASE_URL names no PostgreSQL server");
        return None;
    };
    let server = PgConnectOptions::from_str(&url).expect("KENNEL_TEST_DATABASE_URL is a postgres:// URL");
    let name = format!("kennel_test_{}", uuid::Uuid::now_v7().simple());
    let mut admin = server.connect().await.expect("connect to KENNEL_TEST_DATABASE_URL");
    // The name is ours: a fixed prefix and hex digits.
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut admin)
        .await
        .expect("create a test database");
    admin.close().await.ok();
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .connect_with(server.clone().database(&name))
        .await
        .expect("connect to the test database");
    let (base, _) = url.rsplit_once('/').expect("KENNEL_TEST_DATABASE_URL ends in /DATABASE");
    let url = format!("{base}/{name}");
    Some(TestDatabase { pool, url, server, name })
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        // Dropped from a thread of its own: `Drop` cannot await, and the test's runtime may be
        // ending. `WITH (FORCE)` ends the pool's connections still open.
        let (server, name) = (self.server.clone(), self.name.clone());
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(async {
                let mut admin = server.connect().await?;
                sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")))
                    .execute(&mut admin)
                    .await?;
                admin.close().await
            })?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        })
        .join();
        if let Ok(Err(e)) = dropped {
            eprintln!("test database {} was not dropped: {e}", self.name);
        }
    }
}
