//! Drain, retention and recovery end to end: the real `sluice serve`, real
//! executors (local, and Docker against the real engine), real daemons
//! capturing into the object store. A stop removes an executor only after
//! its work is saved; anything that keeps the work from being saved keeps
//! the executor; an executor that ended with unsaved work is retained and
//! recovered on its own disk.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::capture::*;
use sluice_tests::holds_for;
use sluice_tests::s3::S3Server;
use sluice_tests::server::{DataDir, Options, Server};

const DRAIN_WITHIN: Duration = Duration::from_secs(90);

/// The runtimes drains are tested on: the local runtime, and Docker where
/// the machine has the engine and the test image.
fn flavors() -> Vec<Flavor> {
    Flavor::all().into_iter().filter(|f| *f != Flavor::Plain).collect()
}

fn options(flavor: Flavor, s3: Option<&S3Server>) -> Options {
    with_store(flavor.drain_options(), s3)
}

/// `sluice retained export` of the workspace's executor, extracted with
/// GNU tar into the directory answered.
fn export_disk(flavor: Flavor, dir: &DataDir, id: &str) -> tempfile::TempDir {
    let runtime = if flavor == Flavor::Docker { "docker" } else { "local" };
    let out = Command::new(sluice_tests::sluice_binary())
        .args(["retained", "export", id, "--owner", "alice", "--runtime", runtime, "--data-dir"])
        .arg(dir.path())
        .env_remove("SLUICE_DATABASE_URL")
        .output()
        .unwrap();
    assert!(out.status.success(), "sluice retained export: {}", String::from_utf8_lossy(&out.stderr));
    assert!(!out.stdout.is_empty(), "the archive went to stdout");
    let into = tempfile::tempdir().unwrap();
    let mut tar = Command::new("tar")
        .args(["-x", "-f", "-", "-C"])
        .arg(into.path())
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(tar.stdin.as_mut().unwrap(), &out.stdout).unwrap();
    drop(tar.stdin.take());
    assert!(tar.wait().unwrap().success(), "the export is a tar archive");
    into
}

/// Whether the run's executor (with its disk) is still on its runtime.
fn executor_exists(flavor: Flavor, dir: &DataDir, run_id: &str) -> bool {
    match flavor {
        Flavor::Docker => !docker(&["ps", "-aq", "--filter", &format!("label=sluice.run={run_id}")]).is_empty(),
        _ => dir.executors().join(run_id).exists(),
    }
}

/// A file only the first executor wrote, checked by the next one.
const WORK: &str = "cd /workspace 2>/dev/null || cd ~; busybox mkdir -p notes; \
    busybox printf 'unsaved until drained\\n' > notes/draft.txt; busybox dd if=/dev/urandom of=blob bs=1024 count=512 2>/dev/null; \
    busybox sha256sum blob > blob.sum";
const CHECK: &str = "cd /workspace 2>/dev/null || cd ~; busybox cat notes/draft.txt; busybox sha256sum -c blob.sum";

/// Runs an operator command of the `sluice` binary against the server;
/// answers its output, which must say it succeeded.
fn operate(server: &Server, dir: &DataDir, args: &[&str]) -> String {
    let (ok, text) = server.operate(dir, args);
    assert!(ok, "sluice {args:?}: {text}");
    text
}

async fn details(server: &Server, id: &str) -> Value {
    let (status, body) = server.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn stop(server: &Server, id: &str, extra: Value) -> Value {
    let mut body = json!({"ownerUserId": "alice"});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (status, answer) = server.post(&format!("/v1/workspaces/{id}/stop"), &body).await;
    assert_eq!(status, 202, "{answer}");
    answer
}

fn drain_state(w: &Value) -> &str {
    w["captureDrain"]["state"].as_str().unwrap_or("")
}

/// Waits until a drain was observed that cannot finish (yet).
async fn held(server: &Server, id: &str) -> Value {
    server
        .wait_for("alice", id, DRAIN_WITHIN, |w| {
            matches!(drain_state(w), "kept" | "draining") && w["captureDrain"]["observedAt"].is_string()
        })
        .await
}

/// A drain that cannot finish: the executor wrote its work while the S3
/// server was down, and was asked to stop.
struct Stuck {
    s3: S3Server,
    dir: DataDir,
    server: Server,
    session: (String, String),
    id: String,
    run_id: String,
    /// The workspace once the drain was seen held.
    held: Value,
}

async fn stuck(flavor: Flavor, launch_id: &str) -> Option<Stuck> {
    let mut s3 = S3Server::start()?;
    eprintln!("{flavor:?}");
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), options(flavor, Some(&s3))).await;
    let session = session(&server, None).await;
    let (id, run_id) = launch(&server, &session, launch_id).await;
    s3.pause();
    sh_ok(&server, &id, WORK).await;
    stop(&server, &id, json!({})).await;
    let held = held(&server, &id).await;
    Some(Stuck { s3, dir, server, session, id, run_id, held })
}

/// The work the first executor left is what the next one on the session finds.
async fn next_executor_finds_the_work(server: &Server, session: &(String, String), launch_id: &str) {
    let (next, _) = launch(server, session, launch_id).await;
    let out = sh_ok(server, &next, CHECK).await;
    assert!(out.contains("unsaved until drained") && out.contains("blob: OK"), "{out}");
    stop(server, &next, json!({"discardUnsaved": true})).await;
}

#[tokio::test]
async fn a_stop_drains_and_removes_the_executor_only_once_its_work_is_saved() {
    for flavor in flavors() {
        eprintln!("{flavor:?}");
        let dir = DataDir::new();
        let server = Server::start_with(&dir.path(), options(flavor, None)).await;
        let session = session(&server, None).await;
        let (id, run_id) = launch(&server, &session, "first").await;
        sh_ok(&server, &id, WORK).await;
        // The operator's command asks for the stop and follows the drain.
        let followed = operate(&server, &dir, &["drain", &id, "--owner", "alice", "--stop"]);
        assert!(followed.trim_end().ends_with("stopped"), "{followed}");
        let stopped = server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["status"] == "stopped").await;
        let drain = &stopped["captureDrain"];
        assert_eq!(drain["state"], "stopped", "{stopped}");
        assert_eq!(drain["executor"]["runId"], run_id.as_str(), "{drain}");
        assert_eq!(drain["executor"]["launchId"], "first", "{drain}");
        assert!(drain["observedAt"].as_str().is_some(), "{drain}");
        assert!(!executor_exists(flavor, &dir, &run_id), "{flavor:?}: the drained executor is removed");
        // The removal followed the daemon's complete FINAL flush: the
        // session holds its seal, made by this executor.
        let (_, view) = server.get(&format!("/v1/capture-sessions/{}?ownerUserId=alice", session.0)).await;
        assert_eq!(view["finalSeal"]["executorId"], run_id.as_str(), "{view}");
        next_executor_finds_the_work(&server, &session, "second").await;
        server.stop();
    }
}

#[tokio::test]
async fn a_silent_daemon_keeps_its_executor_and_a_discard_ends_it_at_once() {
    for flavor in flavors() {
        eprintln!("{flavor:?}");
        let dir = DataDir::new();
        let server = Server::start_with(&dir.path(), options(flavor, None)).await;
        let session = session(&server, None).await;
        let (id, run_id) = launch(&server, &session, "silent").await;
        sh_ok(&server, &id, WORK).await;
        silence(flavor, &dir, &run_id, true);
        stop(&server, &id, json!({})).await;
        let kept = server.wait_for("alice", &id, DRAIN_WITHIN, |w| drain_state(w) == "kept").await;
        let detail = kept["captureDrain"]["detail"].as_str().unwrap();
        assert!(detail.contains("silent while the executor runs"), "{kept}");
        holds_for("a kept executor stays", Duration::from_secs(1), || async {
            assert!(executor_exists(flavor, &dir, &run_id), "{flavor:?}: a kept executor stays");
            details(&server, &id).await["status"] != "stopped"
        })
        .await;

        // The owner's way out, on a workspace already asked to stop.
        stop(&server, &id, json!({"discardUnsaved": true})).await;
        let gone = server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["status"] == "stopped").await;
        let drain = &gone["captureDrain"];
        assert_eq!(drain["state"], "discarded", "{gone}");
        assert_eq!(drain["discard"]["requestedBy"], "alice", "{drain}");
        assert!(drain["discard"]["requestedAt"].as_str().unwrap().starts_with("20"), "{drain}");
        assert!(!executor_exists(flavor, &dir, &run_id), "{flavor:?}: a discarded executor is removed");
        if flavor == Flavor::Docker {
            // A paused container was removed with the rest.
            assert!(docker(&["ps", "-aq", "--filter", &format!("name=sluice-{run_id}")]).is_empty());
        }
        server.stop();
    }
}

#[tokio::test]
async fn a_silent_daemon_that_answers_again_is_drained_and_its_work_saved() {
    let flavor = Flavor::Bubblewrap;
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), options(flavor, None)).await;
    let session = session(&server, None).await;
    let (id, run_id) = launch(&server, &session, "thawed").await;
    sh_ok(&server, &id, WORK).await;
    silence(flavor, &dir, &run_id, true);
    stop(&server, &id, json!({})).await;
    server.wait_for("alice", &id, DRAIN_WITHIN, |w| drain_state(w) == "kept").await;
    silence(flavor, &dir, &run_id, false);
    let stopped = server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["status"] == "stopped").await;
    assert_eq!(drain_state(&stopped), "stopped", "{stopped}");
    next_executor_finds_the_work(&server, &session, "after-thaw").await;
    server.stop();
}

#[tokio::test]
async fn an_unreachable_object_store_keeps_the_executor_until_it_returns() {
    for flavor in flavors() {
        let Some(Stuck { mut s3, dir, server, session, id, run_id, held }) = stuck(flavor, "offline").await else {
            return;
        };
        holds_for("the executor is kept while the store is down", Duration::from_secs(2), || async {
            let still = details(&server, &id).await;
            assert!(matches!(drain_state(&still), "kept" | "draining"), "{still}");
            assert_ne!(still["status"], "stopped", "{held}");
            assert!(executor_exists(flavor, &dir, &run_id), "{flavor:?}: never removed while the store is down");
            true
        })
        .await;

        s3.resume();
        let stopped = server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["status"] == "stopped").await;
        assert_eq!(drain_state(&stopped), "stopped", "{stopped}");
        assert!(!executor_exists(flavor, &dir, &run_id));
        next_executor_finds_the_work(&server, &session, "online").await;
        server.stop();
    }
}

#[tokio::test]
async fn an_executor_killed_mid_drain_is_retained_then_recovered_on_its_own_disk() {
    for flavor in flavors() {
        let Some(Stuck { mut s3, dir, server, session, id, run_id, .. }) = stuck(flavor, "crashed").await else {
            return;
        };
        kill_executor(flavor, &dir, &run_id);

        let retained = server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["status"] == "retained").await;
        assert_eq!(retained["runtime"]["status"], "retained", "{retained}");
        let r = &retained["captureDrain"]["retained"];
        assert_eq!(r["recoverable"], true, "{retained}");
        assert_eq!(r["recoveryAttempts"], 0, "{retained}");
        assert!(r["since"].is_string() && r["nextRecoveryAt"].is_string(), "{r}");
        assert!(r["reason"].as_str().unwrap().contains("not confirmed saved"), "{r}");
        assert!(executor_exists(flavor, &dir, &run_id), "{flavor:?}: a retained executor keeps its disk");
        if flavor != Flavor::Docker {
            let draft = dir.executors().join(&run_id).join("workspace/notes/draft.txt");
            assert_eq!(std::fs::read_to_string(draft).unwrap(), "unsaved until drained\n");
        }
        // Its disk, exported on its host while it cannot run, holds the work.
        let exported = export_disk(flavor, &dir, &id);
        let draft = exported.path().join("workspace/notes/draft.txt");
        assert_eq!(std::fs::read_to_string(draft).unwrap(), "unsaved until drained\n", "{flavor:?}: the export");
        // Operators see it across owners.
        let (status, list) = server.get("/v1/retained-executors").await;
        assert_eq!(status, 200, "{list}");
        assert!(list["items"].as_array().unwrap().iter().any(|i| i["runId"] == run_id.as_str()), "{list}");
        // It cannot be deleted while retained.
        let delete = server.client.delete(format!("{}/v1/workspaces/{id}?ownerUserId=alice", server.base));
        let (status, refused) = sluice_tests::read(delete.bearer_auth(&server.token).send().await.unwrap()).await;
        assert_eq!((status, refused["code"].as_str()), (409, Some("retained")), "{refused}");
        assert!(executor_exists(flavor, &dir, &run_id), "{flavor:?}: the refused delete left it alone");

        s3.resume();
        let (status, asked) =
            server.post(&format!("/v1/workspaces/{id}/recover"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!(
            (status, asked["state"].as_str(), asked["recoverable"].as_bool()),
            (202, Some("requested"), Some(true)),
            "{asked}"
        );
        let stopped = server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["status"] == "stopped").await;
        assert_eq!(drain_state(&stopped), "stopped", "{stopped}");
        assert!(stopped["captureDrain"].get("retained").is_none(), "retention ended: {stopped}");
        assert!(!executor_exists(flavor, &dir, &run_id), "{flavor:?}: removed once saved");
        let (status, again) =
            server.post(&format!("/v1/workspaces/{id}/recover"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!((status, again["state"].as_str()), (202, Some("not-retained")), "{again}");
        next_executor_finds_the_work(&server, &session, "recovered").await;
        server.stop();
    }
}

#[tokio::test]
async fn attestations_are_weighed_against_what_the_executor_reported() {
    let Some(mut s3) = S3Server::start() else { return };
    let flavor = Flavor::Bubblewrap;
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), options(flavor, Some(&s3))).await;
    let session = session(&server, None).await;

    // An accepted attestation lets an ended executor's disk go.
    let (id, run_id) = launch(&server, &session, "sealed").await;
    sh_ok(&server, &id, WORK).await;
    let (status, seal) = server
        .post(&format!("/v1/workspaces/{id}/capture/flush"), &json!({"ownerUserId": "alice", "kind": "final"}))
        .await;
    assert_eq!((status, seal["complete"].as_bool()), (200, Some(true)), "{seal}");
    let resource = details(&server, &id).await["runtime"]["resourceId"].as_str().unwrap().to_owned();
    kill_executor(flavor, &dir, &run_id);
    server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["status"] == "retained").await;
    let completion = json!({
        "executorId": resource, "epoch": seal["epoch"], "captureN": seal["headN"], "launchId": "sealed",
        "sealedAt": "2026-11-30T12:00:00Z", "origin": seal["origin"],
    });
    let answer = stop(&server, &id, json!({"completion": completion})).await;
    assert_eq!(answer["completion"]["outcome"], "accepted", "{answer}");
    let stopped = server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["status"] == "stopped").await;
    assert_eq!(drain_state(&stopped), "stopped", "{stopped}");
    assert_eq!(stopped["captureDrain"]["completion"]["executorId"], resource.as_str(), "{stopped}");
    assert!(!executor_exists(flavor, &dir, &run_id), "the attested executor's disk went");

    // Another launch, an older epoch, and one a later not-saved report revokes.
    let (id, run_id) = launch(&server, &session, "doubted").await;
    let (_, before) = server.get(&format!("/v1/workspaces/{id}/capture?ownerUserId=alice")).await;
    s3.pause();
    sh_ok(&server, &id, WORK).await;
    let epoch = before["epoch"].as_u64().unwrap();
    assert!(epoch >= 1, "{before}");
    let attestation = |epoch: u64, launch: &str| json!({"completion": {"executorId": run_id, "epoch": epoch, "captureN": before["headN"].as_u64().unwrap_or(0), "launchId": launch, "origin": before["origin"]}});
    let other_launch = stop(&server, &id, attestation(epoch, "another")).await;
    assert_eq!(other_launch["completion"]["outcome"], "ignored", "{other_launch}");
    assert!(other_launch["completion"]["detail"].as_str().unwrap().starts_with("launch:"), "{other_launch}");
    // The first stop started a drain; with the store down it cannot finish.
    let kept = held(&server, &id).await;
    assert!(executor_exists(flavor, &dir, &run_id), "{kept}");
    let older = stop(
        &server,
        &id,
        json!({"completion": {"executorId": run_id, "epoch": epoch - 1, "captureN": 0, "launchId": "doubted"}}),
    )
    .await;
    assert_eq!(older["completion"]["outcome"], "ignored", "{older}");
    assert!(older["completion"]["detail"].as_str().unwrap().starts_with("older-epoch:"), "{older}");
    // An attestation whose origin predates the not-saved reports of the
    // drain is contradicted by them.
    let contradicted = stop(&server, &id, attestation(epoch, "doubted")).await;
    assert_eq!(contradicted["completion"]["outcome"], "ignored", "{contradicted}");
    assert!(contradicted["completion"]["detail"].as_str().unwrap().starts_with("not-saved:"), "{contradicted}");
    kill_executor(flavor, &dir, &run_id);
    let retained = server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["status"] == "retained").await;
    assert!(retained["captureDrain"].get("completion").is_none(), "{retained}");
    assert!(executor_exists(flavor, &dir, &run_id), "no attestation covers it: its disk stays");
    s3.resume();
    stop(&server, &id, json!({"discardUnsaved": true})).await;
    server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["status"] == "stopped").await;
    server.stop();
}

#[tokio::test]
async fn an_accepted_attestation_is_revoked_by_a_later_report_that_the_work_is_not_saved() {
    let Some(mut s3) = S3Server::start() else { return };
    let flavor = Flavor::Bubblewrap;
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), options(flavor, Some(&s3))).await;
    let session = session(&server, None).await;
    let (id, run_id) = launch(&server, &session, "revoked").await;
    let (_, before) = server.get(&format!("/v1/workspaces/{id}/capture?ownerUserId=alice")).await;
    s3.pause();
    sh_ok(&server, &id, WORK).await;
    // Accepted: nothing observed contradicts it yet. It does not skip the
    // drain of the running executor, whose FINAL then says not saved.
    // A seal made just after the status the caller read (which sluice
    // stored too, as a report that the work was not saved yet).
    let mut origin = before["origin"].clone();
    origin["observation"] = json!(origin["observation"].as_u64().unwrap() + 1);
    let completion = json!({"executorId": run_id, "epoch": before["epoch"], "captureN": before["headN"].as_u64().unwrap_or(0), "launchId": "revoked", "origin": origin});
    let answer = stop(&server, &id, json!({"completion": completion})).await;
    assert_eq!(answer["completion"]["outcome"], "accepted", "{answer}");
    let revoked =
        server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["captureDrain"]["completionRevoked"].is_object()).await;
    let detail = revoked["captureDrain"]["completionRevoked"]["detail"].as_str().unwrap();
    assert!(detail.contains("not-saved:"), "{revoked}");
    assert!(revoked["captureDrain"].get("completion").is_none(), "{revoked}");
    kill_executor(flavor, &dir, &run_id);
    server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["status"] == "retained").await;
    assert!(executor_exists(flavor, &dir, &run_id), "a revoked attestation lets nothing go");
    s3.resume();
    stop(&server, &id, json!({"discardUnsaved": true})).await;
    server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["status"] == "stopped").await;
    server.stop();
}

#[tokio::test]
async fn a_runtime_deadline_starts_the_drain_ahead_of_it() {
    for flavor in flavors() {
        eprintln!("{flavor:?}");
        let dir = DataDir::new();
        let options = options(flavor, None)
            .arg("--executor-max-lifetime-seconds")
            .arg("40")
            .arg("--preservation-lead-seconds")
            .arg("35");
        let server = Server::start_with(&dir.path(), options).await;
        let session = session(&server, None).await;
        let (id, run_id) = launch(&server, &session, "mortal").await;
        let ready = details(&server, &id).await;
        let deadline = ready["runtime"]["deadline"].as_str().expect("the runtime has a deadline").to_owned();
        let starts =
            ready["captureDrain"]["preservationStartsAt"].as_str().expect("a preservation schedule").to_owned();
        assert!(starts < deadline, "{ready}");
        sh_ok(&server, &id, WORK).await;
        let stopped = server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["status"] == "stopped").await;
        assert_eq!(drain_state(&stopped), "stopped", "{stopped}");
        assert!(!executor_exists(flavor, &dir, &run_id));
        let (_, events) = server.get(&format!("/v1/workspaces/{id}/events?ownerUserId=alice&limit=500")).await;
        assert!(events["items"].as_array().unwrap().iter().any(|e| e["type"] == "runtime.stopped"), "{events}");
        next_executor_finds_the_work(&server, &session, "successor").await;
        server.stop();
    }
}

#[tokio::test]
async fn an_expired_capture_workspace_is_drained_not_just_removed() {
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), options(Flavor::Bubblewrap, None)).await;
    let session = session(&server, None).await;
    let (id, run_id) = launch(&server, &session, "mortal-by-ttl").await;
    sh_ok(&server, &id, WORK).await;
    let (status, body) =
        server.post(&format!("/v1/workspaces/{id}/expire"), &json!({"ownerUserId": "alice", "ttlSeconds": 1})).await;
    assert_eq!(status, 200, "{body}");
    let stopped = server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["status"] == "stopped").await;
    assert_eq!(drain_state(&stopped), "stopped", "{stopped}");
    let (_, view) = server.get(&format!("/v1/capture-sessions/{}?ownerUserId=alice", session.0)).await;
    assert_eq!(view["finalSeal"]["executorId"], run_id.as_str(), "drained to its seal before removal: {view}");
    next_executor_finds_the_work(&server, &session, "after-expiry").await;
    server.stop();
}

#[tokio::test]
async fn a_session_whose_executor_holds_unsaved_work_is_taken_over_only_when_asked() {
    let Some(Stuck { s3, dir, server, session, id, run_id, .. }) = stuck(Flavor::Bubblewrap, "older").await else {
        return;
    };
    // Kept while stopping: a new executor on the session would fence it.
    let create = |take_over: Option<&str>| {
        let mut body = workspace_body(&session, "newer", None);
        if let Some(take_over) = take_over {
            body["takeOver"] = json!(take_over);
        }
        body
    };
    let (status, refused) = server.post("/v1/workspaces", &create(None)).await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["code"], "session-has-unsaved-work", "{refused}");
    let message = refused["message"].as_str().unwrap();
    assert!(message.contains(&run_id) && message.contains(&id) && message.contains("stopping"), "{refused}");
    // Retained (its executor ended with the work on its disk): refused too.
    kill_executor(Flavor::Bubblewrap, &dir, &run_id);
    server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["status"] == "retained").await;
    let (status, refused) = server.post("/v1/workspaces", &create(None)).await;
    assert_eq!((status, refused["code"].as_str()), (409, Some("session-has-unsaved-work")), "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("retained"), "{refused}");
    let (status, refused) = server.post("/v1/workspaces", &create(Some("keep-it"))).await;
    assert_eq!(status, 400, "an unknown take-over is named: {refused}");
    assert!(executor_exists(Flavor::Bubblewrap, &dir, &run_id), "nothing was taken: the older executor keeps its disk");
    assert!(details(&server, &id).await["captureDrain"]["discard"].is_null());

    // Taken over when asked: the older executor's discard is recorded, and the newer one holds the session.
    let (status, created) = server.post("/v1/workspaces", &create(Some("discard-unsaved"))).await;
    assert_eq!(status, 202, "{created}");
    let newer = created["workspaceId"].as_str().unwrap().to_owned();
    let older = details(&server, &id).await;
    assert_eq!(older["captureDrain"]["discard"]["requestedBy"], "alice", "the discard is recorded: {older}");
    server.wait_for("alice", &newer, READY_WITHIN, |w| w["status"] == "ready").await;
    let ended = server.wait_for("alice", &id, DRAIN_WITHIN, |w| w["status"] == "stopped").await;
    assert_eq!(drain_state(&ended), "discarded", "the older executor ended as discarded: {ended}");
    let (_, status) = server.get(&format!("/v1/workspaces/{newer}/capture?ownerUserId=alice")).await;
    assert_eq!(status["fenced"], false, "{status}");
    sh_ok(&server, &newer, "true").await;
    drop(s3);
    server.stop();
}

/// A small ext4 filesystem on a loop device, mounted for one test and
/// lazily unmounted (with its image) when dropped.
struct LoopDisk {
    mount: std::path::PathBuf,
    image: std::path::PathBuf,
}

impl LoopDisk {
    /// Root only; `None` (the test skips, saying why) elsewhere, but under
    /// CI, which runs as root and must run this test.
    fn mount(image: &std::path::Path, at: &std::path::Path, mib: u64) -> Option<LoopDisk> {
        if !sluice_tests::root_for("a loop-mounted filesystem (the full-disk test)") {
            return None;
        }
        std::fs::File::create(image).unwrap().set_len(mib << 20).unwrap();
        let made = Command::new("mkfs.ext4").args(["-q", "-F"]).arg(image).output().expect("mkfs.ext4");
        assert!(made.status.success(), "mkfs.ext4: {}", String::from_utf8_lossy(&made.stderr));
        std::fs::create_dir_all(at).unwrap();
        let mounted = Command::new("mount").args(["-o", "loop"]).arg(image).arg(at).output().unwrap();
        assert!(mounted.status.success(), "mount: {}", String::from_utf8_lossy(&mounted.stderr));
        Some(LoopDisk { mount: at.to_owned(), image: image.to_owned() })
    }

    fn available(&self) -> u64 {
        let path = std::ffi::CString::new(self.mount.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: statvfs fills the zeroed struct it is given.
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::statvfs(path.as_ptr(), &mut stat) }, 0);
        stat.f_bavail * stat.f_frsize
    }

    /// Fills the filesystem to within `leave` bytes with a file of its own.
    fn fill(&self, leave: u64) -> std::path::PathBuf {
        let filler = self.mount.join("filler");
        let file = std::fs::File::create(&filler).unwrap();
        let size = self.available().saturating_sub(leave);
        // SAFETY: allocates blocks for an open file of this test's.
        let allocated = unsafe { libc::posix_fallocate(std::os::fd::AsRawFd::as_raw_fd(&file), 0, size as i64) };
        assert_eq!(allocated, 0, "posix_fallocate");
        filler
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mount).output();
        let _ = std::fs::remove_file(&self.image);
    }
}

#[tokio::test]
async fn a_stop_asked_while_the_disk_is_full_completes_once_space_is_freed() {
    let dir = DataDir::new();
    // Everything the server keeps (its database, the object store, the
    // executors' worktrees) is on the small filesystem, as on a host whose
    // data disk fills.
    let Some(disk) = LoopDisk::mount(&dir.root().join("disk.img"), &dir.path(), 200) else { return };
    let server = Server::start_with(&dir.path(), options(Flavor::Bubblewrap, None)).await;
    let session = session(&server, None).await;
    let (id, _) = launch(&server, &session, "filling").await;
    sh_ok(
        &server,
        &id,
        "cd /workspace 2>/dev/null || cd ~; for i in $(busybox seq 53); do echo line $i >> lines; done",
    )
    .await;
    // The workload fills what is left, then writes on where it can.
    let filler = disk.fill(20 << 20);
    let wrote = sh(
        &server,
        &id,
        "cd /workspace 2>/dev/null || cd ~; busybox head -c 60000000 /dev/urandom > big.bin; \
         for i in $(busybox seq 54 125); do echo line $i >> lines; done; busybox wc -c < big.bin",
    )
    .await;
    let big_bytes: u64 = wrote["commands"][0]["stdout"]
        .as_str()
        .unwrap()
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("big.bin's size ({e}): {wrote}\n{}", server.output()));
    assert!(big_bytes < 60_000_000, "the disk filled under the workload: {wrote}");
    stop(&server, &id, json!({})).await;
    let waiting = server
        .wait_for("alice", &id, Duration::from_secs(30), |w| {
            w["captureDrain"]["detail"].as_str().is_some_and(|d| d.contains("no space left"))
        })
        .await;
    assert_eq!(waiting["status"], "ready", "the executor is kept while its work waits: {waiting}");
    // Waited on for a while: the daemon must still be trying.
    holds_for("the executor is kept while its work waits", Duration::from_secs(10), || async {
        details(&server, &id).await["status"] == "ready"
    })
    .await;
    std::fs::remove_file(&filler).unwrap();
    let freed = std::time::Instant::now();
    server.wait_for("alice", &id, Duration::from_secs(30), |w| w["status"] == "stopped").await;
    eprintln!("stopped {:?} after the space was freed", freed.elapsed());
    let (next, _) = launch(&server, &session, "after-the-disk").await;
    let found =
        sh_ok(&server, &next, "cd /workspace 2>/dev/null || cd ~; busybox wc -l < lines; busybox wc -c < big.bin")
            .await;
    let counts: Vec<u64> = found.split_whitespace().map(|n| n.parse().unwrap()).collect();
    assert_eq!(counts, vec![125, big_bytes], "every line and byte written before the stop: {found}");
    // Ended here, not left to the data directory's cleanup: the loop disk
    // under it is unmounted first, and its executors could not be found.
    stop(&server, &next, json!({})).await;
    server.wait_for("alice", &next, Duration::from_secs(30), |w| w["status"] == "stopped").await;
    server.stop();
}
