//! The `local` runtime: one host process per executor, the daemon, in the
//! run's own directory; inside bubblewrap when it works here, plainly (and
//! saying so) when it does not. When sluice runs as root the executor runs
//! as an unprivileged user, so it cannot read sluice's own files.
//!
//! A run's directory holds `workspace/` (the executor's disk), `state/`
//! (the daemon's), `run/` (boot secret and control socket), `daemon.pid`
//! and `daemon.log`. A lock file held while launching makes a second
//! launcher wait and then adopt the executor the first one started.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use sluice_store::{RuntimeAdapter, RuntimeRecord, RuntimeStatus};
use tokio::process::Command;

use super::{LaunchRequest, Launched, OwnedResource, Presence, Runtime, WorkerError, control_socket, run_dir};

/// The user an executor runs as when sluice runs as root.
const UNPRIVILEGED: (u32, u32) = (65534, 65534);
/// How long an executor gets to stop after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

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
    run_as: Option<(u32, u32)>,
}

fn transient(what: &str, e: impl std::fmt::Display) -> WorkerError {
    WorkerError::Transient(format!("{what}: {e}"))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn chown(path: &Path, owner: Option<(u32, u32)>) -> std::io::Result<()> {
    match owner {
        Some((uid, gid)) => std::os::unix::fs::chown(path, Some(uid), Some(gid)),
        None => Ok(()),
    }
}

/// Checks whether bubblewrap can make a sandbox here, as `run_as`.
async fn probe_bubblewrap(run_as: Option<(u32, u32)>) -> Sandbox {
    let Some(bwrap) =
        ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"].iter().map(PathBuf::from).find(|p| p.exists())
    else {
        return Sandbox::None("bwrap is not installed".into());
    };
    let mut probe = Command::new(&bwrap);
    probe.args(["--ro-bind", "/usr", "/usr", "--ro-bind-try", "/bin", "/bin", "--ro-bind-try", "/lib", "/lib"]);
    probe.args(["--ro-bind-try", "/lib64", "/lib64", "--dev", "/dev", "--proc", "/proc"]);
    probe.args(["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try"]);
    // The same way launches drop privileges (see `launch`).
    match run_as {
        Some((uid, gid)) => {
            probe.args(["--", "/usr/bin/setpriv", &format!("--reuid={uid}"), &format!("--regid={gid}")]);
            probe.args(["--clear-groups", "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "true"]);
        }
        None => {
            probe.args(["--unshare-user", "--", "true"]);
        }
    }
    probe.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    match probe.output().await {
        Ok(out) if out.status.success() => Sandbox::Bubblewrap(bwrap),
        Ok(out) => Sandbox::None(format!("bwrap cannot sandbox here: {}", String::from_utf8_lossy(&out.stderr).trim())),
        Err(e) => Sandbox::None(format!("bwrap cannot run: {e}")),
    }
}

impl LocalRuntime {
    /// Prepares the runtime: `executors_dir` holds one directory per run;
    /// executors run `daemon_binary` with `daemon_prefix` before the
    /// daemon's arguments.
    pub async fn new(
        executors_dir: PathBuf,
        daemon_binary: PathBuf,
        daemon_prefix: Vec<String>,
    ) -> std::io::Result<Self> {
        std::fs::DirBuilder::new().recursive(true).mode(0o711).create(&executors_dir)?;
        std::fs::set_permissions(&executors_dir, std::fs::Permissions::from_mode(0o711))?;
        let run_as = is_root().then_some(UNPRIVILEGED);
        let sandbox = probe_bubblewrap(run_as).await;
        Ok(LocalRuntime { executors_dir, daemon_binary, daemon_prefix, sandbox, run_as })
    }

    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    fn posture_line(&self) -> String {
        let user = match self.run_as {
            Some((uid, _)) => format!("as uid {uid}"),
            None => "as sluice's own user".into(),
        };
        match &self.sandbox {
            Sandbox::Bubblewrap(_) => format!("local: bubblewrap sandbox {user}"),
            Sandbox::None(why) => format!("local: NO sandbox ({why}); executors run as plain processes {user}"),
        }
    }

    fn record(&self, run_id: &str) -> RuntimeRecord {
        RuntimeRecord {
            adapter: RuntimeAdapter::Local,
            resource_id: format!("sluice-{run_id}"),
            reference: run_dir(&self.executors_dir, run_id).display().to_string(),
            status: RuntimeStatus::Running,
            endpoint: Some(format!("unix://{}", control_socket(&self.executors_dir, run_id).display())),
            deadline: None,
        }
    }

    fn live_pid(&self, run_id: &str) -> Option<i32> {
        let dir = run_dir(&self.executors_dir, run_id);
        let pid: i32 = std::fs::read_to_string(dir.join("daemon.pid")).ok()?.trim().parse().ok()?;
        // The pid must still be this run's process, not a reused number; a
        // zombie's command line reads empty.
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let needle = dir.display().to_string();
        String::from_utf8_lossy(&cmdline).contains(&needle).then_some(pid)
    }
}

impl Runtime for LocalRuntime {
    fn adapter(&self) -> RuntimeAdapter {
        RuntimeAdapter::Local
    }

    fn posture(&self) -> String {
        self.posture_line()
    }

    async fn launch(&self, request: &LaunchRequest) -> Result<Launched, WorkerError> {
        let dir = run_dir(&self.executors_dir, &request.run_id);
        let secret_file = dir.join("run").join("boot-secret.json");
        for sub in ["", "workspace", "state", "run"] {
            let path = dir.join(sub);
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&path)
                .map_err(|e| transient("run directory", e))?;
            chown(&path, self.run_as).map_err(|e| transient("run directory owner", e))?;
        }
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
            return Ok(Launched { record: self.record(&request.run_id), published: None });
        }
        super::write_secret_file(&secret_file, request.boot_secret.expose())
            .map_err(|e| transient("boot secret", e))?;
        chown(&secret_file, self.run_as).map_err(|e| transient("boot secret owner", e))?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("daemon.log"))
            .map_err(|e| transient("daemon log", e))?;
        let log_err = log.try_clone().map_err(|e| transient("daemon log", e))?;

        let command_json = serde_json::to_string(&request.command()).unwrap_or_else(|_| "[]".into());
        let mut command = match &self.sandbox {
            Sandbox::Bubblewrap(bwrap) => {
                let mut c = Command::new(bwrap);
                // Only the system's programs and libraries, read-only: nothing of
                // sluice's own files or other executors is visible inside.
                c.args(["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]);
                for dir in ["/bin", "/sbin", "/lib", "/lib64", "/lib32"] {
                    c.args(["--ro-bind-try", dir, dir]);
                }
                c.args(["--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp"]);
                // Mount points' parents made searchable: bwrap would make them
                // with this process's private umask.
                for parent in ["/run", "/var", "/var/lib"] {
                    c.args(["--perms", "0755", "--dir", parent]);
                }
                c.arg("--bind").arg(dir.join("workspace")).arg("/workspace");
                c.arg("--bind").arg(dir.join("state")).arg("/var/lib/sluice");
                c.arg("--bind").arg(dir.join("run")).arg("/run/sluice");
                c.arg("--ro-bind").arg(&self.daemon_binary).arg("/run/sluiced");
                c.args([
                    "--unshare-pid",
                    "--unshare-ipc",
                    "--unshare-uts",
                    "--unshare-cgroup-try",
                    "--hostname",
                    "sluice",
                ]);
                if self.run_as.is_none() {
                    // Unprivileged: bwrap makes a user namespace of its own.
                    c.arg("--unshare-user");
                }
                if !request.wants_network() {
                    c.arg("--unshare-net");
                }
                c.args(["--chdir", "/workspace", "--setenv", "HOME", "/workspace", "--"]);
                // bwrap runs as root (so it can reach the run directory through
                // sluice's private data directory) and the daemon becomes the
                // unprivileged user, with no capabilities left.
                if let Some((uid, gid)) = self.run_as {
                    c.arg("/usr/bin/setpriv").arg(format!("--reuid={uid}")).arg(format!("--regid={gid}")).args([
                        "--clear-groups",
                        "--bounding-set=-all",
                        "--inh-caps=-all",
                        "--no-new-privs",
                    ]);
                }
                c.arg("/run/sluiced").args(&self.daemon_prefix);
                c.args(["--listen", "unix:/run/sluice/control.sock"]);
                c.args(["--boot-secret-file", "/run/sluice/boot-secret.json", "--state-dir", "/var/lib/sluice"]);
                c.args(["--workdir", "/workspace"]);
                // `=` joins the value, so no launch id can be read as an option.
                c.arg(format!("--launch={}", request.launch)).arg("--").arg(&dir);
                c
            }
            Sandbox::None(_) => {
                let mut c = Command::new(&self.daemon_binary);
                c.args(&self.daemon_prefix);
                // Relative to the daemon's working directory, so a long data
                // directory cannot overflow the socket address.
                c.arg("--listen").arg("unix:../run/control.sock");
                c.arg("--boot-secret-file").arg(&secret_file).arg("--state-dir").arg(dir.join("state"));
                c.arg("--workdir").arg(dir.join("workspace")).arg(format!("--launch={}", request.launch));
                c.current_dir(dir.join("workspace")).env("HOME", dir.join("workspace"));
                c
            }
        };
        command
            .env_clear()
            .env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            .env("SLUICED_COMMAND", command_json)
            .envs(request.env())
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err))
            .process_group(0);
        if let (Some((uid, gid)), Sandbox::None(_)) = (self.run_as, &self.sandbox) {
            command.uid(uid).gid(gid);
        }
        if let Sandbox::None(_) = self.sandbox {
            // Names the run directory, so a live pid is recognised as this run's.
            command.arg("--").arg(&dir);
        }
        let child = command.spawn().map_err(|e| WorkerError::Permanent {
            message: format!("cannot start the daemon {}: {e}", self.daemon_binary.display()),
            code: "runtime-config",
        })?;
        let pid = child.id().unwrap_or_default();
        // Not waited for: the executor outlives this worker. Tokio reaps it
        // if it ends while this process still runs.
        drop(child);
        std::fs::write(dir.join("daemon.pid"), pid.to_string()).map_err(|e| transient("pid file", e))?;
        drop(lock);
        Ok(Launched { record: self.record(&request.run_id), published: None })
    }

    async fn inspect(&self, run_id: &str, _resource_id: &str) -> Result<Presence, WorkerError> {
        if !run_dir(&self.executors_dir, run_id).exists() {
            return Ok(Presence::Absent);
        }
        Ok(if self.live_pid(run_id).is_some() { Presence::Running } else { Presence::Exited })
    }

    /// Stops the executor (SIGTERM, SIGKILL after a grace) and deletes its
    /// directory. Removing an absent executor succeeds.
    async fn remove(&self, run_id: &str, _resource_id: &str) -> Result<(), WorkerError> {
        let dir = run_dir(&self.executors_dir, run_id);
        if let Some(pid) = self.live_pid(run_id) {
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
        // The daemon's log outlives the executor, for whoever looks into why it ended.
        let logs = self.executors_dir.join("logs");
        if std::fs::create_dir_all(&logs).is_ok() {
            let _ = std::fs::copy(dir.join("daemon.log"), logs.join(format!("{run_id}.log")));
        }
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(transient("removing the run directory", e)),
        }
    }

    async fn list_owned(&self) -> Result<Vec<OwnedResource>, WorkerError> {
        let entries = std::fs::read_dir(&self.executors_dir).map_err(|e| transient("executors directory", e))?;
        Ok(entries
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| name.starts_with("run_"))
            .map(|run_id| OwnedResource { resource_id: format!("sluice-{run_id}"), run_id })
            .collect())
    }
}
