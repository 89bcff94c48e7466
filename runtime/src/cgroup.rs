//! Control groups for local executors: each executor's processes live in a
//! cgroup of its own, named after its run, under one directory per install
//! (`sluice-<hash of the executors directory>`). The cgroup carries the
//! executor's limits (CPU, memory, pids) and is how removal finds every
//! process of an executor, whoever launched it and across any number of
//! restarts: membership is kept by the kernel, not remembered by sluice.
//!
//! Both layouts are handled: cgroup v1 (one hierarchy per controller, as on
//! this project's CI machines) and cgroup v2 (one unified hierarchy).

use std::collections::BTreeSet;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

/// Where cgroups are mounted.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";
/// The v1 controllers an executor's cgroup spans.
const V1_CONTROLLERS: [&str; 4] = ["pids", "memory", "cpu", "freezer"];

/// Limits an executor's cgroup enforces.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    pub cpus: Option<f64>,
    pub memory_bytes: Option<u64>,
    pub pids: Option<u64>,
}

/// Which limits this host can enforce.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Enforceable {
    pub cpu: bool,
    pub memory: bool,
    pub pids: bool,
}

#[derive(Debug, Clone)]
enum Layout {
    /// Controller name → the install's directory in that hierarchy.
    V1(Vec<(&'static str, PathBuf)>),
    /// The install's directory in the unified hierarchy.
    V2(PathBuf),
}

/// The cgroups of one install's executors.
#[derive(Debug, Clone)]
pub struct Cgroups {
    layout: Option<Layout>,
    /// Why there are none, when there are none.
    missing: String,
    enforceable: Enforceable,
}

fn write_file(path: &Path, value: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new().write(true).open(path)?.write_all(value.as_bytes())
}

fn read_pids(procs: &Path) -> Vec<i32> {
    std::fs::read_to_string(procs)
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

impl Cgroups {
    /// Finds the cgroup hierarchies this process may manage, and makes the
    /// install's own directory in each. `install` names the install (its
    /// executors directory).
    pub fn detect(install: &str) -> Cgroups {
        Self::detect_at(Path::new(CGROUP_ROOT), install)
    }

    /// [`detect`](Self::detect) with the hierarchies mounted at `root`.
    pub fn detect_at(root: &Path, install: &str) -> Cgroups {
        let digest = Sha256::digest(install.as_bytes());
        let name: String = format!("sluice-{}", digest.iter().take(6).map(|b| format!("{b:02x}")).collect::<String>());
        let v1: Vec<(&'static str, PathBuf)> = V1_CONTROLLERS
            .iter()
            .filter(|c| root.join(c).join("cgroup.procs").exists())
            .map(|c| (*c, root.join(c).join(&name)))
            .collect();
        let attempt = if root.join("cgroup.controllers").exists() {
            Self::prepare_v2(root, &root.join(&name))
        } else if !v1.is_empty() {
            Self::prepare_v1(v1)
        } else {
            Err(std::io::Error::other(format!("no cgroup hierarchy is mounted at {CGROUP_ROOT}")))
        };
        match attempt {
            Ok((layout, enforceable)) => Cgroups { layout: Some(layout), missing: String::new(), enforceable },
            Err(e) => Cgroups { layout: None, missing: e.to_string(), enforceable: Enforceable::default() },
        }
    }

    fn prepare_v1(dirs: Vec<(&'static str, PathBuf)>) -> std::io::Result<(Layout, Enforceable)> {
        let mut usable = Vec::new();
        for (controller, dir) in dirs {
            match std::fs::create_dir_all(&dir) {
                Ok(()) => usable.push((controller, dir)),
                Err(e) => tracing::warn!(controller, error = %e, "cannot use this cgroup controller"),
            }
        }
        if !usable.iter().any(|(c, _)| *c == "pids" || *c == "freezer") {
            return Err(std::io::Error::other("neither the pids nor the freezer cgroup controller can be used"));
        }
        let has = |name: &str| usable.iter().any(|(c, _)| *c == name);
        let enforceable = Enforceable { cpu: has("cpu"), memory: has("memory"), pids: has("pids") };
        Ok((Layout::V1(usable), enforceable))
    }

    fn prepare_v2(root: &Path, dir: &Path) -> std::io::Result<(Layout, Enforceable)> {
        std::fs::create_dir_all(dir)?;
        let available = std::fs::read_to_string(root.join("cgroup.controllers"))?;
        let wanted: Vec<&str> = ["cpu", "memory", "pids"].into_iter().filter(|c| available.contains(c)).collect();
        for parent in [root, dir] {
            for controller in &wanted {
                let _ = write_file(&parent.join("cgroup.subtree_control"), &format!("+{controller}"));
            }
        }
        let enabled = std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
        let enforceable = Enforceable {
            cpu: enabled.contains("cpu"),
            memory: enabled.contains("memory"),
            pids: enabled.contains("pids"),
        };
        Ok((Layout::V2(dir.to_path_buf()), enforceable))
    }

    /// No cgroups, and why.
    pub fn unavailable(why: &str) -> Cgroups {
        Cgroups { layout: None, missing: why.to_owned(), enforceable: Enforceable::default() }
    }

    pub fn available(&self) -> bool {
        self.layout.is_some()
    }

    pub fn enforceable(&self) -> Enforceable {
        self.enforceable
    }

    /// A line for `doctor` and the startup log.
    pub fn describe(&self) -> String {
        let e = self.enforceable;
        let names = [("cpu", e.cpu), ("memory", e.memory), ("pids", e.pids)]
            .iter()
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ");
        match &self.layout {
            Some(Layout::V1(_)) => {
                format!("cgroup v1, limits enforced: {}", if names.is_empty() { "none" } else { &names })
            }
            Some(Layout::V2(_)) => {
                format!("cgroup v2, limits enforced: {}", if names.is_empty() { "none" } else { &names })
            }
            None => format!("no cgroups ({}): no limits, and removal kills by process group only", self.missing),
        }
    }

    /// The run's directory in each hierarchy.
    fn dirs(&self, run_id: &str) -> Vec<(&'static str, PathBuf)> {
        match &self.layout {
            Some(Layout::V1(dirs)) => dirs.iter().map(|(c, d)| (*c, d.join(run_id))).collect(),
            Some(Layout::V2(dir)) => vec![("unified", dir.join(run_id))],
            None => Vec::new(),
        }
    }

    /// Makes the run's cgroup with `limits` and returns open handles on its
    /// `cgroup.procs` files: a launcher writes "0" to each between fork and
    /// exec (see [`join`]), so the executor is inside before it runs a
    /// single instruction of its own.
    pub fn create(&self, run_id: &str, limits: &Limits) -> std::io::Result<Vec<OwnedFd>> {
        let mut handles = Vec::new();
        for (controller, dir) in self.dirs(run_id) {
            std::fs::create_dir_all(&dir)?;
            let v2 = controller == "unified";
            if let Some(pids) = limits.pids.filter(|_| controller == "pids" || v2) {
                write_file(&dir.join("pids.max"), &pids.to_string())?;
            }
            if let Some(bytes) = limits.memory_bytes {
                if controller == "memory" {
                    write_file(&dir.join("memory.limit_in_bytes"), &bytes.to_string())?;
                    // Swap counts too where the kernel accounts it.
                    let _ = write_file(&dir.join("memory.memsw.limit_in_bytes"), &bytes.to_string());
                } else if v2 {
                    write_file(&dir.join("memory.max"), &bytes.to_string())?;
                    let _ = write_file(&dir.join("memory.swap.max"), "0");
                }
            }
            if let Some(cpus) = limits.cpus {
                let quota = ((cpus * 100_000.0) as u64).max(1000);
                if controller == "cpu" {
                    write_file(&dir.join("cpu.cfs_period_us"), "100000")?;
                    write_file(&dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
                } else if v2 {
                    write_file(&dir.join("cpu.max"), &format!("{quota} 100000"))?;
                }
            }
            let procs = std::fs::OpenOptions::new().write(true).open(dir.join("cgroup.procs"))?;
            handles.push(OwnedFd::from(procs));
        }
        Ok(handles)
    }

    /// The processes in the run's cgroup.
    pub fn members(&self, run_id: &str) -> Vec<i32> {
        let mut pids = BTreeSet::new();
        for (_, dir) in self.dirs(run_id) {
            pids.extend(read_pids(&dir.join("cgroup.procs")));
        }
        pids.into_iter().collect()
    }

    /// Whether the run has a cgroup here.
    pub fn exists(&self, run_id: &str) -> bool {
        self.dirs(run_id).iter().any(|(_, dir)| dir.exists())
    }

    /// Sends `signal` to every process in the run's cgroup.
    pub fn signal(&self, run_id: &str, signal: i32) {
        for pid in self.members(run_id) {
            // SAFETY: a signal to a process of this executor's cgroup.
            unsafe { libc::kill(pid, signal) };
        }
    }

    /// Ends every process in the run's cgroup and removes it. Frozen first
    /// where the host can, so nothing forks while it is being killed.
    pub async fn kill(&self, run_id: &str) -> std::io::Result<()> {
        if !self.exists(run_id) {
            return Ok(());
        }
        let dirs = self.dirs(run_id);
        for (controller, dir) in &dirs {
            if *controller == "unified" && dir.join("cgroup.kill").exists() {
                let _ = write_file(&dir.join("cgroup.kill"), "1");
            }
        }
        let freezer = dirs.iter().find_map(|(c, d)| match *c {
            "freezer" => Some((d.join("freezer.state"), "FROZEN", "THAWED")),
            "unified" => Some((d.join("cgroup.freeze"), "1", "0")),
            _ => None,
        });
        if let Some((file, frozen, _)) = &freezer {
            let _ = write_file(file, frozen);
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let members = self.members(run_id);
            if members.is_empty() {
                break;
            }
            for pid in &members {
                // SAFETY: a signal to a process of this executor's cgroup.
                unsafe { libc::kill(*pid, libc::SIGKILL) };
            }
            // A frozen process dies only once thawed.
            if let Some((file, _, thawed)) = &freezer {
                let _ = write_file(file, thawed);
            }
            if tokio::time::Instant::now() > deadline {
                return Err(std::io::Error::other(format!("{} processes survive SIGKILL", members.len())));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            if let Some((file, frozen, _)) = &freezer {
                let _ = write_file(file, frozen);
            }
        }
        for (_, dir) in dirs {
            match std::fs::remove_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Run ids that have a cgroup of this install.
    pub fn runs(&self) -> Vec<String> {
        self.named("run_")
    }

    /// The install's cgroups whose names start with `prefix`.
    pub fn named(&self, prefix: &str) -> Vec<String> {
        let mut runs = BTreeSet::new();
        let parents: Vec<PathBuf> = match &self.layout {
            Some(Layout::V1(dirs)) => dirs.iter().map(|(_, d)| d.clone()).collect(),
            Some(Layout::V2(dir)) => vec![dir.clone()],
            None => Vec::new(),
        };
        for parent in parents {
            let Ok(entries) = std::fs::read_dir(parent) else { continue };
            runs.extend(
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.path().is_dir())
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| n.starts_with(prefix)),
            );
        }
        runs.into_iter().collect()
    }
}

/// Moves the calling process into the cgroups whose `cgroup.procs` files
/// `handles` are open on.
///
/// # Safety
/// Async-signal-safe (a write per handle): meant for between fork and exec.
pub unsafe fn join(handles: &[i32]) -> std::io::Result<()> {
    for fd in handles {
        // SAFETY: a write of two bytes to a descriptor the caller keeps open.
        if unsafe { libc::write(*fd, b"0\n".as_ptr().cast(), 2) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The raw descriptors of `handles`, for [`join`].
pub fn raw(handles: &[OwnedFd]) -> Vec<i32> {
    handles.iter().map(AsRawFd::as_raw_fd).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::is_root;

    /// Starts `sh -c script` inside the run's cgroup.
    fn start_inside(cgroups: &Cgroups, run: &str, limits: &Limits, script: &str) -> std::process::Child {
        let handles = cgroups.create(run, limits).unwrap();
        let fds = raw(&handles);
        let mut command = std::process::Command::new("sh");
        command.args(["-c", script]);
        // SAFETY: `join` is async-signal-safe.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, move || join(&fds));
        }
        command.spawn().unwrap()
    }

    async fn kill_finds_every_process(root: &Path) {
        let install = format!("test-{}-{}", std::process::id(), root.display());
        let cgroups = Cgroups::detect_at(root, &install);
        assert!(cgroups.available(), "{}", cgroups.describe());
        let run = "run_cgroup_test";
        let limits = Limits { pids: cgroups.enforceable().pids.then_some(50), ..Limits::default() };
        // A child detached into a session of its own is still found.
        let mut child = start_inside(&cgroups, run, &limits, "setsid sleep 60 & sleep 60 & sleep 60");
        for _ in 0..100 {
            if cgroups.members(run).len() >= 4 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(cgroups.members(run).len() >= 3, "{:?}", cgroups.members(run));
        assert_eq!(cgroups.runs(), vec![run.to_owned()]);
        cgroups.kill(run).await.unwrap();
        assert!(cgroups.members(run).is_empty());
        assert!(!cgroups.exists(run), "the cgroup is removed");
        let _ = child.wait();
        cgroups.kill(run).await.unwrap();
        // The install's own directory goes too, for the test's sake.
        for (_, dir) in cgroups.dirs("") {
            let _ = std::fs::remove_dir(dir);
        }
    }

    #[tokio::test]
    async fn kill_finds_every_process_on_cgroup_v1() {
        let root = Path::new(CGROUP_ROOT);
        if !is_root() || !root.join("pids").join("cgroup.procs").exists() {
            return;
        }
        kill_finds_every_process(root).await;
    }

    #[tokio::test]
    async fn kill_finds_every_process_on_cgroup_v2() {
        // A unified hierarchy: the root on v2 hosts, `unified` on hybrid ones.
        let root = [Path::new(CGROUP_ROOT), &Path::new(CGROUP_ROOT).join("unified")]
            .into_iter()
            .find(|r| r.join("cgroup.controllers").exists())
            .map(Path::to_path_buf);
        let Some(root) = root.filter(|_| is_root()) else { return };
        kill_finds_every_process(&root).await;
    }
}
