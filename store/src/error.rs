use sluice_domain::guard::GuardViolation;

/// Everything the store can fail with. Only the API crate turns these into
/// HTTP answers.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The idempotency key was used before with a different request.
    #[error("the idempotency key was already used with a different request")]
    IdempotencyKeyReused,
    /// The idempotency key was cancelled: no create with it ever commits.
    #[error("the create with this idempotency key was cancelled")]
    CreateCancelled,
    /// The write was made under a job lease that is no longer held: another
    /// worker took the job over (or the lease ran out). Nothing was applied.
    #[error("job {kind}/{subject}: lease generation {generation} is no longer held; the write was refused")]
    Fenced { kind: String, subject: String, generation: i64 },
    /// The request conflicts with the workspace's current state.
    #[error("{message}")]
    Conflict { message: String, code: crate::model::ConflictCode },
    /// A value about to be written looks like a secret.
    #[error("{0}")]
    Guard(#[from] GuardViolation),
    /// Sealing or opening a secret failed.
    #[error("secret sealing failed: {0}")]
    Seal(String),
    /// Configuration the store was given cannot be used.
    #[error("store configuration: {0}")]
    Config(String),
    /// Stored data that does not read back as what was written.
    #[error("stored data is inconsistent: {0}")]
    Corrupt(String),
    /// The database does not answer in time: it is down, unreachable, or
    /// locked by another writer. Nothing was applied; trying again later
    /// may work.
    #[error("the database is unavailable: {0}")]
    Unavailable(#[source] sqlx::Error),
    #[error("database: {0}")]
    Database(#[source] sqlx::Error),
    #[error("migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

impl From<sluice_domain::create_key::KeyRefusal> for StoreError {
    fn from(refusal: sluice_domain::create_key::KeyRefusal) -> Self {
        use sluice_domain::create_key::KeyRefusal;
        match refusal {
            KeyRefusal::Cancelled => StoreError::CreateCancelled,
            KeyRefusal::Reused => StoreError::IdempotencyKeyReused,
            KeyRefusal::Inconsistent(what) => StoreError::Corrupt(what.into()),
        }
    }
}

impl From<crate::model::Refusal> for StoreError {
    fn from(refusal: crate::model::Refusal) -> Self {
        StoreError::Conflict { message: refusal.message, code: refusal.code }
    }
}
