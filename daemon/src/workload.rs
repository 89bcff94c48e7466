//! The workload principal: every process the daemon starts for the
//! workspace (the managed process, exec commands) runs as the workload's
//! own uid with no capabilities and no way to gain any, so it cannot read
//! the daemon's secrets, signal or trace it, or take over its socket.
//! The daemon keeps the few capabilities it needs to start and stop those
//! processes and to read and restore the files they own.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The uid and gid the workload runs as; `None` when the daemon runs as an
/// ordinary user and has no other identity to give (then there is no
/// boundary, and the control plane says so).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkloadIds {
    pub uid: u32,
    pub gid: u32,
}

/// `struct __user_cap_header_struct` of capget(2).
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

/// `struct __user_cap_data_struct` of capget(2).
#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Drops every capability (effective, permitted, inheritable, ambient) of
/// the calling process and forbids gaining new ones on exec.
///
/// # Safety
/// Async-signal-safe: only raw system calls, no allocation, so it can run
/// between fork and exec.
unsafe fn drop_privileges() -> std::io::Result<()> {
    // SAFETY: plain system calls on the calling process.
    unsafe {
        // The launcher shields the daemon from the OOM killer; the workload
        // gets the ordinary score back (raising it needs no privilege), so a
        // memory hog is what a full executor loses, not its daemon.
        let fd = libc::open(c"/proc/self/oom_score_adj".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            libc::write(fd, b"0".as_ptr().cast(), 1);
            libc::close(fd);
        }
        // EINVAL where the kernel has no ambient set: nothing to clear there.
        if libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0
            && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
        {
            return Err(std::io::Error::last_os_error());
        }
        let mut header = CapHeader { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
        let data = [CapData { effective: 0, permitted: 0, inheritable: 0 }; 2];
        if libc::syscall(libc::SYS_capset, &mut header as *mut CapHeader, data.as_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Capabilities that bypass file permissions or ownership
/// (`CAP_CHOWN`, `CAP_DAC_OVERRIDE`, `CAP_DAC_READ_SEARCH`, `CAP_FOWNER`,
/// `CAP_FSETID`).
const FILE_CAPS: u32 = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 3) | (1 << 4);

/// Makes the calling thread touch files exactly as the workload would: its
/// filesystem uid and gid become the workload's, and capabilities that
/// bypass file permissions leave the thread's effective set. What the
/// capture engine reads is then what the workload may read (a file it made
/// unreadable stays unreadable; a symlink it planted reaches nothing it
/// could not reach itself), and files it restores belong to the workload.
/// Per thread: call it on a thread of its own that ends with the work.
pub fn act_as_workload(ids: Option<WorkloadIds>) -> std::io::Result<()> {
    let Some(ids) = ids else { return Ok(()) };
    // SAFETY: system calls that change only the calling thread's credentials.
    unsafe {
        libc::syscall(libc::SYS_setfsgid, ids.gid);
        libc::syscall(libc::SYS_setfsuid, ids.uid);
        // setfsuid answers the previous id; a second call reads the current one.
        if libc::syscall(libc::SYS_setfsuid, ids.uid) as u32 != ids.uid
            || libc::syscall(libc::SYS_setfsgid, ids.gid) as u32 != ids.gid
        {
            return Err(std::io::Error::other("could not take the workload's filesystem identity"));
        }
        let mut header = CapHeader { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
        let mut data = [CapData { effective: 0, permitted: 0, inheritable: 0 }; 2];
        if libc::syscall(libc::SYS_capget, &mut header as *mut CapHeader, data.as_mut_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        data[0].effective &= !FILE_CAPS;
        if libc::syscall(libc::SYS_capset, &mut header as *mut CapHeader, data.as_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

type FsJob = Box<dyn FnOnce() + Send>;

/// A thread that touches files as the workload (see [`act_as_workload`]):
/// the capture engine's file work runs there, off the async runtime, one
/// job at a time.
#[derive(Clone)]
pub struct FsWorker {
    jobs: std::sync::mpsc::Sender<FsJob>,
}

impl FsWorker {
    pub fn spawn(ids: Option<WorkloadIds>) -> std::io::Result<FsWorker> {
        let (jobs, queue) = std::sync::mpsc::channel::<FsJob>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::Builder::new().name("capture-fs".into()).spawn(move || {
            let _ = ready_tx.send(act_as_workload(ids));
            while let Ok(job) = queue.recv() {
                job();
            }
        })?;
        ready_rx.recv().map_err(|_| std::io::Error::other("the file worker did not start"))??;
        Ok(FsWorker { jobs })
    }

    /// Drops `value` on the worker thread: freeing a large manifest takes a
    /// while, and nothing needs to wait for it.
    pub fn drop_later<T: Send + 'static>(&self, value: T) {
        let _ = self.jobs.send(Box::new(move || drop(value)));
    }

    /// Runs `work` on the worker thread and waits for its result.
    pub async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> std::io::Result<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: FsJob = Box::new(move || {
            let _ = tx.send(work());
        });
        self.jobs.send(job).map_err(|_| std::io::Error::other("the file worker is gone"))?;
        rx.await.map_err(|_| std::io::Error::other("a file job panicked"))
    }
}

/// Makes `command` start as the workload: its uid and gid (no supplementary
/// groups), no capabilities, no new privileges. Without `ids` the command
/// runs as the daemon's own user, still without capabilities.
pub fn confine(command: &mut tokio::process::Command, ids: Option<WorkloadIds>) {
    if let Some(ids) = ids {
        command.uid(ids.uid).gid(ids.gid);
        // std drops supplementary groups itself only when the parent is
        // root; a daemon under another uid has none to drop.
    }
    // SAFETY: `drop_privileges` is async-signal-safe.
    unsafe {
        command.pre_exec(|| drop_privileges());
    }
}

/// Readies the daemon's own places at boot: the workdir belongs to the
/// workload (so it can write there) and the state directory to the daemon
/// alone.
pub fn prepare_dirs(workdir: &Path, state_dir: &Path, ids: Option<WorkloadIds>) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    // Changed only where they differ: a daemon without file capabilities
    // may not touch what it does not own.
    if std::fs::metadata(state_dir)?.mode() & 0o777 != 0o700 {
        std::fs::set_permissions(state_dir, std::fs::Permissions::from_mode(0o700))?;
    }
    if let Some(ids) = ids {
        let meta = std::fs::metadata(workdir)?;
        if (meta.uid(), meta.gid()) != (ids.uid, ids.gid) {
            std::os::unix::fs::chown(workdir, Some(ids.uid), Some(ids.gid))?;
        }
        if meta.mode() & 0o777 != 0o700 {
            std::fs::set_permissions(workdir, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    Ok(())
}

/// Hardens the daemon process itself: no core dumps or ptrace attach by
/// same-uid processes, and no descriptor inherited from whoever launched
/// it passes on to the workload.
pub fn harden_self() {
    // SAFETY: prctl on the calling process.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    if let Ok(entries) = std::fs::read_dir("/proc/self/fd") {
        let fds: Vec<i32> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .filter(|fd| *fd > 2)
            .collect();
        for fd in fds {
            // SAFETY: marks a descriptor close-on-exec; an fd that closed
            // meanwhile (the directory listing's own) fails harmlessly.
            unsafe {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn confined_commands_hold_no_capabilities_and_cannot_gain_any() {
        let mut command = tokio::process::Command::new("sh");
        command.args(["-c", "grep -E '^(CapInh|CapPrm|CapEff|CapAmb|NoNewPrivs)' /proc/self/status"]);
        confine(&mut command, None);
        let out = command.output().await.unwrap();
        assert!(out.status.success());
        let status = String::from_utf8(out.stdout).unwrap();
        for line in status.lines() {
            let value = line.split_whitespace().nth(1).unwrap();
            if line.starts_with("NoNewPrivs") {
                assert_eq!(value, "1", "{status}");
            } else {
                assert_eq!(value.trim_start_matches('0'), "", "{status}");
            }
        }
    }
}
