//! Runtimes: where executors run. Each adapter creates an executor for a
//! run (adopting one that already exists for it, so a run never gets two),
//! reports whether it still runs, removes it, and lists the resources it
//! labelled, for the orphan sweep.

pub mod archive;
pub mod cgroup;
pub mod disk;
pub mod docker;
pub mod egress;
mod error;
pub mod identity;
pub mod local;
pub mod pool;
pub mod sockets;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::future::Future;
use std::path::{Path, PathBuf};

use sluice_store::spec::WorkspaceSpec;
use sluice_store::{PublishedImage, RuntimeAdapter, RuntimeRecord, Secret};

pub use crate::error::RuntimeError;

/// Everything a runtime needs to start one executor.
pub struct LaunchRequest {
    pub workspace_id: String,
    pub run_id: String,
    /// The launch identity the daemon stamps its answers with.
    pub launch: String,
    pub registry_id: String,
    pub repository: String,
    pub tag: String,
    pub spec: WorkspaceSpec,
    /// The boot secret file's contents (JSON with the control token and the
    /// workspace's secret environment). `None` restarts an executor on its
    /// own disk: its daemon boots with the secret it kept from its launch.
    pub boot_secret: Option<Secret<String>>,
    /// How often the daemon snaps a capture-sourced worktree.
    pub capture_interval_ms: u64,
    /// The egress authority's certificate (PEM), when the egress proxy adds
    /// credentials for this executor: it goes into the executor's trust.
    pub egress_authority: Option<String>,
    /// Where a pull of the executor's image counts its bytes as it goes.
    pub image_progress: Option<std::sync::Arc<sluice_images::PullProgress>>,
}

/// A created (or adopted) executor.
pub struct Launched {
    pub record: RuntimeRecord,
    pub published: Option<PublishedImage>,
    /// How long the runtime's own steps took, for the launch breakdown.
    pub phases: Vec<(&'static str, std::time::Duration)>,
    /// Whether the executor came from the warm pool (`None`: no pool was
    /// asked, the launch does not fit one or the image has none).
    pub pool: Option<PoolTake>,
    /// What the launch fetched of its image (`None`: nothing, it was cached).
    pub image_pull: Option<ImagePull>,
}

/// An image fetched for a launch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImagePull {
    pub bytes: u64,
    pub seconds: f64,
}

/// What a launch that fits an image's warm pool found there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolTake {
    /// It took one of the image's pooled executors.
    Taken(String),
    /// The image's pool had none ready: it launched afresh.
    Empty(String),
}

/// Whether an executor is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    Absent,
    Running,
    Exited,
}

/// A resource a runtime labelled as sluice's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedResource {
    pub run_id: String,
    pub resource_id: String,
}

/// The per-run directory on the host: the boot secret and the daemon's
/// control socket live here (and, for `local`, the executor's disk).
pub fn run_dir(executors_dir: &Path, run_id: &str) -> PathBuf {
    executors_dir.join(run_id)
}

/// The control socket's path for a run, as the host sees it.
pub fn control_socket(executors_dir: &Path, run_id: &str) -> PathBuf {
    run_dir(executors_dir, run_id).join("run").join("control.sock")
}

/// What a runtime adapter does. Every operation is idempotent: launching a
/// run that already has an executor adopts it, removing an absent one
/// succeeds.
pub trait Adapter: Send + Sync {
    fn adapter(&self) -> RuntimeAdapter;
    /// Creates (or adopts) the run's executor and starts it.
    fn launch(&self, request: &LaunchRequest) -> impl Future<Output = Result<Launched, RuntimeError>> + Send;
    /// Whether the run's executor is there and running.
    fn inspect(&self, run_id: &str, resource_id: &str) -> impl Future<Output = Result<Presence, RuntimeError>> + Send;
    /// Stops the executor and removes it with its disk.
    fn remove(&self, run_id: &str, resource_id: &str) -> impl Future<Output = Result<(), RuntimeError>> + Send;
    /// The resources this install labelled as its own.
    fn list_owned(&self) -> impl Future<Output = Result<Vec<OwnedResource>, RuntimeError>> + Send;
    /// A line for health and logs: which runtime, and how it isolates.
    fn posture(&self) -> String;
    /// Where the registrar's socket for a run's executor goes on this host
    /// (the runtime mounts its directory into the executor).
    fn registrar_socket(&self, run_id: &str) -> PathBuf;
    /// The `spec.resources` keys this runtime cannot enforce here, each
    /// with the reason: a create that asks for one is refused.
    fn unenforceable(&self) -> Vec<(&'static str, String)>;
    /// Whether an ended executor can be started again on its own disk
    /// (launching with no boot secret does it).
    fn recoverable(&self) -> bool;
    /// The executor's disk as a tar archive (under `workspace/`), read from
    /// this host whether or not the executor runs.
    fn export_disk(
        &self,
        run_id: &str,
        resource_id: &str,
    ) -> impl Future<Output = Result<archive::DiskArchive, RuntimeError>> + Send;
    /// Keeps the warm pool at its size (removes pooled executors that died
    /// or are no longer wanted, starts the missing ones) and answers each
    /// image's level. A runtime without a pool answers none.
    fn tend_pool(&self) -> impl Future<Output = Result<Vec<pool::PoolLevel>, RuntimeError>> + Send {
        async { Ok(Vec::new()) }
    }
    /// The host's image cache, for operators (a runtime without one: none).
    fn images(&self) -> Vec<sluice_store::fleet::HostImage> {
        Vec::new()
    }
    /// The image cache executors' images come from, where it has one
    /// (template builds put their images there).
    fn image_cache(&self) -> Option<std::sync::Arc<sluice_images::ImageCache>> {
        None
    }
}

pub type RuntimeFuture<'a, T> = std::pin::Pin<Box<dyn Future<Output = Result<T, RuntimeError>> + Send + 'a>>;

/// What the worker drives executors through: every [`Adapter`] (local,
/// docker), and the in-process fakes of unit tests and the simulation.
pub trait Runtime: Send + Sync {
    fn adapter(&self) -> RuntimeAdapter;
    fn launch<'a>(&'a self, request: &'a LaunchRequest) -> RuntimeFuture<'a, Launched>;
    fn inspect<'a>(&'a self, run_id: &'a str, resource_id: &'a str) -> RuntimeFuture<'a, Presence>;
    fn remove<'a>(&'a self, run_id: &'a str, resource_id: &'a str) -> RuntimeFuture<'a, ()>;
    fn list_owned(&self) -> RuntimeFuture<'_, Vec<OwnedResource>>;
    fn posture(&self) -> String;
    fn registrar_socket(&self, run_id: &str) -> PathBuf;
    fn unenforceable(&self) -> Vec<(&'static str, String)>;
    fn recoverable(&self) -> bool;
    fn export_disk<'a>(&'a self, run_id: &'a str, resource_id: &'a str) -> RuntimeFuture<'a, archive::DiskArchive>;
    fn tend_pool(&self) -> RuntimeFuture<'_, Vec<pool::PoolLevel>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn images(&self) -> Vec<sluice_store::fleet::HostImage> {
        Vec::new()
    }
    fn image_cache(&self) -> Option<std::sync::Arc<sluice_images::ImageCache>> {
        None
    }
}

impl<T: Adapter> Runtime for T {
    fn adapter(&self) -> RuntimeAdapter {
        Adapter::adapter(self)
    }
    fn launch<'a>(&'a self, request: &'a LaunchRequest) -> RuntimeFuture<'a, Launched> {
        Box::pin(Adapter::launch(self, request))
    }
    fn inspect<'a>(&'a self, run_id: &'a str, resource_id: &'a str) -> RuntimeFuture<'a, Presence> {
        Box::pin(Adapter::inspect(self, run_id, resource_id))
    }
    fn remove<'a>(&'a self, run_id: &'a str, resource_id: &'a str) -> RuntimeFuture<'a, ()> {
        Box::pin(Adapter::remove(self, run_id, resource_id))
    }
    fn list_owned(&self) -> RuntimeFuture<'_, Vec<OwnedResource>> {
        Box::pin(Adapter::list_owned(self))
    }
    fn posture(&self) -> String {
        Adapter::posture(self)
    }
    fn registrar_socket(&self, run_id: &str) -> PathBuf {
        Adapter::registrar_socket(self, run_id)
    }
    fn unenforceable(&self) -> Vec<(&'static str, String)> {
        Adapter::unenforceable(self)
    }
    fn recoverable(&self) -> bool {
        Adapter::recoverable(self)
    }
    fn export_disk<'a>(&'a self, run_id: &'a str, resource_id: &'a str) -> RuntimeFuture<'a, archive::DiskArchive> {
        Box::pin(Adapter::export_disk(self, run_id, resource_id))
    }
    fn tend_pool(&self) -> RuntimeFuture<'_, Vec<pool::PoolLevel>> {
        Box::pin(Adapter::tend_pool(self))
    }
    fn images(&self) -> Vec<sluice_store::fleet::HostImage> {
        Adapter::images(self)
    }
    fn image_cache(&self) -> Option<std::sync::Arc<sluice_images::ImageCache>> {
        Adapter::image_cache(self)
    }
}

/// Where a run's lifetime deadline (Unix ms) is kept on the host.
fn deadline_file(dir: &Path) -> PathBuf {
    dir.join("deadline")
}

/// Starts the executor's lifetime: it ends `max_lifetime` from now. A
/// restart on its own disk gets a lifetime of its own.
pub(crate) fn start_lifetime(dir: &Path, max_lifetime: Option<std::time::Duration>) -> std::io::Result<()> {
    match max_lifetime {
        Some(max) => {
            let at = sluice_store::clock::now_ms() + max.as_millis() as i64;
            std::fs::write(deadline_file(dir), at.to_string())
        }
        None => match std::fs::remove_file(deadline_file(dir)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        },
    }
}

/// The executor's deadline, if its runtime gave it one.
pub(crate) fn deadline(dir: &Path) -> Option<i64> {
    std::fs::read_to_string(deadline_file(dir)).ok()?.trim().parse().ok()
}

/// Whether the executor's lifetime is over.
pub(crate) fn past_deadline(dir: &Path) -> bool {
    deadline(dir).is_some_and(|at| sluice_store::clock::now_ms() >= at)
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Refuses a launch that asks for a limit `unenforceable` names (each with
/// its reason), naming the resource: never an executor without the limit.
pub(crate) fn refuse_unenforceable(
    request: &LaunchRequest,
    unenforceable: &[(&'static str, String)],
) -> Result<(), RuntimeError> {
    let asked = request.spec.enforced();
    match unenforceable.iter().find(|(key, _)| asked.iter().any(|a| a == key)) {
        Some((key, why)) => Err(RuntimeError::Permanent {
            message: format!("spec.{key} cannot be enforced on this host: {why}"),
            code: "limit-unenforceable",
        }),
        None => Ok(()),
    }
}

/// Writes `contents` to `path` readable only by its owner, replacing any
/// earlier file.
pub(crate) fn write_secret_file(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
    file.write_all(contents.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// Writes a file anyone in the executor may read (a certificate), whole
/// or not at all.
pub(crate) fn write_public_file(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o644).open(&tmp)?;
    // Whatever this process's umask (sluice's own is 077).
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
    file.write_all(contents.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_store::spec::WorkspaceSpec;

    #[test]
    fn a_launch_asking_for_an_unenforceable_limit_is_refused_naming_it() {
        let request = |spec: serde_json::Value| LaunchRequest {
            workspace_id: "ws".into(),
            run_id: "run".into(),
            launch: "l".into(),
            registry_id: "local".into(),
            repository: "r".into(),
            tag: "1".into(),
            spec: WorkspaceSpec::parse(&spec).unwrap(),
            boot_secret: None,
            capture_interval_ms: 10_000,
            egress_authority: None,
            image_progress: None,
        };
        let refused = [("resources.diskMiB", "no loop devices".to_owned())];
        let err = refuse_unenforceable(&request(serde_json::json!({"resources": {"diskMiB": 64}})), &refused);
        assert!(
            matches!(&err, Err(RuntimeError::Permanent { code: "limit-unenforceable", message })
            if message.contains("diskMiB") && message.contains("no loop devices")),
            "{err:?}"
        );
        assert!(refuse_unenforceable(&request(serde_json::json!({"resources": {"pids": 5}})), &refused).is_ok());
        let no_namespace = [("network.egress", "no network namespace".to_owned())];
        let egress = request(serde_json::json!({"network": {"egress": ["pypi.org"]}}));
        let err = refuse_unenforceable(&egress, &no_namespace);
        assert!(
            matches!(&err, Err(RuntimeError::Permanent { message, .. }) if message.starts_with("spec.network.egress"))
        );
    }
}
