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

use sluice_executor::{ExecutorError, Executors, Target};

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
        let (answered, broken) = match executors.exec(target, request, timeout).await {
            Ok(answer) => {
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
            Next::Command => store.record_exec_results(lease, &run.id, &results).await?,
            // The last result (or the breakage) and the run's end, in one commit.
            Next::End(error) => return store.finish_exec_run(lease, &run.id, Some(&results), error.as_ref()).await,
        }
    }
    store.finish_exec_run(lease, &run.id, Some(&results), None).await
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
