//! The API's calls to executors' daemons, made with the worker's daemon
//! client: the control token is derived from the store's key, so any
//! sluice process holding it (and able to reach the executor's socket on
//! this host) can make them.

use std::time::Duration;

use sluice_api::control::{ControlError, ControlFuture, ExecutorControl, Target};
use sluice_protocol::capture::{BindRequest, Binds, CaptureStatus, FlushRequest, Replanned};
use sluice_store::Store;
use sluice_worker::daemon_client::DaemonClient;
use sluice_worker::error::WorkerError;
use sluice_worker::objects::Objects;
use sluice_worker::snapshots::SnapshotError;

/// How long a status, re-plan or bind may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug)]
pub struct DaemonControl {
    store: Store,
    /// Where snapshots go: only a process that serves a worker has one.
    objects: Option<Objects>,
}

impl DaemonControl {
    pub fn new(store: Store, objects: Option<Objects>) -> DaemonControl {
        DaemonControl { store, objects }
    }

    fn client(&self, target: Target<'_>) -> Result<DaemonClient, ControlError> {
        let token = sluice_worker::reconcile::control_token_for(self.store.sealer(), target.run_id);
        DaemonClient::new(target.endpoint, token).map_err(failed)
    }
}

fn failed(e: WorkerError) -> ControlError {
    match e {
        WorkerError::DaemonRefused { message, .. } => ControlError::Refused(message),
        other => ControlError::Unreachable(other.to_string()),
    }
}

/// A file call's refusal keeps its status: it says which protocol code applies.
fn file_failed(e: WorkerError) -> ControlError {
    match e {
        WorkerError::DaemonRefused { status, .. } => ControlError::Status(status),
        other => ControlError::Unreachable(other.to_string()),
    }
}

impl ExecutorControl for DaemonControl {
    fn capture_status<'a>(&'a self, target: Target<'a>) -> ControlFuture<'a, CaptureStatus> {
        Box::pin(async move { self.client(target)?.capture_status(CALL_TIMEOUT).await.map_err(failed) })
    }

    fn capture_flush<'a>(
        &'a self,
        target: Target<'a>,
        request: FlushRequest,
        timeout: Duration,
    ) -> ControlFuture<'a, CaptureStatus> {
        Box::pin(async move { self.client(target)?.capture_flush(&request, timeout).await.map_err(failed) })
    }

    fn capture_replan<'a>(&'a self, target: Target<'a>) -> ControlFuture<'a, Replanned> {
        Box::pin(async move { self.client(target)?.capture_replan(CALL_TIMEOUT).await.map_err(failed) })
    }

    fn bind<'a>(&'a self, target: Target<'a>, request: BindRequest) -> ControlFuture<'a, Binds> {
        Box::pin(async move { self.client(target)?.bind(&request, CALL_TIMEOUT).await.map_err(failed) })
    }

    fn read_file<'a>(
        &'a self,
        target: Target<'a>,
        request: sluice_protocol::FileRead,
    ) -> ControlFuture<'a, sluice_protocol::FileContents> {
        Box::pin(async move { self.client(target)?.read_file(&request, CALL_TIMEOUT).await.map_err(file_failed) })
    }

    fn write_file<'a>(&'a self, target: Target<'a>, request: sluice_protocol::FileWrite) -> ControlFuture<'a, ()> {
        Box::pin(async move { self.client(target)?.write_file(&request, CALL_TIMEOUT).await.map_err(file_failed) })
    }

    fn command<'a>(
        &'a self,
        target: Target<'a>,
        identity: &'a str,
        start: Option<sluice_protocol::ExecRequest>,
        cancel: bool,
    ) -> ControlFuture<'a, sluice_protocol::CommandStatus> {
        use sluice_worker::daemon_client::CommandCall;
        let call = match (start, cancel) {
            (Some(request), _) => CommandCall::Start(request),
            (None, true) => CommandCall::Cancel,
            (None, false) => CommandCall::Read,
        };
        Box::pin(async move { self.client(target)?.command(identity, call, CALL_TIMEOUT).await.map_err(file_failed) })
    }

    fn snapshot<'a>(
        &'a self,
        target: Target<'a>,
        snapshot_id: &'a str,
        dir: &'a str,
    ) -> ControlFuture<'a, sluice_store::broker_snapshots::TakenSnapshot> {
        Box::pin(async move {
            let objects = self.objects.as_ref().ok_or_else(|| {
                ControlError::Unreachable("this process has no object store (run sluice serve)".into())
            })?;
            match sluice_worker::snapshots::take(&self.client(target)?, objects, snapshot_id, dir).await {
                Ok(taken) => Ok(sluice_store::broker_snapshots::TakenSnapshot {
                    small_manifest: taken.small_manifest,
                    bulk_manifest: taken.bulk_manifest,
                    files: taken.files,
                    bytes: taken.bytes,
                }),
                Err(SnapshotError::Directory(message)) => Err(ControlError::Refused(message)),
                Err(e) => Err(ControlError::Unreachable(e.to_string())),
            }
        })
    }

    fn exec<'a>(
        &'a self,
        target: Target<'a>,
        request: sluice_protocol::ExecRequest,
        timeout: Duration,
    ) -> ControlFuture<'a, sluice_protocol::ExecResponse> {
        Box::pin(async move { self.client(target)?.exec(&request, timeout).await.map_err(failed) })
    }
}
