//! Processes an executor's daemon keeps running for the control plane
//! (see [`crate::session::Open::Process`]): started, listed, signalled,
//! fed input, and their output read from a position.

use serde::{Deserialize, Serialize};

/// One call about background processes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum ProcessOp {
    /// Answers the started [`ProcessInfo`].
    Start { request: StartRequest },
    /// Answers `{"processes": [ProcessInfo]}`.
    List,
    /// Answers the [`ProcessInfo`] as it was when signalled.
    Signal { id: String, signal: String },
    /// Takes `Stdin` frames up to `StdinEof`; `eof` closes the process's
    /// input after them. Answers `{}`.
    Stdin { id: String, eof: bool },
    /// Each [`OutputItem`] after `after` as JSON in a `Stdout` frame of its
    /// own; with `follow`, then each as it comes until the process ends.
    Output { id: String, after: u64, follow: bool },
}

/// What the control plane asks to start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartRequest {
    pub argv: Vec<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub name: Option<String>,
}

/// A process as the control plane sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessInfo {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub argv: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// `running`, `exited` or `signalled`.
    pub state: String,
    pub started_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
}

/// One record of a process's output, or what a reader is told instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum OutputItem {
    /// `text` of `stream`; `position` is where the next record starts.
    Output { stream: String, text: String, position: u64 },
    /// Output from `from` to `to` was cut before it was read.
    Cut { from: u64, to: u64 },
    /// The process ended (the last item).
    Ended { process: ProcessInfo },
}
