//! The one place that knows there are two SQL backends. Queries are written
//! once in portable SQL (`$n` placeholders, `RETURNING`, `ON CONFLICT`), bound
//! with the few value kinds the schema uses, and run on whichever pool the
//! store was opened with. Rows come back as [`DbRow`], read by column name.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{Postgres, Row, Sqlite, Transaction};

use crate::error::StoreError;
use sluice_domain::ids;

/// A value bound to a placeholder. Only the kinds the schema uses.
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    Text(Option<String>),
    Int(Option<i64>),
    Bytes(Option<Vec<u8>>),
}

impl From<&str> for Arg {
    fn from(v: &str) -> Self {
        Arg::Text(Some(v.to_owned()))
    }
}
impl From<String> for Arg {
    fn from(v: String) -> Self {
        Arg::Text(Some(v))
    }
}
impl From<&String> for Arg {
    fn from(v: &String) -> Self {
        Arg::Text(Some(v.clone()))
    }
}
impl From<Option<String>> for Arg {
    fn from(v: Option<String>) -> Self {
        Arg::Text(v)
    }
}
impl From<Option<&str>> for Arg {
    fn from(v: Option<&str>) -> Self {
        Arg::Text(v.map(str::to_owned))
    }
}
impl From<i64> for Arg {
    fn from(v: i64) -> Self {
        Arg::Int(Some(v))
    }
}
impl From<Option<i64>> for Arg {
    fn from(v: Option<i64>) -> Self {
        Arg::Int(v)
    }
}
impl From<Vec<u8>> for Arg {
    fn from(v: Vec<u8>) -> Self {
        Arg::Bytes(Some(v))
    }
}

/// An identity binds as the text it is.
macro_rules! bind_identities {
    ($($id:ty),* $(,)?) => {$(
        impl From<&$id> for Arg {
            fn from(v: &$id) -> Self {
                Arg::Text(Some(v.as_str().to_owned()))
            }
        }
        impl From<$id> for Arg {
            fn from(v: $id) -> Self {
                Arg::Text(Some(v.into_string()))
            }
        }
        impl From<Option<&$id>> for Arg {
            fn from(v: Option<&$id>) -> Self {
                Arg::Text(v.map(|v| v.as_str().to_owned()))
            }
        }
        impl From<Option<$id>> for Arg {
            fn from(v: Option<$id>) -> Self {
                Arg::Text(v.map(<$id>::into_string))
            }
        }
        impl From<&Option<$id>> for Arg {
            fn from(v: &Option<$id>) -> Self {
                Arg::Text(v.as_ref().map(|v| v.as_str().to_owned()))
            }
        }
    )*};
}
bind_identities!(
    ids::BuildId,
    ids::WorkspaceId,
    ids::RunId,
    ids::ExecRunId,
    ids::OwnerId,
    ids::SessionId,
    ids::SshSessionId,
    ids::LaunchId,
    ids::IdempotencyKey,
    ids::WorkerId,
    ids::WebhookId,
    ids::PreviewId,
    ids::EventId,
    ids::ConsoleSessionId,
    ids::SnapshotId,
);

/// Builds an argument list: `args![a, b, c]`.
macro_rules! args {
    ($($v:expr),* $(,)?) => { vec![$($crate::db::Arg::from($v)),*] };
}
pub(crate) use args;

macro_rules! bind_all {
    ($sql:expr, $args:expr) => {{
        let mut q = sqlx::query($sql);
        for a in $args {
            q = match a {
                Arg::Text(v) => q.bind(v),
                Arg::Int(v) => q.bind(v),
                Arg::Bytes(v) => q.bind(v),
            };
        }
        q
    }};
}

/// A row from either backend.
pub(crate) enum DbRow {
    Sqlite(SqliteRow),
    Postgres(PgRow),
}

impl DbRow {
    fn get<T>(&self, column: &str) -> Result<T, StoreError>
    where
        T: for<'r> sqlx::Decode<'r, Sqlite>
            + sqlx::Type<Sqlite>
            + for<'r> sqlx::Decode<'r, Postgres>
            + sqlx::Type<Postgres>,
    {
        Ok(match self {
            DbRow::Sqlite(r) => r.try_get::<T, _>(column)?,
            DbRow::Postgres(r) => r.try_get::<T, _>(column)?,
        })
    }
    pub fn text(&self, column: &str) -> Result<String, StoreError> {
        self.get(column)
    }
    pub fn opt_text(&self, column: &str) -> Result<Option<String>, StoreError> {
        self.get(column)
    }
    /// A stored identity, typed as what the column holds.
    pub fn id<T: From<String>>(&self, column: &str) -> Result<T, StoreError> {
        self.text(column).map(T::from)
    }
    pub fn opt_id<T: From<String>>(&self, column: &str) -> Result<Option<T>, StoreError> {
        Ok(self.opt_text(column)?.map(T::from))
    }
    pub fn int(&self, column: &str) -> Result<i64, StoreError> {
        self.get(column)
    }
    pub fn opt_int(&self, column: &str) -> Result<Option<i64>, StoreError> {
        self.get(column)
    }
    pub fn bytes(&self, column: &str) -> Result<Vec<u8>, StoreError> {
        self.get(column)
    }
    /// A text column holding one of an enum's stored names.
    pub fn parsed<T: FromStr>(&self, column: &str) -> Result<T, StoreError> {
        let raw = self.text(column)?;
        raw.parse().map_err(|_| StoreError::Corrupt(format!("column {column} holds unknown value {raw:?}")))
    }
    /// As [`DbRow::parsed`], for a column that may be NULL.
    pub fn opt_parsed<T: FromStr>(&self, column: &str) -> Result<Option<T>, StoreError> {
        let Some(raw) = self.opt_text(column)? else { return Ok(None) };
        raw.parse().map(Some).map_err(|_| StoreError::Corrupt(format!("column {column} holds unknown value {raw:?}")))
    }
}

/// A transaction whose BEGIN ran but whose caller was dropped before it held
/// the transaction would keep SQLite's write lock for good: nothing is left
/// open on a connection going back to the pool. Without an open
/// transaction the ROLLBACK is refused, as it should be.
///
/// A COMMIT that failed (the disk full) leaves SQLite's transaction rolled
/// back but the driver counting it open, so every later BEGIN on the
/// connection would fail: such a connection is closed, not pooled.
async fn no_transaction_left_open(conn: &mut sqlx::SqliteConnection) -> Result<bool, sqlx::Error> {
    if sqlx::Executor::execute(&mut *conn, "ROLLBACK").await.is_ok() {
        tracing::warn!("a connection came back with a transaction open; it was rolled back");
    }
    if sqlx::Connection::is_in_transaction(conn) {
        tracing::warn!("a connection came back counting a transaction SQLite no longer has; it is closed");
        return Ok(false);
    }
    Ok(true)
}

/// The connection pool of one backend.
#[derive(Clone, Debug)]
pub(crate) struct Pool {
    conns: Conns,
    /// Counts the commits of this process that appended events.
    events: Arc<tokio::sync::watch::Sender<u64>>,
}

#[derive(Clone, Debug)]
enum Conns {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Which backend a store runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    Sqlite,
    Postgres,
}

/// Row locks: SQLite's write transaction holds the whole database already,
/// so each is nothing there.
impl BackendKind {
    /// Locks the rows a SELECT reads until the transaction ends.
    pub(crate) fn for_update(self) -> &'static str {
        match self {
            BackendKind::Postgres => " FOR UPDATE",
            BackendKind::Sqlite => "",
        }
    }

    /// Keeps the rows a SELECT reads from changing until the transaction ends.
    pub(crate) fn for_share(self) -> &'static str {
        match self {
            BackendKind::Postgres => " FOR SHARE",
            BackendKind::Sqlite => "",
        }
    }

    /// As [`BackendKind::for_update`], passing over rows another
    /// transaction holds (workers claiming jobs side by side).
    pub(crate) fn for_update_skip_locked(self) -> &'static str {
        match self {
            BackendKind::Postgres => " FOR UPDATE SKIP LOCKED",
            BackendKind::Sqlite => "",
        }
    }

    /// Whether a transaction must lock a table's rows to run one at a time
    /// with others (SQLite's write transactions already do).
    pub(crate) fn locks_rows(self) -> bool {
        self == BackendKind::Postgres
    }

    /// The events feed in commit order. PostgreSQL orders by the writing
    /// transaction and reads only what every earlier transaction has
    /// committed (a later position can commit first); SQLite writes one
    /// transaction at a time, so the position alone is the order.
    pub(crate) fn feed(self) -> FeedDialect {
        match self {
            BackendKind::Postgres => FeedDialect {
                tx: "CAST(CAST(tx_id AS TEXT) AS BIGINT)",
                visible: "tx_id < pg_snapshot_xmin(pg_current_snapshot())",
                after: "(tx_id, position) > (CAST(CAST($1 AS TEXT) AS xid8), $2)",
                order: "tx_id, position",
                newest_first: "tx_id DESC, position DESC",
            },
            BackendKind::Sqlite => FeedDialect {
                tx: "0",
                visible: "1 = 1",
                after: "$1 = $1 AND position > $2",
                order: "position",
                newest_first: "position DESC",
            },
        }
    }

    /// How the store generator numbers rows (see `bench.rs`).
    #[cfg(feature = "bench")]
    pub(crate) fn series(self) -> SeriesDialect {
        match self {
            BackendKind::Postgres => SeriesDialect {
                with_numbers: "",
                with_sequences: "",
                numbers: "generate_series($1::bigint, $2::bigint - 1) AS g(n)",
                sequences: "generate_series(1, $4::bigint) AS s(seq)",
                padded: "lpad(g.n::text, 8, '0')",
                quiet_events: Some((
                    "ALTER TABLE events DISABLE TRIGGER events_announce",
                    "ALTER TABLE events ENABLE TRIGGER events_announce",
                )),
            },
            // No series function: recursive ones, named alike.
            BackendKind::Sqlite => SeriesDialect {
                with_numbers: "WITH RECURSIVE g(n) AS (SELECT $1 UNION ALL SELECT n + 1 FROM g WHERE n + 1 < $2) ",
                with_sequences: ", s(seq) AS (SELECT 1 UNION ALL SELECT seq + 1 FROM s WHERE seq < $4) ",
                numbers: "g",
                sequences: "s",
                padded: "printf('%08d', g.n)",
                quiet_events: None,
            },
        }
    }

    /// A query finding `$1` anywhere in a row of `table`, given its columns
    /// (read from the database on SQLite; PostgreSQL reads a row as text).
    pub(crate) fn row_contains(self, table: &str, columns: &[String]) -> String {
        match self {
            BackendKind::Postgres => {
                format!("SELECT 1 AS hit FROM {table} t WHERE position($1 in t::text) > 0 LIMIT 1")
            }
            BackendKind::Sqlite => {
                let haystack: Vec<String> =
                    columns.iter().map(|c| format!("coalesce(CAST({c} AS TEXT), '')")).collect();
                format!("SELECT 1 AS hit FROM {table} WHERE instr({}, $1) > 0 LIMIT 1", haystack.join(" || "))
            }
        }
    }
}

/// A connection listening for notifications (PostgreSQL's).
pub(crate) type Listener = sqlx::postgres::PgListener;

/// How the store generator numbers rows: `g.n` from `$1` up to `$2`, and
/// `s.seq` from 1 to `$4`, with the `WITH` parts a backend needs first; a
/// number padded to eight digits; and the statements that silence and
/// restore the events' announcements around a fill.
#[cfg(feature = "bench")]
pub(crate) struct SeriesDialect {
    pub with_numbers: &'static str,
    pub with_sequences: &'static str,
    pub numbers: &'static str,
    pub sequences: &'static str,
    pub padded: &'static str,
    pub quiet_events: Option<(&'static str, &'static str)>,
}

/// The SQL fragments of the events feed's order (see [`BackendKind::feed`]).
pub(crate) struct FeedDialect {
    /// The cursor's transaction part, as a BIGINT.
    pub tx: &'static str,
    /// The events a reader may see yet.
    pub visible: &'static str,
    /// The events after the cursor `($1, $2)`.
    pub after: &'static str,
    pub order: &'static str,
    pub newest_first: &'static str,
}

/// How long a statement waits for the database: for a pooled connection
/// (PostgreSQL down or every connection busy) and, on SQLite, for another
/// writer's lock. Past it the caller hears [`StoreError::Unavailable`]
/// (a 503 with `Retry-After`) rather than waiting on. A second under the
/// 5 s the API promises, so a request's own work fits inside it.
pub const DATABASE_WAIT: Duration = Duration::from_secs(4);

impl Pool {
    fn of(conns: Conns) -> Pool {
        Pool { conns, events: Arc::new(tokio::sync::watch::channel(0).0) }
    }

    /// Changes once each time a transaction of this process that appended
    /// events commits.
    pub(crate) fn event_commits(&self) -> tokio::sync::watch::Receiver<u64> {
        self.events.subscribe()
    }

    pub(crate) async fn connect(url: &str, max_connections: u32, wait: Duration) -> Result<Pool, StoreError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let pool = PgPoolOptions::new().max_connections(max_connections).acquire_timeout(wait).connect(url).await?;
            Ok(Pool::of(Conns::Postgres(pool)))
        } else if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .foreign_keys(true)
                .busy_timeout(wait);
            let pool = SqlitePoolOptions::new()
                .max_connections(max_connections)
                .acquire_timeout(DATABASE_WAIT)
                .after_release(|conn, _| Box::pin(no_transaction_left_open(conn)))
                .connect_with(options)
                .await?;
            Ok(Pool::of(Conns::Sqlite(pool)))
        } else {
            Err(StoreError::Config("database URL must start with sqlite:, postgres:// or postgresql://".into()))
        }
    }

    pub(crate) fn kind(&self) -> BackendKind {
        match &self.conns {
            Conns::Sqlite(_) => BackendKind::Sqlite,
            Conns::Postgres(_) => BackendKind::Postgres,
        }
    }

    pub(crate) async fn migrate(&self) -> Result<(), StoreError> {
        match &self.conns {
            Conns::Sqlite(p) => sqlx::migrate!("../migrations/sqlite").run(p).await?,
            Conns::Postgres(p) => sqlx::migrate!("../migrations/postgres").run(p).await?,
        }
        Ok(())
    }

    /// Opens a write transaction. SQLite takes its write lock up front so a
    /// transaction that reads before it writes cannot fail to upgrade.
    pub(crate) async fn begin(&self) -> Result<Tx, StoreError> {
        Ok(match &self.conns {
            Conns::Sqlite(p) => Tx::of(OpenTx::Sqlite(p.begin_with("BEGIN IMMEDIATE").await?), &self.events),
            Conns::Postgres(p) => Tx::of(OpenTx::Postgres(p.begin().await?), &self.events),
        })
    }

    pub(crate) async fn execute(&self, sql: &str, args: Vec<Arg>) -> Result<u64, StoreError> {
        Ok(match &self.conns {
            Conns::Sqlite(p) => bind_all!(sql, args).execute(p).await?.rows_affected(),
            Conns::Postgres(p) => bind_all!(sql, args).execute(p).await?.rows_affected(),
        })
    }

    pub(crate) async fn fetch_optional(&self, sql: &str, args: Vec<Arg>) -> Result<Option<DbRow>, StoreError> {
        Ok(match &self.conns {
            Conns::Sqlite(p) => bind_all!(sql, args).fetch_optional(p).await?.map(DbRow::Sqlite),
            Conns::Postgres(p) => bind_all!(sql, args).fetch_optional(p).await?.map(DbRow::Postgres),
        })
    }

    pub(crate) async fn fetch_all(&self, sql: &str, args: Vec<Arg>) -> Result<Vec<DbRow>, StoreError> {
        Ok(match &self.conns {
            Conns::Sqlite(p) => bind_all!(sql, args).fetch_all(p).await?.into_iter().map(DbRow::Sqlite).collect(),
            Conns::Postgres(p) => bind_all!(sql, args).fetch_all(p).await?.into_iter().map(DbRow::Postgres).collect(),
        })
    }

    /// Listens on a notification channel; `None` on SQLite, which has none
    /// (its writers share the process and wake each other directly).
    pub(crate) async fn listen(&self, channel: &str) -> Result<Option<Listener>, StoreError> {
        let Conns::Postgres(pool) = &self.conns else { return Ok(None) };
        let mut listener = sqlx::postgres::PgListener::connect_with(pool).await?;
        listener.listen(channel).await?;
        Ok(Some(listener))
    }

    /// The durability the database runs with, as its own settings say.
    #[cfg(feature = "bench")]
    pub(crate) async fn durability(&self) -> Result<String, StoreError> {
        match self.kind() {
            BackendKind::Sqlite => {
                let mode = self.fetch_optional("PRAGMA journal_mode", vec![]).await?;
                let sync = self.fetch_optional("PRAGMA synchronous", vec![]).await?;
                let mode = mode.map(|r| r.text("journal_mode")).transpose()?.unwrap_or_default();
                let level = sync.map(|r| r.int("synchronous")).transpose()?.unwrap_or(-1);
                let level = match level {
                    0 => "OFF",
                    1 => "NORMAL (a commit survives the process dying, not the machine)",
                    2 => "FULL",
                    3 => "EXTRA",
                    _ => "unknown",
                };
                Ok(format!("journal_mode={mode}, synchronous={level}"))
            }
            BackendKind::Postgres => {
                let row = self
                    .fetch_optional(
                        "SELECT current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sync",
                        vec![],
                    )
                    .await?
                    .ok_or_else(|| StoreError::Corrupt("no settings".into()))?;
                Ok(format!("fsync={}, synchronous_commit={}", row.text("fsync")?, row.text("sync")?))
            }
        }
    }

    /// A table's column names where a query must name them (SQLite, for
    /// [`BackendKind::row_contains`]); PostgreSQL reads a row whole.
    pub(crate) async fn column_names(&self, table: &str) -> Result<Vec<String>, StoreError> {
        match self.kind() {
            BackendKind::Postgres => Ok(Vec::new()),
            BackendKind::Sqlite => self
                .fetch_all(&format!("SELECT name FROM pragma_table_info('{table}')"), Vec::new())
                .await?
                .iter()
                .map(|r| r.text("name"))
                .collect(),
        }
    }

    /// A table's column names, in order, on either backend (the store
    /// generator copies rows whole).
    #[cfg(feature = "bench")]
    pub(crate) async fn table_columns(&self, table: &str) -> Result<Vec<String>, StoreError> {
        let sql = match self.kind() {
            BackendKind::Sqlite => "SELECT name FROM pragma_table_info($1) ORDER BY cid",
            BackendKind::Postgres => {
                "SELECT column_name::text AS name FROM information_schema.columns \
                 WHERE table_name = $1 AND table_schema = current_schema() ORDER BY ordinal_position"
            }
        };
        self.fetch_all(sql, args![table]).await?.iter().map(|r| r.text("name")).collect()
    }

    /// Runs a statement that is not parameterised (the benchmarks' DDL).
    #[cfg(feature = "bench")]
    pub(crate) async fn execute_raw(&self, sql: &str) -> Result<(), StoreError> {
        match &self.conns {
            Conns::Sqlite(p) => {
                sqlx::raw_sql(sql).execute(p).await?;
            }
            Conns::Postgres(p) => {
                sqlx::raw_sql(sql).execute(p).await?;
            }
        }
        Ok(())
    }

    pub(crate) async fn close(&self) {
        match &self.conns {
            Conns::Sqlite(p) => p.close().await,
            Conns::Postgres(p) => p.close().await,
        }
    }
}

/// An open write transaction. Dropping it without [`Tx::commit`] rolls back.
pub(crate) struct Tx {
    open: OpenTx,
    /// Told once this transaction commits, when it appended events.
    events: Arc<tokio::sync::watch::Sender<u64>>,
    appended_events: bool,
}

enum OpenTx {
    Sqlite(Transaction<'static, Sqlite>),
    Postgres(Transaction<'static, Postgres>),
}

impl Tx {
    pub(crate) async fn execute(&mut self, sql: &str, args: Vec<Arg>) -> Result<u64, StoreError> {
        Ok(match &mut self.open {
            OpenTx::Sqlite(t) => bind_all!(sql, args).execute(&mut **t).await?.rows_affected(),
            OpenTx::Postgres(t) => bind_all!(sql, args).execute(&mut **t).await?.rows_affected(),
        })
    }

    pub(crate) async fn fetch_optional(&mut self, sql: &str, args: Vec<Arg>) -> Result<Option<DbRow>, StoreError> {
        Ok(match &mut self.open {
            OpenTx::Sqlite(t) => bind_all!(sql, args).fetch_optional(&mut **t).await?.map(DbRow::Sqlite),
            OpenTx::Postgres(t) => bind_all!(sql, args).fetch_optional(&mut **t).await?.map(DbRow::Postgres),
        })
    }

    pub(crate) async fn fetch_all(&mut self, sql: &str, args: Vec<Arg>) -> Result<Vec<DbRow>, StoreError> {
        Ok(match &mut self.open {
            OpenTx::Sqlite(t) => {
                bind_all!(sql, args).fetch_all(&mut **t).await?.into_iter().map(DbRow::Sqlite).collect()
            }
            OpenTx::Postgres(t) => {
                bind_all!(sql, args).fetch_all(&mut **t).await?.into_iter().map(DbRow::Postgres).collect()
            }
        })
    }

    pub(crate) async fn fetch_one(&mut self, sql: &str, args: Vec<Arg>) -> Result<DbRow, StoreError> {
        self.fetch_optional(sql, args)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a statement expected to return a row returned none".into()))
    }

    pub(crate) async fn commit(self) -> Result<(), StoreError> {
        match self.open {
            OpenTx::Sqlite(t) => t.commit().await?,
            OpenTx::Postgres(t) => t.commit().await?,
        }
        if self.appended_events {
            self.events.send_modify(|n| *n = n.wrapping_add(1));
        }
        Ok(())
    }

    fn of(open: OpenTx, events: &Arc<tokio::sync::watch::Sender<u64>>) -> Tx {
        Tx { open, events: events.clone(), appended_events: false }
    }

    /// Which backend the transaction is on.
    pub(crate) fn kind(&self) -> BackendKind {
        match self.open {
            OpenTx::Sqlite(_) => BackendKind::Sqlite,
            OpenTx::Postgres(_) => BackendKind::Postgres,
        }
    }

    /// Marks the transaction as one that appended events: its commit is
    /// heard by [`Pool::event_commits`].
    pub(crate) fn appended_events(&mut self) {
        self.appended_events = true;
    }
}

/// How a column of [`Tx::insert_rows`] is carried in its JSON row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Column {
    Text(&'static str),
    Int(&'static str),
    /// Bytes, carried as lowercase hex.
    Bytes(&'static str),
}

impl Column {
    fn name(self) -> &'static str {
        match self {
            Column::Text(n) | Column::Int(n) | Column::Bytes(n) => n,
        }
    }
}

/// One row for [`Tx::insert_rows`], its values in the columns' order.
pub(crate) fn json_row(values: Vec<Arg>) -> serde_json::Value {
    use serde_json::Value;
    let cell = |arg: Arg| match arg {
        Arg::Text(v) => v.map_or(Value::Null, Value::String),
        Arg::Int(v) => v.map_or(Value::Null, Value::from),
        Arg::Bytes(v) => v.map_or(Value::Null, |b| Value::String(hex_lower(&b))),
    };
    Value::Array(values.into_iter().map(cell).collect())
}

fn hex_lower(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Tx {
    /// Inserts any number of rows with one statement whose text does not
    /// depend on how many there are: the rows travel as one JSON array of
    /// arrays, which the database unpacks. A batch of creates costs a
    /// statement per table, not one per row, and stays one prepared
    /// statement. `suffix` follows the select (an `ON CONFLICT` or a
    /// `RETURNING`); the rows it returns are answered.
    pub(crate) async fn insert_rows(
        &mut self,
        table: &str,
        columns: &[Column],
        rows: Vec<serde_json::Value>,
        suffix: &str,
    ) -> Result<Vec<DbRow>, StoreError> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let names: Vec<&str> = columns.iter().map(|c| c.name()).collect();
        let sql = match &mut self.open {
            OpenTx::Sqlite(_) => {
                let cells: Vec<String> = (0..columns.len())
                    .map(|i| match columns[i] {
                        Column::Bytes(_) => format!("unhex(value ->> {i})"),
                        Column::Text(_) | Column::Int(_) => format!("value ->> {i}"),
                    })
                    .collect();
                // `WHERE true` keeps SQLite from reading an upsert's ON as a join's.
                format!(
                    "INSERT INTO {table} ({}) SELECT {} FROM json_each($1) WHERE true {suffix}",
                    names.join(", "),
                    cells.join(", ")
                )
            }
            OpenTx::Postgres(_) => {
                let cells: Vec<String> = (0..columns.len())
                    .map(|i| match columns[i] {
                        Column::Text(_) => format!("r.v ->> {i}"),
                        Column::Int(_) => format!("(r.v ->> {i})::bigint"),
                        Column::Bytes(_) => format!("decode(r.v ->> {i}, 'hex')"),
                    })
                    .collect();
                format!(
                    "INSERT INTO {table} ({}) SELECT {} FROM json_array_elements($1::json) AS r(v) {suffix}",
                    names.join(", "),
                    cells.join(", ")
                )
            }
        };
        let document = serde_json::Value::Array(rows).to_string();
        self.fetch_all(&sql, args![document]).await
    }
}

/// A PostgreSQL connection one task keeps for its statements (the create
/// committer's), with settings of its own; made again after a statement on
/// it fails.
#[derive(Debug, Default)]
pub(crate) struct HeldConnection(Option<sqlx::PgConnection>);

/// One table's rows in a batch of creates, each guarded by its create's
/// idempotency key: the row carries, after its columns, the key's owner
/// and name (or two nulls), and is written only if its create's workspace
/// took that key.
pub(crate) struct GuardedRows {
    pub table: &'static str,
    pub columns: &'static [Column],
    /// Which of `columns` holds the row's workspace id.
    pub workspace_column: usize,
    pub rows: Vec<serde_json::Value>,
}

fn unpack_cells(kind: BackendKind, columns: &[Column]) -> String {
    let cells: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(i, column)| match (kind, column) {
            (BackendKind::Sqlite, Column::Bytes(_)) => format!("unhex(value ->> {i})"),
            (BackendKind::Sqlite, _) => format!("value ->> {i}"),
            (BackendKind::Postgres, Column::Text(_)) => format!("r.v ->> {i}"),
            (BackendKind::Postgres, Column::Int(_)) => format!("(r.v ->> {i})::bigint"),
            (BackendKind::Postgres, Column::Bytes(_)) => format!("decode(r.v ->> {i}, 'hex')"),
        })
        .collect();
    cells.join(", ")
}

fn column_names(columns: &[Column]) -> String {
    columns.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ")
}

impl Pool {
    /// Writes a batch of creates in one transaction and one round trip to
    /// the database: their key rows first (`key_columns`, a key already
    /// taken is left as it is), then every other table's rows whose
    /// create's workspace took its key (or has none). Answers the
    /// workspaces whose keys were taken here. SQLite runs the statements as
    /// one script on one connection; PostgreSQL as one statement of
    /// data-modifying parts, which commits as a whole.
    pub(crate) async fn insert_guarded(
        &self,
        held: &mut HeldConnection,
        key_columns: &[Column],
        key_rows: Vec<serde_json::Value>,
        tables: &[GuardedRows],
    ) -> Result<std::collections::HashSet<String>, StoreError> {
        let kind = self.kind();
        let key_names = column_names(key_columns);
        let key_cells = unpack_cells(kind, key_columns);
        let mut args = vec![Arg::from(serde_json::Value::Array(key_rows).to_string())];
        let sql = match kind {
            BackendKind::Sqlite => {
                let mut script = format!(
                    "BEGIN IMMEDIATE; INSERT INTO create_keys ({key_names}) SELECT {key_cells} FROM json_each($1) \
                     WHERE true ON CONFLICT (owner_user_id, idempotency_key) DO NOTHING RETURNING workspace_id; "
                );
                for (i, table) in tables.iter().enumerate() {
                    let n = table.columns.len();
                    let w = table.workspace_column;
                    script.push_str(&format!(
                        "INSERT INTO {} ({}) SELECT {} FROM json_each(${}) WHERE value ->> {} IS NULL \
                         OR EXISTS (SELECT 1 FROM create_keys c WHERE c.owner_user_id = value ->> {n} \
                         AND c.idempotency_key = value ->> {} AND c.workspace_id = value ->> {w}); ",
                        table.table,
                        column_names(table.columns),
                        unpack_cells(kind, table.columns),
                        i + 2,
                        n + 1,
                        n + 1,
                    ));
                }
                script.push_str("COMMIT;");
                script
            }
            BackendKind::Postgres => {
                let mut parts = vec![format!(
                    "k AS (INSERT INTO create_keys ({key_names}) SELECT {key_cells} \
                     FROM json_array_elements($1::json) AS r(v) \
                     ON CONFLICT (owner_user_id, idempotency_key) DO NOTHING RETURNING workspace_id)"
                )];
                for (i, table) in tables.iter().enumerate() {
                    let n = table.columns.len();
                    parts.push(format!(
                        "t{i} AS (INSERT INTO {} ({}) SELECT {} FROM json_array_elements(${}::json) AS r(v) \
                         WHERE r.v ->> {} IS NULL OR (r.v ->> {}) IN (SELECT workspace_id FROM k))",
                        table.table,
                        column_names(table.columns),
                        unpack_cells(kind, table.columns),
                        i + 2,
                        n + 1,
                        table.workspace_column,
                    ));
                }
                format!("WITH {} SELECT workspace_id FROM k", parts.join(", "))
            }
        };
        for table in tables {
            args.push(Arg::from(serde_json::Value::Array(table.rows.clone()).to_string()));
        }
        let rows = match &self.conns {
            Conns::Sqlite(p) => {
                let mut conn = p.acquire().await?;
                match bind_all!(&sql, args).fetch_all(&mut *conn).await {
                    Ok(rows) => rows.into_iter().map(DbRow::Sqlite).collect::<Vec<_>>(),
                    Err(e) => {
                        // The script stopped part way: nothing of it stays.
                        let _ = sqlx::Executor::execute(&mut *conn, "ROLLBACK").await;
                        return Err(e.into());
                    }
                }
            }
            Conns::Postgres(p) => {
                let conn = match held.0.take() {
                    Some(conn) => conn,
                    None => {
                        // A connection of its own, outside the pool: a
                        // pool's close waits for every connection it lent.
                        let mut conn: sqlx::PgConnection =
                            sqlx::Connection::connect_with(&*p.connect_options()).await?;
                        // Planned once: the statement's shape never changes,
                        // and planning it costs more than running it.
                        sqlx::Executor::execute(&mut conn, "SET plan_cache_mode = force_generic_plan").await?;
                        conn
                    }
                };
                let mut conn = conn;
                match bind_all!(&sql, args).fetch_all(&mut conn).await {
                    Ok(rows) => {
                        held.0 = Some(conn);
                        rows.into_iter().map(DbRow::Postgres).collect()
                    }
                    Err(e) => {
                        let _ = sqlx::Connection::close(conn).await;
                        return Err(e.into());
                    }
                }
            }
        };
        rows.iter().map(|row| row.text("workspace_id")).collect()
    }
}

/// A database error as the store reports it: one that says the database
/// cannot be used right now is `Unavailable` (a 503), any other `Database`.
impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        if unavailable(&e) { StoreError::Unavailable(e) } else { StoreError::Database(e) }
    }
}

impl StoreError {
    /// Whether the database refused the write for want of disk space
    /// (passing: it is unavailable until space is freed).
    pub fn is_disk_full(&self) -> bool {
        matches!(self, StoreError::Unavailable(e) | StoreError::Database(e) if disk_full(e))
    }
}

/// SQLite's SQLITE_FULL (its primary code in the low byte of an extended
/// one) and PostgreSQL's disk_full.
pub(crate) fn disk_full(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else { return false };
    let code = db.code().unwrap_or_default();
    if db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>().is_some() {
        code == "53100"
    } else {
        code.parse::<i32>().is_ok_and(|n| n & 0xff == 13)
    }
}

/// Whether `e` says the database cannot be reached or used right now,
/// rather than that the statement was wrong.
pub(crate) fn unavailable(e: &sqlx::Error) -> bool {
    if disk_full(e) {
        return true;
    }
    match e {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) | sqlx::Error::Tls(_) => true,
        sqlx::Error::Database(db) => {
            let code = db.code().unwrap_or_default();
            if db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>().is_some() {
                // Connection exceptions, shutdown, startup, no connection
                // slots left.
                code.starts_with("08") || matches!(code.as_ref(), "57P01" | "57P02" | "57P03" | "53300")
            } else {
                // SQLite's extended codes keep the primary one in the low
                // byte: SQLITE_BUSY and SQLITE_LOCKED.
                code.parse::<i32>().is_ok_and(|n| matches!(n & 0xff, 5 | 6))
            }
        }
        _ => false,
    }
}
