//! The command that starts an executor's daemon: inside bubblewrap with
//! its mounts and namespaces, or plainly from the run directory.

use super::*;

impl LocalRuntime {
    /// The command that starts the daemon: inside bubblewrap, or plainly
    /// from the run directory (whose relative paths reach everything the
    /// daemon needs even where the data directory is closed to its uid).
    pub(super) fn daemon_command(
        &self,
        request: &LaunchRequest,
        dir: &Path,
        ids: Option<ExecutorIds>,
        binary_fd: Option<i32>,
        image: Option<&ImageRoot>,
    ) -> Command {
        let workload_args = |ids: Option<ExecutorIds>| match ids {
            Some(ids) => vec![format!("--workload-uid={}", ids.workload), format!("--workload-gid={}", ids.workload)],
            None => Vec::new(),
        };
        match &self.sandbox {
            Sandbox::Bubblewrap(bwrap) => {
                let mut c = Command::new(bwrap);
                match image {
                    // The image's root, writable (an overlay or a copy of its
                    // own); the host's libraries beside it, read-only, for
                    // the daemon and setpriv.
                    Some(image) => {
                        c.arg("--bind").arg(&image.root).arg("/");
                        for dir in super::hostlib::HOST_DIRS {
                            c.args(["--ro-bind-try", dir]).arg(super::hostlib::inside_path(Path::new(dir)));
                        }
                        if request.spec.network {
                            c.args(["--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"]);
                        }
                        // As `docker run`, the working directory is made if the image lacks it.
                        if let Some(cwd) = image.working_dir() {
                            c.arg("--dir").arg(cwd);
                        }
                    }
                    // Only the system's programs and libraries, read-only:
                    // nothing of sluice's own files or other executors is
                    // visible inside.
                    None => {
                        c.args(["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]);
                        for dir in ["/bin", "/sbin", "/lib", "/lib64", "/lib32"] {
                            c.args(["--ro-bind-try", dir, dir]);
                        }
                    }
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
                // In an image's root the host's binaries start through the
                // host's loader.
                let (setpriv, daemon) = match image {
                    Some(_) => (
                        self.setpriv_loader.argv(&super::hostlib::inside_path(Path::new("/usr/bin/setpriv"))),
                        self.daemon_loader.argv("/run/sluiced"),
                    ),
                    None => (vec!["/usr/bin/setpriv".to_owned()], vec!["/run/sluiced".to_owned()]),
                };
                if let Some(ids) = ids {
                    c.args(setpriv).args(drop_to(ids.daemon, &[DAEMON_CAPS_PROCESS, DAEMON_CAPS_FILES].concat()));
                }
                c.args(daemon).args(&self.daemon_prefix);
                c.args(["--listen", "unix:/run/sluice/control.sock"]);
                c.args(["--boot-secret-file", "/run/sluice/boot-secret.json", "--state-dir", "/var/lib/sluice"]);
                c.args(["--workdir", "/workspace"]).args(workload_args(ids));
                if let Some(cwd) = image.and_then(ImageRoot::working_dir) {
                    c.arg(format!("--cwd={cwd}"));
                }
                c.arg("--registrar=unix:/run/sluice/registrar.sock");
                if request.spec.egress.is_some() {
                    c.arg(format!("--egress-proxy=unix:{}", sluice_protocol::egress::SOCKET_IN_EXECUTOR));
                }
                if request.egress_authority.is_some() {
                    c.arg(format!("--egress-authority=/run/sluice/{}", sluice_protocol::egress::AUTHORITY_NAME));
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
                if request.egress_authority.is_some() {
                    c.arg(format!("--egress-authority=run/{}", sluice_protocol::egress::AUTHORITY_NAME));
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
