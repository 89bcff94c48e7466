//! An in-process runtime for unit tests and the simulation (the `testing`
//! feature; sluice never ships it): its executors are entries of a table it
//! keeps, made, looked at, listed and removed in memory. A test shares the
//! table (to crash an executor's process, or to read what is there) and
//! sees and steers every call through its [`Hooks`]: faults on either side
//! of an effect, and what a start or a removal means to the world it keeps.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use sluice_store::{RuntimeAdapter, RuntimeRecord, RuntimeStatus};

use crate::{LaunchRequest, Launched, OwnedResource, Presence, Runtime, RuntimeError, RuntimeFuture};

/// One executor as the fake runtime keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeExecutor {
    pub workspace_id: String,
    pub launch: String,
    /// Its process runs.
    pub running: bool,
    pub removed: bool,
    /// How often it was started: a launch over a stopped executor starts it
    /// again on its own disk.
    pub boot: u64,
}

/// The fake runtime's executors, shared with the test that steers them.
#[derive(Debug, Default)]
pub struct FakeExecutors {
    by_run: BTreeMap<String, FakeExecutor>,
    /// Run ids in the order their executors were made: ids are random, so a
    /// seeded test chooses by this order to replay exactly.
    order: Vec<String>,
}

impl FakeExecutors {
    pub fn get(&self, run_id: &str) -> Option<&FakeExecutor> {
        self.by_run.get(run_id)
    }

    /// Every run id made so far, oldest first.
    pub fn order(&self) -> &[String] {
        &self.order
    }

    /// Whether the run's executor is there and its process runs.
    pub fn running(&self, run_id: &str) -> bool {
        self.get(run_id).is_some_and(|e| e.running && !e.removed)
    }

    /// The executor's process dies; its disk stays (a launch starts it again).
    pub fn crash(&mut self, run_id: &str) {
        if let Some(executor) = self.by_run.get_mut(run_id) {
            executor.running = false;
        }
    }
}

/// The shared table.
pub type SharedExecutors = Arc<Mutex<FakeExecutors>>;

/// The two sides of a call's effect, where a test's faults strike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Before,
    After,
}

pub type HookFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a test sees of the calls into the fake runtime, and how it steers them.
pub trait Hooks: Send + Sync {
    /// Whether a launch or a removal goes on at `side` of its effect;
    /// `false`: its caller dies there (the call never answers).
    fn proceed(&self, side: Side) -> HookFuture<'_, bool> {
        let _ = side;
        Box::pin(async { true })
    }

    /// A launch took effect: `started` when it started the executor (a new
    /// boot), `recovered` when that boot followed an earlier one.
    fn launched<'a>(
        &'a self,
        request: &'a LaunchRequest,
        executor: &'a FakeExecutor,
        started: bool,
        recovered: bool,
    ) -> HookFuture<'a, ()> {
        let _ = (request, executor, started, recovered);
        Box::pin(async {})
    }

    /// A present executor is being removed (its entry does not say so yet).
    fn removing(&self, run_id: &str, executor: &FakeExecutor) {
        let _ = (run_id, executor);
    }
}

/// Hooks that see nothing and let every call through.
pub struct NoHooks;

impl Hooks for NoHooks {}

/// The runtime itself.
pub struct FakeRuntime<H> {
    executors: SharedExecutors,
    hooks: H,
    /// Where registrar sockets would go: a directory that is never made.
    dir: PathBuf,
}

impl<H: Hooks> FakeRuntime<H> {
    pub fn new(executors: SharedExecutors, hooks: H, dir: PathBuf) -> FakeRuntime<H> {
        FakeRuntime { executors, hooks, dir }
    }

    /// What a launch answers for `run_id`'s executor.
    fn record(run_id: &str) -> RuntimeRecord {
        RuntimeRecord {
            adapter: RuntimeAdapter::Local,
            resource_id: format!("fake-{run_id}"),
            reference: format!("fake-{run_id}"),
            status: RuntimeStatus::Running,
            endpoint: Some(format!("unix:///fake/{run_id}")),
            deadline: None,
        }
    }

    /// Goes on past `side`, or never returns (the caller died there).
    async fn past(&self, side: Side) {
        if !self.hooks.proceed(side).await {
            std::future::pending::<()>().await;
        }
    }
}

impl<H: Hooks> Runtime for FakeRuntime<H> {
    fn adapter(&self) -> RuntimeAdapter {
        RuntimeAdapter::Local
    }

    fn launch<'a>(&'a self, request: &'a LaunchRequest) -> RuntimeFuture<'a, Launched> {
        Box::pin(async move {
            self.past(Side::Before).await;
            let (executor, started) = {
                let mut table = self.executors.lock().unwrap();
                if !table.by_run.contains_key(&request.run_id) {
                    table.order.push(request.run_id.clone());
                }
                let executor = table.by_run.entry(request.run_id.clone()).or_insert_with(|| FakeExecutor {
                    workspace_id: request.workspace_id.clone(),
                    launch: request.launch.clone(),
                    running: false,
                    removed: false,
                    boot: 0,
                });
                if executor.removed {
                    return Err(RuntimeError::Transient("the executor was removed".into()));
                }
                let started = !executor.running;
                if started {
                    // Started (again, on its own disk: what it wrote is still there).
                    executor.running = true;
                    executor.boot += 1;
                }
                (executor.clone(), started)
            };
            let recovered = started && executor.boot > 1;
            self.hooks.launched(request, &executor, started, recovered).await;
            self.past(Side::After).await;
            Ok(Launched {
                record: Self::record(&request.run_id),
                published: None,
                phases: Vec::new(),
                pool: None,
                image_pull: None,
            })
        })
    }

    fn inspect<'a>(&'a self, run_id: &'a str, _resource_id: &'a str) -> RuntimeFuture<'a, Presence> {
        Box::pin(async move {
            let table = self.executors.lock().unwrap();
            Ok(match table.get(run_id) {
                None => Presence::Absent,
                Some(e) if e.removed => Presence::Absent,
                Some(e) if e.running => Presence::Running,
                Some(_) => Presence::Exited,
            })
        })
    }

    fn remove<'a>(&'a self, run_id: &'a str, _resource_id: &'a str) -> RuntimeFuture<'a, ()> {
        Box::pin(async move {
            self.past(Side::Before).await;
            let present = self.executors.lock().unwrap().get(run_id).filter(|e| !e.removed).cloned();
            if let Some(executor) = present {
                self.hooks.removing(run_id, &executor);
                if let Some(executor) = self.executors.lock().unwrap().by_run.get_mut(run_id) {
                    executor.removed = true;
                    executor.running = false;
                }
            }
            self.past(Side::After).await;
            Ok(())
        })
    }

    fn list_owned(&self) -> RuntimeFuture<'_, Vec<OwnedResource>> {
        Box::pin(async move {
            let table = self.executors.lock().unwrap();
            Ok(table
                .by_run
                .iter()
                .filter(|(_, e)| !e.removed)
                .map(|(run, _)| OwnedResource { run_id: run.clone(), resource_id: format!("fake-{run}") })
                .collect())
        })
    }

    fn posture(&self) -> String {
        "an in-process fake runtime".into()
    }

    fn registrar_socket(&self, run_id: &str) -> PathBuf {
        // A directory that does not exist: a fake daemon needs no registrar.
        self.dir.join("none").join(run_id).join("registrar.sock")
    }

    fn unenforceable(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    fn recoverable(&self) -> bool {
        true
    }

    fn export_disk<'a>(
        &'a self,
        run_id: &'a str,
        _resource_id: &'a str,
    ) -> RuntimeFuture<'a, crate::archive::DiskArchive> {
        Box::pin(async move { Err(RuntimeError::Transient(format!("run {run_id}: a fake executor has no disk"))) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(run_id: &str) -> LaunchRequest {
        LaunchRequest {
            workspace_id: "ws_1".into(),
            run_id: run_id.into(),
            launch: run_id.into(),
            registry_id: "local".into(),
            repository: "busybox".into(),
            tag: "1".into(),
            spec: Default::default(),
            boot_secret: None,
            capture_interval_ms: 1000,
            egress_authority: None,
            image_progress: None,
        }
    }

    #[tokio::test]
    async fn executors_are_made_adopted_recovered_and_removed_in_memory() {
        let table = SharedExecutors::default();
        let runtime = FakeRuntime::new(table.clone(), NoHooks, PathBuf::from("/nowhere"));
        let launched = runtime.launch(&request("run_a")).await.unwrap();
        assert_eq!(launched.record.resource_id, "fake-run_a");
        runtime.launch(&request("run_a")).await.unwrap();
        assert_eq!(table.lock().unwrap().get("run_a").unwrap().boot, 1, "a launch of a running executor adopts it");
        assert_eq!(runtime.inspect("run_a", "").await.unwrap(), Presence::Running);

        table.lock().unwrap().crash("run_a");
        assert_eq!(runtime.inspect("run_a", "").await.unwrap(), Presence::Exited);
        runtime.launch(&request("run_a")).await.unwrap();
        assert_eq!(table.lock().unwrap().get("run_a").unwrap().boot, 2, "started again on its own disk");

        runtime.launch(&request("run_b")).await.unwrap();
        assert_eq!(table.lock().unwrap().order(), ["run_a", "run_b"]);
        runtime.remove("run_a", "").await.unwrap();
        runtime.remove("run_a", "").await.unwrap();
        assert_eq!(runtime.inspect("run_a", "").await.unwrap(), Presence::Absent);
        assert!(runtime.launch(&request("run_a")).await.is_err(), "a removed executor is not made again");
        let owned: Vec<String> = runtime.list_owned().await.unwrap().into_iter().map(|o| o.run_id).collect();
        assert_eq!(owned, ["run_b"]);
    }
}
