//! Forks with the real `sluice serve` and `sluice gc` binaries and real
//! executors: a running workspace forked five times, each fork holding its
//! files at the fork point and nothing written after it, each independent
//! of the others and of the source; the object store holds the shared
//! bytes once; the source's session deleted and the store collected, every
//! fork still restores what it needs. A kept capture forks too.

use serde_json::{Value, json};
use sluice_tests::capture::*;
use sluice_tests::server::{DataDir, Server};
use sluice_tests::{bytes_under, sluice_binary};

const FORKS: usize = 5;
const BLOB_MIB: u64 = 4;

/// What the source holds at the fork point, and the check that finds it.
const WORK: &str = "cd /workspace 2>/dev/null || cd ~; busybox mkdir -p notes; \
    for i in 1 2 3 4 5 6 7 8; do echo \"note $i\" > notes/$i.txt; done; \
    busybox dd if=/dev/urandom of=blob bs=1048576 count=4 2>/dev/null; busybox sha256sum blob > blob.sum";
const CHECK: &str = "cd /workspace 2>/dev/null || cd ~; busybox cat notes/*.txt | busybox wc -l; busybox sha256sum -c blob.sum; \
    busybox ls";

async fn details(server: &Server, id: &str) -> Value {
    let (status, body) = server.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
    assert_eq!(status, 200, "{body}");
    body
}

#[tokio::test]
async fn a_workspace_forks_into_independent_copies_that_share_their_objects() {
    let flavor = Flavor::all()[0];
    let dir = DataDir::new();
    // No scheduled collection: the test collects itself.
    let options = flavor.drain_options().arg("--collect-schedule").arg("0 0 0 1 1 * 2099");
    let server = Server::start_with(&dir.path(), options).await;
    let session = session(&server, None).await;
    let (source, _) = launch(&server, &session, "fork-source").await;
    sh_ok(&server, &source, WORK).await;

    // Refusals name the field.
    for (body, field) in [
        (json!({"ownerUserId": "alice", "count": 0}), "count"),
        (json!({"ownerUserId": "alice", "count": 101}), "count"),
        (json!({"ownerUserId": "alice", "count": 1, "namePrefix": ""}), "namePrefix"),
    ] {
        let (status, refused) = server.post(&format!("/v1/workspaces/{source}/fork"), &body).await;
        assert_eq!(status, 400, "{body}: {refused}");
        assert!(refused["message"].as_str().unwrap().contains(field), "{refused}");
    }
    let (status, _) =
        server.post(&format!("/v1/workspaces/{source}/fork"), &json!({"ownerUserId": "mallory", "count": 1})).await;
    assert_eq!(status, 404, "only its owner forks it");

    // Its work captured first, so what the forks add is measured alone.
    let flush = json!({"ownerUserId": "alice", "kind": "suspend"});
    let (status, flushed) = server.post(&format!("/v1/workspaces/{source}/capture/flush"), &flush).await;
    assert_eq!((status, flushed["pending"].as_u64()), (200, Some(0)), "{flushed}");
    let objects = dir.path().join("objects");
    let before = bytes_under(&objects);
    assert!(before >= BLOB_MIB << 20, "the source's blob is stored: {before}");
    let body = json!({"ownerUserId": "alice", "count": FORKS, "namePrefix": "branch"});
    let (status, forked) = server.post(&format!("/v1/workspaces/{source}/fork"), &body).await;
    assert_eq!(status, 202, "{forked}");
    // Written after the fork point: in the source only.
    sh_ok(&server, &source, "cd /workspace 2>/dev/null || cd ~; echo later > after.txt").await;
    let items = forked["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), FORKS, "{forked}");
    assert_eq!(forked["sourceSessionId"], session.0.as_str());
    let mut forks = Vec::new();
    for (i, item) in items.iter().enumerate() {
        assert_eq!(item["name"], format!("branch-{}", i + 1));
        assert!(item["captureToken"].as_str().unwrap().starts_with("slcap_"), "{item}");
        assert_ne!(item["captureSessionId"], session.0.as_str());
        forks.push(item["workspaceId"].as_str().unwrap().to_owned());
    }
    let sessions: std::collections::BTreeSet<_> = items.iter().map(|i| i["captureSessionId"].to_string()).collect();
    assert_eq!(sessions.len(), FORKS, "a session each");
    for id in &forks {
        let ready =
            server.wait_for("alice", id, READY_WITHIN, |w| w["status"] == "ready" || w["status"] == "failed").await;
        assert_eq!(ready["status"], "ready", "{ready}");
    }
    // The shared bytes are stored once: five forks of a 4 MiB tree added
    // far less than one copy of it.
    let grown = bytes_under(&objects).saturating_sub(before);
    assert!(grown < BLOB_MIB << 20, "the forks copied objects: {grown} bytes more");

    for (i, id) in forks.iter().enumerate() {
        let out = sh_ok(&server, id, CHECK).await;
        assert!(out.starts_with("8\n") && out.contains("blob: OK"), "fork {i}: {out}");
        assert!(!out.contains("after.txt"), "fork {i} holds a file written after the fork point: {out}");
        sh_ok(&server, id, &format!("cd /workspace 2>/dev/null || cd ~; echo {i} > mine-{i}.txt")).await;
    }
    for (i, id) in forks.iter().enumerate() {
        let listed = sh_ok(&server, id, "cd /workspace 2>/dev/null || cd ~; busybox ls").await;
        let mine: Vec<&str> = listed.lines().filter(|l| l.starts_with("mine-")).collect();
        assert_eq!(mine, [format!("mine-{i}.txt")], "fork {i} sees only its own writes: {listed}");
    }
    let listed = sh_ok(&server, &source, "cd /workspace 2>/dev/null || cd ~; busybox ls").await;
    assert!(listed.contains("after.txt") && !listed.contains("mine-"), "the source is its own: {listed}");

    // The source ends and its session goes; a collection after that keeps
    // everything the forks need.
    for id in std::iter::once(&source).chain(&forks) {
        let (status, _) = server.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!(status, 202);
    }
    for id in std::iter::once(&source).chain(&forks) {
        server.wait_for("alice", id, READY_WITHIN, |w| w["status"] == "stopped").await;
    }
    let url = format!("{}/v1/capture-sessions/{}?ownerUserId=alice", server.base, session.0);
    let deleted = server.client.delete(&url).bearer_auth(&server.token).send().await.unwrap();
    assert_eq!(deleted.status(), 204, "{}", deleted.text().await.unwrap());
    let (status, _) = server.get(&format!("/v1/capture-sessions/{}?ownerUserId=alice", session.0)).await;
    assert_eq!(status, 404);
    let collected = std::process::Command::new(sluice_binary())
        .args(["gc", "--grace-seconds", "0", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&collected.stdout), String::from_utf8_lossy(&collected.stderr));
    assert!(collected.status.success(), "sluice gc: {said}");
    assert!(bytes_under(&objects) >= BLOB_MIB << 20, "the shared blob is kept: {said}");
    for (i, id) in forks.iter().enumerate().take(2) {
        let (status, restarted) =
            server.post(&format!("/v1/workspaces/{id}/restart"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!(status, 202, "{restarted}");
        server.wait_for("alice", id, READY_WITHIN, |w| w["status"] == "ready").await;
        let out = sh_ok(&server, id, CHECK).await;
        assert!(out.contains("blob: OK") && out.contains(&format!("mine-{i}.txt")), "fork {i} after gc: {out}");
    }

    // A kept capture of a fork's session forks too: its newest, which the
    // fork's stop saved.
    let fork_session = items[0]["captureSessionId"].as_str().unwrap();
    let (status, timeline) =
        server.get(&format!("/v1/capture-sessions/{fork_session}/captures?ownerUserId=alice")).await;
    assert_eq!(status, 200, "{timeline}");
    let newest = timeline["captures"].as_array().unwrap().last().unwrap()["n"].as_u64().unwrap();
    let (status, again) = server
        .post(
            &format!("/v1/capture-sessions/{fork_session}/captures/{newest}/fork"),
            &json!({"ownerUserId": "alice", "count": 1}),
        )
        .await;
    assert_eq!(status, 202, "{again}");
    assert_eq!(again["captureN"], newest);
    let id = again["items"][0]["workspaceId"].as_str().unwrap().to_owned();
    server.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "ready").await;
    let out = sh_ok(&server, &id, CHECK).await;
    assert!(out.contains("blob: OK") && out.contains("mine-0.txt"), "what the fork saved: {out}");
    assert_eq!(details(&server, &id).await["name"], "branch-1-fork-1");
    let (status, refused) = server
        .post(
            &format!("/v1/capture-sessions/{fork_session}/captures/999/fork"),
            &json!({"ownerUserId": "alice", "count": 1}),
        )
        .await;
    assert_eq!(status, 404, "{refused}");
    // From the command line: a copy of the copy, by its id.
    let prefix = ["workspaces", "fork", &id, "--owner", "alice", "--count", "1", "--name-prefix", "cli"];
    let (ok, said) = server.operate(&dir, &prefix);
    assert!(ok, "{said}");
    let line = said.lines().find(|l| l.contains("  cli-1  ")).unwrap_or_else(|| panic!("{said}"));
    let cli_copy = line.split_whitespace().next().unwrap().to_owned();
    server.wait_for("alice", &cli_copy, READY_WITHIN, |w| w["status"] == "ready").await;
    let out = sh_ok(&server, &cli_copy, CHECK).await;
    assert!(out.contains("mine-0.txt"), "{out}");
    server.stop();
}
