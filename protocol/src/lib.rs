//! The control protocol between the control plane and an executor's daemon
//! (sluiced): the boot secret the runtime delivers, the control API's paths,
//! and the bodies each side sends. Types only, so the daemon, the worker and
//! the API agree on one definition; the daemon's answers are evidence the
//! control plane bounds and checks, never instructions.

pub mod attest;
pub mod background;
pub mod capture;
pub mod egress;
pub mod names;
pub mod registrar;
pub mod session;
pub mod snapshot;
pub mod stamp;
pub mod tar;
pub mod worktree;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use stamp::{Origin, StampOrder};

/// `GET`: whether the daemon answers (with its control token).
pub const HEALTH: &str = "/health";
/// `GET`: a [`Status`].
pub const STATUS: &str = "/status";
/// `GET`: a stream that stays open while the daemon serves: its head at
/// once, then nothing until the daemon begins to end, when it writes
/// [`WATCH_ENDING`] and closes. The control plane holds one per ready
/// executor instead of asking on a timer: a closed stream (the daemon died,
/// or is ending) is its cue to look.
pub const WATCH: &str = "/watch";
/// The line a watch stream carries when the daemon begins to end.
pub const WATCH_ENDING: &str = "ending\n";
/// `GET`: an [`Activity`] (a look, not a use).
pub const ACTIVITY: &str = "/activity";

/// How the executor is used, as its daemon counts: every control call
/// but a look (health, status, watch, activity) and every session frame
/// is a use; a call still under way and an open session (an exec that
/// runs, an SSH or SFTP session, a preview's connection) keep it in use.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Activity {
    /// Milliseconds since the last use ended or began.
    pub idle_ms: u64,
    /// Calls and sessions open now.
    pub in_use: u32,
}

/// `POST` an [`ExecRequest`]: an [`ExecResponse`].
pub const EXEC: &str = "/exec";

/// `PUT` an [`ExecRequest`] to `/commands/{identity}`: claims the identity
/// (a second claim launches nothing) and answers its [`CommandStatus`];
/// `GET` answers it (`unknown` for an identity never claimed);
/// `POST …/cancel` cancels it, fencing a launch that has not happened yet.
pub const COMMANDS: &str = "/commands";

/// `POST` an [`AssignRequest`] to a pooled daemon (started with no run):
/// it becomes the run's executor and starts the workload; 204. Answered
/// without a token only while the daemon is unassigned; after that, with
/// the assigned run's token, again for the same launch, and refused
/// (`assigned`) for any other.
pub const ASSIGN: &str = "/assign";

/// What makes a pooled daemon one run's executor.
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AssignRequest {
    /// The launch identity the daemon stamps its answers with from now on.
    pub launch: String,
    pub boot_secret: BootSecret,
    /// The managed process's argv (none when empty).
    #[serde(default)]
    pub command: Vec<String>,
    /// Its plain environment (the spec's `env`), which exec'd commands and
    /// sessions get too.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

impl std::fmt::Debug for AssignRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssignRequest").field("launch", &self.launch).finish_non_exhaustive()
    }
}

/// A durable command's state and, once it ended, its result.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CommandStatus {
    /// `starting`, `running`, `completed`, `canceled` or `unknown`.
    pub state: String,
    /// Whether this call made the claim.
    #[serde(default)]
    pub created: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout_b64: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_b64: Option<String>,
    #[serde(default)]
    pub output_truncated: bool,
}

/// The boot secret file a runtime delivers into the executor, readable by
/// the daemon alone: the control token its API checks, and the secret
/// environment of the managed process.
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BootSecret {
    pub control_token: String,
    #[serde(default)]
    pub secret_env: BTreeMap<String, String>,
    /// The capture session's token, for a capture-sourced workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture_token: Option<String>,
    /// Environment every process of the executor gets: the managed
    /// process, exec and durable commands (an execution broker's `env`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub exec_env: BTreeMap<String, String>,
    /// Bounds the daemon keeps itself, so they hold while the control plane
    /// is down: it ends the executor past them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<ExecutorBounds>,
}

/// A hard end and an idle timeout an executor enforces on its own.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutorBounds {
    /// Unix ms after which the executor ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ends_at_unix_ms: Option<u64>,
    /// The executor ends this long after the last control call that used it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_ms: Option<u64>,
}

impl std::fmt::Debug for BootSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BootSecret([redacted])")
    }
}

/// What the managed process (`spec.command`) is doing.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase", tag = "state")]
pub enum ManagedState {
    /// The spec names no command.
    None,
    Running {
        pid: u32,
    },
    Exited {
        exit_code: i32,
    },
    /// It could not be started.
    Failed {
        message: String,
    },
}

/// The answer to [`STATUS`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub origin: Origin,
    pub managed: ManagedState,
}

/// One command for [`EXEC`]: argv run without a shell, as the workload.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecRequest {
    pub argv: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_limit_bytes: Option<usize>,
    /// Bytes for stdin, base64 (in place of `stdin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin_b64: Option<String>,
    /// Answer the output as bytes, base64 (`stdoutB64`, `stderrB64`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
}

/// What one command did.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ExecResponse {
    /// The exit code; killed by signal `n` reads `128 + n`.
    pub exit_code: i32,
    pub stdout: String,
    pub stderr: String,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    /// Absent from answers recorded before daemons reported it.
    #[serde(default)]
    pub timed_out: bool,
    /// The output as bytes, base64, when the request asked for `binary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout_b64: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_b64: Option<String>,
    /// The command was still running when a final flush began, and the
    /// flush ended it (its exit code says how).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped_by_final: bool,
}

impl ExecResponse {
    /// A command that exited with `exit_code` and wrote `stdout` and
    /// `stderr` as text, nothing cut, within its time.
    pub fn exited(exit_code: i32, stdout: String, stderr: String) -> ExecResponse {
        ExecResponse {
            exit_code,
            stdout,
            stderr,
            stdout_truncated: false,
            stderr_truncated: false,
            timed_out: false,
            stdout_b64: None,
            stderr_b64: None,
            stopped_by_final: false,
        }
    }
}

/// Why a daemon refused a call: the closed set callers match on. The
/// daemon turns each into its HTTP status in one place; callers read the
/// code, never the status.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum RefusalCode {
    /// No valid control token.
    Unauthenticated,
    /// The request is malformed or names something outside the executor's rules.
    Invalid,
    /// The daemon is still restoring the capture session's head.
    Restoring,
    /// The executor has no capture session.
    NoCapture,
    /// A final flush began: the executor takes no new work.
    ExecutorFinalized,
    /// A re-plan or a bind could not be carried out.
    NotApplied,
    /// A command whose program or directory is missing.
    CommandNotStartable,
    /// A snapshot scan the daemon no longer holds.
    ScanGone,
    /// The directory to snapshot cannot be read whole.
    Unreadable,
    /// The daemon failed on its side.
    Internal,
    /// A pooled daemon not yet assigned a run: it answers nothing else.
    Pooled,
    /// The pooled daemon was assigned another launch.
    Assigned,
}

impl RefusalCode {
    /// The code as it is sent.
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalCode::Unauthenticated => "unauthenticated",
            RefusalCode::Invalid => "invalid",
            RefusalCode::Restoring => "restoring",
            RefusalCode::NoCapture => "no-capture",
            RefusalCode::ExecutorFinalized => "executor-finalized",
            RefusalCode::NotApplied => "not-applied",
            RefusalCode::CommandNotStartable => "command-not-startable",
            RefusalCode::ScanGone => "scan-gone",
            RefusalCode::Unreadable => "unreadable",
            RefusalCode::Internal => "internal",
            RefusalCode::Pooled => "pooled",
            RefusalCode::Assigned => "assigned",
        }
    }

    pub const ALL: [RefusalCode; 12] = [
        RefusalCode::Unauthenticated,
        RefusalCode::Invalid,
        RefusalCode::Restoring,
        RefusalCode::NoCapture,
        RefusalCode::ExecutorFinalized,
        RefusalCode::NotApplied,
        RefusalCode::CommandNotStartable,
        RefusalCode::ScanGone,
        RefusalCode::Unreadable,
        RefusalCode::Internal,
        RefusalCode::Pooled,
        RefusalCode::Assigned,
    ];
}

/// A refusal from the daemon (any non-2xx answer).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Refusal {
    pub code: RefusalCode,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_codes_are_kebab_case_on_the_wire() {
        for code in RefusalCode::ALL {
            let text = serde_json::to_string(&code).unwrap();
            assert!(text.chars().all(|c| c == '"' || c == '-' || c.is_ascii_lowercase()), "{text}");
            assert_eq!(serde_json::from_str::<RefusalCode>(&text).unwrap(), code);
            assert_eq!(text, format!("\"{}\"", code.as_str()));
        }
        let refusal: Refusal = serde_json::from_str(r#"{"code":"executor-finalized","message":"m"}"#).unwrap();
        assert_eq!(refusal.code, RefusalCode::ExecutorFinalized);
    }

    #[test]
    fn shapes_on_the_wire() {
        let status = Status {
            origin: Origin {
                epoch: 2,
                launch: "l".into(),
                boot_id: "b".into(),
                boot_generation: 1,
                observation: 7,
                head_n: None,
            },
            managed: ManagedState::Exited { exit_code: 143 },
        };
        let text = serde_json::to_value(&status).unwrap();
        assert_eq!(
            text,
            serde_json::json!({
                "origin": {"epoch": 2, "launch": "l", "bootId": "b", "bootGeneration": 1, "observation": 7},
                "managed": {"state": "exited", "exitCode": 143}
            })
        );
        let request: ExecRequest = serde_json::from_str(r#"{"argv": ["true"], "timeoutMs": 5}"#).unwrap();
        assert_eq!(request.timeout_ms, Some(5));
        assert!(serde_json::from_str::<ExecRequest>(r#"{"argv": [], "shell": true}"#).is_err(), "unknown fields");
        let secret = BootSecret {
            control_token: "t0p-secret".into(),
            secret_env: BTreeMap::new(),
            capture_token: Some("c4pture".into()),
            exec_env: BTreeMap::new(),
            bounds: None,
        };
        assert!(!format!("{secret:?}").contains("t0p") && !format!("{secret:?}").contains("c4p"));
    }
}
