//! Running an exec run: its commands in order through the executor's
//! daemon, each result recorded as soon as it is known. A nonzero exit is
//! a result; only broken machinery fails the run.

use std::time::Duration;

use sluice_executor::{ExecutorError, Target};
use sluice_protocol::{ExecRequest, ExecResponse, RefusalCode};
use sluice_store::{ExecCommandResult, ExecRunStatus, Lease, RunError, StoreError, WorkspaceStatus};

use crate::Worker;

/// Extra time the transport gets beyond a command's own timeout.
const TRANSPORT_SLACK: Duration = Duration::from_secs(30);
/// Used when a command names no timeout (the daemon's own default).
const DEFAULT_COMMAND_TIMEOUT_MS: u64 = 300_000;
/// The code of a run that an executor's final flush ended.
const FINAL_FLUSH: &str = "final-flush";
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

fn broke(message: impl Into<String>, code: &str) -> RunError {
    RunError { message: message.into(), code: Some(code.to_owned()) }
}

fn last_exit_code(results: &[ExecCommandResult]) -> Option<i64> {
    results.last().map(|r| i64::from(r.outcome.exit_code))
}

pub async fn run(worker: &Worker, lease: &Lease) -> Result<Option<i64>, StoreError> {
    let store = &worker.store;
    let Some(run) = store.load_exec_run(&lease.subject).await? else { return Ok(None) };
    match run.status {
        ExecRunStatus::Completed | ExecRunStatus::Failed => return Ok(None),
        ExecRunStatus::Running => {
            // A worker took it up and was lost mid-command: running the
            // commands again could repeat effects, so the run ends here with
            // what was recorded.
            let error =
                broke("the worker running these commands was lost; results recorded so far are kept", "worker-lost");
            store.finish_exec_run(lease, &run.id, None, Some(&error)).await?;
            return Ok(None);
        }
        ExecRunStatus::Queued => {}
    }
    store.start_exec_run(lease, &run.id).await?;

    let state = store.load_reconcile_state(&run.workspace_id).await?;
    let endpoint = state.as_ref().and_then(|s| {
        let current = s.current_run.as_ref()?;
        let usable = current.id == run.attempt_id
            && current.status == WorkspaceStatus::Ready
            && s.workspace.status == WorkspaceStatus::Ready;
        usable.then(|| current.runtime.as_ref()?.endpoint.clone()).flatten()
    });
    let Some(endpoint) = endpoint else {
        let error = broke("the workspace's executor is no longer ready", "no-live-runtime");
        store.finish_exec_run(lease, &run.id, None, Some(&error)).await?;
        return Ok(None);
    };
    let target = Target { run_id: &run.attempt_id, endpoint: &endpoint };

    let stdin = store.open_exec_stdin(&run.id).await?;
    let mut results: Vec<ExecCommandResult> = Vec::with_capacity(run.commands.len());
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
        let of = run.commands.len();
        match worker.executors.exec(target, request, timeout).await {
            Ok(answer) => {
                let stopped = answer.stopped_by_final;
                results.push(ExecCommandResult { argv: command.argv.clone(), outcome: bounded(answer) });
                store.record_exec_results(lease, &run.id, &results).await?;
                if stopped {
                    let message = format!("the executor's final flush stopped command {} of {of}", i + 1);
                    let error = broke(message, FINAL_FLUSH);
                    store.finish_exec_run(lease, &run.id, last_exit_code(&results), Some(&error)).await?;
                    return Ok(None);
                }
            }
            Err(ExecutorError::Refused { code: RefusalCode::ExecutorFinalized, .. }) => {
                let message = format!(
                    "the executor's final flush began before command {} of {of} could start: it takes no new work",
                    i + 1
                );
                let error = broke(message, FINAL_FLUSH);
                store.finish_exec_run(lease, &run.id, last_exit_code(&results), Some(&error)).await?;
                return Ok(None);
            }
            Err(e) => {
                // What the daemon sent is not quoted: only what went wrong.
                tracing::warn!(run = %run.id, workspace = %run.workspace_id, error = %e, "exec through the daemon failed");
                let error = broke(format!("command {} of {}: {e}", results.len() + 1, run.commands.len()), "transport");
                store.finish_exec_run(lease, &run.id, last_exit_code(&results), Some(&error)).await?;
                return Ok(None);
            }
        }
    }
    store.finish_exec_run(lease, &run.id, last_exit_code(&results), None).await?;
    Ok(None)
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
