//! A store's query, written once and run on whichever back end [`Db`] holds.
//!
//! The calls read as sqlx's (`query`, `query_scalar`, `query_as`, `bind`, `fetch_one`, …,
//! a `QueryBuilder`), but a query keeps its arguments as [`Arg`] values and only becomes a
//! SQLite or a PostgreSQL query when it runs, so each store function is compiled once, not
//! once per back end. Rows come back as [`Row`], read with [`Row::try_get`] into the few
//! types the stores keep ([`Stored`]). Two rules make one SQL text serve both: `$N`
//! placeholders, and integers are `i64` (PostgreSQL's columns are `BIGINT`; a flag is a
//! 0/1 integer there too, so a `bool` is bound and read as one).

use futures_util::stream::BoxStream;
use futures_util::{StreamExt, TryStreamExt};
use sqlx::postgres::{PgRow, Postgres};
use sqlx::sqlite::{Sqlite, SqliteRow};
use sqlx::{ColumnIndex, SqlSafeStr, SqlStr};

use super::{Db, Pool};

/// One argument of a query. A NULL keeps its type: PostgreSQL types every parameter.
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    Text(Option<String>),
    Int(Option<i64>),
    Real(Option<f64>),
    Bytes(Option<Vec<u8>>),
}

/// A value a query can take as an argument.
pub(crate) trait Bind {
    fn into_arg(self) -> Arg;
}

macro_rules! bind_as {
    ($variant:ident: $($t:ty => $into:expr),+ $(,)?) => {
        $(
            impl Bind for $t {
                fn into_arg(self) -> Arg {
                    #[allow(clippy::redundant_closure_call)]
                    Arg::$variant(Some(($into)(self)))
                }
            }
            impl Bind for Option<$t> {
                fn into_arg(self) -> Arg {
                    #[allow(clippy::redundant_closure_call)]
                    Arg::$variant(self.map($into))
                }
            }
        )+
    };
}

bind_as!(Text:
    String => |v: String| v,
    &str => |v: &str| v.to_string(),
);
bind_as!(Int:
    i64 => |v: i64| v,
    i32 => |v: i32| i64::from(v),
    u32 => |v: u32| i64::from(v),
    bool => |v: bool| i64::from(v),
);
bind_as!(Real: f64 => |v: f64| v);
bind_as!(Bytes:
    Vec<u8> => |v: Vec<u8>| v,
    &[u8] => |v: &[u8]| v.to_vec(),
);

/// A borrowed value binds as its copy (`&String`, `&Option<String>`, `&&str`, …).
impl<T: Bind + Clone> Bind for &T {
    fn into_arg(self) -> Arg {
        self.clone().into_arg()
    }
}

/// A borrowed value that may be absent binds as a typed NULL or its copy.
impl<T: Bind + Clone> Bind for Option<&T>
where
    Option<T>: Bind,
{
    fn into_arg(self) -> Arg {
        self.cloned().into_arg()
    }
}

/// A transaction on either back end; committed with [`Tx::commit`], rolled back when
/// dropped without.
pub(crate) enum Tx {
    Sqlite(sqlx::Transaction<'static, Sqlite>),
    Postgres(sqlx::Transaction<'static, Postgres>),
}

impl Tx {
    /// Serialises, across every daemon, the transactions that number rows `MAX() + 1` under
    /// one key (a session's messages, an agent's canvases, a skill's history): on PostgreSQL
    /// a lock on the key's hash held until this transaction ends (two keys sharing a hash only
    /// wait for each other); SQLite's writes are one at a time already.
    pub(crate) async fn lock_key(&mut self, key: &str) -> Result<(), sqlx::Error> {
        if let Tx::Postgres(tx) = self {
            sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))").bind(key).execute(&mut **tx).await?;
        }
        Ok(())
    }

    pub(crate) async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Tx::Sqlite(tx) => tx.commit().await,
            Tx::Postgres(tx) => tx.commit().await,
        }
    }
}

/// Where a query runs: the pool, or an open transaction.
pub(crate) enum On<'e> {
    Db(&'e Db),
    Tx(&'e mut Tx),
}

impl<'e> From<&'e Db> for On<'e> {
    fn from(db: &'e Db) -> Self {
        On::Db(db)
    }
}

impl<'e> From<&'e mut Tx> for On<'e> {
    fn from(tx: &'e mut Tx) -> Self {
        On::Tx(tx)
    }
}

/// What a statement did.
pub(crate) struct Done {
    rows_affected: u64,
}

impl Done {
    pub(crate) fn rows_affected(&self) -> u64 {
        self.rows_affected
    }
}

/// A row of either back end.
pub(crate) enum Row {
    Sqlite(SqliteRow),
    Postgres(PgRow),
}

impl Row {
    /// The column `index` (a name, or a position from 0) as a `T`.
    pub(crate) fn try_get<'r, T: Stored<'r>, I>(&'r self, index: I) -> Result<T, sqlx::Error>
    where
        I: ColumnIndex<SqliteRow> + ColumnIndex<PgRow> + Copy,
    {
        match self {
            Row::Sqlite(row) => T::from_sqlite(row, index),
            Row::Postgres(row) => T::from_postgres(row, index),
        }
    }
}

/// A type a store reads from a column (`&str` borrowed from the row).
pub(crate) trait Stored<'r>: Sized {
    fn from_sqlite<I: ColumnIndex<SqliteRow>>(row: &'r SqliteRow, index: I) -> Result<Self, sqlx::Error>;
    fn from_postgres<I: ColumnIndex<PgRow> + Copy>(row: &'r PgRow, index: I) -> Result<Self, sqlx::Error>;
}

macro_rules! stored_as_is {
    ($($t:ty),+) => {
        $(
            impl<'r> Stored<'r> for $t {
                fn from_sqlite<I: ColumnIndex<SqliteRow>>(row: &'r SqliteRow, index: I) -> Result<Self, sqlx::Error> {
                    sqlx::Row::try_get(row, index)
                }
                fn from_postgres<I: ColumnIndex<PgRow> + Copy>(row: &'r PgRow, index: I) -> Result<Self, sqlx::Error> {
                    sqlx::Row::try_get(row, index)
                }
            }
        )+
    };
}

stored_as_is!(
    &'r str,
    Option<&'r str>,
    String,
    Option<String>,
    i64,
    Option<i64>,
    f64,
    Option<f64>,
    Vec<u8>,
    Option<Vec<u8>>
);

/// A flag: a 0/1 integer column on both back ends, or a condition's value (`EXISTS (…)`),
/// which PostgreSQL answers as a boolean.
impl<'r> Stored<'r> for bool {
    fn from_sqlite<I: ColumnIndex<SqliteRow>>(row: &'r SqliteRow, index: I) -> Result<Self, sqlx::Error> {
        sqlx::Row::try_get(row, index)
    }
    fn from_postgres<I: ColumnIndex<PgRow> + Copy>(row: &'r PgRow, index: I) -> Result<Self, sqlx::Error> {
        use sqlx::{TypeInfo, ValueRef};
        if sqlx::Row::try_get_raw(row, index)?.type_info().name() == "BOOL" {
            sqlx::Row::try_get(row, index)
        } else {
            sqlx::Row::try_get::<i64, _>(row, index).map(|v| v != 0)
        }
    }
}

/// A small number (a pid, a count): stored as an integer, refused if it does not fit.
impl<'r> Stored<'r> for i32 {
    fn from_sqlite<I: ColumnIndex<SqliteRow>>(row: &'r SqliteRow, index: I) -> Result<Self, sqlx::Error> {
        narrow(i64::from_sqlite(row, index)?)
    }
    fn from_postgres<I: ColumnIndex<PgRow> + Copy>(row: &'r PgRow, index: I) -> Result<Self, sqlx::Error> {
        narrow(i64::from_postgres(row, index)?)
    }
}

impl<'r> Stored<'r> for Option<i32> {
    fn from_sqlite<I: ColumnIndex<SqliteRow>>(row: &'r SqliteRow, index: I) -> Result<Self, sqlx::Error> {
        Option::<i64>::from_sqlite(row, index)?.map(narrow).transpose()
    }
    fn from_postgres<I: ColumnIndex<PgRow> + Copy>(row: &'r PgRow, index: I) -> Result<Self, sqlx::Error> {
        Option::<i64>::from_postgres(row, index)?.map(narrow).transpose()
    }
}

fn narrow(v: i64) -> Result<i32, sqlx::Error> {
    i32::try_from(v).map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

/// A row read whole into a value ([`query_as`]): tuples by position, structs by
/// [`from_row!`](crate::db::from_row).
pub(crate) trait FromRow: Sized {
    fn from_row(row: &Row) -> Result<Self, sqlx::Error>;
}

macro_rules! tuple_from_row {
    ($($t:ident $i:tt),+) => {
        impl<$($t: for<'r> Stored<'r>),+> FromRow for ($($t,)+) {
            fn from_row(row: &Row) -> Result<Self, sqlx::Error> {
                Ok(($(row.try_get::<$t, usize>($i)?,)+))
            }
        }
    };
}

tuple_from_row!(A 0);
tuple_from_row!(A 0, B 1);
tuple_from_row!(A 0, B 1, C 2);
tuple_from_row!(A 0, B 1, C 2, D 3);
tuple_from_row!(A 0, B 1, C 2, D 3, E 4);
tuple_from_row!(A 0, B 1, C 2, D 3, E 4, F 5);

/// `FromRow` for a struct whose fields are columns of the same names.
macro_rules! from_row {
    ($t:ty { $($field:ident),+ $(,)? }) => {
        impl $crate::db::FromRow for $t {
            fn from_row(row: &$crate::db::Row) -> Result<Self, sqlx::Error> {
                Ok(Self { $($field: row.try_get(stringify!($field))?),+ })
            }
        }
    };
}
pub(crate) use from_row;

/// A query and its arguments, not yet tied to a back end.
pub(crate) struct Query {
    sql: SqlStr,
    args: Vec<Arg>,
}

/// A query with `$N` placeholders.
pub(crate) fn query(sql: impl SqlSafeStr) -> Query {
    Query { sql: sql.into_sql_str(), args: Vec::new() }
}

/// A query whose first column of each row is the answer.
pub(crate) fn query_scalar<T: for<'r> Stored<'r>>(sql: impl SqlSafeStr) -> Scalar<T> {
    Scalar(query(sql), std::marker::PhantomData)
}

/// A query whose rows are read whole into `T`.
pub(crate) fn query_as<T: FromRow>(sql: impl SqlSafeStr) -> As<T> {
    As(query(sql), std::marker::PhantomData)
}

fn sqlite_query(
    sql: SqlStr,
    args: Vec<Arg>,
) -> sqlx::query::Query<'static, Sqlite, <Sqlite as sqlx::Database>::Arguments> {
    args.into_iter().fold(sqlx::query(sql), |q, arg| match arg {
        Arg::Text(v) => q.bind(v),
        Arg::Int(v) => q.bind(v),
        Arg::Real(v) => q.bind(v),
        Arg::Bytes(v) => q.bind(v),
    })
}

fn postgres_query(
    sql: SqlStr,
    args: Vec<Arg>,
) -> sqlx::query::Query<'static, Postgres, <Postgres as sqlx::Database>::Arguments> {
    args.into_iter().fold(sqlx::query(sql), |q, arg| match arg {
        Arg::Text(v) => q.bind(v.map(without_nul)),
        Arg::Int(v) => q.bind(v),
        Arg::Real(v) => q.bind(v),
        Arg::Bytes(v) => q.bind(v),
    })
}

/// PostgreSQL's text cannot hold U+0000 (SQLite's can): it is stored as U+FFFD, the
/// replacement character, rather than failing the write. Only text that came with a NUL in
/// it (a path or a value an agent sent) is touched.
fn without_nul(text: String) -> String {
    if text.contains('\0') { text.replace('\0', "\u{FFFD}") } else { text }
}

/// Runs `$run` with the query made for the back end `$on` names: `$q` is the sqlx query and
/// `$e` the pool or transaction to run it on, and `$wrap` turns the answer's rows into [`Row`].
macro_rules! run_on {
    ($self:expr, $on:expr, |$q:ident, $e:ident| $run:expr, $wrap:expr) => {{
        let Query { sql, args } = $self;
        match $on.into() {
            On::Db(db) => {
                db.settle().await;
                match &db.pool {
                    Pool::Sqlite(pool) => {
                        let ($q, $e) = (sqlite_query(sql, args), pool);
                        $run.map(|r| ($wrap)(r, Row::Sqlite))
                    }
                    Pool::Postgres(pool) => {
                        let ($q, $e) = (postgres_query(sql, args), pool);
                        $run.map(|r| ($wrap)(r, Row::Postgres))
                    }
                }
            }
            On::Tx(tx) => match tx {
                Tx::Sqlite(tx) => {
                    let ($q, $e) = (sqlite_query(sql, args), &mut **tx);
                    $run.map(|r| ($wrap)(r, Row::Sqlite))
                }
                Tx::Postgres(tx) => {
                    let ($q, $e) = (postgres_query(sql, args), &mut **tx);
                    $run.map(|r| ($wrap)(r, Row::Postgres))
                }
            },
        }
    }};
}

impl Query {
    pub(crate) fn bind(mut self, value: impl Bind) -> Self {
        self.args.push(value.into_arg());
        self
    }

    pub(crate) async fn execute<'e>(self, on: impl Into<On<'e>>) -> Result<Done, sqlx::Error> {
        match on.into() {
            On::Db(db) => {
                db.settle().await;
                match &db.pool {
                    Pool::Sqlite(pool) => {
                        sqlite_query(self.sql, self.args).execute(pool).await.map(|r| r.rows_affected())
                    }
                    Pool::Postgres(pool) => {
                        postgres_query(self.sql, self.args).execute(pool).await.map(|r| r.rows_affected())
                    }
                }
            }
            On::Tx(Tx::Sqlite(tx)) => {
                sqlite_query(self.sql, self.args).execute(&mut **tx).await.map(|r| r.rows_affected())
            }
            On::Tx(Tx::Postgres(tx)) => {
                postgres_query(self.sql, self.args).execute(&mut **tx).await.map(|r| r.rows_affected())
            }
        }
        .map(|rows_affected| Done { rows_affected })
    }

    pub(crate) async fn fetch_one<'e>(self, on: impl Into<On<'e>>) -> Result<Row, sqlx::Error> {
        run_on!(self, on, |q, e| q.fetch_one(e).await, |row, wrap: fn(_) -> Row| wrap(row))
    }

    pub(crate) async fn fetch_optional<'e>(self, on: impl Into<On<'e>>) -> Result<Option<Row>, sqlx::Error> {
        run_on!(self, on, |q, e| q.fetch_optional(e).await, |row: Option<_>, wrap: fn(_) -> Row| row.map(wrap))
    }

    pub(crate) async fn fetch_all<'e>(self, on: impl Into<On<'e>>) -> Result<Vec<Row>, sqlx::Error> {
        run_on!(self, on, |q, e| q.fetch_all(e).await, |rows: Vec<_>, wrap: fn(_) -> Row| rows
            .into_iter()
            .map(wrap)
            .collect())
    }

    /// The rows one at a time, for a result too large to hold at once.
    pub(crate) fn fetch(self, db: &Db) -> BoxStream<'_, Result<Row, sqlx::Error>> {
        match &db.pool {
            Pool::Sqlite(pool) => sqlite_query(self.sql, self.args).fetch(pool).map_ok(Row::Sqlite).boxed(),
            Pool::Postgres(pool) => postgres_query(self.sql, self.args).fetch(pool).map_ok(Row::Postgres).boxed(),
        }
    }
}

/// [`query_scalar`]'s query.
pub(crate) struct Scalar<T>(Query, std::marker::PhantomData<fn() -> T>);

impl<T: for<'r> Stored<'r>> Scalar<T> {
    pub(crate) fn bind(self, value: impl Bind) -> Self {
        Scalar(self.0.bind(value), self.1)
    }

    pub(crate) async fn fetch_one<'e>(self, on: impl Into<On<'e>>) -> Result<T, sqlx::Error> {
        self.0.fetch_one(on).await?.try_get(0)
    }

    pub(crate) async fn fetch_optional<'e>(self, on: impl Into<On<'e>>) -> Result<Option<T>, sqlx::Error> {
        self.0.fetch_optional(on).await?.map(|row| row.try_get(0)).transpose()
    }

    pub(crate) async fn fetch_all<'e>(self, on: impl Into<On<'e>>) -> Result<Vec<T>, sqlx::Error> {
        self.0.fetch_all(on).await?.iter().map(|row| row.try_get(0)).collect()
    }
}

/// [`query_as`]'s query.
pub(crate) struct As<T>(Query, std::marker::PhantomData<fn() -> T>);

impl<T: FromRow> As<T> {
    pub(crate) fn bind(self, value: impl Bind) -> Self {
        As(self.0.bind(value), self.1)
    }

    pub(crate) async fn fetch_optional<'e>(self, on: impl Into<On<'e>>) -> Result<Option<T>, sqlx::Error> {
        self.0.fetch_optional(on).await?.as_ref().map(T::from_row).transpose()
    }

    pub(crate) async fn fetch_all<'e>(self, on: impl Into<On<'e>>) -> Result<Vec<T>, sqlx::Error> {
        self.0.fetch_all(on).await?.iter().map(T::from_row).collect()
    }
}

/// A query put together piece by piece; `push_bind` writes the next `$N`.
pub(crate) struct QueryBuilder {
    sql: String,
    args: Vec<Arg>,
}

impl QueryBuilder {
    pub(crate) fn new(sql: impl Into<String>) -> Self {
        QueryBuilder { sql: sql.into(), args: Vec::new() }
    }

    pub(crate) fn push(&mut self, sql: impl std::fmt::Display) -> &mut Self {
        use std::fmt::Write;
        let _ = write!(self.sql, "{sql}");
        self
    }

    pub(crate) fn push_bind(&mut self, value: impl Bind) -> &mut Self {
        self.args.push(value.into_arg());
        let n = self.args.len();
        self.push(format_args!("${n}"))
    }

    /// Pieces with `separator` between them (`IN (…)` lists).
    pub(crate) fn separated<'b>(&'b mut self, separator: &'static str) -> Separated<'b> {
        Separated { builder: self, separator, first: true }
    }

    /// `VALUES (…), (…)`: one parenthesised row per item, its values pushed by `each`.
    pub(crate) fn push_values<T>(
        &mut self,
        items: impl IntoIterator<Item = T>,
        mut each: impl FnMut(Separated<'_>, T),
    ) {
        self.push("VALUES ");
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.push("(");
            each(self.separated(", "), item);
            self.push(")");
        }
    }

    /// The query. Its text is SQL the store wrote, with `$N` for every value.
    pub(crate) fn build(self) -> Query {
        Query { sql: sqlx::AssertSqlSafe(self.sql).into_sql_str(), args: self.args }
    }

    pub(crate) fn build_query_scalar<T: for<'r> Stored<'r>>(self) -> Scalar<T> {
        Scalar(self.build(), std::marker::PhantomData)
    }
}

/// [`QueryBuilder::separated`]'s pieces.
pub(crate) struct Separated<'b> {
    builder: &'b mut QueryBuilder,
    separator: &'static str,
    first: bool,
}

impl Separated<'_> {
    pub(crate) fn push_bind(&mut self, value: impl Bind) -> &mut Self {
        if !std::mem::take(&mut self.first) {
            self.builder.push(self.separator);
        }
        self.builder.push_bind(value);
        self
    }
}
