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
/// What the daemon may do besides what any user may: start the workload
/// under its uid and signal it.
const DAEMON_CAPS_PROCESS: &[&str] = &["setuid", "setgid", "kill"];
/// And, inside a mount namespace that shows it only its own executor: read
/// every file the workload made and restore files the workload owns.
const DAEMON_CAPS_FILES: &[&str] = &["dac_override", "dac_read_search", "fowner", "chown"];

/// How executors are isolated on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sandbox {
    Bubblewrap(PathBuf),
    /// No sandbox, and why.
    None(String),
}

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

/// `setpriv` arguments that turn root into `uid` with exactly `caps`
/// (inheritable, ambient and bounding), no groups and no new privileges.
fn drop_to(uid: u32, caps: &[&str]) -> Vec<String> {
    let list = std::iter::once("-all".to_owned()).chain(caps.iter().map(|c| format!("+{c}"))).collect::<Vec<_>>();
    let list = list.join(",");
    vec![
        format!("--reuid={uid}"),
        format!("--regid={uid}"),
        "--clear-groups".into(),
        format!("--inh-caps={list}"),
        format!("--ambient-caps={list}"),
        format!("--bounding-set={list}"),
        "--no-new-privs".into(),
        "--".into(),
    ]
}

/// Checks whether bubblewrap can make a sandbox here.
async fn probe_bubblewrap(root: bool) -> Sandbox {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let Some(bwrap) = std::env::split_paths(&path).map(|dir| dir.join("bwrap")).find(|p| p.is_file()) else {
        return Sandbox::None("bwrap is not on the PATH".into());
    };
    let mut probe = Command::new(&bwrap);
    probe.args(["--ro-bind", "/usr", "/usr", "--ro-bind-try", "/bin", "/bin", "--ro-bind-try", "/lib", "/lib"]);
    probe.args(["--ro-bind-try", "/lib64", "/lib64", "--dev", "/dev", "--proc", "/proc"]);
    probe.args(["--size", "1048576", "--tmpfs", "/tmp"]);
    probe.args(["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try"]);
    if root {
        // The same way launches drop privileges (see `launch`).
        probe.arg("--").arg("/usr/bin/setpriv").args(drop_to(UidRange::DEFAULT.start, DAEMON_CAPS_PROCESS));
        probe.arg("true");
    } else {
        probe.args(["--unshare-user", "--", "true"]);
    }
    probe.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    match probe.output().await {
        Ok(out) if out.status.success() => Sandbox::Bubblewrap(bwrap),
        Ok(out) => Sandbox::None(format!("bwrap cannot sandbox here: {}", String::from_utf8_lossy(&out.stderr).trim())),
        Err(e) => Sandbox::None(format!("bwrap cannot run: {e}")),
    }
}

/// For a plain (no bubblewrap) executor launched by root: its own IPC and
/// hostname namespaces, its own network namespace (nothing but its own
/// loopback) unless the spec asks for the network, and its own mount
/// namespace with a private, size-limited `/tmp`. The pid namespace and a
/// filesystem view of its own take bubblewrap.
///
/// # Safety
/// Async-signal-safe (system calls only): meant for between fork and exec.
unsafe fn plain_namespaces(
    isolate_network: bool,
    tmp_options: &std::ffi::CStr,
    other_disks: &[std::ffi::CString],
) -> std::io::Result<()> {
    let check = |rc: libc::c_int| if rc == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) };
    let mut flags = libc::CLONE_NEWIPC | libc::CLONE_NEWUTS | libc::CLONE_NEWNS;
    if isolate_network {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY: namespace and mount system calls on the calling process.
    unsafe {
        check(libc::unshare(flags))?;
        // Mounts made here must not propagate back to the host.
        check(libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ))?;
        // Other executors' disks, copied into this namespace, would keep
        // their loop devices busy after those executors are removed.
        for disk in other_disks {
            libc::umount2(disk.as_ptr(), libc::MNT_DETACH);
        }
        check(libc::mount(
            c"tmpfs".as_ptr(),
            c"/tmp".as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            tmp_options.as_ptr().cast(),
        ))?;
        check(libc::sethostname(c"sluice".as_ptr(), 6))?;
        if isolate_network {
            loopback_up()?;
        }
    }
    Ok(())
}

/// Brings up the loopback of a new network namespace (which starts down),
/// as bubblewrap does: the workload's own servers, and the daemon's egress
/// listener, live on it.
///
/// # Safety
/// Async-signal-safe (system calls only): meant for between fork and exec.
unsafe fn loopback_up() -> std::io::Result<()> {
    // SAFETY: a socket, two ioctls on a zeroed ifreq naming "lo", a close.
    unsafe {
        let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if socket < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        request.ifr_name[0] = b'l' as libc::c_char;
        request.ifr_name[1] = b'o' as libc::c_char;
        let mut rc = libc::ioctl(socket, libc::SIOCGIFFLAGS, &mut request);
        if rc == 0 {
            request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            rc = libc::ioctl(socket, libc::SIOCSIFFLAGS, &request);
        }
        let error = std::io::Error::last_os_error();
        libc::close(socket);
        if rc == 0 { Ok(()) } else { Err(error) }
    }
}

/// The daemon's launch argument: `--pooled` for a pooled executor (its
/// launch comes with its assign). `=` joins the value, so no launch id can
/// be read as an option.
fn launch_arg(request: &LaunchRequest) -> String {
    if request.launch.is_empty() { "--pooled".into() } else { format!("--launch={}", request.launch) }
}

/// In a pooled executor's directory: the image it was started for.
const POOL_IMAGE_FILE: &str = "pool-image";
/// In a pooled executor's directory: its daemon answered as pooled, so a
/// launch may take it.
const POOL_READY_FILE: &str = "pool-ready";
/// In a pooled executor's directory, and the run's once taken: the pooled
/// executor's name (its daemon's command line names its directory, its
/// cgroup is named so).
const ORIGIN_FILE: &str = "origin";
/// In a run's directory taken from the pool: its daemon has the run.
const ASSIGNED_FILE: &str = "assigned";
/// Held by the one process that tends the executors directory's pool.
const POOL_LOCK_FILE: &str = "pool.lock";
/// How long a pooled executor may take to answer before it is replaced.
const POOL_START_LIMIT: Duration = Duration::from_secs(60);
/// How long a taken executor's daemon gets to answer its assign.
const ASSIGN_WAIT: Duration = Duration::from_secs(10);

/// How many pooled executors one launch tries before it starts its own.
const POOL_TAKE_TRIES: usize = 3;
/// A pooled executor being removed is renamed so first.
const DISCARD_PREFIX: &str = "discard_";

/// Whether the directory was made more than `limit` ago.
fn started_before(dir: &Path, limit: Duration) -> bool {
    std::fs::metadata(dir).and_then(|m| m.modified()).is_ok_and(|at| at.elapsed().unwrap_or_default() > limit)
}

/// The pooled executor a directory was started as, if it was.
fn origin(dir: &Path) -> Option<String> {
    let name = std::fs::read_to_string(dir.join(ORIGIN_FILE)).ok()?;
    let name = name.trim();
    (name.starts_with(super::pool::POOL_PREFIX) && !name.contains('/')).then(|| name.to_owned())
}

/// Renames `from` to `to` unless `to` exists (`renameat2` with
/// `RENAME_NOREPLACE`): of two takers of one pooled executor, exactly one
/// succeeds, and a run's directory is never replaced.
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let from = std::ffi::CString::new(from.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    let to = std::ffi::CString::new(to.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: two NUL-terminated paths that outlive the call.
    let rc =
        unsafe { libc::renameat2(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), libc::RENAME_NOREPLACE) };
    if rc == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
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
        })
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
        format!("local: {sandbox}; {who}; {}; {}", self.cgroups.describe(), self.disk.describe())
    }

    /// Starts the run's executor from nothing (or adopts the one a
    /// launcher of the same run started).
    async fn launch_fresh(&self, request: &LaunchRequest) -> Result<Launched, RuntimeError> {
        let mut phases = Vec::new();
        let mut clock = std::time::Instant::now();
        let mut lap = |name: &'static str| {
            phases.push((name, clock.elapsed()));
            clock = std::time::Instant::now();
        };
        let dir = run_dir(&self.executors_dir, &request.run_id);
        // Searchable by the executor's uids (the plain fallback reaches its
        // places through it), listable by no one but root.
        make_dir(&dir, 0o711, None)?;
        // Held until the pid file is written: a second launcher of the same
        // run waits here, then adopts. The kernel drops it if we die.
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("launch.lock"))
            .map_err(|e| transient("launch lock", e))?;
        let lock = tokio::task::spawn_blocking(move || {
            use std::os::fd::AsRawFd;
            // SAFETY: flock on a descriptor we own.
            let rc = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
            (rc, lock)
        })
        .await
        .map_err(|e| transient("launch lock", e))?;
        if lock.0 != 0 {
            return Err(transient("launch lock", std::io::Error::last_os_error()));
        }
        if self.live_pid(&request.run_id).is_some() {
            return Ok(Launched { record: self.record(&request.run_id), published: None, phases, pool: None });
        }
        lap("launch_lock");
        let limits = limits(request);
        let ids = match &self.identities {
            Some(allocator) => Some(allocator.assign(&dir)?),
            None => None,
        };
        lap("uid_slot");
        make_dir(&dir.join("workspace"), 0o700, ids.map(|i| i.workload))?;
        if let (Some(mib), DiskSupport::Loop { mkfs, mount, .. }) = (self.disk_mib(request), &self.disk) {
            disk::attach((mkfs, mount), &dir, &dir.join("workspace"), mib, ids.map(|i| i.workload))
                .await
                .map_err(|e| transient("executor disk", e))?;
        }
        make_dir(&dir.join("state"), 0o700, ids.map(|i| i.daemon))?;
        make_dir(&dir.join("run"), 0o700, ids.map(|i| i.daemon))?;
        if let Some(secret) = &request.boot_secret {
            let secret_file = dir.join("run").join("boot-secret.json");
            super::write_secret_file(&secret_file, secret.expose()).map_err(|e| transient("boot secret", e))?;
            if let Some(ids) = ids {
                std::os::unix::fs::chown(&secret_file, Some(ids.daemon), Some(ids.daemon))
                    .map_err(|e| transient("boot secret owner", e))?;
            }
        }
        super::start_lifetime(&dir, self.max_lifetime).map_err(|e| transient("executor lifetime", e))?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("daemon.log"))
            .map_err(|e| transient("daemon log", e))?;
        let log_err = log.try_clone().map_err(|e| transient("daemon log", e))?;
        lap("directories");
        let cgroup_handles = if self.cgroups.available() {
            self.cgroups
                .create(&self.cgroup_name(&request.run_id), &limits)
                .map_err(|e| transient("executor cgroup", e))?
        } else {
            Vec::new()
        };
        lap("cgroup");
        let cgroup_fds = cgroup::raw(&cgroup_handles);
        let binary = std::fs::File::open(&self.daemon_binary).map_err(|e| RuntimeError::Permanent {
            message: format!("cannot open the daemon {}: {e}", self.daemon_binary.display()),
            code: "runtime-config",
        })?;
        let binary_fd = std::os::fd::AsRawFd::as_raw_fd(&binary);

        let command_json = serde_json::to_string(&request.spec.command).unwrap_or_else(|_| "[]".into());
        let mut command = self.daemon_command(request, &dir, ids, Some(binary_fd));
        command.env_clear().env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        if !request.launch.is_empty() {
            // A pooled daemon gets its command with its assign.
            command.env("SLUICED_COMMAND", command_json);
        }
        command
            .envs(if request.spec.egress.is_some() { sluice_protocol::egress::proxy_env() } else { Vec::new() })
            .envs(&request.spec.env)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err))
            .process_group(0);
        let exec_by_fd = matches!(self.sandbox, Sandbox::None(_)) && ids.is_some();
        let isolate_network = !request.spec.network;
        let tmp_options = std::ffi::CString::new(format!("size={TMP_BYTES},mode=1777")).expect("no NUL inside");
        let own_disk = dir.join("workspace");
        let other_disks: Vec<std::ffi::CString> = disk::mounted_under(&self.executors_dir)
            .into_iter()
            .filter(|m| *m != own_disk)
            .filter_map(|m| std::ffi::CString::new(m.into_os_string().into_encoded_bytes()).ok())
            .collect();
        // SAFETY: only async-signal-safe calls (write, fcntl) between fork and exec.
        unsafe {
            command.pre_exec(move || {
                // Inside the executor's cgroup before it runs anything.
                cgroup::join(&cgroup_fds)?;
                // The OOM killer spares the daemon over its workload (which
                // the daemon puts back to the ordinary score), where the host
                // lets root lower a score (it takes CAP_SYS_RESOURCE).
                let fd = libc::open(c"/proc/self/oom_score_adj".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    libc::write(fd, b"-500".as_ptr().cast(), 4);
                    libc::close(fd);
                }
                if exec_by_fd {
                    if libc::fcntl(binary_fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    // Without bubblewrap, root still gives the executor
                    // namespaces of its own for what needs no setup.
                    plain_namespaces(isolate_network, &tmp_options, &other_disks)?;
                }
                Ok(())
            });
        }
        let child = command.spawn().map_err(|e| RuntimeError::Permanent {
            message: format!("cannot start the daemon {}: {e}", self.daemon_binary.display()),
            code: "runtime-config",
        })?;
        drop((binary, cgroup_handles));
        let pid = child.id().unwrap_or_default();
        // Not waited for: the executor outlives this worker. Tokio reaps it
        // if it ends while this process still runs.
        drop(child);
        std::fs::write(dir.join("daemon.pid"), pid.to_string()).map_err(|e| transient("pid file", e))?;
        drop(lock);
        lap("spawn");
        Ok(Launched { record: self.record(&request.run_id), published: None, phases, pool: None })
    }

    /// The pool a launch may take from: its image's, when it has one and
    /// the launch fits.
    fn pool_for(&self, request: &LaunchRequest) -> Option<&PoolSpec> {
        let image = PoolSpec::image_of(&request.repository, &request.tag);
        self.pool.iter().find(|p| p.image == image).filter(|_| super::pool::unfit(request).is_none())
    }

    /// The image's pooled executors ready to be taken, by name.
    fn ready_pooled(&self, image: &str) -> Vec<PathBuf> {
        let mut ready: Vec<PathBuf> = self
            .pooled_dirs()
            .into_iter()
            .filter(|dir| dir.join(POOL_READY_FILE).exists())
            .filter(|dir| std::fs::read_to_string(dir.join(POOL_IMAGE_FILE)).is_ok_and(|i| i == image))
            .collect();
        ready.sort();
        ready
    }

    /// Every pooled executor's directory, taken or not yet.
    fn pooled_dirs(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.executors_dir) else { return Vec::new() };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(super::pool::POOL_PREFIX)))
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect()
    }

    /// Takes one of the image's ready executors for the run whose directory
    /// is `dir`, by renaming its directory to the run's: the kernel lets
    /// exactly one taker rename it, and never over a run's directory.
    fn take_pooled(&self, image: &str, dir: &Path) -> std::io::Result<bool> {
        for candidate in self.ready_pooled(image) {
            match rename_no_replace(&candidate, dir) {
                Ok(()) => return Ok(true),
                // Another launch took it first.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                // The run has its directory already: it launches as it is.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(false)
    }

    /// Makes a taken executor the run's: its uid slot follows the directory,
    /// its cgroup gets the spec's limits, its lifetime starts, and its daemon
    /// gets the run's launch, secret, command and environment.
    async fn finish_take(&self, request: &LaunchRequest, dir: &Path) -> Result<(), RuntimeError> {
        if self.live_pid(&request.run_id).is_none() {
            return Err(transient("pooled executor", "its daemon ended before it was assigned"));
        }
        if let Some(allocator) = &self.identities {
            allocator.moved(dir).map_err(|e| transient("executor slot", e))?;
        }
        if self.cgroups.available() {
            let cgroup = self.cgroup_name(&request.run_id);
            self.cgroups.create(&cgroup, &limits(request)).map_err(|e| transient("executor cgroup", e))?;
        }
        super::start_lifetime(dir, self.max_lifetime).map_err(|e| transient("executor lifetime", e))?;
        let assignment = super::pool::assignment(request).map_err(|e| transient("pooled executor", e))?;
        let token = sluice_store::Secret::new(assignment.boot_secret.control_token.clone());
        let socket = control_socket(&self.executors_dir, &request.run_id);
        let client = DaemonClient::new(&format!("unix://{}", socket.display()), token)
            .map_err(|e| transient("pooled executor", e))?;
        client.assign(&assignment, ASSIGN_WAIT).await.map_err(|e| transient("assigning the pooled executor", e))?;
        std::fs::write(dir.join(ASSIGNED_FILE), b"").map_err(|e| transient("pooled executor", e))?;
        Ok(())
    }

    /// Removes a pooled executor, unless a launch takes it first: it is
    /// renamed out of the pool (the same arbitration as a take), then removed.
    async fn discard(&self, pool_id: &str) -> Result<(), RuntimeError> {
        let discarded = format!("{DISCARD_PREFIX}{pool_id}");
        let from = run_dir(&self.executors_dir, pool_id);
        match rename_no_replace(&from, &run_dir(&self.executors_dir, &discarded)) {
            Ok(()) => self.remove(&discarded, "").await,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(transient("discarding a pooled executor", e)),
        }
    }

    /// Pooled executors renamed out of the pool, not yet removed.
    fn discarded_dirs(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.executors_dir) else { return Vec::new() };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(DISCARD_PREFIX)))
            .map(|e| e.path())
            .collect()
    }

    /// Whether a pooled executor's daemon answers, as pooled.
    async fn answers_pooled(&self, pool_id: &str) -> bool {
        let socket = control_socket(&self.executors_dir, pool_id);
        match DaemonClient::new(&format!("unix://{}", socket.display()), Secret::new(String::new())) {
            Ok(client) => client.pooled().await,
            Err(_) => false,
        }
    }

    /// Starts one pooled executor of `spec`'s image: a daemon with no run.
    async fn start_pooled(&self, spec: &PoolSpec) -> Result<(), RuntimeError> {
        let pool_id = sluice_store::clock::new_id(super::pool::POOL_PREFIX.trim_end_matches('_'));
        let dir = run_dir(&self.executors_dir, &pool_id);
        make_dir(&dir, 0o711, None)?;
        std::fs::write(dir.join(POOL_IMAGE_FILE), &spec.image).map_err(|e| transient("pooled executor", e))?;
        std::fs::write(dir.join(ORIGIN_FILE), &pool_id).map_err(|e| transient("pooled executor", e))?;
        let (repository, tag) = spec.image.rsplit_once(':').unwrap_or((&spec.image, ""));
        let request = LaunchRequest {
            workspace_id: String::new(),
            run_id: pool_id,
            launch: String::new(),
            registry_id: String::new(),
            repository: repository.to_owned(),
            tag: tag.to_owned(),
            spec: Default::default(),
            boot_secret: None,
            capture_interval_ms: self.pool_capture_interval_ms,
        };
        self.launch_fresh(&request).await.map(drop)
    }

    /// One pass over the pool: see [`Adapter::tend_pool`].
    async fn tend(&self) -> Result<Vec<PoolLevel>, RuntimeError> {
        let mut levels: Vec<PoolLevel> = self
            .pool
            .iter()
            .map(|p| PoolLevel { image: p.image.clone(), target: p.size, ..Default::default() })
            .collect();
        // One tender per executors directory; another process's pool is left to it.
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.executors_dir.join(POOL_LOCK_FILE))
            .map_err(|e| transient("pool lock", e))?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Ok(levels);
        }
        // Removals a tender died in the middle of.
        for dir in self.discarded_dirs() {
            if let Some(name) = dir.file_name().and_then(|n| n.to_str()) {
                self.remove(name, "").await?;
            }
        }
        for dir in self.pooled_dirs() {
            let Some(pool_id) = dir.file_name().and_then(|n| n.to_str()).map(str::to_owned) else { continue };
            let image = std::fs::read_to_string(dir.join(POOL_IMAGE_FILE)).unwrap_or_default();
            let level = levels.iter_mut().find(|l| l.image == image);
            let live = self.live_pid(&pool_id).is_some();
            let kept = level.as_ref().is_some_and(|l| l.idle + l.starting < l.target);
            let (Some(level), true, true) = (level, live, kept) else {
                self.discard(&pool_id).await?;
                continue;
            };
            if dir.join(POOL_READY_FILE).exists() {
                level.idle += 1;
            } else if self.answers_pooled(&pool_id).await {
                std::fs::write(dir.join(POOL_READY_FILE), b"").map_err(|e| transient("pooled executor", e))?;
                level.idle += 1;
            } else if started_before(&dir, POOL_START_LIMIT) {
                tracing::warn!(pool = %pool_id, "a pooled executor never answered: replaced");
                self.discard(&pool_id).await?;
            } else {
                level.starting += 1;
            }
        }
        // A pooled executor's cgroup outlives its directory only if a removal
        // died half way; a taken one's is named in its run's directory.
        let taken: std::collections::HashSet<String> = std::fs::read_dir(&self.executors_dir)
            .map(|entries| entries.filter_map(Result::ok).filter_map(|e| origin(&e.path())).collect())
            .unwrap_or_default();
        for cgroup in self.cgroups.named(super::pool::POOL_PREFIX) {
            if !taken.contains(&cgroup) && !run_dir(&self.executors_dir, &cgroup).exists() {
                self.cgroups.kill(&cgroup).await.map_err(|e| transient("pooled executor's cgroup", e))?;
            }
        }
        for (spec, level) in self.pool.iter().zip(levels.iter_mut()) {
            for _ in (level.idle + level.starting)..spec.size {
                self.start_pooled(spec).await?;
                level.starting += 1;
            }
        }
        drop(lock);
        Ok(levels)
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

    /// The command that starts the daemon: inside bubblewrap, or plainly
    /// from the run directory (whose relative paths reach everything the
    /// daemon needs even where the data directory is closed to its uid).
    fn daemon_command(
        &self,
        request: &LaunchRequest,
        dir: &Path,
        ids: Option<ExecutorIds>,
        binary_fd: Option<i32>,
    ) -> Command {
        let workload_args = |ids: Option<ExecutorIds>| match ids {
            Some(ids) => vec![format!("--workload-uid={}", ids.workload), format!("--workload-gid={}", ids.workload)],
            None => Vec::new(),
        };
        match &self.sandbox {
            Sandbox::Bubblewrap(bwrap) => {
                let mut c = Command::new(bwrap);
                // Only the system's programs and libraries, read-only: nothing of
                // sluice's own files or other executors is visible inside.
                c.args(["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]);
                for dir in ["/bin", "/sbin", "/lib", "/lib64", "/lib32"] {
                    c.args(["--ro-bind-try", dir, dir]);
                }
                c.args(["--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--size"]);
                c.arg(TMP_BYTES.to_string()).args(["--tmpfs", "/tmp"]);
                // Mount points' parents made searchable: bwrap would make them
                // with this process's private umask.
                for parent in ["/run", "/var", "/var/lib"] {
                    c.args(["--perms", "0755", "--dir", parent]);
                }
                c.arg("--bind").arg(dir.join("workspace")).arg("/workspace");
                c.arg("--bind").arg(dir.join("state")).arg("/var/lib/sluice");
                c.arg("--bind").arg(dir.join("run")).arg("/run/sluice");
                c.arg("--ro-bind").arg(&self.daemon_binary).arg("/run/sluiced");
                c.args(["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]);
                c.args(["--hostname", "sluice"]);
                if ids.is_none() {
                    // Unprivileged: bwrap makes a user namespace of its own.
                    c.arg("--unshare-user");
                }
                if !request.spec.network {
                    c.arg("--unshare-net");
                }
                c.args(["--chdir", "/workspace", "--setenv", "HOME", "/workspace", "--"]);
                // bwrap runs as root (so it can reach the run directory through
                // sluice's private data directory); the daemon becomes the
                // executor's daemon uid with only the capabilities it needs.
                if let Some(ids) = ids {
                    c.arg("/usr/bin/setpriv")
                        .args(drop_to(ids.daemon, &[DAEMON_CAPS_PROCESS, DAEMON_CAPS_FILES].concat()));
                }
                c.arg("/run/sluiced").args(&self.daemon_prefix);
                c.args(["--listen", "unix:/run/sluice/control.sock"]);
                c.args(["--boot-secret-file", "/run/sluice/boot-secret.json", "--state-dir", "/var/lib/sluice"]);
                c.args(["--workdir", "/workspace"]).args(workload_args(ids));
                c.arg("--registrar=unix:/run/sluice/registrar.sock");
                if request.spec.egress.is_some() {
                    c.arg(format!("--egress-proxy=unix:{}", sluice_protocol::egress::SOCKET_IN_EXECUTOR));
                }
                c.arg(format!("--capture-interval-ms={}", request.capture_interval_ms));
                c.arg(launch_arg(request)).arg("--").arg(dir);
                c
            }
            Sandbox::None(_) => {
                let mut c = match (ids, binary_fd) {
                    (Some(ids), Some(fd)) => {
                        let mut c = Command::new("/usr/bin/setpriv");
                        c.args(drop_to(ids.daemon, DAEMON_CAPS_PROCESS));
                        // The binary by its open descriptor: its own directory
                        // may be closed to the daemon's uid.
                        c.arg(format!("/proc/self/fd/{fd}"));
                        c
                    }
                    _ => Command::new(&self.daemon_binary),
                };
                c.args(&self.daemon_prefix);
                c.args(["--listen", "unix:run/control.sock", "--boot-secret-file", "run/boot-secret.json"]);
                c.args(["--state-dir", "state", "--workdir", "workspace"]).args(workload_args(ids));
                c.arg("--registrar=unix:run/registrar.sock");
                if request.spec.egress.is_some() {
                    c.arg(format!("--egress-proxy=unix:run/{}", sluice_protocol::egress::SOCKET_NAME));
                }
                c.arg(format!("--capture-interval-ms={}", request.capture_interval_ms));
                c.arg(launch_arg(request));
                c.current_dir(dir).env("HOME", dir.join("workspace"));
                // Names the run directory, so a live pid is recognised as this run's.
                c.arg("--").arg(dir);
                c
            }
        }
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
                    return Ok(Launched { record: self.record(&request.run_id), published: None, phases, pool });
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
            match std::fs::remove_dir_all(&dir) {
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
