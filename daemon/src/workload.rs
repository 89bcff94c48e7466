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
