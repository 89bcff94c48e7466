//! Workspaces with real executors: the real `sluice serve` binary drives
//! local processes (bubblewrap) and Docker containers through create →
//! ready → exec → restart → stop, and the reaper stops expired ones.

use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::*;

const SECRET: &str = "zq9-managed-secret-4471";
const READY_WITHIN: Duration = Duration::from_secs(60);

fn options(runtime: &str) -> Options {
    // The reaper ticks every second so expiry shows quickly.
    Options::serve().arg("--runtime").arg(runtime).arg("--reaper-schedule").arg("* * * * * *")
}

fn create_request(owner: &str, image: &str, launch_id: &str) -> Value {
    let (repository, tag) = image.split_once(':').unwrap();
    json!({
        "ownerUserId": owner,
        "registryId": "host",
        "repository": repository,
        "tag": tag,
        "launchId": launch_id,
        "spec": {"command": ["env"], "access": {"sshPrincipals": ["bob"]}},
        "secretEnv": {"MANAGED_SECRET": SECRET},
    })
}

async fn create(server: &Server, body: &Value) -> String {
    let (status, answer) = server.post("/v1/workspaces", body).await;
    assert_eq!(status, 202, "{answer}");
    answer["workspaceId"].as_str().unwrap().to_owned()
}

fn is_ready(w: &Value) -> bool {
    w["status"] == "ready"
}

/// Runs commands through the exec API and waits for the run to end.
async fn exec(server: &Server, id: &str, commands: Value) -> Value {
    let (status, run) =
        server.post(&format!("/v1/workspaces/{id}/exec"), &json!({"ownerUserId": "alice", "commands": commands})).await;
    assert_eq!(status, 202, "{run}");
    assert_eq!(run["harnessId"], "exec");
    let run_id = run["runId"].as_str().unwrap().to_owned();
    let run = server.run_ended("alice", &run_id, Duration::from_secs(30)).await;
    assert_eq!(server.get(&format!("/v1/runs/{run_id}?ownerUserId=mallory")).await.0, 404, "owner-scoped");
    run
}

async fn event_types(server: &Server, id: &str) -> Vec<String> {
    let (_, events) = server.get(&format!("/v1/workspaces/{id}/events?ownerUserId=alice&limit=500")).await;
    events["items"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap().to_owned()).collect()
}

async fn ssh_target(server: &Server, id: &str, token: Option<&str>, principal: &str) -> (u16, Value) {
    let mut request = server
        .client
        .get(format!("{}/v1/workspaces/{id}/ssh-target", server.base))
        .header("x-sealant-principal-id", principal);
    if let Some(token) = token {
        request = request.header("x-sealant-gateway-token", token);
    }
    read(request.send().await.unwrap()).await
}

/// What the runtime can tell about an executor, independently of sluice.
trait Inspect {
    /// Whether the executor of `run_id` exists on its runtime.
    fn exists(&self, run_id: &str) -> bool;
    /// What the managed process printed (its environment, here).
    fn managed_output(&self, run_id: &str) -> String;
}

struct LocalInspect<'a>(&'a DataDir);

impl Inspect for LocalInspect<'_> {
    fn exists(&self, run_id: &str) -> bool {
        let live = self.0.live_local_executors().iter().any(|(run, _)| run == run_id);
        live || self.0.executors().join(run_id).exists()
    }
    fn managed_output(&self, run_id: &str) -> String {
        std::fs::read_to_string(self.0.executors().join(run_id).join("state/managed.log")).unwrap_or_default()
    }
}

struct DockerInspect;

impl Inspect for DockerInspect {
    fn exists(&self, run_id: &str) -> bool {
        let out = std::process::Command::new("docker")
            .args(["ps", "-aq", "--filter", &format!("label=sluice.run={run_id}")])
            .output()
            .unwrap();
        !String::from_utf8_lossy(&out.stdout).trim().is_empty()
    }
    fn managed_output(&self, run_id: &str) -> String {
        let out = std::process::Command::new("docker")
            .args(["exec", &format!("sluice-{run_id}"), "cat", "/var/lib/sluice/managed.log"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

async fn lifecycle(runtime: &str, image: &str, dir: &DataDir, inspect: &dyn Inspect) {
    let server = Server::start_with(&dir.path(), options(runtime)).await;
    let gateway = std::fs::read_to_string(dir.path().join("gateway-token")).unwrap().trim().to_owned();

    // create → ready, with the runtime filled in.
    let id = create(&server, &create_request("alice", image, "launch-1")).await;
    let ready = server.wait_for("alice", &id, READY_WITHIN, is_ready).await;
    let rt = &ready["runtime"];
    let run_id = rt["runId"].as_str().unwrap().to_owned();
    assert_eq!(rt["adapter"], runtime, "{ready}");
    assert_eq!(rt["status"], "ready");
    assert_eq!(rt["launchId"], "launch-1");
    assert!(rt["deadline"].is_null() && rt.get("deadline").is_some(), "no runtime lifetime: {rt}");
    assert!(rt["resourceId"].as_str().is_some_and(|r| !r.is_empty()));
    assert!(rt["endpoint"].as_str().unwrap().starts_with("unix://"));
    assert!(inspect.exists(&run_id), "the executor exists on its runtime");
    let events = event_types(&server, &id).await;
    for expected in [
        "workspace.created",
        "attempt.queued",
        "attempt.running",
        "runtime.running",
        "runtime.ready",
        "attempt.succeeded",
    ] {
        assert!(events.iter().any(|e| e == expected), "{expected} missing from {events:?}");
    }
    if runtime == "docker" {
        assert!(events.iter().any(|e| e == "image.published"), "{events:?}");
        assert!(ready["publishedImage"]["digest"].as_str().unwrap().starts_with("sha256:"), "{ready}");
    }
    // The managed process started with the workspace's secret environment.
    let read = || std::future::ready(inspect.managed_output(&run_id));
    let managed = read_until(Duration::from_secs(5), read, |m| m.contains(SECRET)).await.unwrap_or_else(|last| last);
    assert!(managed.contains(&format!("MANAGED_SECRET={SECRET}")), "managed output: {managed}");

    // exec: every command runs, in order, whatever the exit codes.
    let run = exec(
        &server,
        &id,
        json!([
            {"argv": ["sh", "-c", "echo first; exit 3"]},
            {"argv": ["sleep", "10"], "timeoutMs": 300},
            {"argv": ["false"]},
            {"argv": ["sh", "-c", "printf %s \"$GREETING\" > greeting; cat greeting; touch marker"], "env": {"GREETING": "hi"}},
        ]),
    )
    .await;
    assert_eq!(run["status"], "completed", "{run}");
    let codes: Vec<_> = run["commands"].as_array().unwrap().iter().map(|c| c["exitCode"].as_i64().unwrap()).collect();
    assert_eq!(codes, vec![3, 137, 1, 0], "{run}");
    assert_eq!(run["exitCode"], 0, "the last command's exit code");
    assert_eq!(run["commands"][0]["stdout"], "first\n");
    assert_eq!(run["commands"][1]["timedOut"], true);
    assert_eq!(run["commands"][3]["stdout"], "hi");
    // What a command leaves running in the background is killed with it and
    // reaped: no zombies pile up in the executor.
    exec(&server, &id, json!([{"argv": ["sh", "-c", "sleep 30 & sleep 30 & exit 0"]}])).await;
    let table = exec(
        &server,
        &id,
        json!([{"argv": ["sh", "-c", "sleep 1; for f in /proc/[0-9]*/stat; do cat $f; echo; done"]}]),
    )
    .await;
    let stats = table["commands"][0]["stdout"].as_str().unwrap();
    assert!(stats.contains("sluice") || stats.contains("init"), "the process table was read: {stats}");
    assert!(!stats.contains(") Z "), "zombies left behind: {stats}");
    if runtime == "local" {
        // The executor sees neither sluice's files nor, under root, root's powers.
        let seal_key = dir.path().join("seal-key").display().to_string();
        let probe = exec(&server, &id, json!([{"argv": ["cat", seal_key]}, {"argv": ["id", "-u"]}])).await;
        assert_ne!(probe["commands"][0]["exitCode"], 0, "the seal key is out of reach: {probe}");
        let key = std::fs::read_to_string(dir.path().join("seal-key")).unwrap();
        assert!(!probe.to_string().contains(key.trim()));
        let root = std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0).unwrap();
        if root {
            let uid: u32 = probe["commands"][1]["stdout"].as_str().unwrap().trim().parse().unwrap();
            assert!(uid >= 2_000_000_000, "the workload runs under a uid of the executor range: {probe}");
        }
    }
    let missing = exec(&server, &id, json!([{"argv": ["no-such-program"]}])).await;
    assert_eq!((missing["status"].as_str(), missing["exitCode"].as_i64()), (Some("completed"), Some(127)), "{missing}");

    // ssh-target: the gateway's token, then the principal, then a live runtime.
    assert_eq!(ssh_target(&server, &id, None, "alice").await.0, 401);
    assert_eq!(ssh_target(&server, &id, Some("wrong-gateway-token-000000"), "alice").await.0, 401);
    assert_eq!(ssh_target(&server, &id, Some(&gateway), "mallory").await.0, 404);
    for principal in ["alice", "bob"] {
        let (status, target) = ssh_target(&server, &id, Some(&gateway), principal).await;
        assert_eq!(status, 200, "{target}");
        assert_eq!(target["attemptId"].as_str(), Some(run_id.as_str()), "{target}");
        // The embedded default serves its executors on a loopback port of
        // its own: a gateway reaches them there, not through a host path.
        let endpoint = target["runtime"]["endpoint"].as_str().unwrap();
        assert!(
            endpoint.starts_with("https://127.0.0.1:")
                && endpoint.ends_with(&format!("/gateway/v1/executors/{run_id}")),
            "{target}"
        );
    }

    // restart: a new run and a fresh executor; the old one and its disk are gone.
    let (status, restarted) =
        server.post(&format!("/v1/workspaces/{id}/restart"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 202, "{restarted}");
    let new_run = restarted["runId"].as_str().unwrap().to_owned();
    assert_ne!(new_run, run_id);
    let ready = server.wait_for("alice", &id, READY_WITHIN, |w| is_ready(w) && w["runtime"]["runId"] == new_run).await;
    assert_ne!(ready["runtime"]["resourceId"], rt["resourceId"]);
    let fresh = exec(&server, &id, json!([{"argv": ["ls", "-a"]}])).await;
    let listing = fresh["commands"][0]["stdout"].as_str().unwrap();
    assert!(!listing.contains("marker") && !listing.contains("greeting"), "no disk carries over: {listing}");
    poll_until("the old executor was removed", Duration::from_secs(5), || {
        let gone = (!inspect.exists(&run_id)).then_some(());
        async move { gone }
    })
    .await;

    // stop: the executor is removed and the workspace reads stopped; again is a no-op.
    for _ in 0..2 {
        let (status, stopped) =
            server.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!(status, 202, "{stopped}");
        server.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "stopped").await;
    }
    assert!(!inspect.exists(&new_run), "stop removed the executor");
    assert!(event_types(&server, &id).await.iter().any(|e| e == "runtime.stopped"));
    assert_eq!(ssh_target(&server, &id, Some(&gateway), "alice").await.0, 409, "no live runtime");
    let (status, body) = server
        .post(&format!("/v1/workspaces/{id}/exec"), &json!({"ownerUserId": "alice", "commands": [{"argv": ["true"]}]}))
        .await;
    assert_eq!((status, body["code"].as_str()), (409, Some("no-live-runtime")));

    // expiry: an expired workspace is stopped by the reaper, and so is one
    // created with a short TTL.
    let expiring = create(&server, &create_request("alice", image, "launch-2")).await;
    let ready = server.wait_for("alice", &expiring, READY_WITHIN, is_ready).await;
    let expiring_run = ready["runtime"]["runId"].as_str().unwrap().to_owned();
    let (status, _) = server.post(&format!("/v1/workspaces/{expiring}/expire"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 200);
    server.wait_for("alice", &expiring, READY_WITHIN, |w| w["status"] == "stopped").await;
    assert!(!inspect.exists(&expiring_run), "the reaper's stop removed the executor");
    let mut short = create_request("alice", image, "launch-3");
    short["ttlSeconds"] = json!(2);
    let short = create(&server, &short).await;
    server.wait_for("alice", &short, READY_WITHIN, |w| w["status"] == "stopped").await;

    let log = server.stop();
    assert!(!log.contains(SECRET), "the server log holds the secret environment");
}

#[tokio::test]
async fn local_executors_live_their_whole_lifecycle() {
    let dir = DataDir::new();
    lifecycle("local", "sluice-test/busybox:1", &dir, &LocalInspect(&dir)).await;
}

#[tokio::test]
async fn docker_executors_live_their_whole_lifecycle() {
    let Some(image) = docker_test_image() else { return };
    let dir = DataDir::new();
    lifecycle("docker", image, &dir, &DockerInspect).await;
    assert!(dir.containers(true).is_empty(), "every container was removed");
}

#[tokio::test]
async fn a_launch_that_cannot_start_fails_with_an_error_and_no_retry() {
    let Some(_) = docker_test_image() else { return };
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), options("docker")).await;
    let id = create(&server, &create_request("alice", "sluice-test/no-such-image:1", "l")).await;
    let failed = server.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "failed").await;
    assert_eq!(failed["error"]["code"], "image-not-found", "{failed}");
    let (_, attempts) = server.get(&format!("/v1/workspaces/{id}/attempts?ownerUserId=alice")).await;
    assert_eq!(attempts["items"].as_array().unwrap().len(), 1, "a missing image is not retried: {attempts}");
    assert!(event_types(&server, &id).await.iter().any(|e| e == "attempt.failed"));
    server.stop();
}

#[tokio::test]
async fn the_orphan_sweep_removes_what_no_record_needs_and_spares_the_rest() {
    let mut runtimes = vec![("local", "sluice-test/busybox:1")];
    if let Some(image) = docker_test_image() {
        runtimes.push(("docker", image));
    }
    for (runtime, image) in runtimes {
        let dir = DataDir::new();
        let server =
            Server::start_with(&dir.path(), options(runtime).arg("--orphan-schedule").arg("* * * * * *")).await;
        let id = create(&server, &create_request("alice", image, "kept")).await;
        let ready = server.wait_for("alice", &id, READY_WITHIN, is_ready).await;
        let live_run = ready["runtime"]["runId"].as_str().unwrap().to_owned();

        // Executors that no record knows: a leftover run directory, and (on
        // Docker) a container with this install's labels. Created, not run:
        // the sweep may remove it between a `docker run`'s create and start.
        let orphan = "run_00000000000000000000000000orphan";
        std::fs::create_dir_all(dir.executors().join(orphan).join("workspace")).unwrap();
        if runtime == "docker" {
            let run = std::process::Command::new("docker")
                .args(["create", "--network", "none", "--entrypoint", "/bin/sleep"])
                .args(["--label", &format!("sluice.run={orphan}")])
                .args(["--label", &format!("sluice.install={}", dir.executors().display())])
                .args([image, "300"])
                .output()
                .unwrap();
            assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        }
        let inspect: Box<dyn Inspect> =
            if runtime == "docker" { Box::new(DockerInspect) } else { Box::new(LocalInspect(&dir)) };
        let gone = wait_for(Duration::from_secs(10), || {
            let leftover =
                dir.executors().join(orphan).exists() || (runtime == "docker" && DockerInspect.exists(orphan));
            async move { (!leftover).then_some(()) }
        })
        .await;
        assert!(gone.is_some(), "{runtime}: the sweep removed the orphan:\n{}", server.output());
        // The workspace's own executor lives through the same sweeps.
        holds_for("a recorded executor is never swept", Duration::from_millis(1500), || async {
            assert!(inspect.exists(&live_run), "{runtime}: a recorded executor is never swept");
            let (_, still) = server.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
            assert_eq!(still["status"], "ready", "{runtime}: {still}");
            true
        })
        .await;
        server.stop();
    }
}

#[tokio::test]
async fn a_daemon_that_never_answers_fails_its_launches_and_the_gateway_is_told_to_wait() {
    let dir = DataDir::new();
    let silent = dir.root().join("silent-daemon");
    std::fs::write(&silent, "#!/bin/sh\nexec sleep 600\n").unwrap();
    std::fs::set_permissions(&silent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let options = options("local")
        .arg("--daemon-binary")
        .arg(silent.display().to_string())
        .arg("--ready-timeout-seconds")
        .arg("2");
    let server = Server::start_with(&dir.path(), options).await;
    let gateway = std::fs::read_to_string(dir.path().join("gateway-token")).unwrap().trim().to_owned();
    let id = create(&server, &create_request("alice", "sluice-test/busybox:1", "silent")).await;
    server.wait_for("alice", &id, READY_WITHIN, |w| w["runtime"]["status"] == "running").await;
    let (status, body) = ssh_target(&server, &id, Some(&gateway), "alice").await;
    assert_eq!(status, 503, "an executor that is starting: {body}");

    let failed = server.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "failed").await;
    assert_eq!(failed["error"]["code"], "daemon-unreachable", "{failed}");
    let (_, attempts) = server.get(&format!("/v1/workspaces/{id}/attempts?ownerUserId=alice")).await;
    let relations: Vec<_> = attempts["items"].as_array().unwrap().iter().map(|a| a["relation"].clone()).collect();
    assert_eq!(relations, vec![json!("retry"), json!("retry"), json!("launch")], "three attempts in all: {attempts}");
    // Every failed attempt's executor was removed.
    poll_until("failed executors are removed", Duration::from_secs(5), || {
        let removed = dir.live_local_executors().is_empty().then_some(());
        async move { removed }
    })
    .await;
    server.stop();
}
