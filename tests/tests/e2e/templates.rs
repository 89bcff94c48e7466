//! Templates built from a Dockerfile through the host's Docker Engine,
//! `FROM` an image the test pushed to a registry on loopback: workspaces
//! of a template see what its `RUN` wrote, run its start command and read
//! `ready` only once its ready command passed; a build's output streams;
//! an unchanged rebuild is a cache hit; a failing build and a ready
//! command that never passes each fail by name.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_tests::registry::{Registry, push_test_images};
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::*;

fn engine() -> bool {
    let info = std::process::Command::new("docker").args(["info", "--format", "{{.ServerVersion}}"]).output();
    present("a Docker Engine (template builds)", info.is_ok_and(|o| o.status.success()))
}

fn bubblewrap() -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    present("bubblewrap (images run inside it)", std::env::split_paths(&path).any(|d| d.join("bwrap").is_file()))
}

/// A tar (base64) of one file, `note.txt`.
fn context() -> String {
    use base64::Engine as _;
    let mut tar = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    let note = b"from the context\n";
    header.set_size(note.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, "note.txt", &note[..]).unwrap();
    base64::engine::general_purpose::STANDARD.encode(tar.into_inner().unwrap())
}

async fn exec(server: &Server, id: &str, argv: &[&str]) -> Value {
    server.exec_argv(id, argv).await
}

/// Follows a build's log to its end: its lines, and the build it ended as.
async fn follow(server: &Server, build: &Value) -> (String, Value) {
    let path = format!("/v1/templates/{}/builds/{}/logs?follow=true", build["template"], build["id"]);
    let path = path.replace('"', "");
    let (status, events) = server.read_stream(&path, None, 10_000, Duration::from_secs(300)).await;
    assert_eq!(status, 200);
    let lines: String = events.iter().filter(|e| e.event == "log").map(|e| e.data["text"].as_str().unwrap()).collect();
    let ended = events.iter().find(|e| e.event == "ended").map(|e| e.data.clone());
    (lines, ended.unwrap_or_else(|| panic!("the log ended without the build: {events:?}\n{}", server.output())))
}

#[tokio::test]
async fn a_template_built_from_a_dockerfile_gives_workspaces_its_files_and_its_ready_command() {
    let dir = DataDir::new();
    let Some(registry) = Registry::start(dir.root()) else { return };
    if !engine() || !bubblewrap() {
        return;
    }
    push_test_images(dir.root(), &registry).await;
    let server = Server::start_with(
        &dir.path(),
        Options::serve().args(["--runtime", "local", "--template-builder", "docker", "--ready-timeout-seconds", "10"]),
    )
    .await;
    // The worker says it can build once it has beaten.
    let can_build = wait_for(Duration::from_secs(30), || async {
        let (_, workers) = server.get("/v1/workers").await;
        workers["items"].as_array().filter(|w| !w.is_empty()).map(|_| ())
    });
    assert!(can_build.await.is_some());

    // A unique line, so the engine's own cache never answers this build.
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let dockerfile =
        format!("FROM {}/b:1\nRUN echo built-{nonce} > /built.txt\nCOPY note.txt /note.txt\n", registry.host());
    let request = json!({
        "name": "web", "dockerfile": dockerfile, "context": context(),
        "startCommand": "sleep 2; touch /tmp/ready; exec sleep 600", "readyCommand": "test -f /tmp/ready",
    });
    let (status, build) = server.post("/v1/templates", &request).await;
    assert_eq!((status, build["state"].as_str(), build["cacheHit"].as_bool()), (202, Some("queued"), Some(false)));
    let (lines, built) = follow(&server, &build).await;
    assert_eq!(built["state"], "succeeded", "{built}\n{lines}");
    assert!(lines.contains(&format!("RUN echo built-{nonce}")), "the build's output streams: {lines}");
    let digest = built["digest"].as_str().unwrap().to_owned();
    assert!(digest.starts_with("sha256:") && built["sizeBytes"].as_i64().unwrap() > 1_000_000, "{built}");
    assert!(built["durationMs"].as_i64().is_some() && built["builder"] == "docker", "{built}");
    let (_, template) = server.get("/v1/templates/web").await;
    assert_eq!(template["current"]["id"], built["id"], "{template}");

    // A workspace of it: the RUN's file and the context's are there on
    // image b's root, and it is not ready before its ready command passed
    // (the start command makes that true two seconds in).
    let created_at = Instant::now();
    let (status, created) =
        server.post("/v1/workspaces", &json!({"ownerUserId": "alice", "template": "web", "spec": {}})).await;
    assert_eq!(status, 202, "{created}");
    assert_eq!((created["registryId"].as_str(), created["tag"].as_str()), (Some("templates"), Some(digest.as_str())));
    let id = created["workspaceId"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(800)).await;
    let (_, early) = server.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
    assert_ne!(early["status"], "ready", "ready before the ready command could pass: {early}");
    server.wait_for("alice", &id, Duration::from_secs(60), |w| w["status"] == "ready").await;
    assert!(created_at.elapsed() >= Duration::from_secs(2), "ready before the start command made it so");
    let read = exec(&server, &id, &["cat", "/built.txt", "/note.txt", "/etc/os-release"]).await;
    assert_eq!(read["stdout"], format!("built-{nonce}\nfrom the context\nID=image-b\n"), "{read}");
    let (_, shown) = server.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
    assert_eq!(shown["spec"]["readyCommand"], "test -f /tmp/ready", "the template's commands are the spec's: {shown}");
    let running = exec(&server, &id, &["busybox", "ps"]).await;
    assert!(running["stdout"].as_str().unwrap().contains("sleep 600"), "the start command runs: {running}");

    // The same Dockerfile and context again: a cache hit, at once.
    let (status, again) = server.post("/v1/templates", &request).await;
    assert_eq!((status, again["state"].as_str(), again["cacheHit"].as_bool()), (202, Some("succeeded"), Some(true)));
    assert_eq!(again["digest"].as_str(), Some(digest.as_str()), "{again}");
    // The CLI builds with its output live; unchanged, it says the hit.
    let context_dir = dir.root().join("context");
    std::fs::create_dir_all(&context_dir).unwrap();
    std::fs::write(context_dir.join("note.txt"), "from the context\n").unwrap();
    std::fs::write(context_dir.join("Dockerfile"), format!("FROM {}/b:1\nRUN echo cli > /cli.txt\n", registry.host()))
        .unwrap();
    let cli = |name: &str| {
        let mut command = std::process::Command::new(sluice_binary());
        command.args(["templates", "build"]).arg(&context_dir).args(["--name", name]);
        command.args(["--api-url", &server.base, "--api-token", &server.token]).output().unwrap()
    };
    let out = cli("cli");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("RUN echo cli"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = cli("cli");
    assert!(String::from_utf8_lossy(&out.stdout).contains("(cache hit)"), "{}", String::from_utf8_lossy(&out.stdout));

    // A ready command that never passes fails the launch, naming it and
    // what it said.
    let never = json!({"ownerUserId": "alice", "template": "web", "spec": {"readyCommand": "echo not yet; exit 3"}});
    let (_, created) = server.post("/v1/workspaces", &never).await;
    let never_id = created["workspaceId"].as_str().unwrap();
    let failed = server.wait_for("alice", never_id, Duration::from_secs(90), |w| w["status"] == "failed").await;
    assert_eq!(failed["error"]["code"], "ready-command-failed", "{failed}");
    assert!(failed["error"]["message"].as_str().unwrap().contains("exited 3: not yet"), "{failed}");

    // A build that fails says why, and its log has the step's output.
    let broken =
        json!({"name": "broken", "dockerfile": format!("FROM {}/b:1\nRUN echo no-{nonce}; exit 7\n", registry.host())});
    let (_, build) = server.post("/v1/templates", &broken).await;
    let (lines, ended) = follow(&server, &build).await;
    assert_eq!(ended["state"], "failed", "{ended}");
    assert!(ended["error"].as_str().unwrap().contains("returned a non-zero code: 7"), "{ended}");
    assert!(lines.contains(&format!("no-{nonce}")), "{lines}");
    let (status, refused) =
        server.post("/v1/workspaces", &json!({"ownerUserId": "alice", "template": "broken", "spec": {}})).await;
    assert_eq!((status, refused["code"].as_str()), (409, Some("template-not-built")), "{refused}");
    let (status, _) = server.get("/v1/templates/nothing-here").await;
    assert_eq!(status, 404);
    let (status, refused) = server.post("/v1/templates", &json!({"name": "Bad Name", "dockerfile": "FROM x"})).await;
    assert_eq!(status, 400, "{refused}");
    assert!(refused["message"].as_str().unwrap().starts_with("name"), "{refused}");
}

/// With no host that can build (here: `--template-builder none`), a build
/// is refused by name rather than queued forever, and `doctor` says why.
#[tokio::test]
async fn with_no_builder_a_build_is_refused_and_doctor_says_why() {
    let dir = DataDir::new();
    let server =
        Server::start_with(&dir.path(), Options::serve().args(["--runtime", "local", "--template-builder", "none"]))
            .await;
    let joined = wait_for(Duration::from_secs(30), || async {
        let (_, workers) = server.get("/v1/workers").await;
        workers["items"].as_array().filter(|w| !w.is_empty()).map(|_| ())
    });
    assert!(joined.await.is_some());
    let (status, refused) = server.post("/v1/templates", &json!({"name": "web", "dockerfile": "FROM scratch\n"})).await;
    assert_eq!((status, refused["code"].as_str()), (422, Some("template-builds-unsupported")), "{refused}");
    let (status, _) = server.get("/v1/templates/web").await;
    assert_eq!(status, 404, "nothing was written");
    drop(server);
    let out = std::process::Command::new(sluice_binary())
        .args(["doctor", "--template-builder", "none", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("templates  cannot be built here: building templates is turned off"), "{report}");
}
