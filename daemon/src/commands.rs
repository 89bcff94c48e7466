//! Durable commands: a command started under the caller's identity, at most
//! once. The claim is a directory made with `mkdir` on the executor's own
//! disk, so a repeated start (or a restarted daemon) never launches a
//! second process; a cancel that comes first leaves a fence the start then
//! finds. Results stay on the executor.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sluice_protocol::{CommandStatus, ExecRequest};
use tokio::sync::watch;

use crate::processes::Processes;

const CANCELED: &str = "canceled";
const RESULT: &str = "result.json";

/// The commands of this daemon.
pub struct Commands {
    dir: PathBuf,
    running: Mutex<HashMap<String, watch::Sender<bool>>>,
}

/// 1–128 characters of `[A-Za-z0-9._:-]`, never `.` or `..`.
pub fn valid_identity(identity: &str) -> bool {
    (1..=128).contains(&identity.len())
        && identity.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
        && identity != "."
        && identity != ".."
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// Whether a command can start at all: its directory exists and its
/// program is found (on the `PATH` it will run with). A command that fails
/// this is refused before its identity is claimed.
pub fn preflight(workdir: &Path, request: &ExecRequest) -> Result<(), &'static str> {
    let cwd = crate::exec::resolve_cwd(workdir, request.cwd.as_deref());
    if !cwd.is_dir() {
        return Err("the command's directory does not exist");
    }
    let program = request.argv.first().map(String::as_str).unwrap_or_default();
    let found = if program.contains('/') {
        cwd.join(program).is_file()
    } else {
        let path = request.env.get("PATH").cloned().or_else(|| std::env::var("PATH").ok()).unwrap_or_default();
        std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
    };
    if found { Ok(()) } else { Err("the command's program was not found") }
}

impl Commands {
    pub fn new(state_dir: &Path) -> Commands {
        Commands { dir: state_dir.join("commands"), running: Mutex::new(HashMap::new()) }
    }

    fn status_of(&self, identity: &str) -> CommandStatus {
        let dir = self.dir.join(identity);
        if !dir.is_dir() {
            return CommandStatus { state: "unknown".into(), ..Default::default() };
        }
        if let Some(status) = std::fs::read(dir.join(RESULT)).ok().and_then(|b| serde_json::from_slice(&b).ok()) {
            return status;
        }
        let state = if dir.join(CANCELED).exists() {
            "canceled"
        } else if self.running.lock().unwrap().contains_key(identity) {
            "running"
        } else {
            // Claimed by an earlier boot of this daemon, whose process
            // ended with it: it will never finish.
            "canceled"
        };
        CommandStatus { state: state.into(), ..Default::default() }
    }

    pub fn status(&self, identity: &str) -> CommandStatus {
        self.status_of(identity)
    }

    /// Claims `identity` and starts the command, unless it was claimed
    /// (or fenced) before: then answers its status.
    pub fn start(
        self: &Arc<Self>,
        identity: &str,
        request: ExecRequest,
        workdir: PathBuf,
        processes: Arc<Processes>,
    ) -> std::io::Result<CommandStatus> {
        std::fs::create_dir_all(&self.dir)?;
        let dir = self.dir.join(identity);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(self.status_of(identity)),
            Err(e) => return Err(e),
        }
        let (cancel, canceled) = watch::channel(false);
        self.running.lock().unwrap().insert(identity.to_owned(), cancel);
        let commands = self.clone();
        let identity = identity.to_owned();
        tokio::spawn(async move {
            let request = ExecRequest { binary: true, ..request };
            let result = crate::exec::run_until(&workdir, request, &processes, Some(canceled), None).await;
            let was_canceled = dir.join(CANCELED).exists();
            let status = match result {
                Ok(answer) => CommandStatus {
                    state: if was_canceled { "canceled" } else { "completed" }.into(),
                    created: false,
                    exit_code: Some(answer.exit_code),
                    output_truncated: answer.stdout_truncated || answer.stderr_truncated,
                    stdout_b64: answer.stdout_b64,
                    stderr_b64: answer.stderr_b64,
                },
                Err(_) => CommandStatus { state: "canceled".into(), ..Default::default() },
            };
            let bytes = serde_json::to_vec(&status).expect("a status serializes");
            if let Err(e) = write_atomically(&dir.join(RESULT), &bytes) {
                log_line!("sluiced: a durable command's result could not be kept: {e}");
            }
            commands.running.lock().unwrap().remove(&identity);
        });
        Ok(CommandStatus { state: "running".into(), created: true, ..Default::default() })
    }

    /// Cancels `identity`: kills it if it runs, and fences a start that
    /// has not happened yet. Idempotent; a finished result stays.
    pub fn cancel(&self, identity: &str) -> std::io::Result<CommandStatus> {
        std::fs::create_dir_all(&self.dir)?;
        let dir = self.dir.join(identity);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        if !dir.join(RESULT).exists() {
            std::fs::write(dir.join(CANCELED), b"")?;
            if let Some(cancel) = self.running.lock().unwrap().get(identity) {
                let _ = cancel.send(true);
            }
        }
        Ok(self.status_of(identity))
    }
}

#[cfg(test)]
mod preflight_tests {
    use super::*;

    fn request(argv: &[&str], cwd: Option<&str>) -> ExecRequest {
        ExecRequest {
            argv: argv.iter().map(|a| (*a).to_owned()).collect(),
            cwd: cwd.map(str::to_owned),
            ..Default::default()
        }
    }

    #[test]
    fn a_command_needs_its_program_and_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(preflight(dir.path(), &request(&["sh", "-c", "true"], None)), Ok(()));
        assert!(preflight(dir.path(), &request(&["no-such-program-3f1"], None)).is_err());
        assert!(preflight(dir.path(), &request(&["./tool"], None)).is_err());
        std::fs::write(dir.path().join("tool"), "").unwrap();
        assert_eq!(preflight(dir.path(), &request(&["./tool"], None)), Ok(()));
        assert!(preflight(dir.path(), &request(&["sh"], Some("missing"))).is_err());
        let mut narrow = request(&["sh"], None);
        narrow.env.insert("PATH".into(), dir.path().display().to_string());
        assert!(preflight(dir.path(), &narrow).is_err(), "the command's own PATH decides");
    }
}
