//! Running an exec run: its commands in order through the executor's
//! daemon, each result recorded as soon as it is known, and the run ended
//! with its job in one transaction. A nonzero exit is a result; only broken
//! machinery fails the run. Whoever holds the run's job runs it: a worker
//! that claimed it from the queue, or the API process that created it
//! taken ([`sluice_store::Store::create_taken_exec_run`]).

use std::sync::Arc;
use std::time::Duration;

use sluice_domain::exec_run::{self, Answered, Next};
use sluice_protocol::{ExecRequest, ExecResponse, RefusalCode};
use sluice_store::{ExecCommandResult, ExecRun, Lease, Secret, Store, StoreError, TakenExecRun};

use sluice_executor::streamed::{OutputChunk, OutputStream};
use sluice_executor::{ExecutorError, Executors, Target};
use sluice_store::exec_output::OutputKind;
use tokio::sync::mpsc;

/// How long output waits to be recorded with what follows it.
const OUTPUT_BATCH_WAIT: Duration = Duration::from_millis(100);
/// How much output is recorded at once at most.
const OUTPUT_BATCH_BYTES: usize = 256 * 1024;

/// Extra time the transport gets beyond a command's own timeout.
const TRANSPORT_SLACK: Duration = Duration::from_secs(30);
/// Used when a command names no timeout (the daemon's own default).
const DEFAULT_COMMAND_TIMEOUT_MS: u64 = 300_000;
/// The output kept per stream, whatever the daemon sent.
pub const MAX_STREAM_BYTES: usize = 1 << 20;

/// Keeps at most `MAX_STREAM_BYTES` of `text` (cut at a character
/// boundary); sets `cut` when anything was cut.
fn cap_stream(text: &mut String, cut: &mut bool) {
    if text.len() <= MAX_STREAM_BYTES {
        return;
    }
    let mut end = MAX_STREAM_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    *cut = true;
}

/// The daemon's answer with each stream held to `MAX_STREAM_BYTES`.
fn bounded(mut answer: ExecResponse) -> ExecResponse {
    cap_stream(&mut answer.stdout, &mut answer.stdout_truncated);
    cap_stream(&mut answer.stderr, &mut answer.stderr_truncated);
    answer
}

/// A stream's bytes not yet recorded: kept whole up to the bound, and cut
/// only at character boundaries (a character split across chunks waits
/// for its rest).
#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    /// Bytes of this stream taken so far, recorded or pending.
    taken: usize,
}

impl Pending {
    fn take(&mut self, bytes: &[u8]) {
        let room = MAX_STREAM_BYTES.saturating_sub(self.taken);
        let kept = &bytes[..bytes.len().min(room)];
        self.taken += kept.len();
        self.bytes.extend_from_slice(kept);
    }

    /// The text ready to record; at the `end`, all of it.
    fn text(&mut self, end: bool) -> Option<String> {
        let ready = match std::str::from_utf8(&self.bytes) {
            Ok(_) => self.bytes.len(),
            Err(e) if e.error_len().is_none() && !end => e.valid_up_to(),
            Err(_) => self.bytes.len(),
        };
        if ready == 0 {
            return None;
        }
        let rest = self.bytes.split_off(ready);
        let text = String::from_utf8_lossy(&std::mem::replace(&mut self.bytes, rest)).into_owned();
        Some(text)
    }
}

/// Records command `command`'s output as it comes, in batches, until its
/// sender is done. A failure to record stops the recording (the run goes
/// on; its results are recorded as before).
async fn record_output(
    store: &Store,
    lease: &Lease,
    run: &ExecRun,
    command: usize,
    mut output: mpsc::Receiver<OutputChunk>,
) {
    let mut streams = [Pending::default(), Pending::default()];
    let mut failed = false;
    let mut open = true;
    while open {
        // The first chunk of a batch, then whatever follows within the wait.
        match output.recv().await {
            Some(chunk) => streams[stream_index(chunk.stream)].take(&chunk.bytes),
            None => open = false,
        }
        let deadline = tokio::time::Instant::now() + OUTPUT_BATCH_WAIT;
        while open && streams.iter().map(|s| s.bytes.len()).sum::<usize>() < OUTPUT_BATCH_BYTES {
            match tokio::time::timeout_at(deadline, output.recv()).await {
                Ok(Some(chunk)) => streams[stream_index(chunk.stream)].take(&chunk.bytes),
                Ok(None) => open = false,
                Err(_) => break,
            }
        }
        let mut records = Vec::new();
        for (kind, pending) in [OutputKind::Stdout, OutputKind::Stderr].into_iter().zip(streams.iter_mut()) {
            if let Some(text) = pending.text(!open) {
                records.push((command as i64, kind, text));
            }
        }
        if !failed && let Err(e) = store.append_exec_output(lease, &run.id, &records).await {
            tracing::warn!(run = %run.id, error = %e, "could not record the exec run's output as it came");
            failed = true;
        }
    }
}

fn stream_index(stream: OutputStream) -> usize {
    match stream {
        OutputStream::Stdout => 0,
        OutputStream::Stderr => 1,
    }
}

/// How a command ended, as its stream says it.
fn exit_record(command: usize, answer: &ExecResponse) -> (i64, OutputKind, String) {
    let body = serde_json::json!({
        "command": command,
        "exitCode": answer.exit_code,
        "timedOut": answer.timed_out,
        "stdoutTruncated": answer.stdout_truncated,
        "stderrTruncated": answer.stderr_truncated,
    });
    (command as i64, OutputKind::Exit, body.to_string())
}

/// Runs `run`'s commands in its executor at `target` under `lease`, with
/// each command's input in `stdin`, and ends the run and its job.
pub async fn run_commands(
    store: &Store,
    executors: &dyn Executors,
    lease: &Lease,
    run: &ExecRun,
    target: Target<'_>,
    stdin: &[Option<Secret<String>>],
) -> Result<(), StoreError> {
    let of = run.commands.len();
    let mut results: Vec<ExecCommandResult> = Vec::with_capacity(of);
    for (i, command) in run.commands.iter().enumerate() {
        let request = ExecRequest {
            argv: command.argv.clone(),
            cwd: command.cwd.clone(),
            env: command.env.clone().unwrap_or_default(),
            stdin: stdin.get(i).and_then(Option::as_ref).map(|s| s.expose().clone()),
            timeout_ms: command.timeout_ms,
            output_limit_bytes: None,
            ..ExecRequest::default()
        };
        let timeout = Duration::from_millis(command.timeout_ms.unwrap_or(DEFAULT_COMMAND_TIMEOUT_MS)) + TRANSPORT_SLACK;
        let (sink, output) = mpsc::channel(64);
        let (answer, ()) = tokio::join!(
            executors.exec_streaming(target, request, timeout, sink),
            record_output(store, lease, run, i, output)
        );
        // How the command ended goes into its stream with its result.
        let mut ended = Vec::new();
        let (answered, broken) = match answer {
            Ok(answer) => {
                ended.push(exit_record(i, &answer));
                let answered = Answered::Exited { stopped_by_final: answer.stopped_by_final };
                results.push(ExecCommandResult { argv: command.argv.clone(), outcome: bounded(answer) });
                (answered, None)
            }
            Err(ExecutorError::Refused { code: RefusalCode::ExecutorFinalized, .. }) => (Answered::Finalized, None),
            Err(e) => {
                // What the daemon sent is not quoted: only what went wrong.
                tracing::warn!(run = %run.id, workspace = %run.workspace_id, error = %e, "exec through the daemon failed");
                (Answered::Broke, Some(e))
            }
        };
        let broken = || broken.map(|e| e.to_string()).unwrap_or_default();
        match exec_run::after(i, of, answered, broken) {
            Next::Command => store.record_exec_results(lease, &run.id, &results, &ended).await?,
            // The last result (or the breakage) and the run's end, in one commit.
            Next::End(error) => {
                return store.finish_exec_run(lease, &run.id, Some(&results), error.as_ref(), &ended).await;
            }
        }
    }
    store.finish_exec_run(lease, &run.id, Some(&results), None, &[]).await
}

/// Runs a run its creator took ([`sluice_store::Store::create_taken_exec_run`])
/// to its end, renewing its lease of `lease_ms` while it runs. A failure to
/// record leaves the run to its lease: once it runs out, the worker that
/// claims the job ends the run with what was recorded.
pub async fn run_taken(
    store: Store,
    executors: Arc<dyn Executors>,
    taken: TakenExecRun,
    stdin: Vec<Option<String>>,
    lease_ms: i64,
) {
    let kept = store.keep_renewed(taken.lease.clone(), lease_ms);
    let stdin: Vec<Option<Secret<String>>> = stdin.into_iter().map(|s| s.map(Secret::new)).collect();
    let target = Target { run_id: &taken.run.attempt_id, endpoint: &taken.endpoint };
    let ran = run_commands(&store, executors.as_ref(), &taken.lease, &taken.run, target, &stdin).await;
    drop(kept);
    if let Err(e) = ran {
        tracing::warn!(run = %taken.run.id, error = %e, "could not record the exec run; its lease will run out and a worker ends it");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(stdout: String, stderr: String) -> ExecResponse {
        ExecResponse::exited(0, stdout, stderr)
    }

    /// Output is recorded cut at character boundaries (a character split
    /// between chunks waits for its rest), and no more than the bound of a
    /// stream is taken, however much the daemon sends.
    #[test]
    fn output_is_recorded_whole_characters_within_the_bound() {
        let mut pending = Pending::default();
        let e_acute = "é".as_bytes();
        pending.take(&[b"ab".as_slice(), &e_acute[..1]].concat());
        assert_eq!(pending.text(false).as_deref(), Some("ab"));
        assert_eq!(pending.text(false), None, "half a character waits");
        pending.take(&e_acute[1..]);
        assert_eq!(pending.text(false).as_deref(), Some("é"));
        pending.take(&[0xff, b'x']);
        assert_eq!(pending.text(false).as_deref(), Some("\u{fffd}x"), "bytes that are no character are replaced");
        pending.take(&e_acute[..1]);
        assert_eq!(pending.text(true).as_deref(), Some("\u{fffd}"), "at the end, what is left");

        let mut flood = Pending::default();
        for _ in 0..3 {
            flood.take(&vec![b'x'; MAX_STREAM_BYTES / 2 + 1]);
        }
        assert_eq!(flood.text(true).map(|t| t.len()), Some(MAX_STREAM_BYTES));
        flood.take(b"more");
        assert_eq!(flood.text(true), None, "nothing past the bound");
    }

    #[test]
    fn streams_are_capped_at_a_character_boundary_whatever_the_daemon_says() {
        let short = "é".repeat(10);
        assert_eq!(bounded(answer(short.clone(), short.clone())), answer(short.clone(), short));
        let kept = bounded(answer("é".repeat(MAX_STREAM_BYTES), "ok".into()));
        assert!(kept.stdout_truncated, "a daemon that claims nothing was cut is overruled");
        assert_eq!(kept.stdout.len(), MAX_STREAM_BYTES);
        assert_eq!((kept.stderr.as_str(), kept.stderr_truncated), ("ok", false));
        let kept = bounded(answer("x".into(), format!("a{}", "é".repeat(MAX_STREAM_BYTES))));
        assert!(kept.stderr_truncated);
        assert_eq!(kept.stderr.len(), MAX_STREAM_BYTES - 1, "a two-byte character is not split");
    }
}
