//! Capture end to end: the real `sluice serve` binary, real executors (local
//! and Docker), real daemons capturing into the object store through the
//! registrar. Files written by exec reach the session's head; a second
//! executor restores the exact tree and fences the first; re-plan writes
//! only what changed; a final flush seals; quotas, unreadable paths and an
//! unavailable store give the contract's answers.

use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::capture::*;
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::{holds_for, poll_until, read_until};

/// Every path of the worktree with its mode, kind, size and link target,
/// and every file's digest: what a restore must reproduce exactly.
/// The sparse file's content is read only where its data is (2 GiB of
/// zeros would be read in every listing), and its allocation is checked on
/// its own.
const LISTING: &str = "cd /workspace 2>/dev/null || cd ~; \
    busybox find . -mindepth 1 -exec busybox stat -c '%n %a %F %s %h %N' {} + | busybox sort; \
    busybox find . -type f ! -name sparse.img -exec busybox sha256sum {} + | busybox sort; \
    busybox dd if=sparse.img bs=1048576 skip=1024 count=2 2>/dev/null | busybox sha256sum; \
    busybox find . -mindepth 1 | busybox sort | busybox od -An -tx1; busybox readlink oddlink | busybox od -An -tx1; \
    [ linked.txt -ef src/a.txt ] && echo linked";

/// Whether a restored sparse file allocating `kib` kept its holes, where
/// the one made held `made` KiB. File systems differ in what they allocate
/// around a write (extent blocks, speculative preallocation): up to four
/// times the data passes; 2 GiB of zeros does not.
fn keeps_holes(kib: u64, made: u64) -> bool {
    kib <= made.max(1024) * 4
}

/// The sparse file's allocation in KiB.
const SPARSE_KIB: &str = "cd /workspace 2>/dev/null || cd ~; busybox du -k sparse.img | busybox cut -f1";

/// Downloads capture `n`'s archive and extracts it with GNU tar, into
/// `tree` of the directory answered.
async fn untar_capture(server: &Server, session: &str, n: u64) -> tempfile::TempDir {
    use futures::StreamExt;
    use std::io::Write;
    let url = format!("{}/v1/capture-sessions/{session}/captures/{n}/archive?ownerUserId=alice", server.base);
    let response = sluice_tests::http_client().get(url).bearer_auth(&server.token).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/x-tar");
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("capture.tar");
    let mut file = std::fs::File::create(&archive).unwrap();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        file.write_all(&chunk.expect("the archive arrives whole")).unwrap();
    }
    drop(file);
    let into = dir.path().join("tree");
    std::fs::create_dir(&into).unwrap();
    let out = std::process::Command::new("tar").arg("-xf").arg(&archive).arg("-C").arg(&into).output().unwrap();
    assert!(out.status.success(), "tar: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_file(&archive).unwrap();
    dir
}

/// [`LISTING`] run on the host in `dir`, with the host's busybox.
fn host_listing(dir: &std::path::Path) -> String {
    let script = LISTING.split_once("; ").unwrap().1;
    let out = std::process::Command::new("busybox").args(["sh", "-c", script]).current_dir(dir).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A listing without each directory's size and link count, which depend
/// on the file system it is on.
fn without_directory_sizes(listing: &str) -> String {
    listing
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            if fields.len() > 4 && fields[2] == "directory" {
                [&fields[..3], &fields[5..]].concat().join(" ")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A file's allocation in KiB.
fn host_kib(path: &std::path::Path) -> u64 {
    std::os::unix::fs::MetadataExt::blocks(&std::fs::metadata(path).unwrap()) / 2
}

async fn session_view(server: &Server, session: &str) -> Value {
    let (status, body) = server.get(&format!("/v1/capture-sessions/{session}?ownerUserId=alice")).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// Waits until `done` holds of the workspace's capture status: up to three
/// minutes, as a Docker executor's first bulk build through S3 can take over
/// one while the rest of the suite loads the machine.
async fn wait_status(server: &Server, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    read_until(Duration::from_secs(180), || capture_status(server, id), done)
        .await
        .unwrap_or_else(|last| panic!("capture status never showed {what}: {last}\n{}", server.output()))
}

async fn flush(server: &Server, id: &str, body: Value) -> Value {
    let mut body = body;
    body["ownerUserId"] = json!("alice");
    let (status, answer) = server.post(&format!("/v1/workspaces/{id}/capture/flush"), &body).await;
    assert_eq!(status, 200, "{answer}");
    answer
}

const TREE: &str = "cd /workspace 2>/dev/null || cd ~; set -e; \
    busybox mkdir -p src/empty .git/refs/heads deep/er/still; busybox chmod 750 .git; \
    busybox printf 'hello\\n' > src/a.txt; \
    busybox printf '#!/bin/sh\\necho run\\n' > src/run.sh; busybox chmod 750 src/run.sh; \
    busybox chmod 700 deep/er; \
    busybox printf 'ref: refs/heads/main\\n' > .git/HEAD; \
    busybox ln -s src/a.txt link; busybox ln -s /nowhere/at/all dangling; \
    busybox dd if=/dev/urandom of=big.bin bs=1024 count=6144 2>/dev/null; \
    busybox touch empty.txt; \
    busybox mkdir \"$(busybox printf 'odd\\376dir')\"; \
    busybox printf a > \"$(busybox printf 'odd\\376dir/bad\\377name')\"; \
    busybox ln -s \"$(busybox printf 'to\\375x')\" oddlink; \
    busybox ln src/a.txt linked.txt; busybox mkfifo -m 640 pipe; \
    busybox truncate -s 2G sparse.img; \
    busybox dd if=/dev/urandom of=sparse.img bs=1048576 seek=1024 count=1 conv=notrunc 2>/dev/null";

#[tokio::test]
async fn captures_restore_exactly_fence_replan_and_seal() {
    for (flavor, s3) in runtimes_and_stores() {
        eprintln!("{flavor:?}, {}", if s3.is_some() { "S3" } else { "local objects" });
        let dir = DataDir::new();
        let server = Server::start_with(&dir.path(), with_store(flavor.options(), s3.as_ref())).await;
        let session = session(&server, None).await;
        let (a, run_a) = launch(&server, &session, "launch-a").await;
        sh_ok(&server, &a, TREE).await;
        // The automatic snap after the exec ships the tree (a timed snap
        // may have caught it halfway, before the large file was written).
        let settled = wait_status(&server, &a, "the tree registered", |s| {
            s["headN"].as_u64().unwrap_or(0) >= 1
                && s["pending"] == 0
                && s["bulkBuilding"] == false
                && s["uploadedBytes"].as_u64().unwrap_or(0) >= 6 << 20
        })
        .await;
        assert_eq!(settled["fenced"], false);
        assert_eq!(settled["complete"], false, "not a final flush: {settled}");
        assert_eq!(settled["incompleteReason"], "not-final");
        assert_eq!(settled["refused"], json!([]));
        assert_eq!(settled["origin"]["launch"], "launch-a");
        assert!(settled["uploadedBytes"].as_u64().unwrap() >= 6 << 20, "{settled}");
        if let Some(s3) = &s3 {
            assert!(s3.object_count() >= 3, "the packs and manifests went to the S3 server");
            assert!(s3.stored_bytes() >= 6 << 20, "and every byte with them");
            assert!(!dir.path().join("objects").exists(), "and not to the data directory");
            let env = sh_ok(&server, &a, "busybox env; busybox cat /proc/1/environ 2>/dev/null || true").await;
            assert!(!env.contains(s3.secret_key()), "object-store credentials never enter an executor");
        }
        // The registrar's socket is the daemon's alone: the workload cannot reach it.
        assert!(dir.executors().join(&run_a).join("run/registrar.sock").exists(), "the socket is there");
        let socket = if flavor == Flavor::Plain { "../run/registrar.sock" } else { "/run/sluice/registrar.sock" };
        let probe = sh_ok(
            &server,
            &a,
            &format!(
                "cd /workspace 2>/dev/null || cd ~; \
                 busybox ls -l {socket} >/dev/null 2>&1 && echo REACHED registrar socket; echo probed"
            ),
        )
        .await;
        assert_eq!(probe, "probed\n", "{flavor:?}");
        let listing_a = sh_ok(&server, &a, LISTING).await;
        assert!(listing_a.contains("./deep/er 700 directory"), "{listing_a}");
        assert!(listing_a.contains("./.git 750 directory"), "{listing_a}");
        assert!(listing_a.contains("./src/run.sh 750"), "{listing_a}");
        assert!(listing_a.contains("./pipe 640 fifo 0 1"), "{listing_a}");
        assert!(listing_a.contains(" regular file 6 2 ./linked.txt"), "{listing_a}");
        assert!(listing_a.ends_with("linked\n"), "{listing_a}");
        let sparse_a: u64 = sh_ok(&server, &a, SPARSE_KIB).await.trim().parse().unwrap();
        // The head's archive untars to exactly that tree, holes and all. It
        // is read from the object store, whatever ran the executor: checked
        // once a store.
        let head_n = settled["headN"].as_u64().unwrap();
        if flavor == Flavor::Bubblewrap {
            let extracted = untar_capture(&server, &session.0, head_n).await;
            let listing_x = host_listing(&extracted.path().join("tree"));
            assert_eq!(
                without_directory_sizes(&listing_x),
                without_directory_sizes(&listing_a),
                "{flavor:?}: the archive"
            );
            let sparse_x = host_kib(&extracted.path().join("tree/sparse.img"));
            assert!(keeps_holes(sparse_x, sparse_a), "{flavor:?}: the archive's sparse file allocates {sparse_x} KiB");
            // A name that is not UTF-8 is read by its bytes.
            let odd = format!(
                "{}/v1/capture-sessions/{}/captures/{head_n}/files?ownerUserId=alice&pathHex={}",
                server.base,
                session.0,
                b"tree/odd\xfedir/bad\xffname".iter().map(|b| format!("{b:02x}")).collect::<String>()
            );
            let read = sluice_tests::http_client().get(odd).bearer_auth(&server.token).send().await.unwrap();
            assert_eq!(read.status(), 200);
            assert_eq!(read.bytes().await.unwrap().as_ref(), b"a");
        }
        // A checkpoint with nothing new registers nothing new.
        let head = settled["headN"].as_u64().unwrap();
        let checkpoint = flush(&server, &a, json!({"kind": "suspend"})).await;
        assert_eq!(
            (checkpoint["headN"].as_u64(), checkpoint["pending"].as_u64()),
            (Some(head), Some(0)),
            "{checkpoint}"
        );

        // A second executor on the same session restores the exact tree and fences the first.
        let (b, run_b) = launch(&server, &session, "launch-b").await;
        let listing_b = sh_ok(&server, &b, LISTING).await;
        assert_eq!(listing_b, listing_a, "{flavor:?}: the restored tree is the captured one");
        let sparse: u64 = sh_ok(&server, &b, SPARSE_KIB).await.trim().parse().unwrap();
        assert!(
            keeps_holes(sparse, sparse_a),
            "{flavor:?}: 1 MiB of data in 2 GiB allocates {sparse} KiB restored, {sparse_a} KiB where it was made"
        );
        let view = session_view(&server, &session.0).await;
        assert_eq!(view["epoch"], 2, "{view}");

        sh_ok(&server, &a, "cd /workspace 2>/dev/null || cd ~; busybox printf late > late.txt").await;
        let fenced = wait_status(&server, &a, "fenced", |s| s["fenced"] == true).await;
        assert_eq!(fenced["epoch"], 1, "{fenced}");
        let view = session_view(&server, &session.0).await;
        assert!(
            view["captures"].as_array().unwrap().iter().all(|c| c["epoch"] == 1 || c["launch"] == "launch-b"),
            "a fenced executor registers nothing: {view}"
        );

        // The second executor changes one file; the first re-plans onto its head.
        sh_ok(&server, &b, "cd /workspace 2>/dev/null || cd ~; busybox printf 'changed\\n' > src/a.txt").await;
        wait_status(&server, &b, "the change registered", |s| {
            s["headN"].as_u64().unwrap_or(0) > head && s["pending"] == 0
        })
        .await;
        let (status, replanned) =
            server.post(&format!("/v1/workspaces/{a}/capture/replan"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!(status, 200, "{replanned}");
        assert_eq!(replanned["unchanged"], false, "{replanned}");
        assert_eq!(replanned["bytesWritten"], 8, "{replanned}\n{}", server.output());
        assert_eq!(replanned["removed"], 1, "late.txt is not in the head: {replanned}");
        // The changed file's hard link is made again (the rewrite is a new inode).
        assert_eq!(replanned["filesWritten"], 2, "only the changed file and its link: {replanned}");
        assert_eq!(
            replanned["filesSkipped"], 6,
            "run.sh, HEAD, big.bin, empty.txt, the odd name, sparse.img: {replanned}"
        );
        assert_eq!(replanned["epoch"], 3);
        let again = server.post(&format!("/v1/workspaces/{a}/capture/replan"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!(again.1["unchanged"], true, "idempotent: {}", again.1);
        assert_eq!(sh_ok(&server, &a, "cd /workspace 2>/dev/null || cd ~; busybox cat src/a.txt").await, "changed\n");

        // A final flush stops the managed process, ships everything and seals.
        sh_ok(&server, &a, "cd /workspace 2>/dev/null || cd ~; busybox printf last > last.txt").await;
        let listing_final = sh_ok(&server, &a, LISTING).await;
        let done = flush(&server, &a, json!({"kind": "final", "graceMs": 2000})).await;
        assert_eq!(done["complete"], true, "{done}");
        assert!(done.get("incompleteReason").is_none(), "{done}");
        assert_eq!(done["pending"], 0);
        let view = session_view(&server, &session.0).await;
        let seal = &view["finalSeal"];
        assert_eq!(seal["captureN"], view["headN"], "{view}");
        assert_eq!((seal["executorId"].as_str(), seal["launchId"].as_str()), (Some(run_a.as_str()), Some("launch-a")));
        assert_eq!(seal["epoch"], 3);
        assert_eq!(seal["origin"]["launch"], "launch-a");
        // The daemon takes no new work after a final.
        let refused = sh(&server, &a, "true").await;
        assert_eq!(refused["status"], "failed", "{refused}");
        assert!(refused["error"]["message"].as_str().unwrap().contains("no new work"), "{refused}");
        // A repeated final converges on the same answer.
        let again = flush(&server, &a, json!({"kind": "final"})).await;
        assert_eq!(again["complete"], true, "{again}");

        // The other executor, fenced now, cannot complete a final.
        let fenced_final = flush(&server, &b, json!({"kind": "final", "graceMs": 1000})).await;
        assert_eq!(
            (fenced_final["complete"].as_bool(), fenced_final["incompleteReason"].as_str()),
            (Some(false), Some("fenced"))
        );
        let _ = run_b;

        // Stopped, the executor's work restores into the next one exactly.
        let (status, stopping) =
            server.post(&format!("/v1/workspaces/{a}/stop"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!(status, 202, "{stopping}");
        let stopped = server.wait_for("alice", &a, READY_WITHIN, |w| w["status"] == "stopped").await;
        assert_eq!(stopped["status"], "stopped", "{stopped}");
        let (c, _) = launch(&server, &session, "launch-c").await;
        assert_eq!(sh_ok(&server, &c, LISTING).await, listing_final, "{flavor:?}: the stopped executor's tree");
        let sparse: u64 = sh_ok(&server, &c, SPARSE_KIB).await.trim().parse().unwrap();
        assert!(keeps_holes(sparse, sparse_a), "{flavor:?}: 1 MiB of data in 2 GiB allocates {sparse} KiB");
        server.stop();
    }
}

#[tokio::test]
async fn a_class_past_the_quota_is_refused_and_unreadable_paths_are_carried_or_fail_a_final() {
    let flavor = Flavor::Bubblewrap;
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), flavor.options()).await;

    // Quota: the small class holds more than the session may keep.
    let tight = session(&server, Some(1000)).await;
    let (q, _) = launch(&server, &tight, "launch-quota").await;
    sh_ok(&server, &q, "cd /workspace; busybox dd if=/dev/zero of=big.txt bs=1000 count=5 2>/dev/null").await;
    let refused = wait_status(&server, &q, "the small class refused", |s| s["refused"] == json!(["small"])).await;
    assert_eq!(refused["pending"], 0, "a refused class is not pending: {refused}");
    let done = flush(&server, &q, json!({"kind": "final", "graceMs": 1000})).await;
    assert_eq!(done["complete"], false, "work past the quota is not saved: {done}");
    let view = session_view(&server, &tight.0).await;
    assert!(view.get("finalSeal").is_none(), "{view}");
    assert_eq!(view["usedBytes"], 0);

    // Unreadable: a file the workload closed to its own reads.
    let open = session(&server, None).await;
    let (u, _) = launch(&server, &open, "launch-unreadable").await;
    sh_ok(&server, &u, "cd /workspace; busybox printf kept > secret.txt; busybox printf ok > fine.txt").await;
    let first = wait_status(&server, &u, "the first capture", |s| s["headN"] == 1 && s["pending"] == 0).await;
    assert_eq!(first["unreadable"], 0);
    sh_ok(&server, &u, "cd /workspace; busybox chmod 000 secret.txt; busybox printf more > fine.txt").await;
    let carried = wait_status(&server, &u, "the unreadable path carried", |s| {
        s["unreadable"] == 1 && s["headN"].as_u64() == Some(2)
    })
    .await;
    assert_eq!(carried["carried"], 1, "{carried}");
    assert_eq!(carried["unreadablePaths"], json!(["tree/secret.txt"]));
    assert!(carried.get("lastSnapError").is_none(), "an automatic snap carries, it does not fail: {carried}");
    let done = flush(&server, &u, json!({"kind": "final", "graceMs": 1000})).await;
    assert_eq!(
        (done["complete"].as_bool(), done["incompleteReason"].as_str()),
        (Some(false), Some("unreadable")),
        "{done}"
    );
    assert_eq!(done["snapsFailed"], 2, "the final snap failed for both classes: {done}");
    assert!(done["lastSnapError"].as_str().is_some(), "{done}");
    // What was captured kept the secret's last content: a new executor gets it back.
    let (v, _) = launch(&server, &open, "launch-after").await;
    assert_eq!(sh_ok(&server, &v, "cd /workspace; busybox cat secret.txt fine.txt").await, "keptmore");
    server.stop();
}

#[tokio::test]
async fn captures_pend_while_the_object_store_is_away_and_ship_when_it_is_back() {
    for mut s3 in stores() {
        let dir = DataDir::new();
        let server = Server::start_with(&dir.path(), with_store(Flavor::Bubblewrap.options(), s3.as_ref())).await;
        let open = session(&server, None).await;
        let (w, _) = launch(&server, &open, "launch-pend").await;
        sh_ok(&server, &w, "cd /workspace; busybox printf one > one.txt").await;
        wait_status(&server, &w, "the first capture", |s| s["headN"] == 1 && s["pending"] == 0).await;

        // The store goes away: the S3 server stops, or the directory is
        // replaced by a file.
        let objects = dir.path().join("objects");
        let away = dir.path().join("objects-away");
        match &mut s3 {
            Some(s3) => s3.pause(),
            None => {
                std::fs::rename(&objects, &away).unwrap();
                std::fs::write(&objects, "not a directory").unwrap();
            }
        }
        sh_ok(&server, &w, "cd /workspace; busybox printf two > two.txt").await;
        let pending = wait_status(&server, &w, "a pending capture", |s| s["pending"] == 1).await;
        assert_eq!(pending["headN"], 1, "{pending}");
        holds_for("a capture waits for the store, it is not dropped", Duration::from_secs(2), || async {
            capture_status(&server, &w).await["pending"] == 1
        })
        .await;

        match &mut s3 {
            Some(s3) => s3.resume(),
            None => {
                std::fs::remove_file(&objects).unwrap();
                std::fs::rename(&away, &objects).unwrap();
            }
        }
        let shipped =
            wait_status(&server, &w, "the pending capture shipped", |s| s["pending"] == 0 && s["headN"] == 2).await;
        assert_eq!(shipped["fenced"], false);
        let (v, _) = launch(&server, &open, "launch-check").await;
        assert_eq!(sh_ok(&server, &v, "cd /workspace; busybox cat one.txt two.txt").await, "onetwo", "nothing lost");
        server.stop();
    }
}

/// What the executor's daemon printed.
fn daemon_log(flavor: Flavor, dir: &DataDir, run_id: &str) -> String {
    match flavor {
        Flavor::Docker => {
            let out =
                std::process::Command::new("docker").args(["logs", &format!("sluice-{run_id}")]).output().unwrap();
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
        }
        _ => std::fs::read_to_string(dir.executors().join(run_id).join("daemon.log")).unwrap_or_default(),
    }
}

#[tokio::test]
async fn an_idle_or_sealed_executor_reads_fenced_once_a_newer_one_claims() {
    for flavor in Flavor::all() {
        eprintln!("{flavor:?}");
        let dir = DataDir::new();
        let server = Server::start_with(&dir.path(), flavor.options()).await;
        let session = session(&server, None).await;
        // The first executor does nothing at all; the second seals its work.
        let (idle, idle_run) = launch(&server, &session, "idle").await;
        let (sealed, sealed_run) = launch(&server, &session, "sealed").await;
        sh_ok(&server, &sealed, "cd /workspace 2>/dev/null || cd ~; busybox printf work > work.txt").await;
        let done = flush(&server, &sealed, json!({"kind": "final", "graceMs": 1000})).await;
        assert_eq!(done["complete"], true, "{done}");
        assert_eq!(done["fenced"], false, "{done}");
        let _newest = launch(&server, &session, "newest").await;
        for (id, run_id, what) in [(&idle, &idle_run, "idle"), (&sealed, &sealed_run, "sealed")] {
            let fenced =
                wait_status(&server, id, &format!("the {what} executor fenced"), |s| s["fenced"] == true).await;
            assert!(fenced["epoch"].as_u64().unwrap() < 3, "{fenced}");
            // The daemon itself learnt it, with nothing to ship.
            poll_until(&format!("{flavor:?}: the {what} daemon heard"), Duration::from_secs(20), || async {
                capture_status(&server, id).await;
                daemon_log(flavor, &dir, run_id).contains("fenced: a newer executor claimed").then_some(())
            })
            .await;
        }
        server.stop();
    }
}

/// The workload of [`an_idle_worktree_is_not_walked_and_a_change_the_kernel_never_told_is_caught_by_the_sweep`]:
/// once `go` appears, it rewrites `mapped` through a shared mapping (the
/// kernel tells no watcher of that) and holds the file open (a close after
/// writing would be told).
const MAPPED_WRITER: &str = "cd /workspace; while [ ! -e go ]; do sleep 0.1; done; sleep 1; \
    exec python3 -c 'import mmap, time\nf = open(\"mapped\", \"r+b\")\nm = mmap.mmap(f.fileno(), 0)\n\
m[0:11] = b\"after-1111\\n\"\nm.flush()\ntime.sleep(600)'";

#[tokio::test]
async fn an_idle_worktree_is_not_walked_and_a_change_the_kernel_never_told_is_caught_by_the_sweep() {
    let dir = DataDir::new();
    // Snaps may come every second; the sweep walks every thirty.
    let options = Options::serve().args(["--runtime", "local", "--capture-interval-ms", "1000"]);
    let server = Server::start_with(&dir.path(), options).await;
    let session = session(&server, None).await;
    let mut body = workspace_body(&session, "launch-mapped", None);
    body["spec"]["command"] = json!(["sh", "-c", MAPPED_WRITER]);
    let (status, created) = server.post("/v1/workspaces", &body).await;
    assert_eq!(status, 202, "{created}");
    let id = created["workspaceId"].as_str().unwrap().to_owned();
    server.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "ready").await;

    sh_ok(&server, &id, "printf 'before-000\\n' > mapped").await;
    let first = wait_status(&server, &id, "the file registered", |s| {
        s["headN"].as_u64().unwrap_or(0) >= 1 && s["pending"] == 0 && s["bulkBuilding"] == false
    })
    .await;
    assert_eq!(first["changesFrom"], "kernel", "{first}");
    assert!(first.get("walkReason").is_none(), "{first}");

    // Idle for four intervals: no timed snap walks the tree (the sweep may
    // fall in the window once).
    let snaps = std::cell::RefCell::new(std::collections::BTreeSet::new());
    holds_for("an idle worktree is not walked", Duration::from_secs(4), || async {
        let snap = capture_status(&server, &id).await["lastSnapUnixMs"].as_u64();
        let mut snaps = snaps.borrow_mut();
        snaps.insert(snap);
        assert!(snaps.len() <= 2, "an idle worktree was walked: {snaps:?}");
        true
    })
    .await;

    // The workload's write through a mapping tells the watches nothing: the
    // sweep's walk catches it.
    sh_ok(&server, &id, "touch go").await;
    let go = wait_status(&server, &id, "go registered", |s| s["headN"].as_u64() > first["headN"].as_u64()).await;
    let seen = std::cell::Cell::new(go["headN"].as_u64().unwrap());
    poll_until("the mapped write was captured", Duration::from_secs(120), || async {
        let status = capture_status(&server, &id).await;
        let head = status["headN"].as_u64().unwrap_or(0);
        if head <= seen.get() {
            return None;
        }
        seen.set(head);
        let tree = untar_capture(&server, &session.0, head).await;
        let mapped = std::fs::read_to_string(tree.path().join("tree/mapped")).unwrap();
        (mapped == "after-1111\n").then(|| assert_eq!(status["changesFrom"], "kernel", "{status}"))
    })
    .await;
    server.stop();
}

/// A stopped capture-sourced workspace restarts in place: a new run on the
/// same workspace claims its session and goes on from the head the stop
/// sealed, with every file written before; twice over. While it is live a
/// restart is refused (its work is not saved yet), and once deleted its
/// sealed capture token is gone with it.
#[tokio::test]
async fn a_stopped_capture_workspace_restarts_from_its_head() {
    let flavor = Flavor::all()[0];
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), flavor.drain_options()).await;
    let session = session(&server, None).await;
    let (id, first_run) = launch(&server, &session, "restart-1").await;
    let restart = format!("/v1/workspaces/{id}/restart");
    let (status, refused) = server.post(&restart, &json!({"ownerUserId": "alice"})).await;
    assert_eq!((status, refused["code"].as_str()), (409, Some("capture-restart-unsupported")), "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("stop it first"), "{refused}");

    let mut written = Vec::new();
    let mut runs = vec![first_run];
    for round in 1..=2 {
        let name = format!("round-{round}.txt");
        sh_ok(&server, &id, &format!("cd /workspace 2>/dev/null || cd ~; echo {round} > {name}")).await;
        written.push(name);
        let (status, stopping) =
            server.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!(status, 202, "{stopping}");
        let stopped = server.wait_for("alice", &id, Duration::from_secs(60), |w| w["status"] == "stopped").await;
        assert_eq!(stopped["captureDrain"]["state"], "stopped", "saved, its runtime removed: {stopped}");

        let (status, restarted) = server.post(&restart, &json!({"ownerUserId": "alice"})).await;
        assert_eq!(status, 202, "{restarted}");
        let ready = server.wait_for("alice", &id, Duration::from_secs(60), |w| w["status"] == "ready").await;
        let run = ready["runtime"]["runId"].as_str().unwrap().to_owned();
        assert!(!runs.contains(&run), "a new run: {ready}");
        runs.push(run);
        let listed = sh_ok(&server, &id, "cd /workspace 2>/dev/null || cd ~; busybox cat round-*.txt").await;
        let expected: String = (1..=round).map(|r| format!("{r}\n")).collect();
        assert_eq!(listed, expected, "every file written before the stop, after restart {round}");
    }

    let (status, stopping) = server.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 202, "{stopping}");
    server.wait_for("alice", &id, Duration::from_secs(60), |w| w["status"] == "stopped").await;

    // Another workspace took the session over and is stopping with work it
    // cannot confirm saved: a restart would fence it, and is refused.
    let (other, other_run) = launch(&server, &session, "restart-other").await;
    sh_ok(&server, &other, "cd /workspace 2>/dev/null || cd ~; echo unsaved > other.txt").await;
    silence(flavor, &dir, &other_run, true);
    let (status, _) = server.post(&format!("/v1/workspaces/{other}/stop"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 202);
    server.wait_for("alice", &other, Duration::from_secs(60), |w| w["captureDrain"]["state"] == "kept").await;
    let (status, refused) = server.post(&restart, &json!({"ownerUserId": "alice"})).await;
    assert_eq!((status, refused["code"].as_str()), (409, Some("session-has-unsaved-work")), "{refused}");
    assert!(!refused["message"].as_str().unwrap().contains("takeOver"), "a restart cannot take over: {refused}");
    silence(flavor, &dir, &other_run, false);
    let discard = json!({"ownerUserId": "alice", "discardUnsaved": true});
    let (status, _) = server.post(&format!("/v1/workspaces/{other}/stop"), &discard).await;
    assert_eq!(status, 202);
    server.wait_for("alice", &other, Duration::from_secs(60), |w| w["status"] == "stopped").await;

    let deleted = server.client.delete(format!("{}/v1/workspaces/{id}?ownerUserId=alice", server.base));
    let deleted = deleted.bearer_auth(&server.token).send().await.unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.text().await.unwrap());
    server.stop();
    let db = sqlx::SqlitePool::connect(&format!("sqlite:{}", dir.path().join("sluice.db").display())).await.unwrap();
    let secrets: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM sealed_secrets WHERE workspace_id = ?")
        .bind(&id)
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(secrets, 0, "a deleted workspace keeps no sealed secret");
}
