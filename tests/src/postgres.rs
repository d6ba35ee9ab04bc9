//! A PostgreSQL database for one test home, when the suite runs on PostgreSQL
//! (`KENNEL_TEST_BACKEND=postgres`, the server `KENNEL_TEST_DATABASE_URL`; `./scripts/test`
//! sets both for its second pass). Made and dropped with `psql`, which comes with every
//! PostgreSQL server.

use std::process::Command;

/// A database made for one home, dropped with it.
pub struct Database {
    /// What the daemon is given as `KENNEL_DATABASE_URL`.
    pub url: String,
    server: String,
    name: String,
}

/// Whether this run keeps the daemons' state in PostgreSQL.
pub fn on_postgres() -> bool {
    std::env::var("KENNEL_TEST_BACKEND").as_deref() == Ok("postgres")
}

impl Database {
    /// A fresh, empty database when the suite runs on PostgreSQL; `None` on SQLite.
    pub fn for_test() -> Option<Database> {
        if !on_postgres() {
            return None;
        }
        let server = std::env::var("KENNEL_TEST_DATABASE_URL").expect(
            "KENNEL_TEST_BACKEND=postgres needs KENNEL_TEST_DATABASE_URL (a server whose user may create databases)",
        );
        Some(Database::create_on(server))
    }

    /// A fresh, empty database on `KENNEL_TEST_DATABASE_URL`'s server whatever the suite's
    /// back end, for a test about PostgreSQL itself; `None` (said on stderr) without a server,
    /// unless `KENNEL_REQUIRE_POSTGRES=1` (`./scripts/test`), where that fails the test.
    pub fn empty(test: &str) -> Option<Database> {
        match std::env::var("KENNEL_TEST_DATABASE_URL") {
            Ok(server) => Some(Database::create_on(server)),
            Err(_) => {
                assert!(
                    std::env::var("KENNEL_REQUIRE_POSTGRES").as_deref() != Ok("1"),
                    "KENNEL_REQUIRE_POSTGRES=1 but KENNEL_TEST_DATABASE_URL is not set"
                );
                eprintln!("{test}: skipped, KENNEL_TEST_DATABASE_URL names no PostgreSQL server");
                None
            }
        }
    }

    fn create_on(server: String) -> Database {
        let name = format!("kennel_home_{}", uuid::Uuid::now_v7().simple());
        psql(&server, &format!("CREATE DATABASE {name}"));
        let (base, _) = server.rsplit_once('/').expect("KENNEL_TEST_DATABASE_URL ends in /DATABASE");
        Database { url: format!("{base}/{name}"), server, name }
    }

    /// One value a query gives (`psql -tA`).
    pub fn scalar(&self, sql: &str) -> String {
        let out = Command::new("psql").args([&self.url, "--no-psqlrc", "-tAc", sql]).output().expect("psql runs");
        assert!(out.status.success(), "psql `{sql}` failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Database {
    /// Every row of the database as `pg_dump` writes it.
    pub fn dump(&self) -> Vec<u8> {
        let out = Command::new("pg_dump").args(["--data-only", &self.url]).output().expect("pg_dump runs");
        assert!(out.status.success(), "pg_dump failed: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    }

    /// Whether migrations made the schema (a daemon or CLI opened the database).
    pub fn has_schema(&self) -> bool {
        self.scalar("SELECT count(*) FROM information_schema.tables WHERE table_name = 'agents'") == "1"
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        // FORCE: a daemon of the test may still hold connections.
        psql(&self.server, &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name));
    }
}

fn psql(server: &str, sql: &str) {
    let out = Command::new("psql")
        .args([server, "--quiet", "--no-psqlrc", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .expect("psql runs (it comes with PostgreSQL)");
    assert!(out.status.success(), "psql `{sql}` failed: {}", String::from_utf8_lossy(&out.stderr));
}
