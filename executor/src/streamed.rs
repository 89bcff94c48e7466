//! An exec's command with its output as it comes: run over a session on
//! the executor ([`sluice_protocol::session::Open::Run`]), whose frames
//! carry each chunk of output, then the answer the plain exec would have
//! given. The session reaches the executor wherever it runs (on this host,
//! or relayed by a worker of its host), so the output streams alike.

use std::time::Duration;

use sluice_protocol::session::{FrameKind, Open, PING_EVERY_MS, Refusal};
use sluice_protocol::{ExecRequest, ExecResponse, RefusalCode};
use tokio::sync::mpsc;

use crate::{ExecutorError, Executors, SessionStream, Target};

/// Which of a command's streams a chunk is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    Stdout,
    Stderr,
}

/// A chunk of a command's output, as it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputChunk {
    pub stream: OutputStream,
    pub bytes: Vec<u8>,
}

/// Where a command's output is sent as it comes.
pub type OutputSink = mpsc::Sender<OutputChunk>;

/// The most answer a session may send (the answer holds both streams,
/// each capped by the daemon, as JSON).
const MAX_ANSWER_BYTES: usize = 40 << 20;

/// Runs `request` in the executor at `target` with its output sent to
/// `output` as it comes: over a session where the daemon serves one, else
/// (a daemon from before sessions ran commands, or one that takes no
/// sessions) as a plain exec whose output is sent once it has ended.
pub async fn exec_streaming<E: Executors + ?Sized>(
    executors: &E,
    target: Target<'_>,
    request: ExecRequest,
    timeout: Duration,
    output: OutputSink,
) -> Result<ExecResponse, ExecutorError> {
    match executors.open_session(target).await {
        Ok(session) => match exec_over_session(session, request.clone(), timeout, output.clone()).await? {
            Some(answer) => Ok(answer),
            None => exec_then_send(executors, target, request, timeout, output).await,
        },
        Err(ExecutorError::Refused { .. }) => exec_then_send(executors, target, request, timeout, output).await,
        Err(e) => Err(e),
    }
}

/// Runs `request` as a plain exec, then sends its output to `output`.
pub async fn exec_then_send<E: Executors + ?Sized>(
    executors: &E,
    target: Target<'_>,
    request: ExecRequest,
    timeout: Duration,
    output: OutputSink,
) -> Result<ExecResponse, ExecutorError> {
    let answer = executors.exec(target, request, timeout).await?;
    for (stream, text) in [(OutputStream::Stdout, &answer.stdout), (OutputStream::Stderr, &answer.stderr)] {
        if !text.is_empty() {
            let _ = output.send(OutputChunk { stream, bytes: text.as_bytes().to_vec() }).await;
        }
    }
    Ok(answer)
}

/// Runs `request` over `session` within `timeout`, sending each chunk of
/// output to `output` (a receiver that went away only stops the copy).
/// `None` when the daemon does not know this kind of session (it refused
/// it before anything ran).
pub async fn exec_over_session(
    mut session: SessionStream,
    request: ExecRequest,
    timeout: Duration,
    output: OutputSink,
) -> Result<Option<ExecResponse>, ExecutorError> {
    let broken = |e: std::io::Error| ExecutorError::Unreachable(format!("the command's session broke: {e}"));
    let open = serde_json::to_vec(&Open::Run { request }).map_err(|e| ExecutorError::Unreachable(e.to_string()))?;
    sluice_session::write_frames(&mut session, FrameKind::Open, &open).await.map_err(broken)?;
    let (mut reader, mut writer) = tokio::io::split(session);
    let reading = async {
        let mut answer = Vec::new();
        let mut started = false;
        loop {
            match sluice_session::read_frame(&mut reader).await.map_err(broken)? {
                Some((FrameKind::Started, _)) => started = true,
                Some((FrameKind::Stdout, bytes)) => {
                    let _ = output.send(OutputChunk { stream: OutputStream::Stdout, bytes }).await;
                }
                Some((FrameKind::Stderr, bytes)) => {
                    let _ = output.send(OutputChunk { stream: OutputStream::Stderr, bytes }).await;
                }
                Some((FrameKind::Result, part)) => {
                    if answer.len() + part.len() > MAX_ANSWER_BYTES {
                        return Err(ExecutorError::Unreachable("the command's answer is over its bound".into()));
                    }
                    answer.extend_from_slice(&part);
                }
                Some((FrameKind::Refused, payload)) => {
                    let refusal = refusal_of(&payload);
                    if !started && refusal.code == "invalid" {
                        return Ok(None);
                    }
                    return Err(refused(refusal));
                }
                Some(_) => {}
                None if answer.is_empty() => {
                    return Err(ExecutorError::Unreachable("the command's session ended without an answer".into()));
                }
                None => {
                    return serde_json::from_slice::<ExecResponse>(&answer)
                        .map(Some)
                        .map_err(|e| ExecutorError::Unreachable(format!("the command's answer is not usable: {e}")));
                }
            }
        }
    };
    // A relay ends a session it hears nothing from; the pings say the
    // caller is still there.
    let pinging = async {
        loop {
            tokio::time::sleep(Duration::from_millis(PING_EVERY_MS)).await;
            if sluice_session::write_frames(&mut writer, FrameKind::Ping, &[]).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        answer = tokio::time::timeout(timeout, reading) => answer.unwrap_or_else(|_| {
            Err(ExecutorError::Unreachable(format!("the command did not answer within {} s", timeout.as_secs())))
        }),
        _ = pinging => unreachable!("pinging never ends"),
    }
}

fn refusal_of(payload: &[u8]) -> Refusal {
    serde_json::from_slice::<Refusal>(payload)
        .unwrap_or(Refusal { code: "invalid".into(), message: "the session was refused".into() })
}

/// The daemon's refusal of a session, in the port's words.
fn refused(refusal: Refusal) -> ExecutorError {
    let code = match refusal.code.as_str() {
        "finalized" => RefusalCode::ExecutorFinalized,
        _ => RefusalCode::Invalid,
    };
    ExecutorError::Refused { code, message: refusal.message }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A daemon's side of a session that answers the open with `frames`.
    fn daemon(frames: Vec<(FrameKind, Vec<u8>)>) -> SessionStream {
        let (ours, mut theirs) = tokio::io::duplex(1 << 20);
        tokio::spawn(async move {
            let open = sluice_session::read_frame(&mut theirs).await.unwrap().unwrap();
            assert_eq!(open.0, FrameKind::Open);
            for (kind, payload) in frames {
                sluice_session::write_frames(&mut theirs, kind, &payload).await.unwrap();
            }
        });
        Box::new(ours)
    }

    fn request() -> ExecRequest {
        ExecRequest { argv: vec!["true".into()], ..ExecRequest::default() }
    }

    #[tokio::test]
    async fn output_comes_as_it_is_sent_and_the_answer_is_joined_from_its_parts() {
        let answer = serde_json::to_vec(&ExecResponse::exited(3, "a".repeat(100_000), "e".into())).unwrap();
        let (first, rest) = answer.split_at(70_000);
        let frames = vec![
            (FrameKind::Started, vec![]),
            (FrameKind::Stdout, b"out".to_vec()),
            (FrameKind::Stderr, b"err".to_vec()),
            (FrameKind::Result, first.to_vec()),
            (FrameKind::Result, rest.to_vec()),
        ];
        let (sink, mut output) = mpsc::channel(8);
        let answered = exec_over_session(daemon(frames), request(), Duration::from_secs(10), sink).await.unwrap();
        assert_eq!(answered.map(|a| (a.exit_code, a.stdout.len())), Some((3, 100_000)));
        assert_eq!(output.recv().await, Some(OutputChunk { stream: OutputStream::Stdout, bytes: b"out".to_vec() }));
        assert_eq!(output.recv().await, Some(OutputChunk { stream: OutputStream::Stderr, bytes: b"err".to_vec() }));
    }

    #[tokio::test]
    async fn a_daemon_that_knows_no_runs_says_so_and_other_refusals_are_errors() {
        let refusal = |code: &str| serde_json::to_vec(&Refusal { code: code.into(), message: "no".into() }).unwrap();
        let (sink, _output) = mpsc::channel(8);
        let old = daemon(vec![(FrameKind::Refused, refusal("invalid"))]);
        assert!(exec_over_session(old, request(), Duration::from_secs(10), sink.clone()).await.unwrap().is_none());
        let finalized = daemon(vec![(FrameKind::Refused, refusal("finalized"))]);
        let refused = exec_over_session(finalized, request(), Duration::from_secs(10), sink.clone()).await;
        assert_eq!(refused.unwrap_err().refusal(), Some(RefusalCode::ExecutorFinalized));
        let cut = daemon(vec![(FrameKind::Started, vec![])]);
        let broken = exec_over_session(cut, request(), Duration::from_secs(10), sink).await;
        assert!(matches!(broken, Err(ExecutorError::Unreachable(_))), "{broken:?}");
    }
}
