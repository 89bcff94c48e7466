//! The managed process: the workspace's own program from `spec.command`,
//! started at boot with the workspace's secret environment, watched, and
//! stopped (SIGTERM, then SIGKILL after a grace) when the daemon ends.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::process::Command;

pub use sluice_protocol::ManagedState;

/// A handle on the managed process.
#[derive(Clone)]
pub struct Managed {
    state: Arc<Mutex<ManagedState>>,
}

impl Managed {
    pub fn none() -> Managed {
        Managed { state: Arc::new(Mutex::new(ManagedState::None)) }
    }

    /// Starts `argv` in `workdir` with `env`, as the workload; its output
    /// goes to `log_file` on the executor's disk, where only the daemon
    /// reads it.
    pub fn start(
        argv: &[String],
        workdir: &Path,
        env: &BTreeMap<String, String>,
        log_file: &Path,
        processes: &crate::processes::Processes,
    ) -> Managed {
        let managed = Managed::none();
        let Some(program) = argv.first() else { return managed };
        let log = std::fs::OpenOptions::new().create(true).append(true).open(log_file);
        let (out, err) = match log.and_then(|f| Ok((f.try_clone()?, f))) {
            Ok((a, b)) => (Stdio::from(a), Stdio::from(b)),
            Err(_) => (Stdio::null(), Stdio::null()),
        };
        let mut command = Command::new(program);
        command.args(&argv[1..]).current_dir(workdir).envs(env).stdin(Stdio::null()).stdout(out).stderr(err);
        command.process_group(0);
        crate::workload::confine(&mut command, processes.ids());
        let spawned = processes.spawn(&mut command);
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                *managed.state.lock().unwrap() = ManagedState::Failed { message: format!("cannot run {program}: {e}") };
                return managed;
            }
        };
        let pid = child.id().unwrap_or_default();
        *managed.state.lock().unwrap() = ManagedState::Running { pid };
        let state = managed.state.clone();
        tokio::spawn(async move {
            let exit_code = match child.wait().await {
                Ok(s) => {
                    use std::os::unix::process::ExitStatusExt;
                    s.code().or_else(|| s.signal().map(|n| 128 + n)).unwrap_or(255)
                }
                Err(_) => 255,
            };
            *state.lock().unwrap() = ManagedState::Exited { exit_code };
        });
        managed
    }

    pub fn state(&self) -> ManagedState {
        self.state.lock().unwrap().clone()
    }

    /// Stops the managed process's group: SIGTERM, then SIGKILL once
    /// `grace` has passed.
    pub async fn stop(&self, grace: Duration) {
        let ManagedState::Running { pid } = self.state() else { return };
        let Ok(pgid) = i32::try_from(pid) else { return };
        // SAFETY: signals only; a group that already ended fails harmlessly.
        unsafe {
            libc::killpg(pgid, libc::SIGTERM);
        }
        let deadline = tokio::time::Instant::now() + grace;
        while tokio::time::Instant::now() < deadline {
            if !matches!(self.state(), ManagedState::Running { .. }) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}
