//! What a session needs of its daemon: apart from the sessions themselves,
//! so the operations they dispatch to (files, processes) read it without
//! importing the dispatcher back.

use std::path::PathBuf;
use std::sync::Arc;

use crate::processes::Processes;

/// What a session needs of its daemon.
pub struct SessionContext {
    pub processes: Arc<Processes>,
    pub workdir: PathBuf,
    pub env: std::collections::BTreeMap<String, String>,
    /// Whether the executor's work is being ended (a final flush).
    pub finalizing: bool,
    /// How the daemon's own binary is started to serve sftp as the workload.
    pub sftp_server: Option<Vec<String>>,
    /// Called on every frame from the client: the executor is in use.
    pub touch: Arc<dyn Fn() + Send + Sync>,
    /// The processes the daemon keeps running.
    pub background: Arc<crate::background::Background>,
}
