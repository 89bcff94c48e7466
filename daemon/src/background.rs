//! Processes the daemon keeps running for the control plane (a dev server,
//! a watcher): started as the workload through the same gate as every
//! command, they outlive the request and any exec, and end when they exit,
//! are signalled, or a final flush stops every writer. Their output is kept
//! on the executor's disk, the newest [`KEEP_BYTES`] of it, each record at
//! a position that never changes, so a reader resumes where it left off and
//! is told what was cut before it.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use sluice_protocol::background::{OutputItem, ProcessInfo, StartRequest};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{ChildStdin, Command};

use crate::processes::{Processes, SpawnError};

/// Output kept per process: past twice this, the oldest is cut down to it.
pub const KEEP_BYTES: u64 = 4 << 20;
/// Processes one executor keeps at once: past it, the longest ended one
/// is forgotten (its output with it); a running one never is.
const MAX_PROCESSES: usize = 256;
/// A record's header: its stream (1 stdout, 2 stderr) and length.
const HEADER: usize = 5;

/// A process's kept output: records appended to a file, the oldest cut
/// off as it grows; `base` is the position of the file's first byte.
struct Log {
    path: PathBuf,
    base: u64,
    len: u64,
}

impl Log {
    fn append(&mut self, stream: u8, bytes: &[u8]) -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&self.path)?;
        let mut record = Vec::with_capacity(HEADER + bytes.len());
        record.push(stream);
        record.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        record.extend_from_slice(bytes);
        file.write_all(&record)?;
        self.len += record.len() as u64;
        if self.len > 2 * KEEP_BYTES {
            self.cut()?;
        }
        Ok(())
    }

    /// Keeps the newest records of at most [`KEEP_BYTES`], from a record's start.
    fn cut(&mut self) -> std::io::Result<()> {
        let mut file = std::fs::File::open(&self.path)?;
        let mut offset = 0u64;
        let mut header = [0u8; HEADER];
        while self.len - offset > KEEP_BYTES {
            file.seek(SeekFrom::Start(offset))?;
            file.read_exact(&mut header)?;
            offset += (HEADER + u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize) as u64;
        }
        file.seek(SeekFrom::Start(offset))?;
        let kept_path = self.path.with_extension("kept");
        let mut kept = std::fs::File::create(&kept_path)?;
        std::io::copy(&mut file, &mut kept)?;
        std::fs::rename(&kept_path, &self.path)?;
        self.base += offset;
        self.len -= offset;
        Ok(())
    }

    /// Passes each kept record from `at` (a record's start, at or after
    /// `base`) to `each` (its stream, bytes and the next record's position)
    /// until about `max` bytes were passed.
    fn each_record(&self, mut at: u64, max: usize, mut each: impl FnMut(u8, Vec<u8>, u64)) -> std::io::Result<()> {
        let end = self.base + self.len;
        if at >= end {
            return Ok(());
        }
        let mut file = std::fs::File::open(&self.path)?;
        file.seek(SeekFrom::Start(at - self.base))?;
        let mut taken = 0usize;
        let mut header = [0u8; HEADER];
        while at < end && taken < max {
            file.read_exact(&mut header)?;
            let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
            let mut bytes = vec![0u8; len];
            file.read_exact(&mut bytes)?;
            at += (HEADER + len) as u64;
            taken += len;
            each(header[0], bytes, at);
        }
        Ok(())
    }

    /// Records from `after` on, at most about `max` bytes of them; a cut
    /// first when `after` is before what is kept.
    fn read(&self, after: u64, max: usize) -> std::io::Result<Vec<OutputItem>> {
        let mut items = Vec::new();
        let mut at = after;
        if at < self.base {
            items.push(OutputItem::Cut { from: at, to: self.base });
            at = self.base;
        }
        self.each_record(at, max, |stream, bytes, position| {
            let stream = if stream == 2 { "stderr" } else { "stdout" };
            items.push(OutputItem::Output {
                stream: stream.into(),
                text: String::from_utf8_lossy(&bytes).into_owned(),
                position,
            });
        })?;
        Ok(items)
    }

    /// The kept output's bytes, each stream's first `limit` of them, and
    /// whether any was cut (here, or before it was kept).
    fn collected(&self, limit: usize) -> std::io::Result<Collected> {
        let mut collected = Collected { truncated: self.base > 0, ..Collected::default() };
        self.each_record(self.base, usize::MAX, |stream, bytes, _| {
            let into = if stream == 2 { &mut collected.stderr } else { &mut collected.stdout };
            let room = limit.saturating_sub(into.len());
            collected.truncated |= bytes.len() > room;
            into.extend_from_slice(&bytes[..bytes.len().min(room)]);
        })?;
        Ok(collected)
    }
}

/// A process's output as bytes, for a caller that wants it whole.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Collected {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub truncated: bool,
}

struct Process {
    info: Mutex<ProcessInfo>,
    pgid: i32,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    log: Mutex<Log>,
    /// Told when output is appended or the process ends.
    moved: tokio::sync::watch::Sender<u64>,
}

/// The daemon's background processes.
pub struct Background {
    dir: PathBuf,
    processes: Mutex<HashMap<String, Arc<Process>>>,
}

/// Why a process call was refused: a code of the session protocol and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub code: &'static str,
    pub message: String,
}

fn refused(code: &'static str, message: impl Into<String>) -> Refused {
    Refused { code, message: message.into() }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

impl Background {
    pub fn new(state_dir: &Path) -> Background {
        Background { dir: state_dir.join("processes"), processes: Mutex::new(HashMap::new()) }
    }

    fn get(&self, id: &str) -> Result<Arc<Process>, Refused> {
        let found = self.processes.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned();
        found.ok_or_else(|| refused("not-found", "no process of this executor has that id"))
    }

    /// Starts a process as the workload, in `workdir` (or its `cwd`), with
    /// the workspace's environment `env` and its own.
    pub fn start(
        self: &Arc<Self>,
        request: StartRequest,
        workdir: &Path,
        env: &std::collections::BTreeMap<String, String>,
        processes: &Processes,
    ) -> Result<ProcessInfo, Refused> {
        let Some(program) = request.argv.first().filter(|p| !p.is_empty()) else {
            return Err(refused("invalid", "argv must name a program"));
        };
        self.make_room()?;
        let id = format!("proc_{:016x}", rand_u64());
        let dir = self.dir.join(&id);
        std::fs::create_dir_all(&dir).map_err(|e| refused("failed", format!("cannot keep its output: {e}")))?;
        let mut command = Command::new(program);
        command
            .args(&request.argv[1..])
            .current_dir(crate::exec::resolve_cwd(workdir, request.cwd.as_deref()))
            .envs(env)
            .envs(&request.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        crate::workload::confine(&mut command, processes.ids());
        let mut child = match processes.spawn(&mut command) {
            Ok(child) => child,
            Err(SpawnError::Finalized) => return Err(refused("finalized", "a final flush ended this executor's work")),
            Err(SpawnError::Io(e)) => return Err(refused("cannot-start", format!("cannot run {program}: {e}"))),
        };
        let pgid = child.id().and_then(|id| i32::try_from(id).ok()).unwrap_or(0);
        let info = ProcessInfo {
            id: id.clone(),
            name: request.name,
            argv: request.argv,
            cwd: request.cwd,
            state: "running".into(),
            started_ms: now_ms(),
            ended_ms: None,
            exit_code: None,
            signal: None,
        };
        let (moved, _) = tokio::sync::watch::channel(0);
        let process = Arc::new(Process {
            info: Mutex::new(info.clone()),
            pgid,
            stdin: tokio::sync::Mutex::new(child.stdin.take()),
            log: Mutex::new(Log { path: dir.join("output"), base: 0, len: 0 }),
            moved,
        });
        self.processes.lock().unwrap_or_else(|e| e.into_inner()).insert(id, process.clone());
        let readers: Vec<_> = [
            child.stdout.take().map(|o| (1u8, Box::new(o) as Box<dyn AsyncRead + Unpin + Send>)),
            child.stderr.take().map(|e| (2u8, Box::new(e) as Box<dyn AsyncRead + Unpin + Send>)),
        ]
        .into_iter()
        .flatten()
        .map(|(stream, reader)| tokio::spawn(keep_output(process.clone(), stream, reader)))
        .collect();
        tokio::spawn(async move {
            let status = child.wait().await.ok();
            // What it left running in its group ends with it (as with an
            // exec); a descendant that left the group may hold its output
            // open, so that is read for a moment, not waited for.
            if pgid > 0 {
                // SAFETY: killpg only sends a signal; the group was the process's own.
                unsafe { libc::killpg(pgid, libc::SIGKILL) };
            }
            let drained = futures::future::join_all(readers);
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), drained).await;
            let mut info = process.info.lock().unwrap_or_else(|e| e.into_inner());
            info.ended_ms = Some(now_ms());
            match status {
                Some(status) if status.signal().is_some() => {
                    info.state = "signalled".into();
                    let number = status.signal().unwrap_or(0);
                    info.signal = Some(
                        sluice_protocol::session::signal_name(number).map_or_else(|| number.to_string(), str::to_owned),
                    );
                }
                Some(status) => {
                    info.state = "exited".into();
                    info.exit_code = status.code();
                }
                None => info.state = "exited".into(),
            }
            drop(info);
            process.moved.send_modify(|n| *n += 1);
        });
        Ok(info)
    }

    /// Forgets the longest ended process when the executor keeps its
    /// most; refuses when every one it keeps still runs.
    fn make_room(&self) -> Result<(), Refused> {
        let mut processes = self.processes.lock().unwrap_or_else(|e| e.into_inner());
        if processes.len() < MAX_PROCESSES {
            return Ok(());
        }
        let oldest = processes
            .iter()
            .filter_map(|(id, p)| {
                p.info.lock().unwrap_or_else(|e| e.into_inner()).ended_ms.map(|ended| (ended, id.clone()))
            })
            .min();
        let Some((_, id)) = oldest else {
            return Err(refused("invalid", format!("this executor runs at most {MAX_PROCESSES} processes at once")));
        };
        processes.remove(&id);
        let _ = std::fs::remove_dir_all(self.dir.join(&id));
        Ok(())
    }

    /// The process once it has ended.
    pub async fn ended(&self, id: &str) -> Result<ProcessInfo, Refused> {
        let process = self.get(id)?;
        let mut moved = process.moved.subscribe();
        loop {
            let info = process.info.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if info.ended_ms.is_some() {
                return Ok(info);
            }
            if moved.changed().await.is_err() {
                return Err(refused("failed", "the process was forgotten"));
            }
        }
    }

    /// The process's kept output as bytes, each stream's first `limit`.
    pub fn collected(&self, id: &str, limit: usize) -> Result<Collected, Refused> {
        let process = self.get(id)?;
        let log = process.log.lock().unwrap_or_else(|e| e.into_inner());
        log.collected(limit).map_err(|e| refused("failed", format!("its output cannot be read: {e}")))
    }

    pub fn list(&self) -> Vec<ProcessInfo> {
        let processes = self.processes.lock().unwrap_or_else(|e| e.into_inner());
        let mut list: Vec<ProcessInfo> =
            processes.values().map(|p| p.info.lock().unwrap_or_else(|e| e.into_inner()).clone()).collect();
        list.sort_by(|a, b| (a.started_ms, &a.id).cmp(&(b.started_ms, &b.id)));
        list
    }

    /// Sends `signal` (a name without `SIG`) to the process's group.
    pub fn signal(&self, id: &str, signal: &str) -> Result<ProcessInfo, Refused> {
        let process = self.get(id)?;
        let number = sluice_protocol::session::signal_number(signal).ok_or_else(|| {
            refused("invalid", "signal must be one of HUP, INT, QUIT, KILL, USR1, USR2, PIPE, ALRM, TERM")
        })?;
        let info = process.info.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if info.state == "running" && process.pgid > 0 {
            // SAFETY: killpg only sends a signal; the group is the process's own.
            unsafe { libc::killpg(process.pgid, number) };
        }
        Ok(info)
    }

    /// Writes `bytes` to the process's input; `eof` closes it after.
    pub async fn write_stdin(&self, id: &str, bytes: &[u8], eof: bool) -> Result<(), Refused> {
        use tokio::io::AsyncWriteExt;
        let process = self.get(id)?;
        let mut stdin = process.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else { return Err(refused("invalid", "the process's input is closed")) };
        if !bytes.is_empty() {
            pipe.write_all(bytes).await.map_err(|e| refused("failed", format!("its input cannot be written: {e}")))?;
        }
        if eof {
            stdin.take();
        }
        Ok(())
    }

    /// The process's output from `after`, then (with `follow`) each record
    /// as it comes, sent to `out` as JSON; ends once the process ended and
    /// all of it was sent (or at once without `follow`), or when `out` goes.
    pub async fn follow(
        &self,
        id: &str,
        mut after: u64,
        follow: bool,
        out: &tokio::sync::mpsc::Sender<Vec<u8>>,
    ) -> Result<(), Refused> {
        let process = self.get(id)?;
        let mut moved = process.moved.subscribe();
        loop {
            let ended = process.info.lock().unwrap_or_else(|e| e.into_inner()).ended_ms.is_some();
            let items = {
                let log = process.log.lock().unwrap_or_else(|e| e.into_inner());
                log.read(after, 256 * 1024).map_err(|e| refused("failed", format!("its output cannot be read: {e}")))?
            };
            let caught_up = items.is_empty();
            for item in items {
                match &item {
                    OutputItem::Output { position, .. } => after = *position,
                    OutputItem::Cut { to, .. } => after = *to,
                    OutputItem::Ended { .. } => {}
                }
                if out.send(serde_json::to_vec(&item).unwrap_or_default()).await.is_err() {
                    return Ok(());
                }
            }
            if caught_up && (ended || !follow) {
                if ended {
                    let process = process.info.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    let _ = out.send(serde_json::to_vec(&OutputItem::Ended { process }).unwrap_or_default()).await;
                }
                return Ok(());
            }
            if caught_up {
                tokio::select! {
                    changed = moved.changed() => if changed.is_err() { return Ok(()) },
                    _ = out.closed() => return Ok(()),
                }
            }
        }
    }
}

/// Copies a stream of the process into its kept output.
async fn keep_output(process: Arc<Process>, stream: u8, mut reader: Box<dyn AsyncRead + Unpin + Send>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let kept = process.log.lock().unwrap_or_else(|e| e.into_inner()).append(stream, &buf[..n]);
                if let Err(e) = kept {
                    log_line!("sluiced: a background process's output could not be kept: {e}");
                }
                process.moved.send_modify(|n| *n += 1);
            }
        }
    }
}

fn rand_u64() -> u64 {
    let mut bytes = [0u8; 8];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)).is_err() {
        bytes = (now_ms() as u64 ^ u64::from(std::process::id())).to_be_bytes();
    }
    u64::from_be_bytes(bytes)
}

/// Serves one process call on a session (see the protocol).
pub async fn serve<R: tokio::io::AsyncRead + Unpin>(
    op: sluice_protocol::background::ProcessOp,
    mut reader: R,
    outbox: &tokio::sync::mpsc::Sender<(sluice_protocol::session::FrameKind, Vec<u8>)>,
    background: &Arc<Background>,
    start_in: (&Path, &std::collections::BTreeMap<String, String>, &Processes),
    touch: &(dyn Fn() + Send + Sync),
) {
    use sluice_protocol::background::ProcessOp;
    use sluice_protocol::session::FrameKind;
    let (workdir, env, processes) = start_in;
    let answered = match op {
        ProcessOp::Start { request } => {
            touch();
            background
                .start(request, workdir, env, processes)
                .map(|info| serde_json::to_value(info).unwrap_or_default())
        }
        ProcessOp::List => Ok(serde_json::json!({ "processes": background.list() })),
        ProcessOp::Signal { id, signal } => {
            background.signal(&id, &signal).map(|info| serde_json::to_value(info).unwrap_or_default())
        }
        ProcessOp::Stdin { id, eof } => {
            let _ = outbox.send((FrameKind::Started, Vec::new())).await;
            let mut written = Ok(());
            loop {
                match sluice_session::read_frame(&mut reader).await {
                    Ok(Some((FrameKind::Stdin, bytes))) => {
                        if written.is_ok() {
                            written = background.write_stdin(&id, &bytes, false).await;
                        }
                    }
                    Ok(Some((FrameKind::StdinEof, _))) => break,
                    Ok(Some(_)) => {}
                    // Gone before its input ended: nothing more is written.
                    _ => return,
                }
            }
            match written {
                Ok(()) if eof => background.write_stdin(&id, &[], true).await,
                other => other,
            }
            .map(|()| serde_json::json!({}))
        }
        ProcessOp::Output { id, after, follow } => {
            if let Err(refusal) = background.get(&id) {
                return refuse(outbox, refusal).await;
            }
            let _ = outbox.send((FrameKind::Started, Vec::new())).await;
            let (items, mut said) = tokio::sync::mpsc::channel(64);
            let following = background.follow(&id, after, follow, &items);
            tokio::pin!(following);
            loop {
                tokio::select! {
                    result = &mut following => {
                        if let Err(refusal) = result {
                            return refuse(outbox, refusal).await;
                        }
                        break;
                    }
                    Some(item) = said.recv() => {
                        if outbox.send((FrameKind::Stdout, item)).await.is_err() {
                            return;
                        }
                    }
                    frame = sluice_session::read_frame(&mut reader) => match frame {
                        Ok(Some(_)) => touch(),
                        _ => return,
                    },
                }
            }
            while let Ok(item) = said.try_recv() {
                let _ = outbox.send((FrameKind::Stdout, item)).await;
            }
            Ok(serde_json::json!({}))
        }
    };
    match answered {
        Ok(value) => {
            let _ = outbox.send((FrameKind::Result, serde_json::to_vec(&value).unwrap_or_default())).await;
        }
        Err(refusal) => refuse(outbox, refusal).await,
    }
}

async fn refuse(outbox: &tokio::sync::mpsc::Sender<(sluice_protocol::session::FrameKind, Vec<u8>)>, refusal: Refused) {
    let body = sluice_protocol::session::Refusal { code: refusal.code.into(), message: refusal.message };
    let _ = outbox
        .send((sluice_protocol::session::FrameKind::Refused, serde_json::to_vec(&body).unwrap_or_default()))
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_output_is_cut_at_record_starts_and_readers_are_told() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = Log { path: dir.path().join("output"), base: 0, len: 0 };
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..10 {
            log.append(1, &chunk).unwrap();
        }
        assert!(log.len <= 2 * KEEP_BYTES && log.base > 0, "cut: base {} len {}", log.base, log.len);
        let items = log.read(0, 1 << 30).unwrap();
        assert_eq!(items[0], OutputItem::Cut { from: 0, to: log.base });
        let OutputItem::Output { position, .. } = items.last().unwrap() else { panic!("output") };
        assert_eq!(*position, log.base + log.len, "read to the end");
        assert!(log.read(*position, 1 << 30).unwrap().is_empty(), "nothing after the end");
        let first_kept = match &items[1] {
            OutputItem::Output { position, text, .. } => position - (text.len() + HEADER) as u64,
            other => panic!("{other:?}"),
        };
        assert_eq!(first_kept, log.base, "records start where the cut ended");
    }

    /// A process that is kept but not running (or still running).
    fn kept(background: &Background, id: &str, ended_ms: Option<i64>) {
        let dir = background.dir.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        let info = ProcessInfo {
            id: id.into(),
            name: None,
            argv: vec!["true".into()],
            cwd: None,
            state: if ended_ms.is_some() { "exited" } else { "running" }.into(),
            started_ms: 0,
            ended_ms,
            exit_code: None,
            signal: None,
        };
        let process = Process {
            info: Mutex::new(info),
            pgid: 0,
            stdin: tokio::sync::Mutex::new(None),
            log: Mutex::new(Log { path: dir.join("output"), base: 0, len: 0 }),
            moved: tokio::sync::watch::channel(0).0,
        };
        background.processes.lock().unwrap().insert(id.into(), Arc::new(process));
    }

    #[test]
    fn past_the_kept_count_the_longest_ended_process_is_forgotten_and_a_running_one_never() {
        let dir = tempfile::tempdir().unwrap();
        let background = Background::new(dir.path());
        for n in 0..MAX_PROCESSES - 2 {
            kept(&background, &format!("proc_run_{n}"), None);
        }
        kept(&background, "proc_late", Some(2_000));
        kept(&background, "proc_early", Some(1_000));
        background.make_room().unwrap();
        let ids: Vec<String> = background.list().into_iter().map(|p| p.id).collect();
        assert!(!ids.contains(&"proc_early".to_owned()) && ids.contains(&"proc_late".to_owned()));
        assert!(!background.dir.join("proc_early").exists(), "its kept output goes with it");
        assert!(background.make_room().is_ok(), "there is room now");
        kept(&background, "proc_run_last", None);
        background.make_room().unwrap();
        assert!(background.get("proc_late").is_err(), "the next one to go was the one ended");
        kept(&background, "proc_run_full", None);
        assert_eq!(background.make_room().unwrap_err().code, "invalid", "every kept process runs");
    }

    #[tokio::test]
    async fn what_a_process_left_in_its_group_ends_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let background = Arc::new(Background::new(dir.path()));
        let processes = Processes::new(None);
        let request = StartRequest {
            argv: vec!["sh".into(), "-c".into(), "sleep 60 & echo $!".into()],
            cwd: None,
            env: Default::default(),
            name: None,
        };
        let started = background.start(request, dir.path(), &Default::default(), &processes).unwrap();
        let ended = tokio::time::timeout(std::time::Duration::from_secs(10), background.ended(&started.id));
        assert_eq!(ended.await.unwrap().unwrap().exit_code, Some(0));
        let said = background.collected(&started.id, 64).unwrap().stdout;
        let left: i32 = String::from_utf8(said).unwrap().trim().parse().unwrap();
        // A killed process is gone once the kernel has ended it (a zombie
        // until whoever inherited it reaps it): looked at for a few seconds.
        let mut state = String::new();
        for _ in 0..100 {
            state = std::fs::read_to_string(format!("/proc/{left}/stat")).unwrap_or_default();
            let running = state.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z'));
            if !running {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("the sleep it left was not killed with its group: {state}");
    }

    #[test]
    fn collected_output_is_each_streams_first_bytes_and_says_what_was_cut() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = Log { path: dir.path().join("output"), base: 0, len: 0 };
        for (stream, bytes) in [(1, &b"out-1 "[..]), (2, b"err"), (1, b"out-2")] {
            log.append(stream, bytes).unwrap();
        }
        let whole = log.collected(100).unwrap();
        assert_eq!(whole, Collected { stdout: b"out-1 out-2".to_vec(), stderr: b"err".to_vec(), truncated: false });
        let capped = log.collected(8).unwrap();
        assert_eq!((capped.stdout.as_slice(), capped.truncated), (&b"out-1 ou"[..], true));
        log.append(1, &vec![b'x'; 2 * KEEP_BYTES as usize]).unwrap();
        assert!(log.collected(usize::MAX).unwrap().truncated, "the start was cut before it was read");
    }
}
