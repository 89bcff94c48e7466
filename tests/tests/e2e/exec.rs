//! The workspaces API's exec runs its commands in the process that took the
//! request, at once: no worker's pass comes between the caller and the
//! daemon. A process killed mid-run leaves the run to its lease, and the
//! restarted server ends it as lost (its commands may have run) without
//! waiting the lease out.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::*;

const READY_WITHIN: Duration = Duration::from_secs(90);

fn options(metrics_port: u16) -> Options {
    Options::serve().args(["--runtime", "local"]).arg("--metrics-listen").arg(format!("127.0.0.1:{metrics_port}"))
}

/// The exec passes this server's worker ran.
async fn exec_passes(port: u16) -> f64 {
    let answer = http_client().get(format!("http://127.0.0.1:{port}/metrics")).send().await.unwrap();
    let text = answer.text().await.unwrap();
    text.lines()
        .filter(|l| l.starts_with("sluice_job_passes_total") && l.contains("kind=\"exec\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn start_exec(server: &Server, id: &str, commands: Value) -> Value {
    let body = json!({"ownerUserId": "alice", "commands": commands});
    let (status, run) = server.post(&format!("/v1/workspaces/{id}/exec"), &body).await;
    assert_eq!(status, 202, "{run}");
    run
}

#[tokio::test]
async fn the_api_runs_an_exec_at_once_and_a_restart_ends_one_its_predecessor_lost() {
    let dir = DataDir::new();
    let port = free_port();
    let server = Server::start_with(&dir.path(), options(port)).await;
    let id = server.create_sleeper().await;
    let ready = server.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "ready").await;
    let workdir = dir.executors().join(ready["runtime"]["runId"].as_str().unwrap()).join("workspace");

    // Taken at once: the answer already reads running, and no worker's pass ran it.
    let run =
        start_exec(&server, &id, json!([{"argv": ["sh", "-c", "echo one; exit 4"]}, {"argv": ["echo", "two"]}])).await;
    assert_eq!(run["status"], "running", "{run}");
    let ended = server.run_ended("alice", run["runId"].as_str().unwrap(), Duration::from_secs(30)).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["exitCode"], 0, "the last command's: {ended}");
    let results = ended["commands"].as_array().expect("commands");
    assert_eq!(results.len(), 2, "{ended}");
    assert_eq!((results[0]["exitCode"].as_i64(), results[0]["stdout"].as_str()), (Some(4), Some("one\n")));
    assert_eq!(results[1]["stdout"], "two\n", "{ended}");
    assert_eq!(exec_passes(port).await, 0.0, "a worker's pass ran the exec");

    // The server dies while a command runs; its successor ends the run as
    // lost, long before the 60 s lease would have run out.
    let started = json!([{"argv": ["sh", "-c", "echo > started; exec sleep 60"]}, {"argv": ["true"]}]);
    let run = start_exec(&server, &id, started).await;
    let run_id = run["runId"].as_str().unwrap().to_owned();
    poll_until("the first command started", Duration::from_secs(30), || async {
        workdir.join("started").exists().then_some(())
    })
    .await;
    drop(server.kill());
    let restarted = Instant::now();
    let server = Server::start_with(&dir.path(), options(port)).await;
    let ended = server.run_ended("alice", &run_id, Duration::from_secs(30)).await;
    assert!(restarted.elapsed() < Duration::from_secs(30));
    assert_eq!(ended["status"], "failed", "{ended}");
    assert_eq!(ended["error"]["code"], "worker-lost", "{ended}");
    let unrecorded = ended["commands"].as_array().unwrap().iter().all(|c| c["exitCode"].is_null());
    assert!(unrecorded, "nothing was recorded: {ended}");

    // And the restarted server runs the next one itself.
    let run = start_exec(&server, &id, json!([{"argv": ["true"]}])).await;
    let ended = server.run_ended("alice", run["runId"].as_str().unwrap(), Duration::from_secs(30)).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    server.stop();
}
