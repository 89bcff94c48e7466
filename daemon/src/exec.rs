//! Running one command for the control API's `exec`: argv without a shell,
//! in its own process group, with stdin, a timeout and capped output.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use sluice_protocol::session::FrameKind;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::DaemonError;
use crate::processes::{Processes, SpawnError};

/// Output kept per stream when the request names no limit.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1 << 20;
/// The most output a request may ask to keep per stream.
pub const MAX_OUTPUT_LIMIT: usize = 8 << 20;
/// How long a command may run when the request names no timeout.
pub const DEFAULT_TIMEOUT_MS: u64 = 300_000;

pub use sluice_protocol::{ExecRequest, ExecResponse};

/// Where a command's output goes as it is read, besides its answer: each
/// kept chunk, as the session frame of its stream (`Stdout`, `Stderr`).
pub type OutputSink = tokio::sync::mpsc::Sender<(FrameKind, Vec<u8>)>;

/// Reads `reader` to its end, keeping at most `limit` bytes (each kept
/// chunk also sent to `sink` as `kind`): the rest is drained so the writer
/// never blocks on a full pipe.
async fn read_capped(
    mut reader: impl AsyncRead + Unpin,
    limit: usize,
    sink: Option<(OutputSink, FrameKind)>,
) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = [0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = limit.saturating_sub(kept.len());
                if n > room {
                    truncated = true;
                }
                let fresh = &buf[..n.min(room)];
                if let Some((sink, kind)) = &sink
                    && !fresh.is_empty()
                {
                    // A reader that went away only stops the copy, not the command.
                    let _ = sink.send((*kind, fresh.to_vec())).await;
                }
                kept.extend_from_slice(fresh);
            }
        }
    }
    (kept, truncated)
}

pub(crate) fn resolve_cwd(workdir: &Path, cwd: Option<&str>) -> PathBuf {
    match cwd {
        None => workdir.to_path_buf(),
        Some(c) if Path::new(c).is_absolute() => PathBuf::from(c),
        Some(c) => workdir.join(c),
    }
}

/// Runs one command to its end (or its timeout) and reports what it did.
pub async fn run(workdir: &Path, request: ExecRequest, processes: &Processes) -> Result<ExecResponse, DaemonError> {
    run_until(workdir, request, processes, None, None).await
}

/// As [`run`]; the command's process group is killed when `cancel` turns
/// true, and its output is also sent to `sink` as it is read.
pub async fn run_until(
    workdir: &Path,
    request: ExecRequest,
    processes: &Processes,
    cancel: Option<tokio::sync::watch::Receiver<bool>>,
    sink: Option<OutputSink>,
) -> Result<ExecResponse, DaemonError> {
    let Some(program) = request.argv.first() else { return Err(DaemonError::EmptyArgv) };
    let limit = request.output_limit_bytes.unwrap_or(DEFAULT_OUTPUT_LIMIT);
    if limit > MAX_OUTPUT_LIMIT {
        return Err(DaemonError::OutputLimit);
    }
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let stdin: Option<Vec<u8>> = match (&request.stdin_b64, &request.stdin) {
        (Some(encoded), _) => Some(b64.decode(encoded).map_err(|_| DaemonError::Stdin)?),
        (None, Some(text)) => Some(text.clone().into_bytes()),
        (None, None) => None,
    };
    let mut command = Command::new(program);
    command
        .args(&request.argv[1..])
        .current_dir(resolve_cwd(workdir, request.cwd.as_deref()))
        .envs(&request.env)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    crate::workload::confine(&mut command, processes.ids());
    let mut child = match processes.spawn(&mut command) {
        Ok(child) => child,
        Err(SpawnError::Finalized) => return Err(DaemonError::Finalized),
        Err(SpawnError::Io(e)) => {
            // A program that cannot start is a result, as a shell reports it.
            let code = if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
            return Ok(ExecResponse::exited(code, String::new(), format!("sluiced: cannot run {program}: {e}\n")));
        }
    };
    let pgid = child.id();
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A command that does not read its input must not stall the run.
        tokio::spawn(async move {
            let _ = pipe.write_all(&bytes).await;
        });
    }
    let sinks = sink.map(|s| ((s.clone(), FrameKind::Stdout), (s, FrameKind::Stderr)));
    let (stdout_sink, stderr_sink) = sinks.map_or((None, None), |(out, err)| (Some(out), Some(err)));
    let stdout = tokio::spawn(read_capped(child.stdout.take().expect("piped"), limit, stdout_sink));
    let stderr = tokio::spawn(read_capped(child.stderr.take().expect("piped"), limit, stderr_sink));
    let timeout = Duration::from_millis(request.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS));
    let canceled = async move {
        match cancel {
            Some(mut cancel) => {
                let _ = cancel.wait_for(|c| *c).await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    let (status, timed_out) = tokio::select! {
        status = tokio::time::timeout(timeout, child.wait()) => match status {
            Ok(status) => (status.ok(), false),
            Err(_) => {
                if let Some(pgid) = pgid {
                    kill_group(pgid);
                }
                (child.wait().await.ok(), true)
            }
        },
        _ = canceled => {
            if let Some(pgid) = pgid {
                kill_group(pgid);
            }
            (child.wait().await.ok(), false)
        }
    };
    // The group may have left children holding the pipes open.
    if let Some(pgid) = pgid {
        kill_group(pgid);
    }
    let (stdout, stdout_truncated) = stdout.await.unwrap_or_default();
    let (stderr, stderr_truncated) = stderr.await.unwrap_or_default();
    let exit_code = match status {
        Some(s) => s.code().or_else(|| s.signal().map(|n| 128 + n)).unwrap_or(255),
        None => 255,
    };
    let stopped_by_final = pgid.is_some_and(|pid| processes.was_stopped(pid));
    if request.binary {
        return Ok(ExecResponse {
            exit_code,
            stdout: String::new(),
            stderr: String::new(),
            stdout_truncated,
            stderr_truncated,
            timed_out,
            stdout_b64: Some(b64.encode(&stdout)),
            stderr_b64: Some(b64.encode(&stderr)),
            stopped_by_final,
        });
    }
    Ok(ExecResponse {
        exit_code,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        stdout_truncated,
        stderr_truncated,
        timed_out,
        stdout_b64: None,
        stderr_b64: None,
        stopped_by_final,
    })
}

fn kill_group(pgid: u32) {
    if let Ok(pgid) = i32::try_from(pgid) {
        // SAFETY: killpg only sends a signal; a stale group id fails harmlessly.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run_here(dir: &Path, request: ExecRequest) -> Result<ExecResponse, DaemonError> {
        run(dir, request, &Processes::new(None)).await
    }

    fn req(argv: &[&str]) -> ExecRequest {
        ExecRequest { argv: argv.iter().map(|s| s.to_string()).collect(), ..ExecRequest::default() }
    }

    #[tokio::test]
    async fn exit_codes_signals_stdin_and_cwd() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let r = run_here(dir.path(), req(&["sh", "-c", "exit 7"])).await.unwrap();
        assert_eq!(r.exit_code, 7);
        let r = run_here(dir.path(), req(&["sh", "-c", "kill -TERM $$"])).await.unwrap();
        assert_eq!(r.exit_code, 128 + 15, "a signal reads 128 + n");
        let mut with_input = req(&["cat"]);
        with_input.stdin = Some("fed through stdin".into());
        assert_eq!(run_here(dir.path(), with_input).await.unwrap().stdout, "fed through stdin");
        let mut in_sub = req(&["pwd"]);
        in_sub.cwd = Some("sub".into());
        assert!(run_here(dir.path(), in_sub).await.unwrap().stdout.trim_end().ends_with("/sub"));
        let mut with_env = req(&["sh", "-c", "printf %s \"$GREETING\""]);
        with_env.env.insert("GREETING".into(), "hello".into());
        assert_eq!(run_here(dir.path(), with_env).await.unwrap().stdout, "hello");
        let missing = run_here(dir.path(), req(&["no-such-program-here"])).await.unwrap();
        assert_eq!(missing.exit_code, 127);
    }

    #[tokio::test]
    async fn output_is_capped_and_flagged_and_timeouts_kill_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let mut loud = req(&["sh", "-c", "head -c 100000 /dev/zero; echo done >&2"]);
        loud.output_limit_bytes = Some(1000);
        let r = run_here(dir.path(), loud).await.unwrap();
        assert_eq!((r.stdout.len(), r.stdout_truncated), (1000, true));
        assert_eq!((r.stderr.as_str(), r.stderr_truncated), ("done\n", false));
        assert_eq!(r.exit_code, 0);

        let mut slow = req(&["sh", "-c", "sleep 30 & sleep 30"]);
        slow.timeout_ms = Some(200);
        let started = std::time::Instant::now();
        let r = run_here(dir.path(), slow).await.unwrap();
        assert!(r.timed_out);
        assert_eq!(r.exit_code, 128 + 9);
        assert!(started.elapsed() < Duration::from_secs(20), "the background sleep was killed with its group");
    }
}
