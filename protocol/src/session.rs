//! Interactive sessions: a shell or command with its streams, the sftp
//! subsystem, or a TCP connection to a port inside the executor. An SSH
//! gateway opens one through the executor's worker, which relays it to the
//! daemon over an upgraded HTTP connection (`GET` [`SESSION`] with
//! `Upgrade:` [`UPGRADE`]).
//!
//! After the upgrade both sides exchange frames: a kind byte, a 32-bit
//! big-endian length, and at most [`MAX_FRAME`] bytes of payload. The
//! client's first frame is [`FrameKind::Open`] (JSON [`Open`]); the daemon
//! answers [`FrameKind::Started`] or [`FrameKind::Refused`] (JSON
//! [`Refusal`]), then both stream until the daemon sends
//! [`FrameKind::Exit`] (JSON [`Exit`]) and closes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The daemon's path for a session.
pub const SESSION: &str = "/session";

/// The `Upgrade` protocol a session speaks.
pub const UPGRADE: &str = "sluice-session/1";

/// The largest payload of one frame.
pub const MAX_FRAME: usize = 64 * 1024;

/// How often a client says it is still there when nothing else moves; a
/// relay may end a session that has been silent for three times as long.
pub const PING_EVERY_MS: u64 = 20_000;

/// The kind byte of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameKind {
    // From the client.
    Open = 1,
    Stdin = 2,
    /// The client's input ended.
    StdinEof = 3,
    /// JSON [`WindowSize`].
    Resize = 4,
    /// A signal name without `SIG` (`INT`, `TERM`, …).
    Signal = 5,
    Ping = 6,
    // From the daemon.
    Started = 16,
    Refused = 17,
    Stdout = 18,
    Stderr = 19,
    /// JSON [`Exit`]; the last frame.
    Exit = 20,
    /// Part of the JSON answer of an [`Open::Run`]: its frames, joined,
    /// are the answer; the stream's end follows the last.
    Result = 21,
}

impl FrameKind {
    pub fn from_byte(b: u8) -> Option<FrameKind> {
        use FrameKind::*;
        [Open, Stdin, StdinEof, Resize, Signal, Ping, Started, Refused, Stdout, Stderr, Exit, Result]
            .into_iter()
            .find(|k| *k as u8 == b)
    }
}

/// A frame's header: its kind and its payload's length.
pub const HEADER_BYTES: usize = 5;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    UnknownKind(u8),
    TooLarge(usize),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::UnknownKind(b) => write!(f, "unknown session frame kind {b}"),
            FrameError::TooLarge(n) => write!(f, "a session frame of {n} bytes is over the {MAX_FRAME}-byte bound"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Reads a frame header.
pub fn parse_header(header: [u8; HEADER_BYTES]) -> Result<(FrameKind, usize), FrameError> {
    let kind = FrameKind::from_byte(header[0]).ok_or(FrameError::UnknownKind(header[0]))?;
    let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    Ok((kind, len))
}

/// One frame, header and payload (at most [`MAX_FRAME`] bytes: split
/// longer data first).
pub fn encode(kind: FrameKind, payload: &[u8]) -> Vec<u8> {
    debug_assert!(payload.len() <= MAX_FRAME);
    let mut frame = Vec::with_capacity(HEADER_BYTES + payload.len());
    frame.push(kind as u8);
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// A terminal's size in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowSize {
    pub cols: u16,
    pub rows: u16,
}

/// A pseudo-terminal for the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pty {
    /// `TERM` for the session.
    pub term: String,
    pub size: WindowSize,
}

/// What a session runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Open {
    /// The workload's login shell.
    Shell {
        pty: Option<Pty>,
        #[serde(default)]
        env: BTreeMap<String, String>,
    },
    /// `command` run by the shell (`sh -c`), as `ssh host command` does.
    Exec {
        command: String,
        pty: Option<Pty>,
        #[serde(default)]
        env: BTreeMap<String, String>,
    },
    /// The sftp subsystem, served as the workload.
    Sftp,
    /// A TCP connection to `port` on the executor's loopback.
    Connect { port: u16 },
    /// One command as the control API's exec runs it (argv without a
    /// shell, its stdin given, a timeout, capped output), its output sent
    /// as it comes; then [`FrameKind::Result`] frames holding the JSON
    /// [`crate::ExecResponse`] the exec would have answered, and the end.
    /// A client that goes away takes the command with it.
    Run { request: crate::ExecRequest },
    /// A file operation on the worktree (see [`crate::worktree`]), or on
    /// the workload's whole filesystem (`root`).
    Files {
        op: crate::worktree::FileOp,
        #[serde(default, skip_serializing_if = "crate::worktree::FilesRoot::is_worktree")]
        root: crate::worktree::FilesRoot,
    },
    /// A call about background processes (see [`crate::background`]).
    Process { op: crate::background::ProcessOp },
}

impl From<crate::worktree::FileOp> for Open {
    fn from(op: crate::worktree::FileOp) -> Open {
        Open::Files { op, root: crate::worktree::FilesRoot::Worktree }
    }
}

impl From<crate::background::ProcessOp> for Open {
    fn from(op: crate::background::ProcessOp) -> Open {
        Open::Process { op }
    }
}

impl Open {
    /// The session's kind as recorded (never its command).
    pub fn kind(&self) -> &'static str {
        match self {
            Open::Shell { .. } => "shell",
            Open::Exec { .. } => "exec",
            Open::Sftp => "sftp",
            Open::Connect { .. } => "port-forward",
            Open::Run { .. } => "run",
            Open::Files { .. } => "files",
            Open::Process { .. } => "process",
        }
    }
}

/// Environment a client may set (as OpenSSH's `AcceptEnv LANG LC_*`).
pub fn env_accepted(name: &str) -> bool {
    name == "LANG" || (name.starts_with("LC_") && name[3..].chars().all(|c| c.is_ascii_uppercase() || c == '_'))
}

/// Why the daemon would not start a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub code: String,
    pub message: String,
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Exit {
    /// The process's exit status, when it exited.
    pub code: Option<i32>,
    /// The signal that ended it (without `SIG`), when one did.
    pub signal: Option<String>,
}

impl Exit {
    /// The status a shell would report: the code, or 128 and the signal's number.
    pub fn status(&self) -> u32 {
        match (self.code, self.signal.as_deref()) {
            (Some(code), _) => code as u32,
            (None, Some(signal)) => 128 + signal_number(signal).unwrap_or(0) as u32,
            (None, None) => 255,
        }
    }
}

/// Signals a client may send, by name, with their Linux numbers.
const SIGNALS: &[(&str, i32)] = &[
    ("HUP", 1),
    ("INT", 2),
    ("QUIT", 3),
    ("KILL", 9),
    ("USR1", 10),
    ("USR2", 12),
    ("PIPE", 13),
    ("ALRM", 14),
    ("TERM", 15),
];

pub fn signal_number(name: &str) -> Option<i32> {
    SIGNALS.iter().find(|(n, _)| *n == name).map(|(_, number)| *number)
}

pub fn signal_name(number: i32) -> Option<&'static str> {
    SIGNALS.iter().find(|(_, n)| *n == number).map(|(name, _)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_carry_their_kind_and_length_within_the_bound() {
        let frame = encode(FrameKind::Stdout, b"hello");
        assert_eq!(frame.len(), HEADER_BYTES + 5);
        let header: [u8; HEADER_BYTES] = frame[..HEADER_BYTES].try_into().unwrap();
        assert_eq!(parse_header(header), Ok((FrameKind::Stdout, 5)));
        assert_eq!(parse_header([99, 0, 0, 0, 0]), Err(FrameError::UnknownKind(99)));
        let over = ((MAX_FRAME + 1) as u32).to_be_bytes();
        assert_eq!(parse_header([2, over[0], over[1], over[2], over[3]]), Err(FrameError::TooLarge(MAX_FRAME + 1)));
        for b in 0..=255u8 {
            if let Some(kind) = FrameKind::from_byte(b) {
                assert_eq!(kind as u8, b);
            }
        }
    }

    #[test]
    fn opens_read_as_json_and_name_their_kind() {
        let open: Open = serde_json::from_str(r#"{"kind":"connect","port":8080}"#).unwrap();
        assert_eq!((open.kind(), open), ("port-forward", Open::Connect { port: 8080 }));
        let shell: Open = serde_json::from_str(r#"{"kind":"shell","pty":null}"#).unwrap();
        assert_eq!(shell.kind(), "shell");
    }

    #[test]
    fn exits_report_as_a_shell_does() {
        assert_eq!(Exit { code: Some(7), signal: None }.status(), 7);
        assert_eq!(Exit { code: None, signal: Some("INT".into()) }.status(), 130);
        assert_eq!(signal_name(15), Some("TERM"));
        assert!(env_accepted("LANG") && env_accepted("LC_ALL") && !env_accepted("LD_PRELOAD") && !env_accepted("LC_x"));
    }
}
