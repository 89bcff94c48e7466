//! A real `sluice` process (serve, api or worker) for end-to-end tests, and
//! a data directory that cleans up the executors its servers started.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::{free_port, read, sluice_binary};

/// How a server is configured.
#[derive(Clone, Copy, Debug)]
pub enum Via {
    Flags,
    Environment,
}

/// What to start.
#[derive(Clone, Debug)]
pub struct Options {
    /// `serve`, `api` or `worker`.
    pub command: &'static str,
    pub database_url: Option<String>,
    pub via: Via,
    /// Extra arguments after the command's own.
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Runs the server as this uid (and gid) instead of the test's own.
    pub run_as: Option<u32>,
    /// Runs the server in this network namespace, listening on all its
    /// addresses and reached at `reach` (an address inside it).
    pub netns: Option<(String, String)>,
    /// Directories the server cannot see: each covered by an empty tmpfs in
    /// a mount namespace of its own (with `netns` only).
    pub hidden: Vec<PathBuf>,
}

impl Options {
    pub fn serve() -> Options {
        Options {
            command: "serve",
            database_url: None,
            via: Via::Flags,
            args: Vec::new(),
            env: Vec::new(),
            run_as: None,
            netns: None,
            hidden: Vec::new(),
        }
    }

    /// Hides `dir` from the server (see [`Options::hidden`]).
    pub fn hide(mut self, dir: &Path) -> Options {
        self.hidden.push(dir.to_owned());
        self
    }

    /// Runs in the network namespace `name`, reached at `address` there.
    pub fn netns(mut self, name: &str, address: &str) -> Options {
        self.netns = Some((name.to_owned(), address.to_owned()));
        self
    }

    pub fn command(command: &'static str) -> Options {
        Options { command, ..Options::serve() }
    }

    pub fn database(mut self, url: Option<&str>) -> Options {
        self.database_url = url.map(str::to_owned);
        self
    }

    pub fn via(mut self, via: Via) -> Options {
        self.via = via;
        self
    }

    pub fn arg(mut self, arg: impl Into<String>) -> Options {
        self.args.push(arg.into());
        self
    }

    pub fn args<'a>(mut self, args: impl IntoIterator<Item = &'a str>) -> Options {
        self.args.extend(args.into_iter().map(str::to_owned));
        self
    }

    pub fn run_as(mut self, uid: u32) -> Options {
        self.run_as = Some(uid);
        self
    }

    pub fn env(mut self, name: &str, value: impl Into<String>) -> Options {
        self.env.push((name.to_owned(), value.into()));
        self
    }
}

pub struct Server {
    child: Option<Child>,
    /// Everything the process printed, read as it prints: a full pipe would block it.
    output: Arc<Mutex<String>>,
    readers: Vec<std::thread::JoinHandle<()>>,
    pub base: String,
    pub token: String,
    pub client: reqwest::Client,
}

fn drain(mut from: impl Read + Send + 'static, into: Arc<Mutex<String>>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            into.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
}

impl Server {
    /// `sluice serve` on `data_dir`, healthy.
    pub async fn start(data_dir: &Path, database_url: Option<&str>) -> Server {
        Self::start_with(data_dir, Options::serve().database(database_url)).await
    }

    /// Starts the command; an HTTP one is waited for until healthy.
    pub async fn start_with(data_dir: &Path, options: Options) -> Server {
        let port = free_port();
        let (listen, base) = match &options.netns {
            Some((_, address)) => (format!("0.0.0.0:{port}"), format!("http://{address}:{port}")),
            None => (format!("127.0.0.1:{port}"), format!("http://127.0.0.1:{port}")),
        };
        let http = options.command != "worker";
        let mut cmd = match options.run_as {
            _ if options.netns.is_some() => {
                // Only the network namespace: `ip netns exec` would also
                // mount a sysfs of its own, without the host's cgroups.
                let (name, _) = options.netns.as_ref().unwrap();
                let mut c = Command::new("nsenter");
                c.arg(format!("--net=/run/netns/{name}")).arg("--");
                if !options.hidden.is_empty() {
                    let mounts: Vec<String> =
                        options.hidden.iter().map(|d| format!("mount -t tmpfs hidden '{}' && ", d.display())).collect();
                    c.args(["unshare", "-m", "--propagation", "private", "sh", "-c"])
                        .arg(format!("{}exec \"$0\" \"$@\"", mounts.concat()));
                }
                c.arg(sluice_binary());
                c
            }
            Some(uid) => {
                let mut c = Command::new("/usr/bin/setpriv");
                c.arg(format!("--reuid={uid}")).arg(format!("--regid={uid}")).args(["--clear-groups", "--"]);
                c.arg(sluice_binary());
                c
            }
            None => Command::new(sluice_binary()),
        };
        cmd.arg(options.command)
            .env_remove("SLUICE_API_TOKENS")
            .env_remove("SLUICE_DATABASE_URL")
            .env("SLUICE_LOG", "debug,hyper=info,bollard=info");
        match options.via {
            Via::Flags => {
                cmd.arg("--data-dir").arg(data_dir);
                if http {
                    cmd.arg("--listen").arg(&listen);
                }
                if let Some(url) = &options.database_url {
                    cmd.arg("--database-url").arg(url);
                }
            }
            Via::Environment => {
                cmd.env("SLUICE_DATA_DIR", data_dir).env("SLUICE_LISTEN", &listen);
                if let Some(url) = &options.database_url {
                    cmd.env("SLUICE_DATABASE_URL", url);
                }
            }
        }
        cmd.args(&options.args).envs(options.env.iter().map(|(k, v)| (k, v)));
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start sluice");
        let output = Arc::new(Mutex::new(String::new()));
        let readers = vec![
            drain(child.stdout.take().unwrap(), output.clone()),
            drain(child.stderr.take().unwrap(), output.clone()),
        ];
        // Owned by the Server from here, so a failed start still stops the process.
        let mut server =
            Server { child: Some(child), output, readers, base, token: String::new(), client: crate::http_client() };
        if !http {
            return server;
        }
        let healthy = crate::wait_for(Duration::from_secs(20), || {
            if let Some(status) = server.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("sluice {} exited with {status}:\n{}", options.command, server.output());
            }
            let answer = server.client.get(format!("{}/healthz", server.base)).send();
            async move { answer.await.is_ok_and(|r| r.status() == 200).then_some(()) }
        })
        .await;
        assert!(healthy.is_some(), "sluice {} did not become healthy:\n{}", options.command, server.output());
        server.token = std::fs::read_to_string(data_dir.join("api-token")).unwrap().trim().to_owned();
        server
    }

    /// Runs an operator command of the `sluice` binary against this server
    /// (its API URL, and `dir` for the token): whether it succeeded, and
    /// everything it printed.
    pub fn operate(&self, dir: &DataDir, args: &[&str]) -> (bool, String) {
        let out = Command::new(sluice_binary())
            .args(args)
            .arg("--api-url")
            .arg(&self.base)
            .arg("--data-dir")
            .arg(dir.path())
            .output()
            .expect("the sluice binary runs");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!text.contains(&self.token), "the token is never printed: {text}");
        (out.status.success(), text)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Everything printed so far.
    pub fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// Stops the server with SIGTERM, checks it exited cleanly, and returns
    /// everything it printed.
    pub fn stop(mut self) -> String {
        let mut child = self.child.take().unwrap();
        let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
        let status = child.wait().unwrap();
        for reader in self.readers.drain(..) {
            reader.join().unwrap();
        }
        let output = self.output();
        assert!(status.success(), "sluice exited with {status}:\n{output}");
        output
    }

    /// Kills the process with SIGKILL (no cleanup of any kind).
    pub fn kill(mut self) -> String {
        let mut child = self.child.take().unwrap();
        let _ = child.kill();
        let _ = child.wait();
        for reader in self.readers.drain(..) {
            reader.join().unwrap();
        }
        self.output()
    }

    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let r =
            self.client.post(format!("{}{path}", self.base)).bearer_auth(&self.token).json(body).send().await.unwrap();
        read(r).await
    }

    /// A series' value as `/metrics` shows it now, by its exact name and
    /// labels (`sluice_x_total{a="b"}`); `None` when it is not there.
    pub async fn metric(&self, series: &str) -> Option<f64> {
        let text = self.client.get(format!("{}/metrics", self.base)).bearer_auth(&self.token).send().await.ok()?;
        let text = text.text().await.ok()?;
        text.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self.client.get(format!("{}{path}", self.base)).bearer_auth(&self.token).send().await.unwrap();
        read(r).await
    }

    /// Creates alice's workspace that sleeps (busybox, local registry);
    /// answers its id.
    pub async fn create_sleeper(&self) -> String {
        let body = serde_json::json!({
            "ownerUserId": "alice", "registryId": "host", "repository": "sluice-test/busybox", "tag": "1",
            "spec": {"command": ["sleep", "600"]},
        });
        let (status, created) = self.post("/v1/workspaces", &body).await;
        assert_eq!(status, 202, "{created}");
        created["workspaceId"].as_str().unwrap().to_owned()
    }

    /// Alice's workspace's stored events, as `GET …/events` lists them.
    pub async fn stored_events(&self, id: &str) -> Vec<Value> {
        let (status, list) = self.get(&format!("/v1/workspaces/{id}/events?ownerUserId=alice&limit=1000")).await;
        assert_eq!(status, 200, "{list}");
        list["items"].as_array().unwrap().clone()
    }

    /// The typed client (`sluice-client`) for this server's API.
    pub fn api(&self) -> sluice_client::Client {
        sluice_client::with_token(&self.base, &self.token).expect("a client")
    }

    /// Polls the owner's workspace, through the typed client (so every
    /// answer is also read as the OpenAPI document describes it), until
    /// `done` holds for it; panics with the last answer after `within`.
    pub async fn wait_for(&self, owner: &str, id: &str, within: Duration, done: impl Fn(&Value) -> bool) -> Value {
        let api = self.api();
        let read = || {
            let get = api.get_workspace().workspace_id(id).owner_user_id(owner).send();
            async move {
                match get.await {
                    Ok(workspace) => serde_json::to_value(workspace.into_inner()).expect("a workspace serializes"),
                    Err(e) => panic!("GET workspace {id} failed: {e}\n--- server output ---\n{}", self.output()),
                }
            }
        };
        crate::read_until(within, read, done).await.unwrap_or_else(|last| {
            panic!(
                "workspace {id} did not get there in {within:?}; last: {last}\n--- server output ---\n{}",
                self.output()
            )
        })
    }

    /// Opens the Server-Sent Events stream at `path` (after `last`, if
    /// any), reads up to `take` events or until `idle` passes without one,
    /// and hangs up; answers the status and what was read.
    pub async fn read_stream(
        &self,
        path: &str,
        last: Option<&str>,
        take: usize,
        idle: Duration,
    ) -> (u16, Vec<Received>) {
        let mut request = self.client.get(format!("{}{path}", self.base)).bearer_auth(&self.token);
        if let Some(id) = last {
            request = request.header("last-event-id", id);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        if status != 200 {
            return (status, Vec::new());
        }
        let mut reader = SseReader::new(response);
        let mut received = Vec::new();
        while received.len() < take {
            match reader.next(idle).await {
                Some(event) => received.push(event),
                None => break,
            }
        }
        (status, received)
    }

    /// Runs one command (an argv) in alice's workspace and answers what it
    /// did, once its run has ended.
    pub async fn exec_argv(&self, id: &str, argv: &[&str]) -> Value {
        let body = serde_json::json!({"ownerUserId": "alice", "commands": [{"argv": argv}]});
        let (status, run) = self.post(&format!("/v1/workspaces/{id}/exec"), &body).await;
        assert_eq!(status, 202, "{run}");
        let ended = self.run_ended("alice", run["runId"].as_str().unwrap(), Duration::from_secs(30)).await;
        ended["commands"][0].clone()
    }

    /// Polls the owner's exec run until it has ended (completed or failed);
    /// answers it.
    pub async fn run_ended(&self, owner: &str, run_id: &str, within: Duration) -> Value {
        let read = || async move {
            let (status, run) = self.get(&format!("/v1/runs/{run_id}?ownerUserId={owner}")).await;
            assert_eq!(status, 200, "{run}");
            run
        };
        let ended = |run: &Value| run["status"] == "completed" || run["status"] == "failed";
        crate::read_until(within, read, ended)
            .await
            .unwrap_or_else(|last| panic!("exec run {run_id} did not end in {within:?}: {last}\n{}", self.output()))
    }
}

/// One event read from a Server-Sent Events stream: its `id:` (empty
/// when it has none), `event:` and parsed `data:`.
#[derive(Debug, Clone)]
pub struct Received {
    pub id: String,
    pub event: String,
    pub data: Value,
}

/// Reads a Server-Sent Events response one event at a time.
pub struct SseReader {
    response: reqwest::Response,
    text: String,
}

impl SseReader {
    pub fn new(response: reqwest::Response) -> SseReader {
        assert_eq!(response.headers()["content-type"], "text/event-stream", "{}", response.url());
        SseReader { response, text: String::new() }
    }

    /// The next event, or `None` once the stream ended or `idle` passed
    /// without one.
    pub async fn next(&mut self, idle: Duration) -> Option<Received> {
        loop {
            while let Some(end) = self.text.find("\n\n") {
                let block: String = self.text.drain(..end + 2).collect();
                let field = |name: &str| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(name).map(|v| v.strip_prefix(' ').unwrap_or(v).to_owned()))
                };
                if let (Some(event), Some(data)) = (field("event:"), field("data:")) {
                    let id = field("id:").unwrap_or_default();
                    return Some(Received { id, event, data: serde_json::from_str(&data).unwrap() });
                }
            }
            match tokio::time::timeout(idle, self.response.chunk()).await {
                Ok(Ok(Some(chunk))) => self.text.push_str(&String::from_utf8_lossy(&chunk)),
                _ => return None,
            }
        }
    }
}

impl Drop for Server {
    /// A test that fails midway leaves no server behind.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A temporary data directory. Dropping it stops every executor started
/// under it (local processes and Docker containers), then deletes it.
pub struct DataDir {
    dir: tempfile::TempDir,
}

impl DataDir {
    pub fn new() -> DataDir {
        DataDir { dir: tempfile::Builder::new().prefix("sl").tempdir_in("/tmp").unwrap() }
    }

    /// The temporary directory around the data directory.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The data directory itself (inside the temporary directory).
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("d")
    }

    pub fn executors(&self) -> PathBuf {
        self.path().join("executors")
    }

    /// Pids of the local executors that still run.
    pub fn live_local_executors(&self) -> Vec<(String, i32)> {
        let Ok(entries) = std::fs::read_dir(self.executors()) else { return Vec::new() };
        entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let run = e.file_name().into_string().ok()?;
                let pid: i32 = std::fs::read_to_string(e.path().join("daemon.pid")).ok()?.trim().parse().ok()?;
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                String::from_utf8_lossy(&cmdline).contains(&started_as(&e.path())).then_some((run, pid))
            })
            .collect()
    }

    /// Ids of the Docker containers servers on this directory made.
    pub fn containers(&self, all: bool) -> Vec<String> {
        let label = format!("label=sluice.install={}", self.executors().display());
        let mut cmd = Command::new("docker");
        cmd.args(["ps", "-q", "--no-trunc", "--filter", &label]);
        if all {
            cmd.arg("-a");
        }
        match cmd.output() {
            Ok(out) => String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect(),
            Err(_) => Vec::new(),
        }
    }
}

impl Default for DataDir {
    fn default() -> Self {
        Self::new()
    }
}

/// The name a local executor was started under: its directory's, or for
/// one taken from the warm pool, the pooled executor's (its `origin`).
pub fn started_as(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("origin"))
        .unwrap_or_else(|_| dir.file_name().unwrap_or_default().to_string_lossy().into_owned())
}

/// The cgroup directories of a local executor's run, in every hierarchy.
fn run_cgroups(run: &str) -> Vec<PathBuf> {
    let Ok(hierarchies) = std::fs::read_dir("/sys/fs/cgroup") else { return Vec::new() };
    let mut found = Vec::new();
    for hierarchy in hierarchies.filter_map(Result::ok) {
        // v1: one directory per controller; v2: the root itself.
        for root in [hierarchy.path(), PathBuf::from("/sys/fs/cgroup")] {
            let Ok(installs) = std::fs::read_dir(&root) else { continue };
            for install in installs.filter_map(Result::ok) {
                let dir = install.path().join(run);
                if install.file_name().to_string_lossy().starts_with("sluice-") && dir.is_dir() {
                    found.push(dir);
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

impl Drop for DataDir {
    fn drop(&mut self) {
        for (_, pid) in self.live_local_executors() {
            // SAFETY: signals a process group this test's servers started.
            unsafe { libc::killpg(pid, libc::SIGKILL) };
        }
        // What the executors' workloads left (in groups of their own) is in
        // their cgroups.
        let runs: Vec<String> = std::fs::read_dir(self.executors())
            .map(|e| e.filter_map(Result::ok).filter_map(|e| e.file_name().into_string().ok()).collect())
            .unwrap_or_default();
        for run in runs.iter().filter(|r| r.starts_with("run_") || r.starts_with("pool_")) {
            let groups = run_cgroups(&started_as(&self.executors().join(run)));
            crate::wait_for_blocking(Duration::from_secs(1), || {
                let mut alive = false;
                for group in &groups {
                    for pid in std::fs::read_to_string(group.join("cgroup.procs")).unwrap_or_default().lines() {
                        if let Ok(pid) = pid.trim().parse::<i32>() {
                            alive = true;
                            // SAFETY: a signal to a process of this test's executor.
                            unsafe { libc::kill(pid, libc::SIGKILL) };
                        }
                    }
                }
                (!alive).then_some(())
            });
            for group in groups {
                let _ = std::fs::remove_dir(group);
            }
        }
        let containers = self.containers(true);
        if !containers.is_empty() {
            let _ = Command::new("docker").args(["rm", "-f"]).args(&containers).output();
        }
    }
}
