//! How an executor is isolated here: bubblewrap when it works (probed
//! once), the capabilities the daemon keeps, and dropping to its uid.

use super::*;

/// What the daemon may do besides what any user may: start the workload
/// under its uid and signal it.
pub(super) const DAEMON_CAPS_PROCESS: &[&str] = &["setuid", "setgid", "kill"];
/// And, inside a mount namespace that shows it only its own executor: read
/// every file the workload made and restore files the workload owns.
pub(super) const DAEMON_CAPS_FILES: &[&str] = &["dac_override", "dac_read_search", "fowner", "chown"];

/// How executors are isolated on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sandbox {
    Bubblewrap(PathBuf),
    /// No sandbox, and why.
    None(String),
}

/// `setpriv` arguments that turn root into `uid` with exactly `caps`
/// (inheritable, ambient and bounding), no groups and no new privileges.
pub(super) fn drop_to(uid: u32, caps: &[&str]) -> Vec<String> {
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
pub(super) async fn probe_bubblewrap(root: bool) -> Sandbox {
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
pub(super) unsafe fn plain_namespaces(
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
