//! The `local` runtime: one host process tree per executor, the daemon and
//! the workload it starts, in the run's own directory; inside bubblewrap
//! when it works here, plainly (and saying so) when it does not.
//!
//! When sluice runs as root, each executor gets two host uids of its own
//! (see [`identity`](super::identity)): the daemon runs as one, with only
//! the capabilities it needs (starting and stopping the workload; under
//! bubblewrap also reading and restoring the workload's files), and the
//! workload as the other, with none. Each executor lives in a cgroup of its
//! own (see [`cgroup`](super::cgroup)) that carries its CPU, memory and
//! pids limits and lets removal kill every process it has.
//!
//! A run's directory holds `workspace/` (the executor's disk, the
//! workload's), `state/` and `run/` (the daemon's alone: its kept boot
//! secret and its control socket), `slot`, `daemon.pid` and `daemon.log`.
//! A lock file held while launching makes a second launcher wait and then
//! adopt the executor the first one started.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use sluice_store::{RuntimeAdapter, RuntimeRecord, RuntimeStatus};
use tokio::process::Command;

use super::cgroup::{self, Cgroups};
use super::disk::{self, DiskSupport};
use super::identity::{Allocator, ExecutorIds, HOST_REGISTRY, UidRange};
use super::pool::{PoolLevel, PoolSpec};
use super::{
    Adapter, LaunchRequest, Launched, OwnedResource, PoolTake, Presence, RuntimeError, control_socket, is_root,
    refuse_unenforceable, run_dir,
};
use sluice_executor::daemon::DaemonClient;
use sluice_store::Secret;

/// How long an executor gets to stop after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// The size of an executor's private `/tmp` (bubblewrap), which its memory
/// limit also bounds.
const TMP_BYTES: u64 = 512 << 20;
/// Processes an executor may have when its spec names no `pids`.
pub const DEFAULT_PIDS: u64 = 1024;

mod command;
mod engine;
mod hostlib;
mod launch;
mod rootfs;
mod sandbox;
mod warm;

pub use hostlib::statically_linked;
use launch::launch_arg;
pub use rootfs::RootSupport;
pub use sandbox::Sandbox;
use sandbox::{DAEMON_CAPS_FILES, DAEMON_CAPS_PROCESS, drop_to, plain_namespaces, probe_bubblewrap};
use warm::{ASSIGNED_FILE, POOL_IMAGE_FILE, POOL_TAKE_TRIES, origin};

pub struct LocalRuntime {
    executors_dir: PathBuf,
    daemon_binary: PathBuf,
    /// Arguments before the daemon's own (`daemon` when the binary is `sluice`).
    daemon_prefix: Vec<String>,
    sandbox: Sandbox,
    /// Per-executor uids; `None` when sluice is not root and has no other
    /// uid to give.
    identities: Option<Allocator>,
    cgroups: Cgroups,
    disk: DiskSupport,
    /// The disk size of executors whose spec names none, where the host
    /// can enforce one.
    default_disk_mib: Option<u64>,
    /// How long an executor may live (`runtime.deadline`); `None`: no limit.
    max_lifetime: Option<Duration>,
    /// The warm pool: how many executors of each image are kept ready.
    pool: Vec<PoolSpec>,
    /// How often pooled executors' daemons will snap a capture-sourced worktree.
    pool_capture_interval_ms: u64,
    /// Fault injection for crash tests: a pause between taking a pooled
    /// executor and assigning it.
    pause_after_take: Option<Duration>,
    /// Where images come from (`None`: only `registryId: "host"` runs).
    images: Option<std::sync::Arc<sluice_images::ImageCache>>,
    /// The image cache's bound: least recently used images no executor
    /// runs on are removed past it.
    image_cache_max_bytes: Option<u64>,
    /// How an executor gets an image's root here.
    roots: RootSupport,
    /// How the daemon and `setpriv` start inside an image's root.
    daemon_loader: hostlib::HostLoader,
    setpriv_loader: hostlib::HostLoader,
}

/// The images the executors under `executors_dir` run on (the digests
/// their run directories name), with how many run on each: retained ones
/// count, as their roots need the image.
pub fn images_in_use(executors_dir: &Path) -> std::collections::HashMap<String, u32> {
    let mut in_use = std::collections::HashMap::new();
    for entry in std::fs::read_dir(executors_dir).into_iter().flatten().flatten() {
        if let Ok(digest) = std::fs::read_to_string(entry.path().join(rootfs::IMAGE_FILE)) {
            *in_use.entry(digest.trim().to_owned()).or_insert(0) += 1;
        }
    }
    in_use
}

/// An image's root made ready for one executor.
pub(super) struct ImageRoot {
    /// What the executor sees as `/`.
    root: PathBuf,
    config: sluice_images::RunConfig,
}

impl ImageRoot {
    /// The image's `WorkingDir`, absolute (a relative one is taken from
    /// `/`, as Docker does); `None` when it names none.
    fn working_dir(&self) -> Option<String> {
        let dir = self.config.working_dir.trim();
        (!dir.is_empty()).then(|| if dir.starts_with('/') { dir.to_owned() } else { format!("/{dir}") })
    }
}

fn transient(what: &str, e: impl std::fmt::Display) -> RuntimeError {
    RuntimeError::Transient(format!("{what}: {e}"))
}

fn make_dir(path: &Path, mode: u32, owner: Option<u32>) -> Result<(), RuntimeError> {
    std::fs::DirBuilder::new().recursive(true).mode(mode).create(path).map_err(|e| transient("run directory", e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(|e| transient("run directory", e))?;
    if let Some(id) = owner {
        std::os::unix::fs::chown(path, Some(id), Some(id)).map_err(|e| transient("run directory owner", e))?;
    }
    Ok(())
}

/// Limits from `spec.resources`, with the defaults a local executor gets.
fn limits(request: &LaunchRequest) -> cgroup::Limits {
    let resources = &request.spec.resources;
    cgroup::Limits {
        cpus: resources.cpus,
        memory_bytes: resources.memory_mib.map(|m| m << 20),
        pids: Some(resources.pids.unwrap_or(DEFAULT_PIDS)),
    }
}

impl LocalRuntime {
    /// Prepares the runtime: `executors_dir` holds one directory per run;
    /// executors run `daemon_binary` with `daemon_prefix` before the
    /// daemon's arguments; when sluice is root, executors get uids from
    /// `uids`.
    pub async fn new(
        executors_dir: PathBuf,
        daemon_binary: PathBuf,
        daemon_prefix: Vec<String>,
        uids: UidRange,
        default_disk_mib: Option<u64>,
    ) -> Result<Self, RuntimeError> {
        make_dir(&executors_dir, 0o711, None)?;
        let root = is_root();
        let identities = if root {
            let inside = uids.host_accounts_inside();
            if !inside.is_empty() {
                return Err(RuntimeError::Permanent {
                    message: format!(
                        "the executor uid range {}-{} holds ids of this host: {}",
                        uids.start,
                        uids.start + (uids.count - 1),
                        inside.join(", ")
                    ),
                    code: "runtime-config",
                });
            }
            Some(Allocator::new(uids, Path::new(HOST_REGISTRY)).map_err(|e| transient("executor slots", e))?)
        } else {
            None
        };
        let sandbox = probe_bubblewrap(root).await;
        let cgroups = if root {
            Cgroups::detect(&executors_dir.display().to_string())
        } else {
            Cgroups::unavailable("sluice is not root")
        };
        let disk = DiskSupport::detect(root);
        let loader_of = |binary: &Path| {
            hostlib::HostLoader::for_binary(binary).map_err(|e| RuntimeError::Permanent {
                message: format!("cannot read {}: {e}", binary.display()),
                code: "runtime-config",
            })
        };
        let daemon_loader = loader_of(&daemon_binary)?;
        let setpriv = Path::new("/usr/bin/setpriv");
        let setpriv_loader = if setpriv.is_file() { loader_of(setpriv)? } else { hostlib::HostLoader::Static };
        Ok(LocalRuntime {
            executors_dir,
            daemon_binary,
            daemon_prefix,
            sandbox,
            identities,
            cgroups,
            disk,
            default_disk_mib,
            max_lifetime: None,
            pool: Vec::new(),
            pool_capture_interval_ms: 10_000,
            pause_after_take: None,
            images: None,
            image_cache_max_bytes: None,
            roots: RootSupport::detect(root),
            daemon_loader,
            setpriv_loader,
        })
    }

    /// Runs executors on the images their workspaces name, from `cache`,
    /// which is kept to `max_bytes` when given.
    pub fn with_images(mut self, cache: std::sync::Arc<sluice_images::ImageCache>, max_bytes: Option<u64>) -> Self {
        self.images = Some(cache);
        self.image_cache_max_bytes = max_bytes;
        self
    }

    fn images_in_use(&self) -> std::collections::HashMap<String, u32> {
        images_in_use(&self.executors_dir)
    }

    /// Keeps the image cache to its bound, sparing every image in use.
    async fn bound_image_cache(&self) {
        let (Some(cache), Some(max)) = (&self.images, self.image_cache_max_bytes) else { return };
        // A template's image with no templates registry to pull it from
        // again is kept too: the cache holds its only copy.
        let mut in_use: std::collections::HashSet<String> = self.images_in_use().into_keys().collect();
        if cache.registries().get(sluice_domain::templates::REGISTRY_ID).is_none() {
            let prefix = format!("{}/", sluice_domain::templates::REGISTRY_ID);
            let only_copies =
                cache.store().list().into_iter().filter(|i| i.names.iter().any(|n| n.starts_with(&prefix)));
            in_use.extend(only_copies.map(|i| i.record.digest));
        }
        match cache.store().evict(max, &in_use).await {
            Ok(evicted) => {
                for image in evicted {
                    tracing::info!(digest = %image.record.digest, names = ?image.names, "image evicted from the cache");
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot keep the image cache to its bound"),
        }
    }

    /// Gives every executor a copy of its image's tree, never an overlay
    /// (`--image-roots copy`), when `copied`.
    pub fn with_image_roots_copied(mut self, copied: bool) -> Self {
        if copied {
            self.roots = RootSupport::Copy("--image-roots copy".into());
        }
        self
    }

    pub fn root_support(&self) -> &RootSupport {
        &self.roots
    }

    /// What images can and cannot do on this host, for `doctor` and health.
    pub fn images_posture(&self) -> String {
        match (&self.images, &self.sandbox) {
            (None, _) => "images: none (no image cache); only registryId \"host\" runs".into(),
            (Some(_), Sandbox::None(why)) => {
                format!("images: cannot run ({why}: an image's root needs bubblewrap); only registryId \"host\" runs")
            }
            (Some(_), Sandbox::Bubblewrap(_)) => self.roots.describe(),
        }
    }

    /// Gives every executor a lifetime: it ends this long after it starts
    /// (`runtime.deadline`).
    pub fn with_max_lifetime(mut self, max_lifetime: Option<Duration>) -> Self {
        self.max_lifetime = max_lifetime;
        self
    }

    /// Keeps `pool` executors ready (see [`pool`](super::pool)); their
    /// daemons snap capture-sourced worktrees every `capture_interval_ms`
    /// once taken.
    pub fn with_warm_pool(mut self, pool: Vec<PoolSpec>, capture_interval_ms: u64) -> Self {
        self.pool = pool;
        self.pool_capture_interval_ms = capture_interval_ms;
        self
    }

    /// Pauses between a take from the pool and its assign (crash tests).
    pub fn with_pause_after_take(mut self, pause: Option<Duration>) -> Self {
        self.pause_after_take = pause;
        self
    }

    /// The name of the run's cgroup: its own, or, for an executor taken
    /// from the pool, the pooled executor's (cgroup v2 cannot rename one).
    fn cgroup_name(&self, run_id: &str) -> String {
        origin(&run_dir(&self.executors_dir, run_id)).unwrap_or_else(|| run_id.to_owned())
    }

    /// Ends every process of the executor (SIGTERM, SIGKILL after a
    /// grace); its directory and disk stay.
    async fn end(&self, run_id: &str) -> Result<(), RuntimeError> {
        let cgroup = self.cgroup_name(run_id);
        if self.cgroups.exists(&cgroup) {
            let deadline = tokio::time::Instant::now() + STOP_GRACE;
            self.cgroups.signal(&cgroup, libc::SIGTERM);
            while !self.cgroups.members(&cgroup).is_empty() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            self.cgroups.kill(&cgroup).await.map_err(|e| transient("killing the executor's cgroup", e))?;
        } else if let Some(pid) = self.live_pid(run_id) {
            // SAFETY: signals to the executor's own process group.
            unsafe { libc::killpg(pid, libc::SIGTERM) };
            let deadline = tokio::time::Instant::now() + STOP_GRACE;
            while self.live_pid(run_id).is_some() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            if self.live_pid(run_id).is_some() {
                unsafe { libc::killpg(pid, libc::SIGKILL) };
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(())
    }

    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    pub fn cgroups(&self) -> &Cgroups {
        &self.cgroups
    }

    /// The disk size an executor gets, if any.
    fn disk_mib(&self, request: &LaunchRequest) -> Option<u64> {
        request
            .spec
            .resources
            .disk_mib
            .or(self.default_disk_mib.filter(|_| matches!(self.disk, DiskSupport::Loop { .. })))
    }

    fn posture_line(&self) -> String {
        let who = match (&self.identities, &self.sandbox) {
            (Some(ids), Sandbox::Bubblewrap(_)) => format!(
                "daemon and workload under uids of their own per executor (from {}); the daemon keeps {}",
                ids.range().start,
                [DAEMON_CAPS_PROCESS, DAEMON_CAPS_FILES].concat().join(", ")
            ),
            (Some(ids), Sandbox::None(_)) => format!(
                "daemon and workload under uids of their own per executor (from {}); the daemon keeps {} \
                 (no file capabilities without a mount namespace)",
                ids.range().start,
                DAEMON_CAPS_PROCESS.join(", ")
            ),
            (None, _) => {
                "daemon and workload as sluice's own user: NO boundary between them (sluice is not root)".into()
            }
        };
        let sandbox = match &self.sandbox {
            Sandbox::Bubblewrap(_) => "bubblewrap sandbox (own mount, pid, ipc, uts and network namespaces)".into(),
            Sandbox::None(why) if self.identities.is_some() => format!(
                "NO sandbox ({why}): executors see the host's filesystem and processes as their uid allows \
                 (they still get their own network, ipc, uts and mount namespaces and a private /tmp)"
            ),
            Sandbox::None(why) => format!(
                "NO sandbox ({why}): executors share the host's filesystem, processes, network and /tmp, \
                 as sluice's own user"
            ),
        };
        format!(
            "local: {sandbox}; {who}; {}; {}; {}",
            self.cgroups.describe(),
            self.disk.describe(),
            self.images_posture()
        )
    }

    fn record(&self, run_id: &str) -> RuntimeRecord {
        RuntimeRecord {
            adapter: RuntimeAdapter::Local,
            resource_id: format!("sluice-{run_id}"),
            reference: run_dir(&self.executors_dir, run_id).display().to_string(),
            status: RuntimeStatus::Running,
            endpoint: Some(format!("unix://{}", control_socket(&self.executors_dir, run_id).display())),
            deadline: super::deadline(&run_dir(&self.executors_dir, run_id)),
        }
    }

    fn live_pid(&self, run_id: &str) -> Option<i32> {
        let dir = run_dir(&self.executors_dir, run_id);
        let pid: i32 = std::fs::read_to_string(dir.join("daemon.pid")).ok()?.trim().parse().ok()?;
        // The pid must still be this run's process, not a reused number; a
        // zombie's command line reads empty. One taken from the pool names
        // the directory it was started in.
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let started_in = origin(&dir).map_or(dir, |pool_id| run_dir(&self.executors_dir, &pool_id));
        let needle = started_in.display().to_string();
        String::from_utf8_lossy(&cmdline).contains(&needle).then_some(pid)
    }
}

impl Adapter for LocalRuntime {
    fn adapter(&self) -> RuntimeAdapter {
        RuntimeAdapter::Local
    }

    fn registrar_socket(&self, run_id: &str) -> PathBuf {
        crate::sockets::registrar_socket(&run_dir(&self.executors_dir, run_id))
    }

    fn posture(&self) -> String {
        self.posture_line()
    }

    fn recoverable(&self) -> bool {
        true
    }

    fn unenforceable(&self) -> Vec<(&'static str, String)> {
        let can = self.cgroups.enforceable();
        let mut refused = Vec::new();
        for (key, ok) in
            [("resources.cpus", can.cpu), ("resources.memoryMiB", can.memory), ("resources.pids", can.pids)]
        {
            if !ok {
                refused.push((key, self.cgroups.describe()));
            }
        }
        if let DiskSupport::None(why) = &self.disk {
            refused.push(("resources.diskMiB", why.clone()));
        }
        if let (Sandbox::None(why), None) = (&self.sandbox, &self.identities) {
            // Neither bubblewrap nor root: no network namespace, so nothing
            // keeps the workload to its proxy.
            refused.push((
                "network.egress",
                format!("no network namespace for executors ({why}, and sluice is not root)"),
            ));
        }
        refused
    }

    async fn launch(&self, request: &LaunchRequest) -> Result<Launched, RuntimeError> {
        refuse_unenforceable(request, &self.unenforceable())?;
        let dir = run_dir(&self.executors_dir, &request.run_id);
        let taking = std::time::Instant::now();
        let mut take = None;
        for _ in 0..POOL_TAKE_TRIES {
            if let Some(spec) = self.pool_for(request).filter(|_| !dir.exists()) {
                let taken =
                    self.take_pooled(&spec.image, &dir).map_err(|e| transient("taking a pooled executor", e))?;
                let image = spec.image.clone();
                take = Some(if taken { PoolTake::Taken(image) } else { PoolTake::Empty(image) });
                if let (true, Some(pause)) = (taken, self.pause_after_take) {
                    tokio::time::sleep(pause).await;
                }
            }
            // Taken (now, or by a launcher that died before the assign): the
            // daemon gets its run. Assigning again is harmless.
            if request.boot_secret.is_none() || origin(&dir).is_none() || dir.join(ASSIGNED_FILE).exists() {
                break;
            }
            let image = std::fs::read_to_string(dir.join(POOL_IMAGE_FILE)).unwrap_or_default();
            let took = taking.elapsed();
            match self.finish_take(request, &dir).await {
                Ok(()) => {
                    let phases = vec![("pool_take", took), ("assign", taking.elapsed() - took)];
                    let pool = Some(PoolTake::Taken(image));
                    return Ok(Launched {
                        record: self.record(&request.run_id),
                        published: self.pooled_published(request, &dir),
                        phases,
                        pool,
                        image_pull: None,
                    });
                }
                Err(e) => {
                    // Its daemon ended or refused (another caller assigned
                    // it): it is removed, before the run's workload ever
                    // started in it, and the next one is tried.
                    tracing::warn!(run = %request.run_id, error = %e, "the pooled executor could not be assigned");
                    self.remove(&request.run_id, "").await?;
                    take = Some(PoolTake::Empty(image));
                }
            }
        }
        let mut launched = self.launch_fresh(request).await?;
        launched.pool = take;
        Ok(launched)
    }

    async fn tend_pool(&self) -> Result<Vec<PoolLevel>, RuntimeError> {
        self.tend().await
    }

    fn images(&self) -> Vec<sluice_store::fleet::HostImage> {
        let Some(cache) = &self.images else { return Vec::new() };
        let in_use = self.images_in_use();
        let listed = cache.store().list();
        let mut users: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
        for image in &listed {
            for layer in &image.record.layers {
                *users.entry(layer.digest.as_str()).or_insert(0) += 1;
            }
        }
        listed
            .iter()
            .map(|image| sluice_store::fleet::HostImage {
                names: image.names.clone(),
                digest: image.record.digest.clone(),
                size_bytes: image.record.size_bytes(),
                layers: image.record.layers.len() as u32,
                shared_layers: image.record.layers.iter().filter(|l| users[l.digest.as_str()] > 1).count() as u32,
                last_used_at: image.last_used * 1000,
                executors: in_use.get(&image.record.digest).copied().unwrap_or(0),
            })
            .collect()
    }

    fn image_cache(&self) -> Option<std::sync::Arc<sluice_images::ImageCache>> {
        self.images.clone()
    }

    async fn inspect(&self, run_id: &str, _resource_id: &str) -> Result<Presence, RuntimeError> {
        let dir = run_dir(&self.executors_dir, run_id);
        if !dir.exists() {
            return Ok(Presence::Absent);
        }
        if self.live_pid(run_id).is_some() && super::past_deadline(&dir) {
            // Its lifetime is over: it ends, whatever anyone asks.
            tracing::warn!(run = %run_id, "the executor reached its deadline and is ended");
            self.end(run_id).await?;
        }
        Ok(if self.live_pid(run_id).is_some() { Presence::Running } else { Presence::Exited })
    }

    /// Stops the executor (SIGTERM, SIGKILL after a grace), kills whatever
    /// is left in its cgroup, deletes its directory and frees its uids.
    /// Removing an absent executor succeeds.
    async fn remove(&self, run_id: &str, _resource_id: &str) -> Result<(), RuntimeError> {
        let dir = run_dir(&self.executors_dir, run_id);
        // Every process gets SIGTERM and a grace to end on its own (the
        // daemon stops the managed process in that time), then whatever is
        // left (a `setsid` child, a process of an earlier server's launch)
        // is killed through the cgroup: nothing survives.
        self.end(run_id).await?;
        if let DiskSupport::Loop { umount, .. } = &self.disk {
            disk::detach(umount, &dir.join("workspace")).await.map_err(|e| transient("executor disk", e))?;
        }
        rootfs::detach(&self.roots, &dir).await.map_err(|e| transient("executor root", e))?;
        let logs = self.executors_dir.join("logs");
        let identities = self.identities.clone();
        let run_id = run_id.to_owned();
        // A whole executor's disk can take a while to delete: on a thread
        // that may block, not on the runtime's.
        let removed = tokio::task::spawn_blocking(move || {
            let slot = identities.as_ref().and_then(|a| a.recorded(&dir));
            // The daemon's log outlives the executor, for whoever looks into why it ended.
            if std::fs::create_dir_all(&logs).is_ok() {
                let _ = std::fs::copy(dir.join("daemon.log"), logs.join(format!("{run_id}.log")));
            }
            // Not `remove_dir_all`: a copied image root keeps the image's
            // modes, read-only directories too.
            match sluice_images::remove_tree(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(transient("removing the run directory", e)),
            }
            if let (Some(allocator), Some(ids)) = (&identities, slot) {
                allocator.release(ids.slot);
            }
            Ok(())
        });
        removed.await.map_err(|e| transient("removing the run directory", e))?
    }

    /// Executors found on the host: run directories and cgroups (a cgroup
    /// outlives a directory removed by hand, with its processes).
    async fn export_disk(&self, run_id: &str, _resource_id: &str) -> Result<super::archive::DiskArchive, RuntimeError> {
        let dir = run_dir(&self.executors_dir, run_id);
        let workspace = dir.join("workspace");
        if !workspace.is_dir() {
            return Err(RuntimeError::Permanent {
                message: format!("the executor of run {run_id} has no disk on this host"),
                code: "no-disk",
            });
        }
        // A disk of its own that is not mounted (the host restarted) is
        // mounted again to be read; the image is only ever mounted, not made.
        if let DiskSupport::Loop { mkfs, mount, .. } = &self.disk
            && disk::has_image(&dir)
        {
            disk::attach((mkfs, mount), &dir, &workspace, 0, None).await.map_err(|e| transient("executor disk", e))?;
        }
        Ok(super::archive::directory_archive(workspace))
    }

    async fn list_owned(&self) -> Result<Vec<OwnedResource>, RuntimeError> {
        let entries = std::fs::read_dir(&self.executors_dir).map_err(|e| transient("executors directory", e))?;
        let mut runs: std::collections::BTreeSet<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| name.starts_with("run_"))
            .collect();
        runs.extend(self.cgroups.runs());
        Ok(runs.into_iter().map(|run_id| OwnedResource { resource_id: format!("sluice-{run_id}"), run_id }).collect())
    }
}
