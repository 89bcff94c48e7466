//! Durable commands: a command started under the caller's identity, at most
//! once. The claim is a directory made with `mkdir` on the executor's own
//! disk, so a repeated start (or a restarted daemon) never launches a
//! second process; a cancel that comes first leaves a fence the start then
//! finds. A claimed command runs as one of the daemon's background
//! processes (listed, followed and signalled like any other); when it ends
//! its result is kept beside the claim. Results stay on the executor.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use sluice_protocol::background::{ProcessInfo, StartRequest};
use sluice_protocol::{CommandStatus, ExecRequest};

use crate::background::Background;
use crate::exec::{DEFAULT_OUTPUT_LIMIT, DEFAULT_TIMEOUT_MS, MAX_OUTPUT_LIMIT};
use crate::processes::Processes;

const CANCELED: &str = "canceled";
const RESULT: &str = "result.json";

/// The commands of this daemon.
pub struct Commands {
    dir: PathBuf,
    /// The background process each command this daemon started runs as,
    /// until its result is kept.
    running: Mutex<HashMap<String, String>>,
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

/// The input a command is given at once, then closed: refused when it is
/// not the base64 it says it is.
pub fn stdin_of(request: &ExecRequest) -> Result<Vec<u8>, &'static str> {
    match (&request.stdin_b64, &request.stdin) {
        (Some(encoded), _) => {
            base64::engine::general_purpose::STANDARD.decode(encoded).map_err(|_| "stdinB64 is not base64")
        }
        (None, Some(text)) => Ok(text.clone().into_bytes()),
        (None, None) => Ok(Vec::new()),
    }
}

/// A command's exit code as a shell reports it: its own, or 128 and the
/// signal that ended it.
fn exit_code(process: &ProcessInfo) -> i32 {
    let signalled = process
        .signal
        .as_deref()
        .map(|name| 128 + sluice_protocol::session::signal_number(name).or_else(|| name.parse().ok()).unwrap_or(0));
    process.exit_code.or(signalled).unwrap_or(255)
}

impl Commands {
    pub fn new(state_dir: &Path) -> Commands {
        Commands { dir: state_dir.join("commands"), running: Mutex::new(HashMap::new()) }
    }

    pub fn status(&self, identity: &str) -> CommandStatus {
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

    /// Keeps a command's result beside its claim, for good.
    fn keep(&self, identity: &str, status: &CommandStatus) {
        let bytes = serde_json::to_vec(status).expect("a status serializes");
        if let Err(e) = write_atomically(&self.dir.join(identity).join(RESULT), &bytes) {
            log_line!("sluiced: a durable command's result could not be kept: {e}");
        }
        self.running.lock().unwrap().remove(identity);
    }

    /// Claims `identity` and starts the command as a background process,
    /// unless it was claimed (or fenced) before: then answers its status.
    pub fn start(
        self: &Arc<Self>,
        identity: &str,
        request: ExecRequest,
        workdir: &Path,
        background: &Arc<Background>,
        processes: &Processes,
    ) -> std::io::Result<CommandStatus> {
        std::fs::create_dir_all(&self.dir)?;
        match std::fs::create_dir(self.dir.join(identity)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(self.status(identity)),
            Err(e) => return Err(e),
        }
        let stdin = stdin_of(&request).unwrap_or_default();
        let limit = request.output_limit_bytes.unwrap_or(DEFAULT_OUTPUT_LIMIT).min(MAX_OUTPUT_LIMIT);
        let deadline = Duration::from_millis(request.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS));
        let start = StartRequest {
            argv: request.argv,
            cwd: request.cwd,
            env: request.env,
            name: Some(format!("command {identity}")),
        };
        let process = match background.start(start, workdir, &Default::default(), processes) {
            Ok(process) => process.id,
            Err(refusal) => {
                // A program that cannot start is a result, as a shell
                // reports it; anything else never ran.
                let status = if refusal.code == "cannot-start" {
                    CommandStatus {
                        state: "completed".into(),
                        exit_code: Some(127),
                        stdout_b64: Some(String::new()),
                        stderr_b64: Some(
                            base64::engine::general_purpose::STANDARD.encode(format!("sluiced: {}\n", refusal.message)),
                        ),
                        ..Default::default()
                    }
                } else {
                    CommandStatus { state: "canceled".into(), ..Default::default() }
                };
                self.keep(identity, &status);
                return Ok(CommandStatus { created: true, ..status });
            }
        };
        self.running.lock().unwrap().insert(identity.to_owned(), process.clone());
        let (commands, background, identity) = (self.clone(), background.clone(), identity.to_owned());
        tokio::spawn(async move {
            let _ = background.write_stdin(&process, &stdin, true).await;
            let ended = tokio::select! {
                ended = background.ended(&process) => ended,
                () = tokio::time::sleep(deadline) => {
                    let _ = background.signal(&process, "KILL");
                    background.ended(&process).await
                }
            };
            let canceled = commands.dir.join(&identity).join(CANCELED).exists();
            let status = match ended.and_then(|ended| Ok((ended, background.collected(&process, limit)?))) {
                Ok((ended, output)) => CommandStatus {
                    state: if canceled { "canceled" } else { "completed" }.into(),
                    created: false,
                    exit_code: Some(exit_code(&ended)),
                    output_truncated: output.truncated,
                    stdout_b64: Some(base64::engine::general_purpose::STANDARD.encode(&output.stdout)),
                    stderr_b64: Some(base64::engine::general_purpose::STANDARD.encode(&output.stderr)),
                },
                Err(_) => CommandStatus { state: "canceled".into(), ..Default::default() },
            };
            commands.keep(&identity, &status);
        });
        Ok(CommandStatus { state: "running".into(), created: true, ..Default::default() })
    }

    /// Cancels `identity`: kills it if it runs, and fences a start that
    /// has not happened yet. Idempotent; a finished result stays.
    pub fn cancel(&self, identity: &str, background: &Background) -> std::io::Result<CommandStatus> {
        std::fs::create_dir_all(&self.dir)?;
        let dir = self.dir.join(identity);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        if !dir.join(RESULT).exists() {
            std::fs::write(dir.join(CANCELED), b"")?;
            if let Some(process) = self.running.lock().unwrap().get(identity) {
                let _ = background.signal(process, "KILL");
            }
        }
        Ok(self.status(identity))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(script: &str) -> ExecRequest {
        ExecRequest { argv: vec!["sh".into(), "-c".into(), script.into()], ..Default::default() }
    }

    /// The status once the command's result is kept (bounded).
    async fn settled(commands: &Commands, identity: &str) -> CommandStatus {
        for _ in 0..200 {
            if commands.dir.join(identity).join(RESULT).exists() {
                return commands.status(identity);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{identity} has no result after 10 s");
    }

    fn decoded(b64: &Option<String>) -> String {
        String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64.as_deref().unwrap()).unwrap()).unwrap()
    }

    #[tokio::test]
    async fn a_command_runs_once_as_a_background_process_and_keeps_its_result() {
        let dir = tempfile::tempdir().unwrap();
        let (commands, background) = (Arc::new(Commands::new(dir.path())), Arc::new(Background::new(dir.path())));
        let processes = Processes::new(None);
        let mut once = request("cat; echo err >&2; exit 3");
        once.stdin = Some("in".into());
        let started = commands.start("c-1", once.clone(), dir.path(), &background, &processes).unwrap();
        assert_eq!((started.state.as_str(), started.created), ("running", true));
        let again = commands.start("c-1", request("touch twice"), dir.path(), &background, &processes).unwrap();
        assert!(!again.created, "a second start claims nothing");
        let listed = background.list();
        assert_eq!(listed.len(), 1, "one process: {listed:?}");
        assert_eq!(listed[0].name.as_deref(), Some("command c-1"));
        let done = settled(&commands, "c-1").await;
        assert_eq!((done.state.as_str(), done.exit_code), ("completed", Some(3)), "{done:?}");
        assert_eq!((decoded(&done.stdout_b64), decoded(&done.stderr_b64)), ("in".into(), "err\n".into()));
        assert!(!dir.path().join("twice").exists(), "the second body never ran");
        // Kept beside the claim: a later daemon reads the same result.
        assert_eq!(Commands::new(dir.path()).status("c-1"), done);

        // Canceled while it runs: killed, and said so.
        commands.start("c-2", request("sleep 30"), dir.path(), &background, &processes).unwrap();
        assert_eq!(commands.cancel("c-2", &background).unwrap().state, "canceled");
        let canceled = settled(&commands, "c-2").await;
        assert_eq!((canceled.state.as_str(), canceled.exit_code), ("canceled", Some(137)), "{canceled:?}");
        // Canceled first: the start that comes later is fenced.
        commands.cancel("c-3", &background).unwrap();
        let fenced = commands.start("c-3", request("touch fenced"), dir.path(), &background, &processes).unwrap();
        assert_eq!((fenced.state.as_str(), fenced.created), ("canceled", false));
        // Past its timeout: killed, a result like any other.
        let mut slow = request("sleep 30");
        slow.timeout_ms = Some(200);
        commands.start("c-4", slow, dir.path(), &background, &processes).unwrap();
        let timed_out = settled(&commands, "c-4").await;
        assert_eq!((timed_out.state.as_str(), timed_out.exit_code), ("completed", Some(137)), "{timed_out:?}");
        assert!(!dir.path().join("fenced").exists());
        assert_eq!(commands.status("never").state, "unknown");
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
