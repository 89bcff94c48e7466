//! What a runtime fails with: a launch that will not work, one that may
//! next time, or a call to the executor's daemon. Store failures stay
//! `StoreError`.

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A runtime operation that trying again will not fix (the image does
    /// not exist, the configuration cannot work).
    #[error("{message}")]
    Permanent { message: String, code: &'static str },
    /// A runtime operation that may work next time.
    #[error("{0}")]
    Transient(String),
    /// A call to an executor's daemon.
    #[error(transparent)]
    Daemon(#[from] sluice_executor::daemon::DaemonError),
    /// The workspace's image could not be made ready (it says whether a
    /// later try may go better).
    #[error(transparent)]
    Image(#[from] sluice_images::ImageError),
}

impl RuntimeError {
    /// The error code a failed launch records.
    pub fn code(&self) -> &'static str {
        match self {
            RuntimeError::Permanent { code, .. } => code,
            RuntimeError::Image(e) => e.code(),
            _ => "launch-failed",
        }
    }

    /// Whether trying the launch again may work.
    pub fn is_transient(&self) -> bool {
        match self {
            RuntimeError::Transient(_) => true,
            RuntimeError::Image(e) => e.is_transient(),
            _ => false,
        }
    }
}
