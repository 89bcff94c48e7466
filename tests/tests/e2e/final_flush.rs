//! A final flush ends every writer before its last snap, end to end on
//! every runtime here: the real `sluice serve`, real executors and their
//! daemons, a workload that keeps appending to a file. Once the flush
//! answers `complete: true` (or a stop drained the executor), nothing of
//! the workload writes again, and the next executor on the session holds
//! every line that was written.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::capture::*;
use sluice_tests::server::{DataDir, Server};
use sluice_tests::{holds_for, poll_until};

/// Appends a numbered line every 50 ms, for far longer than a test runs.
const WRITER: &str = "i=0; while [ $i -lt 2400 ]; do echo $i >> counter.txt; i=$((i+1)); busybox sleep 0.05; done";

fn in_workdir(script: &str) -> String {
    format!("cd /workspace 2>/dev/null || cd ~; {script}")
}

/// The writer as the exec itself.
fn direct_writer() -> String {
    in_workdir(WRITER)
}

/// The writer in a session of its own (it left the exec's process group),
/// while the exec that started it still runs.
fn detached_writer() -> String {
    in_workdir(&format!("busybox setsid busybox sh -c '{WRITER}' & busybox sleep 600"))
}

/// Starts an exec run without waiting for it; answers its run id.
async fn start_exec(server: &Server, id: &str, script: &str) -> String {
    let commands = json!([{"argv": ["/bin/busybox", "sh", "-c", script]}]);
    let (status, run) =
        server.post(&format!("/v1/workspaces/{id}/exec"), &json!({"ownerUserId": "alice", "commands": commands})).await;
    assert_eq!(status, 202, "{run}");
    run["runId"].as_str().unwrap().to_owned()
}

async fn finished_run(server: &Server, run_id: &str) -> Value {
    server.run_ended("alice", run_id, Duration::from_secs(60)).await
}

/// The counter file as it is on the executor's own disk (`None` once the
/// executor is gone), read from the host.
fn lines_on_disk(flavor: Flavor, dir: &DataDir, run_id: &str) -> Option<usize> {
    let text = match flavor {
        Flavor::Docker => {
            let out = Command::new("docker")
                .args(["exec", &format!("sluice-{run_id}"), "/bin/busybox", "cat", "/workspace/counter.txt"])
                .output()
                .ok()?;
            if !out.status.success() {
                return None;
            }
            String::from_utf8(out.stdout).ok()?
        }
        _ => std::fs::read_to_string(dir.executors().join(run_id).join("workspace/counter.txt")).ok()?,
    };
    Some(text.lines().count())
}

/// Waits until the writer has written at least `n` lines.
async fn written(flavor: Flavor, dir: &DataDir, run_id: &str, n: usize) {
    poll_until(&format!("the writer wrote {n} lines"), Duration::from_secs(30), || async {
        (lines_on_disk(flavor, dir, run_id).unwrap_or(0) >= n).then_some(())
    })
    .await;
}

/// The lines the next executor on the session restored: all of them, in order.
async fn restored_lines(server: &Server, session: &(String, String), launch_id: &str) -> usize {
    let (next, _) = launch(server, session, launch_id).await;
    let text = sh_ok(server, &next, &in_workdir("busybox cat counter.txt")).await;
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(*line, i.to_string(), "line {i} of the restored file");
    }
    let (status, body) = server
        .post(&format!("/v1/workspaces/{next}/stop"), &json!({"ownerUserId": "alice", "discardUnsaved": true}))
        .await;
    assert_eq!(status, 202, "{body}");
    lines.len()
}

/// A capture-sourced workspace whose exec `writer` has written a few lines.
struct Writing {
    dir: DataDir,
    server: Server,
    session: (String, String),
    id: String,
    run_id: String,
    /// The writer's exec run.
    exec: String,
}

async fn writing(flavor: Flavor, writer: &str) -> Writing {
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), flavor.options()).await;
    let session = session(&server, None).await;
    let (id, run_id) = launch(&server, &session, "writer").await;
    let exec = start_exec(&server, &id, writer).await;
    written(flavor, &dir, &run_id, 20).await;
    Writing { dir, server, session, id, run_id, exec }
}

fn assert_stopped_by_the_flush(run: &Value) {
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["error"]["code"], "final-flush", "{run}");
    assert!(run["error"]["message"].as_str().unwrap().contains("final flush stopped"), "{run}");
    let exit = run["commands"][0]["exitCode"].as_i64().unwrap();
    assert!(exit == 128 + 15 || exit == 128 + 9, "the command's exit code says it was signalled: {run}");
}

#[tokio::test]
async fn a_final_flush_answers_complete_only_once_every_writer_has_stopped() {
    for flavor in Flavor::all() {
        for (name, writer) in [("direct", direct_writer()), ("setsid", detached_writer())] {
            eprintln!("{flavor:?}, {name} writer");
            let Writing { dir, server, session, id, run_id, exec } = writing(flavor, &writer).await;

            let (status, answer) = server
                .post(
                    &format!("/v1/workspaces/{id}/capture/flush"),
                    &json!({"ownerUserId": "alice", "kind": "final", "graceMs": 2000}),
                )
                .await;
            assert_eq!(status, 200, "{answer}");
            assert_eq!(answer["complete"], true, "{flavor:?}: {answer}");
            let at_answer = lines_on_disk(flavor, &dir, &run_id).expect("the executor is still there");
            holds_for("nothing writes after a complete final flush", Duration::from_millis(1500), || async {
                assert_eq!(lines_on_disk(flavor, &dir, &run_id), Some(at_answer), "{flavor:?}, {name}");
                true
            })
            .await;
            assert_stopped_by_the_flush(&finished_run(&server, &exec).await);
            // A new command is refused: the executor takes no new work.
            let refused = sh(&server, &id, "echo late >> counter.txt").await;
            assert_eq!(refused["status"], "failed", "{refused}");
            assert_eq!(refused["error"]["code"], "final-flush", "{refused}");
            assert_eq!(lines_on_disk(flavor, &dir, &run_id), Some(at_answer));

            assert_eq!(restored_lines(&server, &session, "next").await, at_answer, "{flavor:?}, {name}");
            server.stop();
        }
    }
}

#[tokio::test]
async fn a_stop_drains_a_workspace_whose_writers_keep_writing_and_loses_no_line() {
    for flavor in Flavor::all() {
        for (name, writer) in [("direct", direct_writer()), ("setsid", detached_writer())] {
            eprintln!("{flavor:?}, {name} writer");
            let Writing { dir, server, session, id, run_id, exec } = writing(flavor, &writer).await;

            let (status, body) =
                server.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
            assert_eq!(status, 202, "{body}");
            // Every count seen on the executor's disk until it is removed:
            // a writer left running past the snap would outgrow the capture.
            let most = std::cell::Cell::new(0);
            poll_until("the drain removed the executor", Duration::from_secs(90), || async {
                let seen = lines_on_disk(flavor, &dir, &run_id);
                most.set(most.get().max(seen.unwrap_or(0)));
                seen.is_none().then_some(())
            })
            .await;
            let most = most.get();
            let stopped = server.wait_for("alice", &id, Duration::from_secs(90), |w| w["status"] == "stopped").await;
            assert_eq!(stopped["captureDrain"]["state"], "stopped", "{stopped}");
            assert_stopped_by_the_flush(&finished_run(&server, &exec).await);

            let restored = restored_lines(&server, &session, "next").await;
            assert!(restored >= most, "{flavor:?}, {name}: {most} lines were on the disk, {restored} restored");
            assert!(restored >= 20, "{restored}");
            server.stop();
        }
    }
}

/// A process kept running by the daemon (started through the API, not an
/// exec) is a writer like any other: a stop's final flush ends it, and the
/// drain saves every line it wrote.
#[tokio::test]
async fn a_stop_drains_a_workspace_whose_background_process_keeps_writing() {
    for flavor in Flavor::all() {
        eprintln!("{flavor:?}, a background process");
        let dir = DataDir::new();
        let server = Server::start_with(&dir.path(), flavor.options()).await;
        let session = session(&server, None).await;
        let (id, run_id) = launch(&server, &session, "writer").await;
        let start = json!({"ownerUserId": "alice", "name": "writer",
            "argv": ["/bin/busybox", "sh", "-c", direct_writer()]});
        let (status, process) = server.post(&format!("/v1/workspaces/{id}/processes"), &start).await;
        assert_eq!(status, 201, "{process}");
        written(flavor, &dir, &run_id, 20).await;

        let (status, body) = server.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!(status, 202, "{body}");
        let most = std::cell::Cell::new(0);
        poll_until("the drain removed the executor", Duration::from_secs(90), || async {
            let seen = lines_on_disk(flavor, &dir, &run_id);
            most.set(most.get().max(seen.unwrap_or(0)));
            seen.is_none().then_some(())
        })
        .await;
        let stopped = server.wait_for("alice", &id, Duration::from_secs(90), |w| w["status"] == "stopped").await;
        assert_eq!(stopped["captureDrain"]["state"], "stopped", "{stopped}");
        let restored = restored_lines(&server, &session, "next").await;
        assert!(
            restored >= most.get() && restored >= 20,
            "{flavor:?}: {} on the disk, {restored} restored",
            most.get()
        );
        server.stop();
    }
}
