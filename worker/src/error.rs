//! Everything the worker's own parts fail with: runtimes and the daemon
//! control connection. Store failures stay `StoreError`.

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// A runtime operation that trying again will not fix (the image does
    /// not exist, the configuration cannot work).
    #[error("{message}")]
    Permanent { message: String, code: &'static str },
    /// A runtime operation that may work next time.
    #[error("{0}")]
    Transient(String),
    #[error("the daemon cannot be reached: {0}")]
    DaemonUnreachable(String),
    #[error("the daemon answered {status}: {message}")]
    DaemonRefused { status: u16, message: String, code: Option<String> },
    #[error("the daemon did not answer within {0:?}")]
    DaemonTimeout(Duration),
    #[error("the daemon's answer was larger than {0} bytes and was dropped")]
    DaemonAnswerTooLarge(usize),
    #[error("the daemon's answer was malformed: {0}")]
    DaemonMalformed(String),
}

impl WorkerError {
    /// The error code a failed launch records.
    pub fn code(&self) -> &'static str {
        match self {
            WorkerError::Permanent { code, .. } => code,
            _ => "launch-failed",
        }
    }
}
