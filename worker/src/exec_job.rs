//! Running an exec run: its commands in order through the executor's
//! daemon, each result recorded as soon as it is known. A nonzero exit is
//! a result; only broken machinery fails the run.

use std::time::Duration;

use sluice_protocol::ExecRequest;
use sluice_store::{ExecCommandResult, ExecRunStatus, Lease, RunError, StoreError, WorkspaceStatus};

use crate::Worker;
use crate::daemon_client::DaemonClient;
use crate::reconcile::control_token;

/// Extra time the transport gets beyond a command's own timeout.
const TRANSPORT_SLACK: Duration = Duration::from_secs(30);
/// Used when a command names no timeout (the daemon's own default).
const DEFAULT_COMMAND_TIMEOUT_MS: u64 = 300_000;
/// The output kept per stream, whatever the daemon sent.
pub const MAX_STREAM_BYTES: usize = 1 << 20;

/// Keeps at most `MAX_STREAM_BYTES` of `text` (cut at a character
/// boundary) and says whether anything was cut.
fn cap_stream(mut text: String, daemon_says_cut: bool) -> (String, bool) {
    if text.len() <= MAX_STREAM_BYTES {
        return (text, daemon_says_cut);
    }
    let mut end = MAX_STREAM_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    (text, true)
}

fn broke(message: impl Into<String>, code: &str) -> RunError {
    RunError { message: message.into(), code: Some(code.to_owned()) }
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
    let client = match DaemonClient::new(&endpoint, control_token(worker, &run.attempt_id)) {
        Ok(c) => c,
        Err(e) => {
            store.finish_exec_run(lease, &run.id, None, Some(&broke(e.to_string(), "transport"))).await?;
            return Ok(None);
        }
    };

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
        };
        let timeout = Duration::from_millis(command.timeout_ms.unwrap_or(DEFAULT_COMMAND_TIMEOUT_MS)) + TRANSPORT_SLACK;
        match client.exec(&request, timeout).await {
            Ok(r) => {
                let (stdout, stdout_truncated) = cap_stream(r.stdout, r.stdout_truncated);
                let (stderr, stderr_truncated) = cap_stream(r.stderr, r.stderr_truncated);
                results.push(ExecCommandResult {
                    argv: command.argv.clone(),
                    exit_code: i64::from(r.exit_code),
                    stdout,
                    stderr,
                    stdout_truncated,
                    stderr_truncated,
                    timed_out: r.timed_out,
                });
                store.record_exec_results(lease, &run.id, &results).await?;
            }
            Err(e) => {
                // What the daemon sent is not quoted: only what went wrong.
                tracing::warn!(run = %run.id, workspace = %run.workspace_id, error = %e, "exec through the daemon failed");
                let error = broke(format!("command {} of {}: {e}", results.len() + 1, run.commands.len()), "transport");
                store.finish_exec_run(lease, &run.id, results.last().map(|r| r.exit_code), Some(&error)).await?;
                return Ok(None);
            }
        }
    }
    store.finish_exec_run(lease, &run.id, results.last().map(|r| r.exit_code), None).await?;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_capped_at_a_character_boundary_whatever_the_daemon_says() {
        let short = "é".repeat(10);
        assert_eq!(cap_stream(short.clone(), false), (short, false));
        let (kept, cut) = cap_stream("é".repeat(MAX_STREAM_BYTES), false);
        assert!(cut, "a daemon that claims nothing was cut is overruled");
        assert_eq!(kept.len(), MAX_STREAM_BYTES);
        let (kept, cut) = cap_stream(format!("a{}", "é".repeat(MAX_STREAM_BYTES)), false);
        assert!(cut);
        assert_eq!(kept.len(), MAX_STREAM_BYTES - 1, "a two-byte character is not split");
    }
}
