//! Capture-sourced workspaces end to end: the runtimes and object stores
//! the tests run on, sessions, launches and commands in an executor.

use std::time::Duration;

use serde_json::{Value, json};

use crate::docker_test_image;
use crate::s3::{BUCKET, S3Server};
use crate::server::{DataDir, Options, Server};

pub const READY_WITHIN: Duration = Duration::from_secs(90);

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Flavor {
    Bubblewrap,
    /// The local runtime where bubblewrap is not installed.
    Plain,
    Docker,
}

impl Flavor {
    pub fn all() -> Vec<Flavor> {
        let mut all = vec![Flavor::Bubblewrap, Flavor::Plain];
        if docker_test_image().is_some() {
            all.push(Flavor::Docker);
        }
        all
    }

    pub fn options(self) -> Options {
        let options = Options::serve().arg("--capture-interval-ms").arg("300");
        match self {
            Flavor::Bubblewrap => options.arg("--runtime").arg("local"),
            // Nothing of the server's own needs the PATH but its sandbox probe.
            Flavor::Plain => options.arg("--runtime").arg("local").env("PATH", "/nonexistent"),
            Flavor::Docker => options.arg("--runtime").arg("docker"),
        }
    }
}

impl Flavor {
    /// For drain tests: kept drains looked at often, FINAL flushes bounded
    /// short, and recovery only when asked, so a test sees `retained`
    /// before anything recovers it.
    pub fn drain_options(self) -> Options {
        self.options()
            .arg("--kept-poll-ms")
            .arg("200")
            .arg("--drain-flush-deadline-ms")
            .arg("3000")
            .arg("--recovery-base-seconds")
            .arg("3600")
    }
}

/// The object stores captures go to: the local directory, and a real
/// S3-compatible server where this machine has one.
pub fn stores() -> Vec<Option<S3Server>> {
    let mut stores = vec![None];
    if let Some(s3) = S3Server::start() {
        stores.push(Some(s3));
    }
    stores
}

/// Every runtime and every object store, each at least once: bubblewrap
/// on each store, plain on the local directory, Docker on S3 where there is
/// one (else the local directory). The store is the registrar's business,
/// the same whatever ran the executor, so pairing every runtime with every
/// store adds minutes and no coverage.
pub fn runtimes_and_stores() -> Vec<(Flavor, Option<S3Server>)> {
    let mut pairs: Vec<(Flavor, Option<S3Server>)> = stores().into_iter().map(|s| (Flavor::Bubblewrap, s)).collect();
    pairs.push((Flavor::Plain, None));
    if Flavor::all().contains(&Flavor::Docker) {
        pairs.push((Flavor::Docker, S3Server::start()));
    }
    pairs
}

pub fn with_store(options: Options, s3: Option<&S3Server>) -> Options {
    match s3 {
        None => options,
        Some(s3) => {
            let mut options = options.arg("--object-store").arg(format!("s3://{BUCKET}/captures"));
            for (name, value) in s3.env() {
                options = options.env(name, value);
            }
            options
        }
    }
}

pub async fn session(server: &Server, quota: Option<u64>) -> (String, String) {
    let mut body = json!({"ownerUserId": "alice"});
    if let Some(quota) = quota {
        body["quotaBytes"] = json!(quota);
    }
    let (status, session) = server.post("/v1/capture-sessions", &body).await;
    assert_eq!(status, 201, "{session}");
    (session["sessionId"].as_str().unwrap().to_owned(), session["token"].as_str().unwrap().to_owned())
}

/// Creates a capture-sourced workspace on the session and waits until it is ready.
pub async fn launch(server: &Server, session: &(String, String), launch_id: &str) -> (String, String) {
    launch_at(server, session, launch_id, None).await
}

/// The body that creates a workspace on the session, restoring capture
/// `capture_n` (`None`: the head).
pub fn workspace_body(session: &(String, String), launch_id: &str, capture_n: Option<u64>) -> Value {
    let mut source = json!({"kind": "capture", "sessionId": session.0});
    if let Some(n) = capture_n {
        source["captureN"] = json!(n);
    }
    json!({
        "ownerUserId": "alice", "registryId": "host", "repository": "sluice-test/busybox", "tag": "1",
        "launchId": launch_id,
        "spec": {"command": ["sleep", "600"], "source": source},
        "captureToken": session.1,
    })
}

/// [`launch`], restoring capture `capture_n` of the session.
pub async fn launch_at(
    server: &Server,
    session: &(String, String),
    launch_id: &str,
    capture_n: Option<u64>,
) -> (String, String) {
    let body = workspace_body(session, launch_id, capture_n);
    let (status, created) = server.post("/v1/workspaces", &body).await;
    assert_eq!(status, 202, "{created}");
    let id = created["workspaceId"].as_str().unwrap().to_owned();
    let ready =
        server.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "ready" || w["status"] == "failed").await;
    assert_eq!(ready["status"], "ready", "{ready}\n{}", server.output());
    (id, ready["runtime"]["runId"].as_str().unwrap().to_owned())
}

/// Alice's workspace's capture status, as `GET …/capture` answers it.
pub async fn capture_status(server: &Server, id: &str) -> Value {
    let (status, body) = server.get(&format!("/v1/workspaces/{id}/capture?ownerUserId=alice")).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// Runs one shell script in the workspace and answers its result.
pub async fn sh(server: &Server, id: &str, script: &str) -> Value {
    let commands = json!([{"argv": ["/bin/busybox", "sh", "-c", script]}]);
    let (status, run) =
        server.post(&format!("/v1/workspaces/{id}/exec"), &json!({"ownerUserId": "alice", "commands": commands})).await;
    assert_eq!(status, 202, "{run}");
    server.run_ended("alice", run["runId"].as_str().unwrap(), Duration::from_secs(60)).await
}

/// Runs a script that must succeed; answers its stdout.
pub async fn sh_ok(server: &Server, id: &str, script: &str) -> String {
    let run = sh(server, id, script).await;
    assert_eq!(run["status"], "completed", "{run}");
    let result = &run["commands"][0];
    assert_eq!(result["exitCode"], 0, "{script}: {run}");
    result["stdout"].as_str().unwrap().to_owned()
}

/// Runs the docker CLI; answers what it printed.
pub fn docker(args: &[&str]) -> String {
    let out = std::process::Command::new("docker").args(args).output().expect("docker runs");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The executor's processes: the one the runtime started (bubblewrap, or
/// the daemon itself) and everything under it.
pub fn executor_processes(dir: &DataDir, run_id: &str) -> Vec<i32> {
    let text = std::fs::read_to_string(dir.executors().join(run_id).join("daemon.pid")).unwrap();
    let root: i32 = text.trim().parse().unwrap();
    let parents: Vec<(i32, i32)> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(parents.iter().filter(|(_, ppid)| *ppid == parent).map(|(pid, _)| *pid));
        i += 1;
    }
    tree
}

pub fn signal_executor(dir: &DataDir, run_id: &str, signal: i32) {
    for pid in executor_processes(dir, run_id) {
        // SAFETY: a signal to a test executor's own processes.
        unsafe { libc::kill(pid, signal) };
    }
}

/// Freezes (or thaws) the executor's daemon: it stops answering while the
/// executor keeps running.
pub fn silence(flavor: Flavor, dir: &DataDir, run_id: &str, silent: bool) {
    match flavor {
        Flavor::Docker => {
            docker(&[if silent { "pause" } else { "unpause" }, &format!("sluice-{run_id}")]);
        }
        _ => signal_executor(dir, run_id, if silent { libc::SIGSTOP } else { libc::SIGCONT }),
    }
}

/// Kills the executor from the host, as a crash would: its disk stays.
pub fn kill_executor(flavor: Flavor, dir: &DataDir, run_id: &str) {
    match flavor {
        Flavor::Docker => {
            docker(&["kill", &format!("sluice-{run_id}")]);
        }
        _ => signal_executor(dir, run_id, libc::SIGKILL),
    }
}
