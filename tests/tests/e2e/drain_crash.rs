//! The worker is killed (SIGKILL) at seeded random points while it drains
//! 200 capture-sourced executors whose workloads keep writing. Every
//! removed executor was removed after its complete FINAL flush (the
//! session's seal names it); every workspace ends `stopped` or `retained`.
//! `SLUICE_CRASH_SEED` picks the seed; the counts are printed.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::pace;
use sluice_tests::server::{DataDir, Options, Server};

const DRAINS: usize = 200;
/// Executors up at once: the machine runs every one of them for real.
const BATCH: usize = 50;

/// splitmix64: a seeded sequence, so a failing run can be repeated.
struct Seeded(u64);

impl Seeded {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low)
    }
}

fn worker() -> Options {
    Options::command("worker")
        .arg("--runtime")
        .arg("local")
        .arg("--lease-seconds")
        .arg("2")
        .arg("--capture-interval-ms")
        .arg("300")
        .arg("--kept-poll-ms")
        .arg("200")
        .arg("--drain-flush-deadline-ms")
        .arg("5000")
        // Widens the window between the decision to remove and the removal.
        .arg("--fault-pause-before-remove-ms")
        .arg("30")
        .env("SLUICE_LOG", "info")
}

struct Drained {
    id: String,
    session: String,
    run_id: String,
}

#[tokio::test]
async fn a_worker_killed_at_random_points_of_200_drains_never_removes_unsaved_work() {
    let seed = std::env::var("SLUICE_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(20261130);
    let mut rng = Seeded(seed);
    let dir = DataDir::new();
    let api = Server::start_with(&dir.path(), Options::command("api").env("SLUICE_LOG", "info")).await;
    let mut current = Some(Server::start_with(&dir.path(), worker()).await);
    let (mut kills, mut stopped, mut retained) = (0usize, 0usize, 0usize);
    let mut removed_after_seal = 0usize;

    for batch in 0..DRAINS / BATCH {
        let mut drained = Vec::new();
        for i in 0..BATCH {
            let (status, session) = api.post("/v1/capture-sessions", &json!({"ownerUserId": "alice"})).await;
            assert_eq!(status, 201, "{session}");
            let body = json!({
                "ownerUserId": "alice", "registryId": "host", "repository": "sluice-test/busybox", "tag": "1",
                "launchId": format!("crash-{batch}-{i}"),
                "spec": {
                    "command": ["sh", "-c", "i=0; while :; do i=$((i+1)); echo $i > counter; sleep 0.1; done"],
                    "source": {"kind": "capture", "sessionId": session["sessionId"]},
                },
                "captureToken": session["token"],
            });
            let (status, created) = api.post("/v1/workspaces", &body).await;
            assert_eq!(status, 202, "{created}");
            drained.push(Drained {
                id: created["workspaceId"].as_str().unwrap().to_owned(),
                session: session["sessionId"].as_str().unwrap().to_owned(),
                run_id: created["runId"].as_str().unwrap().to_owned(),
            });
        }
        for d in &drained {
            let ready = api
                .wait_for("alice", &d.id, Duration::from_secs(180), |w| {
                    w["status"] != "queued" && w["status"] != "running"
                })
                .await;
            assert_eq!(ready["status"], "ready", "{ready}");
        }
        for d in &drained {
            let (status, body) =
                api.post(&format!("/v1/workspaces/{}/stop", d.id), &json!({"ownerUserId": "alice"})).await;
            assert_eq!(status, 202, "{body}");
        }
        // Kill the worker at random points until every drain has ended.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(600);
        loop {
            let states = states(&api, &drained).await;
            let settled = states.values().all(|s| s == "stopped" || s == "retained");
            if settled {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "drains did not settle: {states:?}");
            pace(Duration::from_millis(rng.between(20, 600))).await;
            if rng.between(0, 3) > 0 {
                if let Some(worker) = current.take() {
                    worker.kill();
                    kills += 1;
                }
                current = Some(Server::start_with(&dir.path(), worker()).await);
            }
        }
        for d in &drained {
            let (_, w) = api.get(&format!("/v1/workspaces/{}?ownerUserId=alice", d.id)).await;
            let executor_there = dir.executors().join(&d.run_id).exists();
            match w["status"].as_str() {
                Some("stopped") => {
                    stopped += 1;
                    assert!(!executor_there, "a stopped workspace's executor is gone: {w}");
                    assert_eq!(w["captureDrain"]["state"], "stopped", "{w}");
                }
                Some("retained") => {
                    retained += 1;
                    assert!(executor_there, "a retained executor keeps its disk: {w}");
                }
                other => panic!("{other:?}: {w}"),
            }
            if !executor_there {
                // Removed: only after the executor's complete FINAL flush,
                // which sealed the session in its name.
                let (_, session) = api.get(&format!("/v1/capture-sessions/{}?ownerUserId=alice", d.session)).await;
                assert_eq!(session["finalSeal"]["executorId"], d.run_id.as_str(), "removed unsealed: {w}\n{session}");
                removed_after_seal += 1;
            }
        }
    }
    if let Some(worker) = current.take() {
        worker.stop();
    }
    api.stop();
    println!(
        "seed {seed}: {DRAINS} drains, worker killed {kills} times: {stopped} stopped ({removed_after_seal} removed, \
         each after its seal), {retained} retained"
    );
    assert_eq!(stopped + retained, DRAINS);
    assert!(kills > 0, "the worker was never killed");
}

async fn states(api: &Server, drained: &[Drained]) -> BTreeMap<String, String> {
    let mut states = BTreeMap::new();
    for d in drained {
        let (_, w): (u16, Value) = api.get(&format!("/v1/workspaces/{}?ownerUserId=alice", d.id)).await;
        states.insert(d.id.clone(), w["status"].as_str().unwrap_or("").to_owned());
    }
    states
}
