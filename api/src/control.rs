//! Synchronous calls to an executor's daemon (capture status, flush,
//! re-plan, bind, exec), made for the API by the part of sluice that can reach
//! executors. The API only knows this interface; `serve` and `api` wire in
//! the daemon client.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use sluice_protocol::capture::{BindRequest, Binds, CaptureStatus, FlushRequest, Replanned};

/// Why a call to a daemon did not answer.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The daemon could not be reached, or its answer was not usable.
    #[error("the executor's daemon did not answer: {0}")]
    Unreachable(String),
    /// The daemon refused the call.
    #[error("the executor's daemon refused: {0}")]
    Refused(String),
    /// The daemon refused with this HTTP status (file calls, whose status
    /// says why).
    #[error("the executor's daemon answered {0}")]
    Status(u16),
}

pub type ControlFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, ControlError>> + Send + 'a>>;

/// The executor a call goes to: its run and its control endpoint.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub run_id: &'a str,
    pub endpoint: &'a str,
}

pub trait ExecutorControl: Send + Sync + std::fmt::Debug {
    fn capture_status<'a>(&'a self, target: Target<'a>) -> ControlFuture<'a, CaptureStatus>;
    fn capture_flush<'a>(
        &'a self,
        target: Target<'a>,
        request: FlushRequest,
        timeout: Duration,
    ) -> ControlFuture<'a, CaptureStatus>;
    fn capture_replan<'a>(&'a self, target: Target<'a>) -> ControlFuture<'a, Replanned>;
    fn bind<'a>(&'a self, target: Target<'a>, request: BindRequest) -> ControlFuture<'a, Binds>;
    /// Reads a file in the executor, as its workload.
    fn read_file<'a>(
        &'a self,
        target: Target<'a>,
        request: sluice_protocol::FileRead,
    ) -> ControlFuture<'a, sluice_protocol::FileContents>;
    /// Writes a file in the executor, as its workload.
    fn write_file<'a>(&'a self, target: Target<'a>, request: sluice_protocol::FileWrite) -> ControlFuture<'a, ()>;
    /// Starts, reads or cancels a durable command in the executor.
    fn command<'a>(
        &'a self,
        target: Target<'a>,
        identity: &'a str,
        start: Option<sluice_protocol::ExecRequest>,
        cancel: bool,
    ) -> ControlFuture<'a, sluice_protocol::CommandStatus>;
    /// Snapshots a directory of the executor into the object store.
    fn snapshot<'a>(
        &'a self,
        target: Target<'a>,
        snapshot_id: &'a str,
        dir: &'a str,
    ) -> ControlFuture<'a, sluice_store::broker_snapshots::TakenSnapshot>;
    /// Runs one command in the executor and answers what it did.
    fn exec<'a>(
        &'a self,
        target: Target<'a>,
        request: sluice_protocol::ExecRequest,
        timeout: Duration,
    ) -> ControlFuture<'a, sluice_protocol::ExecResponse>;
}
