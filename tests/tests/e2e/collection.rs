//! Collection end to end: the real `sluice serve` and `sluice gc` binaries,
//! a real executor rewriting a large file, captures into the local object
//! store and a real S3-compatible server. Retention forgets the captures no
//! rule keeps; `sluice gc` deletes what nothing kept names, and killed at
//! any point it loses nothing a kept capture needs.

use std::time::{Duration, Instant};

use serde_json::json;
use sha2::Digest;
use sluice_tests::capture::*;
use sluice_tests::s3::BUCKET;
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::{bytes_under, pace, poll_until, sluice_binary, wait_for};

/// How many times the file is rewritten, and how large it is.
const REWRITES: u64 = 20;
const FILE_MIB: u64 = 50;
/// Captures kept besides the head.
const KEEP_LAST: u64 = 3;

/// Runs `sluice gc` against the server's data directory and store.
fn gc(dir: &DataDir, s3: Option<&sluice_tests::s3::S3Server>, args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(sluice_binary());
    // A killed collection's fence holds registrations off for this long.
    command.arg("gc").arg("--data-dir").arg(dir.path()).arg("--fence-seconds").arg("5").args(args);
    if let Some(s3) = s3 {
        command.arg("--object-store").arg(format!("s3://{BUCKET}/captures"));
        for (name, value) in s3.env() {
            command.env(name, value);
        }
    }
    command
}

fn gc_output(mut command: std::process::Command) -> String {
    let out = command.output().expect("sluice gc runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "sluice gc failed: {text}");
    text
}

/// The bytes a line of `sluice gc` names in parentheses, `(N bytes)`.
fn bytes_in(line: &str) -> u64 {
    let start = line.rfind('(').expect("a (N bytes) part") + 1;
    line[start..].split(' ').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_rewritten_file_is_collected_down_to_what_the_kept_captures_need() {
    for s3 in stores() {
        let label = if s3.is_some() { "S3" } else { "local objects" };
        eprintln!("{label}");
        let dir = DataDir::new();
        let stored = || match &s3 {
            Some(s3) => s3.stored_bytes(),
            None => bytes_under(&dir.path().join("objects")),
        };
        // Snapped only after each exec, so every capture holds a whole rewrite.
        // No scheduled collection in the test's run (the test collects itself).
        let options = Options::serve()
            .arg("--runtime")
            .arg("local")
            .arg("--capture-interval-ms")
            .arg("600000")
            .arg("--collect-schedule")
            .arg("0 0 0 1 1 * 2099");
        let server = Server::start_with(&dir.path(), with_store(options, s3.as_ref())).await;
        let body = json!({"ownerUserId": "alice", "retention": {"keepLast": KEEP_LAST}});
        let (status, created) = server.post("/v1/capture-sessions", &body).await;
        assert_eq!(status, 201, "{created}");
        let session =
            (created["sessionId"].as_str().unwrap().to_owned(), created["token"].as_str().unwrap().to_owned());
        let (_, view) = server.get(&format!("/v1/capture-sessions/{}?ownerUserId=alice", session.0)).await;
        assert_eq!(view["retention"], json!({"keepLast": KEEP_LAST}), "the policy in force: {view}");

        let (a, _) = launch(&server, &session, "launch-a").await;
        let started = Instant::now();
        let mut digests = vec![String::new()];
        for i in 1..=REWRITES {
            let script = format!(
                "cd /workspace 2>/dev/null || cd ~; busybox dd if=/dev/urandom of=data.bin bs=1048576 count={FILE_MIB} 2>/dev/null; \
                 busybox sha256sum data.bin"
            );
            digests.push(sh_ok(&server, &a, &script).await);
            // Each rewrite is captured before the next one starts.
            let settled = wait_for(Duration::from_secs(60), || async {
                let status = capture_status(&server, &a).await;
                let uploaded = status["uploadedBytes"].as_u64().unwrap_or(0);
                (status["pending"] == 0 && status["bulkBuilding"] == false && uploaded >= (i * FILE_MIB) << 20)
                    .then_some(())
            })
            .await;
            assert!(
                settled.is_some(),
                "{label}: rewrite {i} was never captured: {}",
                capture_status(&server, &a).await
            );
        }
        eprintln!("{label}: {REWRITES} rewrites captured in {:?}", started.elapsed());
        let (status, stopping) =
            server.post(&format!("/v1/workspaces/{a}/stop"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!(status, 202, "{stopping}");
        let stopped = server.wait_for("alice", &a, READY_WITHIN, |w| w["status"] == "stopped").await;
        assert_eq!(stopped["status"], "stopped", "{stopped}");
        eprintln!("{label}: stopped at {:?}", started.elapsed());
        // The timeline, a page at a time: each rewrite changed one file.
        let mut timeline: Vec<serde_json::Value> = Vec::new();
        let mut after = 0;
        loop {
            let path = format!("/v1/capture-sessions/{}/captures?ownerUserId=alice&limit=8&after={after}", session.0);
            let (status, page) = server.get(&path).await;
            assert_eq!(status, 200, "{page}");
            timeline.extend(page["captures"].as_array().unwrap().iter().cloned());
            match page["nextAfter"].as_u64() {
                Some(next) => after = next,
                None => break,
            }
        }
        let positions: Vec<u64> = timeline.iter().map(|c| c["n"].as_u64().unwrap()).collect();
        assert_eq!(positions, (1..=REWRITES).collect::<Vec<_>>(), "{label}");
        assert_eq!((timeline[0]["added"].as_u64(), timeline[0]["files"].as_u64()), (Some(1), Some(1)), "{label}");
        for capture in &timeline[1..] {
            let counts = (&capture["added"], &capture["changed"], &capture["removed"], &capture["files"]);
            assert_eq!(counts, (&json!(0), &json!(1), &json!(0), &json!(1)), "{label}: {capture}");
            assert_eq!(capture["launch"], "launch-a");
            assert_eq!(capture["origin"]["launch"], "launch-a");
        }
        let (status, _) = server.get(&format!("/v1/capture-sessions/{}/captures?ownerUserId=bob", session.0)).await;
        assert_eq!(status, 404, "another owner's session is not found");
        // What two captures differ by: the rewritten file, whichever way.
        let diff_path = |n: u64, against: Option<u64>, owner: &str| {
            let against = against.map(|a| format!("&against={a}")).unwrap_or_default();
            format!("/v1/capture-sessions/{}/captures/{n}/diff?ownerUserId={owner}{against}", session.0)
        };
        let (status, diff) = server.get(&diff_path(5, Some(2), "alice")).await;
        assert_eq!(status, 200, "{diff}");
        assert_eq!((diff["changed"].clone(), diff["added"].clone()), (json!(["tree/data.bin"]), json!([])), "{diff}");
        assert_eq!(
            (diff["n"].as_u64(), diff["against"].as_u64(), diff["truncated"].as_bool()),
            (Some(5), Some(2), Some(false))
        );
        let (_, first) = server.get(&diff_path(1, None, "alice")).await;
        assert_eq!((first["against"].as_u64(), first["added"].clone()), (Some(0), json!(["tree/data.bin"])), "{first}");
        let (_, same) = server.get(&diff_path(3, Some(3), "alice")).await;
        assert_eq!(same["changedCount"].as_u64(), Some(0), "{same}");
        let (status, _) = server.get(&diff_path(5, Some(2), "bob")).await;
        assert_eq!(status, 404);
        // One file of a capture, read back out of the store.
        let file = |n: u64, path: &str| {
            let url = format!(
                "{}/v1/capture-sessions/{}/captures/{n}/files?ownerUserId=alice&path={path}",
                server.base, session.0
            );
            sluice_tests::http_client().get(url).bearer_auth(&server.token).send()
        };
        let read = file(REWRITES, "tree/data.bin").await.unwrap();
        assert_eq!(read.status(), 200);
        let bytes = read.bytes().await.unwrap();
        assert_eq!(bytes.len() as u64, FILE_MIB << 20, "{label}");
        let hex: String = sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
        assert!(digests[REWRITES as usize].starts_with(&hex), "{label}: the last capture's file is the last rewrite");
        assert_eq!(file(REWRITES, "tree/nothing-here").await.unwrap().status(), 404);
        let (status, missing) = server.get(&diff_path(99, None, "alice")).await;
        assert_eq!(status, 404, "{missing}");
        assert!(missing["message"].as_str().unwrap().contains("99"), "{missing}");
        let (status, bad) =
            server.get(&format!("/v1/capture-sessions/{}/captures?ownerUserId=alice&after=-1", session.0)).await;
        assert_eq!(status, 400, "{bad}");
        assert!(bad["message"].as_str().unwrap().contains("after"), "{bad}");
        // The same timeline from the command line.
        let cli = |command: &str, rest: &[&str]| {
            let out = std::process::Command::new(sluice_binary())
                .args(["capture", command, session.0.as_str()])
                .args(rest)
                .args(["--owner", "alice", "--api-url", &server.base])
                .env("SLUICE_API_TOKEN", &server.token)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(out.status.success(), "sluice capture {command}: {text}{}", String::from_utf8_lossy(&out.stderr));
            text
        };
        let listed = cli("list", &[]);
        assert_eq!(listed.lines().count() as u64, REWRITES + 1, "{label}: a header and a line a capture: {listed}");
        assert!(listed.lines().nth(5).unwrap().trim_start().starts_with("5 "), "{listed}");
        assert_eq!(cli("diff", &["5", "--against", "2"]), "~ tree/data.bin\n", "{label}");
        let restored = tempfile::tempdir().unwrap();
        let into = restored.path().join("at-7");
        cli("restore", &["7", "--into", into.to_str().unwrap()]);
        let bytes = std::fs::read(into.join("data.bin")).unwrap();
        let hex: String = sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
        assert!(digests[7].starts_with(&hex), "{label}: capture 7 restored into a directory is rewrite 7");
        let archive = restored.path().join("at-3.tar");
        cli("export", &["3", "--output", archive.to_str().unwrap()]);
        let members = std::process::Command::new("tar").arg("-tvf").arg(&archive).output().unwrap();
        let members = String::from_utf8_lossy(&members.stdout).into_owned();
        assert!(members.contains("data.bin") && members.contains(&(FILE_MIB << 20).to_string()), "{label}: {members}");
        drop(restored);
        let before = stored();
        assert!(before >= (REWRITES * FILE_MIB) << 20, "{label}: every rewrite was stored ({before} bytes)");

        // A dry run names what would go and deletes nothing.
        let dry = gc_output(gc(&dir, s3.as_ref(), &["--dry-run", "--grace-seconds", "0"]));
        let would = dry.lines().find(|l| l.contains("would be deleted")).unwrap_or_else(|| panic!("{dry}"));
        assert!(bytes_in(would) >= ((REWRITES - KEEP_LAST - 1) * FILE_MIB) << 20, "{label}: {dry}");
        assert_eq!(stored(), before, "{label}: a dry run deletes nothing");

        // Killed at random points, it loses nothing a kept capture needs.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..5 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let mut child = gc(&dir, s3.as_ref(), &["--grace-seconds", "0"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            pace(Duration::from_millis(seed % 400)).await;
            let _ = child.kill();
            let _ = child.wait();
        }
        // The fence a killed collection held runs out; this one finishes.
        let done =
            poll_until(&format!("{label}: a collection after the killed ones"), Duration::from_secs(30), || async {
                let out = gc(&dir, s3.as_ref(), &["--grace-seconds", "0"]).output().unwrap();
                let done = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
                if out.status.success() {
                    return Some(done);
                }
                assert!(done.contains("another collection is deleting"), "{label}: {done}");
                None
            })
            .await;
        eprintln!("{label}: collected at {:?}", started.elapsed());
        let need_line = done.lines().find(|l| l.contains(&session.0)).unwrap_or_else(|| panic!("{label}: {done}"));
        let need = bytes_in(need_line);
        // The kept captures: the newest KEEP_LAST (the head and the seal among them).
        let expected = (KEEP_LAST * FILE_MIB) << 20;
        assert!(
            need >= expected && need <= expected + expected / 20,
            "{label}: the kept captures hold {need} bytes, about {expected}: {done}"
        );
        let after = stored();
        assert!(after <= need + need / 10, "{label}: {after} bytes stored for {need} needed: {done}");
        let (_, view) = server.get(&format!("/v1/capture-sessions/{}?ownerUserId=alice", session.0)).await;
        let kept: Vec<u64> = view["captures"].as_array().unwrap().iter().map(|c| c["n"].as_u64().unwrap()).collect();
        assert_eq!(kept.len() as u64, KEEP_LAST, "{label}: {view}");
        assert_eq!(view["storedBytes"].as_u64(), Some(need), "{label}: recounted: {view}");

        // Every kept capture restores byte for byte after all of it: the
        // head as the session stands, each earlier one at its captureN.
        let read_digest = "cd /workspace 2>/dev/null || cd ~; busybox sha256sum data.bin";
        let (b, _) = launch(&server, &session, "launch-b").await;
        let digest = sh_ok(&server, &b, read_digest).await;
        assert_eq!(digest, digests[REWRITES as usize], "{label}: the last rewrite restores exactly");
        let (status, refused) = server.post("/v1/workspaces", &workspace_body(&session, "launch-gone", Some(1))).await;
        assert_eq!(status, 400, "{label}: {refused}");
        assert!(refused["message"].as_str().unwrap().contains("spec.source.captureN"), "{refused}");
        let mut head = REWRITES;
        for n in kept.iter().copied().filter(|n| *n != REWRITES) {
            let (at, _) = launch_at(&server, &session, &format!("launch-at-{n}"), Some(n)).await;
            let digest = sh_ok(&server, &at, read_digest).await;
            assert_eq!(digest, digests[n as usize], "{label}: capture {n} restores its own rewrite");
            head += 1;
            let path = format!("/v1/capture-sessions/{}/captures?ownerUserId=alice&after={}", session.0, head - 1);
            let (_, page) = server.get(&path).await;
            let restored = &page["captures"][0];
            assert_eq!((restored["n"].as_u64(), restored["restoredFrom"].as_u64()), (Some(head), Some(n)), "{page}");
            assert_eq!((restored["changed"].as_u64(), restored["files"].as_u64()), (Some(1), Some(1)), "{page}");
        }
        server.stop();
    }
}
