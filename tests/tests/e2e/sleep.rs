//! Sleep and wake with the real `sluice serve` binary and real executors:
//! an idle capture-sourced workspace is drained as a stop and its runtime
//! released; the next exec wakes it on a new run that restores every file
//! written before it slept; many requests at once start one run; a sleep
//! that cannot save its work retains the executor; a server killed while
//! a wake launches leaves one executor.

use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::capture::*;
use sluice_tests::s3::S3Server;
use sluice_tests::server::{DataDir, Server};

const SLEEP_WITHIN: Duration = Duration::from_secs(90);

/// Files written before the sleep, and the check that finds them after.
const WORK: &str = "cd /workspace 2>/dev/null || cd ~; busybox mkdir -p notes; \
    for i in 1 2 3 4 5 6 7 8 9 10; do echo \"note $i\" > notes/$i.txt; done; \
    busybox dd if=/dev/urandom of=blob bs=1024 count=256 2>/dev/null; busybox sha256sum blob > blob.sum";
const CHECK: &str =
    "cd /workspace 2>/dev/null || cd ~; busybox cat notes/*.txt | busybox wc -l; busybox sha256sum -c blob.sum";

/// A capture-sourced workspace on a new session, sleeping after `sleep_after` seconds unused.
async fn sleepy(server: &Server, launch_id: &str, sleep_after: u64) -> (String, String) {
    let session = session(server, None).await;
    let mut body = workspace_body(&session, launch_id, None);
    body["spec"]["idle"] = json!({"sleepAfterSeconds": sleep_after});
    let (status, created) = server.post("/v1/workspaces", &body).await;
    assert_eq!(status, 202, "{created}");
    let id = created["workspaceId"].as_str().unwrap().to_owned();
    let ready = server.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "ready").await;
    (id, ready["runtime"]["runId"].as_str().unwrap().to_owned())
}

async fn details(server: &Server, id: &str) -> Value {
    let (status, body) = server.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn attempts(server: &Server, id: &str) -> Vec<Value> {
    let (status, body) = server.get(&format!("/v1/workspaces/{id}/attempts?ownerUserId=alice")).await;
    assert_eq!(status, 200, "{body}");
    body["items"].as_array().unwrap().clone()
}

/// The feed's sleep and wake events of the workspace, in order.
async fn sleeps_and_wakes(server: &Server, id: &str) -> Vec<(String, Value)> {
    let (status, fed) = server.read_stream("/v1/events/stream", None, 2000, Duration::from_secs(2)).await;
    assert_eq!(status, 200);
    fed.into_iter()
        .filter(|e| {
            e.data["workspaceId"] == id
                && e.event.starts_with("sluice.workspace.")
                && e.event != "sluice.workspace.deleted"
        })
        .map(|e| (e.event, e.data["data"].clone()))
        .collect()
}

#[tokio::test]
async fn an_idle_workspace_sleeps_with_its_work_saved_and_an_exec_wakes_it() {
    let flavor = Flavor::all()[0];
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), flavor.drain_options()).await;
    let (id, first_run) = sleepy(&server, "sleepy-1", 3).await;
    sh_ok(&server, &id, WORK).await;

    let asleep = server.wait_for("alice", &id, SLEEP_WITHIN, |w| w["status"] != "ready").await;
    let asleep = match asleep["status"].as_str() {
        Some("stopped") => asleep,
        _ => server.wait_for("alice", &id, SLEEP_WITHIN, |w| w["status"] == "stopped").await,
    };
    assert_eq!(asleep["sleeping"]["reason"], "idle", "{asleep}");
    assert!(asleep["sleeping"]["since"].is_string(), "{asleep}");
    assert_eq!(asleep["captureDrain"]["state"], "stopped", "saved before its runtime went: {asleep}");
    assert_eq!(asleep["runtime"]["status"], "stopped", "{asleep}");
    assert!(!dir.executors().join(&first_run).exists(), "its executor is gone");
    let events = sleeps_and_wakes(&server, &id).await;
    assert_eq!(events.iter().map(|(e, _)| e.as_str()).collect::<Vec<_>>(), ["sluice.workspace.slept"], "{events:?}");
    assert_eq!(events[0].1["reason"], "idle");
    assert_eq!(events[0].1["runId"], first_run.as_str());

    // The first exec wakes it: served once a new run restored the head.
    let out = sh_ok(&server, &id, CHECK).await;
    assert!(out.starts_with("10\n") && out.contains("blob: OK"), "every file written before the sleep: {out}");
    let awake = details(&server, &id).await;
    assert_eq!(awake["status"], "ready", "{awake}");
    assert!(awake.get("sleeping").is_none(), "{awake}");
    let runs = attempts(&server, &id).await;
    assert_eq!(runs.len(), 2, "{runs:?}");
    let resumed = runs.iter().find(|r| r["attemptId"] != first_run.as_str()).unwrap();
    assert_eq!(resumed["relation"], "resume", "{resumed}");
    let events = sleeps_and_wakes(&server, &id).await;
    assert_eq!(events.last().map(|(e, _)| e.as_str()), Some("sluice.workspace.woken"), "{events:?}");
    assert_eq!(events.last().unwrap().1["cause"], "exec");

    // Sent to sleep on request; ten execs at once wake it with one run.
    let (ok, said) = server.operate(&dir, &["workspaces", "sleep", &id, "--owner", "alice"]);
    assert!(ok && said.contains(&format!("{id}: saving its work to go to sleep")), "{said}");
    let asleep = server.wait_for("alice", &id, SLEEP_WITHIN, |w| w["status"] == "stopped").await;
    assert_eq!(asleep["sleeping"]["reason"], "requested", "{asleep}");
    let execs = (0..10).map(|i| {
        let (server, id) = (&server, &id);
        async move {
            sh_ok(
                server,
                id,
                &format!("cd /workspace 2>/dev/null || cd ~; echo {i} > woken-{i}.txt; busybox cat notes/1.txt"),
            )
            .await
        }
    });
    for out in futures::future::join_all(execs).await {
        assert_eq!(out, "note 1\n");
    }
    assert_eq!(attempts(&server, &id).await.len(), 3, "one more run for all ten");
    let listed = sh_ok(&server, &id, "cd /workspace 2>/dev/null || cd ~; busybox ls woken-* | busybox wc -l").await;
    assert_eq!(listed.trim(), "10");

    // A stopped workspace is not asleep: no use wakes it.
    let (status, _) = server.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 202);
    let stopped = server.wait_for("alice", &id, SLEEP_WITHIN, |w| w["status"] == "stopped").await;
    assert!(stopped.get("sleeping").is_none(), "{stopped}");
    let (status, refused) = server.post(&format!("/v1/workspaces/{id}/wake"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!((status, refused["code"].as_str()), (409, Some("not-sleeping")), "{refused}");
    let (status, refused) = server.post(&format!("/v1/workspaces/{id}/sleep"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!((status, refused["code"].as_str()), (409, Some("no-live-runtime")), "{refused}");
    server.stop();
}

#[tokio::test]
async fn a_sleep_that_cannot_save_its_work_retains_the_executor() {
    let Some(mut s3) = S3Server::start() else { return };
    let flavor = Flavor::all()[0];
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), with_store(flavor.drain_options(), Some(&s3))).await;
    let (id, run) = sleepy(&server, "sleepy-offline", 3).await;
    s3.pause();
    sh_ok(&server, &id, WORK).await;
    let held = server
        .wait_for("alice", &id, SLEEP_WITHIN, |w| {
            w["desiredState"] == "stopped" && matches!(w["captureDrain"]["state"].as_str(), Some("kept" | "draining"))
        })
        .await;
    sluice_tests::holds_for("kept while the store is down", Duration::from_secs(3), || async {
        let still = details(&server, &id).await;
        assert_ne!(still["status"], "stopped", "{held}");
        assert!(still.get("sleeping").is_none(), "not asleep with its work unsaved: {still}");
        assert!(dir.executors().join(&run).exists(), "never removed while the store is down");
        true
    })
    .await;

    s3.resume();
    let asleep = server.wait_for("alice", &id, SLEEP_WITHIN, |w| w["status"] == "stopped").await;
    assert_eq!(asleep["sleeping"]["reason"], "idle", "asleep once its work is saved: {asleep}");
    let out = sh_ok(&server, &id, CHECK).await;
    assert!(out.contains("blob: OK"), "{out}");
    server.stop();
}

/// The server is killed while the run a wake queued is launching (after
/// its executor was made, before the launch was recorded); started again,
/// it adopts that executor: one executor, one run for the wake.
#[tokio::test]
async fn a_server_killed_mid_wake_leaves_one_executor() {
    let flavor = Flavor::all()[0];
    let dir = DataDir::new();
    let pausing = flavor.drain_options().arg("--fault-pause-after-launch-ms").arg("4000");
    let server = Server::start_with(&dir.path(), pausing).await;
    let (id, _) = sleepy(&server, "sleepy-crash", 600).await;
    sh_ok(&server, &id, WORK).await;
    let (status, _) = server.post(&format!("/v1/workspaces/{id}/sleep"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 202);
    server.wait_for("alice", &id, SLEEP_WITHIN, |w| w["status"] == "stopped").await;
    let (ok, woke) = server.operate(&dir, &["workspaces", "wake", &id, "--owner", "alice", "-o", "json"]);
    assert!(ok, "{woke}");
    let woke: Value = serde_json::from_str(&woke).unwrap();
    assert_eq!(woke["woken"], true, "{woke}");
    let resume_run = woke["runId"].as_str().unwrap().to_owned();
    // Killed once the executor exists and before its launch is recorded.
    let made = || async { dir.executors().join(&resume_run).join("daemon.pid").exists().then_some(()) };
    sluice_tests::poll_until("the resumed run's executor", Duration::from_secs(30), made).await;
    server.kill();

    let server = Server::start_with(&dir.path(), flavor.drain_options()).await;
    let ready = server.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "ready").await;
    assert_eq!(ready["runtime"]["runId"], resume_run.as_str(), "{ready}");
    let live: Vec<_> = std::fs::read_dir(dir.executors())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().join("daemon.pid").exists())
        .map(|e| e.file_name())
        .collect();
    assert_eq!(live.len(), 1, "one executor: {live:?}");
    assert_eq!(attempts(&server, &id).await.len(), 2);
    let out = sh_ok(&server, &id, CHECK).await;
    assert!(out.contains("blob: OK"), "{out}");
    server.stop();
}

/// A visit to a public preview of a sleeping workspace wakes it: the
/// visitor waits, then the workspace's server (started afresh from
/// `spec.command`, its code restored from the head) answers.
#[tokio::test]
async fn a_preview_visit_wakes_a_sleeping_workspace_and_is_served() {
    use crate::previews::{APP, DOMAIN, curl, previewing};
    let listen = sluice_tests::free_port();
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), previewing("local", listen)).await;
    let ca = dir.path().join("preview-tls").join(DOMAIN).join("cert.pem");
    let app_port = sluice_tests::free_port();
    let session = session(&server, None).await;
    let mut body = workspace_body(&session, "sleepy-preview", None);
    body["spec"]["command"] =
        json!(["sh", "-c", format!("until [ -s app.py ]; do sleep 0.1; done; exec python3 app.py {app_port}")]);
    let (status, created) = server.post("/v1/workspaces", &body).await;
    assert_eq!(status, 202, "{created}");
    let id = created["workspaceId"].as_str().unwrap().to_owned();
    server.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "ready").await;
    let write = json!([{"argv": ["sh", "-c", "cat > app.tmp && mv app.tmp app.py"], "stdin": APP}]);
    let (status, run) =
        server.post(&format!("/v1/workspaces/{id}/exec"), &json!({"ownerUserId": "alice", "commands": write})).await;
    assert_eq!(status, 202, "{run}");
    server.run_ended("alice", run["runId"].as_str().unwrap(), Duration::from_secs(60)).await;
    let (status, public) = server
        .post(
            &format!("/v1/workspaces/{id}/previews"),
            &json!({"ownerUserId": "alice", "port": app_port, "public": true}),
        )
        .await;
    assert_eq!(status, 201, "{public}");
    let url = public["url"].as_str().unwrap().to_owned();
    let jar = dir.path().join("jar");
    let served = || async {
        let (status, _, body) = curl(listen, &ca, &jar, &format!("{url}before"), &[]);
        (status == 200).then_some(body)
    };
    sluice_tests::poll_until("the app answers through the preview", Duration::from_secs(30), served).await;

    let (status, _) = server.post(&format!("/v1/workspaces/{id}/sleep"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 202);
    server.wait_for("alice", &id, SLEEP_WITHIN, |w| w["status"] == "stopped").await;
    // Woken by the visit; its server starts afresh and may take a moment
    // to listen once the workspace is ready: a short wait, never a 403.
    let answers = std::sync::Mutex::new(Vec::new());
    let visited = || async {
        let (status, _, body) = curl(listen, &ca, &jar, &format!("{url}after"), &[]);
        answers.lock().unwrap().push(status);
        (status == 200).then_some(body)
    };
    let body = sluice_tests::poll_until("the woken app answers", Duration::from_secs(60), visited).await;
    assert!(body.contains("\"path\": \"/after\""), "{body}");
    let answers = answers.into_inner().unwrap();
    assert!(answers.iter().all(|s| matches!(s, 200 | 502 | 503)), "a visitor waits, is never refused: {answers:?}");
    let woken = sleeps_and_wakes(&server, &id).await;
    assert_eq!(
        woken.last().map(|(e, d)| (e.as_str(), d["cause"].clone())),
        Some(("sluice.workspace.woken", json!("preview")))
    );
    server.stop();
}

/// An exec still running is a use however long it lasts: a workspace that
/// sleeps after 2 s unused stays awake through a 6 s command, and sleeps
/// once it ended and nothing else used it.
#[tokio::test]
async fn a_running_exec_keeps_a_workspace_awake() {
    let flavor = Flavor::all()[0];
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), flavor.drain_options()).await;
    let (id, _) = sleepy(&server, "sleepy-busy", 2).await;
    let started = std::time::Instant::now();
    let long = sh_ok(&server, &id, "busybox sleep 6; echo done");
    let watched = async {
        sluice_tests::holds_for("awake while its exec runs", Duration::from_secs(5), || async {
            let w = details(&server, &id).await;
            assert_eq!((w["status"].as_str(), w["desiredState"].as_str()), (Some("ready"), Some("running")), "{w}");
            true
        })
        .await;
    };
    let (out, ()) = futures::join!(long, watched);
    assert_eq!(out, "done\n");
    assert!(started.elapsed() >= Duration::from_secs(6));
    let asleep = server.wait_for("alice", &id, SLEEP_WITHIN, |w| w["sleeping"].is_object()).await;
    assert_eq!(asleep["sleeping"]["reason"], "idle", "{asleep}");
    server.stop();
}
