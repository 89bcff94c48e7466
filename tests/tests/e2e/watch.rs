//! Idle ready executors are watched, not polled: the real `sluice serve`
//! holds each ready executor's watch stream open, runs no timed pass for
//! it, and hears its daemon die at once, also after the server restarts.

use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::*;

const READY_WITHIN: Duration = Duration::from_secs(90);
/// The stated bound on hearing a daemon's death: a pass as soon as its
/// watch closes (no sooner than a second after the watch opened). The
/// safety sweep is set far past it, and the unwatched poll is 10 s.
const HEARD_WITHIN: Duration = Duration::from_secs(5);

fn options(metrics_port: u16) -> Options {
    Options::serve()
        .args(["--runtime", "local", "--sweep-seconds", "600"])
        .arg("--metrics-listen")
        .arg(format!("127.0.0.1:{metrics_port}"))
}

async fn metrics(port: u16) -> String {
    let answer = http_client().get(format!("http://127.0.0.1:{port}/metrics")).send().await.unwrap();
    answer.text().await.unwrap()
}

/// The sum of a metric's samples whose labels contain `labels`.
fn sum(metrics: &str, name: &str, labels: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with(name) && l.contains(labels))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn until_watched(port: u16, count: f64) {
    poll_until(&format!("{count} executors watched"), READY_WITHIN, || async {
        (sum(&metrics(port).await, "sluice_watched_executors", "") == count).then_some(())
    })
    .await;
}

/// The pid of the run's daemon (inside its sandbox, not the sandbox itself).
fn daemon_pid(run_id: &str) -> i32 {
    let launch = format!("--launch={run_id}");
    let found = std::fs::read_dir("/proc").unwrap().filter_map(Result::ok).find_map(|entry| {
        let pid = entry.file_name().to_string_lossy().parse::<i32>().ok()?;
        let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let daemon = args.first()?.ends_with(b"sluiced") && args.get(1) == Some(&&b"daemon"[..]);
        (daemon && args.contains(&launch.as_bytes())).then_some(pid)
    });
    found.unwrap_or_else(|| panic!("no daemon of {run_id} runs"))
}

/// Kills the run's daemon and answers how long the server took to record
/// the workspace failed because its executor ended.
async fn kill_and_time(server: &Server, id: &str, run_id: &str) -> Duration {
    let pid = daemon_pid(run_id);
    let killed = Instant::now();
    assert!(std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap().success());
    let failed = server.wait_for("alice", id, HEARD_WITHIN * 4, |w| w["status"] == "failed").await;
    let took = killed.elapsed();
    assert_eq!(failed["error"]["code"], "executor-exited", "{failed}");
    took
}

fn run_of(ready: &Value) -> String {
    ready["runtime"]["runId"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn an_idle_ready_executor_gets_no_timed_pass_and_its_dying_daemon_is_heard_at_once() {
    let dir = DataDir::new();
    let port = free_port();
    let server = Server::start_with(&dir.path(), options(port)).await;
    let first = server.create_sleeper().await;
    let second = server.create_sleeper().await;
    let first_run = run_of(&server.wait_for("alice", &first, READY_WITHIN, |w| w["status"] == "ready").await);
    let second_run = run_of(&server.wait_for("alice", &second, READY_WITHIN, |w| w["status"] == "ready").await);
    until_watched(port, 2.0).await;

    // Idle: over longer than the unwatched poll, not one reconcile pass.
    let before = sum(&metrics(port).await, "sluice_job_passes_total", "kind=\"reconcile\"");
    holds_for("no reconcile pass for idle watched executors", Duration::from_secs(12), || async {
        let now = sum(&metrics(port).await, "sluice_job_passes_total", "kind=\"reconcile\"");
        assert_eq!(before, now, "reconcile passes ran for idle watched executors");
        true
    })
    .await;

    let took = kill_and_time(&server, &first, &first_run).await;
    assert!(took < HEARD_WITHIN, "the dead daemon was heard after {took:?}");
    until_watched(port, 1.0).await;
    let (_, other) = server.get(&format!("/v1/workspaces/{second}?ownerUserId=alice")).await;
    assert_eq!(other["status"], "ready", "the other executor is left alone: {other}");

    // A restarted server watches the executors it finds ready at once,
    // rather than at their sweep.
    drop(server.kill());
    let server = Server::start_with(&dir.path(), options(port)).await;
    until_watched(port, 1.0).await;
    let took = kill_and_time(&server, &second, &second_run).await;
    assert!(took < HEARD_WITHIN, "after a restart, the dead daemon was heard after {took:?}");
    server.stop();
}
