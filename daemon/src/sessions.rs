//! Interactive sessions (see [`sluice_protocol::session`]): a shell or a
//! command with a pseudo-terminal or pipes, the sftp subsystem, or a TCP
//! connection to a port on the executor's loopback. Every process starts
//! through the workload's gate, as the workload; a client that goes away
//! takes its session's processes with it (SIGHUP, then SIGKILL).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use sluice_protocol::session::{self, Exit, FrameKind, Open, Pty, Refusal, WindowSize};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::Command;
use tokio::sync::mpsc;

use crate::processes::SpawnError;
pub use crate::session_context::SessionContext;

/// How long a client has to say what it wants.
const OPEN_WITHIN: Duration = Duration::from_secs(10);
/// How long a connection to a port inside may take.
const CONNECT_WITHIN: Duration = Duration::from_secs(5);
/// How long output is still read after the process exited (a background
/// process may hold the streams open).
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);
/// Grace between SIGHUP and SIGKILL when the client went away.
const HANGUP_GRACE: Duration = Duration::from_secs(2);
/// Frames waiting for the client before readers wait.
const OUTBOX: usize = 64;

/// Runs one session on an upgraded connection until it ends.
pub async fn run<S>(io: S, context: SessionContext)
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (mut reader, writer) = tokio::io::split(io);
    let (outbox, outgoing) = mpsc::channel::<(FrameKind, Vec<u8>)>(OUTBOX);
    let sender = tokio::spawn(send_frames(writer, outgoing));
    let open = match tokio::time::timeout(OPEN_WITHIN, sluice_session::read_frame(&mut reader)).await {
        Ok(Ok(Some((FrameKind::Open, payload)))) => serde_json::from_slice::<Open>(&payload).ok(),
        _ => None,
    };
    let Some(open) = open else {
        refuse(&outbox, "invalid", "a session starts with an open frame").await;
        drop(outbox);
        let _ = sender.await;
        return;
    };
    if context.finalizing {
        refuse(&outbox, "finalized", "a final flush ended this executor's work; it takes no new sessions").await;
    } else {
        match open {
            Open::Connect { port } => connect(port, reader, &outbox, &context).await,
            Open::Shell { pty, env } => {
                let argv = login_shell();
                command_session(argv, pty, env, reader, &outbox, &context).await
            }
            Open::Exec { command, pty, env } => {
                let argv = vec!["/bin/sh".to_owned(), "-c".to_owned(), command];
                command_session(argv, pty, env, reader, &outbox, &context).await
            }
            Open::Run { request } => run_command(request, reader, &outbox, &context).await,
            Open::Files { op, root } => crate::worktree::serve(op, root, reader, &outbox, &context).await,
            Open::Process { op } => {
                let start_in = (context.workdir.as_path(), &context.env, context.processes.as_ref());
                crate::background::serve(op, reader, &outbox, &context.background, start_in, context.touch.as_ref())
                    .await
            }
            Open::Sftp => match context.sftp_server.clone() {
                Some(argv) => command_session(argv, None, Default::default(), reader, &outbox, &context).await,
                None => refuse(&outbox, "unsupported", "this executor cannot serve sftp").await,
            },
        }
    }
    drop(outbox);
    let _ = sender.await;
}

/// The workload's shell, as a login shell.
fn login_shell() -> Vec<String> {
    let shell = if Path::new("/bin/bash").exists() { "/bin/bash" } else { "/bin/sh" };
    vec![shell.to_owned(), "-l".to_owned()]
}

async fn send_frames<W: AsyncWrite + Unpin>(mut writer: W, mut outgoing: mpsc::Receiver<(FrameKind, Vec<u8>)>) {
    while let Some((kind, payload)) = outgoing.recv().await {
        if sluice_session::write_frames(&mut writer, kind, &payload).await.is_err() {
            return;
        }
    }
    let _ = writer.shutdown().await;
}

async fn refuse(outbox: &mpsc::Sender<(FrameKind, Vec<u8>)>, code: &str, message: &str) {
    let refusal = Refusal { code: code.into(), message: message.into() };
    let _ = outbox.send((FrameKind::Refused, serde_json::to_vec(&refusal).unwrap_or_default())).await;
}

async fn exit(outbox: &mpsc::Sender<(FrameKind, Vec<u8>)>, how: Exit) {
    let _ = outbox.send((FrameKind::Exit, serde_json::to_vec(&how).unwrap_or_default())).await;
}

/// Copies `from` into frames of `kind` until it ends.
async fn pump_out(mut from: impl AsyncRead + Unpin, kind: FrameKind, outbox: mpsc::Sender<(FrameKind, Vec<u8>)>) {
    let mut buf = vec![0u8; session::MAX_FRAME];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if outbox.send((kind, buf[..n].to_vec())).await.is_err() {
                    return;
                }
            }
        }
    }
}

async fn connect<R: AsyncRead + Unpin>(
    port: u16,
    mut reader: R,
    outbox: &mpsc::Sender<(FrameKind, Vec<u8>)>,
    context: &SessionContext,
) {
    let stream = match tokio::time::timeout(CONNECT_WITHIN, tokio::net::TcpStream::connect(("127.0.0.1", port))).await {
        Ok(Ok(stream)) => stream,
        _ => {
            let message = format!("nothing accepted a connection on port {port} inside the workspace");
            return refuse(outbox, "connect-failed", &message).await;
        }
    };
    let _ = outbox.send((FrameKind::Started, Vec::new())).await;
    let (from_port, mut to_port) = stream.into_split();
    let mut output = tokio::spawn(pump_out(from_port, FrameKind::Stdout, outbox.clone()));
    loop {
        tokio::select! {
            _ = &mut output => break,
            frame = sluice_session::read_frame(&mut reader) => match frame {
                Ok(Some((kind, payload))) => {
                    (context.touch)();
                    match kind {
                        FrameKind::Stdin if to_port.write_all(&payload).await.is_err() => break,
                        FrameKind::StdinEof => {
                            let _ = to_port.shutdown().await;
                        }
                        _ => {}
                    }
                }
                // The client went away: so does the connection.
                _ => {
                    output.abort();
                    return;
                }
            },
        }
    }
    exit(outbox, Exit { code: Some(0), signal: None }).await;
}

/// A pseudo-terminal's controlling side, read and written without blocking.
struct PtyMaster(AsyncFd<OwnedFd>);

impl PtyMaster {
    fn resize(&self, size: WindowSize) {
        let winsize = libc::winsize { ws_row: size.rows, ws_col: size.cols, ws_xpixel: 0, ws_ypixel: 0 };
        // SAFETY: TIOCSWINSZ reads one winsize from the pointer.
        unsafe {
            libc::ioctl(self.0.as_raw_fd(), libc::TIOCSWINSZ, &winsize);
        }
    }

    async fn read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let mut ready = self.0.readable().await?;
            let result = ready.try_io(|fd| {
                // SAFETY: reads into `buf`, within its length.
                let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                if n < 0 { Err(std::io::Error::last_os_error()) } else { Ok(n as usize) }
            });
            match result {
                Ok(Ok(n)) => return Ok(n),
                // The terminal's other side closed: the end of its output.
                Ok(Err(e)) if e.raw_os_error() == Some(libc::EIO) => return Ok(0),
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => continue,
            }
        }
    }

    async fn write_all(&self, mut data: &[u8]) -> std::io::Result<()> {
        while !data.is_empty() {
            let mut ready = self.0.writable().await?;
            let result = ready.try_io(|fd| {
                // SAFETY: writes from `data`, within its length.
                let n = unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) };
                if n < 0 { Err(std::io::Error::last_os_error()) } else { Ok(n as usize) }
            });
            if let Ok(written) = result {
                data = &data[written?..];
            }
        }
        Ok(())
    }
}

/// Opens a pseudo-terminal of `size`: its controlling side (non-blocking)
/// and the terminal the session's process gets.
fn open_pty(size: WindowSize, owner: Option<crate::workload::WorkloadIds>) -> std::io::Result<(PtyMaster, OwnedFd)> {
    let (mut master, mut slave) = (-1, -1);
    let winsize = libc::winsize { ws_row: size.rows, ws_col: size.cols, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: openpty writes two descriptors; the name and termios are not asked for.
    let rc = unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), &winsize) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: openpty returned two open descriptors that nothing else owns.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    if let Some(ids) = owner {
        // The terminal is the workload's, as a login's is (best effort: a
        // daemon without the capability leaves it as it is).
        // SAFETY: fchown on a descriptor we own.
        unsafe {
            libc::fchown(slave.as_raw_fd(), ids.uid, ids.gid);
        }
    }
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(master.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(master.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
        libc::fcntl(master.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
    }
    // SAFETY: the OwnedFd stays open, and the same descriptor, for as long
    // as the AsyncFd holds it.
    let master = unsafe { AsyncFd::register(master) }?;
    Ok((PtyMaster(master), slave))
}

/// Where a session's input goes.
enum Input {
    Pty(Arc<PtyMaster>),
    Pipe(Option<tokio::process::ChildStdin>),
}

fn signal_group(pgid: i32, signal: i32) {
    // SAFETY: killpg only sends a signal; a group that is gone fails harmlessly.
    unsafe {
        libc::killpg(pgid, signal);
    }
}

async fn command_session<R: AsyncRead + Unpin>(
    argv: Vec<String>,
    pty: Option<Pty>,
    env: std::collections::BTreeMap<String, String>,
    mut reader: R,
    outbox: &mpsc::Sender<(FrameKind, Vec<u8>)>,
    context: &SessionContext,
) {
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]).current_dir(&context.workdir).envs(&context.env).kill_on_drop(true);
    command.envs(env.into_iter().filter(|(name, _)| session::env_accepted(name)));
    let terminal = match &pty {
        Some(pty) => match open_pty(pty.size, context.processes.ids()) {
            Ok(pair) => Some(pair),
            Err(e) => return refuse(outbox, "no-terminal", &format!("cannot open a terminal: {e}")).await,
        },
        None => None,
    };
    match (&terminal, &pty) {
        (Some((_, slave)), Some(pty)) => {
            let stdio = |fd: &OwnedFd| fd.try_clone().map(Stdio::from);
            let (Ok(stdin), Ok(stdout), Ok(stderr)) = (stdio(slave), stdio(slave), stdio(slave)) else {
                return refuse(outbox, "no-terminal", "cannot hand the terminal to the session").await;
            };
            command.stdin(stdin).stdout(stdout).stderr(stderr).env("TERM", &pty.term);
            // SAFETY: setsid and ioctl are async-signal-safe: the process
            // leads a session of its own whose controlling terminal is this.
            unsafe {
                command.pre_exec(|| {
                    if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        _ => {
            command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
        }
    }
    crate::workload::confine(&mut command, context.processes.ids());
    let mut child = match context.processes.spawn(&mut command) {
        Ok(child) => child,
        Err(SpawnError::Finalized) => {
            return refuse(outbox, "finalized", "a final flush ended this executor's work").await;
        }
        Err(SpawnError::Io(e)) => {
            return refuse(outbox, "cannot-start", &format!("cannot run {}: {e}", argv[0])).await;
        }
    };
    let Some(pgid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
        return refuse(outbox, "cannot-start", "the session's process ended at once").await;
    };
    let _ = outbox.send((FrameKind::Started, Vec::new())).await;
    let mut outputs = Vec::new();
    let input = match terminal {
        Some((master, slave)) => {
            // Only the session's process holds the terminal now, so its
            // output ends when the last of its processes does.
            drop(slave);
            let master = Arc::new(master);
            let reading = master.clone();
            let out = outbox.clone();
            outputs.push(tokio::spawn(async move {
                let mut buf = vec![0u8; session::MAX_FRAME];
                while let Ok(n) = reading.read(&mut buf).await {
                    if n == 0 || out.send((FrameKind::Stdout, buf[..n].to_vec())).await.is_err() {
                        break;
                    }
                }
            }));
            Input::Pty(master)
        }
        None => {
            if let Some(stdout) = child.stdout.take() {
                outputs.push(tokio::spawn(pump_out(stdout, FrameKind::Stdout, outbox.clone())));
            }
            if let Some(stderr) = child.stderr.take() {
                outputs.push(tokio::spawn(pump_out(stderr, FrameKind::Stderr, outbox.clone())));
            }
            Input::Pipe(child.stdin.take())
        }
    };
    let mut input = input;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.ok(),
            frame = sluice_session::read_frame(&mut reader) => match frame {
                Ok(Some((kind, payload))) => {
                    (context.touch)();
                    deliver(kind, &payload, &mut input, pgid).await;
                }
                _ => {
                    // The client went away: hang up, as a terminal does.
                    signal_group(pgid, libc::SIGHUP);
                    if tokio::time::timeout(HANGUP_GRACE, child.wait()).await.is_err() {
                        signal_group(pgid, libc::SIGKILL);
                        let _ = child.wait().await;
                    }
                    for output in outputs {
                        output.abort();
                    }
                    return;
                }
            },
        }
    };
    for output in outputs {
        if tokio::time::timeout(DRAIN_AFTER_EXIT, output).await.is_err() {
            // A background process holds the streams: the session is over.
            signal_group(pgid, libc::SIGHUP);
        }
    }
    use std::os::unix::process::ExitStatusExt;
    let how = match status {
        Some(status) => {
            Exit { code: status.code(), signal: status.signal().and_then(session::signal_name).map(str::to_owned) }
        }
        None => Exit { code: None, signal: None },
    };
    exit(outbox, how).await;
}

/// An exec's command over the session: its output as it is read, then
/// its answer. The client's going away cancels it; its pings count as use.
async fn run_command<R: AsyncRead + Unpin>(
    mut request: sluice_protocol::ExecRequest,
    mut reader: R,
    outbox: &mpsc::Sender<(FrameKind, Vec<u8>)>,
    context: &SessionContext,
) {
    // The workspace's environment, then the command's own, as an exec's.
    let mut env = context.env.clone();
    env.append(&mut request.env);
    request.env = env;
    let (sink, mut output) = mpsc::channel(OUTBOX);
    let (cancel, canceled) = tokio::sync::watch::channel(false);
    let _ = outbox.send((FrameKind::Started, Vec::new())).await;
    let running = crate::exec::run_until(&context.workdir, request, &context.processes, Some(canceled), Some(sink));
    tokio::pin!(running);
    let mut client_gone = false;
    let answer = loop {
        tokio::select! {
            answer = &mut running => break answer,
            Some(chunk) = output.recv() => {
                let _ = outbox.send(chunk).await;
            }
            frame = sluice_session::read_frame(&mut reader), if !client_gone => match frame {
                Ok(Some(_)) => (context.touch)(),
                _ => {
                    // Nobody reads it any more: the command ends with the client.
                    client_gone = true;
                    let _ = cancel.send(true);
                }
            },
        }
    };
    while let Ok(chunk) = output.try_recv() {
        let _ = outbox.send(chunk).await;
    }
    match answer {
        Ok(answer) => {
            let _ = outbox.send((FrameKind::Result, serde_json::to_vec(&answer).unwrap_or_default())).await;
        }
        Err(crate::DaemonError::Finalized) => {
            refuse(outbox, "finalized", "a final flush ended this executor's work").await;
        }
        Err(e) => refuse(outbox, "invalid", &e.to_string()).await,
    }
}

async fn deliver(kind: FrameKind, payload: &[u8], input: &mut Input, pgid: i32) {
    match (kind, input) {
        (FrameKind::Stdin, Input::Pty(master)) => {
            let _ = master.write_all(payload).await;
        }
        (FrameKind::Stdin, Input::Pipe(Some(stdin))) => {
            let _ = stdin.write_all(payload).await;
        }
        (FrameKind::StdinEof, Input::Pipe(stdin)) => {
            // Dropping the pipe is the end of input the process sees.
            stdin.take();
        }
        (FrameKind::Resize, Input::Pty(master)) => {
            if let Ok(size) = serde_json::from_slice::<WindowSize>(payload) {
                master.resize(size);
                // The foreground job learns of it from the terminal itself.
            }
        }
        (FrameKind::Signal, _) => {
            if let Some(number) = std::str::from_utf8(payload).ok().and_then(session::signal_number) {
                signal_group(pgid, number);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::processes::Processes;

    /// A session served on one end of an in-memory stream; the test is the
    /// client on the other.
    struct Client {
        stream: tokio::io::DuplexStream,
    }

    impl Client {
        async fn open(open: Open) -> Client {
            let (ours, theirs) = tokio::io::duplex(1 << 20);
            let context = SessionContext {
                processes: Arc::new(Processes::spawned_only()),
                workdir: std::env::temp_dir(),
                env: [
                    ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
                    ("MARK".to_owned(), "from-the-workspace".to_owned()),
                ]
                .into(),
                finalizing: false,
                sftp_server: None,
                touch: Arc::new(|| {}),
                background: Arc::new(crate::background::Background::new(&std::env::temp_dir().join("sluice-test-bg"))),
            };
            tokio::spawn(run(theirs, context));
            let mut client = Client { stream: ours };
            client.send(FrameKind::Open, &serde_json::to_vec(&open).unwrap()).await;
            client
        }

        async fn send(&mut self, kind: FrameKind, payload: &[u8]) {
            sluice_session::write_frames(&mut self.stream, kind, payload).await.unwrap();
        }

        async fn next(&mut self) -> Option<(FrameKind, Vec<u8>)> {
            tokio::time::timeout(Duration::from_secs(10), sluice_session::read_frame(&mut self.stream))
                .await
                .expect("a frame within 10 s")
                .unwrap()
        }

        /// Output until the exit (stdout, stderr, exit).
        async fn finish(&mut self) -> (String, String, Exit) {
            let (mut out, mut err) = (Vec::new(), Vec::new());
            loop {
                match self.next().await {
                    Some((FrameKind::Stdout, b)) => out.extend(b),
                    Some((FrameKind::Stderr, b)) => err.extend(b),
                    Some((FrameKind::Exit, b)) => {
                        let exit = serde_json::from_slice(&b).unwrap();
                        return (String::from_utf8_lossy(&out).into(), String::from_utf8_lossy(&err).into(), exit);
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
        }

        /// Stdout until it holds `needle`.
        async fn read_until(&mut self, needle: &str) -> String {
            let mut out = Vec::new();
            while !String::from_utf8_lossy(&out).contains(needle) {
                match self.next().await {
                    Some((FrameKind::Stdout, b)) => out.extend(b),
                    other => panic!("waiting for {needle:?} after {:?}: {other:?}", String::from_utf8_lossy(&out)),
                }
            }
            String::from_utf8_lossy(&out).into()
        }
    }

    fn exec(command: &str, pty: Option<Pty>) -> Open {
        Open::Exec { command: command.into(), pty, env: Default::default() }
    }

    /// A run's output arrives while it runs (the second line is only
    /// written once the first was read), then its answer as an exec's.
    #[tokio::test]
    async fn a_run_streams_its_output_then_answers_as_an_exec() {
        let dir = tempfile::tempdir().unwrap();
        let gate = dir.path().join("gate");
        let script = format!(
            "echo first; while [ ! -e {0} ]; do sleep 0.05; done; echo \"$MARK\" >&2; echo second >&2; exit 3",
            gate.display()
        );
        let request =
            sluice_protocol::ExecRequest { argv: vec!["sh".into(), "-c".into(), script], ..Default::default() };
        let mut client = Client::open(Open::Run { request }).await;
        assert_eq!(client.next().await.unwrap().0, FrameKind::Started);
        assert_eq!(client.read_until("first\n").await, "first\n", "before the command ended");
        std::fs::write(&gate, b"").unwrap();
        let (mut err, mut answer) = (Vec::new(), Vec::new());
        while let Some((kind, payload)) = client.next().await {
            match kind {
                FrameKind::Stderr => err.extend(payload),
                FrameKind::Result => answer.extend(payload),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(err, b"from-the-workspace\nsecond\n", "the workspace's environment is the command's");
        let answer: sluice_protocol::ExecResponse = serde_json::from_slice(&answer).unwrap();
        assert_eq!(answer.exit_code, 3);
        assert_eq!((answer.stdout.as_str(), answer.stderr.as_str()), ("first\n", "from-the-workspace\nsecond\n"));
    }

    #[tokio::test]
    async fn a_command_streams_its_output_and_ends_with_its_status() {
        let mut client = Client::open(exec("echo out; echo err >&2; exit 7", None)).await;
        assert_eq!(client.next().await.unwrap().0, FrameKind::Started);
        let (out, err, exit) = client.finish().await;
        assert_eq!((out.as_str(), err.as_str(), exit.status()), ("out\n", "err\n", 7));

        let mut client = Client::open(exec("wc -c", None)).await;
        assert_eq!(client.next().await.unwrap().0, FrameKind::Started);
        let big = vec![b'x'; 3 * session::MAX_FRAME + 5];
        client.send(FrameKind::Stdin, &big).await;
        client.send(FrameKind::StdinEof, &[]).await;
        let (out, _, exit) = client.finish().await;
        assert_eq!((out.trim(), exit.code), (big.len().to_string().as_str(), Some(0)), "every input byte arrived");
    }

    #[tokio::test]
    async fn signals_reach_the_command_and_are_reported() {
        let mut client = Client::open(exec("echo up; sleep 30", None)).await;
        assert_eq!(client.next().await.unwrap().0, FrameKind::Started);
        client.read_until("up").await;
        client.send(FrameKind::Signal, b"TERM").await;
        let (_, _, exit) = client.finish().await;
        assert_eq!((exit.signal.as_deref(), exit.status()), (Some("TERM"), 143));
    }

    #[tokio::test]
    async fn a_terminal_session_has_a_tty_follows_resizes_and_interrupts() {
        let pty = Pty { term: "xterm-256color".into(), size: WindowSize { cols: 80, rows: 24 } };
        let mut client = Client::open(Open::Shell { pty: Some(pty), env: Default::default() }).await;
        assert_eq!(client.next().await.unwrap().0, FrameKind::Started);
        client.send(FrameKind::Stdin, b"tty; echo TERM=$TERM; stty size\n").await;
        let shown = client.read_until("24 80").await;
        assert!(shown.contains("/dev/pts/") && shown.contains("TERM=xterm-256color"), "{shown}");
        client.send(FrameKind::Resize, &serde_json::to_vec(&WindowSize { cols: 100, rows: 40 }).unwrap()).await;
        client.send(FrameKind::Stdin, b"stty size\n").await;
        client.read_until("40 100").await;
        // Ctrl-C ends the foreground command, not the shell.
        // Once the command runs (it says so; the typed line reads SLEEP''ING).
        client.send(FrameKind::Stdin, b"sh -c \"echo SLEEP''ING; exec sleep 30\"\n").await;
        client.read_until("SLEEPING").await;
        client.send(FrameKind::Stdin, b"\x03").await;
        client.send(FrameKind::Stdin, b"echo after=$?\n").await;
        client.read_until("after=130").await;
        client.send(FrameKind::Stdin, b"exit 7\n").await;
        let (_, _, exit) = client.finish().await;
        assert_eq!(exit.status(), 7);
    }

    #[tokio::test]
    async fn a_connection_reaches_a_port_on_loopback_and_a_closed_port_is_refused() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut line = vec![0u8; 5];
            conn.read_exact(&mut line).await.unwrap();
            conn.write_all(&[b"echo:".as_slice(), &line].concat()).await.unwrap();
        });
        let mut client = Client::open(Open::Connect { port }).await;
        assert_eq!(client.next().await.unwrap().0, FrameKind::Started);
        client.send(FrameKind::Stdin, b"hello").await;
        let (out, _, exit) = client.finish().await;
        assert_eq!((out.as_str(), exit.code), ("echo:hello", Some(0)));

        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut client = Client::open(Open::Connect { port: closed }).await;
        let (kind, payload) = client.next().await.unwrap();
        let refusal: Refusal = serde_json::from_slice(&payload).unwrap();
        assert_eq!((kind, refusal.code.as_str()), (FrameKind::Refused, "connect-failed"));
    }

    #[tokio::test]
    async fn a_client_that_goes_away_takes_its_processes_along() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let mut client = Client::open(exec(&format!("echo $$ > {}; echo up; sleep 60", pidfile.display()), None)).await;
        assert_eq!(client.next().await.unwrap().0, FrameKind::Started);
        client.read_until("up").await;
        let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        drop(client);
        let mut gone = false;
        for _ in 0..100 {
            // SAFETY: signal 0 only checks that the process exists.
            if unsafe { libc::kill(pid, 0) } != 0 {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(gone, "the session's shell {pid} was ended");
    }

    #[tokio::test]
    async fn a_session_must_open_first() {
        let (mut ours, theirs) = tokio::io::duplex(4096);
        let context = SessionContext {
            processes: Arc::new(Processes::spawned_only()),
            workdir: std::env::temp_dir(),
            env: Default::default(),
            finalizing: false,
            sftp_server: None,
            touch: Arc::new(|| {}),
            background: Arc::new(crate::background::Background::new(&std::env::temp_dir().join("sluice-test-bg"))),
        };
        tokio::spawn(run(theirs, context));
        sluice_session::write_frames(&mut ours, FrameKind::Stdin, b"ls\n").await.unwrap();
        let (kind, _) = sluice_session::read_frame(&mut ours).await.unwrap().unwrap();
        assert_eq!(kind, FrameKind::Refused);
    }
}
