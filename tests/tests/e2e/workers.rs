//! Several `sluice worker` processes on one PostgreSQL: a worker killed in
//! the middle of a launch is replaced without a second executor, a stale
//! lease holder's late write is refused, and a burst of creates is brought
//! up once each. An embedded `serve` killed mid-launch and started again
//! takes its predecessor's leases back at once.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::*;

/// Short leases, so a takeover happens within the test.
const LEASE_SECONDS: &str = "2";

fn worker(db: &str, runtime: &str) -> Options {
    Options::command("worker")
        .database(Some(db))
        .arg("--runtime")
        .arg(runtime)
        .arg("--lease-seconds")
        .arg(LEASE_SECONDS)
}

fn api(db: &str) -> Options {
    Options::command("api").database(Some(db))
}

fn body(image: &str) -> Value {
    let (repository, tag) = image.split_once(':').unwrap();
    json!({"ownerUserId": "alice", "registryId": "host", "repository": repository, "tag": tag, "spec": {}})
}

/// How many executors exist for `run_id` on the runtime.
fn executors_of(runtime: &str, dir: &DataDir, run_id: &str) -> usize {
    match runtime {
        "docker" => {
            let out = Command::new("docker")
                .args(["ps", "-aq", "--filter", &format!("label=sluice.run={run_id}")])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).lines().count()
        }
        _ => {
            // Live processes whose command line names this run's directory
            // (bwrap, its init inside the sandbox, the daemon), counted by
            // the roots of their trees: one launch is one root.
            let dir_arg = dir.executors().join(run_id).display().to_string();
            let mut members = BTreeMap::new();
            for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
                let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
                let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
                if !String::from_utf8_lossy(&cmdline).split('\0').any(|a| a == dir_arg) {
                    continue;
                }
                let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
                // The parent pid is the second field after the parenthesised name.
                let ppid: u32 = stat
                    .rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok())
                    .unwrap_or(0);
                members.insert(pid, ppid);
            }
            members.values().filter(|ppid| !members.contains_key(ppid)).count()
        }
    }
}

fn runtimes() -> Vec<(&'static str, &'static str)> {
    let mut list = vec![("local", "sluice-test/busybox:1")];
    if let Some(image) = docker_test_image() {
        list.push(("docker", image));
    }
    list
}

/// How many events of `kind` the workspace has.
async fn count_events(server: &Server, id: &str, kind: &str) -> usize {
    let (_, events) = server.get(&format!("/v1/workspaces/{id}/events?ownerUserId=alice&limit=500")).await;
    events["items"].as_array().unwrap().iter().filter(|e| e["type"] == kind).count()
}

#[tokio::test]
async fn a_worker_killed_mid_launch_is_replaced_without_a_second_executor() {
    let Some(db) = sluice_store::testing::postgres().await else { return };
    for (runtime, image) in runtimes() {
        let dir = DataDir::new();
        let api = Server::start_with(&dir.path(), api(&db.url)).await;
        // The first worker makes the executor, then stalls before recording it.
        let doomed =
            Server::start_with(&dir.path(), worker(&db.url, runtime).arg("--fault-pause-after-launch-ms").arg("60000"))
                .await;
        let (status, created) = api.post("/v1/workspaces", &body(image)).await;
        assert_eq!(status, 202, "{created}");
        let (id, run_id) = (created["workspaceId"].as_str().unwrap(), created["runId"].as_str().unwrap());
        let paused = wait_for(Duration::from_secs(10), || async {
            doomed.output().contains("fault injection: pausing").then_some(())
        })
        .await;
        assert!(paused.is_some(), "{runtime}: {}", doomed.output());
        assert_eq!(executors_of(runtime, &dir, run_id), 1, "{runtime}: the executor exists, unrecorded");
        doomed.kill();

        // Another worker takes the job over once the lease runs out, and
        // adopts the executor instead of making a second one.
        let survivor = Server::start_with(&dir.path(), worker(&db.url, runtime)).await;
        let ready = api.wait_for("alice", id, Duration::from_secs(60), |w| w["status"] == "ready").await;
        assert_eq!(ready["runtime"]["runId"], run_id, "{runtime}: the same run, not a retry");
        assert_eq!(executors_of(runtime, &dir, run_id), 1, "{runtime}: exactly one executor for the run");
        assert_eq!(count_events(&api, id, "runtime.ready").await, 1, "{runtime}");
        let (_, attempts) = api.get(&format!("/v1/workspaces/{id}/attempts?ownerUserId=alice")).await;
        assert_eq!(attempts["items"].as_array().unwrap().len(), 1, "{runtime}: {attempts}");
        survivor.stop();
        api.stop();
    }
}

#[tokio::test]
async fn a_stale_lease_holders_late_write_is_refused() {
    let Some(db) = sluice_store::testing::postgres().await else { return };
    let dir = DataDir::new();
    let api = Server::start_with(&dir.path(), api(&db.url)).await;
    let stale =
        Server::start_with(&dir.path(), worker(&db.url, "local").arg("--fault-pause-after-launch-ms").arg("4000"))
            .await;
    let (_, created) = api.post("/v1/workspaces", &body("sluice-test/busybox:1")).await;
    let id = created["workspaceId"].as_str().unwrap();
    poll_until("the launch paused", Duration::from_secs(10), || async {
        stale.output().contains("fault injection: pausing").then_some(())
    })
    .await;
    // Frozen past its lease (its heartbeat cannot run either), the first
    // worker loses the job to a second one, which brings the workspace up.
    let _ = Command::new("kill").arg("-STOP").arg(stale.pid().to_string()).status();
    let fresh = Server::start_with(&dir.path(), worker(&db.url, "local")).await;
    api.wait_for("alice", id, Duration::from_secs(60), |w| w["status"] == "ready").await;
    let _ = Command::new("kill").arg("-CONT").arg(stale.pid().to_string()).status();
    // Thawed, it finishes its pause and tries to record the launch.
    let refused = wait_for(Duration::from_secs(10), || async {
        stale.output().contains("another worker holds this job now").then_some(())
    })
    .await;
    assert!(refused.is_some(), "the stale write was refused and said so:\n{}", stale.output());
    assert_eq!(count_events(&api, id, "runtime.running").await, 1, "the refused write added nothing");
    assert_eq!(count_events(&api, id, "runtime.ready").await, 1);
    stale.stop();
    fresh.stop();
    api.stop();
}

#[tokio::test]
async fn two_workers_bring_up_a_hundred_workspaces_once_each() {
    let Some(db) = sluice_store::testing::postgres().await else { return };
    const CREATES: usize = 100;
    let dir = DataDir::new();
    let api = Server::start_with(&dir.path(), api(&db.url)).await;
    let workers = [
        Server::start_with(&dir.path(), worker(&db.url, "local")).await,
        Server::start_with(&dir.path(), worker(&db.url, "local")).await,
    ];
    let request = body("sluice-test/busybox:1");
    let creates = (0..CREATES).map(|_| api.post("/v1/workspaces", &request));
    let ids: Vec<String> = futures::future::join_all(creates)
        .await
        .into_iter()
        .map(|(status, answer)| {
            assert_eq!(status, 202, "{answer}");
            answer["workspaceId"].as_str().unwrap().to_owned()
        })
        .collect();
    let mut run_ids = BTreeSet::new();
    for id in &ids {
        let ready = api.wait_for("alice", id, Duration::from_secs(120), |w| w["status"] == "ready").await;
        run_ids.insert(ready["runtime"]["runId"].as_str().unwrap().to_owned());
        assert_eq!(count_events(&api, id, "runtime.ready").await, 1, "{id} became ready once");
        let (_, attempts) = api.get(&format!("/v1/workspaces/{id}/attempts?ownerUserId=alice")).await;
        assert_eq!(attempts["items"].as_array().unwrap().len(), 1, "{id}: {attempts}");
    }
    assert_eq!(run_ids.len(), CREATES);
    let mut per_run = BTreeMap::new();
    for run_id in &run_ids {
        per_run.insert(run_id.clone(), executors_of("local", &dir, run_id));
    }
    assert!(per_run.values().all(|n| *n == 1), "one executor per run: {per_run:?}");
    // Both workers did some of the work.
    let logs: Vec<String> = workers.into_iter().map(Server::stop).collect();
    for log in &logs {
        assert!(log.contains("executor launched"), "each worker launched executors");
    }
    api.stop();
}

/// The embedded `serve` is the only process on its database: started again
/// after a SIGKILL that left a launch's lease held, it takes the lease back
/// at once rather than when it runs out (an hour here), and adopts the
/// executor the launch made.
#[tokio::test]
async fn a_restarted_serve_takes_back_its_predecessors_leases_at_once() {
    let dir = DataDir::new();
    let long_lease = ["--lease-seconds", "3600"];
    let doomed = Server::start_with(
        &dir.path(),
        Options::serve().args(long_lease).arg("--fault-pause-after-launch-ms").arg("600000"),
    )
    .await;
    let (status, created) = doomed.post("/v1/workspaces", &body("sluice-test/busybox:1")).await;
    assert_eq!(status, 202, "{created}");
    let (id, run_id) = (created["workspaceId"].as_str().unwrap().to_owned(), created["runId"].as_str().unwrap());
    let paused = wait_for(Duration::from_secs(10), || async {
        doomed.output().contains("fault injection: pausing").then_some(())
    })
    .await;
    assert!(paused.is_some(), "{}", doomed.output());
    doomed.kill();

    let successor = Server::start_with(&dir.path(), Options::serve().args(long_lease)).await;
    let ready = successor.wait_for("alice", &id, Duration::from_secs(60), |w| w["status"] == "ready").await;
    assert_eq!(ready["runtime"]["runId"], run_id, "the same run, not a retry");
    assert_eq!(executors_of("local", &dir, run_id), 1, "the executor was adopted, not made again");
    assert!(
        successor.output().contains("took back the leases of this database's previous worker process"),
        "{}",
        successor.output()
    );
    assert_eq!(count_events(&successor, &id, "runtime.ready").await, 1);
    successor.stop();
}

/// A workspace that expires while its launch is under way (the executor
/// made, the launch not yet recorded), whose process is then killed, is not cancelled
/// over an executor left running: the next `serve` adopts the executor its
/// predecessor made and stops it, so none is left behind.
#[tokio::test]
async fn an_expiry_during_an_interrupted_launch_stops_the_executor_it_made() {
    let dir = DataDir::new();
    let long_lease = ["--lease-seconds", "3600"];
    let doomed = Server::start_with(
        &dir.path(),
        Options::serve()
            .args(long_lease)
            .arg("--fault-pause-after-launch-ms")
            .arg("600000")
            .arg("--reaper-schedule")
            .arg("* * * * * *"),
    )
    .await;
    let mut create = body("sluice-test/busybox:1");
    create["ttlSeconds"] = json!(1);
    let (status, created) = doomed.post("/v1/workspaces", &create).await;
    assert_eq!(status, 202, "{created}");
    let (id, run_id) = (created["workspaceId"].as_str().unwrap().to_owned(), created["runId"].as_str().unwrap());
    poll_until("the launch made its executor and paused", Duration::from_secs(10), || async {
        doomed.output().contains("fault injection: pausing").then_some(())
    })
    .await;
    assert_eq!(executors_of("local", &dir, run_id), 1, "the interrupted launch made its executor");
    // Its lifetime runs out and the reaper (every second) asks it to stop
    // while the launch is still unrecorded; then the process dies.
    poll_until("the reaper asked the expired workspace to stop", Duration::from_secs(30), || async {
        doomed.output().contains("workspace expired; stopping it").then_some(())
    })
    .await;
    doomed.kill();

    let successor = Server::start_with(&dir.path(), Options::serve().args(long_lease)).await;
    let ended = successor
        .wait_for("alice", &id, Duration::from_secs(60), |w| {
            matches!(w["status"].as_str(), Some("stopped" | "cancelled" | "failed"))
        })
        .await;
    assert_eq!(ended["status"], "stopped", "stopped, not cancelled over a live executor: {ended}");
    poll_until("no executor is left for the run", Duration::from_secs(10), || async {
        (executors_of("local", &dir, run_id) == 0).then_some(())
    })
    .await;
    assert_eq!(count_events(&successor, &id, "runtime.stopped").await, 1);
    successor.stop();
}
