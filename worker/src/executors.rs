//! The executor port on this host: every call goes to the executor's daemon
//! over its control socket, with the control token derived from the store's
//! key (any sluice process holding that key, on the executor's host, can
//! make it). Snapshots also need the object store, which only a process
//! serving a worker has.

use std::time::Duration;

use sluice_executor::daemon::{CommandCall, DaemonClient};
use sluice_executor::{ExecutorError, ExecutorFuture, Executors, TakenSnapshot, Target};
use sluice_protocol::capture::{BindRequest, Binds, CaptureStatus, FlushRequest, Replanned};
use sluice_store::Store;

use crate::snapshots::SnapshotError;
use sluice_capture_store::objects::Objects;
use sluice_domain::ids::SnapshotId;

/// How long a status, re-plan, bind, file or command call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the daemon has to take a session.
const SESSION_OPEN_WITHIN: Duration = Duration::from_secs(10);

/// How long a daemon has to say how it is used.
const ACTIVITY_WITHIN: Duration = Duration::from_secs(5);

/// How long a daemon has to answer a watch's head.
const WATCH_OPEN_WITHIN: Duration = Duration::from_secs(2);

/// The executors on this host, reached through their daemons' sockets.
#[derive(Debug)]
pub struct LocalExecutors {
    store: Store,
    /// Where snapshots go: only a process that serves a worker has one.
    objects: Option<Objects>,
}

impl LocalExecutors {
    pub fn new(store: Store, objects: Option<Objects>) -> LocalExecutors {
        LocalExecutors { store, objects }
    }

    fn client(&self, target: Target<'_>) -> Result<DaemonClient, ExecutorError> {
        let token = crate::reconcile::control_token_for(self.store.sealer(), target.run_id);
        Ok(DaemonClient::new(target.endpoint, token)?)
    }
}

impl Executors for LocalExecutors {
    fn healthy<'a>(
        &'a self,
        target: Target<'a>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send + 'a>> {
        Box::pin(async move {
            match self.client(target) {
                Ok(client) => client.healthy().await,
                Err(_) => false,
            }
        })
    }

    fn watch<'a>(&'a self, target: Target<'a>) -> ExecutorFuture<'a, sluice_executor::Watched> {
        Box::pin(async move {
            let stream = self.client(target)?.watch(WATCH_OPEN_WITHIN).await?;
            Ok(Box::pin(stream.closed()) as sluice_executor::Watched)
        })
    }

    fn activity<'a>(&'a self, target: Target<'a>) -> ExecutorFuture<'a, sluice_protocol::Activity> {
        Box::pin(async move { Ok(self.client(target)?.activity(ACTIVITY_WITHIN).await?) })
    }

    fn capture_status<'a>(&'a self, target: Target<'a>, timeout: Duration) -> ExecutorFuture<'a, CaptureStatus> {
        Box::pin(async move { Ok(self.client(target)?.capture_status(timeout).await?) })
    }

    fn capture_flush<'a>(
        &'a self,
        target: Target<'a>,
        request: FlushRequest,
        timeout: Duration,
    ) -> ExecutorFuture<'a, CaptureStatus> {
        Box::pin(async move { Ok(self.client(target)?.capture_flush(&request, timeout).await?) })
    }

    fn open_session<'a>(&'a self, target: Target<'a>) -> ExecutorFuture<'a, sluice_executor::SessionStream> {
        Box::pin(async move {
            let upgraded = self.client(target)?.open_session(SESSION_OPEN_WITHIN).await?;
            Ok(Box::new(hyper_util::rt::TokioIo::new(upgraded)) as sluice_executor::SessionStream)
        })
    }

    fn capture_replan<'a>(&'a self, target: Target<'a>) -> ExecutorFuture<'a, Replanned> {
        Box::pin(async move { Ok(self.client(target)?.capture_replan(CALL_TIMEOUT).await?) })
    }

    fn bind<'a>(&'a self, target: Target<'a>, request: BindRequest) -> ExecutorFuture<'a, Binds> {
        Box::pin(async move { Ok(self.client(target)?.bind(&request, CALL_TIMEOUT).await?) })
    }

    fn command<'a>(
        &'a self,
        target: Target<'a>,
        identity: &'a str,
        call: CommandCall,
    ) -> ExecutorFuture<'a, sluice_protocol::CommandStatus> {
        Box::pin(async move { Ok(self.client(target)?.command(identity, call, CALL_TIMEOUT).await?) })
    }

    fn snapshot<'a>(
        &'a self,
        target: Target<'a>,
        snapshot_id: &'a SnapshotId,
        dir: &'a str,
    ) -> ExecutorFuture<'a, TakenSnapshot> {
        Box::pin(async move {
            let objects = self
                .objects
                .as_ref()
                .ok_or_else(|| ExecutorError::NotHere("this process has no object store (run sluice serve)".into()))?;
            match crate::snapshots::take(&self.client(target)?, objects, snapshot_id, dir).await {
                Ok(taken) => Ok(TakenSnapshot {
                    small_manifest: taken.small_manifest,
                    bulk_manifest: taken.bulk_manifest,
                    files: taken.files,
                    bytes: taken.bytes,
                }),
                Err(SnapshotError::Directory(message)) => {
                    Err(ExecutorError::Refused { code: sluice_protocol::RefusalCode::Invalid, message })
                }
                Err(e) => Err(ExecutorError::Unreachable(e.to_string())),
            }
        })
    }

    fn exec_streaming<'a>(
        &'a self,
        target: Target<'a>,
        request: sluice_protocol::ExecRequest,
        timeout: Duration,
        output: sluice_executor::streamed::OutputSink,
    ) -> ExecutorFuture<'a, sluice_protocol::ExecResponse> {
        Box::pin(sluice_executor::streamed::exec_streaming(self, target, request, timeout, output))
    }

    fn exec<'a>(
        &'a self,
        target: Target<'a>,
        request: sluice_protocol::ExecRequest,
        timeout: Duration,
    ) -> ExecutorFuture<'a, sluice_protocol::ExecResponse> {
        Box::pin(async move { Ok(self.client(target)?.exec(&request, timeout).await?) })
    }
}
