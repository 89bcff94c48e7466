//! Helpers for test suites that run against both backends: a fresh SQLite
//! file, and a fresh PostgreSQL database on the server named by
//! `SLUICE_TEST_DATABASE_URL`. Without that variable the PostgreSQL half is
//! skipped, except under CI, where it is an error.

use sqlx::Connection;

use crate::{Sealer, Store};
use sluice_domain::ids::{IdempotencyKey, OwnerId};

/// A database for one test: where it is, and what keeps it alive.
pub struct TestDatabase {
    pub url: String,
    pub label: &'static str,
    _dir: Option<tempfile_dir::Dir>,
}

mod tempfile_dir {
    /// A directory removed on drop.
    pub struct Dir(pub std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A new empty SQLite database in its own temporary directory.
pub fn sqlite() -> TestDatabase {
    let dir = std::env::temp_dir().join(format!("sluice-test-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    TestDatabase {
        url: format!("sqlite:{}", dir.join("sluice.db").display()),
        label: "sqlite",
        _dir: Some(tempfile_dir::Dir(dir)),
    }
}

/// A new empty PostgreSQL database, or `None` when no server is configured
/// (a panic under CI, where the suite must not silently shrink).
pub async fn postgres() -> Option<TestDatabase> {
    let admin = match std::env::var("SLUICE_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            if std::env::var_os("CI").is_some() {
                panic!("CI is set but SLUICE_TEST_DATABASE_URL is not: the PostgreSQL suite cannot run");
            }
            eprintln!("SLUICE_TEST_DATABASE_URL is not set: skipping the PostgreSQL half of this test");
            return None;
        }
    };
    let url = create_postgres_database(&admin, "sluice_test")
        .await
        .unwrap_or_else(|e| panic!("cannot create a database on the server in SLUICE_TEST_DATABASE_URL: {e}"));
    Some(TestDatabase { url, label: "postgres", _dir: None })
}

/// Creates an empty database named `PREFIX_<random>` on the server of
/// `admin_url` and returns its URL.
pub async fn create_postgres_database(admin_url: &str, prefix: &str) -> Result<String, sqlx::Error> {
    let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
    let mut conn = sqlx::PgConnection::connect(admin_url).await?;
    sqlx::raw_sql(&format!("CREATE DATABASE {name}")).execute(&mut conn).await?;
    let _ = conn.close().await;
    let base = admin_url.rsplit_once('/').map_or(admin_url, |(b, _)| b);
    Ok(format!("{base}/{name}"))
}

/// Drops a database [`create_postgres_database`] made, from `admin_url`.
pub async fn drop_postgres_database(admin_url: &str, url: &str) -> Result<(), sqlx::Error> {
    let name = url.rsplit_once('/').map_or(url, |(_, name)| name);
    let mut conn = sqlx::PgConnection::connect(admin_url).await?;
    sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut conn).await?;
    let _ = conn.close().await;
    Ok(())
}

/// Every backend available to this run.
pub async fn databases() -> Vec<TestDatabase> {
    let mut all = vec![sqlite()];
    all.extend(postgres().await);
    all
}

/// A migrated store on `db` with a fixed test key.
pub async fn open(db: &TestDatabase) -> Store {
    Store::open(&db.url, Sealer::from_key([42; 32])).await.expect("open test store")
}

pub use sluice_domain::testing::workspace;

/// SQLite's write lock, held from a connection of its own: while held,
/// every write of a store on the same database fails as unavailable once
/// its wait runs out (reads go on: the database is in WAL mode). How a
/// test takes the database away at a moment of its choosing.
#[derive(Debug)]
pub struct WriteLock {
    conn: tokio::sync::Mutex<sqlx::SqliteConnection>,
    held: std::sync::atomic::AtomicBool,
}

impl WriteLock {
    pub async fn new(db: &TestDatabase) -> WriteLock {
        use sqlx::Connection;
        let conn = sqlx::SqliteConnection::connect(&db.url).await.expect("a connection of the lock's own");
        WriteLock { conn: tokio::sync::Mutex::new(conn), held: false.into() }
    }

    pub fn held(&self) -> bool {
        self.held.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Takes the lock (waiting for a writer that holds it now).
    pub fn hold(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        self.set(true)
    }

    pub fn release(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        self.set(false)
    }

    fn set(&self, held: bool) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            let mut conn = self.conn.lock().await;
            if self.held() != held {
                let sql = if held { "BEGIN IMMEDIATE" } else { "ROLLBACK" };
                sqlx::query(sql).execute(&mut *conn).await.expect("the write lock");
                self.held.store(held, std::sync::atomic::Ordering::SeqCst);
            }
        })
    }
}

impl Store {
    /// Records `key` as `pending`, as a create of an earlier release did
    /// before it committed: what such a create left when it died.
    pub async fn plant_pending_key(&self, owner: &OwnerId, key: &IdempotencyKey, request_hash: &str) {
        let now = crate::clock::now_ms();
        self.pool
            .execute(
                "INSERT INTO create_keys (owner_user_id, idempotency_key, state, request_hash, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $5)",
                crate::db::args![owner, key, crate::model::CreateKeyState::Pending.as_str(), request_hash, now],
            )
            .await
            .expect("plant a pending key");
    }
}
