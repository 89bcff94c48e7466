//! The warm pool with the real `sluice serve` binary and local executors:
//! pooled executors hold no secret until a create takes one, each is taken
//! exactly once (under concurrent creates and a server killed mid-take),
//! and the pool refills behind every take.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::server::{DataDir, Options, Server, started_as};
use sluice_tests::*;

const IMAGE: &str = "host/sluice-test/busybox:1";
const READY_WITHIN: Duration = Duration::from_secs(90);

fn options(size: usize) -> Options {
    Options::serve().arg("--warm-pool").arg(format!("{IMAGE}={size}"))
}

/// Pooled executors (not yet taken) whose daemons answered as pooled.
fn ready_pooled(dir: &DataDir) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir.executors()) else { return Vec::new() };
    let mut ready: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("pool_"))
        .filter(|p| p.join("pool-ready").exists())
        .collect();
    ready.sort();
    ready
}

async fn wait_pool(dir: &DataDir, server: &Server, size: usize) -> Vec<PathBuf> {
    let filled = wait_for(Duration::from_secs(60), || async {
        let ready = ready_pooled(dir);
        (ready.len() >= size).then_some(ready)
    })
    .await;
    filled.unwrap_or_else(|| panic!("the pool did not fill to {size}: {:?}\n{}", ready_pooled(dir), server.output()))
}

fn daemon_pid(dir: &Path) -> i32 {
    std::fs::read_to_string(dir.join("daemon.pid")).unwrap().trim().parse().unwrap()
}

/// Every file under `dir` that holds `needle` (sockets and the like skipped).
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else { continue };
        for entry in entries.filter_map(Result::ok) {
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file()
                && std::fs::read(entry.path()).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle))
            {
                found.push(entry.path());
            }
        }
    }
    found
}

/// `curl` over a daemon's control socket: status and body.
fn curl_socket(socket: &Path, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    let mut curl = std::process::Command::new("curl");
    curl.args(["-s", "-o", "-", "-w", "\n%{http_code}", "-X", method, "--max-time", "10", "--unix-socket"])
        .arg(socket)
        .arg(format!("http://daemon{path}"));
    if let Some(body) = body {
        curl.args(["-H", "content-type: application/json", "--data", body]);
    }
    let out = curl.output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (status.trim().parse().unwrap_or(0), body.to_owned())
}

fn create_body(secret: &str, key: &str) -> Value {
    let (repository, tag) = IMAGE.trim_start_matches("host/").split_once(':').unwrap();
    json!({
        "ownerUserId": "alice", "registryId": "host", "repository": repository, "tag": tag,
        "idempotencyKey": key,
        "spec": {"command": ["sh", "-c", "echo \"secret=$POOL_SECRET\"; exec sleep 600"], "env": {"MARK": key}},
        "secretEnv": {"POOL_SECRET": secret},
    })
}

async fn create(server: &Server, body: &Value) -> String {
    let (status, answer) = server.post("/v1/workspaces", body).await;
    assert_eq!(status, 202, "{answer}");
    answer["workspaceId"].as_str().unwrap().to_owned()
}

/// Runs one command through the exec API; answers its stdout.
async fn exec_stdout(server: &Server, id: &str, argv: &[&str]) -> String {
    let body = json!({"ownerUserId": "alice", "commands": [{"argv": argv}]});
    let (status, run) = server.post(&format!("/v1/workspaces/{id}/exec"), &body).await;
    assert_eq!(status, 202, "{run}");
    let run = server.run_ended("alice", run["runId"].as_str().unwrap(), Duration::from_secs(60)).await;
    run["commands"][0]["stdout"].as_str().unwrap_or_default().to_owned()
}

/// The secret the run's managed process was started with, as it printed it.
async fn managed_secret(run: &Path) -> String {
    poll_until(&format!("the managed process of {run:?} printed its secret"), Duration::from_secs(10), || async {
        let log = std::fs::read_to_string(run.join("state/managed.log")).unwrap_or_default();
        log.lines().find_map(|l| l.strip_prefix("secret=")).map(str::to_owned)
    })
    .await
}

fn run_dir_of(dir: &DataDir, workspace: &Value) -> PathBuf {
    dir.executors().join(workspace["runtime"]["runId"].as_str().unwrap())
}

#[tokio::test]
async fn a_pooled_executor_holds_no_secret_until_a_create_takes_it() {
    let dir = DataDir::new();
    let metrics_port = free_port();
    let server =
        Server::start_with(&dir.path(), options(2).arg("--metrics-listen").arg(format!("127.0.0.1:{metrics_port}")))
            .await;
    let pooled = wait_pool(&dir, &server, 2).await;
    let pids: BTreeSet<i32> = pooled.iter().map(|p| daemon_pid(p)).collect();

    // Before any take: no secret file, no token, nothing but health.
    for executor in &pooled {
        assert!(!executor.join("run/boot-secret.json").exists(), "no boot secret in {executor:?}");
        let environ = std::fs::read(format!("/proc/{}/environ", daemon_pid(executor))).unwrap();
        assert!(!String::from_utf8_lossy(&environ).contains("SLUICED_"), "no daemon settings in its environment");
        let socket = executor.join("run/control.sock");
        let (status, health) = curl_socket(&socket, "GET", "/health", None);
        assert_eq!((status, health.contains("\"pooled\"")), (200, true), "{health}");
        let (status, refusal) = curl_socket(&socket, "POST", "/exec", Some("{\"argv\":[\"id\"]}"));
        assert_eq!((status, refusal.contains("\"pooled\"")), (409, true), "{refusal}");
    }

    // A hostile caller that reaches a pooled daemon first and assigns it
    // gains nothing: the worker's own assign is refused, so that executor is
    // removed and the create is served by another.
    let hijacked = pooled[0].clone();
    let hijack = json!({
        "launch": "lnch_hijack", "command": ["sleep", "600"], "env": {},
        "bootSecret": {"controlToken": "hijacker-token-0123456789abcdef"},
    });
    let (status, answer) =
        curl_socket(&hijacked.join("run/control.sock"), "POST", "/assign", Some(&hijack.to_string()));
    assert!((200..300).contains(&status), "{status} {answer}");

    let secret = "pool-secret-7f3a9c0d51";
    let id = create(&server, &create_body(secret, "first")).await;
    let ready = server.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "ready").await;
    let run = run_dir_of(&dir, &ready);
    let origin = started_as(&run);
    assert!(origin.starts_with("pool_"), "the create took a pooled executor: {origin}");
    assert!(pids.contains(&daemon_pid(&run)), "the pooled daemon itself serves the run");
    assert_ne!(Some(origin.as_str()), hijacked.file_name().unwrap().to_str(), "a hijacked executor is not served");
    assert!(!hijacked.exists(), "the hijacked executor is removed");
    assert_eq!(managed_secret(&run).await, secret);
    assert_eq!(exec_stdout(&server, &id, &["sh", "-c", "echo $MARK"]).await.trim(), "first");
    assert!(!run.join("run/boot-secret.json").exists(), "the secret came over the socket, not a file");

    // The pool refills; its new executors hold none of the taken one's secret.
    let refilled = wait_pool(&dir, &server, 2).await;
    for executor in &refilled {
        assert!(files_holding(executor, secret).is_empty(), "{executor:?} holds the secret");
        let environ = std::fs::read(format!("/proc/{}/environ", daemon_pid(executor))).unwrap();
        assert!(!String::from_utf8_lossy(&environ).contains(secret));
    }

    // A create that does not fit (it asks for the network) launches afresh.
    let mut unfit = create_body("other-secret-118", "unfit");
    unfit["spec"]["network"] = json!(true);
    let unfit_id = create(&server, &unfit).await;
    let unfit_ready = server.wait_for("alice", &unfit_id, READY_WITHIN, |w| w["status"] == "ready").await;
    assert!(!run_dir_of(&dir, &unfit_ready).join("origin").exists(), "an unfit create takes nothing from the pool");

    // The pool's state: the workers list, the metrics and the doctor.
    let read = || async {
        let (status, fleet) = server.get("/v1/workers").await;
        assert_eq!(status, 200, "{fleet}");
        fleet["items"][0]["warmPool"].clone()
    };
    let levels = read_until(Duration::from_secs(20), read, |l| l[0]["idle"] == 2).await.unwrap_or_else(|last| last);
    assert_eq!(levels[0]["image"], IMAGE, "{levels}");
    assert_eq!((levels[0]["target"].as_u64(), levels[0]["idle"].as_u64()), (Some(2), Some(2)), "{levels}");
    let metrics = http_client()
        .get(format!("http://127.0.0.1:{metrics_port}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let taken = format!("sluice_warm_pool_takes_total{{image=\"{IMAGE}\",outcome=\"taken\"}} 1");
    assert!(metrics.contains(&taken), "{metrics}");
    assert!(
        metrics.contains(&format!("sluice_warm_pool_executors{{image=\"{IMAGE}\",state=\"target\"}} 2")),
        "{metrics}"
    );
    let doctor = std::process::Command::new(sluice_binary())
        .args(["doctor", "--warm-pool", &format!("{IMAGE}=2"), "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&doctor.stdout).into_owned();
    assert!(doctor.status.success(), "{report}{}", String::from_utf8_lossy(&doctor.stderr));
    assert!(report.contains(&format!("2 executors of {IMAGE} asked")), "{report}");
    assert!(report.contains(&format!("warm pool  {IMAGE} on")) && report.contains("keeps 2"), "{report}");

    let output = server.stop();
    assert!(!output.contains(secret), "the secret is never logged");
}

/// Run directories taken from the pool and not yet assigned: a launcher is
/// between its take and its assign.
fn mid_take(dir: &DataDir) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir.executors()) else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("run_"))
        .filter(|p| p.join("origin").exists() && !p.join("assigned").exists())
        .collect()
}

#[tokio::test]
async fn each_pooled_executor_is_taken_once_under_concurrent_creates_and_a_killed_worker() {
    const CREATES: usize = 16;
    let dir = DataDir::new();
    // Every take pauses before its assign, so the kill lands mid-take.
    let server = Server::start_with(&dir.path(), options(4).env("SLUICE_FAULT_PAUSE_AFTER_TAKE_MS", "1500")).await;
    wait_pool(&dir, &server, 4).await;

    let secrets: Vec<String> = (0..CREATES).map(|i| format!("once-secret-{i:02}-c81e")).collect();
    let creates = secrets.iter().enumerate().map(|(i, secret)| {
        let body = create_body(secret, &format!("once-{i}"));
        let server = &server;
        async move { create(server, &body).await }
    });
    let ids: Vec<String> = futures::future::join_all(creates).await;

    let taken_before_kill = wait_for(Duration::from_secs(6), || {
        let taken = Some(mid_take(&dir)).filter(|taken| !taken.is_empty());
        async move { taken }
    })
    .await
    .unwrap_or_else(|| panic!("no take was under way\n{}", server.output()));
    server.kill();

    // The restarted server finishes the takes its predecessor left.
    let server = Server::start_with(&dir.path(), options(4)).await;
    let mut runs: BTreeMap<String, PathBuf> = BTreeMap::new();
    for id in &ids {
        let ready = server.wait_for("alice", id, READY_WITHIN, |w| w["status"] == "ready").await;
        runs.insert(id.clone(), run_dir_of(&dir, &ready));
    }
    // What the killed server had taken and not assigned is finished by its
    // successor (its run's directory is kept, with the same daemon).
    for taken in &taken_before_kill {
        assert!(taken.join("assigned").exists(), "{taken:?} was finished");
        assert!(runs.values().any(|run| run == taken), "{taken:?} serves its run");
    }

    // Every workspace runs in a daemon of its own; every pooled executor
    // serves at most one run.
    let pids: BTreeSet<i32> = runs.values().map(|run| daemon_pid(run)).collect();
    assert_eq!(pids.len(), CREATES, "distinct daemons: {runs:?}");
    let origins: Vec<String> =
        runs.values().filter(|run| run.join("origin").exists()).map(|run| started_as(run)).collect();
    let distinct: BTreeSet<&String> = origins.iter().collect();
    assert_eq!(distinct.len(), origins.len(), "a pooled executor served two runs: {origins:?}");
    assert!(!origins.is_empty(), "some creates took from the pool");
    eprintln!(
        "{} of {CREATES} creates took from the pool; {} takes were cut by the kill",
        origins.len(),
        taken_before_kill.len()
    );
    for run in runs.values() {
        let owners = std::fs::read_dir(dir.executors())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.path().join("daemon.pid").exists() && daemon_pid(&e.path()) == daemon_pid(run))
            .count();
        assert_eq!(owners, 1, "one directory per daemon: {run:?}");
    }
    // Each workspace's commands see its own secret, and only its own.
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(managed_secret(&runs[id]).await, secrets[i], "workspace {id}");
        let seen = exec_stdout(&server, id, &["sh", "-c", "echo $MARK"]).await;
        assert_eq!(seen.trim(), format!("once-{i}"), "workspace {id}");
    }
    wait_pool(&dir, &server, 4).await;
    server.stop();
}

/// A pool of an image from a registry: each pooled executor holds the
/// image's root in place (the cache counts it as in use), and a create of
/// the image takes one and runs as a fresh launch of it would.
#[tokio::test]
async fn a_pool_of_an_image_holds_its_root_and_a_take_runs_on_it() {
    let dir = DataDir::new();
    let Some(registry) = sluice_tests::registry::Registry::start(dir.root()) else { return };
    let path = std::env::var_os("PATH").unwrap_or_default();
    if !present("bubblewrap (images run inside it)", std::env::split_paths(&path).any(|d| d.join("bwrap").is_file())) {
        return;
    }
    sluice_tests::registry::push_test_images(dir.root(), &registry).await;
    let mapping = format!("test=http://{}", registry.host());
    let options = Options::serve().args(["--runtime", "local", "--registry", &mapping, "--warm-pool", "test/a:1=1"]);
    let server = Server::start_with(&dir.path(), options).await;
    let pooled = wait_for(READY_WITHIN, || async { ready_pooled(&dir).first().cloned() }).await;
    let pooled = pooled.expect("a pooled executor of the image");
    let digest = std::fs::read_to_string(pooled.join("image")).expect("it names its image");
    assert!(pooled.join("root/etc/os-release").exists(), "its root is in place before any create");
    let held = wait_for(READY_WITHIN, || async {
        let (_, images) = server.get("/v1/images").await;
        let items = images["items"].as_array().cloned().unwrap_or_default();
        items.into_iter().find(|i| i["digest"] == digest.as_str() && i["executors"] == 1)
    });
    assert!(held.await.is_some(), "the cache counts the pooled executor as a user of the image");

    let body = json!({"ownerUserId": "alice", "registryId": "test", "repository": "a", "tag": "1",
        "spec": {"command": ["sleep", "600"]}, "waitFor": "ready"});
    let (status, created) = server.post("/v1/workspaces", &body).await;
    assert_eq!((status, created["status"].as_str()), (202, Some("ready")), "{created}");
    let taken = r#"sluice_warm_pool_takes_total{image="test/a:1",outcome="taken"}"#;
    assert_eq!(server.metric(taken).await, Some(1.0), "the create took the pooled executor");
    let id = created["workspaceId"].as_str().unwrap();
    let (status, run) = server
        .post(
            &format!("/v1/workspaces/{id}/exec"),
            &json!({"ownerUserId": "alice", "commands": [{"argv": ["sh", "-c", "cat /etc/os-release; pwd; echo $GREETING"]}]}),
        )
        .await;
    assert_eq!(status, 202, "{run}");
    let ended = server.run_ended("alice", run["runId"].as_str().unwrap(), READY_WITHIN).await;
    assert_eq!(ended["commands"][0]["stdout"], "ID=image-a\n/srv/app\nfrom-image-a\n", "{ended}");
    let (_, read) = server.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
    assert_eq!(read["publishedImage"]["digest"], digest.as_str(), "{read}");
}
