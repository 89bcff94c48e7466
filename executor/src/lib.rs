//! The executor port: every call into an executor (capture status, flush,
//! re-plan, bind, exec, files, durable commands, snapshots) goes through
//! [`Executors`], whoever makes it (the workspaces API, the broker). The
//! part of sluice that reaches executors implements it: on this host, over
//! each executor's control socket with [`daemon::DaemonClient`]; across
//! hosts, routed to a worker of the executor's host, which makes it there.
//! The callers only know the port and its closed error.

mod connections;
pub mod daemon;
pub mod files;
pub mod streamed;
pub mod ticket;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use sluice_domain::ids::{RunId, SnapshotId};
pub use sluice_protocol::RefusalCode;
use sluice_protocol::capture::{BindRequest, Binds, CaptureStatus, FlushRequest, Replanned};

/// Why a call into an executor did not answer.
#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    /// The daemon could not be reached, or its answer was not usable.
    #[error("the executor's daemon did not answer: {0}")]
    Unreachable(String),
    /// The daemon refused the call; the code says why.
    #[error("the executor's daemon refused: {message}")]
    Refused { code: RefusalCode, message: String },
    /// This process cannot make the call at all (it has no object store,
    /// say): a matter of where the call was sent, not of the executor.
    #[error("{0}")]
    NotHere(String),
    /// The executor runs on another host, and no worker of that host
    /// answered: try again once it is back.
    #[error("host {host} does not answer: {reason}")]
    HostUnavailable { host: String, reason: String },
}

impl ExecutorError {
    /// The refusal's code, when the daemon refused.
    pub fn refusal(&self) -> Option<RefusalCode> {
        match self {
            ExecutorError::Refused { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// A session's connection to the executor's daemon (upgraded on its
/// socket, or relayed by a worker of its host).
pub type SessionStream = Box<dyn SessionIo>;

/// What a session's connection is: bytes both ways.
pub trait SessionIo: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}

impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> SessionIo for T {}

/// An open watch on an executor: resolves once its stream closes (the
/// daemon died, or is ending). See [`sluice_protocol::WATCH`].
pub type Watched = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

pub type ExecutorFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, ExecutorError>> + Send + 'a>>;

/// The executor a call goes to: its run and its control endpoint.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub run_id: &'a RunId,
    pub endpoint: &'a str,
}

/// What a snapshot of an executor's directory left in the object store.
pub use sluice_domain::model::TakenSnapshot;

/// Every call into an executor.
pub trait Executors: Send + Sync + std::fmt::Debug {
    /// Whether the daemon answers `health` (within a short bound).
    fn healthy<'a>(&'a self, target: Target<'a>) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>>;
    /// Opens the daemon's watch stream (on the executor's host only).
    fn watch<'a>(&'a self, target: Target<'a>) -> ExecutorFuture<'a, Watched>;
    /// How the executor is used now (on the executor's host only).
    fn activity<'a>(&'a self, target: Target<'a>) -> ExecutorFuture<'a, sluice_protocol::Activity>;
    /// The daemon's capture status, within `timeout`.
    fn capture_status<'a>(&'a self, target: Target<'a>, timeout: Duration) -> ExecutorFuture<'a, CaptureStatus>;
    fn capture_flush<'a>(
        &'a self,
        target: Target<'a>,
        request: FlushRequest,
        timeout: Duration,
    ) -> ExecutorFuture<'a, CaptureStatus>;
    fn capture_replan<'a>(&'a self, target: Target<'a>) -> ExecutorFuture<'a, Replanned>;
    fn bind<'a>(&'a self, target: Target<'a>, request: BindRequest) -> ExecutorFuture<'a, Binds>;
    /// Starts, reads or cancels a durable command in the executor.
    fn command<'a>(
        &'a self,
        target: Target<'a>,
        identity: &'a str,
        call: daemon::CommandCall,
    ) -> ExecutorFuture<'a, sluice_protocol::CommandStatus>;
    /// Snapshots a directory of the executor into the object store.
    fn snapshot<'a>(
        &'a self,
        target: Target<'a>,
        snapshot_id: &'a SnapshotId,
        dir: &'a str,
    ) -> ExecutorFuture<'a, TakenSnapshot>;
    /// Opens an interactive session on the executor: the stream its frames
    /// go on (see [`sluice_protocol::session`]).
    fn open_session<'a>(&'a self, target: Target<'a>) -> ExecutorFuture<'a, SessionStream>;
    /// Runs one command in the executor and answers what it did.
    fn exec<'a>(
        &'a self,
        target: Target<'a>,
        request: sluice_protocol::ExecRequest,
        timeout: Duration,
    ) -> ExecutorFuture<'a, sluice_protocol::ExecResponse>;
    /// As [`Executors::exec`], sending the output to `output` as it comes.
    /// This default sends it all once the command has ended; a part that
    /// reaches sessions streams it (see [`streamed::exec_streaming`]).
    fn exec_streaming<'a>(
        &'a self,
        target: Target<'a>,
        request: sluice_protocol::ExecRequest,
        timeout: Duration,
        output: streamed::OutputSink,
    ) -> ExecutorFuture<'a, sluice_protocol::ExecResponse> {
        Box::pin(streamed::exec_then_send(self, target, request, timeout, output))
    }
}
