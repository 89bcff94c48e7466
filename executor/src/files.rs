//! Calls over a session on the executor, wherever it runs: the worktree's
//! file operations ([`sluice_protocol::worktree`]) and background processes
//! ([`sluice_protocol::background`]). A call answers once; a read's bytes
//! come as they are read; a write's bytes go as they come.

use std::time::Duration;

use sluice_protocol::session::{FrameKind, Open, PING_EVERY_MS, Refusal};
use sluice_protocol::worktree::FileHead;
use tokio::io::{ReadHalf, WriteHalf};
use tokio::sync::mpsc;

use crate::{ExecutorError, SessionStream};

/// Why a file operation did not answer.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The daemon refused it: one of the protocol's codes, and why.
    #[error("{message}")]
    Refused { code: String, message: String },
    /// The executor could not be reached, or the session broke.
    #[error(transparent)]
    Executor(#[from] ExecutorError),
}

/// The most one answer of a call may hold (a listing of the most entries).
const MAX_ANSWER_BYTES: usize = 16 << 20;
/// How long a call that moves no bytes may take.
const CALL_WITHIN: Duration = Duration::from_secs(120);

fn broken(e: std::io::Error) -> FileError {
    FileError::Executor(ExecutorError::Unreachable(format!("the file session broke: {e}")))
}

fn refusal(payload: &[u8]) -> FileError {
    let refusal = serde_json::from_slice::<Refusal>(payload)
        .unwrap_or(Refusal { code: "failed".into(), message: "the operation was refused".into() });
    FileError::Refused { code: refusal.code, message: refusal.message }
}

async fn open(mut session: SessionStream, op: impl Into<Open>) -> Result<SessionStream, FileError> {
    let open = serde_json::to_vec(&op.into()).map_err(|e| ExecutorError::Unreachable(e.to_string()))?;
    sluice_session::write_frames(&mut session, FrameKind::Open, &open).await.map_err(broken)?;
    Ok(session)
}

/// Reads frames until the answer: the `Result` parts joined, as JSON.
async fn answer(reader: &mut ReadHalf<SessionStream>) -> Result<serde_json::Value, FileError> {
    let mut answer = Vec::new();
    loop {
        match sluice_session::read_frame(reader).await.map_err(broken)? {
            Some((FrameKind::Result, part)) => {
                if answer.len() + part.len() > MAX_ANSWER_BYTES {
                    return Err(ExecutorError::Unreachable("the file answer is over its bound".into()).into());
                }
                answer.extend_from_slice(&part);
            }
            Some((FrameKind::Refused, payload)) => return Err(refusal(&payload)),
            Some(_) => {}
            None if answer.is_empty() => {
                return Err(ExecutorError::Unreachable("the file session ended without an answer".into()).into());
            }
            None => {
                return serde_json::from_slice(&answer)
                    .map_err(|e| ExecutorError::Unreachable(format!("the file answer is not usable: {e}")).into());
            }
        }
    }
}

/// A list, mkdir, move or remove: its answer.
pub async fn call(session: SessionStream, op: impl Into<Open>) -> Result<serde_json::Value, FileError> {
    let session = open(session, op).await?;
    let (mut reader, _writer) = tokio::io::split(session);
    tokio::time::timeout(CALL_WITHIN, answer(&mut reader)).await.map_err(|_| {
        FileError::Executor(ExecutorError::Unreachable("the file operation did not answer in time".into()))
    })?
}

/// A file being read: what it is, then its bytes as they come (an `Err`
/// last if the read broke off: the bytes before it are not the whole).
pub struct Reading {
    /// What the file is (none for an archive being packed).
    pub head: Option<FileHead>,
    pub chunks: mpsc::Receiver<Result<Vec<u8>, FileError>>,
}

/// Starts a read (or a pack): answers once the file is known, its bytes
/// following.
pub async fn read(session: SessionStream, op: impl Into<Open>) -> Result<Reading, FileError> {
    let session = open(session, op).await?;
    let (mut reader, mut writer) = tokio::io::split(session);
    let head = match tokio::time::timeout(CALL_WITHIN, sluice_session::read_frame(&mut reader)).await {
        Err(_) => return Err(ExecutorError::Unreachable("the file read did not start in time".into()).into()),
        Ok(frame) => match frame.map_err(broken)? {
            Some((FrameKind::Started, head)) if head.is_empty() => None,
            Some((FrameKind::Started, head)) => Some(
                serde_json::from_slice::<FileHead>(&head)
                    .map_err(|e| ExecutorError::Unreachable(format!("the file's head is not usable: {e}")))?,
            ),
            Some((FrameKind::Refused, payload)) => return Err(refusal(&payload)),
            _ => return Err(ExecutorError::Unreachable("the file read answered nothing usable".into()).into()),
        },
    };
    let (tx, chunks) = mpsc::channel(8);
    tokio::spawn(async move {
        let pinging = ping(&mut writer);
        tokio::pin!(pinging);
        loop {
            let frame = tokio::select! {
                frame = sluice_session::read_frame(&mut reader) => frame,
                _ = &mut pinging => return,
            };
            let sent = match frame {
                Ok(Some((FrameKind::Stdout, bytes))) => tx.send(Ok(bytes)).await,
                Ok(Some((FrameKind::Result, _))) => return,
                Ok(None) => {
                    let cut = ExecutorError::Unreachable("the file read ended before the whole file".into());
                    let _ = tx.send(Err(cut.into())).await;
                    return;
                }
                Ok(Some((FrameKind::Refused, payload))) => tx.send(Err(refusal(&payload))).await,
                Ok(Some(_)) => Ok(()),
                Err(e) => tx.send(Err(broken(e))).await,
            };
            if sent.is_err() {
                // The reader went away: dropping the session ends the read.
                return;
            }
        }
    });
    Ok(Reading { head, chunks })
}

/// Writes a file (or unpacks an archive) from `body`'s chunks (an `Err`
/// chunk abandons it: nothing is put in place); answers what was written.
pub async fn write(
    session: SessionStream,
    op: impl Into<Open>,
    mut body: mpsc::Receiver<Result<Vec<u8>, String>>,
) -> Result<serde_json::Value, FileError> {
    let session = open(session, op).await?;
    let (mut reader, mut writer) = tokio::io::split(session);
    match tokio::time::timeout(CALL_WITHIN, sluice_session::read_frame(&mut reader)).await {
        Err(_) => return Err(ExecutorError::Unreachable("the file write did not start in time".into()).into()),
        Ok(frame) => match frame.map_err(broken)? {
            Some((FrameKind::Started, _)) => {}
            Some((FrameKind::Refused, payload)) => return Err(refusal(&payload)),
            _ => return Err(ExecutorError::Unreachable("the file write answered nothing usable".into()).into()),
        },
    }
    while let Some(chunk) = body.recv().await {
        match chunk {
            Ok(bytes) => sluice_session::write_frames(&mut writer, FrameKind::Stdin, &bytes).await.map_err(broken)?,
            // Hanging up before the end leaves nothing in place.
            Err(why) => return Err(ExecutorError::Unreachable(format!("the upload broke off: {why}")).into()),
        }
    }
    sluice_session::write_frames(&mut writer, FrameKind::StdinEof, &[]).await.map_err(broken)?;
    tokio::time::timeout(CALL_WITHIN, answer(&mut reader))
        .await
        .map_err(|_| FileError::Executor(ExecutorError::Unreachable("the file write did not finish in time".into())))?
}

/// Pings a session's relay while bytes flow the other way; returns if the
/// session's writing side broke.
async fn ping(writer: &mut WriteHalf<SessionStream>) {
    loop {
        tokio::time::sleep(Duration::from_millis(PING_EVERY_MS)).await;
        if sluice_session::write_frames(writer, FrameKind::Ping, &[]).await.is_err() {
            return;
        }
    }
}
