//! The workspaces API's exec runs its commands in the process that took the
//! request, at once: no worker's pass comes between the caller and the
//! daemon. A process killed mid-run leaves the run to its lease, and the
//! restarted server ends it as lost (its commands may have run) without
//! waiting the lease out.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_tests::server::{DataDir, Options, Received, Server, SseReader};
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

/// An exec asked for as a stream delivers each line as its command writes
/// it (the run still running when the first arrives); a second client
/// attaching mid-run after a position sees the rest, each line once; the
/// stored result is the same as ever.
#[tokio::test]
async fn an_exec_streams_its_output_as_it_happens_and_others_attach_by_position() {
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), Options::serve().args(["--runtime", "local"])).await;
    let id = server.create_sleeper().await;
    server.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "ready").await;
    let body = json!({"ownerUserId": "alice", "commands": [
        {"argv": ["sh", "-c", "for i in 1 2 3; do echo $i; sleep 1; done"]},
        {"argv": ["sh", "-c", "echo tail >&2; exit 3"]},
    ]});
    let response = server
        .client
        .post(format!("{}/v1/workspaces/{id}/exec", server.base))
        .bearer_auth(&server.token)
        .header("accept", "text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut first = SseReader::new(response);
    let opened = first.next(Duration::from_secs(10)).await.expect("the run");
    assert_eq!(opened.event, "run", "{opened:?}");
    let run_id = opened.data["runId"].as_str().unwrap().to_owned();
    let line = first.next(Duration::from_secs(10)).await.expect("the first line");
    assert_eq!((line.event.as_str(), &line.data["text"], &line.data["command"]), ("stdout", &json!("1\n"), &json!(0)));
    let (_, run) = server.get(&format!("/v1/runs/{run_id}?ownerUserId=alice")).await;
    assert_eq!(run["status"], "running", "the first line came while the run ran: {run}");

    // A second client attaches after the first line, by its position.
    let path = format!("/v1/runs/{run_id}/stream?ownerUserId=alice");
    let (status, rest) = server.read_stream(&path, Some(&line.id), 100, Duration::from_secs(10)).await;
    assert_eq!(status, 200);
    let text = |events: &[Received], stream: &str| -> String {
        events.iter().filter(|e| e.event == stream).map(|e| e.data["text"].as_str().unwrap()).collect()
    };
    assert_eq!(text(&rest, "stdout"), "2\n3\n", "every line after the position, once: {rest:?}");
    assert_eq!(text(&rest, "stderr"), "tail\n");
    let exits: Vec<_> =
        rest.iter().filter(|e| e.event == "exit").map(|e| (&e.data["command"], &e.data["exitCode"])).collect();
    assert_eq!(exits, [(&json!(0), &json!(0)), (&json!(1), &json!(3))]);
    let end = rest.last().expect("the end");
    assert_eq!(
        (end.event.as_str(), &end.data["status"], &end.data["exitCode"]),
        ("end", &json!("completed"), &json!(3))
    );
    let positions: Vec<i64> = rest.iter().filter(|e| !e.id.is_empty()).map(|e| e.id.parse().unwrap()).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]) && positions[0] > line.id.parse::<i64>().unwrap());

    // The first client reads the same to the end; one from the start reads it all.
    let mut seen = vec![line];
    while let Some(event) = first.next(Duration::from_secs(10)).await {
        seen.push(event);
    }
    assert_eq!(text(&seen, "stdout"), "1\n2\n3\n");
    assert_eq!(seen.last().map(|e| e.event.as_str()), Some("end"));
    let (_, all) = server.read_stream(&path, None, 100, Duration::from_secs(10)).await;
    assert_eq!((text(&all, "stdout"), text(&all, "stderr")), ("1\n2\n3\n".to_owned(), "tail\n".to_owned()));
    let (_, stored) = server.get(&format!("/v1/runs/{run_id}?ownerUserId=alice")).await;
    assert_eq!(stored["commands"][0]["stdout"], "1\n2\n3\n", "{stored}");
    assert_eq!(stored["commands"][1]["stderr"], "tail\n", "{stored}");

    // Another owner's, or no such run: 404 before any stream.
    let (status, _) =
        server.read_stream(&format!("/v1/runs/{run_id}/stream?ownerUserId=bob"), None, 1, Duration::from_secs(1)).await;
    assert_eq!(status, 404);
    server.stop();
}
