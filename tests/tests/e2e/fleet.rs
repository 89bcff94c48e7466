//! The fleet as operators see it, end to end against the real `sluice
//! serve` and `sluice api`: the worker joins with its host and capacity, a
//! full host leaves new workspaces queued, a cordoned host takes nothing
//! new, draining a host stops what runs there, forgetting it writes its
//! executors off until its worker beats again, and a worker that shuts
//! down leaves the fleet.

use std::time::Duration;

use serde_json::json;
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::{create_body, holds_for, poll_until, wait_for};

const HOST: &str = "alpha-1";

async fn status(server: &Server, id: &str) -> String {
    let (_, w) = server.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
    w["status"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn operators_see_the_fleet_cordon_and_drain_a_host() {
    let dir = DataDir::new();
    let server = Server::start_with(
        &dir.path(),
        Options::serve().arg("--runtime").arg("local").arg("--host-name").arg(HOST).arg("--max-executors").arg("2"),
    )
    .await;
    // The host's row and its worker's are written as the worker starts:
    // the fleet is read once the worker is listed.
    let fleet = poll_until("the worker is listed", Duration::from_secs(10), || async {
        let (status_code, fleet) = server.get("/v1/workers").await;
        assert_eq!(status_code, 200, "{fleet}");
        fleet["items"].as_array().is_some_and(|items| !items.is_empty()).then_some(fleet)
    })
    .await;
    let worker = &fleet["items"][0];
    assert_eq!((worker["host"].as_str(), worker["health"].as_str()), (Some(HOST), Some("healthy")), "{fleet}");
    assert_eq!(worker["runtime"], "local", "{fleet}");
    assert!(worker["version"].as_str().is_some_and(|v| !v.is_empty()), "{fleet}");
    let host = &fleet["hosts"][0];
    assert_eq!(host["name"], HOST, "{fleet}");
    assert_eq!((host["capacity"].as_i64(), host["load"].as_i64()), (Some(2), Some(0)), "{fleet}");
    assert_eq!((host["state"].as_str(), host["takesNewWork"].as_bool()), (Some("up"), Some(true)), "{fleet}");

    // Two fill the host; the third waits for room.
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (code, created) = server.post("/v1/workspaces", &create_body("alice")).await;
        assert_eq!(code, 202, "{created}");
        ids.push(created["workspaceId"].as_str().unwrap().to_owned());
    }
    let ready = wait_for(Duration::from_secs(60), || async {
        let mut ready = Vec::new();
        for id in &ids {
            if status(&server, id).await == "ready" {
                ready.push(id.clone());
            }
        }
        (ready.len() >= 2).then_some(ready)
    })
    .await
    .unwrap_or_else(|| panic!("two executors fit:\n{}", server.output()));
    assert_eq!(ready.len(), 2, "two executors fit, not three:\n{}", server.output());
    let waiting = ids.iter().find(|id| !ready.contains(id)).unwrap().clone();
    holds_for("a full host takes nothing new", Duration::from_secs(3), || async {
        status(&server, &waiting).await == "queued"
    })
    .await;
    let (ok, listed) = server.operate(&dir, &["workers"]);
    assert!(ok, "{listed}");
    assert!(listed.contains(HOST) && listed.contains("2/2") && listed.contains("healthy"), "{listed}");

    // Bad input names its field; an unknown host is a 404.
    let (code, answer) = server.post(&format!("/v1/hosts/{HOST}/cordon"), &json!({"by": " ops "})).await;
    assert_eq!(code, 400, "{answer}");
    assert!(answer["message"].as_str().unwrap().starts_with("by "), "{answer}");
    let (code, answer) = server.post("/v1/hosts/nowhere/cordon", &json!({"by": "ops"})).await;
    assert_eq!(code, 404, "{answer}");

    // Drained, the host stops what runs there and stays cordoned, so the
    // room freed goes to nobody until it is uncordoned.
    let (ok, drained) = server.operate(&dir, &["workers", "drain", HOST, "--by", "night-shift"]);
    assert!(ok, "{drained}");
    assert!(drained.contains("stopping 2 workspaces"), "{drained}");
    for id in &ready {
        let stopped = server.wait_for("alice", id, Duration::from_secs(60), |w| w["status"] == "stopped").await;
        assert_eq!(stopped["status"], "stopped", "{stopped}");
    }
    let (_, fleet) = server.get("/v1/workers").await;
    let host = &fleet["hosts"][0];
    assert_eq!(host["cordoned"]["by"], "night-shift", "{fleet}");
    assert_eq!((host["load"].as_i64(), host["takesNewWork"].as_bool()), (Some(0), Some(false)), "{fleet}");
    holds_for("a cordoned host takes nothing new", Duration::from_secs(3), || async {
        status(&server, &waiting).await == "queued"
    })
    .await;
    let (ok, listed) = server.operate(&dir, &["workers"]);
    assert!(ok && listed.contains("cordoned by night-shift"), "{listed}");

    let (ok, answer) = server.operate(&dir, &["workers", "uncordon", HOST]);
    assert!(ok, "{answer}");
    let up = server.wait_for("alice", &waiting, Duration::from_secs(60), |w| w["status"] == "ready").await;
    assert_eq!(up["status"], "ready", "{up}");

    // Forgotten (the operator's word that the host is gone): its executor
    // is written off, recorded who did it; the host's worker still beats,
    // so the host is back up at its next heartbeat, with nothing of what
    // was written off.
    let (ok, forgot) = server.operate(&dir, &["workers", "forget", HOST, "--by", "night-shift"]);
    assert!(ok && forgot.contains("1 executors written off"), "{forgot}");
    let lost = server.wait_for("alice", &waiting, Duration::from_secs(10), |w| w["status"] == "failed").await;
    assert_eq!(lost["error"]["code"], "executor-lost", "{lost}");
    poll_until("the host came back", Duration::from_secs(30), || async {
        let (_, fleet) = server.get("/v1/workers").await;
        let host = &fleet["hosts"][0];
        if host["state"] == "up" && host.get("forgotten").is_none() {
            return Some(());
        }
        assert_eq!(host["forgotten"]["by"], "night-shift", "{fleet}");
        None
    })
    .await;
    let (ok, again) = server.operate(&dir, &["workers", "forget", "nowhere"]);
    assert!(!ok && again.contains("404"), "{again}");

    // An orderly shutdown leaves the fleet; the host stays on record.
    server.stop();
    let api = Server::start_with(&dir.path(), Options::command("api")).await;
    let (_, fleet) = api.get("/v1/workers").await;
    assert_eq!(fleet["items"], json!([]), "{fleet}");
    assert_eq!(fleet["hosts"][0]["name"], HOST, "{fleet}");
    assert_eq!(fleet["hosts"][0]["liveWorkers"], 0, "{fleet}");
    api.stop();
}
